#!/bin/sh
# check.sh - the generated editor syntax files (make: build/editors, from
# tools/editors/gen.py) name every keyword of lexer/keywords.h and every
# builtin and constant `masq --builtins` lists, the TextMate grammar is valid
# JSON with valid regular expressions, and Vim (if installed) loads the
# syntax file without an error.
#
# usage: tests/editors/check.sh [path/to/masq]     (default: build/masq)
# Prints "editors: N passed, N failed"; exits 1 if anything failed.
masq=${1:-build/masq}
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(dirname "$masq")/editors
vim_syn=$dir/vim/syntax/masq.vim
vim_ft=$dir/vim/ftdetect/masq.vim
json=$dir/masq.tmLanguage.json
passed=0 failed=0
ok() { passed=$((passed + 1)); }
not_ok() { failed=$((failed + 1)); echo "FAIL editors: $1"; }

for f in "$vim_syn" "$vim_ft" "$json"; do
  if [ -s "$f" ]; then ok; else not_ok "$f is missing or empty (make builds it)"; fi
done

words=$(sed -n 's/^ *X("\([a-z_]*\)",.*/\1/p' "$root/lexer/keywords.h")
names=$("$masq" --builtins | sed -n 's/^- `\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p')
consts=$("$masq" --builtins | sed -n 's/^Constants: //p' | tr -d '`,')
[ -n "$words" ] && [ -n "$names" ] || not_ok "no keywords or builtins found"
missing=""
for w in $words $names $consts; do
  grep -qw -- "$w" "$vim_syn" 2>/dev/null || missing="$missing vim:$w"
  grep -qw -- "$w" "$json" 2>/dev/null || missing="$missing json:$w"
done
if [ -z "$missing" ]; then ok; else not_ok "not highlighted:$missing"; fi

if python3 -m json.tool "$json" >/dev/null 2>&1; then ok; else not_ok "$json is not valid JSON"; fi
# Every "match" must compile (Python's re is close enough to Oniguruma for
# the constructs the generator uses) and must find what it is meant to.
if WORDS=$words NAMES=$names CONSTS=$consts python3 - "$json" <<'PY'
import json, os, re, sys
g = json.load(open(sys.argv[1]))
pats = {p.get("name", ""): re.compile(p["match"]) for p in g["patterns"] if "match" in p}
def scope(text):
    for name, rx in pats.items():
        m = rx.search(text)
        if m and m.group(0) == text:
            return name
want = {"while": "keyword.control.masq", "and": "keyword.operator.word.masq",
        "none": "constant.language.masq", "softmax": "support.function.builtin.masq",
        "1.5e-3": "constant.numeric.masq", "# note": "comment.line.number-sign.masq"}
for n in os.environ["NAMES"].split():
    want[n] = "support.function.builtin.masq"
for n in os.environ["CONSTS"].split():
    want[n] = "constant.language.masq"
for n in os.environ["WORDS"].split():
    want.setdefault(n, scope(n) if scope(n) and scope(n).startswith(("keyword", "constant")) else "keyword")
bad = [(t, scope(t), s) for t, s in want.items() if scope(t) != s]
if bad:
    print(bad)
    sys.exit(1)
PY
then ok; else not_ok "the TextMate patterns do not scope keywords/builtins/numbers as expected"; fi

if command -v vim >/dev/null 2>&1; then
  out=$(vim -u NONE -N -es -c "set rtp^=$dir/vim" -c 'syntax on' -c "source $vim_ft" \
        -c 'edit x.masq' -c 'redir! > /dev/stdout' -c 'echo &filetype b:current_syntax' \
        -c 'redir END' -c 'qa!' 2>&1 </dev/null)
  case $out in
    *"masq masq"*) ok ;;
    *) not_ok "vim did not load the syntax for x.masq: $out" ;;
  esac
fi
echo "editors: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
