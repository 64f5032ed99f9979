/* test_model — the shipped default model (models/laya-typing-q8_0.gguf): it loads with the expected
 * shape and special tokens; its tokenizer gives the ids Hugging Face tokenizers gave on the training
 * machine and round-trips the tokenizer test strings byte for byte; its logits after four prompts agree
 * with transformers' (F16 weights, float32) on the top-5 ids, and a greedy continuation runs.
 * Reference values: train/logs/reference.json, written by train/train.py after training. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_hooks.h"
#include "check.h"
#include "engine/testhooks.h" /* kv_seq_shared, fw_split_set */
#include "laya.h"
#include "engine/model.h" /* the kernel table of a loaded model, swapped to run every one this CPU has */
#include "engine/pack.h"  /* lm_pack_first */

#define MODEL "models/laya-typing-q8_0.gguf"

static const struct {
    const char *prompt;
    int n_ids;
    laya_token ids[16];
    laya_token top5[5];
    float logit5[5];
} refs[] = {
    {"<|endoftext|><|prose|>The quick brown fox jumps over the", 13,
     {0, 4, 761, 6789, 3513, 1163, 1070, 103, 834, 427, 1023, 1164, 280},
     {1463, 236, 317, 214, 1908}, {5.8567f, 5.7746f, 5.6042f, 5.5957f, 5.5218f}},
    {"<|endoftext|><|code|>int main(int argc, char **argv)\n{\n\t", 14,
     {0, 5, 547, 4509, 2850, 1121, 82, 27, 1060, 3576, 14440, 376, 534, 213},
     {546, 2171, 521, 25, 2023}, {11.6282f, 11.4533f, 9.5602f, 9.4085f, 9.1838f}},
    {"<|endoftext|><|shell|>$ git commit -", 6,
     {0, 6, 19, 15102, 8682, 410},
     {99, 100, 95, 94, 85}, {11.5191f, 11.0175f, 10.6974f, 10.6905f, 10.2455f}},
    {"<|endoftext|><|zh|>\xe6\x88\x91\xe4\xbb\xac\xe7\x9a\x84\xe7\xb3\xbb\xe7\xbb\x9f", 4,
     {0, 7, 4472, 12724},
     {10224, 721, 1094, 693, 2224}, {8.6980f, 7.2084f, 6.6495f, 6.6215f, 6.5315f}},
};

static int hexval(int c) { return c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0'; }

/* valid UTF-8 (no overlongs, no surrogates) */
static int utf8_valid(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t l = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!l || i + l > n) return 0;
        unsigned v = l == 1 ? c : l == 2 ? c & 0x1F : l == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < l; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            v = (v << 6) | (s[i + k] & 0x3F);
        }
        if ((l == 2 && v < 0x80) || (l == 3 && v < 0x800) || (l == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
            (v >= 0xD800 && v <= 0xDFFF))
            return 0;
        i += l;
    }
    return 1;
}

static void check_roundtrip(const laya_model *m) {
    FILE *f = fopen("tests/fixtures/tok/strings.hex", "r");
    CHECK(f != NULL, "cannot open tests/fixtures/tok/strings.hex");
    if (!f) return;
    size_t cap = 1 << 20, n_lines = 0, n_ok = 0;
    char *line = malloc(cap), *text = malloc(cap), *back = malloc(cap);
    laya_token *ids = malloc(cap * sizeof *ids);
    while (line && text && back && ids && fgets(line, (int)cap, f)) {
        size_t hl = strcspn(line, "\r\n"), len = hl / 2;
        for (size_t i = 0; i < len; i++) text[i] = (char)(hexval(line[2 * i]) << 4 | hexval(line[2 * i + 1]));
        if (!utf8_valid((const unsigned char *)text, len)) continue; /* invalid bytes are repaired, by design */
        size_t n = 0, nb = 0;
        laya_status st = laya_tokenize(m, text, len, 0, ids, cap, &n);
        if (st == LAYA_OK) st = laya_detokenize(m, ids, n, 0, 0, back, cap, &nb);
        n_lines++;
        if (st == LAYA_OK && nb == len && !memcmp(back, text, len)) n_ok++;
        else CHECK(0, "round trip failed on line %zu (%zu bytes): %s", n_lines, len, laya_status_str(st));
    }
    CHECK(n_lines > 4000 && n_ok == n_lines, "%zu of %zu strings round-trip", n_ok, n_lines);
    printf("test_model: %zu/%zu valid UTF-8 test strings round-trip\n", n_ok, n_lines);
    free(line), free(text), free(back), free(ids);
    fclose(f);
}

/* A prompt decoded as one batch gives at every position the logits of the same tokens decoded one at a
 * time, under every kernel table this CPU runs. Batches of 16 rows or more take the AVX-512 panel
 * matmul; once it summed each output in another order than the one-row kernel, which with q8
 * activations (a one-ulp change flips a rounding in the next layer's quantization) moved the logits by
 * up to 0.14 on this model. The kernels now compute each output independently of the batch, so the
 * difference is 0; the bound leaves room for none of that. */
