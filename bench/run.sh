#!/usr/bin/env bash
# bench/run.sh BUILD_DIR — `make bench`: synthesizes the laya-typing and qwen2.5-0.5b shapes at Q8_0 and
# Q4_0 into BUILD_DIR/bench/ (once; random weights, so only speed is meaningful) and prints one table row
# per model from `laya bench --floor --json`: prefill, decode, load, peak RSS, and the decode steps of B = 1
# and 4 over a plain read loop of the bytes they read, measured side by side (flr1, flr4: 1.0 is the memory
# floor). Extra bench options come from $LAYA_BENCH_ARGS (e.g. "--threads 4").
set -euo pipefail
build=${1:-build}
laya="$build/laya"
synth="$build/laya-synth" # the dev program that writes random-weight models
dir="$build/bench"
for b in "$laya" "$synth"; do [ -x "$b" ] || { echo "bench/run.sh: $b not found (run make first)" >&2; exit 1; }; done
mkdir -p "$dir"

# field OBJECT KEY < json: the number under KEY inside the object OBJECT (or at the top level if empty)
field() {
  local json; json=$(cat)
  if [ -n "$1" ]; then json=$(printf '%s' "$json" | sed -n "s/.*\"$1\":{\([^}]*\)}.*/\1/p"); fi
  printf '%s' "$json" | sed -n "s/.*\"$2\":\([-0-9.eE+]*\).*/\1/p"
}

printf '%-22s %9s %9s %9s %8s %8s %8s %8s %8s %8s %6s %6s\n' model pre8 pre64 pre512 dec1 dec2 dec4 dec8 load_ms rss_mb flr1 flr4
printf '%-22s %9s %9s %9s %8s %8s %8s %8s %8s %8s %6s %6s\n' '' 'tok/s' 'tok/s' 'tok/s' ms ms ms ms '' '' x x
for shape in laya-typing qwen2.5-0.5b; do
  for type in Q8_0 Q4_0; do
    model="$dir/$shape-$type.gguf"
    if [ ! -f "$model" ]; then
      echo "synthesizing $model ..." >&2
      "$synth" --shape "$shape" --type "$type" --seed 1 -o "$model"
    fi
    # shellcheck disable=SC2086
    out=$("$laya" bench -m "$model" --floor --json ${LAYA_BENCH_ARGS:-})
    floor=$(printf '%s' "$out" | sed -n 's/.*"floor":{\(.*\)}}$/\1/p')
    printf '%-22s %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f %8.2f %8.1f %8.1f %6.2f %6.2f\n' "$shape-$type" \
      "$(field prefill_tok_s 8 <<<"$out")" "$(field prefill_tok_s 64 <<<"$out")" \
      "$(field prefill_tok_s 512 <<<"$out")" "$(field decode_ms 1 <<<"$out")" "$(field decode_ms 2 <<<"$out")" \
      "$(field decode_ms 4 <<<"$out")" "$(field decode_ms 8 <<<"$out")" "$(field '' load_ms <<<"$out")" \
      "$(field '' peak_rss_mb <<<"$out")" "$(field 1 ratio <<<"$floor")" "$(field 4 ratio <<<"$floor")"
  done
done
echo "backend: $("$laya" info -m "$dir/laya-typing-Q8_0.gguf" --json | sed -n 's/.*"cpu_backend":"\([^"]*\)".*/\1/p')"
