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

Every fenced block is accounted for, none passed over silently:
  - A block without a language (or ```masq) that is not a session is masq
    code, and runs: a page is one program read top to bottom, so each code
    block runs after the page's earlier ones (in the page's scratch
    directory) and must succeed. If the next block is marked
    "<!-- output -->", it is what this block prints (stdout and stderr).
  - "<!-- given: CODE -->" before a code block runs the masq CODE (one
    line) first, as part of the page's program, for what the block takes
    from its reader: files it loads, the arguments of a script, the
    variables of a fragment.
  - A block that is not masq says so with its language (```text for a
    diagram, a usage summary or output with no code; ```c, ```python,
    ```sh): those are counted by language and run elsewhere or not at all
    (the summary line says which); a block without a language that is
    neither a session nor code that runs is a failure.
  - A page's section still being rewritten elsewhere is listed in PENDING:
    its blocks are reported, not failed.

usage: check_snippets.py MASQ FILE.md...
Prints one "FAIL file:line ..." per mismatch, then "snippets: N passed,
N failed"."""
import os
import re
import subprocess
import sys
import tempfile

PROMPT = re.compile(r"^(?:masq> ?|\s*\.\.\.> ?)")


# Where the blocks of other languages run (or that they do not).
ELSEWHERE = {
    "python": "python/tests/test_docs.py runs PYTHON.md's as a doctest",
    "c": "EMBEDDING.md's complete example: tests/api/install_test.sh; fragments are not run",
    "sh": "build and install commands, not run",
    "text": "diagrams, usage and output, not run",
}

# Sections whose snippets another branch is rewriting: (page, heading).
PENDING = []


def lang_of(path, line):
    """The language after the fence that opens the block at [line]."""
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[line - 1].strip()[3:].strip()


def pending(path, line):
    """Whether the block at [line] lies in a PENDING section of [path]."""
    rel = os.path.relpath(path, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    lines = open(path, encoding="utf-8").read().split("\n")[:line]
    heads = [l for l in lines if l.startswith("#")]
    return any(rel == p and heads and heads[-1].startswith(h) for p, h in PENDING)


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


def run_code(code, cwd):
    """Runs masq [code] as a script in [cwd]: (status, stdout and stderr)."""
    proc = subprocess.run([os.path.abspath(MASQ), "-"], cwd=cwd, input="\n".join(code) + "\n",
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=dict(os.environ, NO_COLOR="1", COLUMNS="80"), timeout=60)
    return proc.returncode, proc.stdout


def code_block(program, body, cwd, shown):
    """Runs [body] after the page's earlier code [program]: (want, got).
    What the earlier code prints is taken off the front; [shown] is the
    output block that follows, or None (then only success is checked)."""
    status0, before = run_code(program, cwd) if program else (0, "")
    status, out = run_code(program + body, cwd)
    if status0:
        return [], ["the page's earlier code fails: " + before.strip()]
    if status:
        return [], [out[len(before):].strip() if out.startswith(before) else out.strip()
                    or "exit status %d" % status]
    if not out.startswith(before):
        return [], ["its output does not follow the earlier code's"]
    if shown is None:
        return [], []
    return tidy(shown), tidy(out[len(before):].split("\n"))


MASQ = None


def main():
    global MASQ
    masq, pages = sys.argv[1], sys.argv[2:]
    MASQ = masq
    passed = failed = 0
    others, notrun, waiting = {}, 0, []
    for page in pages:
        with tempfile.TemporaryDirectory(prefix="masq-doc.") as cwd:
            found = blocks(page)
            for _, marker, body in found:
                m = re.match(r"<!--\s*file:\s*(\S+)\s*-->", marker or "")
                if m:
                    with open(os.path.join(cwd, m.group(1)), "w", encoding="utf-8") as f:
                        f.write("\n".join(body) + "\n")
            program = []
            for k, (line, marker, body) in enumerate(found):
                lang = lang_of(page, line)
                is_output = bool(marker and re.match(r"<!--\s*output\s*-->", marker))
                if marker and marker.startswith("<!-- not run"):
                    notrun += 1
                    continue
                if re.match(r"<!--\s*file:", marker or "") or is_output:
                    continue
                if lang not in ("", "masq"):
                    others[lang] = others.get(lang, 0) + 1
                    continue
                if pending(page, line):
                    waiting.append("%s:%d" % (page, line))
                    continue
                if not body:
                    want, got = [], ["an empty block"]
                elif body[0].startswith("masq> "):
                    want, got = repl_session(body, cwd, masq)
                elif body[0].startswith("$ masq"):
                    want, got = shell_session(body, cwd, masq)
                else:
                    nxt = found[k + 1] if k + 1 < len(found) else None
                    shown = nxt[2] if nxt and nxt[1] and re.match(r"<!--\s*output\s*-->", nxt[1]) else None
                    g = re.match(r"<!--\s*given:\s*(.*?)\s*-->$", marker or "")
                    code = ([g.group(1)] if g else []) + body
                    want, got = code_block(program, code, cwd, shown)
                    if want == got:
                        program += code
                if want == got:
                    passed += 1
                    continue
                failed += 1
                print("FAIL %s:%d: masq prints something else than the page shows" % (page, line))
                for w, g in zip(want + [""] * len(got), got + [""] * len(want)):
                    if w != g:
                        print("    page: %s\n    masq: %s" % (w, g))
                        break
    for lang in sorted(others):
        print("not masq: %d %s block%s (%s)" % (others[lang], lang, "" if others[lang] == 1 else "s",
                                                 ELSEWHERE.get(lang, "not run")))
    if notrun:
        print("not run: %d block%s marked <!-- not run: REASON -->" % (notrun, "" if notrun == 1 else "s"))
    if waiting:
        print("pending: %s (sections being rewritten: PENDING)" % ", ".join(waiting))
    print("snippets: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
