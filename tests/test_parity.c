/* test_parity.c — the forward pass against transformers' reference logits (tests/fixtures/models/tiny-NAME.ref,
 * made by tests/fixtures/gen/make_parity.py), for F32/F16/Q8_0/Q4_0 exports of three tiny models, plus the
 * KV-cache primitives (batching several sequences, truncate, fork, capacity) and the no-allocation rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common.h"
#include "laya.h"

#define MAX_SEQ 8
#define MAX_POS 256
#define MAX_GREEDY 8

typedef struct {
    int n_seq, seq_len[MAX_SEQ];
    int ids[MAX_SEQ][MAX_POS];
    double lse[MAX_SEQ][MAX_POS];
    int top_id[MAX_SEQ][MAX_POS][8];
    double top_logit[MAX_SEQ][MAX_POS][8];
    int n_greedy, gp_n[MAX_GREEDY], gp[MAX_GREEDY][32], gg_n[MAX_GREEDY], gg[MAX_GREEDY][32];
} ref_t;

static int load_ref(const char *path, ref_t *r) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(r, 0, sizeof *r);
    static char line[1 << 16];
    while (fgets(line, sizeof line, f)) {
        char *p = line, *e;
        if (!strncmp(p, "seq ", 4)) {
            int s = (int)strtol(p + 4, &e, 10), n = (int)strtol(e, &e, 10);
            if (s >= MAX_SEQ || n > MAX_POS) { fclose(f); return -1; }
            for (int i = 0; i < n; i++) r->ids[s][i] = (int)strtol(e, &e, 10);
            r->seq_len[s] = n;
            if (s + 1 > r->n_seq) r->n_seq = s + 1;
        } else if (!strncmp(p, "pos ", 4)) {
            int s = (int)strtol(p + 4, &e, 10), q = (int)strtol(e, &e, 10);
            if (s >= MAX_SEQ || q >= MAX_POS) { fclose(f); return -1; }
            r->lse[s][q] = strtod(e, &e);
            for (int k = 0; k < 8; k++) {
                r->top_id[s][q][k] = (int)strtol(e, &e, 10);
                e++; /* ':' */
                r->top_logit[s][q][k] = strtod(e, &e);
            }
        } else if (!strncmp(p, "greedy ", 7)) {
            int g = r->n_greedy++;
            if (g >= MAX_GREEDY) { fclose(f); return -1; }
            r->gp_n[g] = (int)strtol(p + 7, &e, 10);
            for (int i = 0; i < r->gp_n[g]; i++) r->gp[g][i] = (int)strtol(e, &e, 10);
            r->gg_n[g] = (int)strtol(e, &e, 10);
            for (int i = 0; i < r->gg_n[g]; i++) r->gg[g][i] = (int)strtol(e, &e, 10);
        }
    }
    fclose(f);
    return 0;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static double logsumexp(const float *x, int n) {
    double mx = x[argmax(x, n)], s = 0;
    for (int i = 0; i < n; i++) s += exp((double)x[i] - mx);
    return mx + log(s);
}

/* Top-8 of x in descending order. */
static void top8(const float *x, int n, int *ids) {
    for (int k = 0; k < 8; k++) ids[k] = -1;
    for (int i = 0; i < n; i++) {
        int k = 8;
        while (k > 0 && (ids[k - 1] < 0 || x[i] > x[ids[k - 1]])) k--;
        if (k < 8) {
            memmove(ids + k + 1, ids + k, (size_t)(7 - k) * sizeof(int));
            ids[k] = i;
        }
    }
}

/* Counting allocator: proves laya_decode does not allocate. */
static long n_allocs;
static void *count_malloc(size_t n, void *ud) { (void)ud; n_allocs++; return malloc(n); }
static void count_free(void *p, void *ud) { (void)ud; free(p); }

typedef struct { int exact; double top1_agree; } result_t;

/* Scores every reference sequence in one batch of its own; returns top-1 agreement. exact: check the
 * F16/F32 tolerances too. */
