#!/bin/sh
# bench/run.sh - time every workload of docs/PERFORMANCE.md in masq, torch.masked,
# numpy.ma and a hand-written C loop, and print one table of medians and
# ratios. `make bench` builds what this needs and runs it.
#
#   sh bench/run.sh [BUILD_DIR]          (default: build)
#   sh bench/run.sh --table [BUILD_DIR]  only print the table again from the
#                                        last run's results (e.g. with
#                                        BENCH_STAT=min)
#
# The padded-batch rows of issue 16 (attention, pooling) also time the dense
# tricks of plain torch, numpy's where=, numexpr and bottleneck; a peer whose
# package is missing shows as n/a (python3-numexpr, python3-bottleneck).
#
# The rows of issue 30 (bench/peer_rows.h, bench/peers.py) put masq beside
# torch and numpy as their users run them, on an optimized BLAS, one and two
# threads, float32 and bfloat16: dense building blocks (matmul, bmm, linear +
# gelu, an MLP, layer_norm, gelu, softmax) and whole training steps
# (examples/train.masq at 1x/10x/100x, a padded encoder block). masq_bench
# --save first writes their inputs and masq's results to BUILD_DIR/bench/peers,
# which peers.py loads, so each row is checked (the same numbers) before it
# is timed. Its table gives the best time of all repetitions and rounds, and
# refuses a masq/peer ratio when the peer runs on the reference BLAS.
#
# BUILD_DIR must hold masq, bench/masq_bench and bench/baseline (make bench
# builds them). Environment:
#   BENCH_ROWS="dense steps"   the sets of rows (default all): masked (the
#                     masked workloads of the issues before 30), dense and
#                     steps (issue 30's; make bench ROWS=dense), padding
#                     (issue 31's random padding, bench/pad_rows.h, against
#                     torch's dense tricks: bench/pad_bench.py); dask
#                     (issue 32's out-of-core row, bench/dask_bench.py: writes
#                     1 GB to BUILD_DIR/bench/dask_ooc and deletes it; not in
#                     all); smoke: the
#                     small rows of issue 30, 3 repetitions, one round (a
#                     test of the machinery in about half a minute, not a figure)
#   BENCH_STAT=min    tabulate the minimum of the repetitions instead of the
#                     median (on a busy machine noise only adds time)
#   BENCH_QUICK=1     3 repetitions per workload: a smoke test, not a figure
#   BENCH_REPS=N      exactly N repetitions per workload
#   BENCH_PYTHON=...  the interpreter for torch/numpy (default /usr/bin/python3)
#   BENCH_ROUNDS=N    rounds over all implementations (default 3)
#   BENCH_ONLY="sum_all exp_2_1 ..."   only these workloads
#   BENCH_AGAINST=REV also build masq_bench at git revision REV (in
#                     BUILD_DIR/bench/against-REV) and time it alternately with
#                     this tree's; the table then compares the two row by row
#                     and names the rows slower than REV. Unless BENCH_IMPLS is
#                     set, only the two masq builds run.
#   BENCH_IMPLS="c masq torch numpy pymod base"  the implementations to run;
#                     issue 30's peers are ptorch1 ptorch2 pnumpy1 pnumpy2
#                     (bench/peers.py on one and two threads)
# Raw results (RESULT lines, see bench/bench_util.h) go to
# BUILD_DIR/bench/results.tsv, the table to BUILD_DIR/bench/table.md.
set -u

TABLE_ONLY=0
if [ "${1:-}" = --table ]; then
  TABLE_ONLY=1
  shift
fi
B=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${BENCH_PYTHON:-/usr/bin/python3}
STAT=${BENCH_STAT:-median}
ONLY=${BENCH_ONLY:-}
ROWS=${BENCH_ROWS:-all}
case " $ROWS " in *" all "*) ROWS="masked dense steps padding" ;; esac
if [ "$ROWS" = smoke ]; then
  ROWS="dense steps"
  ONLY=${ONLY:-mm128 mm128_bf16 bmm softmax softmax_bf16 train1 encoder}
  BENCH_QUICK=1 BENCH_ROUNDS=1
  export BENCH_QUICK
fi
for r in $ROWS; do
  case $r in masked | dense | steps | padding | dask) ;; *)
    echo "bench/run.sh: BENCH_ROWS: no set of rows '$r' (masked, dense, steps, padding, dask, all, smoke)" >&2
    exit 2 ;;
  esac
done
has_rows() { case " $ROWS " in *" $1 "*) return 0 ;; esac; return 1; }
# what masq_bench and peers.py run: the rows named, or the sets
PEERS=0
{ has_rows dense || has_rows steps; } && PEERS=1
MASQ_ARGS=$ONLY
PEER_ARGS=$ONLY
if [ -z "$ONLY" ]; then
  PEER_ARGS=$(for r in $ROWS; do [ "$r" = masked ] || [ "$r" = padding ] || printf '@%s ' "$r"; done)
  [ "$ROWS" = "masked dense steps padding" ] || MASQ_ARGS=$(for r in $ROWS; do printf '@%s ' "$r"; done)
fi
OUT="$B/bench"
RES="$OUT/results.tsv"
TABLE="$OUT/table.md"

if [ "$TABLE_ONLY" = 1 ]; then
  [ -f "$RES" ] || { echo "bench/run.sh: no $RES yet; run 'make bench'" >&2; exit 2; }
  cat "$OUT/conditions.txt" 2>/dev/null
  echo "(table printed again from $RES; statistic: $STAT)"
  echo
fi
[ "$TABLE_ONLY" = 1 ] || for f in "$B/masq" "$OUT/masq_bench" "$OUT/baseline"; do
  if [ ! -x "$f" ]; then
    echo "bench/run.sh: $f is missing; run 'make bench'" >&2
    exit 2
  fi
