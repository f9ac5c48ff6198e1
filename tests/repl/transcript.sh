#!/bin/sh
# transcript.sh - runs `masq -i` on piped input (transcript.in) and compares
# everything it prints, prompts included and stdout and stderr interleaved as
# a user would see them, with transcript.expected.
#
# usage: tests/repl/transcript.sh [path/to/masq] [--update]
#
# The transcript sticks to what the CLI owns (prompts, continuation, blank
# lines, :command messages) plus two plain integer results; how values print
# is the library's business and is tested with the language's golden files.
# --update rewrites transcript.expected from the current output.

dir=$(dirname "$0")
MASQ=${1:-build/masq}
if [ ! -x "$MASQ" ]; then
  echo "transcript: no executable at $MASQ" >&2
  exit 2
fi
actual=$(mktemp "${TMPDIR:-/tmp}/masq-transcript.XXXXXX") || exit 2
trap 'rm -f "$actual"' EXIT

LC_ALL=C NO_COLOR=1 MASQ_HISTORY= "$MASQ" -i <"$dir/transcript.in" >"$actual" 2>&1
status=$?

if [ "$2" = "--update" ]; then
  cp "$actual" "$dir/transcript.expected"
  echo "transcript: updated $dir/transcript.expected"
  exit 0
fi
# The closing line has the "N passed, N failed" form tests/summary.sh adds up.
if [ $status -ne 0 ]; then
  echo "transcript: masq -i exited with status $status"
elif diff -u "$dir/transcript.expected" "$actual"; then
  echo "transcript: 1 passed, 0 failed"
  exit 0
fi
echo "transcript: 0 passed, 1 failed"
exit 1
