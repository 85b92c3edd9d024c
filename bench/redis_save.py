"""What a save costs in memory: the extra memory of a BGSAVE child and of an
AOF rewrite (aof-use-rdb-preamble no) of a server holding one large filter,
against the same for a plain string key of the same size (Redis' own cost
of saving that many bytes).

Run by bench/redis_save.sh as
    python3 redis_save.py REDIS_SERVER MODULE_SO WORKDIR SIZE_MB [BEFORE_SO]
A second module (BEFORE_SO, an earlier build) adds its rows, measured in
the same run.

Two measures of the child's extra memory, both read while it runs:
  - VmPeak of the child minus the VmSize of the server when it forked: the
    address space the save added (what a strict overcommit or a ulimit -v
    judges), polled every few milliseconds from /proc;
  - VmHWM of the child (its peak resident memory, which starts at the
    server's, shared pages included) minus the server's VmRSS when it
    forked: what the save made resident beyond the server's own pages (0
    when the child stayed below the server's resident size, as it can: a
    child does not inherit every resident page, thread stacks for one).
"""

import os
import subprocess
import sys
import time

import redis

SERVER, MODULE, WORK, SIZE_MB = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
BEFORE = sys.argv[5] if len(sys.argv) > 5 else None


def status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def child_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def watch_child(server_pid, r, start, busy_field):
    """Starts a background save and follows its child to the end: the
    largest VmPeak seen, and the server's VmSize when it forked."""
    base = status_kb(server_pid, "VmSize")
    base_rss = status_kb(server_pid, "VmRSS")
    start()
    peak = hwm = 0
    t0 = time.time()
    while time.time() - t0 < 600:
        kid = child_of(server_pid)
        if kid:
            v, h = status_kb(kid, "VmPeak"), status_kb(kid, "VmHWM")
            if v and h:
                peak, hwm = max(peak, v), max(hwm, h)
        elif r.info("persistence")[busy_field] == 0:
            break
        time.sleep(0.002)
    return base, peak, base_rss, hwm


def measure(module, label, filler):
    d = os.path.join(WORK, label.replace(" ", "_"))
    os.makedirs(d, exist_ok=True)
    port = 30000 + os.getpid() % 20000
    log = os.path.join(d, "log")
    args = [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "",
            "--logfile", log, "--appendonly", "no", "--aof-use-rdb-preamble", "no",
            "--proto-max-bulk-len", "4gb", "--loadmodule", module, "MAX_BYTES", str(1 << 40)]
    p = subprocess.Popen(args)
    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            r.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    try:
        size = filler(r)
        base, peak, rss, hwm = watch_child(p.pid, r, r.bgsave, "rdb_bgsave_in_progress")
        ok = r.info("persistence")["rdb_last_bgsave_status"]
        rdb = (peak - base) / 1024.0 if peak and base else float("nan")
        rdb_rss = max(0, hwm - rss) / 1024.0 if hwm and rss else float("nan")
        r.config_set("appendonly", "yes")  # starts a rewrite
        base2, peak2, rss2, hwm2 = watch_child(p.pid, r, lambda: None,
                                               "aof_rewrite_in_progress")
        for _ in range(600):
            i = r.info("persistence")
            if not i["aof_rewrite_in_progress"] and not i["aof_rewrite_scheduled"]:
                break
            time.sleep(0.05)
        aof_ok = r.info("persistence")["aof_last_bgrewrite_status"]
        aof = (peak2 - base2) / 1024.0 if peak2 and base2 else float("nan")
        aof_rss = max(0, hwm2 - rss2) / 1024.0 if hwm2 and rss2 else float("nan")
        print("| %-28s | %6.0f MB | %8.1f MB | %8.1f MB | %-3s | %8.1f MB | %8.1f MB | %-3s |" %
              (label, size / 1048576.0, rdb, rdb_rss, ok, aof, aof_rss, aof_ok))
    finally:
        p.terminate()
        p.wait()
        subprocess.run(["rm", "-rf", d])


def fill_filter(r):
    capacity = int(SIZE_MB * 1048576 * 8 / 32)  # about 32 bits per item at 1e-6
    r.execute_command("BF.RESERVE", "big", "0.000001", str(capacity), "NONSCALING")
    r.execute_command("BF.MADD", "big", *[b"k%d" % i for i in range(10000)])
    return r.execute_command("BF.INFO", "big", "SIZE")[0]


def fill_string(r):
    # the same number of bytes, random (incompressible, as a used filter is)
    size = fill_filter_size[0]
    chunk = os.urandom(1 << 20)
    r.delete("plain")
    for off in range(0, size, len(chunk)):
        r.setrange("plain", off, chunk[: min(len(chunk), size - off)])
    return size


fill_filter_size = [0]


def main():
    print("Extra memory of a save of one %d MB key (BGSAVE child, AOF rewrite "
          "child; aof-use-rdb-preamble no)" % SIZE_MB)
    print()
    print("| key | size | BGSAVE: address space | BGSAVE: resident | status | "
          "AOF rewrite: address space | AOF: resident | status |")
    print("|---|---|---|---|---|---|---|---|")

    def filt(r):
        fill_filter_size[0] = fill_filter(r)
        return fill_filter_size[0]
    measure(MODULE, "bloomkit filter", filt)
    if BEFORE:
        measure(BEFORE, "bloomkit filter (before)", fill_filter)
    measure(MODULE, "plain string (Redis' own)", fill_string)


main()
