"""Shared fixtures of the Python suite: the package comes from python/
(built in place by `make python`), the tool and the module from BUILD."""
import os
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import servers  # noqa: E402

TOOL = os.path.join(servers.BUILD, "bloomkit")


@pytest.fixture(scope="session")
def tool():
    assert os.access(TOOL, os.X_OK), "needs %s (make)" % TOOL
    return TOOL


@pytest.fixture(scope="module")
def redis_server():
    server = servers.RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster():
    nodes = servers.start_cluster(3)
    yield nodes
    for node in nodes:
        node.stop()
