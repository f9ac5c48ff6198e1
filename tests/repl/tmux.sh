# tmux.sh - the harness the tmux-driven REPL tests share (sourced, not run):
# a private tmux server per case, typing with send-keys, reading the screen
# with capture-pane, and polling instead of sleeping.
#
# The sourcing script sets SUITE (its name in the summary line) and passes
# its own arguments; MASQ is $1 (default build/masq). After sourcing:
# start [COMMAND], type_text, key, enter, screen, lines, last_line, poll,
# briefly, has_text, has_line, last_is, wait_text, wait_line, wait_last,
# wait_prompt, not, check NAME CMD..., skip, and finish (the summary line and the
# exit status).

MASQ=${1:-build/masq}
case $MASQ in /*) ;; *) MASQ=$PWD/$MASQ ;; esac

if ! command -v tmux >/dev/null 2>&1; then
  echo "$SUITE: tmux is not installed; SKIP"
  exit 0
fi
if [ ! -x "$MASQ" ]; then
  echo "$SUITE: no executable at $MASQ" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/masq-repl.XXXXXX") || exit 2
hist=$tmp/history
passed=0 failed=0 skipped=0

# Each case gets its own tmux server: a server that is still shutting down
# must not receive the next case's commands.
server=0
T() { tmux -S "$tmp/tmux.$server" "$@"; }
trap 'T kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# start [COMMAND]: a fresh 100x30 terminal running masq (or COMMAND, a shell
# line), then waits for the first prompt unless a COMMAND was given. The pane
# prints "[exit N]" when the command ends and stays open to be read.
start() {
  T kill-server 2>/dev/null
  server=$((server + 1))
  {
    echo "cd '$tmp' || exit 2"
    echo "export HOME='$tmp' MASQ_HISTORY='$hist' TERM=xterm NO_COLOR=1 INPUTRC=/dev/null"
    echo "${1:-"'$MASQ'"}"
    echo 'echo "[exit $?]"'
    echo 'exec sleep 600'
  } >"$tmp/pane.sh"
  T -f /dev/null new-session -d -x 100 -y 30 "sh '$tmp/pane.sh'"
  [ -n "$1" ] || wait_prompt
}

screen() { T capture-pane -p -J -S -200 2>/dev/null; }
lines() { screen | sed -e 's/[[:space:]]*$//' -e '/^$/d'; }
last_line() { lines | tail -n 1; }
type_text() { T send-keys -l -- "$1"; }
key() { T send-keys "$@"; }
enter() { type_text "$1"; key Enter; }

# poll CMD...: until CMD succeeds, trying every 0.1 s for 5 s ($tries / 10)
tries=50
poll() {
  i=0
  while [ $i -lt $tries ]; do
    "$@" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}
# briefly CMD...: poll for 1 s only, to see whether something happens soon
briefly() {
  tries=10
  poll "$@"
  set -- $?
  tries=50
  return "$1"
}
has_text() { [ "$(screen | grep -cF -- "$1")" -ge "${2:-1}" ]; }
has_line() { [ "$(lines | grep -cxE -- "$1")" -ge "${2:-1}" ]; }
last_is() { last_line | grep -qxE -- "$1"; }
wait_text() { poll has_text "$@"; }
wait_line() { poll has_line "$@"; }
wait_last() { poll last_is "$1"; }
wait_prompt() { wait_last 'masq>'; }

ok() { passed=$((passed + 1)); echo "ok - $1"; }
skip() { skipped=$((skipped + 1)); echo "SKIP - $1"; }
not_ok() {
  failed=$((failed + 1))
  echo "FAIL - $1"
  echo "  --- screen ---"
  lines | sed 's/^/  | /'
}
# check NAME CMD...: one test result
check() {
  name=$1
  shift
  if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# not CMD...: CMD fails (for check: `check "no error" not has_text error`)
not() { ! "$@"; }

finish() {
  echo "$SUITE: $passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
}
