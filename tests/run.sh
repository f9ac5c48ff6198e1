#!/bin/sh
# Golden tests: every tests/{lang,errors}/NAME.masq runs as `masq NAME.masq`
# from its own directory; its stdout, stderr and exit status must be exactly
# the expected ones, written in one of two ways (tests/README.md):
#
#  - inside the script, as its last lines (every test in tests/errors/; the
#    format for a new error test):
#        # expect stderr:
#        #| NAME.masq:2:7: error: undefined variable 'y'
#        #|     print(y)
#        #|           ^
#        # expect status: 1
#    "# expect stdout:" likewise; each output line is "#| " and the line
#    ("#|" alone for an empty one); "# expect no newline at end" after a
#    section's last line says it has none. What is not written is empty, or
#    a status of 0. The block comes after the script (a blank line between),
#    so it moves no line of the script.
#  - beside it: stdout in NAME.out, stderr NAME.err (empty if absent), the
#    status NAME.status (0 if absent) (tests/lang, whose long outputs read
#    better as files of their own; an error test with side files fails).
#
# A first line "# ARGS: ..." runs `masq ...` instead (for -e and option
# tests); "# STDIN" feeds the script on standard input to `masq -`.
# A second argument runs only the tests whose path contains it.
# UPDATE=1 sh tests/run.sh build/masq NAME rewrites the expectations of those
# tests where they are (a new test without any: inline in tests/errors,
# NAME.out ... in tests/lang): check every rewritten line against torch or by
# hand. INLINE=1 sh tests/run.sh build/masq [NAME] runs nothing: it moves the
# side files of the matching tests/errors tests into their scripts.
masq=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
export LC_ALL=C NO_COLOR=1 TERM=dumb MASQ_HISTORY=
unset COLUMNS # the pictures are 80 wide unless a script says otherwise

# The line that opens an expectation block.
opens='^# expect (stdout:|stderr:|status: [0-9]+)$'

# expected SCRIPT: writes the script's block into $tmp/want_{out,err,status};
# fails (printing why) if the block has a line it does not know.
expected() {
  awk -v open="$opens" -v out="$tmp/want_out" -v err="$tmp/want_err" -v status="$tmp/want_status" '
    !inblock && $0 ~ open { inblock = 1 }
    !inblock { next }
    /^# expect stdout:$/ { sec = "o"; next }
    /^# expect stderr:$/ { sec = "e"; next }
    /^# expect status: [0-9]+$/ { st = substr($0, 18) + 0; sec = ""; next }
    /^# expect no newline at end$/ && sec != "" { text[sec] = substr(text[sec], 1, length(text[sec]) - 1); sec = ""; next }
    /^#\|/ && sec != "" { line = substr($0, 3); sub(/^ /, "", line); text[sec] = text[sec] line "\n"; next }
    /^$/ { next }
    { printf "line %d: not part of an expectation block: %s\n", NR, $0; bad = 1; exit 1 }
    END {
      if (bad) exit 1
      printf "%s", text["o"] > out; printf "%s", text["e"] > err; print st + 0 > status
    }' "$1"
}

# section NAME FILE: FILE as the lines of an expectation block (nothing if empty).
section() {
  [ -s "$2" ] || return 0
  echo "# expect $1:"
  awk '{ print ($0 == "" ? "#|" : "#| " $0) }' "$2"
  [ -z "$(tail -c 1 "$2")" ] || echo "# expect no newline at end"
}

# inline SCRIPT OUT ERR STATUS: replaces the script's block (and the blank
# line before it) by one for these expectations; leaves the file alone if
# that changes nothing.
inline() {
  awk -v open="$opens" '
    $0 ~ open { found = 1; exit }
    { line[++n] = $0 }
    END {
      if (found && n > 0 && line[n] == "") n--
      for (i = 1; i <= n; i++) print line[i]
    }' "$1" > "$tmp/script"
  { section stdout "$2"; section stderr "$3"; [ "$(cat "$4")" = 0 ] || echo "# expect status: $(cat "$4")"; } > "$tmp/block"
  if [ -s "$tmp/block" ]; then
    { echo; cat "$tmp/block"; } >> "$tmp/script"
  elif ! grep -Eq "$opens" "$1"; then
    return 0
  fi
  cmp -s "$tmp/script" "$1" || cat "$tmp/script" > "$1"
}

