#!/bin/sh
# Golden tests: every tests/{lang,errors}/NAME.masq runs as `masq NAME.masq`
# from its own directory; stdout must equal NAME.out, stderr NAME.err (empty
# if absent), the exit status NAME.status (0 if absent).
#
# A first line "# ARGS: ..." runs `masq ...` instead (for -e and option
# tests); "# STDIN" feeds the script on standard input to `masq -`.
# A second argument runs only the tests whose path contains it.
# UPDATE=1 sh tests/run.sh build/masq NAME rewrites the expected files of
# those tests: check every rewritten line against torch or by hand.
masq=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
export LC_ALL=C NO_COLOR=1 TERM=dumb MASQ_HISTORY=
unset COLUMNS # the pictures are 80 wide unless a script says otherwise
for t in "$root"/lang/*.masq "$root"/errors/*.masq; do
  [ -f "$t" ] || continue
  case "$t" in *"$2"*) ;; *) continue ;; esac
  dir=$(dirname "$t"); name=$(basename "$t" .masq); base="$dir/$name"
  first=$(head -n 1 "$t")
  (
    cd "$dir" || exit 99
    case "$first" in
      "# ARGS: "*) eval "set -- ${first#\# ARGS: }"; "$masq" "$@" ;;
      "# STDIN"*) "$masq" - < "$name.masq" ;;
      *) "$masq" "$name.masq" ;;
    esac
  ) > "$tmp/out" 2> "$tmp/err" < /dev/null
  echo $? > "$tmp/status"
  if [ -n "$UPDATE" ]; then
    cp "$tmp/out" "$base.out"
    if [ -s "$tmp/err" ]; then cp "$tmp/err" "$base.err"; else rm -f "$base.err"; fi
    if [ "$(cat "$tmp/status")" != 0 ]; then cp "$tmp/status" "$base.status"; else rm -f "$base.status"; fi
  fi
  ok=1
  : > "$tmp/none"
  exp_out="$tmp/none"; [ -f "$base.out" ] && exp_out="$base.out"
  exp_err="$tmp/none"; [ -f "$base.err" ] && exp_err="$base.err"
  if ! diff -u "$exp_out" "$tmp/out" > "$tmp/diff" 2>&1; then ok=0; fi
  if ! diff -u "$exp_err" "$tmp/err" >> "$tmp/diff" 2>&1; then ok=0; fi
  want=0; [ -f "$base.status" ] && want=$(cat "$base.status")
  got=$(cat "$tmp/status")
  if [ "$want" != "$got" ]; then ok=0; echo "exit status: want $want, got $got" >> "$tmp/diff"; fi
  if [ $ok = 1 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL ${base#$root/}.masq"
    sed 's/^/    /' "$tmp/diff" | head -n 60
  fi
done
echo "golden: $pass passed, $fail failed"
