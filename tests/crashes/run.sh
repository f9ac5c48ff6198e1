#!/bin/sh
# Every input that ever crashed masq, run again (by make test, under the
# sanitizers): each tests/crashes/*.masq runs as `masq FILE` from this
# directory and must end with status 0 (it ran), 1 (a runtime error) or
# 3 (a syntax error), and an error status must come with a located
# message ("FILE:LINE:COL: error: ..." on stderr). A signal, a sanitizer
# report or any other status is a failure.
#
# A file's first line says what crashed and how (a comment). Inputs of the
# other fuzz harnesses (.npy/.npz bytes, API call sequences) live in the
# subfolders named after their harness and are replayed by tests/fuzz.
masq=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
export LC_ALL=C NO_COLOR=1 TERM=dumb MASQ_HISTORY=
for t in "$root"/*.masq; do
  [ -f "$t" ] || continue
  name=$(basename "$t")
  (cd "$root" && timeout 120 "$masq" "$name") > "$tmp/out" 2> "$tmp/err" < /dev/null
  st=$?
  ok=1
  case $st in
    0) ;;
    1|3) grep -q "^$name:[0-9]*:[0-9]*: error: " "$tmp/err" || ok=0 ;;
    *) ok=0 ;;
  esac
  grep -q 'Sanitizer' "$tmp/err" && ok=0
  if [ $ok = 1 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL crashes/$name: exit status $st"
    head -n 20 "$tmp/err" | sed 's/^/    /'
  fi
done
echo "crashes: $pass passed, $fail failed"
