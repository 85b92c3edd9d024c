"""redis-server processes for the Python tests: each on a free loopback
port, in its own temporary directory, with build/bloomkit.so loaded, and
stopped by its pid (SIGTERM, then SIGKILL) when the test is done."""
import os
import socket
import subprocess
import tempfile
import time

import redis

BUILD = os.path.abspath(os.environ.get("BUILD", "build"))
MODULE = os.path.join(BUILD, "bloomkit.so")


def _port_is_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port(with_bus=False):
    """A port the kernel says is free; a cluster node also needs port+10000
    for its bus. Other suites run at the same time, so ask each time."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 55000 and (not with_bus or _port_is_free(port + 10000)):
            return port
    raise RuntimeError("no free loopback port")


class RedisServer:
    def __init__(self, *extra):
        self.extra = list(extra)
        self.cluster = "--cluster-enabled" in self.extra
        self.dir = tempfile.mkdtemp(prefix="bloomkit-pytest-redis.")
        self.port = free_port(self.cluster)
        self.proc = None
        self.client = None

    def start(self):
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--daemonize", "no", "--dir", self.dir, "--save", "", "--appendonly", "no",
                "--logfile", os.path.join(self.dir, "log"), "--loadmodule", MODULE] + self.extra
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(host="127.0.0.1", port=self.port)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited: " + self.log())
            try:
                if self.client.ping():
                    return self
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not answer: " + self.log())

    def log(self):
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()[-2000:]
        except OSError:
            return "(no log)"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        subprocess.run(["rm", "-rf", self.dir], check=False)


def start_cluster(masters=3):
    """A cluster of `masters` nodes made by redis-cli --cluster create; the
    caller stops the returned servers."""
    nodes = []
    try:
        for _ in range(masters):
            nodes.append(RedisServer("--cluster-enabled", "yes", "--cluster-config-file",
                                     "nodes.conf", "--cluster-node-timeout", "5000").start())
        out = subprocess.run(["redis-cli", "--cluster", "create"] +
                             ["127.0.0.1:%d" % n.port for n in nodes] +
                             ["--cluster-replicas", "0", "--cluster-yes"],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError("cluster create failed: " + out.stdout[-1000:] + out.stderr)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = [n.client.execute_command("CLUSTER", "INFO").decode() for n in nodes]
            if all("cluster_state:ok" in s for s in states):
                return nodes
            time.sleep(0.1)
        raise RuntimeError("cluster did not become ok")
    except BaseException:
        for n in nodes:
            n.stop()
        raise
