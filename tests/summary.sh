#!/bin/sh
# Adds up the "N passed, N failed" lines of every suite into the closing line.
pass=0 fail=0 suites=0
while IFS= read -r line; do
  p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\1/p')
  [ -n "$p" ] || continue
  f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*$/\2/p')
  pass=$((pass + p)); fail=$((fail + f)); suites=$((suites + 1))
done < "$1"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