static double check_model(const char *name, const char *variant, const ref_t *r, int exact) {
    char path[256], err[256];
    const char *dir = getenv("LAYA_FIXTURES");
    snprintf(path, sizeof path, "%s/tiny-%s-%s.gguf", dir ? dir : "build/fixtures", name, variant);
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    laya_model *m = NULL;
    laya_status st = laya_model_load(path, mp, &m, err, sizeof err);
    CHECK(st == LAYA_OK, "%s: %s", path, err);
    if (st) return 0;
    int V = laya_n_vocab(m);
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = 4;
    cp.max_kv_size = MAX_POS;
    cp.max_batch = MAX_POS;
    cp.max_logits = MAX_POS;
    laya_context *c = NULL;
    st = laya_context_create(m, cp, &c, err, sizeof err);
    CHECK(st == LAYA_OK, "%s: context: %s", path, err);
    if (st) { laya_model_free(m); return 0; }

    int agree = 0, total = 0, order_bad = 0, tie_swaps = 0, logit_bad = 0, lse_bad = 0;
    double max_err = 0;
    static laya_token toks[MAX_POS];
    static int32_t seqs[MAX_POS];
    static int8_t want[MAX_POS];
    for (int s = 0; s < r->n_seq; s++) {
        int n = r->seq_len[s];
        for (int i = 0; i < n; i++) {
            toks[i] = r->ids[s][i];
            seqs[i] = 0;
            want[i] = 1;
        }
        laya_seq_truncate(c, 0, 0);
        st = laya_decode(c, (laya_batch){n, toks, seqs, want});
        CHECK(st == LAYA_OK, "%s seq %d: %s", path, s, laya_context_error(c));
        if (st) continue;
        for (int p = 0; p < n; p++) {
            const float *lg = laya_get_logits(c, p);
            int ids[8];
            top8(lg, V, ids);
            total++;
            agree += ids[0] == r->top_id[s][p][0];
            if (!exact) continue;
            for (int k = 0; k < 8; k++) {
                if (ids[k] != r->top_id[s][p][k]) {
                    /* Same order unless the reference itself has a near-tie at this rank. */
                    int tie = (k < 7 && fabs(r->top_logit[s][p][k] - r->top_logit[s][p][k + 1]) < 2e-3) ||
                              (k > 0 && fabs(r->top_logit[s][p][k] - r->top_logit[s][p][k - 1]) < 2e-3);
                    if (tie) tie_swaps++;
                    else order_bad++;
                }
                int ref_id = r->top_id[s][p][k];
                double e = fabs((double)lg[ref_id] - r->top_logit[s][p][k]);
                if (e > max_err) max_err = e;
                if (e > 1e-2) logit_bad++;
            }
            if (fabs(logsumexp(lg, V) - r->lse[s][p]) > 1e-2) lse_bad++;
        }
    }
    double a = total ? (double)agree / total : 0;
    printf("  %-6s %-5s top-1 agreement %5.1f%% (%d/%d)", name, variant, 100 * a, agree, total);
    if (exact) {
        printf(", max |logit - ref| %.2e, tie swaps %d\n", max_err, tie_swaps);
        CHECK(order_bad == 0, "%s: %d top-8 ranks differ", path, order_bad);
        CHECK(logit_bad == 0, "%s: %d logits off by > 1e-2 (max %.3g)", path, logit_bad, max_err);
        CHECK(lse_bad == 0, "%s: %d logsumexp values off by > 1e-2", path, lse_bad);
    } else {
        printf("\n");
    }

    /* Greedy continuations, one token at a time through the KV cache. */
    if (exact) {
        for (int g = 0; g < r->n_greedy; g++) {
            laya_seq_truncate(c, 0, 0);
            int np = r->gp_n[g];
            for (int i = 0; i < np; i++) { toks[i] = r->gp[g][i]; seqs[i] = 0; }
            st = laya_decode(c, (laya_batch){np, toks, seqs, NULL});
            int ok = st == LAYA_OK, i, last = np - 1;
            for (i = 0; ok && i < r->gg_n[g]; i++) {
                laya_token t = argmax(laya_get_logits(c, last), V);
                if (t != r->gg[g][i]) { ok = 0; break; }
                seqs[0] = 0;
                ok = laya_decode(c, (laya_batch){1, &t, seqs, NULL}) == LAYA_OK;
                last = 0;
            }
            CHECK(ok, "%s: greedy continuation %d diverges at token %d", path, g, i);
        }
    }

    /* Several sequences in one batch, interleaved, match each alone; no allocation during decode. */
    if (exact && r->n_seq >= 3) {
        int n = 0;
        for (int s = 0; s < 3; s++) laya_seq_truncate(c, s, 0);
        int len = 24;
        for (int i = 0; i < len; i++)
            for (int s = 0; s < 3; s++) {
                toks[n] = r->ids[s][i];
                seqs[n] = s;
                want[n] = i == len - 1;
                n++;
            }
        laya_set_alloc_hooks(&(laya_alloc_hooks){count_malloc, count_free, NULL});
        n_allocs = 0;
        st = laya_decode(c, (laya_batch){n, toks, seqs, want});
        long allocs = n_allocs;
        laya_set_alloc_hooks(NULL);
        CHECK(st == LAYA_OK, "interleaved batch: %s", laya_context_error(c));
        CHECK(allocs == 0, "laya_decode allocated %ld times", allocs);
        for (int s = 0; s < 3 && st == LAYA_OK; s++) {
            const float *lg = laya_get_logits(c, n - 3 + s);
            CHECK(lg && argmax(lg, V) == r->top_id[s][len - 1][0], "%s interleaved seq %d: top-1 differs", path, s);
            if (lg) CHECK(fabs(lg[r->top_id[s][len - 1][0]] - r->top_logit[s][len - 1][0]) < 1e-2,
                          "%s interleaved seq %d: logit differs", path, s);
        }
        /* Truncate: roll seq 0 back to 10 and re-decode positions 10..23 one by one. */
        CHECK(laya_seq_truncate(c, 0, 10) == LAYA_OK, "truncate");
        CHECK(laya_seq_len(c, 0) == 10, "len after truncate");
        for (int i = 10; i < len; i++) {
            laya_token t = r->ids[0][i];
            int32_t s0 = 0;
            CHECK(laya_decode(c, (laya_batch){1, &t, &s0, NULL}) == LAYA_OK, "decode after truncate");
        }
        const float *lg = laya_get_logits(c, 0);
        CHECK(lg && fabs(lg[r->top_id[0][len - 1][0]] - r->top_logit[0][len - 1][0]) < 1e-2,
              "%s: logits after truncate+redecode differ", path);
        /* Fork: seq 3 takes the first 12 positions of seq 1, then continues with seq 1's tokens. */
        CHECK(laya_seq_fork(c, 1, 3, 12) == LAYA_OK, "fork");
        n = 0;
        for (int i = 12; i < len; i++) { toks[n] = r->ids[1][i]; seqs[n] = 3; n++; }
        CHECK(laya_decode(c, (laya_batch){n, toks, seqs, NULL}) == LAYA_OK, "decode after fork");
        lg = laya_get_logits(c, n - 1);
        CHECK(lg && fabs(lg[r->top_id[1][len - 1][0]] - r->top_logit[1][len - 1][0]) < 1e-2,
              "%s: logits after fork differ", path);
        /* Capacity: a batch that would overflow max_kv_size fails and changes nothing. */
        int before = laya_seq_len(c, 3);
        n = MAX_POS;
        for (int i = 0; i < n; i++) { toks[i] = 1; seqs[i] = 3; }
        CHECK(laya_decode(c, (laya_batch){n, toks, seqs, NULL}) == LAYA_ERR_CAPACITY, "capacity not enforced");
        CHECK(laya_seq_len(c, 3) == before, "failed decode changed the sequence");
        toks[0] = V;
        CHECK(laya_decode(c, (laya_batch){1, toks, seqs, NULL}) == LAYA_ERR_INVALID_ARG, "bad token id accepted");
        seqs[0] = 99;
        toks[0] = 1;
        CHECK(laya_decode(c, (laya_batch){1, toks, seqs, NULL}) == LAYA_ERR_INVALID_ARG, "bad seq accepted");
    }
    laya_context_free(c);
    laya_model_free(m);
    return a;
}

int main(void) {
    const char *names[] = {"llama", "qwen2", "qwen3"};
    static ref_t r;
    printf("test_parity: kernels %s\n", laya_cpu_backend());
    for (int i = 0; i < 3; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/models/tiny-%s.ref", names[i]);
        int ok = load_ref(path, &r) == 0;
        CHECK(ok, "cannot read %s", path);
        if (!ok) continue;
        check_model(names[i], "f32", &r, 1);
        check_model(names[i], "f16", &r, 1);
        double a8 = check_model(names[i], "q8_0", &r, 0);
        double a4 = check_model(names[i], "q4_0", &r, 0);
        CHECK(a8 >= 0.95, "%s Q8_0 top-1 agreement %.3f < 0.95", names[i], a8);
        CHECK(a4 >= 0.85, "%s Q4_0 top-1 agreement %.3f < 0.85", names[i], a4);
    }
    return DONE("test_parity");
}
