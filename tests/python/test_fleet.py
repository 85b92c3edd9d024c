"""The tool on a seen-set in Redis (dedup/check/add/info with redis://
URLs, through libbloomkit-redis): the very filter Python's ShardedFilter
uses, on one server and on a 3-master cluster; each line printed by
exactly one run even when a reply is lost and the claim is sent again;
a server restarted from its AOF mid-run; a server out of memory; a server
without BF.CLAIM."""
import os
import re
import socket
import subprocess
import threading
import time

import pytest
import redis

import servers
from bloomkit.redis import ShardedFilter, key_slot


def urls(lo, hi):
    return ["https://crawl.example.com/page/%d" % i for i in range(lo, hi)]


def run(tool, *args, lines=(), check=True):
    proc = subprocess.run([tool, *args], input="".join(l + "\n" for l in lines).encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    out = proc.stdout.decode().splitlines()
    if check:
        assert proc.returncode == 0, proc.stderr.decode()
    return proc.returncode, out, proc.stderr.decode()


def url_of(server, name):
    return "redis://127.0.0.1:%d/%s" % (server.port, name)


# a BF.CLAIM command (not COMMAND INFO BF.CLAIM) as the client writes it
CLAIM_COMMAND = re.compile(rb"\*\d+\r\n\$8\r\nBF\.CLAIM\r\n")


class Proxy:
    """A TCP relay in front of a server that can (a) drop the connection
    instead of passing on the first reply to a BF.CLAIM, after the server
    ran it (a reply lost on the way), and (b) rewrite what the client sends."""

    def __init__(self, port, drop_claim=False, rewrite=None, delay_first_claim=0):
        self.target = port
        self.drop_claim = drop_claim
        self.delay_first_claim = delay_first_claim  # seconds the first claim is held
        self.rewrite = rewrite
        self.dropped = 0
        self.drop_pattern = CLAIM_COMMAND
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            state = {"claim_sent": False}
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state), daemon=True).start()

    def _up(self, client, server, state):
        try:
            while True:
                data = client.recv(1 << 16)
                if not data:
                    break
                if self.rewrite:
                    data = data.replace(*self.rewrite)
                if self.drop_pattern.search(data):
                    state["claim_sent"] = True
                    if self.delay_first_claim:
                        delay, self.delay_first_claim = self.delay_first_claim, 0
                        time.sleep(delay)
                server.sendall(data)
        except OSError:
            pass
        server.close()

    def _down(self, server, client, state):
        try:
            while True:
                data = server.recv(1 << 16)
                if not data:
                    break
                if self.drop_claim and state["claim_sent"] and not self.dropped:
                    self.dropped += 1
                    client.shutdown(socket.SHUT_RDWR)
                    break
                client.sendall(data)
        except OSError:
            pass
        client.close()
        server.close()

    def close(self):
        self.listener.close()


def test_dedup_creates_the_filter_and_prints_each_line_once(redis_server, tool):
    url = url_of(redis_server, "once")
    lines = urls(0, 3000) + urls(1000, 2000) + urls(2500, 4000)
    _, out, _ = run(tool, "dedup", "--redis", url, "-n", "100000", "-p", "1e-7", lines=lines)
    assert out == urls(0, 4000)
    # the layout Python's ShardedFilter reads, and a second run prints only new lines
    meta = redis_server.client.hgetall("once:meta")
    assert meta[b"shards"] == b"1" and meta[b"capacity"] == b"100000"
    # its shard starts at the rate asked for (TIGHTENING 0.5): the size of
    # a filter that never grows, not RedisBloom's first sub-filter at p/2
    c = redis_server.client
    c.execute_command("BF.RESERVE", "ref", "1e-07", 100000, "NONSCALING")
    assert c.execute_command("BF.INFO", "once:0{0}", "SIZE") == \
        c.execute_command("BF.INFO", "ref", "SIZE")
    _, out, _ = run(tool, "dedup", "--redis", url, lines=urls(3500, 4500))
    assert out == urls(4000, 4500)
    _, out, _ = run(tool, "info", "--json", url)
    assert '"items": 4500' in out[0] and '"shards": 1' in out[0]


