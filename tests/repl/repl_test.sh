#!/bin/sh
# repl_test.sh - drives the real masq REPL in a terminal and checks what a
# user sees: continuation lines, located errors, history, Ctrl-C, Ctrl-D,
# :commands and Tab completion.
#
# usage: tests/repl/repl_test.sh [path/to/masq]      (default: build/masq)
#
# Each case starts masq in a fresh tmux pane on a private server (its own
# socket, no user config), types with send-keys and reads the screen with
# capture-pane. Every wait polls the screen for up to 5 s instead of sleeping
# a fixed time. HOME and MASQ_HISTORY point into a temporary directory.
# Prints "repl: N passed, N failed, N skipped"; exits 1 if anything failed.

SUITE=repl
. "$(dirname "$0")/tmux.sh"

# --- 1. multi-line input ---------------------------------------------------

start
enter '[1,'
check "open bracket gives the continuation prompt" wait_last '  \.\.\.>'
enter '2]'
# The value's exact form is the library's; it must be output, not an error,
# followed by a fresh prompt.
result_after_continuation() {
  last_is 'masq>' && lines | awk '
    /^  \.\.\.> 2\]$/ { seen = 1; next }
    seen && /^masq>/ { exit !(out && !err) }
    seen { out = 1; if (/error/) err = 1 }
    END { if (!seen) exit 1 }'
}
check "closing the bracket shows the value" poll result_after_continuation
enter '(40 +'
enter '2)'
check "a continued expression evaluates as a whole" wait_line '42'

# --- 2. errors -------------------------------------------------------------

start
enter '1 +* 2'
check "a syntax error is located (file:line:col)" \
  wait_line '<stdin>:1:[0-9]+: error: .*'
check "the error shows carets under the source" has_line ' *\^[~^]*'
enter '1 + 2'
check "the REPL goes on after an error" wait_line '3'

# --- 3. history ------------------------------------------------------------

rm -f "$hist"
start
enter '1 + 2'
wait_line '3'
enter '2 * 5'
wait_line '10'
enter '[1,'
enter '2]'
wait_prompt
key Up
check "Up recalls a multi-line entry whole" wait_last '2\]'
key Up
check "Up again recalls the line before" wait_last 'masq> 2 \* 5'
key Enter
wait_line '10' 2
enter '2 * 5'
wait_line '10' 3
key C-d
wait_text '[exit 0]'
expected_history='1 + 2
2 * 5
[1,\n2]
2 * 5'
check "the history file holds the entries, one per line" \
  test "$(cat "$hist" 2>/dev/null)" = "$expected_history"
start
key Up Up
check "history is read back, multi-line entries whole" wait_last '2\]'
check "... with the rest of the entry above" has_line 'masq> \[1,'

# A history file longer than the 1000 entries kept is trimmed at start and
# at exit, by writing a new file and renaming it over the old one. Under a
# file size limit smaller than the file (ulimit -f: a full disk's EFBIG)
# every write fails: the trims, and the append of the new entry, which is
# taken back. The REPL works on and the file stays byte for byte. (A file
# of its own: the sessions above may still be trimming theirs as they end.)
long=$tmp/long_history
awk 'BEGIN { for (i = 1; i <= 1200; i++) print "x = " i }' >"$long"
cp "$long" "$tmp/long.before"
start "ulimit -f 4; MASQ_HISTORY='$long' '$MASQ'"
check "a history file that cannot be rewritten still loads" wait_prompt
enter '1 + 2'
wait_line '3'
key C-d
check "... and the REPL exits normally" wait_text '[exit 0]'
check "... leaving the history file as it was" cmp -s "$long" "$tmp/long.before"
check "... and no temporary file" test -z "$(ls -a "$tmp" | grep 'masq-')"
start "MASQ_HISTORY='$long' '$MASQ'"
wait_prompt
key C-d
wait_text '[exit 0]'
check "with room, the file is trimmed to its last 1000 entries" \
  test "$(wc -l <"$long")" -eq 1000 -a "$(head -n 1 "$long")" = 'x = 201' \
  -a "$(tail -n 1 "$long")" = 'x = 1200'
rm -f "$long" "$tmp/long.before"

# --- 4. Ctrl-C -------------------------------------------------------------

start
enter 'while true { x = 1 }'
# The line must be on the screen before anything else is read from it: a
# loaded machine may not have echoed it yet, and a Ctrl-C that reaches
# readline before the Enter only clears the line.
wait_last 'masq> while true \{ x = 1 \}'
# A build without while loops answers at once with an error.
if briefly last_is 'masq>' && has_text 'error'; then
  skip "Ctrl-C stops a long computation (no while loop in this build)"
else
  key C-c
  check "Ctrl-C stops a long computation with a message" wait_text 'interrupted'
  check "... and gives a fresh prompt" wait_prompt
  enter '2*3'
  check "... after which evaluation works" wait_line '6'
fi
type_text 'half typed'
wait_text 'half typed'
key C-c
check "Ctrl-C on a half-typed line gives a fresh prompt" wait_last 'masq>'
check "... leaving the discarded text marked ^C" has_line 'masq> half typed\^C'
enter '7*6'
check "... and the text is gone" wait_line '42'
enter '[1,'
wait_last '  \.\.\.>'
key C-c
wait_prompt
enter '1 + 1'
check "Ctrl-C in a continuation drops the whole entry" wait_line '2'

printf 'while true { x = 1 }\n' >"$tmp/loop.masq"
# The shell running masq must not ignore SIGINT (masq would then keep it
# ignored), nor die of it before printing masq's status: a trap does both.
start "trap : INT; '$MASQ' loop.masq"
if briefly has_text '[exit'; then
  skip "Ctrl-C ends a script with status 130 (no while loop in this build)"
else
  key C-c
  check "Ctrl-C ends a script with status 130" wait_text '[exit 130]'
fi

# --- 5. Ctrl-D -------------------------------------------------------------

start
key C-d
check "Ctrl-D at an empty prompt exits with status 0" wait_text '[exit 0]'
check "... on a new line" has_line '\[exit 0\]'

# --- :commands and Tab completion ------------------------------------------

start
check "the banner names the version and how to leave" \
  has_text 'masq 0.1.0'
type_text ':he'
key Tab
check "Tab completes :commands" wait_last 'masq> :help'
key Enter
check ":help lists the commands" wait_text ':load FILE'
enter ':nope'
check "an unknown command says so" wait_text "unknown command ':nope' (try :help)"
enter ':help no_such_builtin'
check ":help NAME for an unknown name" wait_text "no builtin or keyword named 'no_such_builtin'"
enter ':help while'
check ":help KEYWORD shows its syntax" wait_text "while cond { ... }: repeat while cond is true"
enter ':time 40 + 2'
check ":time CODE shows the value ..." wait_line '42'
check "... and how long it took" wait_line 'took [0-9.e+-]+ (us|ms|s)'
enter 'value_one = 1'
wait_prompt
type_text 'value_o'
key Tab
check "Tab completes global names" wait_last 'masq> value_one'
key Enter
check "... which evaluate" wait_line '1'
enter ':q'
check ":q leaves with status 0" wait_text '[exit 0]'

finish
