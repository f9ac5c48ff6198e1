#!/usr/bin/env python3
"""Line and branch coverage of the library from gcov's own summaries.

usage: summary.py OBJDIR     (from the top of the tree)
Runs `gcov -b -n` on every library source compiled into OBJDIR (the
objects of `make coverage`) and prints coverage per folder and per file,
lowest line coverage first, then the totals. Generated sources (the
lexer and parser in build/gen) are listed apart and left out of the
totals: their coverage says more about re2c and Bison than about masq.
"""
import os
import re
import subprocess
import sys

LIBRARY = ("core", "runtime", "vm", "parser", "stdlib", "api")


def gcov_summary(source, obj):
    """(lines, lines run, branches, branches taken) of one source file."""
    out = subprocess.run(["gcov", "-b", "-n", "-o", obj, source],
                         capture_output=True, text=True).stdout
    # gcov reports the file and then each header it includes; keep the
    # block for the source itself.
    blocks = out.split("File '")
    for b in blocks[1:]:
        name = b.split("'", 1)[0]
        if os.path.normpath(name) != os.path.normpath(source):
            continue
        def pct_of(label):
            m = re.search(label + r":([0-9.]+)% of (\d+)", b)
            return (float(m.group(1)), int(m.group(2))) if m else (0.0, 0)
        lp, ln = pct_of("Lines executed")
        bp, bn = pct_of("Taken at least once")
        return ln, round(lp * ln / 100), bn, round(bp * bn / 100)
    return None


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def main():
    objdir = sys.argv[1]
    rows, generated = [], []
    for folder in LIBRARY:
        for f in sorted(os.listdir(folder)):
            if not f.endswith(".c"):
                continue
            src = os.path.join(folder, f)
            obj = os.path.join(objdir, folder, f[:-2] + ".o")
            s = gcov_summary(src, obj)
            if s:
                rows.append((folder, src) + s)
    for f in ("lexer.c", "parser.c"):
        obj = os.path.join(objdir, "gen", f[:-2] + ".o")
        src = os.path.normpath(os.path.join(objdir, "..", "..", "gen", f))
        s = gcov_summary(src, obj)
        if s:
            generated.append(("gen", src) + s)

    def line(name, ln, lr, bn, bt):
        return "  %-28s lines %6.1f%% (%5d/%5d)  branches %6.1f%% (%5d/%5d)" % (
            name, pct(lr, ln), lr, ln, pct(bt, bn), bt, bn)

    print("coverage of the library (gcov -b; branches: taken at least once)")
    print("per folder:")
    folders = {}
    for folder, _, ln, lr, bn, bt in rows:
        t = folders.setdefault(folder, [0, 0, 0, 0])
        for i, v in enumerate((ln, lr, bn, bt)):
            t[i] += v
    for folder, t in sorted(folders.items(), key=lambda kv: pct(kv[1][1], kv[1][0])):
        print(line(folder + "/", *t))
    print("per file, lowest line coverage first:")
    for folder, src, ln, lr, bn, bt in sorted(rows, key=lambda r: (pct(r[3], r[2]), r[1])):
        print(line(src, ln, lr, bn, bt))
    if generated:
        print("generated (not in the totals):")
        for _, src, ln, lr, bn, bt in generated:
            print(line(os.path.relpath(src), ln, lr, bn, bt))
    tot = [sum(r[i] for r in rows) for i in range(2, 6)]
    print(line("TOTAL", *tot))


if __name__ == "__main__":
    main()
