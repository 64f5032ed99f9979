#!/usr/bin/env bash
# Typo-correction evaluation: builds the word list and the ty_ baseline, then runs typo_eval.py.
# Usage: eval/typo/run.sh [typo_eval.py options...]   (default: --corrector hunspell --corrector ty)
# Needs: apt-get install codespell hunspell hunspell-en-us; the corpus at $CORPUS (train/data/gather.py OUT/raw).
set -euo pipefail
cd "$(dirname "$0")/../.."
CORPUS=${CORPUS:-/work/corpus/raw}
mkdir -p eval/typo/out
[ -s eval/typo/out/words.tsv ] || python3 eval/typo/make_wordlist.py "$CORPUS" eval/typo/out/words.tsv
cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc eval/typo/ty_correct.c src/typing/typo.c src/base/common.c src/base/unicode.c \
   -lm -o eval/typo/out/ty_correct
[ $# -gt 0 ] || set -- --corrector hunspell --corrector ty
python3 eval/typo/typo_eval.py "$@"
