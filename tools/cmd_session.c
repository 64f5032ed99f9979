/* cmd_session.c — the typing commands suggest (one decision) and type (an interactive terminal demo).
 * Thin clients of the laya_session API; `laya eval`, the simulated user, is eval/harness.c.
 * Not here: any decision logic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include "cli_session.h"
#include "cli_json.h"

#define HELP_SUGGEST                                                                                         \
    "usage: laya suggest [-m MODEL] [--mode text|code|shell] [-k 5] [--json] [--after TEXT]\n"              \
    "                    [--context TEXT] TEXT\n"                                                            \
    "TEXT is everything before the cursor (--after: what follows it; --context: history lines in shell\n"   \
    "mode). --json prints\n"                                                                                 \
    "  {\"candidates\":[{\"text\":\"fox\",\"replace\":2,\"kind\":\"complete\",\"prob\":p,\"confidence\":c},\n" \
    "   ...],\"latency_ms\":x}\n"                                                                            \
    "replace counts the characters before the cursor that text replaces; kind is complete, next or\n"       \
    "correct; latency_ms is set_text + suggest on a warmed-up session.\n" HELP_COMMON

#define HELP_TYPE                                                                                            \
    "usage: laya type [-m MODEL] [--mode M] [-k 5]\n"                                                        \
    "An interactive demo in the terminal: type, and the candidates appear under the line with the\n"       \
    "decision's latency. Tab takes the first candidate, Backspace deletes, Enter starts a new line (its\n" \
    "text stays context), Ctrl-U clears, Ctrl-C or Ctrl-D quits.\n" HELP_COMMON


static const char *kind_name(int32_t k) {
    return k == LAYA_KIND_COMPLETE ? "complete" : k == LAYA_KIND_NEXT ? "next" : "correct";
}

int cmd_suggest(int argc, char **argv) {
    sess_opts o = {0};
    int rc = sess_parse_opts("suggest", HELP_SUGGEST, argc, argv, &o);
    if (rc) return rc;
    if (!o.text) return cli_usage_error("suggest", "TEXT (the text before the cursor) is required");
    sess_env e;
    if ((rc = sess_open("suggest", &o, 5, &e))) return rc;
    if (o.context) laya_session_set_context(e.s, o.context, strlen(o.context));
    const laya_candidate *c = NULL;
    int32_t n = 0;
    double t0 = cli_now_ms();
    laya_status st = laya_session_set_text(e.s, o.text, strlen(o.text), o.after, o.after ? strlen(o.after) : 0);
    if (!st) st = laya_session_suggest(e.s, &c, &n);
    double ms = cli_now_ms() - t0;
    if (st) {
        rc = cli_fail("suggest: %s", laya_session_error(e.s));
        sess_close(&e);
        return rc;
    }
    if (o.json) {
        cj_buf b;
        cj_init(&b);
        cj_cstr(&b, "{\"candidates\":[");
        for (int32_t i = 0; i < n; i++) {
            cj_cstr(&b, i ? ",{\"text\":" : "{\"text\":");
            cj_str(&b, c[i].text, (size_t)c[i].text_len);
            cj_printf(&b, ",\"replace\":%d,\"kind\":\"%s\",\"prob\":", c[i].replace, kind_name(c[i].kind));
            cj_num(&b, c[i].prob);
            cj_cstr(&b, ",\"confidence\":");
            cj_num(&b, c[i].confidence);
            cj_cstr(&b, "}");
        }
        cj_cstr(&b, "],\"latency_ms\":");
        cj_num(&b, round(ms * 1000) / 1000);
        cj_cstr(&b, "}\n");
        fwrite(b.p, 1, b.len, stdout);
        cj_free(&b);
    } else {
        for (int32_t i = 0; i < n; i++)
            printf("%-9s replace %d  %-24s prob %.4f  confidence %.4f\n", kind_name(c[i].kind), c[i].replace,
                   c[i].text, c[i].prob, c[i].confidence);
        printf("(%d candidates, %.3f ms)\n", n, ms);
    }
    sess_close(&e);
    return CLI_OK;
}

/* ---- type: the interactive demo -------------------------------------------------------------------- */

static struct termios saved_tio;

static void restore_tty(void) { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio); }

