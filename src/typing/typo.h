/* typo.h — typo candidates: for a typed word, the known words within one or two edits (substitution,
 * omission, extra letter, swap of neighbours), each with a prior cost that makes likely slips cheap (a
 * neighbouring key on QWERTY, a doubled or undoubled letter, a swap, a missing accent or capital). The
 * known words are one sorted array (model vocabulary, training text, user dictionary) walked as an implicit
 * trie by a bounded Damerau-Levenshtein dynamic program. Not here: whether to correct (the session scores
 * the candidates with the model). */
#ifndef LAYA_TYPO_H
#define LAYA_TYPO_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

#define TY_WORD_MAX 48  /* bytes of one word in the list */
#define TY_CHARS_MAX 32 /* code points of a typed word that can have candidates */

typedef struct ty_list ty_list;

/* Building. Words are valid UTF-8 of 1..TY_WORD_MAX bytes with no white space or control characters;
 * others are refused (LAYA_ERR_INVALID_ARG from ty_list_add/insert, skipped and counted by ty_list_load).
 * Counts are frequencies (0 for a word known but never counted); a word added twice has the sum. */
laya_status ty_list_create(ty_list **out);
void ty_list_free(ty_list *l); /* accepts NULL */
/* Bulk adding: fast, unsorted until ty_list_finish, which must come before any query. */
laya_status ty_list_add(ty_list *l, const char *word, size_t len, uint32_t count);
laya_status ty_list_add_words(ty_list *l, const char *const *words, size_t n, uint32_t count);
/* A text file of lines "word" or "word<TAB or space>count" (# starts a comment line). *skipped (may be
 * NULL) receives the number of lines refused. */
laya_status ty_list_load(ty_list *l, const char *path, size_t *skipped, char *err, size_t errlen);
laya_status ty_list_finish(ty_list *l);
/* After ty_list_finish: add one word, kept sorted (a word the user just taught). Invalidates ty_cand. */
laya_status ty_list_insert(ty_list *l, const char *word, size_t len, uint32_t count);

size_t ty_list_size(const ty_list *l);
uint64_t ty_list_total(const ty_list *l); /* sum of counts */
/* 1 if word is in the list (exact bytes), with its count in *count (may be NULL). No allocation. */
int ty_list_find(const ty_list *l, const char *word, size_t len, uint32_t *count);
/* The i-th word in byte order (i < ty_list_size), or NULL. */
const char *ty_list_word(const ty_list *l, size_t i, size_t *len, uint32_t *count);

/* Costs of one slip, from what was meant to what was typed. */
typedef struct ty_costs {
    float sub;            /* a different letter */
    float sub_adjacent;   /* a letter of a neighbouring key (QWERTY) */
    float sub_accent;     /* the same letter with or without an accent (e / é) */
    float sub_case;       /* the same letter in the other case (counts as no edit with fold_case) */
    float omit;           /* a letter left out */
    float omit_double;    /* one of a doubled letter left out ("ocasion") */
    float extra;          /* a letter too many */
    float extra_double;   /* a letter typed twice ("helllo") */
    float extra_adjacent; /* a neighbouring key hit too ("hwello") */
    float transpose;      /* two neighbours swapped ("teh") */
} ty_costs;

typedef struct ty_params {
    int max_edits;      /* 1 or 2 (default 2) */
    float max_cost;     /* candidates costing more are left out (default 2.0) */
    uint32_t max_steps; /* rows of the dynamic program per query, at most (default 300000) */
    int fold_case;      /* compare letters case-insensitively (default 1) */
    ty_costs costs;
} ty_params;

ty_params ty_default_params(void);

typedef struct ty_cand {
    const char *word; /* into the list (not NUL-terminated): valid until the list changes */
    uint32_t len;     /* bytes */
    uint32_t count;   /* the word's count in the list */
    float cost;       /* the cheapest way to turn word into what was typed */
    uint8_t edits;    /* Damerau-Levenshtein distance (case folded with fold_case) */
} ty_cand;

/* The known words within p->max_edits edits of the typed word (which itself is left out), cheapest first
 * (ties: higher count first), at most cap of them into out; *n_found receives how many qualified (may be
 * more than cap). LAYA_ERR_CAPACITY if the step budget ran out: out then holds the best found so far.
 * A word over TY_CHARS_MAX code points or not valid UTF-8 has no candidates (LAYA_OK, *n_found = 0).
 * p may be NULL for defaults. No allocation; thread-safe on a list nobody is changing. */
laya_status ty_candidates(const ty_list *l, const char *word, size_t len, const ty_params *p, ty_cand *out,
                          size_t cap, size_t *n_found);

/* 1 if two keys are neighbours on a QWERTY keyboard (letters, digits, punctuation; case-insensitive). */
int ty_keys_adjacent(uint32_t a, uint32_t b);

#endif