def test_order_kept_with_two_batches_in_flight(redis_server, tool):
    # batches of 16,384 lines, the next sent before the last is answered:
    # a line whose key the batch in flight also holds is that batch's to
    # claim, so the first spelling is the one printed, in input order
    url = url_of(redis_server, "order")
    run(tool, "dedup", "--redis", url, "-n", "100000", "-p", "1e-7")
    host = [u.replace("crawl.example.com", "Crawl.EXAMPLE.com") for u in urls(10000, 30000)]
    lines = urls(0, 20000) + host + urls(0, 5) + urls(30000, 50000)
    # the first batch's claim held back: the second one runs first
    proxy = Proxy(redis_server.port, delay_first_claim=0.5)
    try:
        _, out, _ = run(tool, "dedup", "--normalize", "url", "--redis",
                        "redis://127.0.0.1:%d/order" % proxy.port, lines=lines)
    finally:
        proxy.close()
    want = urls(0, 20000) + host[10000:] + urls(30000, 50000)
    assert out == want
    rc, out, _ = run(tool, "check", "-c", "--normalize", "url", url, lines=lines)
    assert rc == 0 and out == [str(len(lines))]


def test_a_rerun_with_its_run_id_answers_as_the_first_run(redis_server, tool):
    url = url_of(redis_server, "rerun")
    run(tool, "dedup", "--redis", url, "-n", "100000", "-p", "1e-7")
    lines = urls(0, 40000) + urls(0, 100)
    _, first, _ = run(tool, "dedup", "--redis", url, "--run-id", "job-7", lines=lines)
    assert first == urls(0, 40000)
    # the worker was killed after its claims were recorded and before its
    # output was used; run again with its id, it prints the same lines
    _, again, _ = run(tool, "dedup", "--redis", url, "--run-id", "job-7", lines=lines)
    assert again == first
    assert redis_server.client.execute_command("BF.CARD", "rerun:0{0}") == 40000
    # another run (another id, or none) finds them seen
    _, other, _ = run(tool, "dedup", "--redis", url, "--run-id", "job-8", lines=lines)
    assert other == []
    rc, _, err = run(tool, "dedup", "--run-id", "x", lines=["a"], check=False)
    assert rc == 2 and "--run-id are for --redis" in err


def test_tool_and_python_share_one_filter(redis_server, tool):
    url = url_of(redis_server, "shared")
    sf = ShardedFilter(redis_server.client, "shared", shards=4, capacity=100000,
                       error_rate=1e-7, tightening=0.5)
    from bloomkit.redis import shard_capacity
    redis_server.client.execute_command("BF.RESERVE", "ref4", "1e-07",
                                        shard_capacity(100000, 4), "NONSCALING")
    assert redis_server.client.execute_command("BF.INFO", sf.keys[0], "SIZE") == \
        redis_server.client.execute_command("BF.INFO", "ref4", "SIZE")  # tightening=0.5
    assert all(sf.claim(urls(0, 500)))
    # opened, not created: the tool takes Python's layout (4 shards)
    _, out, _ = run(tool, "dedup", "--redis", url, lines=urls(0, 1000))
    assert out == urls(500, 1000)
    assert not any(sf.claim(urls(0, 1000)))
    rc, out, _ = run(tool, "check", "-c", url, lines=urls(0, 1000) + ["not-added"])
    assert rc == 0 and out == ["1000"]
    rc, out, _ = run(tool, "check", "--absent", url, lines=urls(990, 1010), check=False)
    assert rc == 0 and out == urls(1000, 1010)
    _, out, err = run(tool, "add", "--progress", url, lines=urls(995, 1005))
    assert "10 lines, 5 new" in err
    assert sf.mexists(urls(1000, 1005)) == [True] * 5
    rc, _, err = run(tool, "dedup", "--redis", url, "--shards", "3", lines=["x"], check=False)
    assert rc == 2 and "4 shards, not 3" in err


