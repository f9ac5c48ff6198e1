"""The Jupyter kernel (python/masq_kernel.py), headless through
jupyter_client: cells in one State, results as text and HTML tables with
masked cells greyed, print, errors with carets, :help, completion,
inspection and interrupts; and in this process, that every cell gets a
reply, whatever it raised."""
import importlib.util
import os
import subprocess
import sys
import time

import numpy as np
import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

import masq  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("jupyter"))
    # the built package before python/, whose masq/ holds only its .py files
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(masq.__file__)), PYDIR]))
    out = subprocess.run([sys.executable, "-m", "masq_kernel", "install", "--prefix", prefix],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert "installed the masq kernel" in out
    from jupyter_client.kernelspec import KernelSpecManager
    ksm = KernelSpecManager(kernel_dirs=[os.path.join(prefix, "share", "jupyter", "kernels")])
    km = jupyter_client.KernelManager(kernel_name="masq", kernel_spec_manager=ksm)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def run(kc, code, timeout=60):
    outputs = []
    # stop_on_error=False: after an error the kernel aborts requests already queued
    reply = kc.execute_interactive(code, output_hook=lambda m: outputs.append(m), timeout=timeout,
                                   stop_on_error=False)
    kept = [(m["msg_type"], m["content"]) for m in outputs
            if m["msg_type"] in ("stream", "execute_result", "display_data", "error")]
    return reply["content"], kept


def test_cells_share_a_state_and_show_tables(kernel):
    _, kc = kernel
    reply, out = run(kc, "x = masked([[1.0, 2.0], [3.0, 4.0]], [[true, false], [true, true]])")
    assert reply["status"] == "ok" and out == []
    reply, out = run(kc, "x * 2")
    (kind, content), = out
    assert kind == "execute_result"
    html = content["data"]["text/html"]
    assert html.count("<tr>") == 2 and html.count(">--</td>") == 1 and "background:#eee" in html
    assert "8.0" in content["data"]["text/plain"] and "--" in content["data"]["text/plain"]
    reply, out = run(kc, 'print("sum is", sum(x))')
    assert out[0][0] == "stream" and out[0][1]["text"].startswith("sum is")


def test_pictures_show_inline_as_svg(kernel):
    _, kc = kernel
    reply, out = run(kc, 'print("before")\nhist(tensor([1.0, 2, 2, 3, 3, 3]), bins=3)\n'
                         'show_mask(masked(ones(4, 3), [[true, false, true]]))')
    assert reply["status"] == "ok"
    kinds = [k for k, _ in out]
    assert kinds == ["stream", "display_data", "display_data"], kinds
    hist, mask = out[1][1]["data"], out[2][1]["data"]
    assert hist["image/svg+xml"].startswith("<?xml") and "</svg>" in hist["image/svg+xml"]
    assert "hist of 6 valid entries" in hist["text/plain"]
    assert "<svg" in mask["image/svg+xml"] and "8 of 12 valid" in mask["text/plain"]
    # nothing to draw: the text alone
    reply, out = run(kc, "hist(masked(tensor([1.0]), [false]))")
    (kind, content), = out
    assert kind == "display_data" and "image/svg+xml" not in content["data"]


def test_errors_show_carets(kernel):
    _, kc = kernel
    reply, out = run(kc, "y = [1, 2] + [1, 2, 3]")
    assert reply["status"] == "error" and reply["ename"] == "masq.Error"
    (kind, content), = out
    tb = "\n".join(content["traceback"])
    assert kind == "error" and ":1:5: error: shapes (2,) and (3,) cannot be broadcast" in tb
    assert "^^^" in tb


def test_help_completion_inspect(kernel):
    _, kc = kernel
    _, out = run(kc, ":help softmax")
    assert out[0][1]["text"].startswith("softmax(")
    kc.complete("sof", 3)
    reply = kc.get_shell_msg(timeout=30)["content"]
    assert "softmax" in reply["matches"] and reply["cursor_start"] == 0
    kc.inspect("softmax(x, 0)", 3)
    reply = kc.get_shell_msg(timeout=30)["content"]
    assert reply["found"] and reply["data"]["text/plain"].startswith("softmax(")


def test_interrupt(kernel):
    km, kc = kernel
    # stop_on_error=False: the kernel would abort the next request sent at once
    msg_id = kc.execute("i = 0\nwhile true { i = i + 1 }", stop_on_error=False)
    time.sleep(1.0)
    km.interrupt_kernel()
    while True:
        m = kc.get_shell_msg(timeout=60)
        if m["parent_header"].get("msg_id") == msg_id:
            break
    assert m["content"]["status"] == "error" and m["content"]["ename"] == "KeyboardInterrupt"
    reply, out = run(kc, "1 + 1")
    assert out, reply
    assert out[0][1]["data"]["text/plain"] == "2"


def test_interrupt_during_a_long_conversion(kernel):
    """Ctrl-C while the value of a cell converts to Python (two million
    strings, seconds of work): the cell ends at once, and the kernel goes on."""
    km, kc = kernel
    reply, _ = run(kc, "big = [str(i) for i in range(2000000)]", timeout=120)
    assert reply["status"] == "ok"
    msg_id = kc.execute("big", stop_on_error=False)
    while True:  # the kernel has begun the cell (an interrupt before it would be lost)
        m = kc.get_iopub_msg(timeout=60)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "busy"):
            break
    time.sleep(0.5)
    km.interrupt_kernel()
    t0 = time.monotonic()
    while True:
        m = kc.get_shell_msg(timeout=60)
        if m["parent_header"].get("msg_id") == msg_id:
            break
    assert time.monotonic() - t0 < 1.5
    assert m["content"]["status"] == "error" and m["content"]["ename"] == "KeyboardInterrupt"
    reply, out = run(kc, "big = none\n1 + 1")
    assert out[0][1]["data"]["text/plain"] == "2"


