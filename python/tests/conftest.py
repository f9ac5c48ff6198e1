# The tests import the module built by `make python` (build/python), or an
# installed one when MASQ_PY_INSTALLED=1 (after `pip install ./python`).
import os
import sys

if os.environ.get("MASQ_PY_INSTALLED") != "1":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.environ.get("MASQ_BUILD", os.path.join(here, "..", "..", "build")), "python"))