def test_python_normalizes_as_the_tool(redis_server, tool):
    # the tool's --normalize url and ShardedFilter(normalize="url") send the
    # same keys: a URL the tool claimed is seen by Python in any spelling
    url = url_of(redis_server, "norm")
    spelled = ["https://Crawl.EXAMPLE.com:443/a/./b/%7euser#top", "HTTP://example.org"]
    _, out, _ = run(tool, "dedup", "--normalize", "url", "--redis", url, "-n", "1000",
                    "-p", "1e-7", lines=spelled)
    assert out == spelled
    sf = ShardedFilter(redis_server.client, "norm", normalize="url")
    assert sf.mexists(["https://crawl.example.com/a/b/~user", "http://EXAMPLE.org/"]) == [True] * 2
    assert sf.claim(["http://example.org:80/", "https://new.example/"]) == [False, True]
    assert not ShardedFilter(redis_server.client, "norm").exists("http://EXAMPLE.org/")
    import bloomkit
    assert bloomkit.normalize(["HTTP://EXAMPLE.org"], "url") == [b"http://example.org/"]


def test_missing_filter_and_bad_urls(redis_server, tool):
    rc, out, err = run(tool, "dedup", "--redis", url_of(redis_server, "nothing"), lines=["a"],
                       check=False)
    assert rc == 2 and out == [] and "no such filter" in err
    rc, _, err = run(tool, "dedup", "--redis", "http://x/y", lines=["a"], check=False)
    assert rc == 2 and "not a redis:// URL" in err
    rc, _, err = run(tool, "dedup", "--redis", "redis://127.0.0.1:%d/n" % servers.free_port(),
                     "-n", "10", lines=["a"], check=False)
    assert rc == 2 and "cannot connect" in err
    rc, _, err = run(tool, "info", "redis://user:s3cret@127.0.0.1:%d/n" % servers.free_port(),
                     check=False)
    assert rc == 2 and "s3cret" not in err and "***" in err


def test_cluster_spreads_the_shards_and_shares_with_python(cluster, tool):
    url = "redis://127.0.0.1:%d/crawl" % cluster[1].port  # any node
    lines = urls(0, 20000) + urls(0, 100)
    _, out, _ = run(tool, "dedup", "--redis", url, "-n", "1000000", "-p", "1e-7", lines=lines)
    assert out == urls(0, 20000)
    owned = [len(node.client.keys("crawl:*{*}")) for node in cluster]
    assert sum(owned) == 24 and all(n > 0 for n in owned), owned  # 8 shards per master
    from redis.cluster import RedisCluster
    client = RedisCluster(host="127.0.0.1", port=cluster[0].port)
    sf = ShardedFilter(client, "crawl")
    assert sf.shards == 24
    assert sf.mexists(urls(0, 20000)) == [True] * 20000
    assert all(sf.claim(urls(20000, 20100)))
    _, out, _ = run(tool, "dedup", "--redis", url, lines=urls(19950, 20200))
    assert out == urls(20100, 20200)
    _, out, _ = run(tool, "info", url)
    assert any(l.startswith("shards:") and "24 on 3 cluster nodes" in l for l in out)


def test_a_lost_reply_is_claimed_once(redis_server, tool):
    run(tool, "dedup", "--redis", url_of(redis_server, "lost"), "-n", "100000", "-p", "1e-7")
    proxy = Proxy(redis_server.port, drop_claim=True)
    try:
        _, out, _ = run(tool, "dedup", "--redis", "redis://127.0.0.1:%d/lost" % proxy.port,
                        lines=urls(0, 5000))
    finally:
        proxy.close()
    assert proxy.dropped == 1
    # the claim ran before its reply was dropped; sent again with its id, it
    # answered as the first try did: every line printed, once
    assert out == urls(0, 5000)
    _, out, _ = run(tool, "dedup", "--redis", url_of(redis_server, "lost"), lines=urls(0, 5000))
    assert out == []


def test_a_server_without_claims_is_named(redis_server, tool):
    run(tool, "dedup", "--redis", url_of(redis_server, "plain"), "-n", "1000", "-p", "1e-7")
    # the server is made to say it has no BF.CLAIM (as RedisBloom does)
    proxy = Proxy(redis_server.port, rewrite=(b"$8\r\nBF.CLAIM", b"$8\r\nBF.NONEX"))
    try:
        _, out, err = run(tool, "dedup", "--redis", "redis://127.0.0.1:%d/plain" % proxy.port,
                          lines=urls(0, 100) + urls(0, 10))
    finally:
        proxy.close()
    assert out == urls(0, 100)
    assert "no BF.CLAIM" in err and "BF.MADD" in err
    assert redis_server.client.execute_command("BF.CARD", "plain:0{0}") == 100
    assert not redis_server.client.keys("plain:0{0}:claim:*")


