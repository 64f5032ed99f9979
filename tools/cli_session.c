/* cli_session.c — options and session setup shared by the typing commands (cli_session.h).
 * A client of laya.h only. Not here: the commands themselves (cmd_session.c, eval/harness.c). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli_session.h"

int sess_parse_opts(const char *cmd, const char *help, int argc, char **argv, sess_opts *o) {
    argp p = {cmd, argc, argv, 0, 0};
    for (p.i = 0; p.i < argc; p.i++) {
        const char *v;
        if (arg_help(&p)) {
            fputs(help, stdout);
            exit(CLI_OK);
        }
        if ((v = arg_str(&p, "-m", "--model"))) o->model = v;
        else if ((v = arg_str(&p, NULL, "--mode"))) o->mode = v;
        else if ((v = arg_str(&p, NULL, "--kv"))) o->kv = v;
        else if ((v = arg_str(&p, NULL, "--text"))) o->text_file = v;
        else if ((v = arg_str(&p, NULL, "--after"))) o->after = v;
        else if ((v = arg_str(&p, NULL, "--context"))) o->context = v;
        else if ((v = arg_str(&p, NULL, "--calibration"))) o->calib = v;
        else if ((v = arg_str(&p, NULL, "--fit-calibration"))) o->fit_out = v;
        else if ((v = arg_str(&p, NULL, "--user-dict"))) o->user_dict = v;
        else if ((v = arg_str(&p, NULL, "--min-prob"))) o->min_prob = v;
        else if ((v = arg_str(&p, NULL, "--deadline"))) o->deadline = v;
        else if ((v = arg_str(&p, NULL, "--idle"))) o->idle = v;
        else if ((v = arg_str(&p, NULL, "--count"))) o->count = v;
        else if ((v = arg_str(&p, NULL, "--dump-probs"))) o->dump_out = v;
        else if (arg_int(&p, "-k", "--candidates", 1, 16, &o->k)) {}
        else if (arg_int(&p, NULL, "--max-tokens", 1, 32, &o->max_tokens)) {}
        else if (arg_int(&p, NULL, "--beam", 1, 16, &o->beam)) {}
        else if (arg_int(&p, NULL, "--max-kv", 16, 1 << 16, &o->max_kv)) {}
        else if (arg_int(&p, NULL, "--max-text", 16, 1 << 20, &o->max_text)) {}
        else if (arg_int(&p, NULL, "--doc-cache", 0, 1 << 22, &o->doc_cache)) o->doc_cache_set = 1; /* range: the library's */
        else if (arg_int(&p, NULL, "--threads", 0, 64, &o->threads)) {}
        else if (arg_int(&p, NULL, "--max-chars", 1, LONG_MAX / 2, &o->max_chars)) {}
        else if (arg_int(&p, NULL, "--from", 0, LONG_MAX / 2, &o->from)) {}
        else if (arg_is(&p, NULL, "--json")) o->json = 1;
        else if (arg_is(&p, NULL, "--learn")) o->learn = 1;
        else if (arg_is(&p, NULL, "--focused")) o->focused = 1;
        else if (argv[p.i][0] == '-' && argv[p.i][1] != 0) return cli_usage_error(cmd, "unknown option '%s'", argv[p.i]);
        else if (!o->text) o->text = argv[p.i];
        else return cli_usage_error(cmd, "unexpected argument '%s'", argv[p.i]);
        if (p.bad) return CLI_USAGE;
    }
    if (o->count && strcmp(o->count, "presage") && strcmp(o->count, "chars"))
        return cli_usage_error(cmd, "--count must be presage or chars, not '%s'", o->count);
    if (o->kv && strcmp(o->kv, "f32") && strcmp(o->kv, "f16"))
        return cli_usage_error(cmd, "--kv must be f32 or f16, not '%s'", o->kv);
    if (o->mode && strcmp(o->mode, "text") && strcmp(o->mode, "code") && strcmp(o->mode, "shell"))
        return cli_usage_error(cmd, "--mode must be text, code or shell, not '%s'", o->mode);
    return CLI_OK;
}

static int mode_of(const char *m) {
    if (!m || !strcmp(m, "text")) return LAYA_MODE_TEXT;
    return !strcmp(m, "code") ? LAYA_MODE_CODE : LAYA_MODE_SHELL;
}

/* "prob hit" lines, at most 64. Returns 1 if loaded. */
static int load_calib(laya_session *s, const char *path, int required) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (required) cli_fail("cannot open calibration '%s': %s", path, strerror(errno));
        return 0;
    }
    float x[64], y[64];
    int n = 0;
    char line[256];
    while (n < 64 && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (sscanf(line, "%f %f", &x[n], &y[n]) == 2) n++;
    }
    fclose(f);
    if (laya_session_set_calibration(s, x, y, n)) {
        if (required) cli_fail("calibration '%s': %s", path, laya_session_error(s));
        return 0;
    }
    return 1;
}

int sess_open(const char *cmd, const sess_opts *o, long k_default, sess_env *e) {
    char buf[PATH_MAX + 64];
    const char *path = o->model ? o->model : cli_default_model(buf, sizeof buf);
    if (!path)
        return cli_fail("%s: no model: pass -m MODEL, set LAYA_MODEL, or put " CLI_DEFAULT_MODEL
                        " in ./models/ (the default typing model)",
                        cmd);
    e->m = cli_load(path, (int32_t)(o->threads ? o->threads : 2), 0);
    if (!e->m) return CLI_FAIL;
    laya_session_params sp = laya_session_default_params();
    sp.mode = mode_of(o->mode);
    sp.n_candidates = (int32_t)(o->k ? o->k : k_default);
    if (o->max_tokens) sp.max_tokens = (int32_t)o->max_tokens;
    if (o->beam) sp.beam = (int32_t)o->beam;
    if (o->max_kv) sp.max_kv_size = (int32_t)o->max_kv;
    if (o->kv) sp.kv_type = strcmp(o->kv, "f16") ? LAYA_KV_F32 : LAYA_KV_F16;
    if (o->max_text) sp.max_text = (int32_t)o->max_text;
    if (o->doc_cache_set) sp.doc_cache_bytes = (int32_t)o->doc_cache;
    sp.focused_output = o->focused;
    sp.user_dict = o->user_dict;
    if (o->min_prob) {
        char *end;
        double v = strtod(o->min_prob, &end);
        if (*end || !(v >= 0 && v < 1)) return cli_usage_error(cmd, "--min-prob must be in [0, 1)");
        sp.min_prob = (float)v;
    }
    if (o->deadline) {
        char *end;
        double v = strtod(o->deadline, &end);
        if (*end || !(v >= 0 && v <= 1e6)) return cli_usage_error(cmd, "--deadline must be milliseconds >= 0");
        sp.deadline_ms = v;
    }
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_session_create(e->m, sp, &e->s, err, sizeof err);
    if (st) {
        laya_model_free(e->m);
        return cli_fail("cannot create a session: %s", err[0] ? err : laya_status_str(st));
    }
    if (o->calib) {
        if (!load_calib(e->s, o->calib, 1)) return CLI_FAIL;
    } else {
        char cp[sizeof buf + 16];
        snprintf(cp, sizeof cp, "%s.calib", path);
        load_calib(e->s, cp, 0);
    }
    return CLI_OK;
}

void sess_close(sess_env *e) {
    laya_session_free(e->s);
    laya_model_free(e->m);
}

