"""Taking over RedisBloom's data: the RDB, the AOF and the SCANDUMP chunks
that RedisBloom 2.8.20 wrote (tests/data/redisbloom/, with RedisBloom's
own answers for every key), loaded by redis-server with bloomkit.so and
no RedisBloom. Every BF key must answer every item and all 20,000 probes
exactly as RedisBloom did (its false positives included), report its
BF.INFO and BF.CARD, dump RedisBloom's chunks byte for byte, be written
back in RedisBloom's RDB encoding (the value bytes of RedisBloom's own
RDB), grow by RedisBloom's rule and survive restarts, replication and
AOF rewrites. CF keys likewise: every answer, CF.INFO and CF.SCANDUMP as
RedisBloom's, and the same CF commands give RedisBloom's bytes.

Run by tests/redis/run.sh as
    python3 test_redisbloom.py REDIS_SERVER MODULE_SO WORKDIR
Ends with "N passed, N failed".
"""

import os
import random
import shutil
import struct
import sys
import time

sys.argv = sys.argv[:4]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_module as tm  # noqa: E402  (its server helpers)
from redis.exceptions import ResponseError  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "redisbloom")
RDB = os.path.join(DATA, "redisbloom-2.8.20-redis-7.0.rdb")
AOF = os.path.join(DATA, "redisbloom-2.8.20-redis-7.0.aof")


def load_answers():
    """answers.txt: RedisBloom's answers, one record a line."""
    keys, probes, cur = {}, [], None
    with open(os.path.join(DATA, "answers.txt")) as f:
        for line in f:
            word, _, rest = line.rstrip("\n").partition(" ")
            if word == "probes":
                prefix, n = rest.split(" ")
                probes = ["%s%d" % (prefix, i) for i in range(int(n))]
            elif word == "key":
                cur = keys[rest] = {"items": [], "positive": set(), "chunks": [], "info": {}}
            elif word == "info":
                for pair in rest.split(" "):
                    k, v = pair.split("=")
                    cur["info"][k.replace("_", " ")] = None if v == "nil" else int(v)
            elif word == "card":
                cur["card"] = int(rest)
            elif word == "chunk":
                it, hexdata = rest.split(" ")
                cur["chunks"].append((int(it), bytes.fromhex(hexdata)))
            elif word == "item":
                cur["items"].append(rest)
            elif word == "positive":
                cur["positive"].add(int(rest))
    return keys, probes


ANSWERS, PROBES = load_answers()
BF_KEYS = [k for k in ANSWERS if k.startswith("bf:")]
CF_KEYS = [k for k in ANSWERS if k.startswith("cf:")]


def mexists(r, key, names, cmd="BF"):
    out = []
    for i in range(0, len(names), 2000):
        out += r.execute_command(cmd + ".MEXISTS", key, *names[i:i + 2000])
    return out


def cf_dump(r, key):
    chunks, it = [], 0
    for _ in range(10000):
        it, data = r.execute_command("CF.SCANDUMP", key, it)
        if it == 0:
            break
        chunks.append((it, data))
    return chunks


def cf_answers_as_redisbloom(r, key, what, name=None):
    """CF key `key` answers as RedisBloom's `name` did."""
    a = ANSWERS[name or key]
    present = mexists(r, key, a["items"], "CF")
    tm.check("%s: %s: all %d items present" % (what, key, len(a["items"])),
             all(x == 1 for x in present), present.count(0))
    got = mexists(r, key, PROBES, "CF")
    positive = {i for i, x in enumerate(got) if x == 1}
    tm.check("%s: %s: the %d false positives among %d probes are RedisBloom's own" %
             (what, key, len(a["positive"]), len(PROBES)), positive == a["positive"],
             "%d extra, %d missing" % (len(positive - a["positive"]),
                                       len(a["positive"] - positive)))
    raw = r.execute_command("CF.INFO", key)
    info = {raw[i].decode(): raw[i + 1] for i in range(0, len(raw), 2)}
    tm.check("%s: %s: CF.INFO as RedisBloom's, Size included" % (what, key),
             info == a["info"], (info, a["info"]))
    chunks = cf_dump(r, key)
    tm.check("%s: %s: CF.SCANDUMP gives RedisBloom's chunks byte for byte" % (what, key),
             chunks == a["chunks"], (len(chunks), len(a["chunks"])))


def answers_as_redisbloom(r, key, what):
    a = ANSWERS[key]
    present = mexists(r, key, a["items"])
    tm.check("%s: %s: all %d items present" % (what, key, len(a["items"])),
             all(x == 1 for x in present), present.count(0))
    got = mexists(r, key, PROBES)
    positive = {i for i, x in enumerate(got) if x == 1}
    tm.check("%s: %s: the %d false positives among %d probes are RedisBloom's own" %
             (what, key, len(a["positive"]), len(PROBES)), positive == a["positive"],
             "%d extra, %d missing" % (len(positive - a["positive"]),
                                       len(a["positive"] - positive)))


def info_as_redisbloom(r, key, what):
    a = ANSWERS[key]
    raw = r.execute_command("BF.INFO", key)
    info = {raw[i].decode(): raw[i + 1] for i in range(0, len(raw), 2)}
    want = dict(a["info"])  # Size too: RedisBloom's figure for its chains
    got = {k: info.get(k) for k in want}
    tm.check("%s: %s: BF.INFO as RedisBloom's" % (what, key), got == want, (got, want))
    tm.check("%s: %s: BF.CARD" % (what, key),
             r.execute_command("BF.CARD", key) == a["card"])


def all_answers(r, what):
    for key in BF_KEYS:
        answers_as_redisbloom(r, key, what)
        info_as_redisbloom(r, key, what)


def scandump_is_redisbloom(r, what):
    for key in BF_KEYS:
        chunks = tm.dump_all(r, "BF", key)
        want = ANSWERS[key]["chunks"]
        tm.check("%s: %s: BF.SCANDUMP gives RedisBloom's chunks byte for byte" % (what, key),
                 chunks == want, (len(chunks), len(want)))


def server_with(name, files, extra=()):
    s = tm.Server(name, extra=list(extra))
    for src, dst in files:
        shutil.copyfile(src, os.path.join(s.dir, dst))
    return s.start()


