"""Packaging, offline: `python3 setup.py sdist` makes an sdist that carries
libmasq's sources; pip builds and installs it into a fresh virtual
environment without the network (--no-index --no-build-isolation; the
environment sees the system's numpy, setuptools and jupyter_client, there
being no PyPI), with the type stubs; the module works there from any
directory; and `python -m masq_kernel install --sys-prefix` puts a kernel
into the environment that Jupyter there finds. Skipped, and says so,
without venv/ensurepip. Slow (it compiles libmasq: about a minute)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)

try:
    import ensurepip  # noqa: F401
    import venv  # noqa: F401
    HAVE_VENV = shutil.which("make") is not None
except ImportError:
    HAVE_VENV = False


def sh(*cmd, cwd=None, env=None):
    p = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, "%s failed:\n%s\n%s" % (" ".join(cmd), p.stdout[-3000:], p.stderr[-3000:])
    return p.stdout


@pytest.mark.skipif(not HAVE_VENV, reason="no venv/ensurepip or make: apt-get install python3-venv")
@pytest.mark.skipif(not os.path.exists(os.path.join(PYDIR, "..", "include", "masq.h")),
                    reason="outside a checkout")
def test_sdist_installs_into_a_fresh_venv_with_its_kernel(tmp_path):
    dist, eggs = tmp_path / "dist", tmp_path / "eggs"
    eggs.mkdir()
    # egg-info outside python/: the checkout gets no generated file
    sh(sys.executable, "setup.py", "-q", "egg_info", "-e", str(eggs), "sdist", "-d", str(dist), cwd=PYDIR)
    sdist, = os.listdir(dist)
    assert sdist.startswith("masq-") and sdist.endswith(".tar.gz")
    listing = sh("tar", "tzf", str(dist / sdist))
    for part in ["pyproject.toml", "libmasq/include/masq.h", "libmasq/Makefile", "libmasq/build/gen/parser.c",
                 "masq/__init__.pyi", "masq/py.typed", "masq_kernel.py", "src/module.c"]:
        assert "/" + part in listing, part
    env_dir = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", "--system-site-packages", str(env_dir))
    py = str(env_dir / "bin" / "python")
    sh(py, "-m", "pip", "install", "--no-index", "--no-build-isolation", str(dist / sdist), cwd=str(tmp_path))
    meta = sh(py, "-m", "pip", "show", "masq")
    assert "Requires: numpy" in meta
    out = sh(py, "-c", "import masq, numpy, os\n"
             "assert masq.eval('sum(x)', x=numpy.ma.array([1, 2, 4], mask=[0, 1, 0])) == 5\n"
             "d = os.path.dirname(masq.__file__)\n"
             "assert os.path.exists(os.path.join(d, '__init__.pyi')) and os.path.exists(os.path.join(d, 'py.typed'))\n"
             "print(d)", cwd=str(tmp_path))
    assert out.startswith(str(env_dir))  # the installed one, not the checkout's
    # the kernel, into the environment
    env = dict(os.environ, HOME=str(tmp_path), JUPYTER_DATA_DIR=str(tmp_path / "nodata"))
    env.pop("PYTHONPATH", None)
    env.pop("JUPYTER_PATH", None)
    sh(py, "-m", "masq_kernel", "install", "--sys-prefix", cwd=str(tmp_path), env=env)
    spec = json.load(open(env_dir / "share" / "jupyter" / "kernels" / "masq" / "kernel.json"))
    assert spec["argv"][0] == py and "env" not in spec  # installed: no PYTHONPATH needed
    try:
        import jupyter_client  # noqa: F401
    except ImportError:
        return
    found = sh(py, "-c", "from jupyter_client.kernelspec import KernelSpecManager\n"
               "print(KernelSpecManager().find_kernel_specs()['masq'])", cwd=str(tmp_path), env=env)
    assert found.strip().startswith(str(env_dir))
