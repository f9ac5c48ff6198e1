#!/bin/sh
# newcomer_test.sh - the REPL's answers to what a newcomer tries, in a real
# terminal: exit, quit and help typed alone; else on the line after '}';
# a pasted session with its prompts and output; an error on a long line;
# Tab after x.; and a write error on stdout at exit.
#
# usage: tests/repl/newcomer_test.sh [path/to/masq]      (default: build/masq)
# Prints "newcomer: N passed, N failed, N skipped"; exits 1 if anything failed.

SUITE=newcomer
. "$(dirname "$0")/tmux.sh"

# --- hints instead of "undefined variable" --------------------------------

start
enter 'exit'
check "exit alone gives a hint" wait_line '\(:quit or Ctrl-D to leave; exit\(code\) leaves with a status\)'
enter 'quit'
check "quit alone gives a hint" wait_line '\(:quit or Ctrl-D to leave\)'
enter '  help  '
check "help alone gives a hint" wait_line '\(:help for help, :help NAME for a builtin or keyword\)'
check "... and none says undefined variable" not has_text 'undefined variable'
enter 'help = 41 + 1'
enter 'help'
check "a variable named help shows its value" wait_line '42'

# --- else on the line after } ----------------------------------------------

start
enter 'if 1 > 2 { print("then") }'
check "an if block waits for a possible else" wait_last '  \.\.\.>'
enter 'else { print("else ran") }'
check "else on the next line belongs to the if" wait_line 'else ran'
enter 'if 2 > 1 {'
enter '  print("multi")'
enter '}'
enter 'elif true {'
enter '  print("not this")'
enter '}'
check "... elif too, the block spanning lines" wait_last '  \.\.\.>'
key Enter
check "an empty line runs the if" wait_line 'multi'
enter 'if true { print("alone") }'
enter 'after = 7'
check "another statement after the if runs both" wait_line 'alone'
enter 'after * 6'
check "... the statement included" wait_line '42'

# --- pasting a session ------------------------------------------------------

start
# Typed at once, as a terminal without bracketed paste delivers a paste.
type_text 'masq> xs = [1, 2, 3]
masq> xs * 2
tensor([2, 4, 6])
masq> sum(xs +
  ...> 10)
tensor(36)
'
check "a pasted session runs without its prompts" wait_line 'tensor\(36\)'
check "... its continuation line joined, its output lines not run" not has_text 'error'
enter 'xs[0] + 100'
check "typing after the paste is ordinary input" wait_line 'tensor\(101\)'
# A bracketed paste (tmux paste-buffer -p) delivers the lines as one.
printf 'masq> ys = [5, 6]\nmasq> ys + 1\n[6, 7]\nmasq> len(ys) * 50\n100\n' |
  T load-buffer -
T paste-buffer -p
key Enter
check "a bracketed paste of a session runs too" wait_line 'tensor\(\[6, 7\]\)'
# once as pasted, once computed
check "... every entry of it" wait_line '100' 2
check "... without running its output lines" not has_text 'error'
# A bracketed paste runs as typed (README): an error stops its own entry,
# and the lines after it run, with the variables bound before it.
start
printf 'masq> a = 41\nmasq> b = nope + 1\nmasq> a + 1\nmasq> fn g(v) {\n  ...>   return v * 2\n  ...> }\nmasq> g(a)\n' |
  T load-buffer -
T paste-buffer -p
key Enter
check "a paste's error is reported" wait_text "error: undefined variable 'nope'"
check "... and the lines after it run" wait_line '42'
check "... a function over lines too" wait_line '82'

# --- an error on a long line ------------------------------------------------

start
long='total = sum([1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5]) + offset_that_is_not_defined + sum([1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5])'
enter "$long"
check "the long line's error is located" wait_text "error: undefined variable 'offset_that_is_not_defined'"
check "the excerpt is a window cut with … on both sides" \
  has_line '    ….*\+ offset_that_is_not_defined \+ .*…'
caret_under_name() {
  screen | awk '
    /^    …/ { src = $0; next }
    src != "" && /\^/ {
      # the carets start where the name starts in the line above, in characters
      n = index(src, "offset_that_is_not_defined"); c = index($0, "^")
      pre = substr(src, 1, n - 1); gsub(/\xe2\x80\xa6/, ".", pre)
      exit !(length(pre) + 1 == c && match($0, /\^+/) && RLENGTH == 26)
    }
    END { if (src == "") exit 1 }'
}
check "the carets stand under the name" caret_under_name
check "the excerpt and carets fit in 80 columns" \
  test "$(lines | awk '/^    / { gsub(/\xe2\x80\xa6/, "."); if (length($0) > 80) n++ } END { print n + 0 }')" = 0

# --- Tab after x. -----------------------------------------------------------

start
enter 'x = [1.0, 2.0]'
wait_prompt
type_text 'x.zero'
key Tab
# zero_grad(*xs) and zeros(*shape) do not take a tensor first; zeros_like(x) does.
check "Tab after x. offers only builtins that take a tensor first" wait_last 'masq> x\.zeros_like'
key Enter
check "... and the method runs" wait_line 'tensor\(\[0\., 0\.\]\)|tensor\(\[0\.0000, 0\.0000\]\)|tensor\(\[0, 0\]\)'

# --- write errors at exit ---------------------------------------------------

if [ -w /dev/full ]; then
  start "'$MASQ' -e 'print(1)' > /dev/full"
  check "a write error on stdout is an error, status 2" wait_text '[exit 2]'
  check "... with a message" has_text 'masq: error writing to standard output'
else
  skip "no /dev/full here"
fi

finish