def test_rdb():
    s = server_with("rb-rdb", [(RDB, "dump.rdb")])
    try:
        r = s.r
        tm.check("rdb: every key of RedisBloom's RDB loaded", r.dbsize() == 8, r.dbsize())
        tm.check("rdb: BF keys keep RedisBloom's type",
                 all(r.type(k) == b"MBbloom--" for k in BF_KEYS))
        tm.check("rdb: CF keys keep RedisBloom's type", r.type("cf:plain") == b"MBbloomCF")
        tm.check("rdb: a BF command on a CF key is WRONGTYPE",
                 "WRONGTYPE" in (tm.error_of(r.execute_command, "BF.ADD", "cf:plain", "x") or ""))
        all_answers(r, "rdb")
        for key in CF_KEYS:
            cf_answers_as_redisbloom(r, key, "rdb")
        scandump_is_redisbloom(r, "rdb")
        debug = r.execute_command("BF.DEBUG", "bf:default")
        tm.check("rdb: BF.DEBUG prints RedisBloom's lines",
                 debug[0] == b"size:993" and debug[1] ==
                 b"bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005",
                 debug[:2])

        # Written back in RedisBloom's encoding: each key's value bytes (a
        # DUMP payload less its type byte and trailer) occur verbatim in
        # the RDB RedisBloom itself wrote.
        with open(RDB, "rb") as f:
            original = f.read()
        same = [k for k in BF_KEYS + ["cf:plain", "cf:scaled"]
                if r.dump(k)[1:-10] in original]
        tm.check("rdb: values are saved in RedisBloom's own bytes (%d of 8 keys)" % len(same),
                 len(same) == 8, sorted(set(BF_KEYS + ["cf:plain", "cf:scaled"]) - set(same)))

        # Growth by RedisBloom's rule: bf:default has 293 of 800 in its
        # newest link; 3,000 new keys fill it and a link of 1,600 and open
        # one of 3,200.
        new = ["grow:%d" % i for i in range(3000)]
        added = r.execute_command("BF.MADD", "bf:default", *new)
        info = r.execute_command("BF.INFO", "bf:default")
        info = {info[i].decode(): info[i + 1] for i in range(0, len(info), 2)}
        tm.check("rdb: growth follows RedisBloom (links of 1,600 then 3,200)",
                 info["Number of filters"] == 6 and info["Capacity"] == 1500 + 1600 + 3200,
                 info)
        tm.check("rdb: a grown key keeps every key",
                 all(x == 1 for x in mexists(r, "bf:default", new + ANSWERS["bf:default"]["items"])))
        tm.check("rdb: BF.CARD counts the new keys",
                 r.execute_command("BF.CARD", "bf:default") == 993 + sum(added))
        grown = tm.dump_all(r, "BF", "bf:default")
        check_restart_keeps(s, "bf:default", grown)
    finally:
        s.stop()


def check_restart_keeps(s, key, chunks):
    r = s.r
    tm.check("rdb: SAVE of RedisBloom keys", r.save())
    s.stop()
    s.start()
    r = s.r
    tm.check("rdb: after SAVE and restart, still RedisBloom's type and bytes",
             r.type(key) == b"MBbloom--" and tm.dump_all(r, "BF", key) == chunks)
    for k in BF_KEYS:
        if k != key:
            answers_as_redisbloom(r, k, "restart")
    tm.check("rdb: CF keys survive a save and restart", r.type("cf:scaled") == b"MBbloomCF")


def resp_commands(data):
    """The commands of an AOF (RESP arrays of bulk strings)."""
    out, i = [], 0
    while i < len(data):
        assert data[i:i + 1] == b"*"
        j = data.index(b"\r\n", i)
        n = int(data[i + 1:j])
        i = j + 2
        args = []
        for _ in range(n):
            j = data.index(b"\r\n", i)
            ln = int(data[i + 1:j])
            args.append(data[j + 2:j + 2 + ln])
            i = j + 2 + ln + 2
        out.append(args)
    return out


