#!/bin/sh
# Runs the conformance suite: every tests/conformance/<op>.masq, each of
# which loads its cases from <op>.npz, computes them with masq and prints
# "ok <op>#<i>", "FAIL <op>#<i>: ..." or "xfail <op>#<i>: ..." per case and
# "done <op> <n>" at the end. Needs no torch.
#
#   sh tools/conformance/run.sh path/to/masq [DIR] [FILTER]
#
# DIR defaults to tests/conformance; FILTER runs only the ops whose name
# contains it. Prints the failures, then
#   conformance: N passed, N failed (K ops, C cases, G with gradients, X known failures)
# and exits 1 if anything failed (a case that did not run, because its
# script stopped on an error, counts as failed).
masq=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${2:-$root/tests/conformance}
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C NO_COLOR=1 TERM=dumb MASQ_HISTORY=
pass=0 fail=0 ops=0 cases=0 grads=0 xfails=0
for t in "$dir"/*.masq; do
  name=$(basename "$t" .masq)
  [ "$name" = check ] && continue
  case "$name" in *"$3"*) ;; *) continue ;; esac
  want=$(sed -n 's/^# cases: \([0-9]*\)$/\1/p' "$t")
  [ -n "$want" ] || { echo "FAIL $name: no '# cases: N' line"; fail=$((fail + 1)); continue; }
  ops=$((ops + 1)); cases=$((cases + want))
  grads=$((grads + $(grep -c '^g = grad(' "$t")))
  (cd "$dir" && "$masq" "$name.masq") > "$tmp/out" 2> "$tmp/err" < /dev/null
  status=$?
  ok=$(grep -c '^ok ' "$tmp/out")
  xf=$(grep -c '^xfail ' "$tmp/out")
  bad=$((want - ok - xf))
  pass=$((pass + ok)); fail=$((fail + bad)); xfails=$((xfails + xf))
  if [ "$bad" != 0 ] || [ $status != 0 ] || ! grep -q "^done $name $want\$" "$tmp/out"; then
    grep -A 12 '^FAIL ' "$tmp/out" | head -n 60
    if [ $status != 0 ] || ! grep -q "^done $name" "$tmp/out"; then
      ran=$(grep -c '^ok \|^FAIL \|^xfail ' "$tmp/out")
      echo "FAIL $name: the script stopped (status $status) after $ran of $want cases"
      sed 's/^/    /' "$tmp/err" | head -n 12
      [ "$bad" = 0 ] && fail=$((fail + 1))
    fi
  fi
done
echo "conformance: $pass passed, $fail failed ($ops ops, $cases cases, $grads with gradients, $xfails known failures)"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
