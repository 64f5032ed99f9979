/* check.h — the whole test helper: CHECK counts failures and keeps going; DONE prints the closing line. */
#ifndef LAYA_CHECK_H
#define LAYA_CHECK_H
#include <stdio.h>

static int check_failed, check_passed;
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (cond) {                                                               \
            check_passed++;                                                       \
        } else {                                                                  \
            check_failed++;                                                       \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)
/* Prints "<name>: N passed, N failed" and returns the exit code. */
#define DONE(name) (printf("%s: %d passed, %d failed\n", name, check_passed, check_failed), check_failed != 0)
#endif
