#!/bin/sh
# Runs the embedding example built in DIR (build or build/asan) and compares
# its output with examples/embed/expected.out.
dir=$1
out=$("$dir"/examples/embed examples/embed/pool.masq 2>&1); st=$?
if [ "$st" = 0 ] && [ "$out" = "$(cat examples/embed/expected.out)" ]; then
  echo "embed ($dir): 1 passed, 0 failed"
else
  echo "FAIL $dir/examples/embed (exit $st); got:"
  printf '%s\n' "$out" | diff examples/embed/expected.out - | head -20
  echo "embed ($dir): 0 passed, 1 failed"
fi
