#!/usr/bin/env python3
"""Word frequencies from the training corpus (train/data/gather.py's OUT/raw/*.jsonl), for the ty_ baseline
and as the typo word list: one "word<TAB>count" line per lowercase word seen at least MIN times.

Usage: eval/typo/make_wordlist.py CORPUS_RAW_DIR OUT.tsv [--min 2] [--kinds prose]
The held-out text (Moby-Dick ch. 1-11) is not in the corpus, so nothing of it leaks into the list."""
import argparse, collections, glob, json, os, re

WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("out")
    ap.add_argument("--min", type=int, default=2)
    ap.add_argument("--kinds", default="prose")
    a = ap.parse_args()
    kinds = set(a.kinds.split(","))
    cnt = collections.Counter()
    for f in sorted(glob.glob(os.path.join(a.raw, "*.jsonl"))):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                if d.get("kind") in kinds:
                    cnt.update(w.lower() for w in WORD.findall(d["text"]))
    with open(a.out, "w", encoding="utf-8") as o:
        n = 0
        for w, c in cnt.most_common():
            if c < a.min or len(w.encode()) > 48:
                continue
            o.write(f"{w}\t{c}\n")
            n += 1
    print(f"{a.out}: {n} words, {sum(cnt.values())} tokens")

if __name__ == "__main__":
    main()
