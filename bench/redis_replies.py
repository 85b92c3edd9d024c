"""Replies compared with RedisBloom's (bench/redis_peer.sh): the same random
command sequences sent to two servers, bloomkit.so's and RedisBloom's, and
every reply compared byte for byte, in RESP2 and RESP3.

    redis_replies.py BLOOMKIT_PORT REDISBLOOM_PORT FAMILIES [SEQUENCES]

FAMILIES is "BF,CF" for a bloomkit server under LAYOUT redisbloom (its BF
keys are RedisBloom's chains) or "CF" for one in the default layout (CF keys
are RedisBloom's in both). Each sequence starts from FLUSHALL and runs up to
40 commands on four keys (one of them often a string): valid and invalid
arguments, arities, types, options in any order, chunks, growth; no
unknown option words (bloomkit refuses them where RedisBloom reads a word
by its first letter or ignores it: docs/REDIS.md). A sequence
stops at its first difference, which is printed with the commands before it.
Then values move between the modules: after a tenth as many sequences, each
RedisBloom-type key is DUMPed from one server and RESTOREd into the other,
both ways, and the copy must answer as the original (SCANDUMP, INFO, 800
probes); and both servers save and reload their data (DEBUG RELOAD, where
allowed) and each such key must still answer alike on both. Prints one
summary line; exit status 0 either way (a benchmark prints)."""
import random
import socket
import sys

KEYS = ["a", "b", "c", "s"]
ITEMS = ["x%d" % i for i in range(400)]


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    """A raw RESP connection: a reply is returned as its bytes."""

    def __init__(self, port, protocol):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")
        if protocol == 3:
            self.call(["HELLO", "3"])

    def reply(self):
        line = self.file.readline()
        kind, parts = line[:1], [line]
        if kind in b"$=!":
            n = int(line[1:-2])
            if n >= 0:
                parts.append(self.file.read(n + 2))
        elif kind in b"*~>":
            for _ in range(max(int(line[1:-2]), 0)):
                parts.append(self.reply())
        elif kind in b"%|":
            for _ in range(2 * int(line[1:-2])):
                parts.append(self.reply())
        return b"".join(parts)

    def call(self, args):
        self.sock.sendall(encode(args))
        return self.reply()


def command(rnd, families):
    """One random command of the given families (or a plain one)."""
    key = rnd.choice(KEYS)
    number = lambda: rnd.choice([0, 1, 2, 3, 7, 100, 1000, -1, "abc", "1e3", "0.5", 32768,
                                 1024, "", "1.0", "18446744073709551616"])
    rate = lambda: rnd.choice([0.01, 0.001, 0.5, 1, 0, -0.1, 2, "abc", "1e-3", "0.1", 1e-10])
    some = lambda most: rnd.sample(ITEMS, rnd.randint(0, most))
    family = rnd.choice(families) if rnd.random() < 0.95 else "plain"
    if family == "plain":
        return rnd.choice([["SET", "s", "v"], ["DEL", key], ["TYPE", key]])
    if family == "CF":
        name = rnd.choice(["RESERVE", "ADD", "ADDNX", "INSERT", "INSERTNX", "EXISTS",
                           "MEXISTS", "DEL", "COUNT", "INFO", "COMPACT", "SCANDUMP",
                           "LOADCHUNK"])
        cmd = ["CF." + name, key]
        if name == "RESERVE":
            cmd.append(number())
            for opt in ("BUCKETSIZE", "MAXITERATIONS", "EXPANSION"):
                if rnd.random() < 0.4:
                    cmd += [opt, number()]
        elif name in ("ADD", "ADDNX", "EXISTS", "DEL", "COUNT"):
            cmd.append(rnd.choice(ITEMS))
        elif name == "MEXISTS":
            cmd += some(40)
        elif name in ("INSERT", "INSERTNX"):
            if rnd.random() < 0.3:
                cmd += ["CAPACITY", number()]
            if rnd.random() < 0.2:
                cmd.append("NOCREATE")
            if rnd.random() < 0.9:
                cmd += ["ITEMS"] + some(60)
        elif name == "SCANDUMP":
            # (not an iterator inside a chunk: RedisBloom reads past its
            # buckets there, docs/REDIS.md)
            cmd.append(rnd.choice([0, 1, -1, "x", 100000]))
        elif name == "LOADCHUNK":
            cmd += [rnd.choice([0, 1, 2, -1, "x", 3]), rnd.choice(["", "abc", "\0" * 8])]
    else:
        name = rnd.choice(["RESERVE", "ADD", "MADD", "INSERT", "EXISTS", "MEXISTS", "INFO",
                           "CARD", "SCANDUMP", "LOADCHUNK", "DEBUG"])
        cmd = ["BF." + name, key]
        if name == "RESERVE":
            cmd += [rate(), number()]
            if rnd.random() < 0.3:
                cmd += ["EXPANSION", number()]
            if rnd.random() < 0.2:
                cmd.append("NONSCALING")
        elif name in ("ADD", "EXISTS"):
            cmd.append(rnd.choice(ITEMS))
        elif name in ("MADD", "MEXISTS"):
            cmd += some(60)
        elif name == "INSERT":
            for opt in ("CAPACITY", "ERROR", "EXPANSION"):
                if rnd.random() < 0.3:
                    cmd += [opt, rate() if opt == "ERROR" else number()]
            for flag in ("NOCREATE", "NONSCALING"):
                if rnd.random() < 0.15:
                    cmd.append(flag)
            if rnd.random() < 0.9:
                cmd += ["ITEMS"] + some(60)
        elif name == "INFO":
            if rnd.random() < 0.6:
                cmd.append(rnd.choice(["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION",
                                       "capacity", "junk"]))
        elif name == "SCANDUMP":
            cmd.append(rnd.choice([0, 1, 2, -1, "x"]))
        elif name == "LOADCHUNK":
            cmd += [rnd.choice([0, 1, 2, -1, "x"]), rnd.choice(["", "abc"])]
    if rnd.random() < 0.03:  # too few arguments now and then
        cmd = cmd[:rnd.randint(1, 2)]
    return cmd


