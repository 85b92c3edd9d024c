"""The package installs offline with a plain `python3 -m pip install
./python` (build isolation on, nothing downloaded: the in-tree backend
python/bkbuild.py needs no setuptools or wheel) into a venv made from each
Python here, Debian's and the one first on PATH when it differs (pyenv),
and works from the install alone: the extension carries the library
statically."""
import os
import shutil
import subprocess
import sys

import pytest

import servers

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def interpreters():
    found = [sys.executable]
    first = shutil.which("python3", path=os.environ.get("PATH", ""))
    if first:
        real = subprocess.run([first, "-c", "import sys; print(sys.executable)"],
                              capture_output=True, text=True).stdout.strip()
        if real and os.path.realpath(real) != os.path.realpath(sys.executable):
            found.append(real)
    return found


@pytest.mark.parametrize("python", interpreters())
def test_pip_install_offline_into_a_venv(tmp_path, python):
    venv = str(tmp_path / "venv")
    # A plain venv (pip from ensurepip, no setuptools, no wheel), as a user
    # makes one.
    made = subprocess.run([python, "-m", "venv", venv], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    vpython = os.path.join(venv, "bin", "python")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               BLOOMKIT_STATIC_LIB=os.path.join(servers.BUILD, "libbloomkit.a"))
    env.pop("PYTHONPATH", None)
    out = subprocess.run([vpython, "-m", "pip", "install", os.path.join(TOP, "python")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    check = ("import bloomkit, os, pickle; f = bloomkit.Filter(100, 0.01); f.add('k'); "
             "assert 'k' in pickle.loads(pickle.dumps(f)); d = os.path.dirname(bloomkit.__file__); "
             "print(d); print(sorted(os.listdir(d)))")
    out = subprocess.run([vpython, "-c", check], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    where, listing = out.stdout.splitlines()[:2]
    assert where.startswith(venv), where
    for name in ("__init__.pyi", "_bloomkit.pyi", "py.typed", "scrapy.py", "redis.py"):
        assert name in listing
    so = [n for n in os.listdir(where) if n.startswith("_bloomkit") and n.endswith(".so")]
    needed = subprocess.run(["ldd", os.path.join(where, so[0])], capture_output=True,
                            text=True).stdout
    assert "libbloomkit" not in needed, needed
    # uninstalls cleanly (RECORD lists every file)
    out = subprocess.run([vpython, "-m", "pip", "uninstall", "-y", "bloomkit"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert not os.path.exists(where), os.listdir(where)


def test_example_without_redis_py_says_what_it_needs(tmp_path):
    """examples/cache_guard.py under a Python without redis-py: a message
    naming what to install, not a traceback."""
    (tmp_path / "redis.py").write_text("raise ImportError('No module named redis')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    out = subprocess.run([sys.executable, os.path.join(TOP, "examples", "cache_guard.py"), "1"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1
    assert "needs redis-py" in out.stderr and "pip install redis" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
