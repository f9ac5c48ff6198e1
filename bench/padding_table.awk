# padding_table.awk - the table and targets of issue 31's padding rows
# (bench/pad_rows.h, bench/pad_bench.py) from bench/run.sh's results.tsv
# (awk -F '\t' -v stat=median|min -f table_lib.awk -f padding_table.awk).
#
# A figure is the median of the rounds' medians (stat=min: the least of
# their minimums), as run.sh's first table. padded/valid: masq's time on
# the padded batch over masq's time on the same data under an all-valid
# mask (the issue's targets: <= 0.6x at 50% valid, <= 0.2x at 10%).
# masq/torch: masq's time over torch's dense trick on the same padded
# batch (target <= 0.5, masq at least 2x faster, for the reductions,
# softmax and layer_norm).

# fmt(), median(): table_lib.awk
function get(impl, w) { return ((impl SUBSEP w) in T) ? T[impl, w] : "" }
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "n/a" : sprintf("%.2fx", a / b) }
# one target line: [what], the ratio a/b, met when at most [want]
function target(what, a, b, want) {
  if (a == "" || b == "" || b + 0 == 0) { printf "  %-72s %-9s %s\n", what, "n/a", "n/a"; return }
  printf "  %-72s %-9s %s\n", what, sprintf("%.2fx", a / b), (a / b <= want ? "MET" : "NOT MET")
  NT++
  if (a / b <= want) NMET++
}
$1 == "BLAS" { KIND[$2] = $3 }
$1 == "RESULT" && ($3 ~ /^pad_/ || ($2 == "torch-trick" && $3 == "*")) {
  ANY = 1
  if ($4 == "NA") { if ($6 != "") WHY[$2 " " $3] = $6; next }
  k = $2 SUBSEP $3
  NV[k]++
  V[k, NV[k]] = (stat == "min") ? $5 + 0 : $4 + 0
}
END {
  for (k in NV) {
    c = NV[k]
    for (i = 1; i <= c; i++) S[i] = V[k, i]
    T[k] = median(S, c)
    if (stat == "min") T[k] = S[1]  # median() sorted S
  }
  if (!ANY) exit
  nf = split("sum_along sum_across mean softmax chain ln matmul softmax_fb ln_fb chain_fb", F, " ")
  L["sum_along"] = "sum along the padded dim"
  L["sum_across"] = "sum across the padded dim"
  L["mean"] = "mean of everything"
  L["softmax"] = "softmax along the padded dim"
  L["chain"] = "exp(x) * 2 + 1"
  L["ln"] = "layer_norm over 64 of padded rows"
  L["matmul"] = "matmul @ [64, 64], padded rows"
  L["softmax_fb"] = "softmax fwd+bwd"
  L["ln_fb"] = "layer_norm fwd+bwd"
  L["chain_fb"] = "exp(x) * 2 + 1 fwd+bwd"
  TORCH_TGT = " sum_along sum_across mean softmax ln "
  LAY["bm"] = "[B, L]"; LAY["tm"] = "[L, B]"
  print ""
  print "padding (issue 31): a batch padded to random per-row lengths, one thread; 4000 x 4096 float32,"
  print "layer_norm and matmul 251 x 1019 x 64; [B, L] batch-major, [L, B] time-major (the transpose, contiguous)."
  print "valid: all-valid mask; 50%: lengths uniform in [0, L]; 10%: uniform in [0, L/5]. x/valid: the padded"
  print "time over the all-valid time; torch: its dense trick on the padded batch (bench/pad_bench.py)."
  fr = "| %-38s | %-6s | %-9s | %-9s | %-8s | %-9s | %-8s | %-9s | %-10s | %-9s | %-10s |\n"
  printf fr, "op", "layout", "valid", "50%", "50/valid", "10%", "10/valid", "torch 50%", "masq/torch", "torch 10%", "masq/torch"
  print "|----------------------------------------|--------|-----------|-----------|----------|-----------|----------|-----------|------------|-----------|------------|"
  for (i = 1; i <= nf; i++) for (l = 1; l <= 2; l++) {
    lay = (l == 1) ? "bm" : "tm"
    b = "pad_" F[i] "_" lay
    v = get("masq", b "_v"); h = get("masq", b "_50"); t = get("masq", b "_10")
    th = get("torch-trick", b "_50"); tt = get("torch-trick", b "_10")
    printf fr, L[F[i]], LAY[lay], fmt(v), fmt(h), ratio(h, v), fmt(t), ratio(t, v), fmt(th), ratio(h, th), fmt(tt), ratio(t, tt)
  }
  if (KIND["torch"] != "" && KIND["torch"] != "openblas")
    print "note: torch's BLAS here is " KIND["torch"] ", not OpenBLAS (the matmul rows' torch figures)"
  for (k in WHY) print "  n/a " k ": " WHY[k]
  print ""
  print "targets of issue 31 (padding, one thread):"
  for (i = 1; i <= nf; i++) for (l = 1; l <= 2; l++) {
    lay = (l == 1) ? "bm" : "tm"
    b = "pad_" F[i] "_" lay
    v = get("masq", b "_v")
    target(L[F[i]] " " LAY[lay] ", 50% valid: <= 0.6x all-valid", get("masq", b "_50"), v, 0.6)
    target(L[F[i]] " " LAY[lay] ", 10% valid: <= 0.2x all-valid", get("masq", b "_10"), v, 0.2)
  }
  for (i = 1; i <= nf; i++) {
    if (!index(TORCH_TGT, " " F[i] " ")) continue
    for (l = 1; l <= 2; l++) {
      lay = (l == 1) ? "bm" : "tm"
      b = "pad_" F[i] "_" lay
      target(L[F[i]] " " LAY[lay] ", 50%: masq/torch trick <= 0.5", get("masq", b "_50"), get("torch-trick", b "_50"), 0.5)
      target(L[F[i]] " " LAY[lay] ", 10%: masq/torch trick <= 0.5", get("masq", b "_10"), get("torch-trick", b "_10"), 0.5)
    }
  }
  printf "  padding targets met: %d of %d with figures\n", NMET, NT
}
