"""A crawler fleet on one seen-set in Redis (bench/fleet.sh), in one run:

1. `bloomkit dedup --normalize url --redis` against Python's
   ShardedFilter.claim on the same server (the URLs in batches of 16,384,
   and one URL a call as the Scrapy dupefilter asks), alternating rounds,
   medians; then the tool on a local 3-master cluster against one server.
2. Memory: the seen-set at a billion URLs and p = 0.001 (the shards'
   payload, BF.INFO's Size, summed) against scrapy-redis's fingerprint set
   (SADD of 40 hex characters a request) measured at 1M and 10M requests
   (used_memory before and after) and extrapolated.

BK_BENCH_QUICK=1 divides the sizes by 10.
"""
import hashlib
import os
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "python"))
sys.path.insert(0, os.path.join(TOP, "tests", "python"))

import servers  # noqa: E402
from bloomkit.redis import ShardedFilter  # noqa: E402

QUICK = os.environ.get("BK_BENCH_QUICK") == "1"
N = 100_000 if QUICK else 1_000_000
SETS = (100_000, 1_000_000) if QUICK else (1_000_000, 10_000_000)
ROUNDS = 3
TOOL = os.path.join(servers.BUILD, "bloomkit")


def url_lines(n, tag):
    return "".join("https://www.example%d.com/%s/page-%d.html\n" % (i % 997, tag, i)
                   for i in range(n)).encode()