static void check_batch_vs_steps(laya_model *m, int32_t kv_type) {
    enum { N = 40 };
    static const char *const names[] = {"scalar", "avx2", "avxvnni", "avx512", "neon", "neondot"};
    const char *text = "<|endoftext|><|prose|>Thank you for your help with the report yesterday. I will send the "
                       "final version to the whole team before the meeting on Friday, and then we can discuss the "
                       "remaining questions about the budget.";
    laya_token ids[128];
    size_t n = 0;
    laya_status st = laya_tokenize(m, text, strlen(text), 1, ids, 128, &n);
    CHECK(st == LAYA_OK && n >= N, "batch check prompt: %zu tokens", n);
    if (st || n < N) return;
    const int V = laya_n_vocab(m);
    float *batch = malloc((size_t)N * (size_t)V * sizeof(float));
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = 2, cp.max_kv_size = 64, cp.max_batch = N, cp.max_logits = N, cp.kv_type = kv_type;
    const char *kvn = kv_type == LAYA_KV_F16 ? "F16 KV" : "F32 KV";
    const kn_ops *saved = m->kn;
    for (size_t t = 0; batch && t < sizeof names / sizeof *names; t++) {
        const kn_ops *k = kn_by_name(names[t]);
        if (!k) continue;
        m->kn = k; /* before the context: nothing has used the model's table yet */
        laya_context *c = NULL;
        char err[LAYA_ERR_MSG_MAX] = "";
        st = laya_context_create(m, cp, &c, err, sizeof err);
        CHECK(st == LAYA_OK, "%s: context: %s", names[t], err);
        if (st) continue;
        int32_t seq[N];
        int8_t want[N];
        for (int i = 0; i < N; i++) seq[i] = 0, want[i] = 1;
        st = laya_decode(c, (laya_batch){N, ids, seq, want});
        CHECK(st == LAYA_OK, "%s: batch decode: %s", names[t], laya_context_error(c));
        for (int i = 0; st == LAYA_OK && i < N; i++)
            memcpy(batch + (size_t)i * V, laya_get_logits(c, i), (size_t)V * sizeof(float));
        double worst = 0, worst_abs = 0; /* largest difference relative to its position's logit scale */
        for (int i = 0; st == LAYA_OK && i < N; i++) {
            int32_t s1 = 1;
            st = laya_decode(c, (laya_batch){1, ids + i, &s1, NULL});
            const float *one = st == LAYA_OK ? laya_get_logits(c, 0) : NULL;
            CHECK(one != NULL, "%s: step %d: %s", names[t], i, laya_context_error(c));
            if (!one) break;
            double scale = 0, diff = 0;
            for (int v = 0; v < V; v++) {
                scale = fmax(scale, fabs(one[v]));
                diff = fmax(diff, fabs((double)one[v] - batch[(size_t)i * V + v]));
            }
            if (diff / scale > worst) worst = diff / scale, worst_abs = diff;
        }
        CHECK(worst <= 2e-3, "%s, %s: logits of a batch of %d differ from one token at a time by %.3g (%.2e of the scale)",
              names[t], kvn, N, worst_abs, worst);
        printf("test_model: %-6s %s batch of %d vs one token at a time: max |diff| %.3g (%.2e of the logit scale)\n",
               names[t], kvn, N, worst_abs, worst);
        laya_context_free(c);
    }
    m->kn = saved;
    free(batch);
}

/* Shared positions (forward.c: a fork shares the source's KV storage instead of copying it): random forks,
 * fork_froms, truncations and decodes over five sequences, each decode's logits compared bit for bit with
 * the same tokens decoded from scratch in a context of one sequence. Writes into a sequence others share
 * (the source rolled back and re-decoded, a fork into it) must leave the others' logits alone. */
enum { SH_SEQ = 5, SH_KV = 320 };
static laya_token sh_tok[SH_SEQ][SH_KV];
static int32_t sh_len[SH_SEQ];

static uint64_t sh_rng = 0x9e3779b97f4a7c15ull;
static uint32_t sh_rand(uint32_t n) {
    sh_rng = sh_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(sh_rng >> 33) % n;
}

/* Sequence s's next-token logits from scratch, bit for bit those of batch token i of c's last decode. */
static int sh_same(laya_context *c, laya_context *fresh, int32_t i, int s, int V) {
    const float *lg = laya_get_logits(c, i);
    if (!lg || sh_len[s] < 1) return 0;
    laya_seq_truncate(fresh, 0, 0);
    static int32_t zeros[SH_KV];
    static int8_t want[SH_KV];
    memset(want, 0, sizeof want);
    want[sh_len[s] - 1] = 1;
    if (laya_decode(fresh, (laya_batch){sh_len[s], sh_tok[s], zeros, want}) != LAYA_OK) return 0;
    const float *ref = laya_get_logits(fresh, sh_len[s] - 1);
    return ref && !memcmp(ref, lg, (size_t)V * sizeof(float));
}

/* fork_from(a, b, from, n) on c and on the mirror of the tokens */
static int sh_fork(laya_context *c, int a, int b, int32_t from, int32_t n) {
    if (laya_seq_fork_from(c, a, b, from, n) != LAYA_OK) return 0;
    memcpy(sh_tok[b] + from, sh_tok[a] + from, (size_t)(n - from) * sizeof(laya_token));
    sh_len[b] = n;
    return 1;
}

/* n random tokens onto sequence s in one batch; then whether its logits are those from scratch */
static int sh_step(laya_context *c, laya_context *fresh, int s, int n, int V) {
    laya_token t[SH_KV];
    int32_t sq[SH_KV];
    for (int i = 0; i < n; i++) t[i] = sh_tok[s][sh_len[s]++] = (laya_token)sh_rand((uint32_t)V), sq[i] = s;
    if (laya_decode(c, (laya_batch){n, t, sq, NULL}) != LAYA_OK) return 0;
    return sh_same(c, fresh, n - 1, s, V);
}

