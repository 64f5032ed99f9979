#!/usr/bin/python3
"""Evaluation samples of docs/MODELS.md: documents of the test split, shuffled (seed 42), the first
1,500 characters of each (cut at a paragraph), about 30,000 characters per file, documents separated by
0x1E. Sample 2 of prose takes the documents after those of sample 1.

  samples.py CORPUS_DIR OUT_DIR       (CORPUS_DIR: train/data/build.py's output, with test/<kind>.txt)"""
import random
import sys

corpus, out = sys.argv[1], sys.argv[2]


def take(docs, start):
    got, total, i = [], 0, start
    while i < len(docs) and total <= 30000:
        piece = docs[i][:1500]
        cut = piece.rfind("\n\n")
        got.append(piece[:cut] if cut > 300 else piece)
        total += len(got[-1])
        i += 1
    return got, i


for kind in ("prose", "code", "shell", "zh"):
    docs = [d.strip("\n") for d in open(f"{corpus}/test/{kind}.txt", encoding="utf-8").read().split("\x1e")
            if d.strip()]
    random.Random(42).shuffle(docs)
    s1, end = take(docs, 0)
    open(f"{out}/{kind}.sample.txt", "w", encoding="utf-8").write("\x1e".join(s1) + "\x1e")
    if kind == "prose":
        s2, _ = take(docs, end)
        open(f"{out}/prose.sample2.txt", "w", encoding="utf-8").write("\x1e".join(s2) + "\x1e")
