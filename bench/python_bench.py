"""Benchmarks of the Python package (run by bench/python.sh):

1. Filter.add_many / contains_many over 10M URLs against Python's set and
   against flor (python3-flor), the only Bloom filter package for Python
   that Debian ships (python3-pybloom*, -pyprobables, -rbloom, -mmh3 based
   ones are not packaged).
2. Memory of Scrapy dupefilters after 1M requests: BloomDupeFilter against
   Scrapy's default RFPDupeFilter, each in a fresh process.
3. ShardedFilter items/s on a 3-master Redis Cluster against one filter on
   one redis-server, same run, same client code.

BK_BENCH_QUICK=1 shrinks every workload for a smoke run. Medians of
REPEATS runs; flor and the Scrapy processes run once.
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "python"))
sys.path.insert(0, os.path.join(TOP, "tests", "python"))  # redis-server helpers

import bloomkit  # noqa: E402

QUICK = os.environ.get("BK_BENCH_QUICK") == "1"
N_URLS = 200_000 if QUICK else 10_000_000
N_FLOR = 10_000 if QUICK else 100_000
N_REQUESTS = 50_000 if QUICK else 1_000_000
N_SHARDED = 50_000 if QUICK else 1_000_000
REPEATS = 1 if QUICK else 3
FPR = 0.01


def urls(n, tag="in"):
    return ["https://www.example-%d.com/%s/catalog/item-%d?ref=%d" % (i % 9973, tag, i, i * 7)
            for i in range(n)]


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def median_rate(n, runs):
    return n / statistics.median(runs)


def mb(nbytes):
    return "%.1f MB" % (nbytes / 1e6)


# ---- 1. filters vs set vs flor -----------------------------------------------------

def bench_bloomkit(data, probe):
    adds, checks = [], []
    for _ in range(REPEATS):
        f = bloomkit.Filter(len(data), FPR, seed=1)
        adds.append(timed(f.add_many, data)[0])
        checks.append(timed(f.contains_many, probe)[0])
    return adds, checks, f.info()["bytes"]


def bench_set(data, probe):
    adds, checks = [], []
    for _ in range(REPEATS):
        s = set()
        adds.append(timed(s.update, data)[0])
        checks.append(timed(lambda: [u in s for u in probe])[0])
    table = sys.getsizeof(s)
    keys = sum(sys.getsizeof(u) for u in data)
    return adds, checks, table, keys


def bench_flor(data, capacity):
    import flor
    f = flor.BloomFilter(capacity, FPR)
    encoded = [u.encode() for u in data[:N_FLOR]]
    add = timed(lambda: [f.add(u) for u in encoded])[0]
    check = timed(lambda: [u in f for u in encoded])[0]
    return add, check, len(f._bytes)


def core_table():
    data = urls(N_URLS)
    probe = data[: N_URLS // 2] + urls(N_URLS // 2, "out")
    b_add, b_check, b_bytes = bench_bloomkit(data, probe)
    s_add, s_check, s_table, s_keys = bench_set(data, probe)
    print("### add_many / contains_many: %d URLs (mean %d bytes), FPR %g, half the checks present"
          % (N_URLS, sum(map(len, data[:1000])) // 1000, FPR))
    print()
    print("| structure | add keys/s | check keys/s | memory |")
    print("|---|---:|---:|---:|")
    print("| bloomkit.Filter (blocked) add_many / contains_many | %.2fM | %.2fM | %s |"
          % (median_rate(N_URLS, b_add) / 1e6, median_rate(N_URLS, b_check) / 1e6, mb(b_bytes)))
    print("| Python set: update / `u in s` comprehension | %.2fM | %.2fM | %s table + %s keys |"
          % (median_rate(N_URLS, s_add) / 1e6, median_rate(N_URLS, s_check) / 1e6,
             mb(s_table), mb(s_keys)))
    try:
        f_add, f_check, f_bytes = bench_flor(data, N_URLS)
        print("| flor (python3-flor), first %d URLs, sized for %d | %.3fM | %.3fM | %s |"
              % (N_FLOR, N_URLS, N_FLOR / f_add / 1e6, N_FLOR / f_check / 1e6, mb(f_bytes)))
    except ImportError:
        print("| flor | (python3-flor not installed) | | |")
    print()


# ---- 2. Scrapy dupefilters -------------------------------------------------------------

SCRAPY_CHILD = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[3])
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
class Sha1Fingerprinter:
    # Scrapy's fingerprints are SHA-1 digests (20 bytes) of the canonical
    # request; hashing the URL alone gives the same stored state, cheaper.
    def fingerprint(self, request):
        return hashlib.sha1(request.encode()).digest()
which, n = sys.argv[1], int(sys.argv[2])
from bloomkit.scrapy import BloomDupeFilter
from scrapy.dupefilters import RFPDupeFilter
before = rss()  # the filter's own allocation counts
if which == "bloom":
    df = BloomDupeFilter(capacity=n, error_rate=1e-6, fingerprinter=Sha1Fingerprinter())
else:
    df = RFPDupeFilter(fingerprinter=Sha1Fingerprinter())
seen = 0
for i in range(n):
    seen += df.request_seen("https://www.example-%d.com/item-%d" % (i % 9973, i))
print(json.dumps({"bytes": rss() - before, "seen": seen}))
"""


