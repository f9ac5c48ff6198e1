#!/usr/bin/env python3
"""Runs the masq sessions shown in README.md and docs/*.md and checks that
masq prints what the page shows. The conventions (tests/README.md, "Snippets
in the docs"):

  - A fenced block whose first line starts with "masq> " is a REPL session.
    Its input lines (after the "masq> " or "...> " prompts) run in one fresh
    `masq -i` fed through a pipe; every other line of the block is output
    masq must print, in order (stdout and stderr together).
  - A fenced block whose first line starts with "$ masq" is a shell session:
    each "$ " line runs in sh, in a scratch directory of its page with the
    masq under test first on PATH, and the lines up to the next "$ " are its
    output (stdout and stderr together).
  - "<!-- file: NAME -->" on the line before a fenced block writes the block
    to NAME in the page's scratch directory (before any session runs), for
    the sessions to use.
  - "<!-- run -->" on the line before a fenced block of masq code runs it
    as a script (in the page's scratch directory): it must succeed; what
    its comments say is not checked.
  - "<!-- not run: REASON -->" on the line before a fenced block that looks
    like a session leaves it out (output that depends on the machine, say).

usage: check_snippets.py MASQ FILE.md...
Prints one "FAIL file:line ..." per mismatch, then "snippets: N passed,
N failed"."""
import os
import re
import subprocess
import sys
import tempfile

PROMPT = re.compile(r"^(?:masq> ?|\s*\.\.\.> ?)")


def blocks(path):
    """(line number, marker comment or None, lines) of each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```", lines[i])
        if not m:
            i += 1
            continue
        indent, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith(indent + "```"):
            j += 1
        marker = lines[start - 1].strip() if start > 0 else ""
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[start + 1:j]]
        out.append((start + 1, marker if marker.startswith("<!--") else None, body))
        i = j + 1
    return out


def run(cmd, cwd, masq, stdin=None):
    env = dict(os.environ, NO_COLOR="1", MASQ_HISTORY="", HOME=cwd, TERM="dumb",
               PATH=os.path.dirname(os.path.abspath(masq)) + os.pathsep + os.environ["PATH"])
    p = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    return p.stdout


def tidy(lines):
    lines = [l.rstrip() for l in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def repl_session(body, cwd, masq):
    code = [PROMPT.sub("", l, count=1) for l in body if PROMPT.match(l)]
    want = [l for l in body if not PROMPT.match(l)]
    got = run([os.path.abspath(masq), "-i"], cwd, masq, "\n".join(code) + "\n")
    # The REPL prints its prompts without echoing the input: take them off.
    got = [re.sub(r"^(?:masq> |  \.\.\.> )+", "", l) for l in got.split("\n")]
    return tidy(want), tidy(got)


def shell_session(body, cwd, masq):
    want, got, i = [], [], 0
    while i < len(body):
        cmd = body[i][2:]
        i += 1
        while i < len(body) and not body[i].startswith("$ "):
            want.append(body[i])
            i += 1
        got += run(["sh", "-c", cmd], cwd, masq).split("\n")
        got = tidy(got)
        want = tidy(want)
    return want, got


def main():
    masq, pages = sys.argv[1], sys.argv[2:]
    passed = failed = 0
    for page in pages:
        with tempfile.TemporaryDirectory(prefix="masq-doc.") as cwd:
            found = blocks(page)
            for _, marker, body in found:
                m = re.match(r"<!--\s*file:\s*(\S+)\s*-->", marker or "")
                if m:
                    with open(os.path.join(cwd, m.group(1)), "w", encoding="utf-8") as f:
                        f.write("\n".join(body) + "\n")
            for line, marker, body in found:
                if not body or (marker and marker.startswith("<!-- not run")):
                    continue
                if marker and re.match(r"<!--\s*run\s*-->", marker):
                    proc = subprocess.run([os.path.abspath(masq), "-"], cwd=cwd,
                                          input="\n".join(body) + "\n", text=True,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          env=dict(os.environ, NO_COLOR="1"), timeout=60)
                    want, got = [], ([proc.stderr.strip() or "exit status %d" % proc.returncode]
                                     if proc.returncode else [])
                elif body[0].startswith("masq> "):
                    want, got = repl_session(body, cwd, masq)
                elif body[0].startswith("$ masq"):
                    want, got = shell_session(body, cwd, masq)
                else:
                    continue
                if want == got:
                    passed += 1
                    continue
                failed += 1
                print("FAIL %s:%d: masq prints something else than the page shows" % (page, line))
                for w, g in zip(want + [""] * len(got), got + [""] * len(want)):
                    if w != g:
                        print("    page: %s\n    masq: %s" % (w, g))
                        break
    print("snippets: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
