"""The first 200 BF.ADDs into a fresh 100M-item key on the server at port
argv[1]: a client's round trip each (p50, p99, max) and how much the
server's resident memory grew (a fresh filter's memory should grow with
what its adds touch). Prints one line; bench/redis.sh and
bench/redis_peer.sh call it. Needs python3-redis."""
import sys
import time

import redis

r = redis.Redis(port=int(sys.argv[1]))
r.delete("fresh")
time.sleep(0.3)
before = r.info("memory")["used_memory_rss"]
r.execute_command("BF.RESERVE", "fresh", 0.01, 100000000)
lat = []
for i in range(200):
    t = time.perf_counter()
    r.execute_command("BF.ADD", "fresh", "item%d" % i)
    lat.append(time.perf_counter() - t)
lat.sort()
time.sleep(0.3)  # the server refreshes used_memory_rss every 100 ms
grown = (r.info("memory")["used_memory_rss"] - before) / 1e6
print("p50 %.0f us, p99 %.0f us, max %.0f us; resident memory grew %.1f MB"
      % (lat[100] * 1e6, lat[197] * 1e6, lat[-1] * 1e6, grown))
r.delete("fresh")
