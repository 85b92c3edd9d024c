import sys, os, time, subprocess, redis
srv, mod, d, mode = sys.argv[1:5]
os.makedirs(d, exist_ok=True)
port = 23456 if mode == "rdb" else 23457
args = [srv, "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "", "--loadmodule", mod]
if mode == "aof":
    args += ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]
p = subprocess.Popen(args, stdout=subprocess.DEVNULL)
r = redis.Redis(port=port)
for _ in range(100):
    try:
        r.ping(); break
    except Exception: time.sleep(0.05)
it = [("v1-%d" % i).encode() for i in range(3000)]
r.execute_command("BF.RESERVE", "bf", "0.001", "500", "EXPANSION", "2")
r.execute_command("BF.MADD", "bf", *it)
r.execute_command("BF.RESERVE", "bf6", "0.000001", "2000")
r.execute_command("BF.MADD", "bf6", *it[:1000])
r.execute_command("CBF.RESERVE", "cbf", "0.001", "3000")
r.execute_command("CBF.MADD", "cbf", *it)
r.execute_command("CBF.DEL", "cbf", "v1-7")
r.execute_command("WBF.RESERVE", "wbf", "0.001", "3000")
r.execute_command("WBF.MADD", "wbf", *it)
r.execute_command("WBF.RESERVE", "wbft", "0.001", "3000", "SECONDS", "86400")
r.execute_command("WBF.ADDAT", "wbft", "1800000000", *it[:500])
it0, hdr = r.execute_command("BF.SCANDUMP", "bf", 0)
r.execute_command("BF.LOADCHUNK", "pend", it0, hdr)
r.set("plain", "v1")
if mode == "rdb":
    r.save()
else:
    r.bgrewriteaof()
    for _ in range(200):
        i = r.info("persistence")
        if not i["aof_rewrite_in_progress"] and not i["aof_rewrite_scheduled"]: break
        time.sleep(0.05)
    r.execute_command("BF.ADD", "bf", "after-rewrite")
print("card", r.execute_command("BF.CARD", "bf"), r.execute_command("CBF.CARD", "cbf"))
p.terminate(); p.wait()
