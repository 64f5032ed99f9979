#!/usr/bin/python3
"""Write one kind's documents of one split as plain text (documents separated by blank lines).

  splits.py DATA_DIR KIND SPLIT OUT.txt [MAX_BYTES]

DATA_DIR is train/data/build.py's output (A/B/C.jsonl.xz). Used to train Presage's n-gram model with its
own text2ngram on exactly the text Laya's model was trained on, and to cut the evaluation files."""
import json
import lzma
import sys

data, kind, split, out = sys.argv[1:5]
cap = int(sys.argv[5]) if len(sys.argv) > 5 else 1 << 62
n = 0
with open(out, "w", encoding="utf-8") as f:
    for part in "ABC":
        try:
            src = lzma.open(f"{data}/{part}.jsonl.xz", "rt", encoding="utf-8")
        except FileNotFoundError:
            continue
        for line in src:
            d = json.loads(line)
            if d["kind"] == kind and d["split"] == split and n < cap:
                f.write(d["text"].rstrip("\n") + "\n\n")
                n += len(d["text"].encode())
print(out, n, "bytes")
