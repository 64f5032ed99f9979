/* test_api.c — the public header's own promises: the version macro matches the library, params structs
 * from another header version are refused, and the log callback receives messages until it is unset.
 * Needs `make fixtures` for one model load (LAYA_FIXTURES may point elsewhere). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "laya.h"

typedef struct {
    int n, n_warn, n_info, saw_kernels;
    char last[512];
} log_seen;

static void on_log(void *user, laya_log_level level, const char *msg) {
    log_seen *ls = user;
    ls->n++;
    ls->n_warn += level == LAYA_LOG_WARN;
    ls->n_info += level == LAYA_LOG_INFO;
    ls->saw_kernels |= level == LAYA_LOG_DEBUG && strncmp(msg, "kernels: ", 9) == 0;
    snprintf(ls->last, sizeof ls->last, "%s", msg);
}

static void fixture(char *path, size_t cap, const char *name) {
    const char *dir = getenv("LAYA_FIXTURES") ? getenv("LAYA_FIXTURES") : "build/fixtures";
    snprintf(path, cap, "%s/%s", dir, name);
}

static void check_version(void) {
    CHECK(strcmp(laya_version(), LAYA_VERSION) == 0, "laya_version() %s, header %s", laya_version(), LAYA_VERSION);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", LAYA_VERSION_MAJOR, LAYA_VERSION_MINOR, LAYA_VERSION_PATCH);
    CHECK(strcmp(want, LAYA_VERSION) == 0, "LAYA_VERSION %s is not MAJOR.MINOR.PATCH %s", LAYA_VERSION, want);
    CHECK(LAYA_VERSION_NUMBER == LAYA_VERSION_MAJOR * 1000000 + LAYA_VERSION_MINOR * 1000 + LAYA_VERSION_PATCH,
          "LAYA_VERSION_NUMBER %d", LAYA_VERSION_NUMBER);
    CHECK(laya_model_default_params().abi == LAYA_ABI_VERSION, "model default params carry the ABI version");
    CHECK(laya_context_default_params().abi == LAYA_ABI_VERSION, "context default params carry the ABI version");
    CHECK(sizeof(laya_kv_type) == sizeof(int32_t), "laya_kv_type is %zu bytes", sizeof(laya_kv_type));
}

/* A struct from another header version (or filled by hand) is refused with a message that says what to do. */
static void check_abi(const char *path) {
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_model_params mp = laya_model_default_params();
    mp.abi = LAYA_ABI_VERSION + 1;
    laya_model *m = (laya_model *)1;
    CHECK(laya_model_load(path, mp, &m, err, sizeof err) == LAYA_ERR_INVALID_ARG && !m, "model abi mismatch refused");
    CHECK(strstr(err, "laya_model_default_params") != NULL, "model abi message: %s", err);
    laya_model_params zero;
    memset(&zero, 0, sizeof zero);
    CHECK(laya_model_load(path, zero, &m, err, sizeof err) == LAYA_ERR_INVALID_ARG && !m, "zeroed params refused");

    mp = laya_model_default_params();
    mp.n_threads = 1;
    CHECK(laya_model_load(path, mp, &m, err, sizeof err) == LAYA_OK && m, "load %s: %s", path, err);
    if (!m) return;
    laya_context_params cp = laya_context_default_params();
    cp.abi = 0;
    laya_context *c = (laya_context *)1;
    err[0] = 0;
    CHECK(laya_context_create(m, cp, &c, err, sizeof err) == LAYA_ERR_INVALID_ARG && !c, "context abi mismatch refused");
    CHECK(strstr(err, "laya_context_default_params") != NULL, "context abi message: %s", err);
    cp.abi = LAYA_ABI_VERSION;
    cp.kv_type = LAYA_KV_F16;
    CHECK(laya_context_create(m, cp, &c, err, sizeof err) == LAYA_OK && c, "context with the right abi: %s", err);
    laya_context_free(c);
    laya_session_params sp = laya_session_default_params();
    CHECK(sp.abi == LAYA_ABI_VERSION, "session default params carry the ABI version");
    sp.abi = LAYA_ABI_VERSION + 1;
    laya_session *s = (laya_session *)1;
    laya_worker *w = (laya_worker *)1;
    err[0] = 0;
    CHECK(laya_session_create(m, sp, &s, err, sizeof err) == LAYA_ERR_INVALID_ARG && !s, "session abi mismatch refused");
    CHECK(strstr(err, "laya_session_default_params") != NULL, "session abi message: %s", err);
    CHECK(laya_worker_create(m, sp, &w, err, sizeof err) == LAYA_ERR_INVALID_ARG && !w, "worker abi mismatch refused");
    laya_model_free(m);
}

static void check_log(const char *path, log_seen *ls) {
    laya_model_params mp = laya_model_default_params();
    mp.vocab_only = 1;
    laya_model *m = NULL;
    char err[LAYA_ERR_MSG_MAX];
    int info0 = ls->n_info;
    CHECK(laya_model_load(path, mp, &m, err, sizeof err) == LAYA_OK, "load %s: %s", path, err);
    CHECK(ls->n_info == info0 + 1 && strstr(ls->last, path), "load logged at INFO: %s", ls->last);
    CHECK(ls->saw_kernels, "the first load logged the kernel table at DEBUG");
    laya_model_free(m);
    CHECK(laya_model_load("/nonexistent/laya-model.gguf", mp, &m, err, sizeof err) == LAYA_ERR_IO,
          "a missing file is an I/O error");
    CHECK(ls->n_warn > 0 && strstr(ls->last, "/nonexistent/laya-model.gguf") != NULL, "missing file logged at WARN: %s",
          ls->last);

    laya_set_log(NULL, NULL);
    int n0 = ls->n;
    CHECK(laya_model_load("/nonexistent/laya-model.gguf", mp, &m, NULL, 0) == LAYA_ERR_IO, "still an I/O error");
    CHECK(laya_model_load(path, mp, &m, err, sizeof err) == LAYA_OK, "load %s: %s", path, err);
    laya_model_free(m);
    CHECK(ls->n == n0, "set_log(NULL) silences: %d messages after it", ls->n - n0);
}

int main(void) {
    char path[512];
    fixture(path, sizeof path, "tiny-llama-q8_0.gguf");
    log_seen ls = {0};
    laya_set_log(on_log, &ls);
    check_version();
    check_abi(path);
    check_log(path, &ls); /* ends with logging off */
    return DONE("test_api");
}
