#!/usr/bin/python3
"""Reliability of Laya's candidate scores: reads `laya eval --dump-probs` output (lines "prob confidence
hit"), bins the candidates by predicted value, and compares the mean prediction in each bin with the share
that was the word typed. Prints the expected calibration error (ECE) of the raw prob and of the calibrated
confidence, and draws both curves (matplotlib) when an output image is given.

Usage: eval/nextword/reliability.py DUMP [DUMP ...] [--png OUT.png] [--bins 10] [--title T]"""
import argparse

def bins_of(pred, hit, nb):
    """Equal-count bins: [(mean prediction, hit rate, n)], and the ECE over them."""
    order = sorted(range(len(pred)), key=lambda i: pred[i])
    out, ece, n = [], 0.0, len(pred)
    for b in range(nb):
        idx = order[b * n // nb:(b + 1) * n // nb]
        if not idx:
            continue
        mp = sum(pred[i] for i in idx) / len(idx)
        hr = sum(hit[i] for i in idx) / len(idx)
        out.append((mp, hr, len(idx)))
        ece += len(idx) / n * abs(mp - hr)
    return out, ece

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dumps", nargs="+")
    ap.add_argument("--png")
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    prob, conf, hit = [], [], []
    for f in a.dumps:
        with open(f) as fh:
            for line in fh:
                p, c, h = line.split()
                prob.append(float(p)), conf.append(float(c)), hit.append(int(h))
    bp, ep = bins_of(prob, hit, a.bins)
    bc, ec = bins_of(conf, hit, a.bins)
    print(f"{len(hit)} candidates, {sum(hit)} were the word typed ({100 * sum(hit) / len(hit):.1f} %)")
    print(f"ECE raw prob {ep:.4f}, calibrated confidence {ec:.4f}")
    print("bin  mean prob -> hit rate   |  mean confidence -> hit rate   (n)")
    for (mp, hp, n), (mc, hc, _) in zip(bp, bc):
        print(f"     {mp:.3f} -> {hp:.3f}          |  {mc:.3f} -> {hc:.3f}          ({n})")
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(5, 5), dpi=100)
        ax.plot([0, 1], [0, 1], color="0.7", lw=1, label="perfect")
        ax.plot([b[0] for b in bp], [b[1] for b in bp], "o-", label=f"raw prob (ECE {ep:.3f})")
        ax.plot([b[0] for b in bc], [b[1] for b in bc], "s-", label=f"confidence (ECE {ec:.3f})")
        ax.set_xlabel("predicted (bin mean)")
        ax.set_ylabel("share that was the word typed")
        ax.set_xlim(0, 1), ax.set_ylim(0, 1)
        ax.set_title(a.title or "reliability", fontsize=10)
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        fig.savefig(a.png)

if __name__ == "__main__":
    main()