static void check_shared_kv(laya_model *m, int32_t kv_type) { /* kv_type: either cache, the same rules */
    const int V = laya_n_vocab(m);
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = SH_SEQ, cp.max_kv_size = SH_KV, cp.max_batch = SH_KV, cp.max_logits = SH_SEQ, cp.kv_type = kv_type;
    laya_context *c = NULL, *fresh = NULL;
    char err[LAYA_ERR_MSG_MAX] = "";
    sh_rng = 0x9e3779b97f4a7c15ull; /* each cache type takes the same walk */
    memset(sh_len, 0, sizeof sh_len);
    laya_status st = laya_context_create(m, cp, &c, err, sizeof err);
    cp.n_seq = 1;
    if (st == LAYA_OK) st = laya_context_create(m, cp, &fresh, err, sizeof err);
    CHECK(st == LAYA_OK, "shared kv: context: %s", err);
    if (st) goto out;
    int bad = 0, checks = 0, shared_seen = 0, unshared = 0;
    for (int op = 0; op < 400 && bad < 5; op++) {
        int k = (int)sh_rand(10), a = (int)sh_rand(SH_SEQ), b = (int)sh_rand(SH_SEQ);
        int32_t before[SH_SEQ], base;
        for (int z = 0; z < SH_SEQ; z++) before[z] = kv_seq_shared(c, z, &base);
        /* lengths near the source's (a keystroke's candidates fork from the whole context) */
        if (k < 2 && a != b) { /* fork a -> b */
            int32_t n = sh_len[a] - (int32_t)sh_rand((uint32_t)LAYA_MIN(sh_len[a], 10) + 1);
            CHECK(laya_seq_fork(c, a, b, n) == LAYA_OK, "fork");
            memcpy(sh_tok[b], sh_tok[a], (size_t)n * sizeof(laya_token));
            sh_len[b] = n;
        } else if (k < 4 && a != b) { /* fork_from: b holds a's first `from` positions (their common prefix) */
            int32_t l = 0;
            while (l < sh_len[a] && l < sh_len[b] && sh_tok[a][l] == sh_tok[b][l]) l++;
            int32_t from = l - (int32_t)sh_rand((uint32_t)LAYA_MIN(l, 70) + 1);
            int32_t n = sh_len[a] - (int32_t)sh_rand((uint32_t)LAYA_MIN(sh_len[a] - from, 10) + 1);
            CHECK(laya_seq_fork_from(c, a, b, from, n) == LAYA_OK, "fork_from");
            memcpy(sh_tok[b] + from, sh_tok[a] + from, (size_t)(n - from) * sizeof(laya_token));
            sh_len[b] = n;
        } else if (k < 5) { /* roll back a little (backspace) or, when long, a lot */
            int32_t n = sh_len[a] > SH_KV - 60 ? (int32_t)sh_rand((uint32_t)sh_len[a] + 1)
                                               : sh_len[a] - (int32_t)sh_rand((uint32_t)LAYA_MIN(sh_len[a], 16) + 1);
            CHECK(laya_seq_truncate(c, a, n) == LAYA_OK, "truncate");
            sh_len[a] = n;
        } else { /* decode: one token for each of up to three sequences, or a run of tokens for one */
            laya_token t[64];
            int32_t sq[64];
            int8_t want[64];
            int n = 0, run = k == 9 ? 1 + (int)sh_rand(40) : 1, ns = k == 9 ? 1 : 1 + (int)sh_rand(3);
            int used[SH_SEQ] = {0};
            for (int j = 0; j < ns; j++) {
                int s = (a + j * (1 + b % 2)) % SH_SEQ;
                if (used[s] || sh_len[s] + run > SH_KV - 1) continue;
                used[s] = 1;
                for (int r = 0; r < run; r++) {
                    t[n] = (laya_token)sh_rand((uint32_t)V);
                    sq[n] = s;
                    want[n] = r == run - 1;
                    sh_tok[s][sh_len[s]++] = t[n];
                    n++;
                }
            }
            if (!n) continue;
            st = laya_decode(c, (laya_batch){n, t, sq, want});
            CHECK(st == LAYA_OK, "shared kv decode: %s", laya_context_error(c));
            if (st) break;
            for (int i = 0; i < n; i++)
                if (want[i]) {
                    checks++;
                    bad += !sh_same(c, fresh, i, sq[i], V);
                }
        }
        for (int z = 0; z < SH_SEQ; z++) { /* a sequence that lost shared positions it held (not by a fork into it) */
            int32_t now = kv_seq_shared(c, z, &base);
            shared_seen += now > 0;
            unshared += now < before[z] && now < sh_len[z] && !(k < 4 && z == b);
        }
        if (op == 0) { /* a long first sequence, for positions past the first share granule */
            laya_token t[200];
            int32_t sq[200] = {0};
            for (int i = 0; i < 200; i++) t[i] = sh_tok[0][sh_len[0] + i] = (laya_token)sh_rand((uint32_t)V);
            CHECK(laya_decode(c, (laya_batch){200, t, sq, NULL}) == LAYA_OK, "prefill");
            sh_len[0] += 200;
        }
    }
    CHECK(bad == 0, "shared kv: %d of %d decodes differ from the same tokens decoded alone", bad, checks);
    /* Two cases the random walk seldom takes. (1) dst shares more of a storage than the fork's source
     * does: what it held past the new share must become its own. */
    for (int z = 0; z < SH_SEQ; z++) laya_seq_truncate(c, z, 0), sh_len[z] = 0;
    int32_t base;
    CHECK(sh_step(c, fresh, 0, 200, V), "shared kv: prefill");
    CHECK(sh_fork(c, 0, 1, 0, 200) && kv_seq_shared(c, 1, &base) == 192 && base == 0, "shared kv: fork 0 -> 1");
    CHECK(sh_fork(c, 0, 2, 0, 160) && kv_seq_shared(c, 2, &base) == 128, "shared kv: fork 0 -> 2");
    CHECK(sh_fork(c, 2, 1, 155, 160) && kv_seq_shared(c, 1, &base) == 128, "shared kv: fork_from 2 -> 1");
    CHECK(sh_step(c, fresh, 1, 1, V), "shared kv: seq 1 after sharing less than it did");
    /* (2) a fork into a sequence others read from: they get their own copy first */
    for (int z = 0; z < SH_SEQ; z++) laya_seq_truncate(c, z, 0), sh_len[z] = 0;
    CHECK(sh_step(c, fresh, 0, 200, V) && sh_step(c, fresh, 3, 150, V), "shared kv: prefills");
    CHECK(sh_fork(c, 0, 1, 0, 200) && kv_seq_shared(c, 1, &base) == 192, "shared kv: fork 0 -> 1");
    CHECK(sh_fork(c, 3, 0, 0, 140) && kv_seq_shared(c, 0, &base) == 128 && base == 3, "shared kv: fork 3 -> 0");
    CHECK(kv_seq_shared(c, 1, &base) == 0, "shared kv: seq 1 still reads seq 0's storage");
    CHECK(sh_step(c, fresh, 1, 1, V) && sh_step(c, fresh, 0, 1, V), "shared kv: after a fork into a shared sequence");
    /* (3) one decode over a source and three forks of it sharing 256, 192 and 128 of its positions, and a
     * sequence of its own, three steps (a keystroke's candidates beside the context they fork from) */
    for (int z = 0; z < SH_SEQ; z++) laya_seq_truncate(c, z, 0), sh_len[z] = 0;
    CHECK(sh_step(c, fresh, 0, 270, V) && sh_step(c, fresh, 4, 70, V), "shared kv: prefills");
    CHECK(sh_fork(c, 0, 1, 0, 270) && sh_fork(c, 0, 2, 0, 200) && sh_fork(c, 0, 3, 0, 140) &&
              kv_seq_shared(c, 1, &base) == 256 && kv_seq_shared(c, 2, &base) == 192 && kv_seq_shared(c, 3, &base) == 128,
          "shared kv: forks 0 -> 1, 2, 3");
    for (int step = 0; step < 3; step++) {
        laya_token t[SH_SEQ];
        int32_t sq[SH_SEQ];
        for (int z = 0; z < SH_SEQ; z++) t[z] = sh_tok[z][sh_len[z]++] = (laya_token)sh_rand((uint32_t)V), sq[z] = z;
        int same = laya_decode(c, (laya_batch){SH_SEQ, t, sq, NULL}) == LAYA_OK;
        for (int z = 0; z < SH_SEQ && same; z++) same = sh_same(c, fresh, z, z, V);
        CHECK(same, "shared kv: step %d of a source, its three forks and another sequence in one batch", step);
    }
    CHECK(checks > 100 && shared_seen > 100 && unshared > 5,
          "shared kv: the test did too little (%d checks, %d shared states, %d sequences given back their own copy)", checks,
          shared_seen, unshared);
    printf("test_model: shared kv (%s): %d decodes equal to fresh ones (%d shared states, %d sequences given back their own copy)\n",
           kv_type == LAYA_KV_F16 ? "F16" : "F32", checks, shared_seen, unshared);
out:
    laya_context_free(c);
    laya_context_free(fresh);
}

