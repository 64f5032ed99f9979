/* pack.c — the packed copy of a model's weights (kernels.h, P16 order), made after load on a thread of
 * its own that yields to decodes, and the hold a decode puts on it. Not the weights' reading from the
 * file (model.c) nor the packed kernels (src/kernels). */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine/pack.h"

typedef struct pack_piece {
    lm_mat *w;
    uint32_t pt;
    int64_t p0, p1;
    void *dst;
    int first;        /* index of the matrix's first piece */
    atomic_int done;  /* packed (pack_advance) */
} pack_piece;

struct pack_state {
    laya_model *m;
    int n, limit;       /* pieces, and how many of them the workers pack (lm_pack_first: fewer) */
    pack_piece *pieces; /* matrix by matrix; a matrix's first piece has p0 == 0 */
    atomic_int next;
};

/* The file's pages inside [p, p + n): dropped from this process (a later read maps them in again). */
static void release_pages(const void *p, size_t n) {
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)ps - 1) / (uintptr_t)ps * (uintptr_t)ps;
    uintptr_t e = ((uintptr_t)p + n) / (uintptr_t)ps * (uintptr_t)ps;
    if (e > a) madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Piece i is packed: the matrix's pk_done moves over every leading piece that is. Each thread marks its
 * piece before it looks, so whichever of two threads looks last sees both pieces marked. */
static void pack_advance(struct pack_state *ps, int i) {
    const pack_piece *pc = &ps->pieces[i];
    lm_mat *w = pc->w;
    const int64_t panels = (w->rows + 15) / 16, pp = ps->pieces[pc->first].p1;
    atomic_store(&ps->pieces[i].done, 1);
    for (;;) {
        int64_t d = atomic_load(&w->pk_done);
        if (d >= panels) return;
        const pack_piece *k = &ps->pieces[pc->first + (int)(d / pp)];
        if (!atomic_load(&k->done)) return;
        atomic_compare_exchange_strong(&w->pk_done, &d, k->p1);
    }
}

/* A fresh process's first decode pays for its first touches of everything, and packing beside it would
 * slow that first key press further. So the packing waits for the first decode to end, for at most
 * PACK_START_MS after load; then before each piece (about 1 MB) for the decodes under way, each wait at
 * most PACK_HOLD_MS, so that decodes that never pause still let it finish, a piece a thread per wait. */
#define PACK_START_MS 50
#define PACK_HOLD_MS 8

static void hold_wake(laya_model *m) {
    if (!m->hold_ok || !atomic_load(&m->pack_waiters)) return;
    pthread_mutex_lock(&m->hold_mu);
    pthread_cond_broadcast(&m->hold_cv);
    pthread_mutex_unlock(&m->hold_mu);
}

/* A waiter counts itself (pack_waiters) before it looks at the flags under the lock, and a setter changes
 * them before it looks at pack_waiters: one of the two sees the other. */
void lm_pack_hold(laya_model *m, int on) {
    if (on) {
        atomic_fetch_add(&m->pack_hold, 1);
        return;
    }
    int last = atomic_fetch_sub(&m->pack_hold, 1) == 1, first = !atomic_load(&m->pack_go) && !atomic_exchange(&m->pack_go, 1);
    if (last || first) hold_wake(m);
}

/* start: wait for pack_go; else for pack_hold 0 */
static void pack_wait(laya_model *m, int start) {
    if (!m->hold_ok || (start ? atomic_load(&m->pack_go) : !atomic_load(&m->pack_hold))) return;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += (start ? PACK_START_MS : PACK_HOLD_MS) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    atomic_fetch_add(&m->pack_waiters, 1);
    pthread_mutex_lock(&m->hold_mu);
    while (!atomic_load(&m->pack_cancel) && (start ? !atomic_load(&m->pack_go) : atomic_load(&m->pack_hold) > 0))
        if (pthread_cond_timedwait(&m->hold_cv, &m->hold_mu, &dl)) break; /* ETIMEDOUT (or an error) */
    pthread_mutex_unlock(&m->hold_mu);
    atomic_fetch_sub(&m->pack_waiters, 1);
}

