/* resources.h — typing resources (laya_resources in laya.h): what the typing layer derives from a model
 * once and its sessions share: the class of every token, the sorted token table of constrained decoding
 * and the known words of typo decisions. Immutable once built. Not here: what a session changes (its
 * user's words are a list of its own, corrections.c). */
#ifndef LAYA_RESOURCES_H
#define LAYA_RESOURCES_H

#include "laya.h"
#include "typing/typo.h"
#include "typing/vtrie.h"

/* Token classes: never generated (control text); ends a word (text) / an identifier (code) / a line. */
enum { TF_NOGEN = 1, TF_END_WORD = 2, TF_END_IDENT = 4, TF_END_LINE = 8 };

struct laya_resources {
    const laya_model *m;
    int32_t n_vocab;
    uint8_t *tflag;   /* (n_vocab) TF_* */
    vt_table vt;      /* the tokens that are not TF_NOGEN */
    ty_list *words;   /* known words: the model file's word list and its whole-word tokens; NULL if not built */
};

/* Build the resources; with_words 0 leaves words NULL (a code or shell session has no typo decisions). */
laya_status res_build(const laya_model *m, int with_words, laya_resources **out);

#endif
