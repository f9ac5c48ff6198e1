"""The Jupyter kernel (python/masq_kernel.py), headless through
jupyter_client: cells in one State, results as text and HTML tables with
masked cells greyed, print, errors with carets, :help, completion,
inspection and interrupts."""
import os
import subprocess
import sys
import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

import masq  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("jupyter"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYDIR, os.path.dirname(masq.__file__)]))
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
