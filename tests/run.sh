#!/usr/bin/env bash
# Runs every test binary in $1/tests, from the repository root, and prints the closing tally line.
set -u
build=${1:-build}
export LAYA_FIXTURES="$build/fixtures" LAYA_BIN="$build/laya"
pass=0; fail=0; failed=()
for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  case "$t" in *.o|*.d) continue;; esac
  if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("$(basename "$t")"); fi
done
# NEON kernels, cross-compiled by `make test` when gcc-aarch64-linux-gnu and qemu-user are installed.
if [ -d "$build/aarch64/tests" ]; then
  for t in "$build"/aarch64/tests/test_*; do
    case "$t" in *.o|*.d) continue;; esac
    [ -x "$t" ] || continue
    echo "(aarch64 under qemu) $(basename "$t")"
    if QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("aarch64/$(basename "$t")"); fi
  done
fi
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
