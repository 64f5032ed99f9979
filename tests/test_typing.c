/* test_typing.c — the typing layer's pure rules, called directly: where a candidate stops (stoprule.c),
 * the analysis of what was typed (analyze.c), the text window's cut (window.c), the character classes
 * (textclass.h) and slot preparation's arithmetic (slots.c, on a small session). The decisions they make
 * together are test_session.c's. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "laya.h"
#include "typing/analyze.h"
#include "typing/normalize.h"
#include "typing/session.h"
#include "typing/stoprule.h"
#include "typing/textclass.h"
#include "typing/window.h"

static scan_res scan(int stop, int code, int32_t indent, uint32_t last, const char *w) {
    sr_rules r = {stop, code, 5, indent, last};
    return sr_scan(&r, w, (int32_t)strlen(w), 0);
}

static void test_scan_words(void) {
    scan_res r = scan(STOP_WORD, 0, 0, 0, "hello");
    CHECK(r.st == SC_CONT && r.can_end && !r.cjk, "a word so far may end");
    r = scan(STOP_WORD, 0, 0, 0, "hello world");
    CHECK(r.st == SC_DONE && r.cut == 5, "a space ends a word: %d %d", r.st, r.cut);
    r = scan(STOP_WORD, 0, 0, 0, " next");
    CHECK(r.st == SC_CONT && r.can_end, "leading spaces before a next word");
    r = scan(STOP_WORD, 0, 0, 0, ",");
    CHECK(r.st == SC_DEAD, "punctuation first: no word");
    r = scan(STOP_WORD, 0, 0, 0, "don't");
    CHECK(r.st == SC_CONT, "an apostrophe between letters stays inside");
    r = scan(STOP_WORD, 0, 0, 0, "don'");
    CHECK(r.st == SC_CONT && !r.can_end, "an apostrophe at the end is undecided");
    r = scan(STOP_WORD, 0, 0, 0, "dogs' ");
    CHECK(r.st == SC_DONE && r.cut == 4, "an apostrophe before a space ends the word: cut %d", r.cut);
    r = scan(STOP_IDENT, 1, 0, 0, "foo_bar(");
    CHECK(r.st == SC_DONE && r.cut == 7, "an identifier ends at '(': cut %d", r.cut);
    /* CJK: a phrase of CJK characters, ended by a change of script */
    r = scan(STOP_WORD, 0, 0, 0, "\xE6\x88\x91\xE4\xBB\xAC");
    CHECK(r.st == SC_CONT && r.cjk && r.can_end, "CJK phrase");
    r = scan(STOP_WORD, 0, 0, 0, "\xE6\x88\x91" "ab");
    CHECK(r.st == SC_DONE && r.cut == 3, "CJK then Latin: cut %d", r.cut);
    r = scan(STOP_WORD, 0, 0, 0, "\xE6\x88");
    CHECK(r.st == SC_CONT && !r.can_end, "an incomplete character waits for the next token");
}

static void test_scan_lines(void) {
    scan_res r = scan(STOP_LINE, 0, 0, 0, "ls -la\nnext");
    CHECK(r.st == SC_DONE && r.cut == 6, "a shell line ends at its newline: cut %d", r.cut);
    r = scan(STOP_LINE, 0, 0, 0, "\n");
    CHECK(r.st == SC_DEAD, "an empty line is no candidate");
    r = scan(STOP_LINE, 1, 0, 0, "f(a, b) + 1");
    CHECK(r.st == SC_DONE && r.cut == 7, "brackets balance: cut %d", r.cut);
    r = scan(STOP_LINE, 1, 0, 0, "x)");
    CHECK(r.st == SC_DONE && r.cut == 2, "a bracket closing one opened before the cursor: cut %d", r.cut);
    r = scan(STOP_LINE, 0, 0, 0, "x)");
    CHECK(r.st == SC_CONT, "shell: brackets do not stop");
    /* a line that opens a block goes on into it, over lines indented deeper than the cursor's */
    r = scan(STOP_LINE, 1, 0, 0, "if x:\n    y = 1\n    z = 2\nw");
    CHECK(r.st == SC_DONE && r.cut == 25, "block ends before the first line not indented deeper: cut %d", r.cut);
    r = scan(STOP_LINE, 1, 0, 0, "if x:\n    y = 1\n");
    CHECK(r.st == SC_CONT && r.fork == 15 && !r.can_end, "a finished block line is a candidate too: fork %d", r.fork);
    r = scan(STOP_LINE, 1, 0, 0, "while (1) {\n");
    CHECK(r.st == SC_DONE && r.cut == 9, "balanced brackets end the line first: cut %d", r.cut);
    r = scan(STOP_LINE, 1, 0, 0, "else {\n");
    CHECK(r.st == SC_CONT && r.fork == 6, "'{' opens a block: fork %d", r.fork);
    r = scan(STOP_LINE, 1, 4, 0, "if x:\n    ");
    CHECK(r.st == SC_CONT, "a block line is undecided until its first character");
    r = scan(STOP_LINE, 1, 4, 0, "if x:\n    y");
    CHECK(r.st == SC_DONE && r.cut == 5, "not deeper than the cursor's line: the opening line alone, cut %d", r.cut);
    sr_rules one = {STOP_LINE, 1, 1, 0, 0};
    const char *w = "if x:\n    y";
    r = sr_scan(&one, w, (int32_t)strlen(w), 0);
    CHECK(r.st == SC_DONE && r.cut == 5, "max_tokens 1: no block, cut %d", r.cut);
}