def test_aof():
    """RedisBloom's rewritten AOF (BF.LOADCHUNK and CF.LOADCHUNK of its
    chunks), replayed as RedisBloom wrote it."""
    with open(AOF, "rb") as f:
        cmds = resp_commands(f.read())
    tm.check("aof: RedisBloom's AOF holds BF.LOADCHUNK and CF.LOADCHUNK commands",
             sum(c[0].upper() == b"BF.LOADCHUNK" for c in cmds) >= 12 and
             sum(c[0].upper() == b"CF.LOADCHUNK" for c in cmds) >= 4)
    s = server_with("rb-aof", [(AOF, "appendonly.aof")],
                    extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"])
    try:
        r = s.r
        tm.check("aof: every key of RedisBloom's AOF replayed",
                 sorted(k.decode() for k in r.keys("*")) == sorted(BF_KEYS + CF_KEYS))
        all_answers(r, "aof")
        for key in CF_KEYS:
            cf_answers_as_redisbloom(r, key, "aof")
        # Rewritten by bloomkit: RedisBloom's chunks again, replayed again.
        r.bgrewriteaof()
        tm.wait_aof_rewrite(r, 400)
        tm.check("aof: rewrite succeeded", r.info("persistence")["aof_last_bgrewrite_status"] == "ok")
        s.stop()
        s.start()
        scandump_is_redisbloom(s.r, "aof rewritten")
        answers_as_redisbloom(s.r, "bf:scaled", "aof rewritten")
        cf_answers_as_redisbloom(s.r, "cf:plain", "aof rewritten")
    finally:
        s.stop()


def test_loadchunk_and_replica():
    """RedisBloom's SCANDUMP chunks through BF.LOADCHUNK, onto a master
    with a replica: both hold RedisBloom's filter."""
    m = tm.Server("rb-master").start()
    rep = tm.Server("rb-replica", extra=["--replicaof", "127.0.0.1", str(m.port)]).start()
    try:
        for _ in range(200):
            if rep.r.info("replication").get("master_link_status") == "up":
                break
            time.sleep(0.05)
        r = m.r
        for key in BF_KEYS:
            for it, data in ANSWERS[key]["chunks"]:
                r.execute_command("BF.LOADCHUNK", key, it, data)
        all_answers(r, "loadchunk")
        tm.check("loadchunk: RedisBloom's type",
                 all(r.type(k) == b"MBbloom--" for k in BF_KEYS))
        tm.check("loadchunk: WAIT", r.execute_command("WAIT", 1, 5000) == 1)
        answers_as_redisbloom(rep.r, "bf:exp1", "replica")
        tm.check("replica: identical RedisBloom chunks",
                 all(tm.dump_all(rep.r, "BF", k) == ANSWERS[k]["chunks"] for k in BF_KEYS))
        # RedisBloom's errors for what it refuses.
        hdr = ANSWERS["bf:small"]["chunks"][0][1]
        bad = bytearray(hdr)
        bad[0] ^= 1  # items no longer the links' sum
        e = tm.error_of(r.execute_command, "BF.LOADCHUNK", "rb:bad", 1, bytes(bad))
        tm.check("loadchunk: a bad header is RedisBloom's 'received bad data'",
                 e == "received bad data", e)
        r.execute_command("BF.LOADCHUNK", "rb:new", 1, hdr)
        e = tm.error_of(r.execute_command, "BF.LOADCHUNK", "rb:new", 146, b"x" * 145)
        tm.check("loadchunk: a chunk past its link is refused",
                 e == "invalid chunk - Too big for current filter", e)
        e = tm.error_of(r.execute_command, "BF.LOADCHUNK", "rb:new", 1000, b"x")
        tm.check("loadchunk: a chunk past the end is refused",
                 e == "invalid offset - no link found", e)
        # A hostile header: one link of 2^43 bits, valid in every field.
        huge = bytearray(hdr)
        bits = 1 << 43
        huge[20 + 0:20 + 8] = struct.pack("<Q", bits // 8)
        huge[20 + 8:20 + 16] = struct.pack("<Q", bits)
        huge[0:8] = huge[20 + 16:20 + 24]  # items still the link's
        e = tm.error_of(r.execute_command, "BF.LOADCHUNK", "rb:huge", 1, bytes(huge))
        tm.check("loadchunk: a header past MAX_BYTES is refused before allocating",
                 e is not None and "MAX_BYTES" in e and r.exists("rb:huge") == 0, e)
        # refused chunks changed nothing: the rest of the dump completes it
        e = tm.error_of(r.execute_command, "BF.EXISTS", "rb:new", "z")
        tm.check("loadchunk: a key still being restored refuses queries",
                 e is not None and "being restored" in e, e)
        for it, data in ANSWERS["bf:small"]["chunks"][1:]:
            r.execute_command("BF.LOADCHUNK", "rb:new", it, data)
        tm.check("loadchunk: after refused chunks the whole dump still restores the key",
                 all(x == 1 for x in mexists(r, "rb:new", ANSWERS["bf:small"]["items"])) and
                 r.execute_command("BF.ADD", "rb:new", "z") == 1 and
                 r.execute_command("BF.EXISTS", "rb:new", "z") == 1)
        # COPY and DUMP/RESTORE keep the type and the bytes.
        r.execute_command("COPY", "bf:scaled", "rb:copy")
        data = r.dump("bf:big")
        r.restore("rb:restored", 0, data)
        tm.check("COPY and RESTORE keep RedisBloom's filter",
                 r.type("rb:copy") == b"MBbloom--" and r.type("rb:restored") == b"MBbloom--" and
                 tm.dump_all(r, "BF", "rb:copy") == ANSWERS["bf:scaled"]["chunks"] and
                 tm.dump_all(r, "BF", "rb:restored") == ANSWERS["bf:big"]["chunks"])
        tm.check("MEMORY USAGE of a taken-over key counts its bytes",
                 r.memory_usage("bf:big") >= 275696)
        tm.check("new keys are bloomkit's own",
                 r.execute_command("BF.ADD", "fresh", "x") == 1 and r.type("fresh") == b"bkbloom-1")
    finally:
        rep.stop()
        m.stop()


# RedisBloom's replies to a chunk it does not take, which bloomkit gives
# for a data chunk sent to a whole RedisBloom-format key (RedisBloom would
# write it over the key's bits).
RB_REFUSAL = {"BF": "received bad data", "CF": "Couldn't load chunk!"}


def load_sequence(r, cmd, key, chunks):
    """Sends chunks with `cmd`; the error texts (None for OK), in order."""
    errs = []
    for it, data in chunks:
        errs.append(tm.error_of(r.execute_command, cmd, key, it, data))
    return errs


def sequence_answers(r, fam, key, items):
    """What the key says of its items now: 'absent' if any added item
    answers 0, 'refused' if queries are refused or the key is gone,
    'whole' if every item is present."""
    if not r.exists(key):
        return "refused"
    try:
        got = mexists(r, key, items, fam)
    except ResponseError:
        return "refused"
    return "whole" if all(x == 1 for x in got) else "absent"


def rewrite_and_restart(s):
    """BGREWRITEAOF, its end awaited, then the server restarted from the
    AOF; the new connection."""
    r = s.r
    r.bgrewriteaof()
    tm.wait_aof_rewrite(r)
    s.stop()
    s.start()
    return s.r


def test_chunk_sequences():
    """RedisBloom-format chunks with one missing, short, empty or extra:
    RedisBloom answers OK to every one and then says "absent" for added
    items; here a broken sequence is refused (the key removed, or refusing
    queries until its last chunk) and never answers "absent" for an item
    that was added."""
    s = tm.Server("rb-chunks").start()
    try:
        r = s.r
        for fam, src in (("BF", "bf:scaled"), ("CF", "cf:scaled")):
            cmd = fam + ".LOADCHUNK"
            chunks, items = ANSWERS[src]["chunks"], ANSWERS[src]["items"]
            data = list(range(1, len(chunks)))  # indexes of the data chunks
            cases = []
            for i in data:
                cases.append(("chunk %d missing" % i, chunks[:i] + chunks[i + 1:]))
                it, d = chunks[i]
                cases.append(("chunk %d short by one byte" % i,
                              chunks[:i] + [(it - 1, d[:-1])] + chunks[i + 1:]))
                cases.append(("chunk %d empty" % i, chunks[:i] + [(it, b"")] + chunks[i + 1:]))
            for name, seq in cases:
                key = "%s:%s" % (fam, name.replace(" ", "-"))
                errs = load_sequence(r, cmd, key, seq)
                said = sequence_answers(r, fam, key, items)
                tm.check("%s chunks, %s: refused (%d of %d replies errors), never 'absent' (%s)"
                         % (fam, name, sum(e is not None for e in errs), len(errs), said),
                         said == "refused" and (any(errs) or r.exists(key)), errs)
            # the whole sequence, then a data chunk again: refused, unchanged
            key = fam + ":whole"
            errs = load_sequence(r, cmd, key, chunks)
            tm.check("%s chunks: the whole sequence restores the key" % fam,
                     not any(errs) and sequence_answers(r, fam, key, items) == "whole", errs)
            it, d = chunks[1]
            e = tm.error_of(r.execute_command, cmd, key, it, bytes(len(d)))
            tm.check("%s chunks: a data chunk sent to a complete key is refused, in "
                     "RedisBloom's words" % fam, e == RB_REFUSAL[fam], e)
            tm.check("%s chunks: ... and the key keeps every item" % fam,
                     sequence_answers(r, fam, key, items) == "whole")
            # an empty filter's dump: its header counts no items, so the
            # key is whole at once (RedisBloom serves it too) and the dump's
            # zero chunks after it are taken
            # (the source's shape, holding nothing: item counts and data
            # zeroed; SCANDUMP of an empty CF key has no chunks, RedisBloom's
            # neither, but an AOF rewrite writes them)
            empty = fam + ":empty"
            ehdr = bytearray(chunks[0][1])
            ehdr[0:8] = bytes(8)
            if fam == "BF":
                for j in range(ehdr[8]):
                    o = 20 + 53 * j + 16
                    ehdr[o:o + 8] = bytes(8)
            else:
                ehdr[16:24] = bytes(8)  # deletes
            edump = [(1, bytes(ehdr))] + [(it, bytes(len(d))) for it, d in chunks[1:]]
            errs = load_sequence(r, cmd, empty + "2", edump)
            tm.check("%s chunks: an empty filter's dump restores, every chunk taken" % fam,
                     not any(errs) and tm.dump_all(r, fam, empty + "2") ==
                     (edump if fam == "BF" else []), errs)
            load_sequence(r, cmd, empty + "3", edump[:1])
            added = r.execute_command(fam + ".ADD", empty + "3", "x")
            tm.check("%s chunks: an empty filter's header alone makes a key that takes adds"
                     % fam, added == 1, added)
            # the dump's zero chunks again: those over bytes that are still
            # zeros lose nothing and are taken (RedisBloom writes them); the
            # one over x's bits would erase it
            before = tm.dump_all(r, fam, empty + "3")
            errs = load_sequence(r, cmd, empty + "3", edump[1:])
            tm.check("%s chunks: ... then the dump's zero chunks: the one that would erase x "
                     "refused, the others taken (%s)" % (fam, errs),
                     errs.count(RB_REFUSAL[fam]) == 1 and errs.count(None) == len(errs) - 1 and
                     r.execute_command(fam + ".EXISTS", empty + "3", "x") == 1 and
                     tm.dump_all(r, fam, empty + "3") == before, errs)
            # a RedisBloom key whose bits came by LOADCHUNK, which counts
            # nothing: its dump's header counts no items over set bits;
            # every chunk is taken and the items answer "present"
            counted_none = [(1, bytes(ehdr))] + chunks[1:]
            errs = load_sequence(r, cmd, empty + "4", counted_none)
            tm.check("%s chunks: a header counting no items over set bits: every chunk taken, "
                     "every item present" % fam, not any(errs) and
                     sequence_answers(r, fam, empty + "4", items) == "whole", errs)
            e = tm.error_of(r.execute_command, cmd, empty + "2", 2, b"")
            tm.check("%s chunks: an empty chunk into a whole key: RedisBloom's answer" % fam,
                     e == (None if fam == "BF" else RB_REFUSAL[fam]), e)
            # a whole key's own dump sent to it again: RedisBloom writes the
            # same bytes and answers OK, and so does bloomkit, writing nothing;
            # a header chunk to it is data at offset -len (RedisBloom's
            # reading): refused, or taken when empty (BF)
            key = fam + ":whole"
            own = tm.dump_all(r, fam, key)
            errs = load_sequence(r, cmd, key, own[1:])
            tm.check("%s chunks: a whole key's own chunks sent again: each OK, nothing changed"
                     % fam, not any(errs) and tm.dump_all(r, fam, key) == own, errs)
            # (RedisBloom's BF.LOADCHUNK reads it as data at offset
            # it - len - 1; its CF.LOADCHUNK answers "item exists")
            # a chunk that loses nothing is written, as RedisBloom writes it:
            # one more bit set (a free slot filled); then the key's former
            # chunk, which would clear it again, is refused
            j = next(j for j in range(1, len(own)) if b"\x00" in own[j][1])
            it, d = own[j]
            at = d.index(b"\x00")
            more = d[:at] + b"\x01" + d[at + 1:]
            e = tm.error_of(r.execute_command, cmd, key, it, more)
            tm.check("%s chunks: a chunk that only sets a bit (fills a slot) is written" % fam,
                     e is None and tm.dump_all(r, fam, key)[j][1] == more, e)
            e = tm.error_of(r.execute_command, cmd, key, it, d)
            tm.check("%s chunks: ... and the chunk that would clear it again is refused" % fam,
                     e == RB_REFUSAL[fam] and tm.dump_all(r, fam, key)[j][1] == more, e)
            tm.check("%s chunks: ... and the key keeps every item" % fam,
                     sequence_answers(r, fam, key, items) == "whole")
            own = tm.dump_all(r, fam, key)
            e = tm.error_of(r.execute_command, cmd, key, 1, own[0][1])
            tm.check("%s chunks: a header chunk to a whole key: RedisBloom's refusal" % fam,
                     e == ("received bad data" if fam == "BF" else "item exists") and
                     tm.dump_all(r, fam, key) == own, e)
            e = tm.error_of(r.execute_command, cmd, key, 1, b"")
            tm.check("%s chunks: an empty chunk at iterator 1 of a whole key: %s" %
                     (fam, "OK" if fam == "BF" else "item exists"),
                     e == (None if fam == "BF" else "item exists"), e)
            # a broken restore is started again from its header, and works
            key = fam + ":again"
            load_sequence(r, cmd, key, chunks[:2])
            errs = load_sequence(r, cmd, key, chunks)
            tm.check("%s chunks: a restore started again from the header completes" % fam,
                     not any(errs) and sequence_answers(r, fam, key, items) == "whole", errs)
    finally:
        s.stop()
    # An AOF rewritten while a key is half restored replays it half
    # restored (it wrote every byte, and the key answered "absent" for the
    # missing ones once replayed).
    s = tm.Server("rb-chunks-aof", extra=["--appendonly", "yes"]).start()
    try:
        r = s.r
        load_sequence(r, "BF.LOADCHUNK", "half", ANSWERS["bf:scaled"]["chunks"][:3])
        load_sequence(r, "CF.LOADCHUNK", "cfhalf", ANSWERS["cf:scaled"]["chunks"][:3])
        r = rewrite_and_restart(s)
        for fam, key, src in (("BF", "half", "bf:scaled"), ("CF", "cfhalf", "cf:scaled")):
            # the rewrite's RDB preamble keeps the key half restored, not
            # where it stopped: its remaining chunks are refused, and the
            # whole dump from the header restores it
            tm.check("%s: after an AOF reload a half restore still refuses queries" % fam,
                     sequence_answers(r, fam, key, ANSWERS[src]["items"]) == "refused")
            rest = ANSWERS[src]["chunks"][3:]
            errs = load_sequence(r, fam + ".LOADCHUNK", key, rest[:1])
            tm.check("%s: ... its next chunk is refused (the restart cut it short)" % fam,
                     errs[0] is not None and "restart" in errs[0], errs)
            errs = load_sequence(r, fam + ".LOADCHUNK", key, ANSWERS[src]["chunks"])
            tm.check("%s: ... and the whole dump again restores it" % fam,
                     not any(errs) and
                     sequence_answers(r, fam, key, ANSWERS[src]["items"]) == "whole", errs)
        # an empty CF key, rewritten as commands, is its header and zero
        # chunks; the header makes it whole, and the replay takes the chunks
        r.execute_command("CF.RESERVE", "cfempty", 5000)
        empty_info = r.execute_command("CF.INFO", "cfempty")
        r.config_set("aof-use-rdb-preamble", "no")
        r = rewrite_and_restart(s)
        tm.check("CF: an empty key replays from a rewritten AOF (header, zero chunks)",
                 r.execute_command("CF.INFO", "cfempty") == empty_info and
                 r.execute_command("CF.ADD", "cfempty", "y") == 1)
    finally:
        s.stop()


def test_cf_resp3_booleans():
    """RedisBloom 2.8's CF replies, byte for byte: booleans in RESP3 for
    CF.ADD, CF.ADDNX, CF.INSERT (false for no room too), CF.EXISTS,
    CF.MEXISTS and CF.DEL; integers for CF.INSERTNX and CF.COUNT, and
    everywhere in RESP2."""
    s = tm.Server("cf-resp3").start()
    try:
        r = s.r
        r.execute_command("CF.RESERVE", "full", 4, "EXPANSION", 0)
        cases = [
            (("CF.ADD", "c", "a"), b"#t\r\n"),
            (("CF.ADDNX", "c", "a"), b"#f\r\n"),
            (("CF.ADDNX", "c", "b"), b"#t\r\n"),
            (("CF.INSERT", "c", "ITEMS", "x", "y"), b"*2\r\n#t\r\n#t\r\n"),
            (("CF.INSERTNX", "c", "ITEMS", "x", "z"), b"*2\r\n:0\r\n:1\r\n"),
            (("CF.EXISTS", "c", "a"), b"#t\r\n"),
            (("CF.EXISTS", "c", "never"), b"#f\r\n"),
            (("CF.EXISTS", "missing", "a"), b"#f\r\n"),
            (("CF.MEXISTS", "c", "a", "never"), b"*2\r\n#t\r\n#f\r\n"),
            (("CF.COUNT", "c", "a"), b":1\r\n"),
            (("CF.DEL", "c", "a"), b"#t\r\n"),
            (("CF.DEL", "c", "a"), b"#f\r\n"),
            (("CF.INSERT", "full", "ITEMS", *["f%d" % i for i in range(12)]), None),
            (("CF.INSERTNX", "full", "ITEMS", *["g%d" % i for i in range(12)]), None),
        ]
        replies = tm.resp3(s.port, *[c for c, _ in cases])
        for (cmd, want), got in zip(cases, replies):
            if want is None:
                continue
            tm.check("RESP3 %s -> %r" % (" ".join(cmd), want), got == want, got)
        tm.check("RESP3 CF.INSERT into a full filter: false where there is no room",
                 b"#f\r\n" in replies[-2] and b":-1" not in replies[-2], replies[-2])
        tm.check("RESP3 CF.INSERTNX into a full filter: -1 where there is no room",
                 b":-1\r\n" in replies[-1] and b"#" not in replies[-1], replies[-1])
        # SCANDUMP and LOADCHUNK at iterators before the start, as 2.8.20
        r.execute_command("BF.ADD", "b", "x")
        tm.check("BF.SCANDUMP at -1: [0, \"\"] (past the end)",
                 r.execute_command("BF.SCANDUMP", "b", -1) == [0, b""])
        tm.check("BF.SCANDUMP of a missing key: not found before the iterator",
                 tm.error_of(r.execute_command, "BF.SCANDUMP", "nokey", "x") == "not found")
        tm.check("BF.SCANDUMP with a word for iterator: RedisBloom's text",
                 tm.error_of(r.execute_command, "BF.SCANDUMP", "b", "x") ==
                 "Second argument must be numeric")
        tm.check("CF.SCANDUMP at -1: Invalid position",
                 tm.error_of(r.execute_command, "CF.SCANDUMP", "c", -1) == "Invalid position")
        tm.check("CF.LOADCHUNK at 0: Invalid position",
                 tm.error_of(r.execute_command, "CF.LOADCHUNK", "c", 0, "x") == "Invalid position")
        tm.check("CF.LOADCHUNK at -1 into a complete filter: Couldn't load chunk!",
                 tm.error_of(r.execute_command, "CF.LOADCHUNK", "c", -1, "x") ==
                 "Couldn't load chunk!")
        tm.check("BF.LOADCHUNK at 0: not found for a missing key, bad data for one there",
                 tm.error_of(r.execute_command, "BF.LOADCHUNK", "nokey", 0, "x") == "not found" and
                 tm.error_of(r.execute_command, "BF.LOADCHUNK", "b", 0, "x") ==
                 "received bad data")
        tm.check("RESP2 keeps integers",
                 r.execute_command("CF.ADD", "c2", "a") == 1 and
                 r.execute_command("CF.EXISTS", "c2", "a") == 1 and
                 r.execute_command("CF.DEL", "c2", "a") == 1 and
                 r.execute_command("CF.INSERT", "full", "ITEMS", "h1")[0] in (1, -1))
    finally:
        s.stop()


def test_cf_insert_work_is_bounded():
    """One CF.INSERT into a full filter that may not grow, with
    MAXITERATIONS 65535: each key kicks 65535 times and undoes it all (2,000
    keys blocked the server 5.5 s). One command spends at most 2 million
    relocations: at most 15 keys go through the whole kick loop, the rest
    are answered with an error saying so, and nothing is lost."""
    s = tm.Server("cf-bound").start()
    try:
        r = s.r
        r.execute_command("CF.RESERVE", "k", 1000, "MAXITERATIONS", 65535, "EXPANSION", 0)
        kept, i = [], 0
        while i < 100000:
            batch = ["f%d" % j for j in range(i, i + 100)]
            got = r.execute_command("CF.INSERT", "k", "ITEMS", *batch)
            kept += [k for k, x in zip(batch, got) if x == 1]
            i += 100
            if -1 in got:
                break
        items = ["z%d" % j for j in range(2000)]
        got = r.execute_command("CF.INSERT", "k", "ITEMS", *items)
        full = sum(1 for x in got if x == -1)
        added = [k for k, x in zip(items, got) if x == 1]
        errs = [x for x in got if isinstance(x, ResponseError)]
        first_err = next((n for n, x in enumerate(got) if isinstance(x, ResponseError)), len(got))
        tm.check("CF.INSERT of 2,000 keys into a full filter: at most 15 whole kick loops "
                 "(%d full, %d added, %d refused)" % (full, len(added), len(errs)),
                 full <= 15 and len(errs) > 0 and
                 all(isinstance(x, ResponseError) for x in got[first_err:]) and
                 "relocations" in str(errs[0]), got[:5])
        present = r.execute_command("CF.MEXISTS", "k", *(kept + added))
        tm.check("... every key added before and by it is present",
                 all(x == 1 for x in present), present.count(0))
        info = dict(zip(*[iter(r.execute_command("CF.INFO", "k"))] * 2))
        tm.check("... and counted", info[b"Number of items inserted"] == len(kept) + len(added),
                 (info[b"Number of items inserted"], len(kept), len(added)))
        tm.check("CF.ADD of one key into it still gets RedisBloom's answer",
                 r.execute_command("CF.INSERT", "k", "ITEMS", "one-more") in ([1], [-1]))
    finally:
        s.stop()


def raw_errors(port, cases):
    """Each command's exact error line (RESP, after the "-")."""
    replies = tm.resp3(port, *[c for c, _ in cases])
    for (cmd, want), raw in zip(cases, replies):
        line = raw.decode(errors="replace")
        got = line[1:-2] if line.startswith("-") else line.strip()
        tm.check("CF error %s" % " ".join(str(x) for x in cmd), got == want, repr(got))


def test_cf_commands():
    """The commands that made cf:scaled give RedisBloom's bytes; CF.*
    replies and errors as RedisBloom's; a replica holds the same bytes."""
    m = tm.Server("cf-master").start()
    rep = tm.Server("cf-replica", extra=["--replicaof", "127.0.0.1", str(m.port)]).start()
    try:
        for _ in range(200):
            if rep.r.info("replication").get("master_link_status") == "up":
                break
            time.sleep(0.05)
        r = m.r
        a = ANSWERS["cf:scaled"]
        r.execute_command("CF.RESERVE", "cf:scaled", 100, "BUCKETSIZE", 4, "EXPANSION", 2)
        added = [r.execute_command("CF.ADD", "cf:scaled", x) for x in a["items"]]
        tm.check("cf: 2,000 CF.ADDs answer 1", added == [1] * 2000)
        cf_answers_as_redisbloom(r, "cf:scaled", "replayed commands")
        tm.check("cf: WAIT", r.execute_command("WAIT", 1, 5000) == 1)
        tm.check("cf: the replica holds RedisBloom's bytes",
                 cf_dump(rep.r, "cf:scaled") == a["chunks"])
        tm.check("cf: TYPE is RedisBloom's", r.type("cf:scaled") == b"MBbloomCF")
        r.execute_command("CF.ADD", "c", "x")
        r.execute_command("CF.ADD", "c", "x")
        tm.check("cf: CF.COUNT counts duplicates", r.execute_command("CF.COUNT", "c", "x") == 2)
        tm.check("cf: CF.ADDNX of a present item is 0",
                 r.execute_command("CF.ADDNX", "c", "x") == 0)
        tm.check("cf: CF.INSERTNX",
                 r.execute_command("CF.INSERTNX", "c", "ITEMS", "x", "y") == [0, 1])
        tm.check("cf: CF.DEL", r.execute_command("CF.DEL", "c", "x") == 1 and
                 r.execute_command("CF.COUNT", "c", "x") == 1 and
                 r.execute_command("CF.DEL", "c", "zz") == 0)
        tm.check("cf: CF.MEXISTS",
                 r.execute_command("CF.MEXISTS", "c", "x", "y", "q") == [1, 1, 0])
        tm.check("cf: CF.EXISTS on a missing key is 0",
                 r.execute_command("CF.EXISTS", "nokey", "x") == 0)
        d = r.execute_command("CF.DEBUG", "c")
        tm.check("cf: CF.DEBUG", d ==
                 b"bktsize:2 buckets:512 items:2 deletes:1 filters:1 max_iterations:20 "
                 b"expansion:1", d)
        r.execute_command("CF.RESERVE", "full", 4, "EXPANSION", 0)
        res = r.execute_command("CF.INSERT", "full", "ITEMS", *["f%d" % i for i in range(20)])
        tm.check("cf: a full filter answers -1 in CF.INSERT", -1 in res and res[0] == 1, res)
        r.set("str", "v")
        raw_errors(m.port, [
            (("CF.RESERVE", "e", "x"), "Bad capacity"),
            (("CF.RESERVE", "e", "10", "BUCKETSIZE", "x"), "Couldn't parse BUCKETSIZE"),
            # RedisBloom 2.8.20's range texts
            (("CF.RESERVE", "e", "10", "BUCKETSIZE", "0"),
             "BUCKETSIZE: value must be an integer between 1 and 255, inclusive."),
            (("CF.RESERVE", "e", "1000", "BUCKETSIZE", "256"),
             "BUCKETSIZE: value must be an integer between 1 and 255, inclusive."),
            (("CF.RESERVE", "e", "10", "MAXITERATIONS", "0"),
             "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive."),
            (("CF.RESERVE", "e", "10", "MAXITERATIONS", "65536"),
             "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive."),
            (("CF.RESERVE", "e", "10", "EXPANSION", "-1"),
             "EXPANSION: value must be an integer between 0 and 32768, inclusive."),
            (("CF.RESERVE", "e", "10", "EXPANSION", "32769"),
             "EXPANSION: value must be an integer between 0 and 32768, inclusive."),
            (("CF.RESERVE", "e", "3"), "Capacity must be at least (BucketSize * 2)"),
            (("CF.RESERVE", "c", "100"), "ERR item exists"),
            (("CF.RESERVE", "str", "100"),
             "WRONGTYPE Operation against a key holding the wrong kind of value"),
            (("CF.RESERVE", "e"), "ERR wrong number of arguments for 'cf.reserve' command"),
            (("CF.ADD", "full", "more"), "Filter is full"),
            (("CF.INSERT", "e", "CAPACITY", "2", "ITEMS", "a"),
             "Capacity must be at least (BucketSize * 2)"),
            (("CF.INSERT", "e", "BOGUS", "ITEMS", "a"), "Unknown argument received"),
            (("CF.INSERT", "e", "NOCREATE", "ITEMS", "a"), "ERR not found"),
            (("CF.DEL", "e", "a"), "Not found"),
            (("CF.DEL", "str", "a"), "Not found"),
            (("CF.COMPACT", "str"), "Cuckoo filter was not found"),
            (("CF.EXISTS", "str", "a"), "#f"),  # RESP3: RedisBloom 2.8 answers a boolean
            (("CF.ADD", "str", "a"),
             "WRONGTYPE Operation against a key holding the wrong kind of value"),
            (("CF.COMPACT", "e"), "Cuckoo filter was not found"),
            (("CF.INFO", "e"), "ERR not found"),
            (("CF.SCANDUMP", "c", "x"), "Invalid position"),
            (("CF.LOADCHUNK", "n", "0", "x"), "Invalid position"),
            (("CF.LOADCHUNK", "n", "1", "short"), "Invalid header"),
            (("CF.LOADCHUNK", "c", "9999", "x"), "Couldn't load chunk!"),
            # A hostile header: 4,096 sub-filters of 2^32 buckets of 255.
            (("CF.LOADCHUNK", "huge", "1",
              struct.pack("<QQQQHHH", 0, 1 << 32, 0, 4096, 255, 20, 2)),
             "ERR the dumped filter is over the limit of the module argument MAX_BYTES"),
        ])
        tm.check("cf: nothing made of a refused header", r.exists("huge") == 0)
        for it, data in a["chunks"]:
            r.execute_command("CF.LOADCHUNK", "cf:restored", it, data)
        cf_answers_as_redisbloom(r, "cf:restored", "loadchunk", "cf:scaled")
        used = r.memory_usage("cf:scaled")
        tm.check("cf: MEMORY USAGE counts the sub-filters", used >= 3968, used)
        # redis-py's own CF client (what applications written for
        # RedisBloom call), end to end.
        cf = r.cf()
        ok = cf.create("py", 1000, bucket_size=4, max_iterations=20, expansion=2)
        ok = ok and cf.add("py", "a") == 1 and cf.addnx("py", "a") == 0
        ok = ok and cf.insert("py", ["b", "c"]) == [1, 1] and cf.insertnx("py", ["b", "d"]) == [0, 1]
        ok = ok and cf.mexists("py", "a", "zz") == [1, 0] and cf.count("py", "b") == 1
        ok = ok and cf.delete("py", "a") == 1 and cf.exists("py", "a") == 0
        info = cf.info("py")
        ok = ok and (info.bucketNum, info.insertedNum, info.deletedNum, info.bucketSize) == (256, 3, 1, 4)
        pairs, it = [], 0
        while True:
            it, data = cf.scandump("py", it)
            if it == 0:
                break
            pairs.append((it, data))
        for it, data in pairs:
            cf.loadchunk("py2", it, data)
        ok = ok and cf.mexists("py2", "b", "c", "d", "zz") == [1, 1, 1, 0]
        tm.check("cf: redis-py's CF client works end to end", ok)
    finally:
        rep.stop()
        m.stop()


def test_hostile_calls():
    """5,000 random CF.* and BF.* calls with hostile arguments (extreme
    numbers, option words anywhere, RedisBloom's chunks with bytes changed
    or cut): every one answers, the server never goes down."""
    rnd = random.Random(20261126)
    chunks = [c for k in ANSWERS for c in ANSWERS[k]["chunks"]]
    cmds = ["CF.RESERVE", "CF.ADD", "CF.ADDNX", "CF.INSERT", "CF.INSERTNX", "CF.EXISTS",
            "CF.MEXISTS", "CF.COUNT", "CF.DEL", "CF.COMPACT", "CF.INFO", "CF.DEBUG",
            "CF.SCANDUMP", "CF.LOADCHUNK", "BF.LOADCHUNK", "BF.SCANDUMP", "BF.ADD", "BF.INFO",
            "BF.DEBUG", "BF.CARD", "BF.INSERT", "BF.MADD"]
    words = ["BUCKETSIZE", "MAXITERATIONS", "EXPANSION", "CAPACITY", "ITEMS", "NOCREATE",
             "ERROR", "NONSCALING"]
    numbers = [0, 1, 2, 3, -1, 255, 256, 65535, 65536, 2 ** 31, 2 ** 32, 2 ** 63 - 1,
               -2 ** 63, 10 ** 18, "x", "1e9", "0.5", "nan", "inf", ""]

    def blob():
        b = bytearray(rnd.choice(chunks)[1])
        for _ in range(rnd.randint(0, 4)):
            if b:
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b[:rnd.randint(0, len(b))] if rnd.random() < 0.2 else b)

    s = tm.Server("hostile", module_args=["MAX_BYTES", str(64 << 20)]).start()
    try:
        answered = 0
        for _ in range(5000):
            args = [rnd.choice(cmds), "h%d" % rnd.randrange(6)]
            for _ in range(rnd.randint(0, 6)):
                x = rnd.random()
                args.append(rnd.choice(words) if x < 0.3 else blob() if x < 0.5
                            else rnd.choice(numbers) if x < 0.8 else "item%d" % rnd.randrange(50))
            try:
                s.r.execute_command(*args)
            except ResponseError:
                pass
            answered += 1
        tm.check("hostile: 5,000 random CF/BF calls all answered, server up",
                 answered == 5000 and s.r.ping())
    finally:
        s.stop()


def test_layout_redisbloom():
    """LAYOUT redisbloom: new BF keys, made by the commands RedisBloom's keys
    were made with, are RedisBloom's chains byte for byte (SCANDUMP equal to
    the chunks RedisBloom wrote, its INFO, CARD and false positives), and
    stay so through an AOF restart (BKI.CREATE RB:...) and an RDB restart.
    SEED or TIGHTENING, which only bloomkit's keys have, make bloomkit's."""
    s = tm.Server("rb-layout", module_args=["LAYOUT", "redisbloom"],
                  extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]).start()
    made = {"bf:small": ["BF.RESERVE", "bf:small", "0.01", "100"],
            "bf:scaled": ["BF.RESERVE", "bf:scaled", "0.001", "1000", "EXPANSION", "2"],
            "bf:nonscaling": ["BF.RESERVE", "bf:nonscaling", "0.0001", "5000", "NONSCALING"],
            "bf:exp1": ["BF.RESERVE", "bf:exp1", "0.001", "100", "EXPANSION", "1"],
            "bf:default": None}  # made by its first BF.MADD, with the defaults
    try:
        r = s.r
        for key, reserve in made.items():
            if reserve:
                r.execute_command(*reserve)
            items = ANSWERS[key]["items"]
            for j in range(0, len(items), 1000):
                r.execute_command("BF.MADD", key, *items[j:j + 1000])
        for what in ("layout", "layout after an AOF restart", "layout after an RDB restart"):
            if what.endswith("AOF restart"):
                s.stop()
                s.start()
                r = s.r
            elif what.endswith("RDB restart"):
                r.config_set("appendonly", "no")
                r.save()
                s.stop()
                s.extra = []
                s.start()
                r = s.r
            for key in made:
                tm.check("%s: %s is RedisBloom's type" % (what, key), r.type(key) == b"MBbloom--",
                         r.type(key))
                chunks = tm.dump_all(r, "BF", key)
                tm.check("%s: %s: BF.SCANDUMP is RedisBloom's byte for byte" % (what, key),
                         chunks == ANSWERS[key]["chunks"], (len(chunks), len(ANSWERS[key]["chunks"])))
                info_as_redisbloom(r, key, what)
            answers_as_redisbloom(r, "bf:scaled", what)
        r.execute_command("BF.RESERVE", "m1", "0.01", "1000")
        r.execute_command("BF.RESERVE", "m2", "0.01", "1000")
        r.execute_command("BF.ADD", "m1", "one")
        r.execute_command("BF.ADD", "m2", "two")
        r.execute_command("BF.MERGE", "m1", "m2")
        r.execute_command("BF.MERGE", "m3", "m1", "m2")
        tm.check("layout: BF.MERGE of RedisBloom chains keeps RedisBloom's type",
                 r.type("m1") == b"MBbloom--" and r.type("m3") == b"MBbloom--" and
                 r.execute_command("BF.MEXISTS", "m3", "one", "two") == [1, 1])
        r.execute_command("BF.RESERVE", "own", "0.01", "100", "SEED", "5")
        r.execute_command("BF.INSERT", "own2", "TIGHTENING", "0.5", "ITEMS", "x")
        e = tm.error_of(r.execute_command, "BF.RESERVE", "huge", "0.000001", "2000000000")
        tm.check("layout: a chain over MAX_BYTES is refused, saying what it needs",
                 e is not None and "needs" in e and "MAX_BYTES" in e and
                 r.type("huge") == b"none", e)
        tm.check("layout: SEED and TIGHTENING make bloomkit's keys",
                 r.type("own") == b"bkbloom-1" and r.type("own2") == b"bkbloom-1")
        # a chunk RedisBloom would write over a whole key's bits is refused,
        # with RedisBloom's text for data it does not take
        for fam, key in (("BF", "bf:small"), ("CF", "cf1")):
            if fam == "CF":
                r.execute_command("CF.RESERVE", key, 100)
                r.execute_command("CF.ADD", key, "a")
            before = tm.dump_all(r, fam, key)
            it, d = before[1]
            e = tm.error_of(r.execute_command, fam + ".LOADCHUNK", key, it, bytes(len(d)))
            tm.check("layout: %s.LOADCHUNK into a whole key refused in RedisBloom's words" % fam,
                     e == RB_REFUSAL[fam] and
                     tm.dump_all(r, fam, key) == before, e)
        # the longest chain (each link's error half the last, until a double
        # cannot hold it) is saved and loaded: RedisBloom 2.8.20 makes and
        # loads such keys (1,061 links) and a load that refused it would
        # stop the server at its next start
        r.execute_command("BF.RESERVE", "long", "0.0001", "1", "EXPANSION", "1")
        names = ["l%d" % i for i in range(5000)]
        tm.error_of(r.execute_command, "BF.MADD", "long", *names)
        links = r.execute_command("BF.INFO", "long", "FILTERS")
        links = links[0] if isinstance(links, list) else links
        before = tm.dump_all(r, "BF", "long")
        r.save()
        s.stop()
        s.start()
        r = s.r
        tm.check("layout: a chain of %d links (over 1,000) loads from the RDB" % links,
                 links > 1000 and tm.dump_all(r, "BF", "long") == before, links)
    finally:
        s.stop()


