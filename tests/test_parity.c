/* test_parity.c — the forward pass against transformers' reference logits (tests/fixtures/models/tiny-NAME.ref,
 * made by tests/fixtures/gen/make_parity.py), for F32/F16/Q8_0/Q4_0 exports of three tiny models, plus the
 * KV-cache primitives (batching several sequences, truncate, fork, capacity) and the no-allocation rule. */
#include "common.h"
#include "alloc_hooks.h"
#include "parity.h"


/* Scores one export of a fixture model against the reference; exact exports also get the KV-cache
 * primitive checks. Returns the top-1 agreement. */
static double check_model(const char *name, const char *variant, const ref_t *r, int exact) {
    char path[256], label[64];
    const char *dir = getenv("LAYA_FIXTURES");
    snprintf(path, sizeof path, "%s/tiny-%s-%s.gguf", dir ? dir : "build/fixtures", name, variant);
    snprintf(label, sizeof label, "%s %s", name, variant);
    laya_model *m = NULL;
    laya_context *c = NULL;
    if (!open_model(path, &m, &c)) return 0;
    int V = laya_n_vocab(m);
    double a = check_ref(label, m, c, r, exact);
    static laya_token toks[MAX_POS];
    static int32_t seqs[MAX_POS];
    static int8_t want[MAX_POS];
    laya_status st;

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
        ta_install(0); /* counting only: proves laya_decode does not allocate */
        st = laya_decode(c, (laya_batch){n, toks, seqs, want});
        long allocs = ta_count;
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