static an_shape typed(const char *t, int mode, int lead_space) {
    an_shape sh;
    memset(&sh, 0, sizeof sh);
    uint32_t map[256];
    char norm[256];
    int32_t n = (int32_t)nz_normalize(t, strlen(t), 0, norm, map);
    an_typed(&sh, norm, n, map, t, strlen(t), mode, 5, lead_space);
    an_last_word(&sh, norm, n, map, t, strlen(t), 1);
    return sh;
}

static void test_analyze(void) {
    an_shape sh = typed("The quick bro", LAYA_MODE_TEXT, 0);
    CHECK(sh.kind == LAYA_KIND_COMPLETE && sh.word_start == 10 && sh.anchor == 9, "complete: start %d anchor %d",
          sh.word_start, sh.anchor);
    CHECK(sh.heal_len == 4 && !memcmp(sh.heal, " bro", 4), "heal over the space: '%.*s'", sh.heal_len, sh.heal);
    CHECK(sh.replace == 3 && sh.replace_bytes == 3 && sh.rules.stop == STOP_WORD && sh.last_ws < 0,
          "replace %d, stop %d, last_ws %d", sh.replace, sh.rules.stop, sh.last_ws);
    sh = typed("The quick ", LAYA_MODE_TEXT, 0);
    CHECK(sh.kind == LAYA_KIND_NEXT && sh.word_start == 10 && sh.replace == 0, "next word");
    CHECK(sh.last_ws == 4 && sh.last_we == 9 && sh.last_anchor == 3 && sh.corr_replace == 6,
          "the word just finished: %d..%d, replaces %d", sh.last_ws, sh.last_we, sh.corr_replace);
    sh = typed("I don't", LAYA_MODE_TEXT, 0);
    CHECK(sh.kind == LAYA_KIND_COMPLETE && sh.word_start == 2, "an apostrophe inside the word: start %d", sh.word_start);
    sh = typed("caf\xC3\xA9 au l", LAYA_MODE_TEXT, 0);
    CHECK(sh.word_start == 9 && sh.replace == 1, "bytes and characters: start %d", sh.word_start);
    sh = typed("\xE6\x88\x91\xE4\xBB\xAC", LAYA_MODE_TEXT, 0);
    CHECK(sh.kind == LAYA_KIND_COMPLETE && sh.word_start == 3 && sh.anchor == 3, "CJK: the last character");
    sh = typed("Hello", LAYA_MODE_TEXT, 1);
    CHECK(sh.heal_len == 6 && sh.heal[0] == ' ', "a leading space for a tokenizer that prepends one");
    sh = typed("    for x in y:\n        ret", LAYA_MODE_CODE, 0);
    CHECK(sh.rules.stop == STOP_IDENT && sh.rules.line_indent == 8 && sh.rules.code, "code, complete: ident stop");
    sh = typed("    if x:", LAYA_MODE_CODE, 0);
    CHECK(sh.kind == LAYA_KIND_NEXT && sh.rules.stop == STOP_LINE && sh.rules.line_last == ':' &&
              sh.rules.line_indent == 4, "code, next: line stop, last ':'");
    sh = typed("ls -", LAYA_MODE_SHELL, 0);
    CHECK(sh.rules.stop == STOP_LINE && sh.kind == LAYA_KIND_NEXT, "shell: line stop");
    char long_word[200];
    memset(long_word, 'a', sizeof long_word - 1);
    long_word[sizeof long_word - 1] = 0;
    sh = typed(long_word, LAYA_MODE_TEXT, 0);
    CHECK(sh.no_cands, "an over-long word allows no candidate");
}

