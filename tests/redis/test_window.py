"""Tests of the WBF.* window filters through real redis-server processes:
a master and a replica (the replica must hold byte-identical windows,
including a time window's clock, which only the master reads), the answers
against a Python reference of the last N adds, errors, and restarts from
RDB and from a rewritten AOF.

Run by tests/redis/run.sh as
    python3 test_window.py REDIS_SERVER MODULE_SO WORKDIR
Ends with "N passed, N failed".
"""

import os
import sys
import time

sys.argv = sys.argv[:4]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_module as tm  # noqa: E402  (its server helpers; it runs on import only under main)
from redis.exceptions import ResponseError  # noqa: E402


def dump(r, key):
    """The window's bytes, as the RDB stores them: via WBF.RESTORE's
    inverse, the DUMP payload (same bytes on master and replica)."""
    return r.dump(key)


def main():
    master = tm.Server("wbf-master", extra=["--appendonly", "yes"]).start()
    replica = tm.Server("wbf-replica", extra=["--replicaof", "127.0.0.1", str(master.port)]).start()
    m, s = master.r, replica.r
    for _ in range(200):
        if s.info("replication").get("master_link_status") == "up":
            break
        time.sleep(0.05)

    tm.check("WBF.RESERVE count window", m.execute_command("WBF.RESERVE", "c", 0.01, 100) == b"OK")
    tm.check("TYPE", m.type("c") == b"bkwindw-1")
    tm.check("WBF.RESERVE twice refused",
             tm.error_of(m.execute_command, "WBF.RESERVE", "c", 0.01, 100) == "item exists")
    tm.check("bad GENERATIONS refused",
             tm.error_of(m.execute_command, "WBF.RESERVE", "x", 0.01, 100, "GENERATIONS", 1)
             is not None)
    tm.check("WBF.ADD on a missing key",
             tm.error_of(m.execute_command, "WBF.ADD", "nokey", "a") == "not found")
    # The last 100 adds are always present; adds 150+ back are gone.
    for i in range(300):
        m.execute_command("WBF.ADD", "c", "k%d" % i)
    got = m.execute_command("WBF.MEXISTS", "c", *["k%d" % i for i in range(200, 300)])
    tm.check("last 100 adds present", got == [1] * 100, got)
    got = m.execute_command("WBF.MEXISTS", "c", *["k%d" % i for i in range(0, 150)])
    # Forgotten keys answer like keys never added: false positives at 1%
    # of 150 (1.5 expected, with a fresh random seed each run; 9 or more
    # has a probability of about 3e-5). A window that forgot nothing
    # answers 150.
    tm.check("adds older than 4/3 N forgotten", sum(got) <= 8, sum(got))
    tm.check("WBF.ADD again is 0", m.execute_command("WBF.ADD", "c", "k299") == 0)
    info = m.execute_command("WBF.INFO", "c")
    fields = dict(zip(info[0::2], info[1::2]))
    tm.check("WBF.INFO generations", fields.get(b"Generations") == 4, fields)
    tm.check("WBF.CARD", m.execute_command("WBF.CARD", "c") == fields.get(b"Number of items inserted"))

    # A time window: the master's clock travels with the adds.
    m.execute_command("WBF.RESERVE", "t", 0.001, 1000, "SECONDS", 3600)
    m.execute_command("WBF.MADD", "t", "a", "b")
    tm.check("time window: present", m.execute_command("WBF.EXISTS", "t", "a") == 1)
    # An item younger than the window is found on a clock of whole seconds:
    # added at tick T0 (real 0.9 s later, say), asked at tick T0 + span
    # (real 0.05 s after that tick) it is less than the span old.
    m.execute_command("WBF.RESERVE", "tick", 0.001, 1000, "SECONDS", 2)
    t0 = int(time.time()) - 100
    m.execute_command("WBF.ADDAT", "tick", t0, "old")
    m.execute_command("WBF.ADDAT", "tick", t0 + 2, "now")
    tm.check("WBF: an item at tick t0 is kept at tick t0 + span",
             m.execute_command("WBF.ADDAT", "tick", t0 + 2, "old") == [0])
    m.execute_command("WBF.ADDAT", "tick", t0 + 5, "later")
    tm.check("WBF: ... and forgotten once surely older than the span",
             m.execute_command("WBF.ADDAT", "tick", t0 + 5, "old") == [1])

    # a client's clock may lead the server's by one window and a minute
    m.execute_command("WBF.ADDAT", "t", int(time.time()) + 3630, "z")
    tm.check("ADDAT a window on: a is forgotten", m.execute_command("WBF.EXISTS", "t", "a") == 0)
    tm.check("ADDAT a window on: z is present", m.execute_command("WBF.EXISTS", "t", "z") == 1)

    # A time window keeps its rate whatever the arrival: one burst of its
    # whole capacity (the generation design measured 11-14% at p = 0.1%),
    # then bursts half a window apart (WBF.ADDAT), then more than its
    # capacity within one window (the oldest forgotten early, never a
    # rate above p). p = 1% and 20,000 fresh probes: the bound is 200.
    n, span = 3000, 7 * 86400
    # fixed seeds: the rates measured are the same on every run
    m.execute_command("WBF.RESERVE", "burst", 0.01, n, "SECONDS", span, "SEED", 101)
    its = ["b%d" % i for i in range(n)]
    for i in range(0, n, 1000):
        m.execute_command("WBF.MADD", "burst", *its[i:i + 1000])
    fresh = ["fresh%d" % i for i in range(20000)]
    fp = sum(m.execute_command("WBF.MEXISTS", "burst", *fresh))
    tm.check("one burst of the capacity: every item present, %d of 20000 fresh present" % fp,
             all(m.execute_command("WBF.MEXISTS", "burst", *its)) and fp <= 200)
    m.execute_command("WBF.RESERVE", "idle", 0.01, n, "SECONDS", span, "SEED", 102)
    # in the past, so that no ADDAT leads the server's clock by more than
    # the window (which is refused)
    t0 = int(time.time()) - span
    for b in range(3):
        m.execute_command("WBF.ADDAT", "idle", t0 + b * (span // 2 + 1),
                          *["i%d-%d" % (b, j) for j in range(n // 2)])
    live = ["i%d-%d" % (b, j) for b in (1, 2) for j in range(n // 2)]
    fp = sum(m.execute_command("WBF.MEXISTS", "idle", *fresh))
    gone = sum(m.execute_command("WBF.MEXISTS", "idle", *["i0-%d" % j for j in range(n // 2)]))
    tm.check("bursts half a window apart: the last window present, the first forgotten "
             "(%d left), %d of 20000 fresh present" % (gone, fp),
             all(m.execute_command("WBF.MEXISTS", "idle", *live)) and fp <= 200 and gone <= 30)
    # steady arrival over three windows (100 items per 1/30 window), then
    # the clock jumping ten windows ahead and a burst of the capacity
    m.execute_command("WBF.RESERVE", "steady", 0.01, n, "SECONDS", span, "SEED", 103)
    t0 = int(time.time()) - 3 * span
    last = {}
    for step in range(90):
        t = t0 + step * span // 30
        batch = ["s%d" % (step * 100 + j) for j in range(100)]
        m.execute_command("WBF.ADDAT", "steady", t, *batch)
        for k in batch:
            last[k] = t
    # asked at the server's clock, a little after the last step (a minute
    # of margin for the seconds this takes)
    live = [k for k, t in last.items() if time.time() + 60 - t < span]
    fp = sum(m.execute_command("WBF.MEXISTS", "steady", *fresh))
    tm.check("steady arrival: the last window present (%d), %d of 20000 fresh present" %
             (len(live), fp),
             all(m.execute_command("WBF.MEXISTS", "steady", *live)) and fp <= 200)
    jump = int(time.time()) + span
    m.execute_command("WBF.ADDAT", "steady", jump, *["j%d" % j for j in range(n)])
    fp = sum(m.execute_command("WBF.MEXISTS", "steady", *fresh))
    old = sum(m.execute_command("WBF.MEXISTS", "steady", *live))
    tm.check("clock jump: the old window forgotten (%d left), the new burst present, "
             "%d of 20000 fresh present" % (old, fp),
             old <= len(live) // 50 and fp <= 200 and
             all(m.execute_command("WBF.MEXISTS", "steady", *["j%d" % j for j in range(n)])))
    for i in range(0, 3 * n, 1000):
        m.execute_command("WBF.MADD", "burst", *["over%d" % j for j in range(i, i + 1000)])
    fp = sum(m.execute_command("WBF.MEXISTS", "burst", *fresh))
    tm.check("three times the capacity in one window: %d of 20000 fresh present" % fp, fp <= 200)
    info = dict(zip(*[iter(m.execute_command("WBF.INFO", "burst"))] * 2))
    tm.check("WBF.INFO: a time window keeps 2 slots per generation",
             info.get(b"Slots") == 8 and info.get(b"Generations") == 4, info)

    m.execute_command("WAIT", 1, 5000)
    for key in ("c", "t"):
        tm.check("replica holds identical bytes: " + key, dump(m, key) == dump(s, key))
    tm.check("replica answers alike",
             s.execute_command("WBF.EXISTS", "t", "z") == 1 and
             s.execute_command("WBF.EXISTS", "t", "a") == 0)

    # Restarts: RDB, then a rewritten AOF.
    before = {k: dump(m, k) for k in ("c", "t")}
    m.save()
    master.stop()
    master.start()
    tm.check("RDB restart keeps the windows", all(dump(master.r, k) == v for k, v in before.items()))
    master.r.bgrewriteaof()
    time.sleep(1.5)
    master.stop()
    os.remove(os.path.join(master.dir, "dump.rdb"))
    master.start()
    tm.check("AOF restart keeps the windows", all(dump(master.r, k) == v for k, v in before.items()))
    tm.check("WBF.RESTORE refuses garbage",
             tm.error_of(master.r.execute_command, "WBF.RESTORE", "g", b"junk") is not None)
    replica.stop()
    master.stop()
    print("%d passed, %d failed" % (tm.passed, tm.failed))
    return 1 if tm.failed else 0


if __name__ == "__main__":
    sys.exit(main())
