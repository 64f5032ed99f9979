/* normalize.c — per-keystroke text normalization with an offset map back to the raw text (normalize.h).
 * A single forward pass over code points; output never longer than 3 bytes per input byte. */
#include "typing/normalize.h"

#include "laya.h"
#include "base/unicode.h"
#include "typing/textclass.h"

uint32_t nz_next(const char *s, size_t n, size_t *i) {
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = n - *i;
    int k = uni_utf8_len(p[0]);
    if (p[0] < 0x80) {
        *i += 1;
        return p[0];
    }
    if (k == 1 || (size_t)k > left || !uni_utf8_valid((const char *)p, (size_t)k)) {
        *i += 1;
        return UNI_REPLACEMENT;
    }
    size_t j = *i;
    uint32_t c = uni_utf8_next(s, n, &j);
    *i = j;
    return c;
}

size_t nz_count_chars(const char *s, size_t n) {
    size_t i = 0, c = 0;
    while (i < n) {
        nz_next(s, n, &i);
        c++;
    }
    return c;
}

size_t nz_normalize(const char *raw, size_t n, uint32_t flags, char *out, uint32_t *map) {
    size_t i = 0, o = 0;
    while (i < n) {
        size_t at = i;
        uint32_t c = nz_next(raw, n, &i);
        if ((flags & LAYA_NORM_ZERO_WIDTH) && tc_is_zero_width(c)) continue;
        if (flags & LAYA_NORM_FULLWIDTH) {
            if (c >= 0xFF01 && c <= 0xFF5E) c -= 0xFEE0;
            else if (c == 0x3000) c = ' ';
        }
        if ((flags & LAYA_NORM_SPACES) && c == 0x00A0) c = ' ';
        if ((flags & LAYA_NORM_SPACES) && c == ' ' && o > 0 && out[o - 1] == ' ') continue;
        char buf[4];
        int k = uni_utf8_encode(c, buf);
        for (int b = 0; b < k; b++) {
            out[o] = buf[b];
            map[o++] = (uint32_t)at;
        }
    }
    map[o] = (uint32_t)n;
    return o;
}