static void test_window(void) {
    CHECK(tw_step_cut(100, 1024) == 0 && tw_start("x", 0, 1, 1024) == 0, "short text: no cut");
    CHECK(tw_step_cut(1025, 1024) == 512 && tw_step_cut(1536, 1024) == 512 && tw_step_cut(1537, 1024) == 1024,
          "cut in steps of max_text / 2");
    static char t[3000];
    memset(t, 'a', sizeof t);
    t[600] = ' ';
    CHECK(tw_start(t, 0, 2000, 1024) == 1024, "no space near the step: the step itself");
    t[1030] = ' ';
    CHECK(tw_start(t, 0, 2000, 1024) == 1031, "moved to the next word start");
    CHECK(tw_start(t + 900, 900, 2000, 1024) == 1031, "the same from the text's end only");
    t[1024] = (char)0x80;
    t[1025] = (char)0x80;
    t[1030] = 'a';
    CHECK(tw_start(t, 0, 2000, 1024) == 1026, "never inside a character");
    CHECK(tc_utf8_cut_end("ab\xC3\xA9", 4, 3) == 2 && tc_utf8_cut_start("\xA9xy", 3, 0) == 1, "UTF-8 cuts");
    CHECK(tc_is_word(0x4E00) && !tc_is_word_spaced(0x4E00) && tc_is_word_spaced('a') && tc_is_letter(0xE9) &&
              !tc_is_letter('7') && !tc_is_letter('_') && tc_is_apos(0x2019),
          "character classes");
}

/* Slot preparation on a real (tiny) session: the common prefix stays, the prompt's positions a slot lacks
 * are forked, and only the rest reaches the batch, with logits where asked. */
static void test_slots(void) {
    const char *dir = getenv("LAYA_FIXTURES") ? getenv("LAYA_FIXTURES") : "build/fixtures";
    char path[512];
    snprintf(path, sizeof path, "%s/tiny-llama-f16.gguf", dir);
    laya_model *m = NULL;
    if (laya_model_load(path, laya_model_default_params(), &m, NULL, 0)) {
        CHECK(0, "fixture %s missing: run make fixtures", path);
        return;
    }
    laya_session_params p = laya_session_default_params();
    p.warmup = 0;
    laya_session *s = NULL;
    CHECK(laya_session_create(m, p, &s, NULL, 0) == LAYA_OK, "create");
    if (!s) {
        laya_model_free(m);
        return;
    }
    laya_token base[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ext[2] = {9, 10};
    int32_t rows = 0;
    /* slot 1 from nothing: forks base[0..6) from the prompt's slot (holding nothing: forks what it has) */
    s->sl.ps = 0;
    CHECK(sl_prepare(s, 0, base, 8, NULL, 0, 0, 0, 7, LAYA_WANT_LOGITS, &rows) == LAYA_OK && rows == 8,
          "the prompt's slot: every token, %d rows", rows);
    CHECK(s->b_want[7] == LAYA_WANT_LOGITS && s->b_want[6] == 0 && s->sl.n[0] == 8, "logits on the last row only");
    laya_batch b = {rows, s->b_tok, s->b_seq, s->b_want};
    CHECK(laya_decode(s->ctx, b) == LAYA_OK, "decode");
    rows = 0;
    CHECK(sl_prepare(s, 1, base, 8, ext, 2, 0, 8, 9, LAYA_WANT_LOGITS, &rows) == LAYA_OK && rows == 2,
          "another slot forks the prompt and decodes only its own tokens: %d rows", rows);
    CHECK(s->b_tok[0] == 9 && s->b_tok[1] == 10 && s->b_seq[0] == 1 && s->b_want[1] == LAYA_WANT_LOGITS &&
              s->sl.n[1] == 10 && s->sl.tok[1][5] == 6 && laya_seq_len(s->ctx, 1) == 8,
          "batch rows, slot tokens and the fork");
    rows = 0;
    CHECK(sl_prepare(s, 0, base, 8, ext, 2, 6, 0, 6, LAYA_WANT_LOGITS, &rows) == LAYA_OK && rows == 4 &&
              s->b_tok[0] == 7 && s->b_want[0] == LAYA_WANT_LOGITS && laya_seq_len(s->ctx, 0) == 6,
          "a common prefix of 6: truncated there, 4 rows from position 6");
    CHECK(sl_lcp(base, 8, ext, 2) == 0 && sl_lcp(base, 8, base, 5) == 5, "common prefix");
    laya_session_free(s);
    laya_model_free(m);
}

int main(void) {
    test_scan_words();
    test_scan_lines();
    test_analyze();
    test_window();
    test_slots();
    return DONE("test_typing");
}
