#!/usr/bin/env bash
# eval/decisions.sh LAYA OUT_DIR — every decision of one build, written so that two builds compare with
# `diff -r`: for a refactor or a speed change, "nothing changed for users" is an empty diff.
#   1. `laya eval` with LAYA_EVAL_TRACE in text, code and shell modes on 10,000 bytes each of Debian files
#      every machine has (GPL-3, stdlib.h, ldd + gzexe), the per-decision timings removed;
#   2. `laya run --json` ids from the five synthetic shapes (Q8_0, seed 1, prompt "Hello").
# LAYA: the laya binary to check; its synthetic models are made by $SYNTH (default: the dev program
# laya-synth beside LAYA) into $MODELS (default OUT_DIR/models), so both builds read the same files when
# they share MODELS.
set -euo pipefail
laya=${1:?usage: eval/decisions.sh LAYA OUT_DIR}
out=${2:?usage: eval/decisions.sh LAYA OUT_DIR}
synth=${SYNTH:-"$(dirname "$laya")/laya-synth"}
models=${MODELS:-$out/models}
mkdir -p "$out" "$models"
text=$out/in-text.txt code=$out/in-code.txt shell=$out/in-shell.txt
head -c 10000 /usr/share/common-licenses/GPL-3 > "$text"
head -c 10000 /usr/include/stdlib.h > "$code"
cat /usr/bin/ldd /usr/bin/gzexe | head -c 10000 > "$shell"
for mode in text code shell; do
  in=$out/in-$mode.txt
  LAYA_EVAL_TRACE=1 "$laya" eval --text "$in" --mode "$mode" --json > "$out/eval-$mode.json" 2> "$out/trace-$mode.raw"
  # the trace's {rows .. ms} and the JSON's latency are timings; everything else is a decision
  sed 's/ *{[^}]*ms}$//' "$out/trace-$mode.raw" > "$out/trace-$mode.txt" && rm "$out/trace-$mode.raw"
  sed 's/,"latency_ms":{[^}]*}//' "$out/eval-$mode.json" > "$out/eval-$mode.txt" && rm "$out/eval-$mode.json"
done
for shape in qwen2.5-0.5b smollm2-360m llama-3.2-1b qwen3-0.6b laya-typing; do
  m=$models/$shape-Q8_0.gguf
  [ -f "$m" ] || $synth --shape "$shape" --type Q8_0 --seed 1 -o "$m" > /dev/null
  "$laya" run -m "$m" -p "Hello" -n 16 --json > "$out/run-$shape.json"
done
rm -f "$text" "$code" "$shell"
wc -l "$out"/trace-*.txt | tail -1
