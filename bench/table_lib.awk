# table_lib.awk - functions the tables of bench/run.sh share (loaded with
# -f before a table's own program: peers_table.awk, padding_table.awk).

# a time in seconds, in the unit that reads best
function fmt(t) {
  if (t == "") return "n/a"
  if (t >= 1) return sprintf("%.2f s", t)
  if (t >= 0.01) return sprintf("%.1f ms", t * 1e3)
  if (t >= 0.001) return sprintf("%.2f ms", t * 1e3)
  return sprintf("%.1f us", t * 1e6)
}

# The median of A[1..n] (sorts A in place: an insertion sort, n is a few rounds).
function median(A, n,   i, j, x) {
  for (i = 2; i <= n; i++) { x = A[i]; for (j = i - 1; j >= 1 && A[j] > x; j--) A[j + 1] = A[j]; A[j + 1] = x }
  return (n % 2) ? A[(n + 1) / 2] : (A[n / 2] + A[n / 2 + 1]) / 2
}
