#!/bin/sh
# What one CF.RESERVE costs a Redis server, bloomkit against RedisBloom
# 2.8.20 (built by bench/redisbloom_build.sh; skipped with a line when its
# source is absent), on two servers of the same redis-server side by side:
# used_memory growth per key for K fresh keys over capacity 100 .. 10^7 x
# bucket size 1 .. 8, each cell measured after the same keys were made and
# deleted once (so the keyspace's own growth is not counted).
BUILD=${BUILD:-build}
MODULE=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit.so
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if [ ! -f "$MODULE" ] || ! command -v redis-server >/dev/null; then
    echo "bench/redis_cf_memory.sh: needs $BUILD/bloomkit.so and redis-server" >&2
    exit 1
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-cf-mem.XXXXXX")
trap 'rm -rf "$W"' EXIT
RB=$W/redisbloom.so
why=$(sh bench/redisbloom_build.sh "$RB") || { echo "bench/redis_cf_memory.sh: skipped: $why"; exit 0; }
"$PY" - "$MODULE" "$RB" "$W" <<'PYEOF'
import os, subprocess, sys, time
import redis

def measure(module, port, work):
    d = os.path.join(work, str(port))
    os.makedirs(d, exist_ok=True)
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--dir", d,
                          "--logfile", os.path.join(d, "log"), "--loadmodule", module],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            r.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    out = {}
    try:
        r.execute_command("CF.RESERVE", "warm", 100)
        for cap in (100, 1000, 10000, 100000, 1000000, 10000000):
            for bs in (1, 2, 3, 4, 8):
                k = 200 if cap <= 10000 else 20 if cap <= 100000 else 3
                names = ["k%d" % i for i in range(k)]
                def make():
                    pipe = r.pipeline(transaction=False)
                    for n in names:
                        pipe.execute_command("CF.RESERVE", n, cap, "BUCKETSIZE", bs)
                    pipe.execute()
                make()
                r.delete(*names)
                before = r.info("memory")["used_memory"]
                make()
                out[cap, bs] = (r.info("memory")["used_memory"] - before) / k
                r.delete(*names)
    finally:
        p.terminate()
        p.wait()
    return out

bk = measure(sys.argv[1], 21000 + os.getpid() % 5000, sys.argv[3])
rb = measure(sys.argv[2], 26000 + os.getpid() % 5000, sys.argv[3])
print("## Redis: memory of one CF.RESERVE, bloomkit and RedisBloom 2.8.20 (bench/redis_cf_memory.sh)")
print()
print("| capacity | bucket size | bloomkit used_memory / key | RedisBloom used_memory / key | bloomkit / RedisBloom |")
print("|---:|---:|---:|---:|---:|")
for cap, bs in bk:
    a, b = bk[cap, bs], rb[cap, bs]
    print("| %d | %d | %.0f | %.0f | %.3fx |" % (cap, bs, a, b, a / b))
PYEOF
