/* common.c — the allocation hook, error formatting, status strings, the version and the log callback. */
#include "base/common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void *libc_malloc(size_t n, void *ud) { (void)ud; return malloc(n); }
static void libc_free(void *p, void *ud) { (void)ud; free(p); }
static laya_alloc_hooks g_hooks = {libc_malloc, libc_free, NULL};

void laya_set_alloc_hooks(const laya_alloc_hooks *h) {
    if (h) g_hooks = *h;
    else g_hooks = (laya_alloc_hooks){libc_malloc, libc_free, NULL};
}

/* Every block carries a 64-byte header holding the offset back to the hook's pointer, so that one
 * laya_free serves plain and aligned allocations alike. */
#define HDR 64
void *laya_aligned_alloc(size_t align, size_t n) {
    if (align < HDR) align = HDR;
    if (n == 0 || (align & (align - 1)) || n > SIZE_MAX - align - HDR) return NULL;
    unsigned char *raw = g_hooks.malloc_fn(n + align + HDR, g_hooks.ud);
    if (!raw) return NULL;
    uintptr_t p = ((uintptr_t)raw + HDR + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-1] = (size_t)(p - (uintptr_t)raw);
    return (void *)p;
}

void *laya_malloc(size_t n) { return laya_aligned_alloc(HDR, n); }

#define HUGE_BYTES ((size_t)2 << 20) /* a transparent huge page on x86-64 and 4 KB-page arm64 */

void *laya_dense_alloc(size_t n) {
    if (n < HUGE_BYTES) return laya_malloc(n);
    void *p = laya_aligned_alloc(HUGE_BYTES, n);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, n / HUGE_BYTES * HUGE_BYTES, MADV_HUGEPAGE); /* best effort: hook memory may refuse it */
#endif
    return p;
}

void *laya_calloc(size_t n, size_t size) {
    uint64_t t;
    if (ck_mul(n, size, &t) || t > SIZE_MAX) return NULL;
    void *p = laya_malloc((size_t)t);
    if (p) memset(p, 0, (size_t)t);
    return p;
}

void laya_free(void *p) {
    if (!p) return;
    size_t off = ((size_t *)p)[-1];
    g_hooks.free_fn((unsigned char *)p - off, g_hooks.ud);
}

char *laya_strndup(const char *s, size_t n) {
    char *d = laya_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

const char *laya_version(void) { return LAYA_VERSION; }

/* The field's type changed from int32_t to the enum with no change of layout. */
_Static_assert(sizeof(laya_kv_type) == sizeof(int32_t), "laya_kv_type must stay 32 bits wide");

/* One lock for the callback and its argument, held while it runs: set_log(NULL) returning means no call
 * of the old callback is under way or will start. */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static laya_log_fn g_log_fn;
static void *g_log_user;

void laya_set_log(laya_log_fn fn, void *user) {
    pthread_mutex_lock(&g_log_mu);
    g_log_fn = fn;
    g_log_user = user;
    pthread_mutex_unlock(&g_log_mu);
}

void laya_log(laya_log_level level, const char *fmt, ...) {
    pthread_mutex_lock(&g_log_mu);
    if (g_log_fn) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        g_log_fn(g_log_user, level, msg);
    }
    pthread_mutex_unlock(&g_log_mu);
}

laya_status laya_check_abi(uint32_t abi, const char *what, char *err, size_t errlen) {
    if (abi == LAYA_ABI_VERSION) return LAYA_OK;
    return laya_err(err, errlen, LAYA_ERR_INVALID_ARG,
                    "laya_%s_params.abi is %u, this library's is %u: start from laya_%s_default_params() and build "
                    "against the laya.h of this library", what, abi, LAYA_ABI_VERSION, what);
}

laya_status laya_err(char *buf, size_t cap, laya_status st, const char *fmt, ...) {
    if (buf && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, cap, fmt, ap);
        va_end(ap);
    }
    return st;
}

const char *laya_status_str(laya_status s) {
    switch (s) {
    case LAYA_OK: return "ok";
    case LAYA_ERR_INVALID_ARG: return "invalid argument";
    case LAYA_ERR_NOMEM: return "out of memory";
    case LAYA_ERR_IO: return "I/O error";
    case LAYA_ERR_FORMAT: return "malformed file";
    case LAYA_ERR_UNSUPPORTED: return "unsupported feature";
    case LAYA_ERR_CAPACITY: return "capacity exceeded";
    case LAYA_ERR_NOT_FOUND: return "not found";
    case LAYA_ERR_TYPE: return "wrong type";
    }
    return "unknown status";
}

/* Map path read-only. An empty file gives *map = NULL, *len = 0 (mmap refuses zero bytes). */
laya_status laya_map_file(const char *path, void **map, size_t *len, char *err, size_t errlen) {
    *map = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return laya_err(err, errlen, LAYA_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb)) {
        int e = errno;
        close(fd);
        return laya_err(err, errlen, LAYA_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return laya_err(err, errlen, LAYA_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "'%s' is too large to map", path);
    }
    if (sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return laya_err(err, errlen, LAYA_ERR_IO, "cannot map '%s': %s", path, strerror(e));
        }
#ifdef MADV_HUGEPAGE
        /* Large pages for the mapping where the kernel can (Linux 6.x on a file system with large folios,
         * ext4 and xfs among them): a range not in the page cache is read in 2 MB folios, and a range
         * cached in 2 MB folios is mapped 2 MB at a time, so a first touch of a model costs a page-table
         * entry per 2 MB, not per 4 KB. Pages cached small (a file just written) stay small until the page cache drops them. */
        if ((uint64_t)sb.st_size >= HUGE_BYTES) madvise(m, (size_t)sb.st_size, MADV_HUGEPAGE);
#endif
        *map = m;
        *len = (size_t)sb.st_size;
    }
    close(fd); /* the mapping keeps the file referenced */
    return LAYA_OK;
}
