#!/usr/bin/python3
"""gen_unicode.py: generates the Unicode tables in src/base/unicode.c (between the GENERATED markers) from
Python's unicodedata (3.11: Unicode 14.0, the version of the Oniguruma that Hugging Face tokenizers uses).
Tables: character class flags (letter, number, White_Space, NFC quick-check, nonzero combining class) as a
two-level table, combining class ranges, full canonical decompositions, canonical composition pairs.
Usage: /usr/bin/python3 tools/gen_unicode.py [src/base/unicode.c]"""
import os
import sys
import unicodedata as ud

BEGIN = "/* BEGIN GENERATED TABLES (tools/gen_unicode.py) */\n"
END = "/* END GENERATED TABLES */\n"
LIMIT = 0x40000   # above this (planes 4..16) every flag is 0: checked below
BLOCK = 128

F_L, F_N, F_WS, F_QC, F_CCC = 1, 2, 4, 8, 16
# White_Space (PropList.txt); Oniguruma's \s is the same set for Unicode strings.
WS = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
      0x205F, 0x3000}
HANGUL_V = range(0x1161, 0x1176)
HANGUL_T = range(0x11A8, 0x11C3)


def canon_decomp(c):
    d = ud.decomposition(chr(c))
    if not d or d.startswith("<"):
        return None
    return [int(x, 16) for x in d.split()]


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src", "unicode.c")
    n_all = 0x110000
    # Composition pairs: canonical 2-char decompositions that NFC keeps composed (so not excluded).
    comp = []
    for c in range(n_all):
        if 0xD800 <= c < 0xE000:
            continue
        d = canon_decomp(c)
        if d and len(d) == 2 and ud.normalize("NFC", chr(c)) == chr(c):
            comp.append((d[0], d[1], c))
    comp.sort()
    second = {b for _, b, _ in comp} | set(HANGUL_V) | set(HANGUL_T)

    flags = bytearray(n_all)
    ccc = [0] * n_all
    decomp = []
    for c in range(n_all):
        if 0xD800 <= c < 0xE000:
            continue
        ch = chr(c)
        cat = ud.category(ch)
        f = 0
        if cat[0] == "L":
            f |= F_L
        if cat[0] == "N":
            f |= F_N
        if c in WS:
            f |= F_WS
        if not ud.is_normalized("NFC", ch) or c in second:
            f |= F_QC
        ccc[c] = ud.combining(ch)
        if ccc[c]:
            f |= F_CCC
        flags[c] = f
        if not (0xAC00 <= c <= 0xD7A3):
            nfd = ud.normalize("NFD", ch)
            if nfd != ch:
                decomp.append((c, [ord(x) for x in nfd]))
    assert not any(flags[LIMIT:]), "flags above LIMIT"
    max_decomp = max(len(d) for _, d in decomp)

    blocks, stage1 = {}, []
    for i in range(0, LIMIT, BLOCK):
        b = bytes(flags[i:i + BLOCK])
        stage1.append(blocks.setdefault(b, len(blocks)))
    assert len(blocks) < 256
    stage2 = b"".join(sorted(blocks, key=blocks.get))

    ranges = []
    for c in range(n_all):
        if ccc[c]:
            if ranges and ranges[-1][1] == c - 1 and ranges[-1][2] == ccc[c]:
                ranges[-1][1] = c
            else:
                ranges.append([c, c, ccc[c]])
    ranges = [tuple(r) for r in ranges]

    pool, dents = [], []
    for c, d in decomp:
        dents.append((c, len(pool), len(d)))
        pool.extend(d)
    assert len(pool) < 65536

    def nums(seq, per_line, fmt):
        seq = list(seq)
        lines = []
        for i in range(0, len(seq), per_line):
            lines.append("    " + ",".join(fmt % x for x in seq[i:i + per_line]) + ",")
        return "\n".join(lines)

    g = [BEGIN]
    g.append("/* Unicode %s. */\n" % ud.unidata_version)
    g.append("#define UNI_TAB_LIMIT 0x%X\n#define UNI_TAB_SHIFT %d\n" % (LIMIT, BLOCK.bit_length() - 1))
    g.append("#define UNI_MAX_DECOMP_GEN %d\n" % max_decomp)
    g.append("static const uint8_t uni_stage1[%d] = {\n%s\n};\n" % (len(stage1), nums(stage1, 32, "%d")))
    g.append("static const uint8_t uni_stage2[%d] = {\n%s\n};\n" % (len(stage2), nums(stage2, 48, "%d")))
    g.append("static const struct uni_ccc_range uni_ccc_ranges[%d] = {\n%s\n};\n" %
             (len(ranges), nums(ranges, 6, "{0x%X,0x%X,%d}")))
    g.append("static const struct uni_decomp uni_decomps[%d] = {\n%s\n};\n" %
             (len(dents), nums(dents, 6, "{0x%X,%d,%d}")))
    g.append("static const uint32_t uni_decomp_pool[%d] = {\n%s\n};\n" % (len(pool), nums(pool, 12, "0x%X")))
    g.append("static const struct uni_comp uni_comps[%d] = {\n%s\n};\n" % (len(comp), nums(comp, 4, "{0x%X,0x%X,0x%X}")))
    g.append(END)
    gen = "".join(g)

    with open(out_path, encoding="utf-8") as f:
        src = f.read()
    a, b = src.index(BEGIN), src.index(END)
    src = src[:a] + gen + src[b + len(END):]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(src)
    print("stage1 %d, stage2 %d blocks, %d ccc ranges, %d decomps (pool %d, max %d), %d comps" %
          (len(stage1), len(blocks), len(ranges), len(dents), len(pool), max_decomp, len(comp)))


if __name__ == "__main__":
    main()
