#!/bin/sh
# Runs each libFuzzer harness named after BUILD and SECONDS for SECONDS
# (make fuzz: FUZZ_SECONDS; make test: a short smoke) on its corpus in
# BUILD/fuzz/corpus/NAME, which starts as a copy of the seeds and keeps
# what every run finds (never in git). Seeds: tests/fuzz/corpus/NAME, the
# golden and crash scripts for the source harnesses, tests/io's and tests/csv's
# files for fuzz_npy. A crash, leak, timeout or sanitizer report fails the harness;
# its input is saved as BUILD/fuzz/artifacts/NAME-crash-... (minimise it
# with `BUILD/fuzz/bin/NAME -minimize_crash=1 -runs=10000 FILE` and replay
# it with BUILD/fuzz/replay/NAME FILE).
# FUZZ_TIMEOUT (seconds, default 10) is libFuzzer's wall-clock limit per
# input: an input takes well under a second on a quiet machine, but a long
# campaign that shares a loaded machine at low priority needs more, or
# starvation shows up as false timeouts.
# Prints one line per harness and "fuzz: N passed, N failed".
b=$1 seconds=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
pass=0 fail=0
mkdir -p "$b/fuzz/artifacts" "$b/fuzz/logs"
seed() { # seed DIR FILE...: copies the files that exist
  dir=$1
  shift
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/"; done
}
for h in "$@"; do
  corpus=$b/fuzz/corpus/$h
  mkdir -p "$corpus"
  seed "$corpus" "$root"/tests/fuzz/corpus/"$h"/*
  case $h in
    fuzz_eval|fuzz_dis)
      seed "$corpus" "$root"/tests/lang/*.masq "$root"/tests/errors/*.masq \
        "$root"/tests/crashes/*.masq "$root"/examples/*.masq
      opts="-dict=$b/fuzz/masq.dict -max_len=4096" ;;
    fuzz_npy)
      seed "$corpus" "$root"/tests/io/*.npy "$root"/tests/io/*.npz "$root"/tests/csv/*.csv
      opts="-dict=$root/tests/fuzz/npy.dict -max_len=16384" ;;
    *) opts="-max_len=1024" ;;
  esac
  log=$b/fuzz/logs/$h.log
  # shellcheck disable=SC2086
  "$b/fuzz/bin/$h" $opts -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
    -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$b/fuzz/artifacts/$h-" \
    "$corpus" > "$log" 2>&1
  st=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  files=$(ls "$corpus" | wc -l)
  if [ "$st" = 0 ]; then
    pass=$((pass + 1))
    echo "$h: ${runs:-?} runs in ${seconds}s, ${speed:-?} exec/s, corpus $files files"
  else
    fail=$((fail + 1))
    echo "FAIL $h: exit status $st (log: $log)"
    grep -E 'ERROR|SUMMARY|^fuzz:|Test unit written|runtime error' "$log" | head -n 12 | sed 's/^/    /'
  fi
done
echo "fuzz: $pass passed, $fail failed"