done
if [ "$TABLE_ONLY" = 0 ]; then
  mkdir -p "$OUT"
  : > "$RES"

  # --- the conditions of this run ------------------------------------------------
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
  rev=$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [ -n "$(git -C "$HERE/.." status --porcelain -- runtime vm stdlib parser lexer include 2>/dev/null)" ]; then
    rev="$rev + uncommitted changes"
  fi
  pyver() { "$PY" -c "import $1; print($1.__version__)" 2>/dev/null; }
  TORCH_V=$(pyver torch)
  NUMPY_V=$(pyver numpy)
  {
    echo "masq bench: $(date -u '+%Y-%m-%d %H:%M UTC'), masq $rev"
    echo "machine: ${cpu:-unknown cpu}, $(nproc 2>/dev/null || echo '?') cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
    echo "compiler: $(${CC:-cc} --version 2>/dev/null | head -n 1); torch ${TORCH_V:-not installed}; numpy ${NUMPY_V:-not installed}"
    [ -n "$TORCH_V" ] && echo "torch threads: $("$PY" -c 'import torch; print(torch.get_num_threads())' 2>/dev/null)"
    echo "statistic: $STAT of the repetitions (after one warm-up run), over ${BENCH_ROUNDS:-3} rounds"
  } | tee "$OUT/conditions.txt"
  echo

  note() { printf '  %s\n' "$*" >&2; }
  na_all() { # impl reason: one NA line standing for every workload
    printf 'RESULT\t%s\t*\tNA\tNA\t%s\n' "$1" "$2" >> "$RES"
  }

  # --- run everything ---------------------------------------------------------------
  # In ROUNDS rounds, each running every implementation on every workload, in
  # alternating order: a burst of load from other processes then hits all of
  # them rather than one. A figure is the median of its per-round medians (or
  # the minimum of the per-round minimums with BENCH_STAT=min).
  ROUNDS=${BENCH_ROUNDS:-3}
  DEFAULT_IMPLS=
  has_rows masked && DEFAULT_IMPLS="c masq torch numpy pymod"
  [ "$PEERS" = 0 ] || DEFAULT_IMPLS="${DEFAULT_IMPLS:-masq} ptorch1 ptorch2 pnumpy1 pnumpy2"
  has_rows padding && DEFAULT_IMPLS="${DEFAULT_IMPLS:-masq} padtorch"
  IMPLS=${BENCH_IMPLS:-$DEFAULT_IMPLS}
  AGAINST=${BENCH_AGAINST:-}
  if [ -n "$AGAINST" ]; then
    # masq_bench at another revision, built from a pristine export of it
    rev_id=$(git -C "$HERE/.." rev-parse --short "$AGAINST^{commit}" 2>/dev/null) ||
      { echo "bench/run.sh: BENCH_AGAINST=$AGAINST is not a revision" >&2; exit 2; }
    src="$OUT/against-$rev_id"
    BASE_BENCH="$src/build/bench/masq_bench"
    if [ ! -x "$BASE_BENCH" ]; then
      note "building masq_bench at $rev_id in $src ..."
      rm -rf "$src" && mkdir -p "$src" &&
        git -C "$HERE/.." archive "$rev_id" | tar -x -C "$src" &&
        make -C "$src" -s build/bench/masq_bench > "$src.log" 2>&1 ||
        { echo "bench/run.sh: building $rev_id failed (see $src.log)" >&2; exit 2; }
    fi
    IMPLS=${BENCH_IMPLS:-masq base}
    echo "against: masq_bench at $rev_id, alternately with this tree's" | tee -a "$OUT/conditions.txt"
  fi
  # A driver that dies (a crash in masq, say) loses only its remaining
  # workloads, which show as n/a; the table is still printed.
  collect() { # name command...: run, keep the RESULT lines, report a failure
    name=$1
    shift
    "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
    rc=$?
    if [ -n "${RENAME:-}" ]; then
      sed -n "s/^RESULT\tmasq/RESULT\t$RENAME/p" "$OUT/$name.out" >> "$RES"
    else
      grep -E '^(RESULT|BLAS|CHECK)'"$(printf '\t')" "$OUT/$name.out" >> "$RES"
    fi
    [ "$rc" = 0 ] || note "$name exited with status $rc (see $OUT/$name.err)"
  }
  run_impl() {
    case $1 in
    c) collect baseline "$OUT/baseline" $ONLY ;;
    masq) collect masq_bench "$OUT/masq_bench" $MASQ_ARGS ;;
    ptorch[12] | pnumpy[12]) # issue 30's peers: a process per thread count
      lib=${1#p}; lib=${lib%?}; n=${1#p"$lib"}
      v=$TORCH_V; [ "$lib" = numpy ] && v=$NUMPY_V
      if [ -n "$v" ]; then
        collect "peers_$1" "$PY" "$HERE/peers.py" "$lib" "$n" "$OUT/peers" $PEER_ARGS
      elif [ "$round" = 1 ]; then
        na_all "$lib$([ "$n" = 1 ] || echo "-${n}t")" "not installed (apt-get install -y python3-$lib)"
      fi ;;
    padtorch) # issue 31's padding rows in torch's dense tricks, one thread (pad_bench.py)
      pad_args=${ONLY:-@padding}
      if [ -z "$TORCH_V" ]; then
        [ "$round" = 1 ] && na_all torch-trick "not installed (apt-get install -y python3-torch)"
      elif [ "$pad_args" = @padding ] || echo " $ONLY " | grep -q ' pad_'; then
        collect pad_bench env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
          "$PY" "$HERE/pad_bench.py" $pad_args
      fi ;;
    base) # masq_bench of BENCH_AGAINST; its rows are named base and base-2t
      RENAME=base
      # a masq_bench from before the @sets runs its (masked) rows without arguments
      base_args=$MASQ_ARGS
      [ -n "$ONLY" ] || [ "$ROWS" != masked ] || base_args=
      collect masq_bench_base "$BASE_BENCH" $base_args
      RENAME= ;;
    torch | numpy)
      v=$TORCH_V; [ "$1" = numpy ] && v=$NUMPY_V
      if [ -n "$v" ]; then
        # one thread, OpenBLAS's own included (it reads these at load)
        collect "py_bench_$1" env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
          "$PY" "$HERE/py_bench.py" "$1" $ONLY
      elif [ "$round" = 1 ]; then
        na_all "$1" "not installed (apt-get install -y python3-$1)"
      fi ;;
    pymod) # the Python module (make python), one masq thread like masq_bench
      if [ -n "$NUMPY_V" ] && ls "$B"/python/masq/_masq*.so >/dev/null 2>&1; then
        collect py_module_bench env MASQ_NUM_THREADS=1 "$PY" "$HERE/py_module_bench.py" "$B/python" $ONLY
      elif [ "$round" = 1 ]; then
        na_all masq-py "not built (make python; needs python3-dev and python3-numpy)"
      fi ;;
    esac
  }
  # shellcheck disable=SC2086 # $ONLY is a list of words
  {
    if [ "$PEERS" = 1 ] && echo " $IMPLS " | grep -q ' p\(torch\|numpy\)'; then
      # the inputs and masq's results, for the peers' check
      note "masq_bench --save $OUT/peers (inputs and results to check the peers against) ..."
      rm -rf "$OUT/peers" && mkdir -p "$OUT/peers"
      "$OUT/masq_bench" --save "$OUT/peers" $PEER_ARGS 2> "$OUT/peers_save.err" ||
        note "masq_bench --save failed for some rows (see $OUT/peers_save.err): their check is n/a"
    fi
    round=1
    while [ "$round" -le "$ROUNDS" ]; do
      order=$IMPLS
      [ $((round % 2)) = 1 ] || order=$(echo "$IMPLS" | awk '{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : "") }')
      note "round $round of $ROUNDS: $order"
      for impl in $order; do run_impl "$impl"; done
      round=$((round + 1))
    done
    if { [ -z "$ONLY" ] && has_rows masked; } || echo " $ONLY " | grep -q ' startup '; then
      note "start-up ..."
      "$OUT/baseline" --spawn masq startup -- "$B/masq" -e 1 >> "$RES"
      "$OUT/baseline" --spawn c startup -- /bin/true >> "$RES"
      [ -n "$TORCH_V" ] && "$OUT/baseline" --spawn torch startup -- "$PY" -c "import torch.masked" >> "$RES"
      [ -n "$NUMPY_V" ] && "$OUT/baseline" --spawn numpy startup -- "$PY" -c "import numpy.ma" >> "$RES"
    fi
    # the peers' inputs and results (about 0.5 GB) are not needed any more
    rm -rf "$OUT/peers"
    if has_rows dask; then # its own rounds: a cluster, a file on disk (bench/dask_bench.py)
      note "out of core: masq.dask and dask's masked arrays on a LocalCluster ..."
      rm -f "$OUT/dask_table.md"
      "$PY" "$HERE/dask_bench.py" "$B" 2> "$OUT/dask_bench.err" | grep "^RESULT$(printf '\t')" >> "$RES"
    fi
  }
  echo
