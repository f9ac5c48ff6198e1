#!/bin/sh
# Installs the Debian packages masq needs to build and test, only those that
# are missing: when none is, it prints nothing and takes a fraction of a
# second (make test and make demo run it first every time). Uses apt-get,
# non-interactively, through sudo when not run as root.
#   sh tools/install-deps.sh         what make test needs (make test, CI)
#   sh tools/install-deps.sh build   only what make needs (make demo)
#   sh tools/install-deps.sh bench   what make needs, and the optimized BLAS
#                                    (OpenBLAS) the bench's peers run on
# The optional packages (the Python module and its tests, which make test
# skips without them) that could not be installed are written to
# build/install-deps.skipped and not tried again until make clean.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
skipped="$root/build/install-deps.skipped"
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
if [ "$1" = bench ]; then
  # Debian's torch and numpy call whatever libblas.so.3 names; with only the
  # reference BLAS (libblas3) installed their matrix products are plain
  # unblocked loops, not what their users run. Installing OpenBLAS makes it
  # the libblas.so.3 alternative (priority 100 over the reference's 10).
  # Optional: without it the bench prints the peers' times and refuses
  # their ratios (bench/peers.py names the BLAS each peer has mapped).
  if have dpkg-query; then
    dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q 'ok installed' ||
      grep -qx libopenblas0-pthread "$skipped" 2>/dev/null || want="$want libopenblas0-pthread"
  fi
elif [ "$1" != build ]; then
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
  # rsvg-convert, for the test that the pictures' SVG files render (tests/pictures/)
  have rsvg-convert || need="$need librsvg2-bin"
  # The Python modules, in one python3 that looks for them without importing
  # them (importing dask alone takes half a second). Needed: numpy, for the
  # test that numpy reads what masq writes and vice versa. Optional: the
  # Python module (make python; python/tests, skipped without python3-dev),
  # pip install ./python's test venv, and what its kernel, notebook and dask
  # tests run on (each skipped if absent). Line 1: needed; line 2: optional.
  py=$(/usr/bin/python3 - 2>/dev/null <<'EOF'
import importlib.util, os, sysconfig
def has(*modules):
    return all(importlib.util.find_spec(m) for m in modules)
print("" if has("numpy") else "python3-numpy")
want = []
if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
    want.append("python3-dev")
for modules, packages in [(["pytest"], "python3-pytest"), (["ensurepip"], "python3-venv"),
                          (["ipykernel", "jupyter_client"], "python3-ipykernel python3-jupyter-client"),
                          (["nbformat", "nbclient"], "python3-nbformat python3-nbclient"),
                          (["dask"], "python3-dask")]:
    if not has(*modules):
        want.append(packages)
# the real files tests/io/check_tables.sh loads and checks against pandas
for modules, packages in [(["pandas"], "python3-pandas"), (["statsmodels"], "python3-statsmodels")]:
    if not has(*modules):
        want.append(packages)
if not os.path.exists("/usr/share/matplotlib/mpl-data/sample_data/Stocks.csv"):
    want.append("python-matplotlib-data")
print(" ".join(want))
EOF
  ) || py="python3-numpy
python3-dev python3-pytest python3-venv python3-ipykernel python3-jupyter-client python3-nbformat python3-nbclient python3-dask python3-pandas python3-statsmodels python-matplotlib-data"
  need="$need$(echo "$py" | sed -n '1s/^./ &/p')"
  for p in $(echo "$py" | sed -n 2p); do
    grep -qx "$p" "$skipped" 2>/dev/null || want="$want $p"
  done
fi
[ -z "$need$want" ] && exit 0

# skip WHY: the optional packages are not installed; remember them.
skip() {
  what="the Python module's tests are skipped"
  [ "${2:-}" = bench ] && what="the bench refuses peer ratios on the reference BLAS"
  echo "optional:$want not installed ($1): $what;" \
    "not tried again until make clean" >&2
  mkdir -p "$(dirname "$skipped")"
  for p in $want; do echo "$p"; done >>"$skipped"
}
sudo=""
if [ "$(id -u)" != 0 ]; then
  if have sudo; then sudo="sudo"; else
    [ -z "$need" ] || { echo "missing:$need; as root: apt-get install$need" >&2; exit 1; }
    skip "not root, and no sudo" "$1"; exit 0
  fi
fi
if ! have apt-get; then
  [ -z "$need" ] || { echo "missing:$need (Debian's names); install them, then run this again" >&2; exit 1; }
  skip "no apt-get" "$1"; exit 0
fi
echo "installing:$need$want"
# (through env: sudo drops the caller's environment)
apt() { $sudo env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
apt update -qq || [ -z "$need" ] # only optional packages wanted: go on, their install fails and is skipped
# shellcheck disable=SC2086
[ -z "$need" ] || apt install -y -qq $need >/dev/null
# shellcheck disable=SC2086
[ -z "$want" ] || apt install -y -qq $want >/dev/null || skip "apt-get failed" "$1"