# kinds: where test $t's expectations are: side=1 files beside it, block=1
# a block inside it.
kinds() {
  side=0 block=0
  if [ -f "$base.out" ] || [ -f "$base.err" ] || [ -f "$base.status" ]; then side=1; fi
  if grep -Eq "$opens" "$t"; then block=1; fi
}

: > "$tmp/none"
echo 0 > "$tmp/zero"
for t in "$root"/lang/*.masq "$root"/errors/*.masq; do
  [ -f "$t" ] || continue
  case "$t" in *"$2"*) ;; *) continue ;; esac
  dir=$(dirname "$t"); name=$(basename "$t" .masq); base="$dir/$name"
  kinds

  if [ -n "$INLINE" ]; then
    case "$dir" in */errors) ;; *) continue ;; esac
    [ $side = 1 ] || continue
    s="$tmp/zero"; [ -f "$base.status" ] && s="$base.status"
    o="$tmp/none"; [ -f "$base.out" ] && o="$base.out"
    e="$tmp/none"; [ -f "$base.err" ] && e="$base.err"
    inline "$t" "$o" "$e" "$s" && rm -f "$base.out" "$base.err" "$base.status"
    echo "inlined ${base#$root/}"
    continue
  fi

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
    case "$side$block$dir" in
      1*/errors) # an error test keeps its expectations inside it
        inline "$t" "$tmp/out" "$tmp/err" "$tmp/status" && rm -f "$base.out" "$base.err" "$base.status" ;;
      1*|00*/lang)
        cp "$tmp/out" "$base.out"
        if [ -s "$tmp/err" ]; then cp "$tmp/err" "$base.err"; else rm -f "$base.err"; fi
        if [ "$(cat "$tmp/status")" != 0 ]; then cp "$tmp/status" "$base.status"; else rm -f "$base.status"; fi
        ;;
      *) # not over a block it cannot read: that would drop the lines after it
        if [ $block = 0 ] || expected "$t" > /dev/null; then inline "$t" "$tmp/out" "$tmp/err" "$tmp/status"; fi ;;
    esac
    # the side files win over a block
    if [ $side = 1 ] && [ $block = 1 ]; then inline "$t" "$tmp/none" "$tmp/none" "$tmp/zero"; fi
    kinds
  fi

  ok=1
  if [ $side = 1 ] && [ $block = 1 ]; then
    ok=0
    echo "expectations both in the script and in ${name}.out/.err/.status: keep one (INLINE=1 moves the files in)" > "$tmp/diff"
  elif [ $side = 1 ] && [ "${dir##*/}" = errors ]; then
    ok=0
    echo "an error test keeps its expectations inside its script, not in ${name}.out/.err/.status (INLINE=1 moves them in)" > "$tmp/diff"
  elif [ $side = 1 ]; then
    exp_out="$tmp/none"; [ -f "$base.out" ] && exp_out="$base.out"
    exp_err="$tmp/none"; [ -f "$base.err" ] && exp_err="$base.err"
    want=0; [ -f "$base.status" ] && want=$(cat "$base.status")
  elif ! expected "$t" > "$tmp/diff"; then
    ok=0
  else
    exp_out="$tmp/want_out" exp_err="$tmp/want_err" want=$(cat "$tmp/want_status")
  fi
  if [ $ok = 1 ]; then # the expectations could be read: compare
    if ! diff -u "$exp_out" "$tmp/out" > "$tmp/diff" 2>&1; then ok=0; fi
    if ! diff -u "$exp_err" "$tmp/err" >> "$tmp/diff" 2>&1; then ok=0; fi
    got=$(cat "$tmp/status")
    if [ "$want" != "$got" ]; then ok=0; echo "exit status: want $want, got $got" >> "$tmp/diff"; fi
  fi
  if [ $ok = 1 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL ${base#$root/}.masq"
    sed 's/^/    /' "$tmp/diff" | head -n 60
  fi
done
echo "golden: $pass passed, $fail failed"