def tool_rate(url, data, n):
    t = time.perf_counter()
    out = subprocess.run([TOOL, "dedup", "-q", "--normalize", "url", "--redis", url,
                          "-n", str(4 * N), "-p", "0.001"], input=data,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout
    dt = time.perf_counter() - t
    assert out.count(b"\n") >= n * 0.99, "the tool printed too few new lines"
    return n / dt


def python_rate(client, name, items, per_call):
    sf = ShardedFilter(client, name, capacity=4 * N, error_rate=0.001)
    t = time.perf_counter()
    for i in range(0, len(items), per_call):
        sf.claim(items[i:i + per_call])
    return len(items) / (time.perf_counter() - t)


def redisbloom_server():
    """A redis-server with RedisBloom 2.8.20 built by bench/redisbloom_build.sh
    (its source as that script finds it), or None with the reason."""
    import tempfile
    out = os.path.join(tempfile.mkdtemp(prefix="bk-fleet-rb."), "redisbloom.so")
    built = subprocess.run(["sh", "bench/redisbloom_build.sh", out], cwd=TOP,
                           stdout=subprocess.PIPE, text=True)
    if built.returncode != 0:
        return None, built.stdout.strip()
    saved, servers.MODULE = servers.MODULE, out
    try:
        return servers.RedisServer().start(), None
    finally:
        servers.MODULE = saved


def rates_table(single, nodes, rb):
    from redis.cluster import ClusterNode, RedisCluster
    rows = {"tool": [], "py16k": [], "py1": [], "cluster": [], "rb": []}
    one_url = "redis://127.0.0.1:%d/" % single.port
    for r in range(ROUNDS):
        tag = "r%d" % r
        data = url_lines(N, tag)
        items = [line.decode() for line in data.splitlines()]
        rows["tool"].append(tool_rate(one_url + "tool" + tag, data, N))
        rows["py16k"].append(python_rate(single.client, "py" + tag, items, 16384))
        few = items[: N // 50]
        rows["py1"].append(python_rate(single.client, "one" + tag, few, 1))
        rows["cluster"].append(tool_rate("redis://127.0.0.1:%d/cl%s" % (nodes[0].port, tag),
                                         url_lines(N, "c" + tag), N))
        if rb:
            rows["rb"].append(tool_rate("redis://127.0.0.1:%d/rb%s" % (rb.port, tag),
                                        url_lines(N, "b" + tag), N))
            rb.client.flushall()
        single.client.flushall()
        for node in nodes:
            node.client.flushall()
    med = {k: statistics.median(v) for k, v in rows.items() if v}
    print("### Claims per second: %d URLs a run, median of %d alternating rounds" % (N, ROUNDS))
    print()
    print("| worker | URLs/s | tool's ratio |")
    print("|---|---:|---:|")
    print("| `bloomkit dedup --normalize url --redis`, one server | %.0fk | 1.00x |"
          % (med["tool"] / 1e3))
    print("| Python `ShardedFilter.claim`, 16,384 a call, same server | %.0fk | %.1fx |"
          % (med["py16k"] / 1e3, med["tool"] / med["py16k"]))
    print("| Python `ShardedFilter.claim`, 1 a call (as the Scrapy dupefilter), same server "
          "(%d URLs) | %.1fk | %.0fx |" % (N // 50, med["py1"] / 1e3, med["tool"] / med["py1"]))
    print("| `bloomkit dedup --redis`, 3-master cluster (24 shards), same machine | %.0fk | "
          "%.2fx of one server |" % (med["cluster"] / 1e3, med["cluster"] / med["tool"]))
    if "rb" in med:
        print("| `bloomkit dedup --redis` against RedisBloom 2.8.20 (no BF.CLAIM: BF.MADD, one "
              "batch at a time), same machine | %.0fk | %.2fx |" % (med["rb"] / 1e3,
                                                                   med["rb"] / med["tool"]))
    print()
    _ = ClusterNode, RedisCluster


def used(client):
    return client.info("memory")["used_memory"]


def fingerprint_set(client, n):
    before = used(client)
    pipe = client.pipeline(transaction=False)
    batch = []
    for i in range(n):
        batch.append(hashlib.sha1(b"https://www.example.com/p/%d" % i).hexdigest())
        if len(batch) == 10_000:
            pipe.sadd("fp", *batch)
            pipe.execute()
            batch = []
    if batch:
        pipe.sadd("fp", *batch)
        pipe.execute()
    size = used(client) - before
    client.delete("fp")
    return size


def memory_table(single):
    url = "redis://127.0.0.1:%d/billion" % single.port
    base = used(single.client)
    subprocess.run([TOOL, "dedup", "--redis", url, "-n", "1e9", "-p", "0.001"],
                   stdin=subprocess.DEVNULL, check=True)
    info = subprocess.run([TOOL, "info", "--json", url], stdout=subprocess.PIPE,
                          check=True).stdout.decode()
    import json
    ours = json.loads(info)["bytes"]
    held = used(single.client) - base
    single.client.flushall()
    sets = [(n, fingerprint_set(single.client, n)) for n in SETS]
    per = sets[-1][1] / sets[-1][0]
    print("### Redis memory for a billion URLs (p = 0.001)")
    print()
    print("| seen-set | bytes | at 1e9 |")
    print("|---|---:|---:|")
    print("| bloomkit.so filter, `dedup --redis -n 1e9 -p 0.001` (payload, BF.INFO Size) "
          "| %.2f GB | %.2f GB |" % (ours / 1e9, ours / 1e9))
    print("| the same, the server's used_memory | %.2f GB | %.2f GB |" % (held / 1e9, held / 1e9))
    for n, size in sets:
        print("| scrapy-redis fingerprint set (SADD of 40 hex), %s requests | %.0f MB "
              "(%.0f B each) | |" % ("{:,}".format(n), size / 1e6, size / n))
    print("| the set extrapolated from %s | | %.0f GB (%.0fx) |"
          % ("{:,}".format(sets[-1][0]), per * 1e9 / 1e9, per * 1e9 / ours))
    print()


def main():
    print("## A crawler fleet on one seen-set in Redis (bench/fleet.sh)")
    print()
    single = servers.RedisServer().start()
    nodes = servers.start_cluster(3)
    rb, why = redisbloom_server()
    if why:
        print("(RedisBloom row skipped: %s)" % why)
        print()
    try:
        rates_table(single, nodes, rb)
        memory_table(single)
    finally:
        single.stop()
        for n in nodes:
            n.stop()
        if rb:
            rb.stop()


if __name__ == "__main__":
    main()