def bulk(reply):
    """The bytes of a bulk string reply ($n CRLF bytes CRLF)."""
    head, _, rest = reply.partition(b"\r\n")
    return rest[:int(head[1:])]


def whole_dump(conn, family, key):
    """Every SCANDUMP reply of the key, from iterator 0 to the end."""
    replies, it = [], 0
    for _ in range(100000):
        r = conn.call([family + ".SCANDUMP", key, it])
        replies.append(r)
        # the reply's first element is the next iterator (":N" CRLF)
        it = int(r.split(b"\r\n")[1][1:])
        if it == 0:
            break
    return replies


PROBES = ITEMS + ["y%d" % i for i in range(400)]


def random_round(ours, theirs, rnd, families):
    """Both servers emptied, then sent the same 40 random commands."""
    for conn in (ours, theirs):
        conn.call(["FLUSHALL"])
    for _ in range(40):
        cmd = command(rnd, families)
        ours.call(cmd)
        theirs.call(cmd)


def rb_family(conn, key):
    """"BF" or "CF" for a key of RedisBloom's types, else None."""
    return {b"+MBbloom--\r\n": "BF", b"+MBbloomCF\r\n": "CF"}.get(conn.call(["TYPE", key]))


def alike(a, key_a, b, key_b, family):
    """Whether two keys answer alike: INFO, 800 probes, every SCANDUMP reply."""
    return all(a.call(c(key_a)) == b.call(c(key_b)) for c in (
        lambda k: [family + ".INFO", k],
        lambda k: [family + ".MEXISTS", k] + PROBES)) and \
        whole_dump(a, family, key_a) == whole_dump(b, family, key_b)


def moved_values(ports, families, sequences):
    """After random sequences, each RedisBloom-type key is moved both ways
    by DUMP and RESTORE (bloomkit's value into RedisBloom's server and
    RedisBloom's into bloomkit's), and the copy must answer as the original
    does: its SCANDUMP, INFO and 800 probes. Returns (moved, differing)."""
    ours, theirs = Conn(ports[0], 2), Conn(ports[1], 2)
    rnd = random.Random(7)
    moved = differing = 0
    for _ in range(sequences):
        random_round(ours, theirs, rnd, families)
        for key in KEYS:
            family = rb_family(ours, key)
            if not family:
                continue
            for src, dst in ((ours, theirs), (theirs, ours)):
                copy = key + ":copy"
                answer = dst.call(["RESTORE", copy, 0, bulk(src.call(["DUMP", key])), "REPLACE"])
                moved += 1
                if answer != b"+OK\r\n" or not alike(src, key, dst, copy, family):
                    differing += 1
                    print("- %s key %s moved %s: answers differ (RESTORE said %r)" % (
                        family, key, "to RedisBloom" if src is ours else "from RedisBloom",
                        answer[:80]))
    return moved, differing


def reloaded_values(ports, families, sequences):
    """After random sequences, both servers save and load their data
    (DEBUG RELOAD: the RDB encodings) and each RedisBloom-type key must
    still answer alike on both (SCANDUMP, INFO, 800 probes). Returns
    (compared, differing), or None where a server refuses DEBUG (it needs
    enable-debug-command)."""
    ours, theirs = Conn(ports[0], 2), Conn(ports[1], 2)
    rnd = random.Random(11)
    compared = differing = 0
    for _ in range(sequences):
        random_round(ours, theirs, rnd, families)
        if any(conn.call(["DEBUG", "RELOAD"]) != b"+OK\r\n" for conn in (ours, theirs)):
            return None
        for key in KEYS:
            family = rb_family(ours, key)
            if not family:
                continue
            compared += 1
            if rb_family(theirs, key) != family or not alike(ours, key, theirs, key, family):
                differing += 1
                print("- %s key %s answers differently after DEBUG RELOAD" % (family, key))
    return compared, differing


def main():
    ports = int(sys.argv[1]), int(sys.argv[2])
    families = sys.argv[3].split(",")
    sequences = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
    compared, differing, shown = 0, 0, 0
    for protocol in (2, 3):
        ours, theirs = Conn(ports[0], protocol), Conn(ports[1], protocol)
        rnd = random.Random(protocol)
        for _ in range(sequences):
            ours.call(["FLUSHALL"])
            theirs.call(["FLUSHALL"])
            history = []
            for _ in range(40):
                cmd = command(rnd, families)
                history.append(cmd)
                a, b = ours.call(cmd), theirs.call(cmd)
                compared += 1
                if a != b:
                    differing += 1
                    if shown < 5:
                        shown += 1
                        print("- RESP%d, after %s:" % (protocol, history[-4:-1]))
                        print("  %s: bloomkit %r, RedisBloom %r" % (cmd, a[:120], b[:120]))
                    break
    moved, moved_differing = moved_values(ports, families, sequences // 10)
    reloaded = reloaded_values(ports, families, sequences // 10)
    print("%s families, RESP2 and RESP3: %d random sequences, %d replies compared, "
          "%d sequences with a different reply; %d values moved by DUMP/RESTORE between "
          "the modules, %d answering differently; %s" % (
              "+".join(families), 2 * sequences, compared, differing, moved, moved_differing,
              "%d keys compared after DEBUG RELOAD, %d differing" % reloaded if reloaded
              else "DEBUG RELOAD refused (the servers need enable-debug-command)"))


if __name__ == "__main__":
    main()
