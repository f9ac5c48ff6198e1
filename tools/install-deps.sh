#!/bin/sh
# Installs the Debian packages masq needs to build and test, only those that
# are missing. Uses sudo when not run as root.
#   sh tools/install-deps.sh         what make test needs (CI)
#   sh tools/install-deps.sh build   only what make needs (make demo)
set -e
need=""
have() { command -v "$1" >/dev/null 2>&1; }
have re2c  || need="$need re2c"
have bison || need="$need bison"
have make  || need="$need make"
have cc    || need="$need gcc"
have python3 || need="$need python3" # the editor syntax files (tools/editors)
[ -f /usr/include/readline/readline.h ] || need="$need libreadline-dev"
[ -f /usr/include/zlib.h ] || need="$need zlib1g-dev"
want=""
if [ "$1" != build ]; then
  have clang || need="$need clang"
  have tmux  || need="$need tmux"
  have pkg-config || need="$need pkgconf" # make test builds a host with it
  # libFuzzer, for the fuzz harnesses (make fuzz, and the smoke in make test):
  # it comes with compiler-rt, so try linking a tiny fuzzer with clang.
  fuzzer_links() {
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' |
      clang -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1
  }
  have clang && fuzzer_links || need="$need libclang-rt-dev"
  # numpy, for the test that numpy reads what masq writes and vice versa
  /usr/bin/python3 -c 'import numpy' 2>/dev/null || need="$need python3-numpy"
  # rsvg-convert, for the test that the pictures' SVG files render (tests/pictures/)
  have rsvg-convert || need="$need librsvg2-bin"
  # Optional: the Python module (make python; python/tests in make test, which
  # skips them without python3-dev), pip install ./python's test venv, and
  # what its kernel, notebook and dask tests run on (each skipped if absent).
  [ -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h" ] ||
    want="$want python3-dev"
  /usr/bin/python3 -c 'import pytest' 2>/dev/null || want="$want python3-pytest"
  /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || want="$want python3-venv"
  /usr/bin/python3 -c 'import ipykernel, jupyter_client' 2>/dev/null ||
    want="$want python3-ipykernel python3-jupyter-client"
  /usr/bin/python3 -c 'import nbformat, nbclient' 2>/dev/null || want="$want python3-nbformat python3-nbclient"
  /usr/bin/python3 -c 'import dask.array' 2>/dev/null || want="$want python3-dask"
fi
[ -z "$need$want" ] && exit 0
echo "installing:$need$want"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
[ -z "$need" ] || $sudo apt-get install -y -qq $need >/dev/null
# shellcheck disable=SC2086
[ -z "$want" ] || $sudo apt-get install -y -qq $want >/dev/null ||
  echo "optional:$want not installed (the Python module and its tests are skipped)"
