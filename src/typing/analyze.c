/* analyze.c — what was typed (analyze.h): the partial word and its bounds, complete or next, the healing
 * anchor, and the word just finished. Pure functions of the normalized text. Not here: the window. */
#include "typing/analyze.h"

#include <string.h>

#include "typing/normalize.h"
#include "typing/textclass.h"
#include "typing/typo.h"

/* The word just finished (text mode, cursor after it and at most two boundary characters): a correction
 * candidate is looked for. Sets last_ws = -1 when there is none. */
void an_last_word(an_shape *sh, const char *t, int32_t end, const uint32_t *map, const char *raw, size_t raw_len,
                  int check) {
    sh->last_ws = -1;
    if (!check || sh->kind != LAYA_KIND_NEXT || sh->no_cands) return;
    int32_t i = end, gap = 0;
    while (i > 0 && gap < 2) {
        int32_t j = tc_prev_cp(t, i);
        uint32_t c = tc_cp_at(t, end, j);
        if (tc_is_word(c) || c == '\n' || c == '\r') break;
        i = j, gap++;
    }
    int32_t we = i, ws = i;
    if (gap == 0 || we == 0) return;
    while (ws > 0) {
        int32_t j = tc_prev_cp(t, ws);
        uint32_t c = tc_cp_at(t, end, j);
        if (!tc_is_letter(c) || tc_is_cjk(c)) break;
        ws = j;
    }
    if (we - ws < 2 || we - ws > TY_WORD_MAX || (ws > 0 && tc_is_word(tc_cp_at(t, end, tc_prev_cp(t, ws))))) return;
    sh->last_ws = ws;
    sh->last_we = we;
    sh->last_anchor = ws > 0 && t[ws - 1] == ' ' ? ws - 1 : ws;
    size_t r = map[ws];
    sh->corr_replace_bytes = (int32_t)(raw_len - r);
    sh->corr_replace = (int32_t)nz_count_chars(raw + r, raw_len - r);
}

/* Find the partial word at the end of norm, the healing anchor and the typed text T. */
void an_typed(an_shape *sh, const char *t, int32_t end, const uint32_t *map, const char *raw, size_t raw_len,
              int mode, int32_t max_tokens, int lead_space) {
    int32_t ws = end;
    int code = mode == LAYA_MODE_CODE;
    sh->rules.code = code;
    sh->rules.max_tokens = max_tokens;
    sh->no_cands = 0;
    if (end > 0) {
        int32_t i = tc_prev_cp(t, end);
        uint32_t c = tc_cp_at(t, end, i);
        if (tc_is_word(c) && tc_is_cjk(c)) {
            ws = i; /* CJK has no spaces: the "partial word" is the last character */
        } else {
            while (ws > 0) {
                int32_t j = tc_prev_cp(t, ws);
                uint32_t d = tc_cp_at(t, end, j);
                int ok = tc_is_word(d) && !tc_is_cjk(d);
                if (!ok && !code && tc_is_apos(d) && j > 0) ok = tc_is_letter(tc_cp_at(t, end, tc_prev_cp(t, j)));
                if (!ok) break;
                ws = j;
            }
        }
    }
    sh->word_start = ws;
    sh->kind = ws < end ? LAYA_KIND_COMPLETE : LAYA_KIND_NEXT;
    sh->rules.stop = mode == LAYA_MODE_SHELL ? STOP_LINE
                     : code                ? (sh->kind == LAYA_KIND_COMPLETE ? STOP_IDENT : STOP_LINE)
                                           : STOP_WORD;
    sh->rules.line_indent = 0;
    sh->rules.line_last = 0;
    if (code) {
        int32_t ls = end;
        while (ls > 0 && t[ls - 1] != '\n' && t[ls - 1] != '\r') ls--;
        for (int32_t i = ls; i < end && (t[i] == ' ' || t[i] == '\t'); i++) sh->rules.line_indent += t[i] == '\t' ? 4 : 1;
        for (int32_t i = ls; i < end; i++)
            if (t[i] != ' ' && t[i] != '\t') sh->rules.line_last = (unsigned char)t[i];
    }
    int32_t anchor = ws;
    if (ws > 0) {
        int32_t j = tc_prev_cp(t, ws);
        uint32_t d = tc_cp_at(t, end, j);
        /* The space (or punctuation) before a word belongs to the word's first token in byte-level BPE:
         * heal over it too, so the prompt ends where the tokenizer would split anyway. */
        if (d == ' ' || (sh->kind == LAYA_KIND_COMPLETE && !tc_is_word(d) && d != '\n' && d != '\r' && d != '\t' &&
                         !tc_is_cjk(ws < end ? tc_cp_at(t, end, ws) : 0)))
            anchor = j;
    }
    sh->anchor = anchor;
    sh->heal_len = 0;
    if (end - anchor > HEAL_MAX - 2 || end - ws >= LAYA_CANDIDATE_MAX_BYTES / 2) {
        sh->no_cands = 1; /* a "word" this long is no word: nothing to complete */
        return;
    }
    if (anchor == 0 && lead_space && end > 0) sh->heal[sh->heal_len++] = ' ';
    memcpy(sh->heal + sh->heal_len, t + anchor, (size_t)(end - anchor));
    sh->heal_len += end - anchor;
    /* what the candidate replaces, in the raw text */
    size_t rws = map[ws];
    sh->replace_bytes = (int32_t)(raw_len - rws);
    sh->replace = (int32_t)nz_count_chars(raw + rws, raw_len - rws);
}