/* Packed weights (laya_model_params.pack_weights, kernels.h P16) change the layout and not the numbers:
 * the logits of a prompt, the focused output layer's subsets (a row of its panel) and the tied embedding
 * (read back from the packed copy) give the same bits as the file's own layout. */
static void check_packed_same(laya_model *m) {
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    mp.pack_weights = -1;
    laya_model *f = NULL;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_model_load(MODEL, mp, &f, err, sizeof err);
    CHECK(st == LAYA_OK, "load with pack_weights -1: %s", err);
    if (st) return;
    CHECK(!f->output.pdata && !f->layers[0].wq.pdata, "pack_weights -1 packs nothing");
    laya_model_wait_ready(m); /* the copy is made by a thread after load; decodes before it use the file */
    laya_model_wait_ready(m); /* twice is fine */
    int packed = m->output.pdata != NULL;
    CHECK(packed == ((m->kn->packs & KN_PACKS(m->output.type)) != 0) && (m->layers[0].w_down.pdata != NULL) == packed,
          "the %s table %s the matrices", m->kn->name, packed ? "packed" : "did not pack");
    static const laya_token ids[] = {0, 4, 761, 6789, 3513, 1163, 1070, 103, 834, 427, 1023, 1164, 280};
    enum { N = sizeof ids / sizeof *ids };
    const int V = laya_n_vocab(m);
    float *lg[2] = {malloc((size_t)N * V * sizeof(float)), malloc((size_t)N * V * sizeof(float))};
    float sub[2][6];
    const laya_token sid[6] = {0, 15, 16, 1463, 8191, 16383}; /* panel edges and a middle */
    for (int k = 0; k < 2 && lg[0] && lg[1]; k++) {
        laya_context_params cp = laya_context_default_params();
        cp.max_kv_size = 64, cp.max_batch = N, cp.max_logits = N;
        laya_context *c = NULL;
        st = laya_context_create(k ? f : m, cp, &c, err, sizeof err);
        CHECK(st == LAYA_OK, "context: %s", err);
        if (st) break;
        int32_t seq[N] = {0};
        int8_t want[N];
        memset(want, LAYA_WANT_LOGITS, N);
        want[N - 1] = LAYA_WANT_LOGITS | LAYA_WANT_HIDDEN;
        st = laya_decode(c, (laya_batch){N, ids, seq, want});
        CHECK(st == LAYA_OK, "decode: %s", laya_context_error(c));
        for (int i = 0; st == LAYA_OK && i < N; i++) memcpy(lg[k] + (size_t)i * V, laya_get_logits(c, i), (size_t)V * sizeof(float));
        st = laya_get_logits_subset(c, N - 1, sid, 6, sub[k]);
        CHECK(st == LAYA_OK, "logits subset: %s", laya_context_error(c));
        laya_context_free(c);
    }
    if (lg[0] && lg[1]) {
        CHECK(!memcmp(lg[0], lg[1], (size_t)N * V * sizeof(float)), "packed and file-view logits differ");
        CHECK(!memcmp(sub[0], sub[1], sizeof sub[0]), "packed and file-view logit subsets differ");
        for (int i = 0; i < 6; i++)
            CHECK(sub[0][i] == lg[0][(size_t)(N - 1) * V + sid[i]], "subset id %d: %g, full layer %g", sid[i], sub[0][i],
                  lg[0][(size_t)(N - 1) * V + sid[i]]);
    }
    printf("test_model: %s weights against the file's layout: same logits\n", packed ? "packed" : "unpacked (no packing table)");
    free(lg[0]), free(lg[1]);
    laya_model_free(f);
}

/* Matmul passes split their rows by learned shares (forward.c mm_split): whatever the split, the same
 * bits. Decode steps of one token and of four, with the shares even and not learning, then starting from
 * a caller's share of 0.7 and 0.3 and learning; every logit must match. */
