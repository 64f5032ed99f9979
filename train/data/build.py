#!/usr/bin/python3
"""Deduplicate, cap and split the gathered documents; pack them for the GPU machine.

Usage:  train/data/build.py RAW_DIR OUT_DIR
Reads   RAW_DIR/raw/*.jsonl (from gather.py).
Writes  OUT_DIR/<part>.jsonl.xz   parts A (B, C with LAYA_PARTS=ABC), every kind in each (the device carries at most about
                                   17 MB per call beside the repository), one document per line:
                                   {"kind", "split", "src", "text"}
        OUT_DIR/test/<kind>.txt    the held-out test documents of each kind, for the local evaluation
        OUT_DIR/stats.json         documents and bytes per source, kind and split, after dedup and caps
The split is by whole documents, decided by a hash of (source, id): 94 % train, 2 % validation, 4 % test.
"""
import collections
import glob
import hashlib
import json
import lzma
import os
import random
import re
import sys

# Byte caps per source (after dedup), so the mix fits the transfer budget and no single technical source
# dominates the prose. Sources not listed are taken whole.
CAPS = {
    "linux_doc": 5 << 20, "info": 3500 << 10, "python_doc": 3500 << 10, "perl_doc": 2500 << 10, "man": 4 << 20,
    "sotu": 7 << 20,
    "python_stdlib": 3 << 20, "usr_include": 3 << 20, "perl_modules": 1500 << 10, "typescript_lib": 1500 << 10,
    "linux_c": 3 << 20,
    "man_zh": 3 << 20, "chinese_poetry": 1 << 20,
}


# LAYA_CAPS=big: every prose source whole, twice the code and Chinese caps (three parts, about 40 MB of xz,
# for a device call that carries them all once the repository's large files are moved out of the tree).
CAPS_BIG = {
    "python_stdlib": 6 << 20, "usr_include": 6 << 20, "perl_modules": 3 << 20, "typescript_lib": 3 << 20,
    "linux_c": 6 << 20, "chinese_poetry": 2 << 20,
}
if os.environ.get("LAYA_CAPS") == "big":
    CAPS = CAPS_BIG

PARTS = os.environ.get("LAYA_PARTS", "A")   # one part per device call


def split_of(src, ident):
    h = int.from_bytes(hashlib.sha1(f"{src}\0{ident}".encode()).digest()[:4], "little") % 100
    return "test" if h < 4 else "valid" if h < 6 else "train"


def norm_key(text):
    return hashlib.sha1(re.sub(r"\s+", " ", text).strip().encode()).digest()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    raw, out = sys.argv[1], sys.argv[2]
    os.makedirs(out + "/test", exist_ok=True)
    seen, head_seen = set(), set()
    docs = collections.defaultdict(list)
    dropped = collections.Counter()
    for path in sorted(glob.glob(raw + "/raw/*.jsonl")):
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            k, hk = norm_key(d["text"]), norm_key(d["text"][:3000])
            if k in seen or (len(d["text"]) > 3000 and hk in head_seen):
                dropped[d["src"]] += 1
                continue
            seen.add(k)
            head_seen.add(hk)
            docs[d["src"]].append(d)
    rng = random.Random(1234)
    kept = []
    for src, ds in sorted(docs.items()):
        rng.shuffle(ds)
        cap, total = CAPS.get(src), 0
        for d in ds:
            n = len(d["text"].encode())
            if cap and total + n > cap:
                continue
            total += n
            d["split"] = split_of(src, d["id"])
            kept.append(d)
    rng.shuffle(kept)
    stats = collections.defaultdict(lambda: collections.Counter())
    parts = {p: lzma.open(f"{out}/{p}.jsonl.xz", "wt", encoding="utf-8", preset=9) for p in PARTS}
    tests = {}
    for i, d in enumerate(kept):
        n = len(d["text"].encode())
        stats[f"{d['kind']}/{d['src']}"][d["split"]] += n
        stats[f"{d['kind']}/{d['src']}"]["docs"] += 1
        parts[PARTS[i % len(PARTS)]].write(json.dumps({k: d[k] for k in ("kind", "split", "src", "text")},
                                            ensure_ascii=False) + "\n")
        if d["split"] == "test":
            if d["kind"] not in tests:
                tests[d["kind"]] = open(f"{out}/test/{d['kind']}.txt", "w", encoding="utf-8")
            tests[d["kind"]].write(d["text"] + "\x1e\n")
    for f in list(parts.values()) + list(tests.values()):
        f.close()
    summary = {k: dict(v) for k, v in sorted(stats.items())}
    summary["_dropped_duplicates"] = dict(dropped)
    json.dump(summary, open(out + "/stats.json", "w"), indent=1)
    by_kind = collections.Counter()
    for k, v in stats.items():
        by_kind[k.split("/")[0]] += sum(x for s, x in v.items() if s != "docs")
    for k, v in sorted(by_kind.items()):
        print(f"{k:6s} {v / 1e6:8.2f} MB")
    for p in PARTS:
        print(p, os.path.getsize(f"{out}/{p}.jsonl.xz") / 1e6, "MB xz")


if __name__ == "__main__":
    main()
