#!/usr/bin/env bash
# Runs every test binary in $1/tests, from the repository root, and prints the closing tally line.
set -u
build=${1:-build}
pass=0; fail=0; failed=()
for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  case "$t" in *.o|*.d) continue;; esac
  if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("$(basename "$t")"); fi
done
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
