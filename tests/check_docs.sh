#!/bin/sh
# The docs say what masq does:
#  - docs/BUILTINS.md must be what `masq --builtins` prints from the live table;
#  - every masq session shown in README.md and docs/*.md (a REPL session
#    starting "masq> ", a shell session starting "$ masq") must print what
#    the page shows (tests/check_snippets.py; conventions in tests/README.md).
masq=$1
root=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0
if "$masq" --builtins | diff -u "$root/docs/BUILTINS.md" - > /tmp/masq-docs.$$ 2>&1; then
  passed=$((passed + 1))
else
  echo "FAIL docs/BUILTINS.md is out of date; regenerate: build/masq --builtins > docs/BUILTINS.md"
  head -n 20 /tmp/masq-docs.$$ | sed 's/^/    /'
  failed=$((failed + 1))
fi
rm -f /tmp/masq-docs.$$
out=$(python3 "$root/tests/check_snippets.py" "$masq" "$root/README.md" "$root"/docs/*.md)
printf '%s\n' "$out" | grep -v '^snippets: '
p=$(printf '%s\n' "$out" | sed -n 's/^snippets: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(printf '%s\n' "$out" | sed -n 's/^snippets: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
[ -n "$p" ] || { p=0; f=1; echo "FAIL tests/check_snippets.py did not finish"; }
echo "docs: $((passed + p)) passed, $((failed + f)) failed"
