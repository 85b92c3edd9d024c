"""The Redis module never loses a key: saves under an address-space limit,
a lowered MAX_BYTES at restart, an AOF that cannot be replayed, hostile
clocks and numbers, and SCANDUMP's memory.

Started by tests/redis/run.sh as
    python3 test_durability.py REDIS_SERVER MODULE_SO WORKDIR
with the helpers of test_module.py (servers on 127.0.0.1 only, recorded in
WORKDIR/pids). Ends with "N passed, N failed".
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_module as tm  # noqa: E402
from test_module import Server, check, error_of, items  # noqa: E402
from redis.exceptions import ConnectionError as RedisConnectionError  # noqa: E402


def vm_kb(pid):
    """The address space a process holds (VmSize), in kB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    raise RuntimeError("no VmSize")


def limited(kb):
    return ["sh", "-c", 'ulimit -v %d && exec "$0" "$@"' % kb]


def wait_persistence(r):
    for _ in range(600):
        p = r.info("persistence")
        if not p["rdb_bgsave_in_progress"] and not p["aof_rewrite_in_progress"] and \
                not p.get("aof_rewrite_scheduled", 0):
            return p
        time.sleep(0.05)
    raise RuntimeError("background save did not finish")


def log_of(s):
    with open(os.path.join(s.dir, "log"), errors="replace") as f:
        return f.read()


# A 1e-6 filter of about 150 MB: big enough that a second copy of it does
# not fit in the address space left, small enough to save in a second.
BIG_CAPACITY = 40000000


def fill_big(r):
    r.execute_command("BF.RESERVE", "big", "0.000001", str(BIG_CAPACITY), "NONSCALING")
    added = items("big", 20000)
    for i in range(0, len(added), 5000):
        r.execute_command("BF.MADD", "big", *added[i:i + 5000])
    r.set("plain", "still here")
    return added


def same_big(r, added, what):
    check(what + ": the filter is there with every item",
          r.exists("big") == 1 and
          all(x == 1 for x in r.execute_command("BF.MEXISTS", "big", *added)))
    fp = sum(r.execute_command("BF.MEXISTS", "big", *items("absent", 20000)))
    check(what + ": answers absent keys as before (%d of 20000 false positives)" % fp, fp <= 2)
    check(what + ": the plain key is there", r.get("plain") == b"still here")


def test_save_under_address_limit():
    """BGSAVE, SHUTDOWN SAVE and an AOF rewrite without the RDB preamble,
    in a server whose address space leaves room for the filter but not for
    a second copy of it; then restarts under the same limit."""
    probe = Server("vprobe", module_args=["MAX_BYTES", str(1 << 40)]).start()
    try:
        fill_big(probe.r)
        size = probe.r.execute_command("BF.INFO", "big", "SIZE")[0]
        base = vm_kb(probe.proc.pid)
    finally:
        probe.stop()
    limit = base + size // 2048  # half a filter of room
    wrap = limited(limit)
    s = Server("vlimit", module_args=["MAX_BYTES", str(1 << 40)], wrap=wrap).start()
    try:
        added = fill_big(s.r)
        s.r.bgsave()
        p = wait_persistence(s.r)
        check("limit %d MB, filter %d MB: BGSAVE succeeds" % (limit >> 10, size >> 20),
              p["rdb_last_bgsave_status"] == "ok", p["rdb_last_bgsave_status"])
        try:
            s.r.shutdown(save=True)
        except RedisConnectionError:
            pass
        s.proc.wait(timeout=60)
        check("SHUTDOWN SAVE succeeds under the limit",
              s.proc.returncode == 0 and "DB saved on disk" in log_of(s), s.proc.returncode)
        s.proc = None
        s.start()
        same_big(s.r, added, "restart from that RDB under the limit")
    finally:
        s.stop()

    a = Server("vlimit-aof", module_args=["MAX_BYTES", str(1 << 40)], wrap=wrap,
               extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]).start()
    try:
        added = fill_big(a.r)
        a.r.bgrewriteaof()
        p = wait_persistence(a.r)
        check("AOF rewrite (no RDB preamble) succeeds under the limit",
              p["aof_last_bgrewrite_status"] == "ok", p["aof_last_bgrewrite_status"])
        a.stop()
        a.start()
        same_big(a.r, added, "restart from the rewritten AOF under the limit")
    finally:
        a.stop()