static void check_split_same(laya_model *m) {
    laya_model_wait_ready(m); /* packed weights: the passes that split by shares */
    static const laya_token ids[] = {0, 4, 761, 6789, 3513, 1163, 1070, 103, 834, 427, 1023, 1164, 280, 77};
    enum { N = sizeof ids / sizeof *ids, STEPS = 12, NB = 4 };
    const int V = laya_n_vocab(m);
    float *lg[3];
    for (int k = 0; k < 3; k++) lg[k] = malloc((size_t)STEPS * NB * V * sizeof(float));
    const double share[3] = {0.5, 0.7, 0.3};
    for (int k = 0; k < 3 && lg[0] && lg[1] && lg[2]; k++) {
        laya_context_params cp = laya_context_default_params();
        cp.max_kv_size = 64, cp.max_batch = N, cp.max_logits = NB, cp.n_seq = NB;
        laya_context *c = NULL;
        char err[LAYA_ERR_MSG_MAX] = "";
        laya_status st = laya_context_create(m, cp, &c, err, sizeof err);
        CHECK(st == LAYA_OK, "context: %s", err);
        if (st) break;
        atomic_store(&fw_split_adapt, k > 0);
        fw_split_set(c, share[k]);
        int32_t seq[N] = {0};
        st = laya_decode(c, (laya_batch){N - 2, ids, seq, NULL});
        for (int b = 1; b < NB; b++) st = st ? st : laya_seq_fork(c, 0, b, N - 2);
        for (int r = 0; st == LAYA_OK && r < STEPS; r++) {
            const int nb = r % 2 ? NB : 1; /* B = 1 and B = 4 steps, each learning its own shares */
            laya_token t[NB];
            int32_t sq[NB];
            for (int b = 0; b < nb; b++) t[b] = ids[(r + 3 * b) % N], sq[b] = b;
            st = laya_decode(c, (laya_batch){nb, t, sq, NULL});
            for (int b = 0; st == LAYA_OK && b < nb; b++)
                memcpy(lg[k] + ((size_t)r * NB + b) * V, laya_get_logits(c, b), (size_t)V * sizeof(float));
        }
        CHECK(st == LAYA_OK, "split shares %.1f: decode: %s", share[k], laya_context_error(c));
        laya_context_free(c);
    }
    atomic_store(&fw_split_adapt, 1);
    for (int k = 1; k < 3 && lg[0] && lg[1] && lg[2]; k++)
        for (int r = 0; r < STEPS; r++)
            for (int b = 0; b < (r % 2 ? NB : 1); b++)
                CHECK(!memcmp(lg[0] + ((size_t)r * NB + b) * V, lg[k] + ((size_t)r * NB + b) * V, (size_t)V * sizeof(float)),
                      "step %d row %d: logits with the caller's share from %.1f differ from an even split", r, b, share[k]);
    for (int k = 0; k < 3; k++) free(lg[k]);
}

/* The packing waits for the decodes under way (model.c pack_wait), a bounded time each: decodes that
 * never pause for it still let it finish, and their logits stay the file's bits. */
static void check_pack_under_load(void) {
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_model *m = NULL;
    if (laya_model_load(MODEL, mp, &m, err, sizeof err) != LAYA_OK) {
        CHECK(0, "load: %s", err);
        return;
    }
    if (!m->pk) { /* nothing to pack on this CPU's kernel table */
        laya_model_free(m);
        return;
    }
    laya_context_params cp = laya_context_default_params();
    cp.max_kv_size = 8, cp.max_logits = 1;
    laya_context *c = NULL;
    const int V = laya_n_vocab(m);
    float *first = malloc((size_t)V * sizeof(float));
    long steps = 0, differ = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double s = 0;
    if (first && laya_context_create(m, cp, &c, err, sizeof err) == LAYA_OK) {
        /* one token again and again, as fast as it goes, until the copy is published or 60 s pass */
        while (!atomic_load(&m->packed_ready) && s < 60) {
            laya_seq_truncate(c, 0, 0);
            laya_token t = 547;
            int32_t sq = 0;
            if (laya_decode(c, (laya_batch){1, &t, &sq, NULL}) != LAYA_OK) break;
            if (!steps) memcpy(first, laya_get_logits(c, 0), (size_t)V * sizeof(float));
            else differ += memcmp(first, laya_get_logits(c, 0), (size_t)V * sizeof(float)) != 0;
            steps++;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        }
    }
    CHECK(atomic_load(&m->packed_ready), "the packing did not finish in %.1f s of %ld back-to-back decodes", s, steps);
    CHECK(steps > 0 && differ == 0, "%ld of %ld decodes during the packing differ from the first", differ, steps);
    printf("test_model: back-to-back decodes: the packing finished after %.0f ms, %ld decodes, same bits\n", 1e3 * s, steps);
    free(first);
    laya_context_free(c);
    laya_model_free(m);
}

/* Decodes made while the packing thread runs (they use the file) give the bits of decodes after it, and a
 * model freed while it runs stops it (no leak, no use after free: make asan, and ThreadSanitizer). */
