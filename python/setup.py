"""Builds the bloomkit Python package: the C extension bloomkit._bloomkit,
linked statically against the library's objects (build/libbloomkit.a, made
with -fPIC by the top-level Makefile), so the package works without the
library being installed.

BLOOMKIT_STATIC_LIB names another libbloomkit.a; BLOOMKIT_INCLUDE another
directory holding bloomkit/bloomkit.h. When the archive is missing and this
directory sits in the bloomkit source tree, `make` builds it first.
"""
import os
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def static_library():
    lib = os.environ.get("BLOOMKIT_STATIC_LIB") or os.path.join(TOP, "build", "libbloomkit.a")
    if not os.path.exists(lib) and os.path.exists(os.path.join(TOP, "Makefile")):
        subprocess.run(["make", "-C", TOP, "build/libbloomkit.a"], check=True)
    if not os.path.exists(lib):
        raise SystemExit("bloomkit: %s not found; run `make` in the bloomkit tree first" % lib)
    return lib


def compile_args():
    args = ["-std=gnu11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]
    if os.environ.get("CI") or os.environ.get("WERROR"):
        args.append("-Werror")
    return args


SOURCES = ["errors.c", "keys.c", "mapguard.c", "filter.c", "bitmap.c", "module.c"]
INCLUDE = os.environ.get("BLOOMKIT_INCLUDE") or os.path.join(TOP, "include")
LIBRARY = static_library()

extension = Extension(
    "bloomkit._bloomkit",
    sources=[os.path.join("src", name) for name in SOURCES],
    # The archive and the public header too: a rebuilt library must be
    # linked in again, or the module keeps the old one's behaviour.
    depends=[os.path.join("src", "pybk.h"), LIBRARY,
             os.path.join(INCLUDE, "bloomkit", "bloomkit.h")],
    include_dirs=[INCLUDE],
    extra_objects=[LIBRARY],
    extra_compile_args=compile_args(),
    libraries=["m"],
)

setup(
    name="bloomkit",
    version="0.1.0",
    description="Bloom filters and bitmaps (bloomkit's C library), a Scrapy dupefilter "
    "and a Bloom filter sharded over a Redis Cluster",
    python_requires=">=3.9",
    packages=["bloomkit"],
    package_data={"bloomkit": ["py.typed", "*.pyi"]},
    ext_modules=[extension],
    zip_safe=False,
)
