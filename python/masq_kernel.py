"""masq_kernel - a Jupyter kernel for masq, on the masq module.

    python3 -m masq_kernel install [--user | --sys-prefix | --prefix DIR]   # the kernelspec
    python3 -m masq_kernel -f CONNECTION_FILE                # what Jupyter runs

Cells run in one masq.State (file access on: a notebook is its user's own
code). The value of a cell's last expression is shown as masq prints it and, for
tensors of one or two dimensions, as an HTML table whose masked-out cells are
greyed; print() goes to the cell's output; errors show masq's diagnostic with
its carets; `:help NAME` shows a builtin's help; Tab completes builtin and
global names. Ctrl-C (Jupyter's interrupt) stops a running cell.
"""
import html
import json
import os
import re
import shutil
import sys
import tempfile
import traceback

import numpy as np

import masq

try:
    from ipykernel.kernelbase import Kernel
except ImportError:  # the install command and the renderers work without it
    Kernel = object

MAX_CELLS = 2000  # an HTML table shows at most this many entries
MAX_TEXT = 20000  # the plain text of a list shows about this many characters
NAME_TAIL = re.compile(r"[A-Za-z_][A-Za-z_0-9]*$")
NAME_AT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


# the text of a cell's value is masq's own printing of it: str(_) in masq,
# through a function defined in the kernel's State, called with a keyword
# (a call leaves `_` alone; with a keyword it may return a string)
TEXT_OF_RESULT = "__masq_kernel_text"
MAX_ITEMS = 10000  # a list with more items (counted at each occurrence) is walked here


def to_text(value, state):
    """The plain-text form of a cell's value, as masq prints it (the REPL's
    form: masq's digits, masked entries as --, strings unquoted). A list
    that holds itself or has more than MAX_ITEMS items is walked here
    instead, cut at about MAX_TEXT characters, each item printed by masq:
    one that shares sublists (l = [l, l], sixty times over) would print
    2^60 items."""
    if isinstance(value, list) and not _small(value):
        return _list_text(value, state)
    return state.call(TEXT_OF_RESULT, unused=None)


def _small(value):
    """True if the list has at most MAX_ITEMS items in all and no cycle."""
    count, path = [0], set()

    def walk(v):
        if id(v) in path:
            return False
        path.add(id(v))
        for item in v:
            count[0] += 1
            if count[0] > MAX_ITEMS or (isinstance(item, list) and not walk(item)):
                return False
        path.discard(id(v))
        return True

    return walk(value)


def _item_text(v, state, memo):
    """An item of a list as masq prints it inside a list."""
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if v is None or isinstance(v, bool):
        return {None: "none", True: "true", False: "false"}[v]
    if id(v) not in memo:  # an array that occurs again is printed once
        memo[id(v)] = (v, state.call("str", x=v))
    return memo[id(v)][1]


def _list_text(value, state):
    out, left, open_lists, memo = [], [MAX_TEXT], set(), {}

    def put(text):
        out.append(text)
        left[0] -= len(text)

    def walk(v):
        if not isinstance(v, list):
            put(_item_text(v, state, memo))
        elif id(v) in open_lists:  # a list inside itself
            put("[...]")
        else:
            open_lists.add(id(v))
            put("[")
            for i, item in enumerate(v):
                if i:
                    put(", ")
                if left[0] <= 0:
                    put("...")
                    break
                walk(item)
            put("]")
            open_lists.discard(id(v))

    walk(value)
    return "".join(out)


def _cell(v, masked):
    if masked:
        return '<td style="color:#999;background:#eee;text-align:center">--</td>'
    text = "%.6g" % v if isinstance(v, np.floating) else str(v)  # not numpy's 17 digits
    return '<td style="text-align:right">%s</td>' % html.escape(text)


def to_html(value):
    """An HTML table for a 1-D or 2-D array (masked cells greyed), or None."""
    if not isinstance(value, np.ndarray) or value.ndim not in (1, 2) or value.size > MAX_CELLS:
        return None
    a = value if value.ndim == 2 else value.reshape(1, -1)
    mask = np.ma.getmaskarray(a) if np.ma.isMaskedArray(a) else np.zeros(a.shape, bool)
    data = np.ma.getdata(a)
    rows = "".join("<tr>%s</tr>" % "".join(_cell(data[i, j], mask[i, j]) for j in range(a.shape[1]))
                   for i in range(a.shape[0]))
    kind = "masked " if np.ma.isMaskedArray(value) else ""
    caption = "%s%s %s" % (kind, value.dtype, "x".join(map(str, value.shape)))
    return ('<table class="masq"><caption style="text-align:left">%s</caption>%s</table>'
            % (html.escape(caption), rows))


