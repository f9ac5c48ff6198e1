# The tests import the module built by `make python` (build/python), or an
# installed one when MASQ_PY_INSTALLED=1 (after `pip install ./python`).
import os
import sys

if os.environ.get("MASQ_PY_INSTALLED") != "1":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.environ.get("MASQ_BUILD", os.path.join(here, "..", "..", "build")), "python"))

import signal

import pytest


@pytest.fixture(autouse=True)
def python_sigint():
    """The Ctrl-C tests send SIGINT to this process, and expect what a user
    at a terminal has: Python's own handler, which raises KeyboardInterrupt.
    A shell that starts a job in the background without job control (`make
    test &` in a script, nohup) starts it with SIGINT ignored, and then
    Python installs no handler: the signal vanishes and a long read under
    test never ends. Each test starts with the handler, and with SIGINT not
    blocked on the main thread."""
    old = signal.getsignal(signal.SIGINT)
    if old in (signal.SIG_IGN, signal.SIG_DFL, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    yield
    if old is not None:
        signal.signal(signal.SIGINT, old)
