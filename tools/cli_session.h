/* cli_session.h — what the typing commands share (suggest and type in cmd_session.c, eval in
 * eval/harness.c): their options, and opening a session on a model with them. A client of laya.h only.
 * Not here: any decision logic (that is the library's). */
#ifndef LAYA_CLI_SESSION_H
#define LAYA_CLI_SESSION_H

#include "cli.h"

#define HELP_COMMON                                                                                          \
    "  -m MODEL          model file or directory; default: $LAYA_MODEL, ./models/" CLI_DEFAULT_MODEL ", or\n" \
    "                    <directory of the laya executable>/../models/" CLI_DEFAULT_MODEL "\n"                \
    "  --mode M          text (default), code or shell\n"                                                    \
    "  -k K              candidates (1..16)\n"                                                               \
    "  --max-tokens N    tokens per candidate (default 5)\n"                                                 \
    "  --beam B          hypotheses kept per step (default max(k, 8))\n"                                     \
    "  --max-kv N        positions per sequence slot (default 320)\n"                                        \
    "  --kv T            KV cache type: f16 (default: half the memory) or f32\n"                             \
    "  --max-text N      bytes of text before the cursor the model sees (default 1024)\n"                    \
    "  --focused         constrained steps compute only the allowed tokens' logits (faster, renormalized)\n" \
    "  --threads N       worker threads (default 2)\n"                                                       \
    "  --calibration F   confidence map (lines \"prob hit\"); default MODEL.calib when it exists\n"         \
    "  --user-dict F     user dictionary file (boosts words the user added or accepted)\n"                 \
    "  --doc-cache N     bytes of the text before the cursor whose words are a cache model (default 65536;\n" \
    "                    0: off)\n"                                                                       \
    "  --min-prob P      drop candidates less likely than P (default 0: keep all)\n"                        \
    "  --deadline MS     a decision returns what it has after MS milliseconds (default 0: none)\n"

typedef struct sess_opts {
    const char *model, *mode, *text_file, *after, *context, *calib, *fit_out, *user_dict, *text, *min_prob;
    const char *count, *dump_out, *deadline, *idle, *kv;
    long k, max_tokens, threads, max_chars, from, beam, max_kv, max_text, doc_cache;
    int doc_cache_set;
    int json, learn, focused;
} sess_opts;

/* Scans argv into o (help: printed for -h and the process exits). Returns CLI_OK or CLI_USAGE. */
int sess_parse_opts(const char *cmd, const char *help, int argc, char **argv, sess_opts *o);

typedef struct sess_env {
    laya_model *m;
    laya_session *s;
} sess_env;

/* Loads the model and creates a session from o (k_default candidates unless -k); loads o->calib, or
 * MODEL.calib when it exists. Returns CLI_OK, or an exit code after printing why. */
int sess_open(const char *cmd, const sess_opts *o, long k_default, sess_env *e);
void sess_close(sess_env *e);

#endif
