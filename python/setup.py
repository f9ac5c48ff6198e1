"""Builds the masq module: `pip install ./python` from a masq checkout, or
`pip install masq-VERSION.tar.gz` from the sdist (`python3 setup.py sdist`),
which carries libmasq's sources. Either way it makes libmasq.a with masq's
own Makefile first (a C compiler and make; re2c and bison only in a
checkout, the sdist has the generated front end) and compiles the module
against it; nothing is downloaded. The metadata (numpy needed at run time)
is in pyproject.toml. See docs/PYTHON.md."""
import glob
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
# libmasq's sources: the checkout around python/, or the sdist's copy
CHECKOUT = os.path.dirname(HERE)
BUNDLED = os.path.join(HERE, "libmasq")
ROOT = BUNDLED if os.path.exists(os.path.join(BUNDLED, "Makefile")) else CHECKOUT
LIB = os.path.join(ROOT, "build", "libmasq.a")
# what `make build/libmasq.a` reads, copied into the sdist
LIB_PARTS = ["Makefile", "LICENSE", "include", "core", "runtime", "vm", "lexer", "parser", "stdlib", "api"]
GENERATED = ["build/gen/parser.c", "build/gen/parser.h", "build/gen/lexer.c"]


def version():
    with open(os.path.join(ROOT, "include", "masq.h")) as f:
        for line in f:
            if line.startswith("#define MASQ_VERSION_STRING"):
                return line.split('"')[1]
    return "0"


class BuildWithLibmasq(build_ext):
    """Makes libmasq.a (build/libmasq.a of the checkout or of the sdist's
    copy) before compiling the module."""

    def run(self):
        subprocess.check_call(["make", "-C", ROOT, "build/libmasq.a"])
        super().run()


class SdistWithLibmasq(sdist):
    """The sdist carries libmasq's sources (python/libmasq/) and the
    generated lexer and parser, so it builds without the checkout, re2c or
    bison. Copies keep their times: make sees the generated files as new."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        if ROOT != CHECKOUT:
            return  # an sdist of an sdist: its libmasq/ is among the files already
        subprocess.check_call(["make", "-C", CHECKOUT] + GENERATED)
        dest = os.path.join(base_dir, "libmasq")
        for part in LIB_PARTS + GENERATED:
            src, dst = os.path.join(CHECKOUT, part), os.path.join(dest, part)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.isdir(src):
                shutil.copytree(src, dst, copy_function=shutil.copy2)
            else:
                shutil.copy2(src, dst)


setup(
    version=version(),
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
            depends=[os.path.join("src", "pymasq.h")],
        )
    ],
    cmdclass={"build_ext": BuildWithLibmasq, "sdist": SdistWithLibmasq},
)