def test_reply_order():
    """Which error a command gives when several apply is RedisBloom 2.8.20's
    (its rebloom.c: the order of its checks), found by sending random
    commands to both modules: BF.INFO looks at the key before the field;
    BF.LOADCHUNK with an iterator below 1 at the key's type before the
    data; BF.RESERVE refuses NONSCALING with EXPANSION before reading the
    expansion; under LAYOUT redisbloom a header it cannot read is "received
    bad data"."""
    s = tm.Server("rb-order", module_args=["LAYOUT", "redisbloom"]).start()
    try:
        r = s.r
        r.set("str", "v")
        r.execute_command("CF.ADD", "cf", "x")
        r.execute_command("BF.ADD", "bf", "x")
        cases = [
            (("BF.INFO", "missing", "junk"), "not found"),
            (("BF.INFO", "str", "junk"), "WRONGTYPE Operation against a key holding the wrong "
                                          "kind of value"),
            (("BF.INFO", "cf", "junk"), "WRONGTYPE Operation against a key holding the wrong "
                                         "kind of value"),
            (("BF.INFO", "bf", "junk"), "Invalid information value"),
            (("BF.LOADCHUNK", "cf", -1, "abc"), "WRONGTYPE Operation against a key holding "
                                                 "the wrong kind of value"),
            (("BF.LOADCHUNK", "missing", -1, "abc"), "not found"),
            (("BF.LOADCHUNK", "bf", -1, "abc"), "received bad data"),
            (("BF.LOADCHUNK", "new", 1, "abc"), "received bad data"),
            (("BF.LOADCHUNK", "new", 1, ""), "received bad data"),
            (("BF.RESERVE", "n", 0.001, 7, "EXPANSION", -1, "NONSCALING"),
             "Nonscaling filters cannot expand"),
            (("BF.RESERVE", "n", 0.001, 7, "NONSCALING", "EXPANSION", "x"),
             "Nonscaling filters cannot expand"),
            (("BF.RESERVE", "n", 0.001, 7, "NONSCALING", "EXPANSION"), "no expansion"),
            (("BF.RESERVE", "n", 0.001, "x", "EXPANSION", 2, "NONSCALING", "NONSCALING"),
             "wrong number of arguments for 'bf.reserve' command"),
        ]
        for args, want in cases:
            e = tm.error_of(r.execute_command, *args)
            tm.check("order: %s -> %s" % (" ".join(str(a) for a in args), want), e == want, e)
        tm.check("order: nothing was made by the refused calls",
                 r.exists("new") == 0 and r.exists("n") == 0)
    finally:
        s.stop()


