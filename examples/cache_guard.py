#!/usr/bin/env python3
"""Cache-penetration guard with bloomkit's Redis module (redis-py).

Requests for ids that do not exist miss the cache every time and would all
reach the database; an attacker can use that to overload it. The guard
keeps every existing id in a Bloom filter in Redis (shared by all
application servers) and answers "no such user" at once for ids the filter
has never seen. A false positive (about 0.1% here) only costs one database
query, and the miss is then cached briefly.

    python3 examples/cache_guard.py [PORT]   (redis-server with bloomkit.so)

Needs redis-py: Debian's python3-redis for /usr/bin/python3, or
`python3 -m pip install redis` for another Python.

Prints what happened and exits 1 if the guard let an existing user down or
let through far more than its error rate allows.
"""
import sys

try:
    import redis
except ImportError:
    sys.exit("cache_guard.py needs redis-py, the Redis client for Python: "
             "apt-get install python3-redis (for /usr/bin/python3), or "
             "%s -m pip install redis" % (sys.executable or "python3"))

FILTER = "guard:users"
ERROR_RATE = 0.001


class Database:
    """Stands in for the real database and counts the queries it gets."""

    def __init__(self, ids):
        self.rows = {i: "user-%d" % i for i in ids}
        self.queries = 0

    def find(self, uid):
        self.queries += 1
        return self.rows.get(uid)


class Guard:
    def __init__(self, r, db):
        self.r = r
        self.db = db
        self.blocked = 0

    def load(self, ids):
        """Fills the filter with every id that exists (run once, and on
        every insert into the table)."""
        try:
            self.r.execute_command("BF.RESERVE", FILTER, ERROR_RATE, max(len(ids), 100))
        except redis.ResponseError as e:
            if "item exists" not in str(e):
                raise
        ids = list(ids)
        for i in range(0, len(ids), 1000):
            self.r.execute_command("BF.MADD", FILTER, *ids[i:i + 1000])

    def get_user(self, uid):
        if not self.r.execute_command("BF.EXISTS", FILTER, uid):
            self.blocked += 1
            return None  # certainly absent: neither cache nor database
        cached = self.r.get("guard:cache:%d" % uid)
        if cached is not None:
            return cached.decode() or None  # "" caches a false positive's miss
        row = self.db.find(uid)
        self.r.set("guard:cache:%d" % uid, row or "", ex=60 if row else 10)
        return row


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    r = redis.Redis(host="127.0.0.1", port=port)
    r.delete(FILTER, *["guard:cache:%d" % i for i in range(0, 40000)])
    existing = range(1, 10001)
    db = Database(existing)
    guard = Guard(r, db)
    guard.load(existing)

    served = sum(1 for uid in range(1, 10001, 10) if guard.get_user(uid) is not None)
    attack = range(1000000, 1020000)  # ids that do not exist
    before = db.queries
    for uid in attack:
        guard.get_user(uid)
    leaked = db.queries - before
    print("existing users served: %d of 1000" % served)
    print("requests for missing ids: %d, blocked by the filter: %d, reached the database: %d"
          % (len(attack), guard.blocked, leaked))
    ok = served == 1000 and leaked <= len(attack) * ERROR_RATE * 3
    print("guard ok" if ok else "guard FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
