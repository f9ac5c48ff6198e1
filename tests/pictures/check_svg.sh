#!/bin/sh
# The pictures' SVG files (show_mask, hist, plot, heatmap with file=) are
# standalone XML that a real renderer draws: each is parsed as XML, then
# rsvg-convert (Debian's librsvg2-bin) turns it into a PNG, and the PNG's
# pixels are read back to check that it shows what it should: valid cells
# coloured and masked-out ones not, the bars' heights, the gap a masked
# point leaves in a line. Also the command line's terminal width: COLUMNS
# sets the width of a picture.
# Usage: sh tests/pictures/check_svg.sh path/to/masq
# Skips the rendering (with a message) when rsvg-convert is missing; the
# last line is always "pictures: N passed, N failed".
if [ -z "$1" ]; then echo "usage: $0 path/to/masq" >&2; exit 2; fi
masq=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
PYTHONPATH=$(cd "$(dirname "$0")/.." && pwd) # tests/checks.py
export PYTHONPATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export LC_ALL=C NO_COLOR=1
unset COLUMNS
render=1
if ! command -v rsvg-convert >/dev/null 2>&1; then
  echo "pictures: SKIP rendering (no rsvg-convert; apt-get install librsvg2-bin)"
  render=0
fi
cat > pics.masq <<'MASQ'
# a 2 x 2 mask: valid on the diagonal
# (its column names need escaping: < & > " and a control character)
show_mask(masked(ones([2, 2]), tensor([[true, false], [false, true]])), file="mask.svg",
          labels=["<a & b>", "\"q\"\x01"])
# 4 bins holding 1, 2, 3, 4 entries
hist(tensor([0.5, 1.5, 1.5, 2.5, 2.5, 2.5, 3.5, 3.5, 3.5, 3.5]), bins=4, file="hist.svg")
# a rising line whose middle third is masked out
plot(masked(arange(0, 30) * 1.0, (arange(0, 30) < 10) | (arange(0, 30) >= 20)), file="plot.svg")
# 2 x 2: the least, the greatest, a masked-out entry, a NaN
heatmap(masked(tensor([[0.0, 1.0], [5.0, nan]]), tensor([[true, true], [false, true]])), file="heat.svg")
# like Stocks.csv: 524 rows of 7, 133 of them empty (every fourth from row 1,
# rows 0 and 523); height=524 draws a row per unit, the default 400 blocks
# of 2 rows, partly valid (light) wherever one holds an empty row
r = arange(524).reshape([524, 1]) * ones([1, 7], dtype="int64")
empty = (r % 4 == 1) | (r == 0) | (r == 523)
show_mask(masked(ones([524, 7]), ~empty), height=524, file="stocks.svg")
show_mask(masked(ones([524, 7]), ~empty), file="stocks400.svg")
# a tall table as a heatmap: cells no more than 3 times as high as wide, the
# legend at their right; a title of 130 characters wraps onto the canvas
heatmap(masked(arange(0, 2000 * 54).reshape([2000, 54]) * 1.0, ones([2000, 54]) > 0),
        file="tall.svg", title="World Bank fertility rates, 54 columns of 2000 rows, a title of the kind that runs off a canvas when it is not wrapped")
MASQ
"$masq" pics.masq > out.txt 2>&1
status=$?
/usr/bin/python3 - "$masq" "$status" "$render" <<'PY'
import os, struct, subprocess, sys, zlib
import xml.dom.minidom

masq, status, render = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
import checks
from checks import check