def test_a_lost_madd_reply_stops_the_run(redis_server, tool):
    run(tool, "dedup", "--redis", url_of(redis_server, "plain2"), "-n", "1000", "-p", "1e-7")
    # no claims, and the reply to the BF.MADD lost: it cannot be sent again
    # (it would answer "seen"), so the run stops with the lines unprinted
    proxy = Proxy(redis_server.port, drop_claim=True,
                  rewrite=(b"$8\r\nBF.CLAIM", b"$8\r\nBF.NONEX"))
    proxy.drop_pattern = re.compile(rb"\*\d+\r\n\$7\r\nBF\.MADD\r\n")
    try:
        rc, out, err = run(tool, "dedup", "--redis", "redis://127.0.0.1:%d/plain2" % proxy.port,
                           lines=urls(0, 100), check=False)
    finally:
        proxy.close()
    assert proxy.dropped == 1
    assert rc == 2 and out == [] and "cannot be sent again" in err


def test_out_of_memory_is_an_error_and_nothing_unrecorded_is_printed(tool):
    server = servers.RedisServer().start()
    try:
        url = url_of(server, "full")
        run(tool, "dedup", "--redis", url, "-n", "100000", "-p", "0.001")
        server.client.config_set("maxmemory", 1)
        rc, out, err = run(tool, "dedup", "--redis", url, lines=urls(0, 100), check=False)
        assert rc == 2 and out == [] and "OOM" in err
        assert server.client.execute_command("BF.CARD", "full:0{0}") == 0
    finally:
        server.stop()


def test_max_bytes_stops_the_run_with_every_printed_line_recorded(tool):
    # the module's MAX_BYTES (a cap on a filter's growth) reached mid-run:
    # exit 2 with the server's words; the lines printed are the input's
    # first ones, in order, and every one of them is in the filter
    capped = servers.RedisServer("MAX_BYTES", "20000").start()  # module arguments
    try:
        url = url_of(capped, "capped")
        run(tool, "dedup", "--redis", url, "-n", "1000", "-p", "1e-7")
        lines = urls(0, 60000)
        rc, out, err = run(tool, "dedup", "--redis", url, lines=lines, check=False)
        assert rc == 2 and "MAX_BYTES" in err, err
        assert 1000 <= len(out) < len(lines) and out == lines[:len(out)]
        sf = ShardedFilter(capped.client, "capped")
        assert sf.mexists(out) == [True] * len(out)
    finally:
        capped.stop()


def test_a_server_restarted_from_its_aof_mid_run(tool):
    server = servers.RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    try:
        url = url_of(server, "aof")
        run(tool, "dedup", "--redis", url, "-n", "100000", "-p", "1e-7")
        proc = subprocess.Popen([tool, "dedup", "--redis", url], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdin.write("".join(u + "\n" for u in urls(0, 300)).encode())
        proc.stdin.flush()
        got = [proc.stdout.readline().decode().rstrip("\n") for _ in range(300)]
        assert got == urls(0, 300)  # printed while the input waits
        server.proc.kill()  # the server dies between two batches
        server.proc.wait()
        server.start()  # and comes back from its AOF
        proc.stdin.write("".join(u + "\n" for u in urls(200, 600)).encode())
        proc.stdin.close()
        rest = proc.stdout.read().decode().splitlines()
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
        assert rest == urls(300, 600)
    finally:
        server.stop()


def read_lines(proc, n, timeout=60):
    """n lines of proc's output, or fails after timeout seconds."""
    import select
    got, buf, deadline = [], b"", time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while len(got) < n:
        left = deadline - time.monotonic()
        assert left > 0, "only %d of %d lines came" % (len(got), n)
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        assert chunk, "the output ended after %d of %d lines" % (len(got), n)
        buf += chunk
        *lines, buf = buf.split(b"\n")
        got += [line.decode() for line in lines]
    assert buf == b"" and len(got) == n, "more lines than %d came" % n
    return got


def feed(proc, lines):
    proc.stdin.write("".join(u + "\n" for u in lines).encode())
    proc.stdin.flush()


def owner_of(cluster, key):
    slot = key_slot(key)
    for node in cluster:
        if node.client.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot):
            return node
    raise AssertionError("no node holds %s" % key)