def fill_three(r):
    """A grown BF, a CBF and a WBF, 5,000 items each, and a plain key."""
    r.execute_command("BF.RESERVE", "bf", "0.001", "1000")
    r.execute_command("CBF.RESERVE", "cbf", "0.001", "5000")
    r.execute_command("WBF.RESERVE", "wbf", "0.001", "20000")
    its = items("it", 5000)
    for i in range(0, 5000, 1000):
        for cmd, key in (("BF.MADD", "bf"), ("CBF.MADD", "cbf"), ("WBF.MADD", "wbf")):
            r.execute_command(cmd, key, *its[i:i + 1000])
    r.set("plain", "v")
    return its


def all_there(r, its, what):
    for cmd, key in (("BF.MEXISTS", "bf"), ("CBF.MEXISTS", "cbf"), ("WBF.MEXISTS", "wbf")):
        got = r.execute_command(cmd, key, *its)
        check("%s: %s holds all %d items (%d found)" % (what, key, len(its), sum(got)),
              sum(got) == len(its))
        fp = sum(r.execute_command(cmd, key, *items("no", 2000)))
        check("%s: %s answers absent keys as before (%d of 2000)" % (what, key, fp), fp <= 20)
    check(what + ": the plain key is there", r.get("plain") == b"v")


def test_lowered_cap():
    """Keys already stored load whole under a MAX_BYTES below their size,
    from an RDB, from an AOF of commands and from a rewritten AOF, with
    and without later adds; the cap then limits their growth only."""
    for mode in ("rdb", "aof", "aof-rewrite"):
        extra = [] if mode == "rdb" else ["--appendonly", "yes", "--appendfsync", "always"]
        s = Server("lowcap-" + mode, extra=extra).start()
        try:
            its = fill_three(s.r)
            if mode == "rdb":
                s.r.save()
            elif mode == "aof-rewrite":
                s.r.bgrewriteaof()
                wait_persistence(s.r)
            s.stop()
            s.module_args = ["MAX_BYTES", "20000"]  # below every key here
            s.start()
            all_there(s.r, its, "%s, MAX_BYTES lowered" % mode)
            check("%s: a log line says the keys are over the cap" % mode,
                  "over the limit" in log_of(s) and "kept whole" in log_of(s))
            # later adds: the BF may not grow past the cap, and says so
            res = s.r.execute_command("BF.MADD", "bf", *items("later", 3000))
            errs = [x for x in res if isinstance(x, Exception)]
            check("%s: growth past the lowered cap refused naming MAX_BYTES" % mode,
                  len(errs) == 1 and "MAX_BYTES" in str(errs[0]), errs[:1])
            taken = len(res) - 1
            s.r.execute_command("CBF.MADD", "cbf", *items("later", 100))
            s.r.execute_command("WBF.MADD", "wbf", *items("later", 100))
            if mode == "rdb":
                s.r.save()
            s.stop()
            s.start()  # replays (or loads) the later adds under the lowered cap too
            all_there(s.r, its, "%s, restarted after later adds" % mode)
            later = s.r.execute_command("BF.MEXISTS", "bf", *items("later", 3000))
            check("%s: the adds taken before the refusal are kept (%d)" % (mode, taken),
                  all(x == 1 for x in later[:taken]))
            check("%s: CBF and WBF adds kept" % mode,
                  all(x == 1 for x in s.r.execute_command("CBF.MEXISTS", "cbf",
                                                          *items("later", 100))) and
                  all(x == 1 for x in s.r.execute_command("WBF.MEXISTS", "wbf",
                                                          *items("later", 100))))
            check("%s: no key became a default filter (BF capacity %d)" %
                  (mode, s.r.execute_command("BF.INFO", "bf", "CAPACITY")[0]),
                  s.r.execute_command("BF.INFO", "bf", "CAPACITY")[0] >= 1000 and
                  s.r.execute_command("CBF.INFO", "cbf")[1] >= 5000)
            e = error_of(s.r.execute_command, "BF.RESERVE", "new", "0.001", "100000")
            check("%s: a new filter over the cap is still refused" % mode,
                  e is not None and "MAX_BYTES" in e, e)
        finally:
            s.stop()