def test_cf_max_expansions():
    """RedisBloom's module argument CF_MAX_EXPANSIONS (a server configured
    for RedisBloom starts with bloomkit): a CF key stops at that many
    sub-filters with RedisBloom's answer; and a CF key of more sub-filters
    than the default allows (a RedisBloom server started with a larger
    value makes them) saves and loads."""
    s = tm.Server("cf-expansions", module_args=["CF_MAX_EXPANSIONS", "2", "ERROR_RATE",
                                                "0.001"]).start()
    try:
        r = s.r
        r.execute_command("CF.RESERVE", "k", 4, "BUCKETSIZE", 1, "EXPANSION", 1)
        got = [tm.error_of(r.execute_command, "CF.ADD", "k", "i%d" % i) for i in range(12)]
        info = r.execute_command("CF.INFO", "k")
        tm.check("CF_MAX_EXPANSIONS 2: adds stop at 2 sub-filters, 'Maximum expansions "
                 "reached' (%s)" % got,
                 got[0] is None and "Maximum expansions reached" in got and
                 set(got[got.index("Maximum expansions reached"):]) ==
                 {"Maximum expansions reached"} and
                 info[info.index(b"Number of filters") + 1] == 2, info)
    finally:
        s.stop()
    s = tm.Server("cf-expansions-many", module_args=["CF_MAX_EXPANSIONS", "100000"]).start()
    try:
        r = s.r
        r.execute_command("CF.RESERVE", "many", 2, "BUCKETSIZE", 1, "EXPANSION", 1)
        names = ["m%d" % i for i in range(8400)]  # two a sub-filter: over 4,096 of them
        for j in range(0, len(names), 1000):
            r.execute_command("CF.INSERT", "many", "ITEMS", *names[j:j + 1000])
        info = r.execute_command("CF.INFO", "many")
        subs = info[info.index(b"Number of filters") + 1]
        before = tm.dump_all(r, "CF", "many")
        r.save()
        s.stop()
        s.start()
        r = s.r
        tm.check("a CF key of %d sub-filters (over 4,096) loads from the RDB, every item "
                 "present" % subs,
                 subs > 4096 and tm.dump_all(r, "CF", "many") == before and
                 all(x == 1 for x in r.execute_command("CF.MEXISTS", "many", *names)), subs)
    finally:
        s.stop()


