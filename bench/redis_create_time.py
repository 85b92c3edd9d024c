"""Server time of a key's creation (bench/redis_peer.sh): INFO commandstats'
usec_per_call, which leaves out the network and the client, for bloomkit.so
and RedisBloom on their own servers (ports given). Each round empties the
server (FLUSHALL), then makes 100,000 keys with distinct names by one
command, pipelined 1,000 at a time; the servers take turns, 5 rounds;
medians and ranges. SET is the server's own cost of a new key."""
import statistics
import sys

import redis

from redis_server_time import timed_calls  # the same pipelined loop (CALLS calls)

ROUNDS = 5
COMMANDS = {
    "BF.RESERVE": lambda name: ("BF.RESERVE", name, 0.01, 100),
    "BF.ADD": lambda name: ("BF.ADD", name, "x"),
    "CF.RESERVE": lambda name: ("CF.RESERVE", name, 1000),
    "SET": lambda name: ("SET", name, "x"),
}


def usec_per_call(c, cmd, rnd):
    c.execute_command("FLUSHALL")
    return timed_calls(c, cmd, lambda k: COMMANDS[cmd]("k:%d:%d" % (rnd, k))[1:])


def main():
    servers = {"bloomkit": redis.Redis(port=int(sys.argv[1])),
               "RedisBloom": redis.Redis(port=int(sys.argv[2]))}
    got = {}
    for rnd in range(ROUNDS):
        for cmd in COMMANDS:
            for name, c in servers.items():
                got.setdefault((name, cmd), []).append(usec_per_call(c, cmd, rnd))
    for c in servers.values():
        c.execute_command("FLUSHALL")
    print("| command (a new key each) | bloomkit us/call | RedisBloom us/call | ratio |")
    print("|---|---|---|---:|")
    for cmd in COMMANDS:
        a, b = got[("bloomkit", cmd)], got[("RedisBloom", cmd)]
        print("| %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2fx |" % (
            " ".join(str(x) for x in COMMANDS[cmd]("k:N")), statistics.median(a), min(a),
            max(a), statistics.median(b), min(b), max(b),
            statistics.median(a) / statistics.median(b)))


if __name__ == "__main__":
    main()