/* laya type's screen: the current line, then the candidates, the cursor back at the end of the line */
static void type_draw(const char *line, size_t n, const laya_candidate *c, int32_t nc, double ms, const char *note) {
    printf("\033[2A\r\033[2K> %.*s\r\n\033[2K", (int)n, line);
    for (int32_t i = 0; i < nc; i++)
        printf("[%s%s] %.2f  ", c[i].kind == LAYA_KIND_NEXT ? "+" : "", c[i].text, c[i].confidence);
    printf(" (%.2f ms%s)\r\n", ms, note);
    fflush(stdout);
}

int cmd_type(int argc, char **argv) {
    sess_opts o = {0};
    int rc = sess_parse_opts("type", HELP_TYPE, argc, argv, &o);
    if (rc) return rc;
    if (!isatty(STDIN_FILENO)) return cli_fail("type: stdin is not a terminal (try it in a terminal or tmux)");
    sess_env e;
    if ((rc = sess_open("type", &o, 5, &e))) return rc;
    tcgetattr(STDIN_FILENO, &saved_tio);
    atexit(restore_tty);
    struct termios raw = saved_tio;
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | ISIG | IEXTEN);
    raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    size_t cap = 1 << 16, len = 0, line_start = 0;
    char *buf = malloc(cap);
    if (!buf) return cli_fail("out of memory");
    printf("laya type: Tab takes the first candidate, Ctrl-C quits\r\n\r\n\r\n");
    const laya_candidate *c = NULL;
    int32_t nc = 0;
    for (;;) {
        double t0 = cli_now_ms();
        laya_status st = laya_session_set_text(e.s, buf, len, NULL, 0);
        if (!st) st = laya_session_suggest(e.s, &c, &nc);
        double ms = cli_now_ms() - t0;
        if (st) nc = 0;
        type_draw(buf + line_start, len - line_start, c, nc, ms, "");
        /* until the next key: decide the likeliest next texts (laya_session_prefetch), in slices of 5 ms
         * so that a key is answered at once; stop when the plan is done. A decision the deadline cut short
         * is finished first: then its full candidates are shown. */
        laya_session_stats ss;
        laya_session_get_stats(e.s, &ss);
        int cut = !st && ss.deadline_hit;
        for (int more = 1; more;) {
            struct pollfd pf = {STDIN_FILENO, POLLIN, 0};
            if (poll(&pf, 1, 0) > 0) break;
            int32_t left = 0;
            more = laya_session_prefetch(e.s, 5, NULL, &left) == LAYA_OK && left > 0;
            laya_session_get_stats(e.s, &ss);
            if (cut && !ss.deadline_hit && laya_session_suggest(e.s, &c, &nc) == LAYA_OK) {
                cut = 0;
                type_draw(buf + line_start, len - line_start, c, nc, ms, ", finished after the deadline");
            }
        }
        unsigned char ch;
        if (read(STDIN_FILENO, &ch, 1) != 1) break;
        if (ch == 3 || ch == 4) break;
        if (ch == '\t') {
            if (nc > 0 && (size_t)c[0].replace_bytes <= len - line_start &&
                len - (size_t)c[0].replace_bytes + (size_t)c[0].text_len + 1 < cap) {
                laya_session_accept(e.s, 0);
                len -= (size_t)c[0].replace_bytes;
                memcpy(buf + len, c[0].text, (size_t)c[0].text_len);
                len += (size_t)c[0].text_len;
                if (c[0].kind != LAYA_KIND_CORRECT && (len == 0 || buf[len - 1] != ' ')) buf[len++] = ' ';
            }
        } else if (ch == 127 || ch == 8) {
            if (len > line_start) {
                len--;
                while (len > line_start && ((unsigned char)buf[len] & 0xC0) == 0x80) len--;
            }
        } else if (ch == 21) {
            len = line_start;
        } else if (ch == '\r' || ch == '\n') {
            /* keep the finished line on screen above the live one */
            printf("\033[2A\r\033[2K  %.*s\r\n\r\n\r\n", (int)(len - line_start), buf + line_start);
            if (len + 1 < cap) buf[len++] = '\n';
            line_start = len;
        } else if (ch >= 0x20 || ch >= 0x80) {
            if (len + 1 < cap) buf[len++] = (char)ch;
        }
    }
    printf("\r\n");
    restore_tty();
    free(buf);
    sess_close(&e);
    return CLI_OK;
}
