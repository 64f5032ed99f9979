/* corrections.h — typo decisions for the word just finished: its near neighbours among the known words
 * (typo.h), scored by the model in the context before the word, offered as a `correct` candidate when a
 * neighbour's posterior wins clearly. Not here: the edit model (typo.c), the word lists (resources.c). */
#ifndef LAYA_CORRECTIONS_H
#define LAYA_CORRECTIONS_H

#include "typing/limits.h"
#include "typing/typo.h"

/* A typo decision already made: the context before the word, the word and how it was written decide it. */
typedef struct corr_memo {
    uint64_t key;      /* 0: empty */
    int32_t len;       /* bytes of the replacement; 0: the word stays */
    float post;
    char word[TY_WORD_MAX];
} corr_memo;

typedef struct co_state {
    corr_memo *memo;           /* (CO_MEMO_MAX) typo decisions, kept across prompts */
    int32_t memo_next;
    const ty_list *words;      /* known words (resources), text mode only */
    ty_list *user_words;       /* the user dictionary's words, or NULL */
    laya_token *ctok;          /* (ptok_cap) the prompt before the last word, for scoring corrections */
    int32_t n_ctok;
    cand_buf found;            /* the correction found for this text, if any */
} co_state;

#define CO_MEMO_MAX 64 /* typo decisions remembered: more than one prefetch plan makes */

laya_status co_build_user_words(laya_session *s);
/* The correction of the word just finished, if any, into s->co.found. */
laya_status co_decide(laya_session *s);

#endif
