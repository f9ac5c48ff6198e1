#!/bin/sh
# docs/BUILTINS.md must be what `masq --builtins` prints from the live table.
masq=$1
root=$(cd "$(dirname "$0")/.." && pwd)
if "$masq" --builtins | diff -u "$root/docs/BUILTINS.md" - > /tmp/masq-docs.$$ 2>&1; then
  echo "docs: 1 passed, 0 failed"
else
  echo "FAIL docs/BUILTINS.md is out of date; regenerate: build/masq --builtins > docs/BUILTINS.md"
  head -n 20 /tmp/masq-docs.$$ | sed 's/^/    /'
  echo "docs: 0 passed, 1 failed"
fi
rm -f /tmp/masq-docs.$$