static void check_pack_race(void) {
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    char err[LAYA_ERR_MSG_MAX] = "";
    for (int i = 0; i < 3; i++) { /* freed at once, and after one decode */
        laya_model *m = NULL;
        laya_status st = laya_model_load(MODEL, mp, &m, err, sizeof err);
        CHECK(st == LAYA_OK, "load: %s", err);
        if (i == 2 && m) {
            laya_context *c = NULL;
            laya_context_params cp = laya_context_default_params();
            cp.max_kv_size = 16;
            if (laya_context_create(m, cp, &c, err, sizeof err) == LAYA_OK) {
                laya_token t = 4;
                int32_t sq = 0;
                CHECK(laya_decode(c, (laya_batch){1, &t, &sq, NULL}) == LAYA_OK, "decode during packing");
            }
            laya_context_free(c);
        }
        laya_model_free(m);
    }
    laya_model *m = NULL;
    if (laya_model_load(MODEL, mp, &m, err, sizeof err) != LAYA_OK) return;
    laya_context_params cp = laya_context_default_params();
    cp.max_kv_size = 64, cp.max_batch = 16, cp.max_logits = 1;
    laya_context *c = NULL;
    static const laya_token ids[] = {0, 5, 547, 4509, 2850, 1121, 82, 27, 1060, 3576, 14440, 376, 534, 213};
    const int n = sizeof ids / sizeof *ids, V = laya_n_vocab(m);
    float *lg[2] = {malloc((size_t)V * sizeof(float)), malloc((size_t)V * sizeof(float))};
    int early = 0;
    if (laya_context_create(m, cp, &c, err, sizeof err) == LAYA_OK && lg[0] && lg[1]) {
        for (int k = 0; k < 2; k++) {
            if (k == 1) laya_model_wait_ready(m);
            else early = !atomic_load(&m->packed_ready);
            laya_seq_truncate(c, 0, 0);
            int32_t seq[16] = {0};
            laya_status st = laya_decode(c, (laya_batch){n, ids, seq, NULL});
            CHECK(st == LAYA_OK, "decode: %s", laya_context_error(c));
            if (st == LAYA_OK) memcpy(lg[k], laya_get_logits(c, n - 1), (size_t)V * sizeof(float));
        }
        CHECK(!memcmp(lg[0], lg[1], (size_t)V * sizeof(float)), "logits during packing differ from after it");
    }
    printf("test_model: a decode %s the packing thread gives its bits after it\n", early ? "started during" : "(after)");
    free(lg[0]), free(lg[1]);
    laya_context_free(c);
    laya_model_free(m);
}

/* A decode during the packing reads each matrix's complete panels from the packed copy and the rest from
 * the file (forward.c pack_views): with the packing stopped after k pieces, for k from none to all (the
 * stops inside a matrix among them, the output layer's too), a prompt, a batch of four and a logit subset
 * give the bits of the file's layout. */
