"""The package installs offline with pip (`pip install --no-build-isolation
./python`, Debian's setuptools, nothing downloaded) and works from the
install alone: the extension carries the library statically."""
import os
import subprocess
import sys

import servers

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def test_pip_install_offline_into_a_venv(tmp_path):
    venv = str(tmp_path / "venv")
    # --system-site-packages: Debian's pip, setuptools and wheel, offline.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    venv], check=True)
    python = os.path.join(venv, "bin", "python")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               BLOOMKIT_STATIC_LIB=os.path.join(servers.BUILD, "libbloomkit.a"))
    env.pop("PYTHONPATH", None)
    out = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                          os.path.join(TOP, "python")], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    check = ("import bloomkit, os, pickle; f = bloomkit.Filter(100, 0.01); f.add('k'); "
             "assert 'k' in pickle.loads(pickle.dumps(f)); d = os.path.dirname(bloomkit.__file__); "
             "print(d); print(sorted(os.listdir(d)))")
    out = subprocess.run([python, "-c", check], capture_output=True, text=True, env=env,
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
