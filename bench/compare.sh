#!/usr/bin/env bash
# bench/compare.sh BUILD_DIR [ROUNDS] — Laya beside llama.cpp and beside the memory floor, on the same files
# (docs/PERFORMANCE.md). Synthesizes the laya-typing and qwen2.5-0.5b shapes at Q8_0 and Q4_0 into
# BUILD_DIR/bench/ (as bench/run.sh does), then for ROUNDS rounds (default 2), model by model:
#   1. `laya bench --floor --json`: Laya's steps and, beside them, a plain read loop over the bytes a step
#      reads (the floor, in this minute);
#   2. when $LLAMA_BATCHED points at llama.cpp's llama-batched-bench: its decode steps at B = 1 and 4 after
#      a 64-token prompt, the context Laya's steps run at;
#   3. when $LLAMA_BENCH points at llama.cpp's llama-bench: its prompts of 8, 64 and 512 tokens (and, without
#      $LLAMA_BATCHED, its B = 1 step from tg32).
# One line per model and round: both engines' step ms, each one's step / floor (the floor measured by
# step 1, seconds before llama.cpp runs; both read the same bytes a step, as the file holds them),
# llama.cpp / Laya, and the prompts' tok/s. $THREADS (default 2) sets both thread counts; $REPS (default 5)
# Laya's repeats. llama.cpp is not part of Laya: build it outside the repository from its public source.
set -euo pipefail
build=${1:-build}
rounds=${2:-2}
threads=${THREADS:-2}
reps=${REPS:-5}
laya="$build/laya"
synth="$build/laya-synth" # the dev program that writes random-weight models
dir="$build/bench"
for b in "$laya" "$synth"; do [ -x "$b" ] || { echo "bench/compare.sh: $b not found (run make first)" >&2; exit 1; }; done
mkdir -p "$dir"
models=()
for shape in laya-typing qwen2.5-0.5b; do
  for type in Q8_0 Q4_0; do
    model="$dir/$shape-$type.gguf"
    [ -f "$model" ] || "$synth" --shape "$shape" --type "$type" --seed 1 -o "$model" >/dev/null
    models+=("$model")
  done
done

# field OBJECT KEY < json: the number under KEY inside the object OBJECT (or at the top level if empty)
field() {
  local json; json=$(cat)
  if [ -n "$1" ]; then json=$(printf '%s' "$json" | sed -n "s/.*\"$1\":{\([^}]*\)}.*/\1/p"); fi
  printf '%s' "$json" | sed -n "s/.*\"$2\":\([-0-9.eE+]*\).*/\1/p"
}
# ratio A B: A / B to two places, "-" where either is missing
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

printf '%-5s %-22s | %7s %7s %7s %5s %5s %5s | %7s %7s %7s %5s %5s %5s | %6s %6s %6s | %6s %6s %6s\n' \
  round model 'L dec1' 'C dec1' floor1 'L/f' 'C/f' 'C/L' 'L dec4' 'C dec4' floor4 'L/f' 'C/f' 'C/L' \
  'L pp8' 'L pp64' 'L pp512' 'C pp8' 'C pp64' 'C pp512'
echo "      (L: Laya, C: llama.cpp; dec: ms a step of the whole batch; floor: ms of the read loop over what a step reads; pp: prompt tok/s)"
for round in $(seq 1 "$rounds"); do
  for model in "${models[@]}"; do
    out=$("$laya" bench -m "$model" --threads "$threads" --reps "$reps" --floor --json)
    floor=$(printf '%s' "$out" | sed -n 's/.*"floor":{\(.*\)}}$/\1/p')
    l1=$(field decode_ms 1 <<<"$out"); l4=$(field decode_ms 4 <<<"$out")
    f1=$(field 1 floor_ms <<<"$floor"); f4=$(field 4 floor_ms <<<"$floor")
    lp=("$(field prefill_tok_s 8 <<<"$out")" "$(field prefill_tok_s 64 <<<"$out")" "$(field prefill_tok_s 512 <<<"$out")")
    c1=- c4=- cp=(- - -)
    if [ -n "${LLAMA_BATCHED:-}" ]; then
      # table rows: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |; a step of
      # the batch takes B / S_TG seconds
      tg=$("$LLAMA_BATCHED" -m "$model" -t "$threads" -c 1024 -b 512 -ub 512 -npp 64 -ntg 16 -npl 1,4 2>/dev/null |
        awk -F'|' '$2 + 0 == 64 && $3 + 0 == 16 { printf "%s %.3f\n", $4 + 0, ($4 + 0) * 1000 / $9 }')
      c1=$(awk '$1 == 1 { print $2 }' <<<"$tg"); c4=$(awk '$1 == 4 { print $2 }' <<<"$tg")
      [ -n "$c1" ] || c1=-; [ -n "$c4" ] || c4=-
    fi
    if [ -n "${LLAMA_BENCH:-}" ]; then
      # csv rows end in n_prompt, n_gen, test_time, avg_ns, stddev_ns, avg_ts, stddev_ts
      csv=$("$LLAMA_BENCH" -m "$model" -t "$threads" -p 8,64,512 -n 32 -r 3 -o csv 2>/dev/null | tr -d '"')
      for i in 0 1 2; do
        n=$((8 << (3 * i)))
        cp[i]=$(awk -F, -v n="$n" 'NR > 1 && $(NF-6) == n && $(NF-5) == 0 { printf "%.1f", $(NF-1) }' <<<"$csv")
        [ -n "${cp[i]}" ] || cp[i]=-
      done
      if [ "$c1" = - ]; then
        c1=$(awk -F, 'NR > 1 && $(NF-6) == 0 && $(NF-5) == 32 { printf "%.3f", $(NF-3) / 32e6 }' <<<"$csv")
        [ -n "$c1" ] || c1=-
      fi
    fi
    printf '%-5s %-22s | %7.3f %7s %7.3f %5s %5s %5s | %7.3f %7s %7.3f %5s %5s %5s | %6.0f %6.0f %6.0f | %6s %6s %6s\n' \
      "$round" "$(basename "$model" .gguf)" "$l1" "$c1" "$f1" "$(ratio "$l1" "$f1")" "$(ratio "$c1" "$f1")" \
      "$(ratio "$c1" "$l1")" "$l4" "$c4" "$f4" "$(ratio "$l4" "$f4")" "$(ratio "$c4" "$f4")" "$(ratio "$c4" "$l4")" \
      "${lp[0]}" "${lp[1]}" "${lp[2]}" "${cp[0]}" "${cp[1]}" "${cp[2]}"
  done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?); backend $("$laya" info -m "${models[0]}" --json | sed -n 's/.*"cpu_backend":"\([^"]*\)".*/\1/p')"
