"""The bloomkit package's build backend (PEP 517), in the source tree.

Why not setuptools: `pip install ./python` should work offline with any
Python >= 3.9 a user has (pyenv, conda, a venv, Debian's), and setuptools
is not always there (a venv has none; pyenv's has no `wheel`, so
bdist_wheel fails), while a PEP 517 build with no requirements needs
nothing pip has to fetch. The package is one C extension and a few Python
files, so building the wheel is short: compile the extension with the C
compiler against this interpreter's headers (sysconfig) and the library's
static archive (build/libbloomkit.a, made with `make` when missing), and
zip it with the Python files and the metadata the wheel format asks for
(PEP 427: METADATA, WHEEL, RECORD with sha256 digests).

Needs a C compiler, make, libxxhash-dev and the interpreter's C headers
(Debian: python3-dev; pyenv and conda include them).

Also runnable as `python3 bkbuild.py --inplace`: builds the extension next
to the package sources (what `make python` does).
"""
import base64
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

NAME = "bloomkit"
VERSION = "0.1.0"
SUMMARY = ("Bloom filters and bitmaps (bloomkit's C library), a Scrapy dupefilter "
           "and a Bloom filter sharded over a Redis Cluster")
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
SOURCES = ["errors.c", "keys.c", "mapguard.c", "fork.c", "filter.c", "bitmap.c", "module.c"]
PACKAGE_FILES = ["__init__.py", "__init__.pyi", "_bloomkit.pyi", "py.typed", "redis.py",
                 "scrapy.py"]


def _static_library():
    lib = os.environ.get("BLOOMKIT_STATIC_LIB") or os.path.join(TOP, "build", "libbloomkit.a")
    if not os.path.exists(lib) and os.path.exists(os.path.join(TOP, "Makefile")):
        subprocess.run(["make", "-C", TOP, "build/libbloomkit.a"], check=True,
                       stdout=sys.stderr)
    if not os.path.exists(lib):
        raise SystemExit("bloomkit: %s not found; run `make` in the bloomkit tree first" % lib)
    return lib


def _python_include():
    inc = sysconfig.get_config_var("INCLUDEPY") or sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(inc, "Python.h")):
        raise SystemExit(
            "bloomkit: Python.h not found in %s: this Python's C headers are needed "
            "(Debian: apt-get install python%d.%d-dev, or python3-dev)"
            % (inc, sys.version_info[0], sys.version_info[1]))
    return inc


def build_extension(out_dir):
    """Compiles bloomkit._bloomkit into out_dir; returns the file's name."""
    include = os.environ.get("BLOOMKIT_INCLUDE") or os.path.join(TOP, "include")
    name = "_bloomkit" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
    cc = shlex.split(os.environ.get("CC") or "cc")
    flags = ["-std=gnu11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra",
             "-Wno-missing-field-initializers", "-fvisibility=hidden"]
    if os.environ.get("CI") or os.environ.get("WERROR"):
        flags.append("-Werror")
    cmd = (cc + flags + ["-I" + _python_include(), "-I" + include]
           + [os.path.join(HERE, "src", s) for s in SOURCES]
           + [_static_library(), "-lm", "-pthread", "-o", os.path.join(out_dir, name)])
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    return name


def _wheel_tag():
    impl = "cp" if sys.implementation.name == "cpython" else sys.implementation.name[:2]
    py = "%s%d%d" % (impl, sys.version_info[0], sys.version_info[1])
    abi = py + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (py, abi, plat)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: >=3.9\n" % (NAME, VERSION, SUMMARY))


def _dist_info():
    return "%s-%s.dist-info" % (NAME, VERSION)


# ---- PEP 517 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(_metadata())
    return _dist_info()


def _write_wheel(wheel_directory, files):
    """files: (archive name, bytes) pairs; adds the dist-info and RECORD."""
    tag = _wheel_tag()
    info = _dist_info()
    files = list(files) + [
        (info + "/METADATA", _metadata().encode()),
        (info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: bkbuild\nRoot-Is-Purelib: false\n"
                           "Tag: %s\n" % tag).encode()),
    ]
    record = []
    for arc, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (arc, digest.decode(), len(data)))
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    wheel = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(arc, data)
    return wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory() as tmp:
        ext = build_extension(tmp)
        files = []
        for name in PACKAGE_FILES:
            with open(os.path.join(HERE, NAME, name), "rb") as f:
                files.append((NAME + "/" + name, f.read()))
        with open(os.path.join(tmp, ext), "rb") as f:
            files.append((NAME + "/" + ext, f.read()))
        return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The package runs from the source tree: the extension is built there
    and a .pth file puts the tree on the path."""
    build_extension(os.path.join(HERE, NAME))
    return _write_wheel(wheel_directory, [("bloomkit-src.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    raise SystemExit("bloomkit: the Python package is built from the bloomkit source tree "
                     "(pip install ./python); there is no separate sdist")


if __name__ == "__main__":
    if sys.argv[1:] != ["--inplace"]:
        raise SystemExit("usage: python3 bkbuild.py --inplace")
    print(build_extension(os.path.join(HERE, NAME)))
