# Sourced by the interop checks (check_numpy.sh, check_scipy.sh) after
# setting SUITE (the result label), MODULE (what /usr/bin/python3 must
# import) and PACKAGE (the Debian package that provides it), with the
# masq binary as $1. Sets py and masq, skips the suite when the module is
# missing, and leaves the caller in a temporary directory removed on exit.
py=/usr/bin/python3
if [ -z "$1" ]; then echo "usage: $0 path/to/masq" >&2; exit 2; fi
masq=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
if ! "$py" -c "import $MODULE" 2>/dev/null; then
  echo "$SUITE: SKIP (no $MODULE for $py; apt-get install $PACKAGE)"
  echo "$SUITE: 0 passed, 0 failed"
  exit 0
fi
# the caller's Python imports tests/checks.py from the temporary directory
PYTHONPATH=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export LC_ALL=C NO_COLOR=1