def test_replay_failure_stops_the_load():
    """An AOF whose LOADCHUNK bytes are damaged stops the server with a log
    line; it does not start with the key missing."""
    s = Server("badaof", extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]).start()
    try:
        s.r.execute_command("BF.RESERVE", "k", "0.01", "100000")
        s.r.execute_command("BF.MADD", "k", *items("k", 1000))
        s.r.bgrewriteaof()
        wait_persistence(s.r)
        s.stop()
        d = os.path.join(s.dir, "appendonlydir")
        base = [f for f in os.listdir(d) if ".base." in f][0]
        path = os.path.join(d, base)
        with open(path, "rb") as f:
            data = bytearray(f.read())
        # a byte in the middle of the second chunk's bytes (past the filter
        # header), within its bulk string so the RESP framing stays valid
        at = data.rfind(b"BF.LOADCHUNK")
        at = data.index(b"\r\n$", data.index(b"\r\n$", at) + 3)  # key, iterator
        at = data.index(b"\r\n$", at + 3)
        data[at + 400] ^= 0x55
        with open(path, "wb") as f:
            f.write(bytes(data))
        try:
            s.start()
            started = True
        except RuntimeError:
            started = False
        check("damaged AOF: the server refuses to start", not started)
        check("damaged AOF: a log line says why",
              "bloomkit: cannot rebuild a key while loading" in log_of(s))
    finally:
        s.stop()


def test_hostile_numbers(r):
    r.execute_command("WBF.RESERVE", "w", "0.01", "1000", "SECONDS", "60")
    r.execute_command("WBF.ADD", "w", "a")
    clock = dict(zip(*[iter(r.execute_command("WBF.INFO", "w"))] * 2))[b"Clock"]
    e = error_of(r.execute_command, "WBF.ADDAT", "w", "18446744073709551615", "x")
    check("WBF.ADDAT at the end of time refused", e is not None and "past this server's clock" in e, e)
    # 99 years ahead: the window's clock would sit in the future and it
    # would stop forgetting; more than its span (60 s) and a minute is refused
    for ahead in (99 * 366 * 86400, 121):
        e = error_of(r.execute_command, "WBF.ADDAT", "w", str(int(time.time()) + ahead), "x")
        check("WBF.ADDAT %d s ahead refused" % ahead, e is not None and "its span (60 s)" in e, e)
    r.execute_command("WBF.RESERVE", "w2", "0.01", "1000", "SECONDS", "60")
    check("WBF.ADDAT 100 s ahead (within the span and a minute) accepted",
          r.execute_command("WBF.ADDAT", "w2", str(int(time.time()) + 100), "x") == [1])
    e = error_of(r.execute_command, "WBF.ADDAT", "w", str(clock - 3600), "x")
    check("WBF.ADDAT before the window refused", e is not None and "before the window" in e, e)
    after = dict(zip(*[iter(r.execute_command("WBF.INFO", "w"))] * 2))[b"Clock"]
    check("the window's clock did not move (%d)" % after, after == clock)
    check("WBF.ADDAT within the window still works",
          r.execute_command("WBF.ADDAT", "w", str(clock + 5), "y") == [1])
    e = error_of(r.execute_command, "BKI.CREATE", "bk", "BF", "100", "0.01",
                 "18446744073709551615", "0", "1")
    check("BKI.CREATE with an absurd expansion refused", e is not None, e)
    r.execute_command("BKI.CREATE", "bk2", "BF", "100", "0.01", "32768", "0", "1")
    check("BF.INFO shows the expansion stored",
          r.execute_command("BF.INFO", "bk2", "EXPANSION") == [32768])


def test_restore_over_the_cap_refused_before_loading(s):
    """A RESTORE payload announcing more bytes than MAX_BYTES is refused
    from its sizes, before anything is allocated for it (the loader would
    allocate what a crafted header describes, up to the announced size)."""
    r = s.r
    r.execute_command("BF.RESERVE", "small", "0.01", "100")
    payload = r.dump("small")
    body = payload[:-10]
    # type, module id (0x81 + 8 bytes), then UINT tag 3, UINT total
    assert body[10:13] == b"\x02\x03\x02", body[:16]
    enc = body[13]
    width = {0: 1, 1: 2}.get(enc >> 6) or (5 if enc == 0x80 else 9)
    crafted = body[:13] + b"\x81" + (1 << 46).to_bytes(8, "big") + body[13 + width:]
    crafted += payload[-10:-8]
    crafted += tm.crc64(crafted).to_bytes(8, "little")
    e = error_of(r.restore, "crafted", 0, crafted)
    check("RESTORE announcing 64 TiB refused", e is not None and "Bad data format" in e, e)
    check("... from its size, naming MAX_BYTES in the log",
          "refusing a BF value of 70368744177664 bytes, over the limit" in log_of(s))
    check("... and nothing created", r.exists("crafted") == 0 and r.ping())