def test_a_slot_migrated_during_a_run(cluster, tool):
    from test_sharded import move_keys, node_ids
    url = "redis://127.0.0.1:%d/mig" % cluster[0].port
    run(tool, "dedup", "--redis", url, "-n", "100000", "-p", "1e-7", "--shards", "3")
    from redis.cluster import RedisCluster
    sf = ShardedFilter(RedisCluster(host="127.0.0.1", port=cluster[0].port), "mig")
    key = sf.keys[0]
    slot = key_slot(key)
    source = owner_of(cluster, key)
    target = next(n for n in cluster if n is not source)
    ids = node_ids(cluster)
    proc = subprocess.Popen([tool, "dedup", "--redis", url], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        feed(proc, urls(0, 300))
        assert read_lines(proc, 300) == urls(0, 300)
        # half-way through a migration: the key moved, the slot not yet;
        # the source answers ASK for it
        target.client.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source.port])
        source.client.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target.port])
        move_keys(slot, source, target)  # the shard and its claims' records
        feed(proc, urls(200, 600))
        assert read_lines(proc, 300) == urls(300, 600)
        # the migration finished: the source answers MOVED
        move_keys(slot, source, target)
        for node in cluster:
            node.client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[target.port])
        feed(proc, urls(500, 900))
        proc.stdin.close()
        assert read_lines(proc, 300) == urls(600, 900)
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert owner_of(cluster, key) is target
    assert sf.mexists(urls(0, 900)) == [True] * 900


def test_a_failover_during_a_run(tool):
    """A master killed mid-run; its replica is promoted; the run goes on
    and loses nothing the replica had."""
    # the nodes' timeout (5 s) is long enough that a busy machine does not
    # fail a master over before it is killed (acknowledged claims would be
    # lost then, as Redis Cluster's asynchronous replication allows), and
    # short enough for a failover within the tool's 15 s of retries
    nodes = servers.start_cluster(3)
    replica = servers.RedisServer("--cluster-enabled", "yes", "--cluster-config-file",
                                  "nodes.conf", "--cluster-node-timeout", "5000").start()
    try:
        url = "redis://127.0.0.1:%d/fo" % nodes[1].port
        run(tool, "dedup", "--redis", url, "-n", "100000", "-p", "1e-7", "--shards", "3")
        victim = nodes[0]
        vid = victim.client.execute_command("CLUSTER", "MYID").decode()
        out = subprocess.run(["redis-cli", "--cluster", "add-node",
                              "127.0.0.1:%d" % replica.port, "127.0.0.1:%d" % victim.port,
                              "--cluster-slave", "--cluster-master-id", vid],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout[-500:] + out.stderr
        deadline = time.monotonic() + 30
        while replica.client.info("replication").get("master_link_status") != "up":
            assert time.monotonic() < deadline, "the replica never synced"
            time.sleep(0.1)
        proc = subprocess.Popen([tool, "dedup", "--redis", url], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            feed(proc, urls(0, 3000))
            assert read_lines(proc, 3000) == urls(0, 3000)
            # every write of the master reached the replica before it dies
            # (WAIT would only wait for this client's own writes)
            deadline = time.monotonic() + 30
            while True:
                info = victim.client.info("replication")
                if info.get("slave0", {}).get("offset") == info["master_repl_offset"]:
                    break
                assert time.monotonic() < deadline, "the replica never caught up"
                time.sleep(0.05)
            victim.proc.kill()
            victim.proc.wait()
            feed(proc, urls(2000, 5000))
            proc.stdin.close()
            assert read_lines(proc, 2000, timeout=90) == urls(3000, 5000)
            assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
        finally:
            if proc.poll() is None:
                proc.kill()
        role = replica.client.execute_command("ROLE")[0]
        assert role == b"master", role
    finally:
        replica.stop()
        for node in nodes:
            node.stop()
