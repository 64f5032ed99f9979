/* bw.c — the memory-bandwidth floor of docs/PERFORMANCE.md: GB/s of a plain AVX-512 read loop over a
 * buffer of MB mebibytes split across T threads (best and median of 30 passes). Not part of `make`:
 *   cc -O2 -mavx512f bench/bw.c -o /tmp/bw -lpthread && /tmp/bw 32 2 && /tmp/bw 300 2 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct { const char *p; size_t n; __m512i r; } part;

static void *rd(void *v) {
    part *a = v;
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < a->n; i += 256) {
        s0 = _mm512_add_epi32(s0, _mm512_load_si512(a->p + i));
        s1 = _mm512_add_epi32(s1, _mm512_load_si512(a->p + i + 64));
        s2 = _mm512_add_epi32(s2, _mm512_load_si512(a->p + i + 128));
        s3 = _mm512_add_epi32(s3, _mm512_load_si512(a->p + i + 192));
    }
    a->r = _mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3));
    return NULL;
}

static int cmp(const void *a, const void *b) { return *(const double *)a < *(const double *)b ? -1 : 1; }

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: bw MB THREADS\n"), 2;
    size_t n = (size_t)atol(argv[1]) << 20;
    int th = atoi(argv[2]);
    if (th < 1 || th > 16 || n < (size_t)th * 256) return 2;
    char *p = aligned_alloc(64, n);
    if (!p) return 1;
    memset(p, 1, n);
    double t[30];
    for (int r = 0; r < 30; r++) {
        pthread_t id[16];
        part a[16];
        double t0 = now();
        for (int i = 0; i < th; i++) {
            a[i].p = p + n / th / 256 * 256 * i;
            a[i].n = n / th / 256 * 256;
            if (i) pthread_create(&id[i], NULL, rd, &a[i]);
        }
        rd(&a[0]);
        for (int i = 1; i < th; i++) pthread_join(id[i], NULL);
        t[r] = now() - t0;
    }
    qsort(t, 30, sizeof *t, cmp);
    printf("%zu MiB, %d threads: best %.1f GB/s, median %.1f GB/s\n", n >> 20, th, n / t[0] / 1e9, n / t[15] / 1e9);
    return 0;
}
