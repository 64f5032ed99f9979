/* doccache.h — the document cache: how often each word, and each pair of neighbouring words, occurs in the
 * last `window` bytes of the text before the cursor, kept up to date as that text changes. The session
 * mixes it with the model's candidates (a cache language model) so that the names and words a document
 * keeps using come up although they lie far behind what the model sees (max_text bytes). It is a
 * function of the text alone: a long-lived session and a fresh one on the same text agree. Nothing is
 * learned or stored. Memory is allocated by dc_create; dc_update and the queries never allocate.
 *
 * A word is a run of letters, digits, '_' and combining marks (not CJK), with apostrophes between letters
 * ("don't"); a word is in the cache once a character that cannot continue it follows. It is kept as the
 * session's normalization would write it: zero-width characters dropped, full-width ASCII folded. Two
 * words are a pair when what lies between them is no sentence end ('.', '!', '?', a line break) and at
 * most DC_GAP_MAX bytes besides spaces and tabs. Words longer than DC_WORD_MAX bytes are skipped. Not
 * here: how much the cache weighs against the model (the session decides). */
#ifndef LAYA_DOCCACHE_H
#define LAYA_DOCCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

#define DC_WORD_MAX 32
#define DC_GAP_MAX 4
#define DC_WINDOW_MIN 256
#define DC_WINDOW_MAX (1u << 22)

typedef struct dc_cache dc_cache;

typedef struct dc_hit {
    const char *word; /* valid until the next dc_update */
    int32_t len;
    double p;         /* dc_prob of it */
} dc_hit;

/* window: bytes of text indexed, DC_WINDOW_MIN..DC_WINDOW_MAX. LAYA_ERR_INVALID_ARG or LAYA_ERR_NOMEM. */
laya_status dc_create(size_t window, dc_cache **out);
void dc_free(dc_cache *c); /* accepts NULL */

/* Bytes of the end of the text a caller must pass to dc_update for it to see the whole window (a caller
 * that copies the text, such as an asynchronous submit, copies this much). */
size_t dc_span(const dc_cache *c);

/* The text before the cursor is t[0..n), and t[0] is byte `base` of the caller's whole text (0 when t is
 * all of it). Costs only what changed when the text grew or shrank at its end; anything else re-indexes
 * the window (a few hundred microseconds for 64 KiB). */
void dc_update(dc_cache *c, const char *t, size_t n, uint64_t base);

/* Where the word being typed starts in t[0..n) (n if the text ends between words); the word is not in
 * the cache yet. */
size_t dc_word_start(const char *t, size_t n);

/* The word before t[0..n) (n: where the word being typed starts) that would pair with a word there:
 * *ws, *we; 0 if there is none (the gap is too long or ends a sentence). */
int dc_prev_word(const char *t, size_t n, size_t *ws, size_t *we);

/* Set the context word for dc_prob and dc_top (NULL or n 0: none). */
void dc_set_context(dc_cache *c, const char *prev, size_t n);

uint32_t dc_count(const dc_cache *c, const char *w, size_t n); /* occurrences of w in the window */
uint64_t dc_total(const dc_cache *c);                           /* words in the window */

/* The cache's probability of w as the next word: relative frequency in the window, interpolated with the
 * pair counts after the context word (Witten-Bell). 0 for a word the cache has not seen. */
double dc_prob(const dc_cache *c, const char *w, size_t n);

/* The k likeliest words (by dc_prob) longer than prefix[0..pn) that start with it; with pn 0, the words
 * that followed the context word. Returns how many were written (at most k). */
size_t dc_top(const dc_cache *c, const char *prefix, size_t pn, dc_hit *out, size_t k);

/* Tests: a digest of every word and pair count, equal for equal contents whatever the history. */
uint64_t dc_digest(const dc_cache *c);

#endif
