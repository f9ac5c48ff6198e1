#!/bin/sh
# Runs the C tests built into DIR/SUITE (arguments: build or build/asan, and
# unit (the default) or api). Each test prints its own "name: N passed, N
# failed"; a crash counts as one failure.
dir=$1
suite=${2:-unit}
pass=0 fail=0
for t in "$dir"/"$suite"/*; do
  [ -x "$t" ] || continue
  out=$("$t" 2>&1); st=$?
  printf '%s\n' "$out" | grep -v ': [0-9]* passed, [0-9]* failed$'
  line=$(printf '%s\n' "$out" | grep ': [0-9]* passed, [0-9]* failed$' | tail -n 1)
  p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
  f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
  [ -n "$p" ] || { p=0; f=1; echo "FAIL $t: no summary line (exit $st)"; }
  [ "$st" != 0 ] && [ "$f" = 0 ] && { f=1; echo "FAIL $t: exit status $st"; }
  pass=$((pass + p)); fail=$((fail + f))
done
echo "$suite ($dir): $pass passed, $fail failed"
