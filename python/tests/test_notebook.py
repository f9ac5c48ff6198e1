"""examples/python/masked_stats.ipynb runs headless (nbclient, the python3
kernel, this build's masq module) and prints what the committed notebook
shows: masked statistics of a CSV with holes that agree with numpy.ma, and
the torch.masked tutorial's softmax with its all-masked column kept masked."""
import copy
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

import masq  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NB = os.path.join(ROOT, "examples", "python", "masked_stats.ipynb")


def texts(nb):
    """Each code cell's outputs as text: streams, results, errors."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        parts = []
        for o in cell.get("outputs", []):
            if o.output_type == "stream":
                parts.append(o.text)
            elif o.output_type in ("execute_result", "display_data"):
                parts.append(o.data.get("text/plain", ""))
            else:
                parts.append("%s: %s" % (o.get("ename"), o.get("evalue")))
        out.append("".join(parts))
    return out


@pytest.mark.skipif(not os.path.exists(NB), reason="outside a checkout")
def test_notebook_runs_and_shows_its_outputs(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.path.dirname(os.path.dirname(masq.__file__)))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(NB, as_version=4)
    want = texts(nb)
    fresh = copy.deepcopy(nb)
    for cell in fresh.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    nbclient.NotebookClient(fresh, kernel_name="python3", timeout=120,
                            resources={"metadata": {"path": os.path.dirname(NB)}}).execute()
    got = texts(fresh)
    assert got == want
    # and what those outputs say, checked on their own
    assert "missing per column: [2 2 2]" in got[0]
    assert got[2].strip() == "True"  # masq's statistics are numpy.ma's
    assert "[[0.6037 -- --]\n [0.3963 -- 1.0]\n [-- -- --]]" in got[4]  # the seed's numbers
    assert "nan" in got[5]  # the dense trick's NaN column