static void *pack_worker(void *arg) {
    struct pack_state *ps = arg;
    for (int i; !atomic_load_explicit(&ps->m->pack_cancel, memory_order_relaxed) &&
                (pack_wait(ps->m, 0), i = atomic_fetch_add(&ps->next, 1)) < ps->limit;) {
        const pack_piece *pc = &ps->pieces[i];
        const lm_mat *w = pc->w;
        kn_pack(pc->pt, w->data, w->row_bytes, w->rows, w->cols, pc->p0, pc->p1, pc->dst);
        /* the piece's source rows leave this process at once, so the peak is the copy, not twice it (a
         * decode running meanwhile maps in again what it reads) */
        int64_t r0 = pc->p0 * 16, r1 = LAYA_MIN(w->rows, pc->p1 * 16);
        release_pages((const char *)w->data + (size_t)r0 * w->row_bytes, (size_t)(r1 - r0) * w->row_bytes);
        pack_advance(ps, i);
    }
    return NULL;
}

/* The packing thread: the pieces on up to the model's thread count (helpers of its own), then every
 * pdata set and published, then the file's pages of the packed matrices released once more as a whole (a
 * piece's read may have mapped in a large page-cache folio reaching into pieces released before it). */
static void *pack_main(void *arg) {
    struct pack_state *ps = arg;
    laya_model *m = ps->m;
    pthread_t th[7];
    int nt = 0;
    pack_wait(m, 1);
    if (atomic_load(&m->pack_cancel)) return NULL; /* freed before the packing began */
    for (int t = 1; t < LAYA_MIN(m->n_threads, 8) && t * 8 < ps->n; t++)
        if (pthread_create(&th[nt], NULL, pack_worker, ps) == 0) nt++;
    pack_worker(ps);
    for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
    if (atomic_load(&m->pack_cancel)) return NULL;
    for (int i = 0; i < ps->n; i++)
        if (ps->pieces[i].p0 == 0) ps->pieces[i].w->pdata = ps->pieces[i].dst; /* (ptype: pack_prepare) */
    atomic_store_explicit(&m->packed_ready, 1, memory_order_release);
    for (int i = 0; i < ps->n; i++) {
        const lm_mat *w = ps->pieces[i].w;
        if (ps->pieces[i].p0 == 0) release_pages(w->data, (size_t)w->rows * w->row_bytes);
    }
    return NULL;
}

