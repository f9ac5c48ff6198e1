#!/bin/sh
# The Python module's tests (pytest), as `make test` runs them after
# `make python`. Skips (0 passed) when the module was not built (no
# python3-dev) or pytest/numpy are missing; the last line is always
# "python: N passed, N failed" (tests/summary.sh adds those up).
# Usage: sh python/tests/run.sh [BUILD_DIR]
B=${1:-build}
py=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "python: SKIP ($1)"; echo "python: 0 passed, 0 failed"; exit 0; }
ls "$B"/python/masq/_masq*.so >/dev/null 2>&1 || skip "module not built: apt-get install python3-dev, make python"
"$py" -c "import numpy, pytest" 2>/dev/null || skip "no numpy or pytest for $py: apt-get install python3-numpy python3-pytest"
out=$(MASQ_BUILD=$(cd "$B" && pwd) "$py" -m pytest -q -p no:cacheprovider "$here" 2>&1)
echo "$out" | grep -v '^[.sF]*\( *\[[ 0-9]*%\]\)\?$'
passed=$(echo "$out" | tail -n 1 | grep -o '[0-9]* passed' | cut -d' ' -f1)
failed=$(echo "$out" | tail -n 1 | grep -o '[0-9]* failed' | cut -d' ' -f1)
errors=$(echo "$out" | tail -n 1 | grep -o '[0-9]* error' | cut -d' ' -f1)
failed=$((${failed:-0} + ${errors:-0})) # a test that errors in set-up counts as failed
case "$(echo "$out" | tail -n 1)" in *passed*|*failed*|*error*) ;; *) failed=1 ;; esac
# pip install --no-build-isolation ./python works offline, into a virtual environment that sees
# the system's numpy (skipped without python3-venv's ensurepip).
if "$py" -c "import venv, ensurepip" 2>/dev/null; then
  tmp=$(mktemp -d)
  if "$py" -m venv --system-site-packages "$tmp/venv" >"$tmp/log" 2>&1 &&
     "$tmp/venv/bin/pip" install --no-index --no-build-isolation "$here/.." >>"$tmp/log" 2>&1 &&
     (cd "$tmp" && "$tmp/venv/bin/python" -c 'import masq, numpy, importlib.util; assert masq.eval("sum(x)", x=numpy.ma.array([1, 2, 4], mask=[0, 1, 0])) == 5; assert importlib.util.find_spec("masq.dask")' >>"$tmp/log" 2>&1); then
    passed=$((${passed:-0} + 1))
  else
    echo "FAIL pip install ./python:"; tail -n 20 "$tmp/log"
    failed=$((${failed:-0} + 1))
  fi
  rm -rf "$tmp"
fi
echo "python: ${passed:-0} passed, ${failed:-0} failed"
