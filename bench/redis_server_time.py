"""Server time per call of one-item commands on large keys (bench/redis_peer.sh):
INFO commandstats' usec_per_call, which leaves out the network and the
client, for bloomkit.so and RedisBloom on their own servers (ports given).
Each server gets a CF key of capacity 10M and a BF key of 10M at 1%, 2M
items in each; then 100,000 calls of each command, pipelined 1,000 at a
time, the servers taking turns, 3 rounds; medians and ranges."""
import random
import statistics
import sys

import redis

ITEMS = 2_000_000
CALLS = 100_000


def fill(c):
    c.execute_command("DEL", "st:cf", "st:bf")
    c.execute_command("CF.RESERVE", "st:cf", 10_000_000)
    c.execute_command("BF.RESERVE", "st:bf", 0.01, 10_000_000)
    for i in range(0, ITEMS, 10_000):
        items = ["item:%d" % j for j in range(i, i + 10_000)]
        c.execute_command("CF.INSERT", "st:cf", "ITEMS", *items)
        c.execute_command("BF.MADD", "st:bf", *items)


def timed_calls(c, cmd, args_of):
    """INFO commandstats' usec_per_call of CALLS calls of cmd, call k with
    the arguments args_of(k), pipelined 1,000 at a time."""
    c.execute_command("CONFIG", "RESETSTAT")
    pipe = c.pipeline(transaction=False)
    for k in range(CALLS):
        pipe.execute_command(cmd, *args_of(k))
        if k % 1000 == 999:
            pipe.execute()
            pipe = c.pipeline(transaction=False)
    pipe.execute()
    return c.info("commandstats")["cmdstat_" + cmd.lower()]["usec_per_call"]


def usec_per_call(c, cmd, key, span, rnd):
    rng = random.Random(rnd)
    return timed_calls(c, cmd, lambda k: (key, "item:%d" % rng.randrange(span) if span
                                          else "new:%d:%d" % (rnd, k)))


def main():
    servers = {"bloomkit": redis.Redis(port=int(sys.argv[1])),
               "RedisBloom": redis.Redis(port=int(sys.argv[2]))}
    for c in servers.values():
        fill(c)
    cases = [("CF.EXISTS", "st:cf", 2 * ITEMS), ("CF.ADD", "st:cf", None),
             ("BF.EXISTS", "st:bf", 2 * ITEMS), ("BF.ADD", "st:bf", None)]
    got = {(n, case[0]): [] for n in servers for case in cases}
    for rnd in range(3):
        for cmd, key, span in cases:
            for name, c in servers.items():
                got[(name, cmd)].append(usec_per_call(c, cmd, key, span, rnd))
    print("| command (key of 10M capacity, 2M items in it) | bloomkit us/call | "
          "RedisBloom us/call | ratio |")
    print("|---|---|---|---:|")
    for cmd, _, _ in cases:
        a, b = got[("bloomkit", cmd)], got[("RedisBloom", cmd)]
        print("| %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2fx |" % (
            cmd, statistics.median(a), min(a), max(a), statistics.median(b), min(b), max(b),
            statistics.median(a) / statistics.median(b)))
    for c in servers.values():
        c.execute_command("DEL", "st:cf", "st:bf")


if __name__ == "__main__":
    main()