fi

# --- the tables -------------------------------------------------------------------
: > "$TABLE"
has_rows masked && awk -F '\t' -v stat="$STAT" -v against="${BENCH_AGAINST:-}" '
function fmt(t) {
  if (t == "") return "n/a"
  if (t >= 1) return sprintf("%.2f s", t)
  if (t >= 0.01) return sprintf("%.1f ms", t * 1e3)
  if (t >= 0.001) return sprintf("%.2f ms", t * 1e3)
  if (t >= 1e-6) return sprintf("%.1f us", t * 1e6)
  return sprintf("%.0f ns", t * 1e9)
}
function ratio(a, b, d) { return (a == "" || b == "" || b + 0 == 0) ? "n/a" : sprintf("%." d "fx", a / b) }
# A peer row that goes through a matrix product, with the peer on the
# reference BLAS (its BLAS line, bench/peers.py): no ratio is printed.
function refused(impl, w) {
  sub(/-.*/, "", impl)  # torch-trick runs in the torch process
  return KIND[impl] == "reference" && index(" matmul_512 attn_fwd attn_fwd_valid attn_fwd_bwd ", " " w " ")
}
$1 == "BLAS" { KIND[$2] = $3; BDETAIL[$2] = $4 }
function get(impl, w) { return ((impl SUBSEP w) in T) ? T[impl, w] : "" }
function speedup(w,  m, m2) { # two threads over one, or ""
  if (stat != "min" && (w in SPEED)) return SPEED[w]
  m = get("masq", w); m2 = get("masq-2t", w)
  return (m == "" || m2 == "" || m2 + 0 == 0) ? "" : m / m2
}
function threads(w,  sp) { sp = speedup(w); return (sp == "") ? "n/a" : sprintf("%.2fx", sp) }
$1 == "RESULT" {
  v = (stat == "min") ? $5 : $4
  if (v != "NA") {
    # small_loop samples are 1000 iterations: report one iteration
    if ($3 == "small_loop") v = v / 1000
    # the masq Adagrad samples are 50 steps (py_bench.py times one): report one step
    if (($2 == "masq" || $2 == "base") && ($3 == "ada_sparse" || $3 == "ada_dense")) v = v / 50
    k = $2 SUBSEP $3
    NV[k]++
    V[k, NV[k]] = v + 0
  } else if ($6 != "") {
    WHY[$2, $3] = $6
  }
  if ($2 == "masq-2t" && match($6, /speedup=[0-9.]+/)) { # median of paired 1T/2T ratios
    NS[$3]++
    SP[$3, NS[$3]] = substr($6, RSTART + 8, RLENGTH - 8) + 0
  }
  if ($2 == "masq" && $6 ~ /^allocs=/) { # allocation counts of one evaluation
    split($6, AB, /[= ]/)
    ALLOCS[$3] = AB[2]; ABYTES[$3] = AB[4]; NALLOC++
    # peak RSS since the set-up group of the workload began, the largest of the rounds
    if (match($6, /peak_mb=[0-9.]+/)) {
      pk = substr($6, RSTART + 8, RLENGTH - 8) + 0
      if (!($3 in PEAK) || pk > PEAK[$3]) PEAK[$3] = pk
    }
  }
}
END {
  # one figure per implementation and workload over the rounds: the median
  # of the round medians, or the least of the round minimums
  for (k in NV) {
    c = NV[k]
    for (i = 1; i <= c; i++) S[i] = V[k, i]
    for (i = 2; i <= c; i++) { x = S[i]; for (j = i - 1; j >= 1 && S[j] > x; j--) S[j + 1] = S[j]; S[j + 1] = x }
    T[k] = (stat == "min") ? S[1] : ((c % 2) ? S[(c + 1) / 2] : (S[c / 2] + S[c / 2 + 1]) / 2)
  }
  # 2T/1T: the median over the rounds of the paired speed-ups (masq_bench);
  # with BENCH_STAT=min, the ratio of the minimums
  for (w in NS) {
    c = NS[w]
    for (i = 1; i <= c; i++) S[i] = SP[w, i]
    for (i = 2; i <= c; i++) { x = S[i]; for (j = i - 1; j >= 1 && S[j] > x; j--) S[j + 1] = S[j]; S[j + 1] = x }
    SPEED[w] = (c % 2) ? S[(c + 1) / 2] : (S[c / 2] + S[c / 2 + 1]) / 2
  }
  n = split("sum_all mean_all amax_all sum_dim0 sum_dim1 mean_dim0 mean_dim1 amax_dim0 amax_dim1 exp_2_1 softmax_1000 softmax_4096x512 matmul_512 softmax_fwd_bwd sp_rowsum sp_softmax sp_spmm ada_sparse ada_dense small_loop startup eval_overhead", W, " ")
  L["sum_all"] = "masked sum, 10^7"
  L["mean_all"] = "masked mean, 10^7"
  L["amax_all"] = "masked amax, 10^7"
  L["sum_dim0"] = "sum dim 0, 1000x10000"
  L["sum_dim1"] = "sum dim 1, 1000x10000"
  L["mean_dim0"] = "mean dim 0, 1000x10000"
  L["mean_dim1"] = "mean dim 1, 1000x10000"
  L["amax_dim0"] = "amax dim 0, 1000x10000"
  L["amax_dim1"] = "amax dim 1, 1000x10000"
  L["exp_2_1"] = "exp(x)*2+1, 10^7"
  L["softmax_1000"] = "softmax dim 1, 1000x1000"
  L["softmax_4096x512"] = "softmax dim 1, 4096x512"
  L["matmul_512"] = "masked matmul 512x512"
  L["softmax_fwd_bwd"] = "fwd+bwd sum(softmax(x,1)*w), 1000x1000"
  L["sp_rowsum"] = "CSR 10^6^2, nnz 10^7: row sums"
  L["sp_softmax"] = "CSR 10^6^2, nnz 10^7: row softmax"
  L["sp_spmm"] = "CSR 10^6^2, nnz 10^7: @ 10^6x16"
  L["ada_sparse"] = "Adagrad step 10^7, grad 1%: sparse"
  L["ada_dense"] = "Adagrad step 10^7, grad 1%: dense masked"
  L["small_loop"] = "(x*2+1).sum() on 4x4, per iteration"
  L["startup"] = "start-up: masq -e 1 (C: /bin/true)"
  L["eval_overhead"] = "one masq_eval of r = 1 (extra)"
  TEN7 = " sum_all mean_all amax_all sum_dim0 sum_dim1 mean_dim0 mean_dim1 amax_dim0 amax_dim1 exp_2_1 sp_rowsum sp_softmax sp_spmm "
  fmtrow = "| %-40s | %-9s | %-12s | %-9s | %-9s | %-10s | %-10s | %-7s | %-10s |\n"
  for (b in KIND) if (b == "torch" || b == "numpy") {
    d = BDETAIL[b]; sub(/ mapped: .*/, "", d)
    printf "BLAS of %s: %s (%s)%s\n", b, KIND[b], d, (KIND[b] == "reference" ? \
      "; its ratios through a matrix product are refused (sh tools/install-deps.sh bench installs OpenBLAS)" : "")
  }
  printf fmtrow, "workload", "masq", "torch.masked", "numpy.ma", "C loop", "torch/masq", "numpy/masq", "masq/C", "2T/1T masq"
  printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------------------------", "-----------", "--------------", "-----------", "-----------", "------------", "------------", "---------", "------------"
  for (i = 1; i <= n; i++) {
    w = W[i]
    m = get("masq", w); t = get("torch", w); p = get("numpy", w); c = get("c", w)
    if (m == "" && t == "" && p == "" && c == "" && !(("masq" SUBSEP w) in WHY)) continue
    thr = "-"
    if (index(TEN7, " " w " ")) {
      thr = threads(w)
    }
    mc = (w == "eval_overhead") ? "-" : ratio(m, c, 2)
    printf fmtrow, L[w], fmt(m), fmt(t), fmt(p), fmt(c), ratio(t, m, 1), \
      (refused("numpy", w) ? "refused" : ratio(p, m, 1)), mc, thr
  }
  print ""
  print "torch/masq, numpy/masq: how many times faster masq is (> 1: masq wins)."
  print "masq/C: masq time over the hand-written C loop (1.00x: as fast as C)."
  print "masq: one thread (set_num_threads(1)). 2T/1T (the 10^7 and sp_ rows): one thread and two are timed alternately,"
  print "  one repetition of each in turn; the column is the median of the ratios of neighbouring repetitions"
  print "  (with BENCH_STAT=min: the ratio of the minimums), which cancels the drifting speed of a shared machine."
  print "A 2T/1T near 1 on a busy machine means the second core was taken by other processes."
  print "sp_ rows: torch = torch.sparse (sum, softmax on COO; mm on CSR), numpy = scipy.sparse (CSR)."
  print "ada_ rows: seed 003 (masq_bench.c); torch = its original torch.sparse code (in place) and its"
  print "  MaskedTensor code on a dense masked gradient."
  print "start-up row: torch = python3 -c \"import torch.masked\", numpy = python3 -c \"import numpy.ma\"."
  first = 1
  for (k in WHY) {
    split(k, kk, SUBSEP)
    if (first) { print ""; print "n/a (not supported, or not available), with the error:"; first = 0 }
    NOTE[kk[1] "/" kk[2]] = WHY[k]
  }
  # stable order for the n/a notes
  split("masq torch numpy c", IMPLS, " ")
  for (j = 1; j <= 4; j++) {
    if ((IMPLS[j] "/*") in NOTE) printf "  %s: %s\n", IMPLS[j], NOTE[IMPLS[j] "/*"]
    for (i = 1; i <= n; i++)
      if ((IMPLS[j] "/" W[i]) in NOTE) printf "  %s %s: %s\n", IMPLS[j], W[i], NOTE[IMPLS[j] "/" W[i]]
  }

  # --- issue 16: padded batches, against the tricks users pick
  split("attn_fwd attn_fwd_valid attn_fwd_bwd pool_mean", PW, " ")
  L["attn_fwd"] = "attention, padded, fwd"
  L["attn_fwd_valid"] = "attention, all keys valid, fwd"
  L["attn_fwd_bwd"] = "attention, padded, fwd+bwd"
  L["pool_mean"] = "padded mean pooling 64x512x256"
  shown = 0
  for (i = 1; i <= 4; i++) if (get("masq", PW[i]) != "" || get("torch-trick", PW[i]) != "") shown = 1
  if (shown) {
    print ""
    print "padded batches (issue 16): masq against the dense tricks and the masked libraries"
    fmtp = "| %-34s | %-9s | %-11s | %-12s | %-9s | %-9s | %-9s | %-10s | %-11s |\n"
    printf fmtp, "workload", "masq", "torch trick", "torch.masked", "numpy.ma", "np where=", "numexpr", "bottleneck", "trick/masq"
    print "|------------------------------------|-----------|-------------|--------------|-----------|-----------|-----------|------------|-------------|"
    for (i = 1; i <= 4; i++) {
      w = PW[i]
      printf fmtp, L[w], fmt(get("masq", w)), fmt(get("torch-trick", w)), fmt(get("torch", w)), fmt(get("numpy", w)), \
        fmt(get("numpy-where", w)), fmt(get("numexpr", w)), fmt(get("bottleneck", w)), \
        (refused("torch-trick", w) ? "refused" : ratio(get("torch-trick", w), get("masq", w), 1))
    }
    print "torch trick: softmax(masked_fill(q@k^T/8, ~mask, -inf), -1) @ v (autograd for fwd+bwd); (x*m).sum(1)/m.sum(1)."
    print "np where=: np.mean(x, 1, where=m); numexpr: sum(x*m, axis=1)/count; bottleneck: nanmean of x with NaN padding."
    split("torch-trick torch numpy numpy-where numexpr bottleneck", PI, " ")
    for (j = 1; j <= 6; j++)
      for (i = 1; i <= 4; i++)
        if ((PI[j] SUBSEP PW[i]) in WHY) printf "  n/a %s %s: %s\n", PI[j], PW[i], WHY[PI[j], PW[i]]
  }

  # --- memory bandwidth
  bw = get("c", "bw_read"); bw50 = get("c", "bw_read_50mb")
  if (bw != "" && bw50 != "") {
    dram = 536870912 / bw / 1e9
    gbs = 50e6 / bw50 / 1e9
    print ""
    printf "memory read bandwidth, one core, int64 sum: %.1f GB/s over 512 MiB (DRAM), %.1f GB/s over 50 MB\n", dram, gbs
    print "(50 MB is what a masked 10^7 workload reads; it can stay in the large L3 of this machine class)"
    print "effective bandwidth = bytes the kernel must touch / time; floor = bytes / the 50 MB bandwidth"
    printf "| %-24s | %-8s | %-8s | %-9s | %-9s |\n", "workload", "MB", "floor", "masq GB/s", "C GB/s"
    print "|--------------------------|----------|----------|-----------|-----------|"
    split("sum_all mean_all amax_all sum_dim0 sum_dim1 mean_dim0 mean_dim1 amax_dim0 amax_dim1 exp_2_1", BW, " ")
    for (i = 1; i <= 10; i++) {
      w = BW[i]
      # reductions read 4 B of data + 1 B of mask an entry; exp reads 4 B and
      # writes 4 B (the result shares the mask)
      bytes = (w == "exp_2_1") ? 80e6 : 50e6
      m = get("masq", w); c = get("c", w)
      printf "| %-24s | %-8.0f | %-8s | %-9s | %-9s |\n", L[w], bytes / 1e6, fmt(bytes / (gbs * 1e9)), \
        (m == "" ? "n/a" : sprintf("%.1f", bytes / m / 1e9)), (c == "" ? "n/a" : sprintf("%.1f", bytes / c / 1e9))
    }
  }

  # --- allocations
  if (NALLOC > 0) {
    print ""
    print "masq heap allocations in one evaluation (counted by masq_bench through the allocator hook):"
    printf "| %-40s | %-11s | %-12s |\n", "workload", "allocations", "MB allocated"
    print "|------------------------------------------|-------------|--------------|"
    for (i = 1; i <= n; i++) {
      w = W[i]
      if (!(w in ALLOCS)) continue
      d = (w == "small_loop") ? 1000 : (w ~ /^ada_/) ? 50 : 1  # per iteration, like its time
      printf "| %-40s | %-11s | %-12s |\n", L[w], sprintf("%.0f", ALLOCS[w] / d), sprintf("%.3f", ABYTES[w] / d / 1e6)
    }
  }

  # --- peak memory of the sparse workloads
  if (("sp_rowsum" in PEAK) || ("sp_spmm" in PEAK) || ("ada_dense" in PEAK)) {
    print ""
    print "masq peak resident memory (VmHWM) since its set-up group began, set-up included:"
    printf "| %-40s | %-8s |\n", "workload", "peak MB"
    print "|------------------------------------------|----------|"
    split("sp_rowsum sp_softmax sp_spmm ada_sparse ada_dense", PW, " ")
    for (i = 1; i <= 5; i++)
      if (PW[i] in PEAK) printf "| %-40s | %-8.0f |\n", L[PW[i]], PEAK[PW[i]]
  }

  # --- the sparse rows on one and two masq threads
  if (get("masq-2t", "sp_rowsum") != "" || get("masq-2t", "sp_spmm") != "") {
    print ""
    print "sparse kernels on threads (masq 1T / 2T: set_num_threads(1) / (2); scipy and C: one thread;"
    print "torch: its default thread count, see the conditions above):"
    printf "| %-40s | %-9s | %-9s | %-9s | %-9s | %-9s | %-11s | %-11s | %-9s |\n", "workload", "masq 1T", "masq 2T", \
      "torch", "scipy", "C loop", "scipy/2T", "torch/2T", "2T/C"
    print "|------------------------------------------|-----------|-----------|-----------|-----------|-----------|-------------|-------------|-----------|"
    split("sp_rowsum sp_softmax sp_spmm", TW, " ")
    for (i = 1; i <= 3; i++) {
      w = TW[i]; m = get("masq", w); m2 = get("masq-2t", w); t = get("torch", w); p = get("numpy", w); c = get("c", w)
      printf "| %-40s | %-9s | %-9s | %-9s | %-9s | %-9s | %-11s | %-11s | %-9s |\n", L[w], fmt(m), fmt(m2), fmt(t), fmt(p), \
        fmt(c), ratio(p, m2, 1), ratio(t, m2, 1), ratio(m2, c, 2)
    }
  }

  # --- the performance targets (docs/PERFORMANCE.md)
  print ""
  print "targets:"
  split("sum_all mean_all amax_all", R, " ")
  for (i = 1; i <= 3; i++) {
    tgt(R[i], "torch", 5, "faster than torch.masked")
    within(R[i], 1.3)
  }
  tgt("exp_2_1", "torch", 10, "faster than torch.masked")
  tgt("softmax_1000", "torch", 3, "faster than torch.masked")
  tgt("softmax_fwd_bwd", "torch", 2, "faster than torch.masked")
  tgt("small_loop", "torch", 100, "faster than torch.masked")
  tgt("small_loop", "numpy", 10, "faster than numpy.ma")
  split("sp_rowsum sp_softmax sp_spmm", SPW, " ")
  print ""
  print "targets of issue 15 (sparse):"
  for (i = 1; i <= 3; i++) {
    tgt(SPW[i], "torch", 2, "faster than torch.sparse")
    if (SPW[i] != "sp_softmax") tgt(SPW[i], "numpy", 2, "faster than scipy.sparse")
    within(SPW[i], 2)
  }
  # the same on two masq threads (scipy and the C loop have one; torch its default)
  for (i = 1; i <= 3; i++) {
    tgt_of("masq-2t", " (2T)", SPW[i], "torch", 2, "faster than torch.sparse")
    if (SPW[i] != "sp_softmax") tgt_of("masq-2t", " (2T)", SPW[i], "numpy", 2, "faster than scipy.sparse")
    within_of("masq-2t", " (2T)", SPW[i], 2)
  }
  sppk = 0
  for (i = 1; i <= 3; i++) if ((SPW[i] in PEAK) && PEAK[SPW[i]] > sppk) sppk = PEAK[SPW[i]]
  printf "  %-72s %-9s %s\n", "CSR 10^6^2 set-up + row sums + softmax + SpMM: peak memory under 0.5 GB", \
    (sppk ? sprintf("%.0f MB", sppk) : "n/a"), (sppk ? (sppk < 500 ? "MET" : "NOT MET") : "n/a")
  as = get("masq", "ada_sparse"); ad = get("masq", "ada_dense")
  printf "  %-72s %-9s %s\n", "Adagrad step 10^7, grad 1%: sparse >= 20x faster than dense masked", \
    ((as == "" || ad == "") ? "n/a" : sprintf("%.1fx", ad / as)), ((as == "" || ad == "") ? "n/a" : (ad / as >= 20 ? "MET" : "NOT MET"))
  print ""
  print "targets of issue 16 (padded batches):"
  tgt("attn_fwd", "torch-trick", 5, "faster than the torch trick")
  m = get("masq", "attn_fwd"); a = get("masq", "attn_fwd_valid")
  printf "  %-72s %-9s %s\n", L["attn_fwd"] ": <= 0.6x masq with every key valid", \
    (m == "" || a == "" ? "n/a" : sprintf("%.2fx", m / a)), (m == "" || a == "" ? "n/a" : (m / a <= 0.6 ? "MET" : "NOT MET"))
  tgt("attn_fwd_bwd", "torch-trick", 3, "faster than the torch trick (autograd)")
  tgt("pool_mean", "torch-trick", 2, "faster than the torch trick")
  # --- masks that make work smaller (issue 16): the mk_ rows
  if (get("masq", "mk_sum_valid") != "" || get("c", "mk_sum_valid") != "") {
    print ""
    print "masks that make work smaller: reductions of 10^7 float32 under an all-valid mask, a padding-shaped one"
    print "(runs of 4096 valid then 4096 masked: half the entries) and an all-masked one. torch x*m: the dense"
    print "trick ((x*m).sum(), (x*m).sum()/m.sum(), masked_fill(~m, -inf).amax()); numpy where=: np.sum/mean/max"
    print "with where=m; C loop: the careful masked loop, which reads every entry whatever the mask holds."
    print "masq/valid: the masq time over the masq all-valid time (masq keeps a validity summary per 4096 entries)."
    fmk = "| %-22s | %-9s | %-12s | %-9s | %-9s | %-12s | %-9s | %-11s |\n"
    printf fmk, "workload", "masq", "torch.masked", "torch x*m", "numpy.ma", "numpy where=", "C loop", "masq/valid"
    print "|------------------------|-----------|--------------|-----------|-----------|--------------|-----------|-------------|"
    split("sum mean amax", MOPS, " "); split("valid pad masked", MK, " ")
    for (i = 1; i <= 3; i++) for (j = 1; j <= 3; j++) {
      w = "mk_" MOPS[i] "_" MK[j]
      printf fmk, MOPS[i] ", " MK[j], fmt(get("masq", w)), fmt(get("torch", w)), fmt(get("torch-dense", w)), \
        fmt(get("numpy", w)), fmt(get("numpy-where", w)), fmt(get("c", w)), ratio(get("masq", w), get("masq", "mk_" MOPS[i] "_valid"), 3)
    }
    print ""
    print "targets of issue 16 (masks that make work smaller):"
    for (i = 1; i <= 3; i++) {
      v = get("masq", "mk_" MOPS[i] "_valid"); p = get("masq", "mk_" MOPS[i] "_pad"); z = get("masq", "mk_" MOPS[i] "_masked")
      what = MOPS[i] " 10^7, padding-shaped half-masked <= 0.6x the time of all-valid"
      if (v == "" || p == "") printf "  %-72s %-9s %s\n", what, "n/a", "n/a"
      else printf "  %-72s %-9s %s\n", what, sprintf("%.2fx", p / v), (p / v <= 0.6 ? "MET" : "NOT MET")
      what = MOPS[i] " 10^7, all-masked >= 20x faster than all-valid"
      if (v == "" || z == "" || z + 0 == 0) printf "  %-72s %-9s %s\n", what, "n/a", "n/a"
      else printf "  %-72s %-9s %s\n", what, sprintf("%.0fx", v / z), (v / z >= 20 ? "MET" : "NOT MET")
    }
  }
  # --- the rest of issue 16: normalization chain, bandwidth, threads, backward, scaling
  if (get("masq", "norm_chain") != "" || get("c", "norm_chain") != "" || get("masq", "scale_00") != "") {
    print ""
    print "normalization chain (x - mean(x, 1, keepdim=true)) / std(x, 1, keepdim=true), masked 4096x1024, half valid:"
    fnc = "| %-9s | %-12s | %-9s | %-9s | %-12s | %-9s | %-7s |\n"
    printf fnc, "masq", "torch.masked", "torch x*m", "numpy.ma", "numpy where=", "C loop", "masq/C"
    print "|-----------|--------------|-----------|-----------|--------------|-----------|---------|"
    w = "norm_chain"
    printf fnc, fmt(get("masq", w)), fmt(get("torch", w)), fmt(get("torch-dense", w)), fmt(get("numpy", w)), \
      fmt(get("numpy-where", w)), fmt(get("c", w)), ratio(get("masq", w), get("c", w), 2)
    split("masq torch torch-dense numpy numpy-where", NI, " ")
    for (j = 1; j <= 5; j++) {
      if ((NI[j] SUBSEP w) in WHY) printf "  n/a %s: %s\n", NI[j], WHY[NI[j], w]
    }
    print ""
    print "scaling: masked sum of n = 10^4 * 2^k float32 (half valid), nanoseconds per element, one thread"
    fsc = "| %-10s | %-10s | %-10s | %-7s |\n"
    printf fsc, "n", "masq ns", "C loop ns", "masq/C"
    print "|------------|------------|------------|---------|"
    for (k = 0; k <= 13; k++) {
      w = sprintf("scale_%02d", k); ne = 10000 * 2 ^ k; tot = 10000 * 2 ^ 13
      m = get("masq", w); c = get("c", w)
      printf fsc, sprintf("%d", ne), (m == "" ? "n/a" : sprintf("%.3f", m / tot * 1e9)), \
        (c == "" ? "n/a" : sprintf("%.3f", c / tot * 1e9)), ratio(m, c, 2)
    }
    print ""
    print "targets of issue 16 (backward, bandwidth, threads, fusion):"
    L["norm_chain"] = "normalization chain, 4096x1024"
    within("softmax_fwd_bwd", 1.5)
    within("norm_chain", 1.5)
    bw50 = get("c", "bw_read_50mb")
    if (bw50 != "") for (i = 1; i <= 3; i++) {
      w = R[i]; m = get("masq", w)
      what = L[w] ", one thread: >= 90% of the 50 MB read bandwidth"
      if (m == "") { printf "  %-72s %-9s %s\n", what, "n/a", "n/a"; continue }
      f = (50e6 / m) / (50e6 / bw50)
      printf "  %-72s %-9s %s\n", what, sprintf("%.0f%%", 100 * f), (f >= 0.9 ? "MET" : "NOT MET")
    }
    for (i = 1; i <= 3; i++) {
      w = R[i]; sp = speedup(w)
      what = L[w] ": two threads >= 1.8x one thread"
      printf "  %-72s %-9s %s\n", what, (sp == "" ? "n/a" : sprintf("%.2fx", sp)), (sp == "" ? "n/a" : (sp >= 1.8 ? "MET" : "NOT MET"))
    }
  }
  print ""
  s = get("masq", "startup")
  printf "  %-72s %-9s %s\n", "start-up (masq -e 1) under 5 ms", fmt(s), (s == "" ? "n/a" : (s < 0.005 ? "MET" : "NOT MET"))
  # the least 2T/1T ratio over the 10^7 workloads
  split("sum_all mean_all amax_all exp_2_1 sum_dim0 sum_dim1 mean_dim0 mean_dim1 amax_dim0 amax_dim1", TT, " ")
  worst = ""; wname = ""
  for (i = 1; i <= 10; i++) {
    sp = speedup(TT[i])
    if (sp == "") continue
    if (worst == "" || sp < worst) { worst = sp; wname = TT[i] }
  }
  if (worst == "") printf "  %-72s %-9s %s\n", "two threads >= 1.6x one thread on 10^7", "n/a", "n/a"
  else printf "  %-72s %-9s %s\n", "two threads >= 1.6x one thread on 10^7 (least: " wname ")", sprintf("%.2fx", worst), (worst >= 1.6 ? "MET" : "NOT MET")

  # --- the Python module (issue 19): bench/py_module_bench.py
  ps = get("masq-py", "py_sum"); po = get("masq-py", "py_own"); pt = get("numpy", "py_turn"); m = get("masq", "sum_all")
  if (ps != "" || po != "" || (("masq-py" SUBSEP "*") in WHY)) {
    print ""
    print "the Python module (issue 19): sum of a 10^7 float32 numpy.ma array, half valid, one masq thread"
    fpy = "| %-56s | %-9s |\n"
    printf fpy, "workload", "time"
    print "|----------------------------------------------------------|-----------|"
    printf fpy, "masq.eval(\"sum(x)\", x=a): new State, wrap, turn, sum", fmt(ps)
    printf fpy, "State.eval(\"sum(x)\") with x set before", fmt(po)
    printf fpy, "masq sum in C (masq_bench sum_all)", fmt(m)
    printf fpy, "the polarity turn alone: np.logical_not(a.mask)", fmt(pt)
    printf fpy, "a.sum() in numpy.ma (py_bench sum_all)", fmt(get("numpy", "sum_all"))
    if (("masq-py" SUBSEP "*") in WHY) print "  n/a masq-py: " WHY["masq-py", "*"]
    print ""
    print "target of issue 19 (Python):"
    what = "masq.eval(\"sum(x)\", x=a) <= masq sum in C + the polarity turn"
    if (ps == "" || m == "" || pt == "") printf "  %-72s %-9s %s\n", what, "n/a", "n/a"
    else printf "  %-72s %-9s %s\n", what, sprintf("%.2fx", ps / (m + pt)), (ps <= m + pt ? "MET" : "NOT MET")
  }
  # --- this tree against BENCH_AGAINST (the base rows), timed alternately
  nb = 0
  for (k in T) { split(k, kk, SUBSEP); if (kk[1] == "base") { BW2[++nb] = kk[2] } }
  if (nb > 0) {
    for (i = 2; i <= nb; i++) { x = BW2[i]; for (j = i - 1; j >= 1 && BW2[j] > x; j--) BW2[j + 1] = BW2[j]; BW2[j + 1] = x }
    print ""
    print "this tree against " against " (masq_bench of both, alternately; > 1.05x: slower, named below):"
    fa = "| %-40s | %-10s | %-10s | %-10s |\n"
    printf fa, "workload", "this tree", against, "this/base"
    print "|------------------------------------------|------------|------------|------------|"
    slow = ""
    for (i = 1; i <= nb; i++) {
      w = BW2[i]; m = get("masq", w); b = get("base", w)
      if (m == "") continue
      printf fa, (w in L) ? L[w] : w, fmt(m), fmt(b), ratio(m, b, 3)
      if (b + 0 > 0 && m / b > 1.05) slow = slow " " w
    }
    print (slow == "" ? "no row slower than " against " by more than 5%" : "slower than " against ":" slow)
  }
}
function tgt(w, other, want, what) { tgt_of("masq", "", w, other, want, what) }
# the figure of masq in impl [mi] (masq: one thread, masq-2t: two), [tag] after the name of the workload
function tgt_of(mi, tag, w, other, want, what,   m, o, r) {
  m = get(mi, w); o = get(other, w)
  if (refused(other, w)) { printf "  %-72s %s\n", L[w] tag ": >= " want "x " what, "refused: reference BLAS"; return }
  if (m == "" || o == "") { printf "  %-72s %-9s %s\n", L[w] tag ": >= " want "x " what, "n/a", "n/a"; return }
  r = o / m
  printf "  %-72s %-9s %s\n", L[w] tag ": >= " want "x " what, sprintf("%.1fx", r), (r >= want ? "MET" : "NOT MET")
}
function within(w, want) { within_of("masq", "", w, want) }
function within_of(mi, tag, w, want,   m, c, r) {
  m = get(mi, w); c = get("c", w)
  if (m == "" || c == "") { printf "  %-72s %-9s %s\n", L[w] tag ": within " want "x of the C loop", "n/a", "n/a"; return }
  r = m / c
  printf "  %-72s %-9s %s\n", L[w] tag ": within " want "x of the C loop", sprintf("%.2fx", r), (r <= want ? "MET" : "NOT MET")
}
'  "$RES" | tee "$TABLE"
[ "$PEERS" = 0 ] || awk -F '\t' -f "$HERE/table_lib.awk" -f "$HERE/peers_table.awk" "$RES" | tee -a "$TABLE"
if has_rows padding; then
  awk -F '\t' -v stat="$STAT" -f "$HERE/table_lib.awk" -f "$HERE/padding_table.awk" "$RES" | tee -a "$TABLE"
fi
if has_rows dask; then
  if [ -f "$OUT/dask_table.md" ]; then tee -a "$TABLE" < "$OUT/dask_table.md"; else echo "no dask table: see $OUT/dask_bench.err"; fi
fi
