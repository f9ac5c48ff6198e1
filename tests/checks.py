"""What the Python halves of the interop checks share (tests/io/check_*.sh,
tests/pictures/check_svg.sh): counting checks, and the closing
"SUITE: N passed, N failed" line that tests/summary.sh adds up. The shell
half puts this folder on PYTHONPATH."""

passed = failed = 0


def check(name, ok, why=""):
    """Counts one check; a failure is printed with its name and why."""
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL %s%s" % (name, ": " + why if why else ""))


def report(suite):
    print("%s: %d passed, %d failed" % (suite, passed, failed))