/* Matrix i of a step: layer i / 7's q, k, v, o, gate, up, down, and the output layer last (i == 7 * n_layer). */
lm_mat *lm_step_mat(laya_model *m, int i) {
    if (i == 7 * m->hp.n_layer) return &m->output;
    lm_layer *L = &m->layers[i / 7];
    lm_mat *l7[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    return l7[i % 7];
}

/* Matrix i of the packing: the output layer first, then the layers' in step order (lm_step_mat). A first
 * token decoded while the weights are packed goes through the layers from the file and comes to the
 * output layer last: it then finds the largest matrix already in the copy, and the packer, behind it in
 * the layers, never releases file pages the decode has yet to read (which it would map in again). */
static lm_mat *pack_mat(laya_model *m, int i) { return lm_step_mat(m, i == 0 ? 7 * m->hp.n_layer : i - 1); }

/* Panels per piece of packing work: about 1 MB. */
static int64_t piece_panels(uint32_t pt, int64_t K) {
    return LAYA_MAX(1, (int64_t)((1u << 20) / kn_pack_panel_bytes(pt, K)));
}

static void pack_free(struct pack_state *ps) {
    if (!ps) return;
    laya_free(ps->pieces);
    laya_free(ps);
}

/* The P16 type a matrix is packed as, or 0 (a type without one, MLX, or no P16 size). */
uint32_t lm_pack_type(const laya_model *m, const lm_mat *w) {
    uint32_t pt = w->mlx_bits || w->type >= 32 || !(m->kn->packs & KN_PACKS(w->type)) ? 0 : kn_p16_type(w->type);
    return pt && kn_pack_bytes(pt, w->rows, w->cols) ? pt : 0;
}

/* Starts copying every matrix of a type the kernel table asks for packed (kn_ops.packs: on AVX-512 Q8_0,
 * Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K and Q6_K; on AVX-VNNI the six 32-element types, on AVX2 those
 * but Q8_0) of the layers and the output layer into the kernels' P16 order, on a thread of its own, into one
 * anonymous map with transparent huge pages asked for (a step streams every weight); load does not wait
 * for it (laya_model_wait_ready does). The token embedding keeps
 * its rows in the file (when the output layer is tied to it, only the output layer's copy is packed, and
 * the lookups read the packed copy once it is there). Best effort: without the memory or a thread the
 * model computes from the file, with the same results. */
static struct pack_state *pack_prepare(laya_model *m) {
    const int nm = 7 * m->hp.n_layer + 1;
    uint64_t total = 0;
    int npieces = 0;
    for (int i = 0; i < nm; i++) {
        const lm_mat *w = pack_mat(m, i);
        uint32_t pt = lm_pack_type(m, w);
        if (!pt) continue;
        total += kn_pack_bytes(pt, w->rows, w->cols);
        int64_t pp = piece_panels(pt, w->cols);
        npieces += (int)(((w->rows + 15) / 16 + pp - 1) / pp);
    }
    if (!total || total > SIZE_MAX) return NULL;
    struct pack_state *ps = laya_calloc(1, sizeof *ps);
    if (!ps || pthread_mutex_init(&m->pack_mu, NULL) != 0) {
        laya_free(ps);
        return NULL;
    }
    m->pack_mu_ok = 1;
    ps->m = m;
    ps->pieces = laya_malloc((size_t)npieces * sizeof *ps->pieces);
    void *map = ps->pieces ? mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                           : MAP_FAILED;
    if (map == MAP_FAILED) {
        pack_free(ps);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(map, (size_t)total, MADV_HUGEPAGE);
#endif
    /* the waits of pack_wait (without them the packing just does not wait) */
    pthread_condattr_t ca;
    if (pthread_mutex_init(&m->hold_mu, NULL) == 0) {
        if (pthread_condattr_init(&ca) == 0) {
            if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&m->hold_cv, &ca) == 0)
                m->hold_ok = 1;
            pthread_condattr_destroy(&ca);
        }
        if (!m->hold_ok) pthread_mutex_destroy(&m->hold_mu);
    }
    m->packed = map;
    m->packed_bytes = (size_t)total;
    size_t off = 0;
    for (int i = 0; i < nm; i++) {
        lm_mat *w = pack_mat(m, i);
        uint32_t pt = lm_pack_type(m, w);
        if (!pt) continue;
        int64_t pp = piece_panels(pt, w->cols), panels = (w->rows + 15) / 16;
        const int first = ps->n;
        for (int64_t p0 = 0; p0 < panels; p0 += pp) {
            pack_piece *pc = &ps->pieces[ps->n++];
            *pc = (pack_piece){w, pt, p0, LAYA_MIN(panels, p0 + pp), (char *)map + off, first, 0};
            atomic_init(&pc->done, 0);
        }
        w->ptype = pt;
        w->pk_dst = (char *)map + off;
        atomic_init(&w->pk_done, 0);
        off += kn_pack_bytes(pt, w->rows, w->cols);
    }
    ps->limit = ps->n;
    atomic_init(&ps->next, 0);
    m->pk = ps;
    return ps;
}

void lm_pack_start(laya_model *m) {
    struct pack_state *ps = pack_prepare(m);
    if (!ps) return;
    if (pthread_create(&m->pack_th, NULL, pack_main, ps) == 0) m->pack_th_ok = 1;
    else pack_main(ps); /* no thread: the copy is made now */
}

int lm_pack_first(laya_model *m, int n) {
    if (!m || m->packed || m->vocab_only || !m->kn->packs) return -1;
    struct pack_state *ps = pack_prepare(m);
    if (!ps) return -1;
    ps->limit = LAYA_MAX(0, LAYA_MIN(n, ps->n));
    pack_worker(ps);
    return ps->n;
}

void laya_model_wait_ready(laya_model *m) {
    if (!m || !m->pack_mu_ok) return;
    if (!atomic_exchange(&m->pack_go, 1)) hold_wake(m);
    pthread_mutex_lock(&m->pack_mu);
    if (m->pack_th_ok) pthread_join(m->pack_th, NULL), m->pack_th_ok = 0;
    pack_free(m->pk);
    m->pk = NULL;
    pthread_mutex_unlock(&m->pack_mu);
}

void lm_pack_free(laya_model *m) {
    atomic_store(&m->pack_cancel, 1);
    hold_wake(m); /* a packing thread stops waiting */
    laya_model_wait_ready(m);
    if (m->pack_mu_ok) pthread_mutex_destroy(&m->pack_mu);
    if (m->hold_ok) pthread_mutex_destroy(&m->hold_mu), pthread_cond_destroy(&m->hold_cv);
    if (m->packed) munmap(m->packed, m->packed_bytes);
}