def test_a_list_that_shares_sublists_shows_quickly(kernel):
    _, kc = kernel
    reply, out = run(kc, "l = [1]\nfor i in range(60) { l = [l, l] }\n[l, \"end\"]", timeout=60)
    assert reply["status"] == "ok"
    text = out[0][1]["data"]["text/plain"]
    assert text.startswith("[[[[") and "..." in text and len(text) < 30000


# --- the kernel in this process, its messages captured: every cell gets a reply

@pytest.fixture
def cells():
    spec = importlib.util.spec_from_file_location("masq_kernel", os.path.join(PYDIR, "masq_kernel.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = mod.MasqKernel()
    k.sent = []
    k.send_response = lambda socket, kind, content: k.sent.append((kind, content))
    return mod, k


def test_a_picture_that_cannot_be_sent_is_the_cells_error(cells):
    _, k = cells

    def closed(socket, kind, content):
        raise OSError("the iopub socket is closed")

    k.send_response = closed
    reply = k.do_execute("hist(tensor([1.0, 2.0]))", False)  # the cell ends right after
    assert reply["status"] == "error" and reply["ename"] == "OSError"
    assert "socket is closed" in reply["evalue"]
    reply = k.do_execute("1 + 1", True)
    assert reply["status"] == "ok"


def test_ctrl_c_while_showing_the_value(cells, monkeypatch):
    mod, k = cells

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "to_text", interrupted)
    reply = k.do_execute("[1, 2]", False)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert k.sent[-1][0] == "error"


def test_list_text_is_bounded(cells):
    mod, k = cells
    shared = [1]
    for _ in range(60):
        shared = [shared, shared]
    text = mod.to_text(shared, k.state)
    assert len(text) < mod.MAX_TEXT + 1000 and text.endswith("]")
    loop = ["a"]
    loop.append(loop)
    assert mod.to_text(loop, k.state) == '["a", [...]]'


def shown(k, cell):
    k.sent = []
    reply = k.do_execute(cell, False)
    assert reply["status"] == "ok", reply
    return k.sent[-1][1]["data"]


def test_plain_text_is_masqs_printing(cells):
    """The text of a value is masq's own printing (the REPL's), not numpy's
    repr: masq's digits, masked entries as --, 0-d tensors as tensor(...)."""
    _, k = cells
    data = shown(k, "tensor([0.1, 0.2], dtype=float64) * 3")
    assert data["text/plain"] == "tensor([0.3000, 0.6000], dtype=float64)"
    assert "0.30000000000000004" not in data["text/html"]
    text = shown(k, "masked([1.5, 2.0, 3.0], [true, false, true])")["text/plain"]
    assert text.startswith("MaskedTensor(") and "--" in text and "masked_array" not in text
    assert shown(k, "sum(arange(4))")["text/plain"] == "tensor(6)"
    assert shown(k, '"abc"')["text/plain"] == "abc"
    assert shown(k, '["a", [1, 2], none, true]')["text/plain"] == '["a", [1, 2], none, true]'
    assert shown(k, "fn f(x) = x\nf")["text/plain"] == "<function f>"
    assert shown(k, "_ = 5\n7")["text/plain"] == "7"  # the cell's value, whatever `_` the script set
