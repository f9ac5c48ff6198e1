#!/bin/sh
# cli_test.sh - the masq command's options, streams and exit statuses
# (0 ok, 1 runtime error, 2 usage or I/O error, 3 syntax error).
#
# usage: tests/repl/cli_test.sh [path/to/masq]      (default: build/masq)
# Prints "cli: N passed, N failed"; exits 1 if anything failed.

MASQ=${1:-build/masq}
if [ ! -x "$MASQ" ]; then
  echo "cli: no executable at $MASQ" >&2
  exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/masq-cli.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C NO_COLOR=1 MASQ_HISTORY=
passed=0 failed=0

# run ARGS...: runs masq with stdin from $tmp/in; sets $status, $out, $err.
run() {
  "$MASQ" "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
  status=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}
input() { printf '%s\n' "$@" >"$tmp/in"; }
: >"$tmp/in"

# expect NAME CONDITION: one result; CONDITION is a test(1) expression
expect() {
  name=$1
  shift
  if test "$@"; then
    passed=$((passed + 1))
    echo "ok - $name"
  else
    failed=$((failed + 1))
    echo "FAIL - $name"
    echo "  status $status; stdout: $out"
    echo "  stderr: $err" | head -n 5
  fi
}

run --version
expect "--version prints the version" "$out" = "masq 0.1.0"
expect "... and exits 0" $status -eq 0
run -v
expect "-v is --version" "$out" = "masq 0.1.0"

run --help
expect "--help prints usage on stdout and exits 0" $status -eq 0 -a -n "$out" -a -z "$err"
case $out in usage:*) u=1 ;; *) u=0 ;; esac
expect "... starting with usage:" $u -eq 1

run --frobnicate
expect "an unknown option exits 2" $status -eq 2
expect "... naming the option on stderr, nothing on stdout" \
  -z "$out" -a "$(echo "$err" | head -n 1)" = "masq: unknown option '--frobnicate'"
run -e
expect "-e without code exits 2" $status -eq 2
run --color=sometimes -e '1'
expect "a bad --color value exits 2" $status -eq 2

run no_such_file.masq
expect "a missing script exits 2" $status -eq 2
expect "... with the reason" \
  "$err" = "masq: cannot open 'no_such_file.masq': No such file or directory"
run "$tmp"
expect "a directory as the script exits 2" $status -eq 2
run --dis no_such_file.masq
expect "--dis on a missing file exits 2" $status -eq 2

run -e '1 + 2'
expect "-e prints the value of the expression" "$out" = "3"
expect "... and exits 0" $status -eq 0
run -e '1 + 2' -e '2 * 3'
expect "-e repeats, in order" "$out" = "3
6"
run -e '1 +* 2'
expect "a syntax error exits 3" $status -eq 3
case $err in "<expr>:1:"*) loc=1 ;; *) loc=0 ;; esac
expect "... located in <expr>, on stderr only" $loc -eq 1 -a -z "$out"
expect "... reported once" "$(echo "$err" | grep -c error)" -eq 1
run -e '[1, 2] + [1, 2, 3]'
expect "a runtime error (shape mismatch) exits 1" $status -eq 1 -a -n "$err"

printf 'a = 2\n' >"$tmp/script.masq"
printf '#!/usr/bin/env masq\na = 2\n' >"$tmp/shebang.masq"
run "$tmp/script.masq" arg1 arg2
expect "a script runs, its arguments are accepted" $status -eq 0 -a -z "$out$err"
printf 'print(len(args), args)\nfor a in args { print(a + "!") }\n' >"$tmp/args.masq"
run "$tmp/args.masq" one "two words" -e
expect "a script sees its arguments as args, options among them included" \
  "$out" = "$(printf '3 ["one", "two words", "-e"]\none!\ntwo words!\n-e!')" -a $status -eq 0
run "$tmp/args.masq"
expect "no arguments: args is an empty list" "$out" = "0 []" -a $status -eq 0
input 'print(args)'
run - x y
expect "a script on stdin gets args too" "$out" = '["x", "y"]' -a $status -eq 0
run "$tmp/shebang.masq"
expect "a #! line is skipped" $status -eq 0 -a -z "$err"
run --dis "$tmp/script.masq"
expect "--dis prints something and exits 0" $status -eq 0 -a -n "$out"
printf '1 +\n' >"$tmp/bad.masq"
run "$tmp/bad.masq"
expect "a script with a syntax error exits 3" $status -eq 3

input 'b = 3'
run -
expect "- runs stdin as a script, without echo" $status -eq 0 -a -z "$out$err"
input '1 +* 2'
run -
case $err in "<stdin>:1:"*) loc=1 ;; *) loc=0 ;; esac
expect "... named <stdin>" $status -eq 3 -a $loc -eq 1
input 'c = 4' 'c +* 1'
run
expect "no arguments and a pipe: stdin is a script" $status -eq 3 -a -z "$out"

input '1 + 2'
run -i
expect "-i prompts even on a pipe" "$out" = "masq> 3
masq> "
expect "... and exits 0 at the end of input" $status -eq 0

input 'print(1)' 'exit(5)' 'print(2)'
run -i
expect "exit(code) in the REPL leaves it ..." "$out" = "masq> 1
masq> "
expect "... with that status" $status -eq 5

input 'print(1)' 'exit(4)' 'print(2)'
run
expect "exit(code) in a script on stdin ends it with that status" $status -eq 4 -a "$out" = "1"

run -e 'eprint("to", "stderr")' -e 'exit(6)'
expect "-e: eprint writes to stderr, exit(6) gives status 6" $status -eq 6 -a -z "$out" -a "$err" = "to stderr"

# Output that cannot be written is an error, whatever wrote it.
if [ -w /dev/full ]; then
  for args in "-e print(1)" "--help" "--builtins" "-i"; do
    input '1 + 1'
    # shellcheck disable=SC2086
    "$MASQ" $args <"$tmp/in" >/dev/full 2>"$tmp/err"
    status=$? out="" err=$(cat "$tmp/err")
    expect "masq $args > /dev/full: status 2 and a message" \
      $status -eq 2 -a -n "$(printf '%s' "$err" | grep -x 'masq: error writing to standard output\(: No space left on device\)\{0,1\}')"
  done
fi

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