def test_cf_compact_keys():
    """CF keys of one sub-filter are compact (48 bytes beside the buckets):
    10,000 CF.RESERVE 1000 keys cost at most RedisBloom 2.8.20's 1,160
    bytes of used_memory each (measured on Debian's Redis 7.0, the
    keyspace's own growth left out); a compact key's counts,
    COPY, DUMP/RESTORE, growth into the full form and an RDB restart all
    keep every item."""
    s = tm.Server("cf-compact").start()
    try:
        r = s.r
        n = 10000
        r.execute_command("CF.RESERVE", "warm", 1000)
        def reserve_all():
            p = r.pipeline(transaction=False)
            for i in range(n):
                p.execute_command("CF.RESERVE", "k%d" % i, 1000)
            p.execute()
        reserve_all()  # and again, so that the keyspace's own growth is not counted
        r.delete(*["k%d" % i for i in range(n)])
        def held():  # the keys' memory: clients' buffers change with the pipeline
            m = r.info("memory")
            return m["used_memory"] - m.get("mem_clients_normal", 0)
        before = held()
        reserve_all()
        per_key = (held() - before) / n
        tm.check("cf compact: %.0f bytes of used_memory a CF.RESERVE 1000 key (RedisBloom "
                 "2.8.20: 1,160)" % per_key, 1024 < per_key <= 1160, per_key)
        items = ["i%d" % i for i in range(300)]
        r.execute_command("CF.INSERT", "k0", "ITEMS", *items)
        r.execute_command("CF.DEL", "k0", "i0")
        tm.check("cf compact: counts kept",
                 r.execute_command("CF.DEBUG", "k0") ==
                 b"bktsize:2 buckets:512 items:299 deletes:1 filters:1 max_iterations:20 "
                 b"expansion:1", r.execute_command("CF.DEBUG", "k0"))
        r.execute_command("COPY", "k0", "copy")
        r.execute_command("CF.ADD", "k0", "later")
        tm.check("cf compact: COPY is a copy",
                 r.execute_command("CF.EXISTS", "copy", "i5") == 1 and
                 r.execute_command("CF.EXISTS", "copy", "later") == 0 and
                 r.execute_command("CF.EXISTS", "k0", "later") == 1)
        r.restore("restored", 0, r.dump("k0"))
        tm.check("cf compact: DUMP/RESTORE",
                 r.execute_command("CF.DEBUG", "restored") == r.execute_command("CF.DEBUG", "k0"))
        for it, data in cf_dump(r, "k0"):
            r.execute_command("CF.LOADCHUNK", "kc", it, data)
        tm.check("cf compact: a key restored by LOADCHUNK is compact again (MEMORY USAGE %d, "
                 "the source's %d)" % (r.memory_usage("kc"), r.memory_usage("k0")),
                 r.memory_usage("kc") == r.memory_usage("k0") and
                 r.execute_command("CF.DEBUG", "kc") == r.execute_command("CF.DEBUG", "k0"))
        grown = ["g%d" % i for i in range(3000)]
        for j in range(0, 3000, 500):
            r.execute_command("CF.INSERT", "k1", "ITEMS", *grown[j:j + 500])
        info = r.execute_command("CF.INFO", "k1")
        filters = info[info.index(b"Number of filters") + 1]
        def all_there():
            return (all(x == 1 for x in r.execute_command("CF.MEXISTS", "k1", *grown)) and
                    all(x == 1 for x in r.execute_command("CF.MEXISTS", "k0", *items[1:])))
        tm.check("cf compact: a key that grew keeps every item (%d filters)" % filters,
                 filters > 1 and all_there())
        tm.check("cf compact: MEMORY USAGE counts the buckets",
                 r.memory_usage("k2") >= 1024 + 48)
        r.save()
        s.stop()
        s.start()
        r = s.r
        tm.check("cf compact: an RDB restart keeps them", all_there() and r.dbsize() == n + 4)
    finally:
        s.stop()


def main():
    test_rdb()
    test_aof()
    test_loadchunk_and_replica()
    test_chunk_sequences()
    test_cf_commands()
    test_cf_insert_work_is_bounded()
    test_cf_resp3_booleans()
    test_hostile_calls()
    test_layout_redisbloom()
    test_reply_order()
    test_cf_max_expansions()
    test_cf_compact_keys()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a crash is a failure, never a silent pass
        import traceback
        traceback.print_exc()
        tm.check("suite ran to the end", False, repr(e))
    print("%d passed, %d failed" % (tm.passed, tm.failed))
    sys.exit(1 if tm.failed else 0)