class MasqKernel(Kernel):
    implementation = "masq"
    implementation_version = masq.__version__
    language = "masq"
    language_version = masq.__version__
    language_info = {"name": "masq", "mimetype": "text/x-masq", "file_extension": ".masq",
                     "codemirror_mode": "python"}
    banner = "masq %s: masked tensor expressions (:help NAME for a builtin)" % masq.__version__

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.state = masq.State(io=True, picture=self._picture)
        self.state.eval("fn %s(unused=none) = str(_)" % TEXT_OF_RESULT)

    def _picture(self, text, svg):
        """A picture (show_mask, hist, plot, heatmap) as display data: the
        SVG inline where the frontend shows images, its text elsewhere."""
        sys.stdout.flush()  # what the cell printed before it comes first
        data = {"text/plain": text}
        if svg:
            data["image/svg+xml"] = svg
        self.send_response(self.iopub_socket, "display_data", {"data": data, "metadata": {}})

    def set_parent(self, ident, parent, channel="shell"):
        """Also tells sys.stdout and sys.stderr (ipykernel's OutStreams, where
        masq's print() goes), so their output belongs to the running cell."""
        super().set_parent(ident, parent, channel)
        if channel == "shell":
            for stream in (sys.stdout, sys.stderr):
                if hasattr(stream, "set_parent"):
                    stream.set_parent(parent)

    def _stream(self, name, text):
        self.send_response(self.iopub_socket, "stream", {"name": name, "text": text})

    def _help(self, arg):
        if not arg:
            return ":help NAME shows a builtin's signature and help; Tab completes names.\n"
        doc = self.state.doc(arg)
        return (doc if doc else "no help for '%s'" % arg) + "\n"

    def do_execute(self, code, silent, store_history=True, user_expressions=None,
                   allow_stdin=False, *, cell_id=None):
        """Every cell gets a reply, whatever it raised and whenever Ctrl-C came
        (running, converting or showing the value): ipykernel sends none for
        an exception that leaves here, and the frontend would wait forever."""
        try:
            return self._execute(code, silent)
        except KeyboardInterrupt:
            return self._error("KeyboardInterrupt", "interrupted", ["KeyboardInterrupt"], silent)
        except MemoryError as e:
            return self._error("MemoryError", str(e), str(e).splitlines(), silent)
        except masq.Error as e:
            return self._error("masq.Error", getattr(e, "message", str(e)), str(e).splitlines(), silent)
        except BaseException as e:  # noqa: BLE001 - a picture that could not be sent, ...
            return self._error(type(e).__name__, str(e),
                               traceback.format_exception(type(e), e, e.__traceback__), silent)

    def _execute(self, code, silent):
        ok = {"status": "ok", "execution_count": self.execution_count,
              "payload": [], "user_expressions": {}}
        stripped = code.strip()
        if stripped.startswith(":help"):
            if not silent:
                self._stream("stdout", self._help(stripped[5:].strip()))
            return ok
        try:
            try:
                value = self.state.eval(code, name="<cell %d>" % self.execution_count)
            finally:  # print() output before the result and the reply
                sys.stdout.flush()
                sys.stderr.flush()
        except TypeError:  # a value without a Python form (a function): masq prints it
            value = NotImplemented
        if value is not None and not silent:
            data = {"text/plain": to_text(value, self.state)}
            table = to_html(value)
            if table:
                data["text/html"] = table
            self.send_response(self.iopub_socket, "execute_result",
                               {"execution_count": self.execution_count, "data": data, "metadata": {}})
        return ok

    def _error(self, ename, evalue, traceback_lines, silent):
        content = {"ename": ename, "evalue": evalue, "traceback": traceback_lines}
        if not silent:
            try:
                self.send_response(self.iopub_socket, "error", content)
            except Exception:  # noqa: BLE001 - iopub is gone (the error was sending): the reply says it
                pass
        return dict(content, status="error", execution_count=self.execution_count)

    def do_complete(self, code, cursor_pos):
        m = NAME_TAIL.search(code[:cursor_pos])
        prefix = m.group(0) if m else ""
        names = sorted(set(self.state.complete(prefix))) if prefix else []
        return {"status": "ok", "matches": names, "cursor_start": cursor_pos - len(prefix),
                "cursor_end": cursor_pos, "metadata": {}}

    def do_inspect(self, code, cursor_pos, detail_level=0, omit_sections=()):
        name = ""
        for m in NAME_AT.finditer(code):
            if m.start() <= cursor_pos <= m.end():
                name = m.group(0)
        doc = self.state.doc(name) if name else None
        return {"status": "ok", "found": doc is not None,
                "data": {"text/plain": doc} if doc else {}, "metadata": {}}


def _on_path(d):
    """True if directory d is on this Python's own path (site-packages)."""
    import site

    own = site.getsitepackages() + [site.getusersitepackages()]
    return any(os.path.realpath(d) == os.path.realpath(p) for p in own)


def install(argv):
    """Writes the kernelspec (kernel.json) for this Python and this masq."""
    import argparse

    from jupyter_client.kernelspec import KernelSpecManager

    p = argparse.ArgumentParser(prog="python3 -m masq_kernel install")
    p.add_argument("--user", action="store_true", help="install for this user only")
    p.add_argument("--prefix", help="install under PREFIX/share/jupyter/kernels")
    p.add_argument("--sys-prefix", action="store_true",
                   help="install in this Python's prefix (%s): a virtual environment's own" % sys.prefix)
    args = p.parse_args(argv)
    if args.sys_prefix:
        args.prefix = sys.prefix
    spec = {"argv": [sys.executable, "-m", "masq_kernel", "-f", "{connection_file}"],
            "display_name": "masq", "language": "masq"}
    places = [os.path.dirname(os.path.dirname(os.path.abspath(masq.__file__))),
              os.path.dirname(os.path.abspath(__file__))]
    if not all(_on_path(d) for d in places):
        # an uninstalled build: where the masq package and this module were
        # found, the package first (python/ has a masq/ of .py files only)
        spec["env"] = {"PYTHONPATH": os.pathsep.join(dict.fromkeys(places))}
    d = tempfile.mkdtemp()
    try:
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump(spec, f, indent=1)
        dest = KernelSpecManager().install_kernel_spec(d, "masq", user=args.user, prefix=args.prefix)
    finally:
        shutil.rmtree(d)
    print("installed the masq kernel in %s" % dest)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "install":
        return install(sys.argv[2:])
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(kernel_class=MasqKernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
