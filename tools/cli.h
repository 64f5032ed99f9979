/* cli.h — what the command-line files share: option parsing, error printing, model loading.
 * The tool may print and exit; the library under it never does. Not part of the library. */
#ifndef LAYA_CLI_H
#define LAYA_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "laya.h"

#define CLI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CLI_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Exit codes: 0 success, 1 a failure while running, 2 a usage error. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Prints "laya: error: <message>" to stderr and returns CLI_FAIL. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "laya <cmd>: <message>" and a pointer to --help to stderr and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Options of one subcommand, scanned left to right. arg_* consume argv[i] (and its value) when it is
 * the named option; a missing or malformed value sets bad (after printing why). */
typedef struct argp {
    const char *cmd;
    int argc;
    char **argv;
    int i;
    int bad;
} argp;

int arg_is(argp *p, const char *s, const char *l);                      /* a flag */
const char *arg_str(argp *p, const char *s, const char *l);             /* "-m X", "--model X", "--model=X" */
int arg_int(argp *p, const char *s, const char *l, long lo, long hi, long *out);
int arg_help(argp *p); /* -h or --help */

/* Strict integer parsing (the whole string, in range). */
int parse_long(const char *s, long lo, long hi, long *out);
/* "1,2,3" -> ids (caller frees with free()); spaces allowed after commas. */
int parse_ids(const char *s, laya_token **ids, size_t *n);

/* The default model: the one the project ships. */
#define CLI_DEFAULT_MODEL "laya-typing-q8_0.gguf"
const char *cli_default_model(char *buf, size_t cap);
/* Loads a model (path NULL: the default model) or prints the loader's message and returns NULL. */
laya_model *cli_load(const char *path, int32_t n_threads, int vocab_only);

/* Milliseconds on the monotonic clock: the one clock of every timing the tools print. */
double cli_now_ms(void);

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_suggest(int argc, char **argv); /* cmd_session.c */
int cmd_type(int argc, char **argv);
int cmd_eval(int argc, char **argv); /* eval/harness.c: the simulated user */

#endif