static void check_pack_views(void) {
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2, mp.pack_weights = -1;
    char err[LAYA_ERR_MSG_MAX] = "";
    static const laya_token ids[] = {0, 5, 547, 4509, 2850, 1121, 82, 27, 1060, 3576, 14440, 376, 534, 213};
    static const laya_token sub_ids[] = {3, 17, 999, 4095, 8191, 12000, 16383};
    const int n = sizeof ids / sizeof *ids, ns = sizeof sub_ids / sizeof *sub_ids;
    float *ref = NULL, *got = NULL;
    float ref_sub[8], got_sub[8];
    int V = 0, pieces = -1, splits = 0, runs = 0;
    for (int r = -1;; r++) { /* r = -1: the reference, unpacked; then stops at k[r] pieces */
        laya_model *m = NULL;
        if (laya_model_load(MODEL, mp, &m, err, sizeof err) != LAYA_OK) {
            CHECK(0, "load: %s", err);
            break;
        }
        if (r == -1) {
            V = laya_n_vocab(m);
            ref = malloc((size_t)5 * V * sizeof(float)), got = malloc((size_t)5 * V * sizeof(float));
            pieces = lm_pack_first(m, 0);
        }
        const int k[] = {1, 2, 3, 5, 8, pieces / 3, pieces / 2, pieces - 7, pieces - 4, pieces - 2, pieces - 1, pieces};
        const int nk = sizeof k / sizeof *k;
        if (r >= nk || pieces < 8 || !ref || !got) {
            laya_model_free(m);
            break;
        }
        if (r >= 0) {
            CHECK(lm_pack_first(m, k[r]) == pieces, "lm_pack_first");
            const lm_mat *all[8 * 7 + 1];
            int na = 0;
            for (int l = 0; l < m->hp.n_layer && na < 8 * 7; l++) {
                const lm_layer *L = &m->layers[l];
                const lm_mat *l7[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
                for (int t = 0; t < 7 && na < 8 * 7; t++) all[na++] = l7[t];
            }
            all[na++] = &m->output;
            for (int t = 0; t < na; t++) {
                int64_t d = atomic_load(&all[t]->pk_done) * 16;
                splits += d > 0 && d < all[t]->rows;
            }
        }
        laya_context_params cp = laya_context_default_params();
        cp.n_seq = 4, cp.max_kv_size = 64, cp.max_batch = 16, cp.max_logits = 4;
        laya_context *c = NULL;
        if (laya_context_create(m, cp, &c, err, sizeof err) == LAYA_OK) {
            float *out = r < 0 ? ref : got;
            float *osub = r < 0 ? ref_sub : got_sub;
            int32_t seq[16] = {0};
            int8_t want[16] = {0};
            want[n - 1] = 1;
            laya_status st = laya_decode(c, (laya_batch){n, ids, seq, want});
            CHECK(st == LAYA_OK, "decode: %s", laya_context_error(c));
            if (st == LAYA_OK) memcpy(out, laya_get_logits(c, n - 1), (size_t)V * sizeof(float));
            for (int q = 1; q < 4; q++) laya_seq_fork(c, 0, q, n);
            const laya_token bt[4] = {7, 70, 700, 7000};
            const int32_t bs[4] = {0, 1, 2, 3};
            st = laya_decode(c, (laya_batch){4, bt, bs, NULL});
            CHECK(st == LAYA_OK, "batch decode: %s", laya_context_error(c));
            for (int q = 0; q < 4 && st == LAYA_OK; q++)
                memcpy(out + (size_t)(q + 1) * V, laya_get_logits(c, q), (size_t)V * sizeof(float));
            CHECK(laya_get_logits_subset(c, 2, sub_ids, ns, osub) == LAYA_OK, "subset: %s", laya_context_error(c));
            if (r >= 0) {
                CHECK(!memcmp(ref, got, (size_t)5 * V * sizeof(float)), "packing stopped at %d of %d pieces: logits differ",
                      k[r], pieces);
                CHECK(!memcmp(ref_sub, got_sub, (size_t)ns * sizeof(float)), "packing stopped at %d pieces: subset differs", k[r]);
                runs++;
            }
        }
        laya_context_free(c);
        laya_model_free(m);
    }
    CHECK(pieces < 0 || splits > 0, "no stop fell inside a matrix");
    printf("test_model: decodes with the packing stopped after %d piece counts of %d (%d inside a matrix): the file's bits\n",
           runs, pieces, splits);
    free(ref), free(got);
}

/* Out of memory at each of the last allocations of a load (the packing's work list and the copies of the
 * norms among them): the load fails with NOMEM or succeeds, packed or not, and the model frees everything. */
static void check_pack_oom(void) {
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_model *m = NULL;
    ta_install(0);
    laya_status st = laya_model_load(MODEL, mp, &m, err, sizeof err);
    long total = ta_count;
    laya_model_free(m);
    laya_set_alloc_hooks(NULL);
    CHECK(st == LAYA_OK, "load under counting hooks: %s", err);
    int bad = 0, packed = 0, unpacked = 0;
    const long k0 = LAYA_MAX(1, total - 80);
    for (long k = k0; k <= total; k++) {
        ta_install(k);
        m = NULL;
        st = laya_model_load(MODEL, mp, &m, err, sizeof err);
        if (m) {
            laya_model_wait_ready(m);
            if (m->output.pdata) packed++;
            else unpacked++;
        }
        laya_model_free(m);
        long live = ta_live;
        laya_set_alloc_hooks(NULL);
        if (live != 0 || (st != LAYA_OK && st != LAYA_ERR_NOMEM) || (st == LAYA_OK) != (m != NULL)) bad++;
    }
    CHECK(bad == 0, "load with allocation failures: %d bad of %ld", bad, total - k0 + 1);
    printf("test_model: OOM at each of the last %ld of %ld allocations of a load: %d loaded packed, %d unpacked, no leak\n",
           total - k0 + 1, total, packed, unpacked);
}

/* An F16 cache (laya_context_params.kv_type) against the F32 one on the bundled model: a 200-token prompt
 * and 40 greedy steps, then four candidates forked from it, as a keyboard decodes them. The logits stay
 * within 0.5 of the F32 cache's (0.28 measured: the q8 activations carry a rounding's change through the
 * layers; two SIMD tables differ by 0.1-0.15 on the same cache) and the top token is the same at almost
 * every step; a kv_type out of range is refused. */
static void check_kv_f16(laya_model *m) {
    const int V = laya_n_vocab(m);
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = 5, cp.max_kv_size = 320, cp.max_batch = 256, cp.max_logits = 5;
    laya_context *c[2] = {NULL, NULL};
    char err[LAYA_ERR_MSG_MAX] = "";
    for (int k = 0; k < 2; k++) {
        cp.kv_type = k ? LAYA_KV_F16 : LAYA_KV_F32;
        CHECK(laya_context_create(m, cp, &c[k], err, sizeof err) == LAYA_OK, "kv %d context: %s", k, err);
    }
    cp.kv_type = 7;
    laya_context *bad = NULL;
    CHECK(laya_context_create(m, cp, &bad, err, sizeof err) == LAYA_ERR_INVALID_ARG && !bad, "kv_type 7 refused");
    if (!c[0] || !c[1]) goto done;
    laya_token ids[256];
    int32_t seq[256] = {0};
    uint64_t r = 12345;
    for (int i = 0; i < 200; i++) r = r * 6364136223846793005ull + 1442695040888963407ull, ids[i] = (laya_token)(8 + (r >> 33) % (uint64_t)(V - 8));
    double worst = 0;
    int steps = 0, same_top = 0;
    laya_token cur[2] = {0, 0};
    for (int step = 0; step < 41; step++) {
        for (int k = 0; k < 2; k++) {
            laya_batch b = step ? (laya_batch){1, &cur[0], seq, NULL} : (laya_batch){200, ids, seq, NULL};
            CHECK(laya_decode(c[k], b) == LAYA_OK, "kv %d step %d: %s", k, step, laya_context_error(c[k]));
        }
        const float *a = laya_get_logits(c[0], step ? 0 : 199), *h = laya_get_logits(c[1], step ? 0 : 199);
        if (!a || !h) goto done;
        int ta = 0, th = 0;
        for (int v = 0; v < V; v++) {
            worst = fmax(worst, fabs((double)a[v] - h[v]));
            if (a[v] > a[ta]) ta = v;
            if (h[v] > h[th]) th = v;
        }
        same_top += ta == th, steps++;
        cur[0] = cur[1] = (laya_token)ta; /* both follow the F32 cache's greedy path */
    }
    /* four candidates forked from the context (they share its 240 positions), one step each */
    for (int k = 0; k < 2; k++) {
        int32_t bs[4];
        laya_token bt[4];
        int8_t w[4] = {1, 1, 1, 1};
        for (int j = 0; j < 4; j++) {
            bs[j] = j + 1, bt[j] = ids[j * 17];
            CHECK(laya_seq_fork(c[k], 0, j + 1, laya_seq_len(c[k], 0)) == LAYA_OK, "fork: %s", laya_context_error(c[k]));
        }
        CHECK(laya_decode(c[k], (laya_batch){4, bt, bs, w}) == LAYA_OK, "kv %d candidates: %s", k, laya_context_error(c[k]));
    }
    for (int j = 0; j < 4; j++) {
        const float *a = laya_get_logits(c[0], j), *h = laya_get_logits(c[1], j);
        for (int v = 0; a && h && v < V; v++) worst = fmax(worst, fabs((double)a[v] - h[v]));
    }
    CHECK(worst <= 0.5, "F16 KV: logits %.3g from the F32 cache's", worst);
    CHECK(same_top >= steps - 2, "F16 KV: top token the F32 cache's at %d of %d steps", same_top, steps);
    printf("test_model: F16 KV vs F32 KV, 240 positions and 4 forked candidates: max |diff| %.3g, top-1 %d/%d\n", worst,
           same_top, steps);
done:
    laya_context_free(c[0]);
    laya_context_free(c[1]);
}

/* laya_model_info.step_bytes: with every weight a view of the file, a tied model's step reads every tensor
 * of it once (the embedding is the output layer); the packed copy holds the same blocks in another order,
 * so it changes the count only by what packing adds (nothing for these types), and the threads resolve. */
static void check_step_bytes(const laya_model *packed) {
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 3;
    mp.pack_weights = -1;
    laya_model *m = NULL;
    char err[LAYA_ERR_MSG_MAX] = "";
    CHECK(laya_model_load(MODEL, mp, &m, err, sizeof err) == LAYA_OK, "load unpacked: %s", err);
    if (!m) return;
    laya_model_info a, b;
    laya_model_get_info(m, &a);
    laya_model_get_info(packed, &b);
    CHECK(a.tied_output && a.step_bytes == a.weight_bytes, "unpacked step_bytes %llu, weight_bytes %llu",
          (unsigned long long)a.step_bytes, (unsigned long long)a.weight_bytes);
    CHECK(a.packed_bytes == 0 && a.n_threads == 3 && b.n_threads == 2, "packed %llu, threads %d / %d",
          (unsigned long long)a.packed_bytes, a.n_threads, b.n_threads);
    CHECK(b.step_bytes >= b.packed_bytes && b.step_bytes == a.step_bytes, "packed step_bytes %llu (packed %llu) against %llu",
          (unsigned long long)b.step_bytes, (unsigned long long)b.packed_bytes, (unsigned long long)a.step_bytes);
    laya_model_free(m);
}

int main(void) {
    laya_model *m = NULL;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    laya_status st = laya_model_load(MODEL, mp, &m, err, sizeof err);
    CHECK(st == LAYA_OK, "load %s: %s", MODEL, err);
    if (st) return DONE("test_model");
    laya_model_info info;
    laya_model_get_info(m, &info);
    CHECK(laya_n_vocab(m) == 16384, "n_vocab %d", laya_n_vocab(m));
    /* the special tokens the sessions rely on are single tokens */
    static const char *specials[] = {"<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
                                     "<|prose|>",     "<|code|>",       "<|shell|>",      "<|zh|>"};
    for (int i = 0; i < 8; i++) {
        laya_token id[4];
        size_t n = 0;
        st = laya_tokenize(m, specials[i], strlen(specials[i]), 1, id, 4, &n);
        CHECK(st == LAYA_OK && n == 1 && id[0] == i, "%s -> %zu ids, first %d", specials[i], n, n ? id[0] : -1);
    }
    check_roundtrip(m);
    check_step_bytes(m);
    check_batch_vs_steps(m, LAYA_KV_F32);
    check_batch_vs_steps(m, LAYA_KV_F16);
    check_shared_kv(m, LAYA_KV_F32);
    check_shared_kv(m, LAYA_KV_F16);
    check_kv_f16(m);
    check_packed_same(m);
    check_split_same(m);
    check_pack_race();
    check_pack_under_load();
    check_pack_views();
    check_pack_oom();

    for (int32_t kv = LAYA_KV_F32; kv <= LAYA_KV_F16; kv++) {
    laya_context_params cp = laya_context_default_params();
    cp.max_kv_size = 64;
    cp.max_batch = 64;
    cp.kv_type = kv; /* transformers' top 5 and logits hold with either cache */
    laya_context *c = NULL;
    st = laya_context_create(m, cp, &c, err, sizeof err);
    CHECK(st == LAYA_OK, "context: %s", err);
    for (size_t r = 0; c && r < sizeof refs / sizeof refs[0]; r++) {
        laya_token ids[64];
        size_t n = 0;
        st = laya_tokenize(m, refs[r].prompt, strlen(refs[r].prompt), 1, ids, 64, &n);
        int same = st == LAYA_OK && n == (size_t)refs[r].n_ids && !memcmp(ids, refs[r].ids, n * sizeof ids[0]);
        CHECK(same, "prompt %zu: ids differ from Hugging Face tokenizers'", r);
        laya_seq_truncate(c, 0, 0);
        int32_t seq[64] = {0};
        laya_batch b = {(int32_t)n, ids, seq, NULL};
        st = laya_decode(c, b);
        CHECK(st == LAYA_OK, "decode: %s", laya_context_error(c));
        const float *lg = laya_get_logits(c, (int32_t)n - 1);
        if (!lg) continue;
        /* top 5 by logit (ties to the lower id) */
        laya_token top[5];
        for (int k = 0; k < 5; k++) {
            int best = -1;
            for (int v = 0; v < laya_n_vocab(m); v++) {
                int used = 0;
                for (int j = 0; j < k; j++) used |= top[j] == v;
                if (!used && (best < 0 || lg[v] > lg[best])) best = v;
            }
            top[k] = best;
        }
        CHECK(top[0] == refs[r].top5[0], "prompt %zu: top-1 %d, transformers %d", r, top[0], refs[r].top5[0]);
        int in5 = 0;
        for (int k = 0; k < 5; k++)
            for (int j = 0; j < 5; j++) in5 += top[k] == refs[r].top5[j];
        CHECK(in5 >= 4, "prompt %zu: %d of transformers' top 5 in Laya's top 5", r, in5);
        for (int k = 0; k < 5; k++)
            CHECK(fabsf(lg[refs[r].top5[k]] - refs[r].logit5[k]) < 0.25f, "prompt %zu id %d: logit %.4f vs %.4f", r,
                  refs[r].top5[k], lg[refs[r].top5[k]], refs[r].logit5[k]);
        /* smoke generation: 16 greedy tokens, each one a valid id, text decodes */
        laya_token gen[16];
        laya_token cur = top[0];
        int ok = 1;
        for (int g = 0; g < 16 && ok; g++) {
            gen[g] = cur;
            int32_t s0 = 0;
            laya_batch one = {1, &cur, &s0, NULL};
            ok = laya_decode(c, one) == LAYA_OK;
            const float *l2 = ok ? laya_get_logits(c, 0) : NULL;
            ok = ok && l2;
            if (!ok) break;
            int best = 0;
            for (int v = 1; v < laya_n_vocab(m); v++)
                if (l2[v] > l2[best]) best = v;
            cur = best;
        }
        char text[512];
        size_t nt = 0;
        CHECK(ok && laya_detokenize(m, gen, 16, 0, 1, text, sizeof text, &nt) == LAYA_OK && nt > 0,
              "prompt %zu: greedy generation failed", r);
    }
    laya_context_free(c);
    }
    laya_model_free(m);
    return DONE("test_model");
}
