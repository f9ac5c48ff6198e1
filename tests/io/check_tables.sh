#!/bin/sh
# Tables against pandas on three real files that Debian packages ship
# (issue 33's "Done when"): the World Bank fertility rates and the weekly
# Mauna Loa CO2 series of python3-statsmodels, matplotlib's monthly stock
# prices (python-matplotlib-data). Each loads in masq with at most one
# option (Stocks.csv: comment="#"), and for every column pandas reads as
# numbers: the same dtype (int64 / float64), count, mean, std with ddof 0
# and 1, median and the 0.1, 0.25, 0.5, 0.75, 0.9 quantiles (linear, as
# pandas), each within 1e-12 relative (measured: see docs/IO.md); the
# same column names, rows and valid cells of every column, text included;
# and grouped means: co2 by year (date // 10000), fertility's 1960, 1990
# and 2012 by the initial of the country's name (a text key), Stocks' IBM,
# AMZN and ^GSPC by the year of their ISO date (date_part).
# Usage: sh tests/io/check_tables.sh path/to/masq
# Without pandas or the data packages it prints a SKIP line and
# "io-tables: 0 passed, 0 failed, 1 skipped".
SUITE=io-tables
py=/usr/bin/python3
if [ -z "$1" ]; then echo "usage: $0 path/to/masq" >&2; exit 2; fi
masq=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
sm=/usr/lib/python3/dist-packages/statsmodels/datasets
fert=$sm/fertility/fertility.csv
co2=$sm/co2/co2.csv
stocks=/usr/share/matplotlib/mpl-data/sample_data/Stocks.csv
why=""
"$py" -c "import pandas" 2>/dev/null || why="no pandas for $py: apt-get install python3-pandas"
[ -f "$fert" ] && [ -f "$co2" ] || why="${why:+$why; }no $sm: apt-get install python3-statsmodels"
[ -f "$stocks" ] || why="${why:+$why; }no $stocks: apt-get install python-matplotlib-data"
if [ -n "$why" ]; then
  echo "$SUITE: SKIP ($why)"
  echo "$SUITE: 0 passed, 0 failed, 1 skipped"
  exit 0
fi
PYTHONPATH=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH LC_ALL=C NO_COLOR=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

cat >stats.masq <<'MASQ'
# One line a figure: file|column|statistic|value.
qs = tensor([0.1, 0.25, 0.5, 0.75, 0.9], dtype="float64")
fn stats(tag, t) {
  print(format("{}|*|rows|{}", tag, len(t)))
  for c in t.columns {
    x = t[c]
    if type(x) == "list" {
      n = 0
      for s in x { if s != none { n = n + 1 } }
      print(format("{}|{}|count|{}", tag, c, n))
      continue
    }
    print(format("{}|{}|dtype|{}", tag, c, x.dtype))
    print(format("{}|{}|count|{}", tag, c, item(count(x))))
    if item(count(x)) == 0 { continue }
    x = double(x)
    print(format("{}|{}|mean|{:.17g}", tag, c, item(mean(x))))
    print(format("{}|{}|std0|{:.17g}", tag, c, item(std(x, correction=0))))
    if item(count(x)) > 1 { print(format("{}|{}|std1|{:.17g}", tag, c, item(std(x, correction=1)))) }
    q = quantile(x, qs)
    for k in range(5) { print(format("{}|{}|q{}|{:.17g}", tag, c, k, item(q[k]))) }
  }
}
fn groups(tag, g, by) {
  for c in g.columns {
    if c == by { continue }
    for r in range(len(g)) {
      v = g[c][r]
      if item(count(v)) == 1 { print(format("{}|{}@{}|gmean|{:.17g}", tag, c, g[by][r], item(v))) }
    }
  }
}
fert = load_csv(args[0])
co2 = load_csv(args[1])
stocks = load_csv(args[2], comment="#")
stats("fertility", fert)
stats("co2", co2)
stats("stocks", stocks)
co2["year"] = co2["date"] // 10000
groups("co2", group(co2, "year", mean, "co2"), "year")
initial = []
for n in fert["Country Name"] { append(initial, n[0]) }
fert["initial"] = initial
groups("fertility", group(fert, "initial", mean, ["1960", "1990", "2012"]), "initial")
stocks["year"] = date_part(stocks["Date"], "year")
groups("stocks", group(stocks, "year", mean, ["IBM", "AMZN", "^GSPC"]), "year")
MASQ
"$masq" stats.masq "$fert" "$co2" "$stocks" >masq.txt 2>masq.err
echo "masq exit $?" >>masq.err