def png_pixels(path):
    """RGBA rows of an 8-bit RGBA or RGB PNG (what rsvg-convert writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride, rows, prev = w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return rows

def is_white(p): return min(p) >= 245
def is_blue(p): return p[2] > 120 and p[0] < 90        # #2b6ca3
def is_light(p): return 150 <= p[0] < 200 and p[2] > 200   # #a9c8e4
def is_grey(p): return abs(p[0] - p[1]) < 8 and abs(p[1] - p[2]) < 8 and 200 <= p[0] < 250

check("masq wrote the SVGs", status == 0, open("out.txt").read())
check("nothing printed with file=", os.path.getsize("out.txt") == 0)
pics = {}
for name in ("mask", "hist", "plot", "heat", "stocks", "stocks400", "tall"):
    svg = name + ".svg"
    if not os.path.exists(svg):
        check(svg + " written", False)
        continue
    try:
        doc = xml.dom.minidom.parse(svg)
        root = doc.documentElement
        check(svg + " is SVG", root.tagName == "svg" and
              root.getAttribute("xmlns") == "http://www.w3.org/2000/svg")
    except Exception as e:
        check(svg + " is XML", False, str(e))
        continue
    if not render:
        continue
    zoom = ["-z", "4"] if name == "stocks400" else []  # its blocks are 1.53 units high
    r = subprocess.run(["rsvg-convert"] + zoom + [svg, "-o", name + ".png"], capture_output=True, text=True)
    check(svg + " renders", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        pics[name] = png_pixels(name + ".png")

# The plotting area is 600 x 400 from (70, 40) in every picture.
L, T, W, H = 70, 40, 600, 400
if "mask" in pics:
    p = pics["mask"]
    check("mask: valid cells are coloured",
          is_blue(p[T + 100][L + 150]) and is_blue(p[T + 300][L + 450]))
    check("mask: masked-out cells are blank",
          is_white(p[T + 100][L + 450]) and is_white(p[T + 300][L + 150]))
    names = [t.firstChild.data for t in xml.dom.minidom.parse("mask.svg").getElementsByTagName("text")
             if t.getAttribute("transform")]
    check("mask: the column names, escaped and cleaned", names == ['<a & b>', '"q"?'], str(names))
if "hist" in pics:
    p = pics["hist"]
    def bar_top(k):  # the first coloured row in the middle of bar k
        x = L + int((k + 0.45) * W / 4)
        for y in range(T, T + H + 1):
            if is_blue(p[y][x]):
                return y
        return None
    tops = [bar_top(k) for k in range(4)]
    want = [T + H - H * n // 4 for n in (1, 2, 3, 4)]
    check("hist: bar heights are 1:2:3:4",
          all(t is not None and abs(t - w) <= 2 for t, w in zip(tops, want)), "%s vs %s" % (tops, want))
if "plot" in pics:
    p = pics["plot"]
    def coloured(x0, x1):
        return any(is_blue(p[y][x]) for x in range(x0, x1) for y in range(T, T + H + 1))
    # x 0..29 over 600 units: points 0-9 end near x 186, 20-29 start near 414
    check("plot: the line is drawn before and after the gap", coloured(L + 10, L + 170) and coloured(L + 430, L + 590))
    check("plot: the masked-out points leave a gap", not coloured(L + 200, L + 400))
if "heat" in pics:
    p = pics["heat"]
    # 2 x 2 cells of 40 units (the cap) from (70, 40)
    dark, bright, masked, nan = p[T + 10][L + 10], p[T + 10][L + 50], p[T + 50][L + 20], p[T + 50][L + 60]
    check("heatmap: the least is dark, the greatest bright", sum(dark) < 250 and sum(bright) > 450, "%s %s" % (dark, bright))
    check("heatmap: a masked-out cell is light grey", is_grey(masked), str(masked))
    check("heatmap: a NaN cell is red", nan[0] > 200 and nan[1] < 60 and nan[2] < 60, str(nan))

empty = [r for r in range(524) if r % 4 == 1 or r in (0, 523)]
def drop(name):
    """How far down a picture's drawing moved under a header of several lines."""
    g = xml.dom.minidom.parse(name + ".svg").getElementsByTagName("g")
    return int(g[0].getAttribute("transform").split()[1].rstrip(")")) if g else 0

if "stocks" in pics:
    p = pics["stocks"]  # 524 units high: row r at y T + r
    T = 40 + drop("stocks")
    rows = [p[T + r][L + 300] for r in range(524)]
    bad = [r for r in range(1, 523) if (not is_white(rows[r]) if r in empty else not is_blue(rows[r]))]
    check("stocks, a row per unit: each of the 133 empty rows is blank, the others dark", not bad, str(bad[:10]))
if "stocks400" in pics:
    p = pics["stocks400"]  # 262 blocks of 2 rows in 400 units, drawn 4 times as big
    T = 40 + drop("stocks400")  # its header takes two lines
    def shade(b):
        return p[int(4 * (T + (b + 0.5) * H / 262))][4 * (L + 300)]
    holes = [sum(r in empty for r in (2 * b, 2 * b + 1)) for b in range(262)]
    want = [(is_blue, is_light, is_white)[n] for n in holes]
    bad = [b for b in range(262) if not want[b](shade(b))]
    check("stocks, blocks of 2 rows: dark, light where one row is empty, blank where both", not bad,
          str([(b, shade(b)) for b in bad[:5]]))

if "tall" in pics:
    doc = xml.dom.minidom.parse("tall.svg")
    width = int(doc.documentElement.getAttribute("width"))
    texts = [(t.getAttribute("font-weight") == "bold", t.firstChild.data)
             for t in doc.getElementsByTagName("text") if t.getAttribute("x") == "10"]
    check("tall: the title is bold, wrapped on two lines", [b for b, _ in texts].count(True) == 2, str(texts))
    check("tall: each title or header line fits the canvas (9 or 7 units a character)",
          all(len(s) * (9 if b else 7) <= width - 20 for b, s in texts), str(texts))
    rects = [r for r in doc.getElementsByTagName("rect") if r.getAttribute("x")]
    cells = [r for r in rects if float(r.getAttribute("x")) < 670 and float(r.getAttribute("width")) < 40]
    cw, ch = float(cells[0].getAttribute("width")), float(cells[0].getAttribute("height"))
    check("tall: cells no more than 3 times as high as wide", ch <= 3 * cw + 1e-9 and cw <= 3 * ch + 1e-9, "%s x %s" % (cw, ch))
    right = max(float(r.getAttribute("x")) + float(r.getAttribute("width")) for r in cells)
    check("tall: the cells fill the 600 units across (square cells made a strip 216 wide)",
          right - 70 >= 599, str(right))
    legend = [r for r in rects if r.getAttribute("width") == "16.00"]
    check("tall: the legend's 9 shades stand right of the cells, from their top",
          len(legend) == 9 and all(float(r.getAttribute("x")) > right for r in legend)
          and min(float(r.getAttribute("y")) for r in legend) == 40, str(len(legend)))

# The command line's width: COLUMNS, else 80 when not a terminal.
def widest(env):
    e = dict(os.environ)
    e.pop("COLUMNS", None)
    e.update(env)
    out = subprocess.run([masq, "-e", "plot(arange(0, 10))"], capture_output=True, text=True, env=e).stdout
    return max(len(l) for l in out.splitlines()[1:])
check("COLUMNS=44 draws 44 wide", widest({"COLUMNS": "44"}) == 44)
check("no COLUMNS, not a terminal: 80 wide", widest({}) == 80)
check("COLUMNS that is not a number is ignored", widest({"COLUMNS": "wide"}) == 80)
checks.report("pictures")
PY
