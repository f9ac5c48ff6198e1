# peers_table.awk - the table of issue 30's rows (bench/peer_rows.h,
# bench/peers.py) from bench/run.sh's results.tsv (awk -F '\t').
#
# A time is the best (least) of every repetition of every round: noise on
# a shared machine only adds time. masq/torch is masq's time over torch's
# at the same thread count (below 1: masq is faster). A peer whose process
# had the reference BLAS mapped (its BLAS line says "reference") gets no
# ratio: "ratio refused: reference BLAS". check: the largest difference of
# a peer's result from masq's, relative to masq's largest magnitude, over
# every peer process (the tolerance: 1e-4 float32, 1e-2 bfloat16).

# fmt(): table_lib.awk
function best(impl, w) { return ((impl SUBSEP w) in T) ? T[impl, w] : "" }
function gflops(w, t,   base) {
  base = w; sub(/_bf16$/, "", base)
  if (t == "" || !(base in FLOP)) return "-"
  return sprintf("%.1f", FLOP[base] / t / 1e9)
}
# masq over the peer's time, or why not
function ratio(m, impl, w,   p) {
  p = best(impl, w)
  if (KIND[impl] == "reference") return "ratio refused: reference BLAS"
  if (m == "" || p == "" || p + 0 == 0) return "n/a"
  return sprintf("%.2fx", m / p)
}
$1 == "BLAS" { KIND[$2] = $3; DETAIL[$2] = $4 }
# a row's check: the worst status over the peer processes (FAIL, then
# peer-off: masq agrees with float64 on the same inputs, the peer does
# not; then ok; n/a without masq's result), the largest difference
$1 == "CHECK" {
  k = $3
  rank = ($6 == "FAIL") ? 3 : ($6 == "peer-off") ? 2 : ($6 == "ok") ? 1 : 0
  if (!(k in CRANK) || rank > CRANK[k]) { CRANK[k] = rank; CWHY[k] = $2 ": " $7 }
  if ($4 != "NA" && (!(k in CERR) || $4 + 0 > CERR[k])) CERR[k] = $4 + 0
}
$1 == "RESULT" && $5 != "NA" {
  k = $2 SUBSEP $3
  if (!(k in T) || $5 + 0 < T[k]) T[k] = $5 + 0
  # minor page faults a run, the least over the rounds
  if (match($6, /minflt=[0-9]+/)) {
    f = substr($6, RSTART + 7, RLENGTH - 7) + 0
    if (!(k in FLT) || f < FLT[k]) FLT[k] = f
  }
}
$1 == "RESULT" && $5 == "NA" && $6 != "" { WHY[$2 " " $3] = $6 }
END {
  FLOP["mm128"] = 2 * 128 ^ 3; FLOP["mm512"] = 2 * 512 ^ 3
  FLOP["mm1024"] = 2 * 1024 ^ 3; FLOP["mm2048"] = 2 * 2048 ^ 3
  FLOP["bmm"] = 64 * 2 * 128 ^ 3
  FLOP["lin_gelu"] = 2 * 512 * 784 * 1024
  FLOP["mlp"] = 2 * 512 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
  n = split("mm128 mm512 mm1024 mm2048 bmm lin_gelu mlp ln ln_bwd gelu gelu_bwd softmax train1 train10 train100 encoder", W, " ")
  L["mm128"] = "matmul 128^2"; L["mm512"] = "matmul 512^2"; L["mm1024"] = "matmul 1024^2"
  L["mm2048"] = "matmul 2048^2"; L["bmm"] = "bmm 64x128x128 @ 64x128x128"
  L["lin_gelu"] = "linear + gelu 512x784 @ 784x1024"
  L["mlp"] = "MLP forward 512x784-1024-1024-10, gelu"
  L["ln"] = "layer_norm 4096x1024 (weight, bias)"; L["ln_bwd"] = "layer_norm 4096x1024 fwd+bwd"
  L["gelu"] = "gelu 10^7"; L["gelu_bwd"] = "gelu 10^7 fwd+bwd"
  L["softmax"] = "softmax dim 1, 4096x1024"
  L["train1"] = "train.masq step, 1x (B=40, H=16)"; L["train10"] = "train.masq step, 10x (B=400, H=160)"
  L["train100"] = "train.masq step, 100x (B=4000, H=1600)"
  L["encoder"] = "encoder block step, B=16 L<=256 D=64"

  print ""
  print "issue 30: dense rows and whole steps, masq against torch and numpy as their users run them"
  print "(best of all repetitions and rounds; masq/torch below 1: masq faster; GFLOP/s where the row is products)"
  split("torch torch-2t numpy numpy-2t", PI, " ")
  for (j = 1; j <= 4; j++) {
    if (PI[j] in KIND) printf "  BLAS of %-9s %s: %s\n", PI[j] ":", KIND[PI[j]], DETAIL[PI[j]]
    else if ((PI[j] " *") in WHY) printf "  %-17s %s\n", PI[j] ":", WHY[PI[j] " *"]
  }
  for (j = 1; j <= 4; j++)
    if (KIND[PI[j]] == "reference") {
      print "  a peer on the reference BLAS (plain loops): its ratios are refused; install OpenBLAS"
      print "  (sh tools/install-deps.sh bench, or apt-get install libopenblas0-pthread)"
      break
    }
  f = "| %-40s | %-4s | %-2s | %-14s | %-9s | %-7s | %-9s | %-7s | %-10s | %-9s | %-11s |\n"
  printf f, "row", "type", "T", "check", "masq", "GFLOP/s", "torch", "GFLOP/s", "masq/torch", "numpy", "masq/numpy"
  print "|------------------------------------------|------|----|----------------|-----------|---------|-----------|---------|------------|-----------|-------------|"
  for (i = 1; i <= n; i++) for (d = 1; d <= 2; d++) for (th = 1; th <= 2; th++) {
    w = W[i] (d == 2 ? "_bf16" : "")
    sfx = (th == 2 ? "-2t" : "")
    m = best("masq" sfx, w); t = best("torch" sfx, w); p = best("numpy" sfx, w)
    if (m == "" && t == "" && p == "" && !(("masq" sfx " " w) in WHY)) continue
    ck = "n/a"
    if (CRANK[w] > 0) ck = (CRANK[w] == 3 ? "FAIL" : CRANK[w] == 2 ? "peer off" : "ok") \
      ((w in CERR) ? sprintf(" %.0e", CERR[w]) : "")
    printf f, L[W[i]], (d == 2 ? "bf16" : "f32"), th, ck, fmt(m), gflops(w, m), fmt(t), gflops(w, t), \
      ratio(m, "torch" sfx, w), (p == "" ? "-" : fmt(p)), (p == "" ? "-" : ratio(m, "numpy" sfx, w))
  }
  # why a cell is n/a, and checks that failed
  for (k in WHY) if (k ~ /^(masq|torch|numpy)(-2t)? / && k !~ / \*$/) printf "  n/a %s: %s\n", k, WHY[k]
  for (k in CRANK) {
    if (CRANK[k] == 3) printf "  check %s FAILED, masq and a peer disagree beyond the tolerance; %s\n", k, CWHY[k]
    if (CRANK[k] == 2) printf "  check %s: the peer is off, masq is not; %s\n", k, CWHY[k]
    if (CRANK[k] == 0) printf "  check %s n/a: %s\n", k, CWHY[k]
  }

  # page faults: a fresh result's pages cost, on this VM, about as much as
  # an elementwise op's arithmetic; they explain a peer's time that swings
  nf = 0
  for (i = 1; i <= n; i++) for (d = 1; d <= 2; d++) {
    w = W[i] (d == 2 ? "_bf16" : "")
    line = ""
    for (j = 1; j <= 3; j++) {
      split("masq torch numpy", FI, " ")
      if ((FI[j] SUBSEP w) in FLT && FLT[FI[j], w] >= 1000) line = line sprintf(" %s %d", FI[j], FLT[FI[j], w])
    }
    if (line == "") continue
    if (!nf++) print "  minor page faults a run (one thread), where 1000 or more (fresh pages for results):"
    printf "    %s%s:%s\n", L[W[i]], (d == 2 ? " bf16" : ""), line
  }

  # two threads against one on the largest product: about 2x with both
  # cores free; near 1x, another process had the second core
  split("masq torch numpy", TI, " ")
  line = ""
  for (j = 1; j <= 3; j++) {
    a = best(TI[j], "mm2048"); b = best(TI[j] "-2t", "mm2048")
    if (a != "" && b != "") line = line sprintf("%s %s %.2fx", (line == "" ? "" : ","), TI[j], a / b)
  }
  if (line != "") print "  two threads over one, matmul 2048^2 float32 (about 2x on a quiet machine):" line

  print ""
  print "targets of issue 30 (one run; at one and two threads):"
  for (th = 1; th <= 2; th++) {
    sfx = (th == 2 ? "-2t" : "")
    split("mm1024 mm2048", MM, " ")
    for (i = 1; i <= 2; i++) target(MM[i], sfx, th, 0.8, "float32 " L[MM[i]] ": >= 0.8x torch's GFLOP/s", 0)
    for (i = 1; i <= 2; i++) target(MM[i] "_bf16", sfx, th, 0.5, "bfloat16 " L[MM[i]] ": >= 0.5x torch's GFLOP/s", 0)
  }
  target("encoder", "", 1, 0.7, "encoder block step: <= 0.7x torch's time", 1)
  target("train10", "", 1, 1, "train.masq 10x step: <= 1x torch's time", 1)
}
# masq's GFLOP/s over torch's (torch's time / masq's) at least [want], or
# with [bytime], masq's time over torch's at most [want]
function target(w, sfx, th, want, what, bytime,   m, t, r) {
  m = best("masq" sfx, w); t = best("torch" sfx, w)
  what = what " (" th "T)"
  if (KIND["torch" sfx] == "reference") { printf "  %-72s %s\n", what, "refused: reference BLAS"; return }
  if (m == "" || t == "") { printf "  %-72s %-9s %s\n", what, "n/a", "n/a"; return }
  r = bytime ? m / t : t / m
  printf "  %-72s %-9s %s\n", what, sprintf("%.2fx", r), ((bytime ? r <= want : r >= want) ? "MET" : "NOT MET")
}
