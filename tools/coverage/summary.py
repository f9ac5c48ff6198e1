#!/usr/bin/env python3
"""Line and branch coverage of the library, from gcov's JSON records.

usage: summary.py OBJDIR [--min-branches PCT]     (from the top of the tree)

Runs `gcov -b -j -t` on every object of `make coverage` (OBJDIR: its
build/cov/obj) and prints coverage per folder, per room (the
sub-folders of runtime/ and stdlib/) and per file, the files with the most
branches never taken first, then the totals. With --min-branches
it exits 1 when the library's branch coverage is below PCT.

What counts, and how:
- The library is every source file the objects were compiled from that
  lives in a library folder: the .c files, the inline functions of the
  headers (a header's function compiled into several objects counts once:
  a line or a branch is covered when any object covered it), and the
  hand-written parts of the front end: parser/parser.y's actions and
  lexer/lexer.re's (the coverage build runs re2c without -i, so its
  #line directives point there).
- A branch is one outcome of a conditional jump, counted in every
  function it was compiled into: a kernel that a macro instantiates once
  per dtype and op has its branches once per instantiation, as the
  machine runs them. (gcov's text summary leaves out the branches of
  functions that start on one line, which is every macro-made kernel:
  it would count a file of 2 000 such branches as 100.)
- A line is a source line: covered when any function on it ran it.
- What re2c and Bison wrote themselves (the scanner's automaton, the
  parser's tables and skeleton) is listed apart, with a total that
  includes it, and stays out of the library's figure: its branches are
  one per automaton state and byte range, and say more about the
  generators than about masq.
"""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

LIBRARY = ("core", "runtime", "vm", "lexer", "parser", "stdlib", "api")


def gcov_json(obj, src):
    out = subprocess.run(["gcov", "-b", "-j", "-t", "-o", obj, src],
                         capture_output=True, text=True).stdout
    return json.loads(out)["files"] if out.strip() else []


def objects(objdir):
    """(object, source) of every object in OBJDIR."""
    for root, _, files in os.walk(objdir):
        for f in sorted(files):
            if not f.endswith(".o"):
                continue
            obj = os.path.join(root, f)
            rel = os.path.relpath(obj, objdir)[:-2] + ".c"
            if rel.startswith("gen" + os.sep):
                # the generated sources: the coverage build's lexer, or
                # the shared build/gen parser
                cov_gen = os.path.join(objdir, "..", rel)
                src = cov_gen if os.path.exists(cov_gen) else os.path.join(objdir, "..", "..", rel)
                yield obj, os.path.normpath(src)
            else:
                yield obj, rel


def where(name):
    """'lib' (a library folder), 'gen' (generated) or None (not ours)."""
    if os.path.isabs(name):
        return None
    if name.split(os.sep)[0] in LIBRARY:
        return "lib"
    if os.sep + "gen" + os.sep in os.sep + name:
        return "gen"
    return None


def collect(objdir):
    lines, branches = {}, {}  # (file, line) -> run; (file, line, fn, n) -> [taken]
    pairs = list(objects(objdir))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: gcov_json(*p), pairs))
    for files in results:
        for f in files:
            name = os.path.normpath(f["file"])
            if where(name) is None:
                continue
            for ln in f["lines"]:
                key = (name, ln["line_number"])
                lines[key] = lines.get(key, False) or ln["count"] > 0
                if not ln["branches"]:
                    continue
                n = len(ln["branches"])
                bkey = (name, ln["line_number"], ln.get("function_name"), n)
                prev = branches.get(bkey, [False] * n)
                branches[bkey] = [p or b["count"] > 0 for p, b in zip(prev, ln["branches"])]
    per = {}
    for (name, _), run in lines.items():
        t = per.setdefault(name, [0, 0, 0, 0])
        t[0] += 1
        t[1] += run
    for (name, _, _, n), taken in branches.items():
        t = per.setdefault(name, [0, 0, 0, 0])
        t[2] += n
        t[3] += sum(taken)
    return per


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def row(name, t):
    ln, lr, bn, bt = t
    return "  %-30s lines %6.1f%% (%5d/%5d)  branches %6.1f%% (%5d/%5d, %4d never taken)" % (
        name, pct(lr, ln), lr, ln, pct(bt, bn), bt, bn, bn - bt)


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def rooms(lib):
    """The totals per room of the folders that have rooms: "runtime/tensor/"
    for a file in a sub-folder, "stdlib/ (top)" for one at its folder's top."""
    split = {n.split(os.sep)[0] for n in lib if n.count(os.sep) > 1}
    out = {}
    for n, t in lib.items():
        parts = n.split(os.sep)
        if parts[0] not in split:
            continue
        key = parts[0] + "/" + (parts[1] + "/" if len(parts) > 2 else " (top)")
        out[key] = add(out.get(key, [0] * 4), t)
    return out


def main():
    args = sys.argv[1:]
    minimum = None
    if "--min-branches" in args:
        i = args.index("--min-branches")
        minimum = float(args[i + 1])
        del args[i:i + 2]
    per = collect(args[0])
    lib = {n: t for n, t in per.items() if where(n) == "lib"}
    gen = {n: t for n, t in per.items() if where(n) == "gen"}

    print("coverage of the library (gcov -b; a branch is taken at least once, "
          "counted in every function it was compiled into)")
    print("per folder:")
    folders = {}
    for n, t in lib.items():
        folders[n.split(os.sep)[0] + "/"] = add(folders.get(n.split(os.sep)[0] + "/", [0] * 4), t)
    for name, t in sorted(folders.items(), key=lambda kv: pct(kv[1][3], kv[1][2])):
        print(row(name, t))
    print("per room (the sub-folders of runtime/ and stdlib/, docs/HACKING.md):")
    for name, t in sorted(rooms(lib).items(), key=lambda kv: pct(kv[1][3], kv[1][2])):
        print(row(name, t))
    print("per file, most branches never taken first:")
    for name, t in sorted(lib.items(), key=lambda kv: (kv[1][3] - kv[1][2], kv[0])):
        print(row(name, t))
    total = [sum(t[i] for t in lib.values()) for i in range(4)]
    if gen:
        print("written by re2c and Bison (not in the library's total):")
        for name, t in sorted(gen.items()):
            print(row(os.path.relpath(name), t))
        everything = add(total, [sum(t[i] for t in gen.values()) for i in range(4)])
        print(row("library + generated", everything))
    print(row("TOTAL (library)", total))
    if minimum is not None:
        got = pct(total[3], total[2])
        if got < minimum:
            print("branch coverage %.1f%% is below COVERAGE_MIN=%g%%" % (got, minimum))
            sys.exit(1)
        print("branch coverage %.1f%% meets COVERAGE_MIN=%g%%" % (got, minimum))


if __name__ == "__main__":
    main()
