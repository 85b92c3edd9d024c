"""What a run costs on the README's billion-URL seen-set (bench/seenset.sh).

The state is `dedup --normalize url --state S -n 1e9 -p 0.001` (a 2 GB
blocked filter). Each command below runs on a paged state (version 3, as
this release saves it: pages read and checked as keys touch them) and, as
the peer, on the very same filter saved in version 1 (one checksum over
the payload, read whole: what every earlier release did, and what this one
still does for such a file). Both states hold the same 50,000 URLs.

Per command: wall time, peak RSS, and bytes read from storage (ru_inblock;
with a cold cache, the file's pages dropped from the page cache first with
posix_fadvise DONTNEED). Medians of RUNS rounds (default 3); the two states
take turns within a round. A run of "1 new line" / "1,000 new lines" adds
lines no earlier round added, so each run writes a checkpoint.
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
    """(wall s, max RSS KB, bytes read from storage) of one command."""
    if cold:
        fd = os.open(cold, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    p.stdin.write(stdin_data or b"")
    p.stdin.close()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"bench/seenset.py: {' '.join(cmd)} failed: {err.decode()}")
    return wall, ru.ru_maxrss, ru.ru_inblock * 512


def urls(tag, n):
    return "".join(f"https://{tag}.example.com/page/{i}?q={i * 7}\n"
                   for i in range(n)).encode()


def fmt_row(name, a, b):
    def cell(v):
        w, r, io = v
        return f"{w * 1000:.0f} ms, {r / 1024:.0f} MB, {io / 1048576:.1f} MB read"
    ratio = b[0] / a[0] if a[0] > 0 else float("inf")
    return f"| {name} | {cell(a)} | {cell(b)} | {ratio:.0f}x |"


def median3(rows):
    return tuple(statistics.median(r[i] for r in rows) for i in range(3))


def main():
    if not os.access(BK, os.X_OK):
        sys.exit(f"bench/seenset.py: needs {BK}")
    sys.path.insert(0, "python")
    import bloomkit  # noqa: E402 (built in place by seenset.sh)

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
        # the peer: the same filter in version 1 (Filter.to_bytes is the
        # serialized form, which is never paged)
        f = bloomkit.load(paged)
        with open(old, "wb") as out:
            out.write(f.to_bytes())
        del f
        print(f"## A billion-URL seen-set: what one run costs (-n {N} -p 0.001, 50,000 URLs in it)")
        print()
        print(f"First run into a new state, 50,000 URLs (paged; median of {RUNS}): "
              f"{median3(first)[0] * 1000:.0f} ms, {median3(first)[1] / 1024:.0f} MB RSS")
        print()
        print("| run | paged state (this release) | version-1 state, read whole (before) | ratio |")
        print("|---|---|---|---|")
        cases = [
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
        ]
        for cold in (False, True):
            for name, fn in cases:
                a, b = [], []
                for r in range(RUNS):
                    a.append(fn(paged, r, cold))
                    b.append(fn(old, r, cold))
                print(fmt_row(f"{name}, {'cold' if cold else 'warm'} cache", median3(a),
                              median3(b)))
        v = [run([BK, "info", "--verify", paged]) for _ in range(RUNS)]
        print()
        print(f"`info --verify` of the paged state (every page read and checked, every bit "
              f"counted): {median3(v)[0] * 1000:.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