def test_scandump_holds_no_copy(r):
    r.execute_command("BF.RESERVE", "sd", "0.001", "5000000", "NONSCALING")
    usage = r.memory_usage("sd")
    before = r.info("memory")["used_memory"]
    it, _ = r.execute_command("BF.SCANDUMP", "sd", 0)
    r.execute_command("BF.SCANDUMP", "sd", it)  # then abandoned
    grew = r.info("memory")["used_memory"] - before
    check("an abandoned SCANDUMP keeps no copy (used_memory +%d for a %d-byte filter)" %
          (grew, usage), grew < 2 * (1 << 20) and r.memory_usage("sd") == usage)


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "redis-v1")


def test_v1_data():
    """An RDB and an AOF written with encoding version 1 load and answer."""
    import shutil
    for mode in ("rdb", "aof"):
        s = Server("v1-" + mode, extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]
                   if mode == "aof" else [])
        shutil.copytree(os.path.join(DATA, mode), s.dir, dirs_exist_ok=True)
        try:
            s.start()
            r = s.r
            its = items("v1", 3000)
            x = lambda *a: r.execute_command(*a)  # noqa: E731
            check("v1 %s: bf holds its 3000 items" % mode,
                  all(v == 1 for v in x("BF.MEXISTS", "bf", *its)) and
                  x("BF.CARD", "bf") == (3001 if mode == "aof" else 3000))
            check("v1 %s: bf answers absent keys as before" % mode,
                  sum(x("BF.MEXISTS", "bf", *items("no", 5000))) <= 15)
            check("v1 %s: bf6 and cbf hold theirs" % mode,
                  all(v == 1 for v in x("BF.MEXISTS", "bf6", *its[:1000])) and
                  x("CBF.COUNT", "cbf", "v1-7") == 0 and x("CBF.COUNT", "cbf", "v1-8") == 1 and
                  x("CBF.CARD", "cbf") == 2999)
            check("v1 %s: windows hold theirs" % mode,
                  all(v == 1 for v in x("WBF.MEXISTS", "wbf", *its)) and
                  x("WBF.CARD", "wbft") == 500 and
                  dict(zip(*[iter(x("WBF.INFO", "wbft"))] * 2))[b"Clock"] == 1800000000)
            e = error_of(x, "BF.ADD", "pend", "y")
            check("v1 %s: the pending load is still pending" % mode,
                  e is not None and "LOADCHUNK" in e, e)
            check("v1 %s: the plain key is there" % mode, r.get("plain") == b"v1")
            if mode == "aof":
                check("v1 aof: the add after the rewrite replayed",
                      x("BF.EXISTS", "bf", "after-rewrite") == 1)
            # and what this module saves of them loads back the same
            before = {k: tm.dump_bytes(r, k, f) for k, f in
                      (("bf", "BF"), ("cbf", "CBF"), ("wbf", "WBF"))}
            r.save() if mode == "rdb" else (r.bgrewriteaof(), wait_persistence(r))
            s.stop()
            s.start()
            after = {k: tm.dump_bytes(s.r, k, f) for k, f in
                     (("bf", "BF"), ("cbf", "CBF"), ("wbf", "WBF"))}
            check("v1 %s: saved again and reloaded, every filter identical" % mode,
                  before == after)
        finally:
            s.stop()


def main():
    s = Server("durable-main").start()
    try:
        test_hostile_numbers(s.r)
        test_scandump_holds_no_copy(s.r)
        test_restore_over_the_cap_refused_before_loading(s)
    finally:
        s.stop()
    test_save_under_address_limit()
    test_lowered_cap()
    test_replay_failure_stops_the_load()
    test_v1_data()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a crash is a failure, never a silent pass
        import traceback
        traceback.print_exc()
        check("suite ran to the end", False, repr(e))
    print("%d passed, %d failed" % (tm.passed, tm.failed))
    sys.exit(1 if tm.failed else 0)