def scrapy_table():
    rows = []
    for which, label in (("rfp", "Scrapy RFPDupeFilter (default)"),
                         ("bloom", "bloomkit.scrapy.BloomDupeFilter (scalable, 1e-6)")):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", SCRAPY_CHILD, which, str(N_REQUESTS),
                              os.path.join(TOP, "python")], capture_output=True, text=True,
                             check=True)
        secs = time.perf_counter() - start
        rows.append((label, json.loads(out.stdout), secs))
    print("### Scrapy dupefilter memory after %d requests (RSS growth of a fresh process)"
          % N_REQUESTS)
    print()
    print("| dupefilter | memory | bytes/request | requests taken for duplicates |")
    print("|---|---:|---:|---:|")
    for label, result, _ in rows:
        print("| %s | %s | %.1f | %d |" % (label, mb(result["bytes"]),
                                          result["bytes"] / N_REQUESTS, result["seen"]))
    print()


# ---- 3. sharded filter on a cluster vs one node ----------------------------------------

def sharded_rates(client, name, shards, data, probe):
    from bloomkit.redis import ShardedFilter
    adds, checks = [], []
    batch = 10_000
    for run in range(REPEATS):
        sf = ShardedFilter(client, "%s-%d" % (name, run), shards=shards, capacity=len(data),
                           error_rate=FPR)
        adds.append(timed(lambda: [sf.madd(data[i:i + batch])
                                   for i in range(0, len(data), batch)])[0])
        checks.append(timed(lambda: [sf.mexists(probe[i:i + batch])
                                     for i in range(0, len(probe), batch)])[0])
        sf.delete()
    return median_rate(len(data), adds), median_rate(len(probe), checks)


def sharded_table():
    import servers
    from redis.cluster import ClusterNode, RedisCluster
    data = urls(N_SHARDED)
    probe = data[: N_SHARDED // 2] + urls(N_SHARDED // 2, "out")
    single = servers.RedisServer().start()
    nodes = servers.start_cluster(3)
    try:
        rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", nodes[0].port)])
        rows = [("one filter (1 key) on one redis-server", sharded_rates(single.client, "one", 1,
                                                                         data, probe)),
                ("ShardedFilter, 3 shards on 3 masters",
                 sharded_rates(rc, "three", 3, data, probe)),
                ("ShardedFilter, 12 shards on 3 masters",
                 sharded_rates(rc, "twelve", 12, data, probe))]
    finally:
        single.stop()
        for n in nodes:
            n.stop()
    print("### Sharded filter: %d URLs in batches of 10000 (madd / mexists), FPR %g"
          % (N_SHARDED, FPR))
    print()
    print("| layout | add items/s | check items/s |")
    print("|---|---:|---:|")
    for label, (add, check) in rows:
        print("| %s | %.0fk | %.0fk |" % (label, add / 1e3, check / 1e3))
    print()


def main():
    print("## Python package (bench/python.sh)")
    print()
    print("median of %d runs; %s" % (REPEATS, "QUICK" if QUICK else "full size"))
    print()
    core_table()
    scrapy_table()
    sharded_table()


if __name__ == "__main__":
    main()
