#!/usr/bin/env bash
# bench/compare.sh BUILD_DIR [ROUNDS] — Laya beside llama.cpp on the same files (docs/PERFORMANCE.md).
# Synthesizes the laya-typing and qwen2.5-0.5b shapes at Q8_0 and Q4_0 into BUILD_DIR/bench/ (as
# bench/run.sh does), then for ROUNDS rounds (default 2) runs, model by model and interleaved, `laya bench
# --json --profile` and, when $LLAMA_BENCH points at llama.cpp's llama-bench, `llama-bench -t T -p 8,64,512
# -n 32`, printing raw lines to aggregate by hand. $THREADS (default 2) sets both thread counts.
# llama.cpp is not part of Laya: build it outside the repository from its public source.
set -euo pipefail
build=${1:-build}
rounds=${2:-2}
threads=${THREADS:-2}
laya="$build/laya"
dir="$build/bench"
[ -x "$laya" ] || { echo "bench/compare.sh: $laya not found (run make first)" >&2; exit 1; }
mkdir -p "$dir"
models=()
for shape in laya-typing qwen2.5-0.5b; do
  for type in Q8_0 Q4_0; do
    model="$dir/$shape-$type.gguf"
    [ -f "$model" ] || "$laya" synth --shape "$shape" --type "$type" --seed 1 -o "$model" >/dev/null
    models+=("$model")
  done
done
for round in $(seq 1 "$rounds"); do
  for model in "${models[@]}"; do
    echo "== round $round $(basename "$model") load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?)"
    if [ -n "${LLAMA_BENCH:-}" ]; then
      # csv: n_prompt, n_gen, ..., avg_ns, stddev_ns, avg_ts, stddev_ts are the last eight fields
      "$LLAMA_BENCH" -m "$model" -t "$threads" -p 8,64,512 -n 32 -r 3 -o csv 2>/dev/null | tr -d '"' |
        awk -F, 'NR>1{printf "llama.cpp pp%s tg%s ms %.3f tok/s %.1f\n", $(NF-7), $(NF-6), $(NF-3)/1e6, $(NF-1)}'
    fi
    echo "laya $("$laya" bench -m "$model" --threads "$threads" --reps 3 --json --profile)"
  done
done
