"""pip install ./python (from a masq checkout): builds the masq module
against the checkout's libmasq.a, making it first if needed (`make` needs
a C compiler, re2c and bison, as for masq itself; nothing is downloaded).
numpy is needed at run time. See docs/PYTHON.md."""
import glob
import os
import subprocess
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIB = os.path.join(ROOT, "build", "libmasq.a")


def version():
    with open(os.path.join(ROOT, "include", "masq.h")) as f:
        for line in f:
            if line.startswith("#define MASQ_VERSION_STRING"):
                return line.split('"')[1]
    return "0"


class BuildWithLibmasq(build_ext):
    """Makes build/libmasq.a in the checkout before compiling the module."""

    def run(self):
        subprocess.check_call(["make", "-C", ROOT, "build/libmasq.a"])
        super().run()


setup(
    name="masq",
    version=version(),
    description="masq, the masked tensor language, inside Python",
    license="see LICENSE in the masq checkout",
    packages=["masq"],  # masq/__init__.py re-exports the extension; masq/dask.py
    package_data={"masq": ["__init__.pyi", "py.typed"]},  # type stubs (PEP 561)
    py_modules=["masq_kernel"],  # the Jupyter kernel: python3 -m masq_kernel install --user
    ext_modules=[
        Extension(
            "masq._masq",
            sources=sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "src", "*.c"))),
            include_dirs=[os.path.join(ROOT, "include")],
            extra_compile_args=["-std=c11", "-fvisibility=hidden"],
            extra_objects=[LIB],
            libraries=["m", "z"],
            extra_link_args=["-pthread"],
            depends=[os.path.join(HERE, "src", "pymasq.h"), os.path.join(ROOT, "include", "masq.h")],
        )
    ],
    cmdclass={"build_ext": BuildWithLibmasq},
)
