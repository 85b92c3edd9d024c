"""What a run costs on the README's billion-URL seen-set (bench/seenset.sh),
and on a gigabyte cuckoo filter, window and bitmap.

The state is `dedup --normalize url --state S -n 1e9 -p 0.001` (a 2 GB
blocked filter). Each command below runs on a paged state (version 3, as
this release saves it: pages read and checked as keys touch them) and, as
the peer, on the very same filter saved in version 1 (one checksum over
the payload, read whole: what every earlier release did, and what this one
still does for such a file). Both states hold the same 50,000 URLs.

Per command: wall time (around GNU time, so a millisecond or so of its
own), peak RSS and bytes read from storage (GNU time's %M and %I; with a cold cache, the file's pages dropped from the page
cache first with fsync and posix_fadvise DONTNEED; every run starts after a
sync, as a run from cron would on an idle disk). Medians of RUNS rounds
(default 3); the two states take turns within a round. A run of "1 new
line" / "1,000 new lines" adds lines no earlier round added, so each run
writes a checkpoint; a checkpoint of the version-1 state writes it paged
(as this release converts older files), so each of its runs starts from a
fresh sparse copy of it.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BK = os.path.join(os.environ.get("BUILD", "build"), "bloomkit")
RUNS = int(os.environ.get("RUNS", "3"))
QUICK = os.environ.get("BK_BENCH_QUICK", "0") == "1"
N = "1e8" if QUICK else "1e9"


def run(cmd, stdin_data=None, cold=None):
    """(wall s, max RSS KB, bytes read from storage) of one command, from
    GNU time (a child's ru_maxrss from wait4 starts at its parent's). The
    disk's writeback of earlier runs (a version-1 run dirties gigabytes)
    is finished first, so a run's own fdatasync waits for its own pages."""
    os.sync()
    if cold:
        fd = os.open(cold, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    with tempfile.NamedTemporaryFile("r") as tf:
        t = time.perf_counter()  # GNU time's %e counts in 10 ms steps
        p = subprocess.run(["/usr/bin/time", "-f", "%M %I", "-o", tf.name] + cmd,
                           input=stdin_data or b"", stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        wall = time.perf_counter() - t
        if p.returncode not in (0, 1):
            sys.exit(f"bench/seenset.py: {' '.join(cmd)} failed: {p.stderr.decode()}")
        rss, blocks = tf.read().split()[-2:]
    return wall, int(rss), int(blocks) * 512


def urls(tag, n):
    return "".join(f"https://{tag}.example.com/page/{i}?q={i * 7}\n"
                   for i in range(n)).encode()


def fmt_row(name, a, b):
    def cell(v):
        w, r, io = v
        got = f"{io / 1048576:.1f} MB" if io >= 1048576 else f"{io / 1024:.0f} KB"
        return f"{w * 1000:.1f} ms, {r / 1024:.1f} MB, {got} read"
    ratio = b[0] / a[0] if a[0] > 0 else float("inf")
    return f"| {name} | {cell(a)} | {cell(b)} | {ratio:.0f}x |"


def median3(rows):
    return tuple(statistics.median(r[i] for r in rows) for i in range(3))


def main():
    if not os.access(BK, os.X_OK):
        sys.exit(f"bench/seenset.py: needs {BK}")
    work = tempfile.mkdtemp(prefix="bk-seenset.")
    try:
        paged, old = os.path.join(work, "paged.bk"), os.path.join(work, "v1.bk")
        first = []
        for r in range(RUNS):
            for p in (paged,):
                if os.path.exists(p):
                    os.unlink(p)
                first.append(run([BK, "dedup", "-q", "--normalize", "url", "--state", p,
                                  "-n", N, "-p", "0.001"], urls(f"first{r}", 50000)))
        master = os.path.join(work, "v1.master")
        v1_copy(paged, master)
        print(f"## A billion-URL seen-set: what one run costs (-n {N} -p 0.001, 50,000 URLs in it)")
        print()
        print(f"First run into a new state, 50,000 URLs (paged; median of {RUNS}): "
              f"{median3(first)[0] * 1000:.0f} ms, {median3(first)[1] / 1024:.0f} MB RSS")
        side_by_side("state", paged, old, master, [
            ("dedup, 1 new line", lambda s, r, c: run(
                [BK, "dedup", "-q", "--normalize", "url", "--state", s],
                urls(f"one{r}{c}", 1), cold=s if c else None)),
            ("dedup, 1,000 new lines", lambda s, r, c: run(
                [BK, "dedup", "-q", "--normalize", "url", "--state", s],
                urls(f"thousand{r}{c}", 1000), cold=s if c else None)),
            ("check, 1 key", lambda s, r, c: run(
                [BK, "check", "--normalize", "url", s, "-"], urls("first0", 1),
                cold=s if c else None)),
            ("info", lambda s, r, c: run([BK, "info", s], cold=s if c else None)),
        ])
        v = [run([BK, "info", "--verify", paged]) for _ in range(RUNS)]
        print()
        print(f"`info --verify` of the paged state (every page read and checked, every bit "
              f"counted): {median3(v)[0] * 1000:.0f} ms")
        python_first(work, paged, master)
        os.unlink(paged)
        cuckoo(work)
        window(work)
        bitmap(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def v1_copy(src, dst):
    """The peer: src's filter in version 1 (Filter.to_bytes is the
    serialized form, which is never paged), written sparse by a child (this
    process stays small)."""
    subprocess.run([sys.executable, "-c", (
        "import sys; sys.path.insert(0, 'python'); import bloomkit, os\n"
        "b = bloomkit.load(sys.argv[1]).to_bytes()\n"
        "fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT)\n"
        "for o in range(0, len(b), 1 << 20):\n"
        "    c = b[o:o + (1 << 20)]\n"
        "    if c.count(0) != len(c): os.pwrite(fd, c, o)\n"
        "os.ftruncate(fd, len(b))\n"), src, dst], check=True)


def side_by_side(what, paged, old, master, cases):
    """The table of cases (name, fn(path, round, cold) -> run()), each run
    on the paged file and on a fresh sparse copy of master (the version-1
    file: a run may convert it), in turn within each round, warm then cold."""
    print()
    print(f"| run | paged {what} (this release) | version-1 {what}, read whole (before) | ratio |")
    print("|---|---|---|---|")
    for cold in (False, True):
        for name, fn in cases:
            a, b = [], []
            for r in range(RUNS):
                a.append(fn(paged, r, cold))
                subprocess.run(["cp", "--sparse=always", master, old], check=True)
                b.append(fn(old, r, cold))
            print(fmt_row(f"{name}, {'cold' if cold else 'warm'} cache", median3(a), median3(b)))


def cuckoo(work):
    """A 1 GB cuckoo filter (capacity 5e8 at 0.001, 50,000 keys in it): a
    lookup, an add and a remove of one key, paged against version 1."""
    n = "5e7" if QUICK else "5e8"
    paged, old = os.path.join(work, "ck.bk"), os.path.join(work, "ck-v1.bk")
    master = os.path.join(work, "ck-v1.master")
    subprocess.run([BK, "create", "--kind", "cuckoo", "-n", n, "-p", "0.001", paged], check=True)
    subprocess.run([BK, "add", paged, "-"], input=urls("ck", 50000), check=True)
    v1_copy(paged, master)
    print()
    print(f"## A cuckoo filter of {os.path.getsize(paged) / 1e9:.2f} GB (-n {n} -p 0.001, "
          f"50,000 keys in it): one key")
    side_by_side("file", paged, old, master, [
        ("check, 1 key", lambda s, r, c: run(
            [BK, "check", s, "-"], urls("ck", 1), cold=s if c else None)),
        ("add, 1 new key", lambda s, r, c: run(
            [BK, "add", s, "-"], urls(f"cknew{r}{c}", 1), cold=s if c else None)),
        ("remove, 1 key", lambda s, r, c: run(
            [BK, "remove", s, "-"], f"https://ck.example.com/page/{100 + r + 10 * c}?q="
            f"{(100 + r + 10 * c) * 7}\n".encode(), cold=s if c else None)),
    ])


def window(work):
    """A crawler's re-crawl window of a gigabyte (`dedup --window 3e8 -p
    0.001 --state`: URLs seen among the last 300 million), 50,000 URLs in
    it: a run of 1 and of 1,000 new lines, paged against version 1."""
    n = "3e7" if QUICK else "3e8"
    paged, old = os.path.join(work, "win.bk"), os.path.join(work, "win-v1.bk")
    master = os.path.join(work, "win-v1.master")
    subprocess.run([BK, "dedup", "-q", "--window", n, "-p", "0.001", "--state", paged],
                   input=urls("win", 50000), stdout=subprocess.DEVNULL, check=True)
    v1_copy(paged, master)
    print()
    print(f"## A window of {os.path.getsize(paged) / 1e9:.2f} GB (`dedup --window {n} -p 0.001 "
          f"--state`, 50,000 URLs in it): one run")
    side_by_side("state", paged, old, master, [
        ("dedup, 1 new line", lambda s, r, c: run(
            [BK, "dedup", "-q", "--window", n, "-p", "0.001", "--state", s],
            urls(f"winone{r}{c}", 1), cold=s if c else None)),
        ("dedup, 1,000 new lines", lambda s, r, c: run(
            [BK, "dedup", "-q", "--window", n, "-p", "0.001", "--state", s],
            urls(f"winthousand{r}{c}", 1000), cold=s if c else None)),
    ])

# The seen-set from Python: the time from the call that opens it to the
# first answer, inside the interpreter (its start and imports are left
# out), and the process's peak RSS (VmHWM: ru_maxrss would start at the
# parent's).
PY_FIRST = ("import sys, os, time; sys.path.insert(0, 'python'); import bloomkit\n"
            "mode, path = sys.argv[1], sys.argv[2]\n"
            "key = b'https://example.com/never-added'\n"
            "if mode == 'dupefilter':\n"
            "    from bloomkit.scrapy import BloomDupeFilter\n"
            "    from scrapy import Request\n"
            "    req = Request('https://example.com/never-added')\n"
            "t = time.perf_counter()\n"
            "if mode == 'load':\n"
            "    answer = key in bloomkit.load(path)\n"
            "elif mode == 'open':\n"
            "    answer = key in bloomkit.open(path)\n"
            "else:\n"
            "    answer = BloomDupeFilter(os.path.dirname(path)).request_seen(req)\n"
            "t = time.perf_counter() - t\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
            "print(t, hwm[0].split()[1])\n")


def python_first(work, paged, master):
    """`bloomkit.load`, `bloomkit.open` and the Scrapy dupefilter's start
    (`BloomDupeFilter` on a JOBDIR holding the state, then one
    `request_seen`) on the 2 GB seen-set, paged against version 1."""
    try:
        import scrapy  # noqa: F401  (the dupefilter row needs it)
        modes = ["load", "open", "dupefilter"]
    except ImportError:
        print("\n(bench/seenset.py: no Scrapy for this Python: the dupefilter row is skipped)")
        modes = ["load", "open"]
    jobs = {}
    for name in ("paged", "v1"):
        jobs[name] = os.path.join(work, "job-" + name)
        os.makedirs(jobs[name], exist_ok=True)
    state = {"paged": os.path.join(jobs["paged"], "requests.bloom"),
             "v1": os.path.join(jobs["v1"], "requests.bloom")}
    os.link(paged, state["paged"])

    def first(mode, name, cold):
        path = state[name]
        if name == "v1":
            subprocess.run(["cp", "--sparse=always", master, path], check=True)
        os.sync()
        if cold:
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        p = subprocess.run([sys.executable, "-c", PY_FIRST, mode, path], capture_output=True,
                           check=True, text=True)
        marker = path + ".open"
        if os.path.exists(marker):
            os.unlink(marker)
        t, rss = p.stdout.split()
        return float(t), int(rss)

    print()
    print("From Python (a new interpreter each run; the time from the call that opens the "
          "state to its first answer, in the process, and the process's peak RSS):")
    print()
    print("| call | paged state | version-1 state, read whole | ratio |")
    print("|---|---|---|---|")
    what = {"load": "`bloomkit.load(S)`, then `key in f`",
            "open": "`bloomkit.open(S)`, then `key in f`",
            "dupefilter": "Scrapy `BloomDupeFilter(JOBDIR)`, then `request_seen`"}
    for cold in (False, True):
        for mode in modes:
            a, b = [], []
            for _ in range(RUNS):
                a.append(first(mode, "paged", cold))
                b.append(first(mode, "v1", cold))
            ta, ra = (statistics.median(x[i] for x in a) for i in range(2))
            tb, rb = (statistics.median(x[i] for x in b) for i in range(2))
            ratio = f"{tb / ta:.1f}x" if tb < 10 * ta else f"{tb / ta:.0f}x"
            print(f"| {what[mode]}, {'cold' if cold else 'warm'} cache | {ta * 1000:.1f} ms, "
                  f"{ra / 1024:.1f} MB | {tb * 1000:.1f} ms, {rb / 1024:.1f} MB | {ratio} |")
    os.unlink(state["paged"])
    os.unlink(state["v1"])


# One value of a bitmap file from Python, as a program that keeps one
# between runs does: load it, test or set one value (then save).
BITMAP_TEST = ("import sys; sys.path.insert(0, 'python'); import bloomkit\n"
               "b = bloomkit.Bitmap.load(sys.argv[1])\n"
               "sys.exit(0 if int(sys.argv[2]) in b else 1)\n")
BITMAP_SET = ("import sys; sys.path.insert(0, 'python'); import bloomkit\n"
              "b = bloomkit.Bitmap.load(sys.argv[1])\n"
              "b.add(int(sys.argv[2]))\n"
              "b.save(sys.argv[1])\n")


def bitmap(work):
    """A bitmap of a gigabyte (2^33 values: ids below 8.6 billion), 50,000
    values in it, kept in a file by a Python program: a run that tests one
    value, one that sets one and saves, and `info`, paged against version
    1. Each run is a new interpreter (about 20 ms of its own, in both
    columns)."""
    bits = 1 << 30 if QUICK else 1 << 33
    step = bits // 50000
    paged, old = os.path.join(work, "bm.bk"), os.path.join(work, "bm-v1.bk")
    master = os.path.join(work, "bm-v1.master")
    subprocess.run([sys.executable, "-c", (
        "import sys; sys.path.insert(0, 'python'); import bloomkit\n"
        "b = bloomkit.Bitmap(int(sys.argv[2]))\n"
        "b.add_many(range(7, int(sys.argv[2]), int(sys.argv[3])))\n"
        "b.save(sys.argv[1])\n"), paged, str(bits), str(step)], check=True)
    v1_copy(paged, master)
    print()
    print(f"## A bitmap of {os.path.getsize(paged) / 1e9:.2f} GB (2^{bits.bit_length() - 1} "
          f"values, 50,000 set) kept by a Python program: one run")
    side_by_side("file", paged, old, master, [
        ("Python: load, test 1 value", lambda s, r, c: run(
            [sys.executable, "-c", BITMAP_TEST, s, str(7 + step * (100 + r))],
            cold=s if c else None)),
        ("Python: load, set 1 value, save", lambda s, r, c: run(
            [sys.executable, "-c", BITMAP_SET, s, str(8 + step * (200 + r + 10 * c))],
            cold=s if c else None)),
        ("info", lambda s, r, c: run([BK, "info", s], cold=s if c else None)),
    ])


if __name__ == "__main__":
    main()