"$py" - "$fert" "$co2" "$stocks" <<'PY'
import math, sys
import pandas as pd
import checks
from checks import check

err = open("masq.err").read()
check("masq runs the statistics", err.strip().endswith("masq exit 0"), err.strip()[-400:])
got = {}
for line in open("masq.txt"):
    tag, col, stat, val = line.rstrip("\n").split("|")
    got[(tag, col, stat)] = val

worst = [0.0, ""]
def close(name, key, want):
    have = got.get(key)
    if have is None:
        check(name, False, "masq gave no %s" % (key,))
        return
    h = float(have)
    if math.isnan(want) and math.isnan(h):
        check(name, True)
        return
    rel = abs(h - want) / max(abs(want), 1e-300)
    if rel > worst[0]:
        worst[0], worst[1] = rel, "%s %s" % (key, want)
    check(name, rel <= 1e-12, "masq %r, pandas %r" % (have, want))

def table(tag, df):
    check(tag + " rows", got.get((tag, "*", "rows")) == str(len(df)))
    for c in df.columns:
        s = df[c]
        check("%s %s count" % (tag, c), got.get((tag, c, "count")) == str(int(s.count())),
              "masq %s, pandas %d" % (got.get((tag, c, "count")), s.count()))
        if s.dtype.kind not in "if":
            continue
        check("%s %s dtype" % (tag, c), got.get((tag, c, "dtype")) == str(s.dtype),
              "masq %s, pandas %s" % (got.get((tag, c, "dtype")), s.dtype))
        if s.count() == 0:
            continue
        s = s.astype("float64")
        close("%s %s mean" % (tag, c), (tag, c, "mean"), s.mean())
        close("%s %s std ddof 0" % (tag, c), (tag, c, "std0"), s.std(ddof=0))
        if s.count() > 1:
            close("%s %s std ddof 1" % (tag, c), (tag, c, "std1"), s.std(ddof=1))
        for k, q in enumerate([0.1, 0.25, 0.5, 0.75, 0.9]):
            close("%s %s quantile %g" % (tag, c, q), (tag, c, "q%d" % k), s.quantile(q))
        close("%s %s median" % (tag, c), (tag, c, "q2"), s.median())

fert = pd.read_csv(sys.argv[1])
co2 = pd.read_csv(sys.argv[2])
stocks = pd.read_csv(sys.argv[3], comment="#")
table("fertility", fert)
table("co2", co2)
table("stocks", stocks)
g = co2.groupby(co2.date // 10000)["co2"].mean()
for year, v in g.items():
    if not math.isnan(v):
        close("co2 mean of %d" % year, ("co2", "co2@%d" % year, "gmean"), v)
g = fert.groupby(fert["Country Name"].str[0])[["1960", "1990", "2012"]].mean()
for initial, row in g.iterrows():
    for c in ["1960", "1990", "2012"]:
        if not math.isnan(row[c]):
            close("fertility %s mean of %s" % (c, initial), ("fertility", "%s@%s" % (c, initial), "gmean"), row[c])
d = pd.to_datetime(stocks.Date)
g = stocks.groupby(d.dt.year)[["IBM", "AMZN", "^GSPC"]].mean()
for year, row in g.iterrows():
    for c in ["IBM", "AMZN", "^GSPC"]:
        if not math.isnan(row[c]):
            close("stocks %s mean of %d" % (c, year), ("stocks", "%s@%d" % (c, year), "gmean"), row[c])
print("io-tables: largest relative difference from pandas %.3g (%s)" % tuple(worst))
checks.report("io-tables")
PY
