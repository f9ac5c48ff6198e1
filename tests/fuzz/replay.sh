#!/bin/sh
# Replays every input in tests/crashes/NAME/ through BUILD/fuzz/replay/NAME
# (the harness without libFuzzer, under ASan+UBSan) for each harness NAME
# given: each must end with status 0. (tests/crashes/*.masq, the scripts,
# run through the command line in tests/crashes/run.sh.)
b=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
pass=0 fail=0
export FUZZ_FRESH=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
for h in "$@"; do
  for f in "$root"/tests/crashes/"$h"/*; do
    [ -f "$f" ] || continue
    if out=$(timeout 120 "$b/fuzz/replay/$h" "$f" 2>&1); then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL crashes/$h/$(basename "$f")"
      printf '%s\n' "$out" | head -n 20 | sed 's/^/    /'
    fi
  done
done
echo "fuzz replay: $pass passed, $fail failed"
