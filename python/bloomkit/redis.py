"""One logical Bloom filter spread over many keys of a Redis Cluster.

A single Redis key lives in a single slot, so a single filter lives on a
single node: RedisBloom's and bloomkit.so's BF.* filters cannot grow past
one node's memory or spread one crawl's load. ShardedFilter splits one
filter of capacity C into N shard keys, each a BF.* filter of capacity
about C/N on the node that owns its slot:

* Shard keys are ``NAME:i{TAG}``. The hash tag TAG is chosen so that shard
  i's slot falls in the i-th N-th of the slot space; a cluster whose
  masters own contiguous, even slot ranges (what ``redis-cli --cluster
  create`` and rebalancing produce) then holds the shards evenly.
* An item goes to shard ``xxh3(item, fixed routing seed) mod N``
  (bloomkit.shard_of): stable on every client, and independent of the
  filters' own hashing (each shard has its own random seed), so a shard's
  items are an unbiased sample and its false-positive rate is that of a
  filter loaded to its share.
* Each shard is reserved for C/N plus four standard deviations of the
  binomial spread of items per shard, at the requested error rate: at C
  items no shard is over its capacity (but with probability ~3e-5), so an
  absent item, which is checked on exactly one shard, is a false positive
  with probability at most the requested rate, as for one filter of
  capacity C.
* Multi-item adds and checks are grouped by shard (one BF.MADD/BF.MEXISTS
  per shard and chunk) and by node: the commands for all nodes are written
  first and the answers read after, one round trip per node, in parallel.
* A MOVED or ASK answer (a slot migrated under a stale client) refreshes
  the client's slot map and the command is retried through the client,
  which follows redirects. The shard count is fixed at creation and
  stored in ``NAME:meta``; adding nodes moves slots, and keys with them.

Works with redis.cluster.RedisCluster and with a plain redis.Redis (all
shards then on one server). Needs the bloomkit.so (or a RedisBloom) module
on every node.
"""
import math
import os
import time
import warnings

from . import _bloomkit

SLOTS = 16384
# Items per BF.MADD / BF.MEXISTS command: big commands amortize round
# trips, but one command blocks its node while it runs.
COMMAND_ITEMS = 2000
# Slack of each shard's capacity, in standard deviations of the binomial
# number of items a shard receives.
SIGMAS = 4.0
# How long bloomkit.so keeps a claim's answers (BF.CLAIM), in seconds: a
# retry within it gets the first try's answers.
CLAIM_SECONDS = 3600


# NAME:meta is written in one step, only if absent: a Lua script runs
# atomically in the server (one key: fine on a cluster), so concurrent
# openers never read a layout half written.
_CREATE_META = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'capacity', ARGV[2], 'error_rate', ARGV[3])
return 1
"""
_META_FIELDS = ("shards", "capacity", "error_rate")


def _crc16(data):
    """CRC16-XMODEM, the hash Redis Cluster maps keys to slots with."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    """The cluster slot of a key (str or bytes), honouring {hash tags}."""
    if isinstance(key, str):
        key = key.encode()
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return _crc16(key) % SLOTS


def shard_tags(shards):
    """For each shard i, the smallest decimal hash tag whose slot lies in
    the i-th of `shards` equal ranges of the slot space."""
    if not 1 <= shards <= SLOTS:
        raise ValueError("shards must be in 1..%d" % SLOTS)
    tags = [None] * shards
    missing = shards
    candidate = 0
    while missing:
        tag = str(candidate)
        i = key_slot(tag) * shards // SLOTS
        if tags[i] is None:
            tags[i] = tag
            missing -= 1
        candidate += 1
    return tags


def shard_capacity(capacity, shards):
    """Capacity of each shard: its mean share plus SIGMAS deviations."""
    mean = capacity / shards
    deviation = math.sqrt(mean * (1.0 - 1.0 / shards))
    return max(1, math.ceil(mean + SIGMAS * deviation))


def _is_redirect(error):
    """A MOVED or ASK answer: a cluster client's parser raises AskError (or
    its subclass MovedError) without the prefix; a plain parser keeps it."""
    from redis.exceptions import AskError
    return isinstance(error, AskError) or str(error).startswith(("MOVED", "ASK"))


def _pairs(reply):
    """BF.INFO's flat [name, value, ...] reply (or RESP3 map) as a dict."""
    if isinstance(reply, dict):
        items = reply.items()
    else:
        items = zip(reply[0::2], reply[1::2])
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in items}


def _one_rate(error_rate, fpr):
    """error_rate, or its other name fpr (bloomkit.Filter's); 0.01 if
    neither is given; TypeError if both are."""
    if error_rate is not None and fpr is not None:
        raise TypeError("give error_rate or fpr (the same thing), not both")
    rate = error_rate if error_rate is not None else fpr
    return 0.01 if rate is None else rate


class ShardedFilter:
    """One Bloom filter over `shards` BF.* keys of a Redis Cluster.

    ShardedFilter(client, name, shards=N, capacity=C, error_rate=p) opens
    the filter NAME, creating it (reserve) when it does not exist yet and a
    capacity is given. An existing filter keeps its shard count, capacity
    and error rate; giving a different shard count raises ValueError.
    `client` is a redis.cluster.RedisCluster or a redis.Redis. fpr= is
    another name for error_rate (as bloomkit.Filter calls it).
    """

    def __init__(self, client, name, shards=None, capacity=None, error_rate=None,
                 expansion=None, nonscaling=False, *, fpr=None, tightening=None, normalize=None):
        error_rate = _one_rate(error_rate, fpr)
        if not name or "{" in name or "}" in name:
            raise ValueError("a sharded filter's name must be non-empty, without braces")
        if normalize not in (None, "none", "url", "email"):
            raise ValueError("normalize must be 'url', 'email', 'none' or None")
        self.normalize = None if normalize == "none" else normalize
        self.client = client
        self.name = name
        self.meta_key = name + ":meta"
        self._cluster = hasattr(client, "get_node_from_key")
        meta = self._read_meta()
        if (meta is None or "partial" in meta) and capacity is not None:
            self.reserve(capacity, error_rate, shards=shards or meta.get("shards", 1)
                         if meta else shards or 1, expansion=expansion, nonscaling=nonscaling,
                         tightening=tightening)
            meta = self._read_meta()
        if meta is None:
            raise LookupError("sharded filter %r does not exist (give a capacity to create it)"
                              % name)
        if "partial" in meta:
            raise LookupError("sharded filter %r was half created (its creator stopped before "
                              "writing %s): give a capacity to complete it"
                              % (name, ", ".join(meta["partial"])))
        if shards is not None and shards != meta["shards"]:
            raise ValueError("sharded filter %r has %d shards, not %d (the count is fixed at "
                             "creation)" % (name, meta["shards"], shards))
        self._set_layout(meta)

    # ---- layout -------------------------------------------------------------

    def _read_meta(self):
        """The layout in NAME:meta; None if there is none; with "partial"
        (the missing fields) if a creator of an earlier release, which wrote
        it in two steps, stopped half-way."""
        raw = self.client.hgetall(self.meta_key)
        if not raw:
            return None
        text = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes)
                                                               else v) for k, v in raw.items()}
        meta = {}
        if "shards" in text:
            meta["shards"] = int(text["shards"])
        if "capacity" in text:
            meta["capacity"] = int(text["capacity"])
        if "error_rate" in text:
            meta["error_rate"] = float(text["error_rate"])
        missing = [f for f in _META_FIELDS if f not in meta]
        if missing:
            meta["partial"] = missing
        return meta

    def _set_layout(self, meta):
        self.shards = meta["shards"]
        self.capacity = meta["capacity"]
        self.error_rate = meta["error_rate"]
        self.keys = ["%s:%d{%s}" % (self.name, i, tag)
                     for i, tag in enumerate(shard_tags(self.shards))]

    def reserve(self, capacity, error_rate=None, shards=1, expansion=None, nonscaling=False,
                *, fpr=None, tightening=None):
        """Creates the shard keys (BF.RESERVE on each, pipelined per node)
        and records the layout in NAME:meta. Raises redis' ResponseError
        ('item exists') if the filter exists with another layout. fpr= is
        another name for error_rate. tightening=r (bloomkit.so and
        valkey-bloom's TIGHTENING) sizes each shard's first sub-filter at the
        rate itself, about 13% less memory than the default (RedisBloom's:
        the first at half the rate); a shard grown past its capacity may
        then reach error_rate / (1 - r). The tool's dedup --redis creates
        filters with tightening=0.5."""
        error_rate = _one_rate(error_rate, fpr)
        if capacity < 1 or not 0.0 < error_rate < 1.0:
            raise ValueError("capacity must be >= 1 and error_rate in (0, 1)")
        meta = {"shards": shards, "capacity": capacity, "error_rate": error_rate}
        self._set_layout(meta)
        per_shard = shard_capacity(capacity, shards)
        options = []
        if expansion is not None:
            options += ["EXPANSION", expansion]
        if nonscaling:
            options.append("NONSCALING")
        if tightening is not None:
            options += ["TIGHTENING", repr(float(tightening))]
        commands = [("BF.RESERVE", key, repr(error_rate), per_shard, *options)
                    for key in self.keys]
        self._execute(commands, tolerate="item exists")
        # The layout is written once, whole: a concurrent creator with
        # another layout loses, and sees the error below. A layout an
        # earlier release left half written is completed with these values
        # (each field only if absent).
        if not self.client.eval(_CREATE_META, 1, self.meta_key, shards, capacity,
                                repr(error_rate)):
            for field, value in (("shards", shards), ("capacity", capacity),
                                 ("error_rate", repr(error_rate))):
                self.client.hsetnx(self.meta_key, field, value)
        stored = self._read_meta()
        if stored is None or "partial" in stored or stored["shards"] != shards:
            raise ValueError("sharded filter %r exists with another shard count" % self.name)

    def shard_of(self, items):
        """The shard index of each item (bytes or str), as sent (normalized
        first when the filter was opened with normalize=)."""
        return _bloomkit.shard_of(self._keys(items), self.shards)

    def _keys(self, items):
        """The items as sent: in the library's spelling for normalize=
        ('url': as `bloomkit dedup --normalize url --redis` sends them)."""
        return _bloomkit.normalize(items, self.normalize) if self.normalize else list(items)

    # ---- pipelined execution ---------------------------------------------------

    def _node_of(self, key):
        return self.client.get_node_from_key(key) if self._cluster else None

    def _pool(self, node):
        if node is None:
            return self.client.connection_pool
        return self.client.get_redis_connection(node).connection_pool

    def _send(self, commands):
        """Groups commands by the node of their key and writes each node's
        group as one pipeline. Returns [(pool, connection, indexes)]."""
        groups = {}
        for index, command in enumerate(commands):
            node = self._node_of(command[1])
            groups.setdefault(None if node is None else node.name, (node, []))[1].append(index)
        sent = []
        try:
            for node, indexes in groups.values():
                pool = self._pool(node)
                connection = pool.get_connection(commands[indexes[0]][0])
                sent.append((pool, connection, indexes))
                connection.send_packed_command(
                    connection.pack_commands([commands[i] for i in indexes]))
        except BaseException:
            for pool, connection, _ in sent:
                connection.disconnect()
                pool.release(connection)
            raise
        return sent

    def _receive(self, sent, results):
        """Reads every node's answers into results; errors are stored, not
        raised, so that each connection is left with nothing unread."""
        failure = None
        for pool, connection, indexes in sent:
            try:
                for i in indexes:
                    try:
                        results[i] = connection.read_response()
                    except self._response_error() as error:
                        results[i] = error
            except BaseException as error:  # connection lost mid-read
                connection.disconnect()
                failure = failure or error
            finally:
                pool.release(connection)
        if failure is not None:
            raise failure

    @staticmethod
    def _response_error():
        from redis.exceptions import ResponseError
        return ResponseError

    def _execute(self, commands, tolerate=None):
        """Runs commands (tuples, key second) pipelined per node; returns
        their answers in order. Redirected commands are retried through
        the client after a refresh of its slot map."""
        results = [None] * len(commands)
        self._receive(self._send(commands), results)
        redirected = [i for i, r in enumerate(results)
                      if isinstance(r, Exception) and _is_redirect(r)]
        if redirected and self._cluster:
            self.client.nodes_manager.initialize()
            for i in redirected:
                try:
                    results[i] = self.client.execute_command(*commands[i])
                except self._response_error() as error:
                    results[i] = error
        for result in results:
            if isinstance(result, Exception) and not (tolerate and tolerate in str(result)):
                raise result
        return results

    # ---- items ---------------------------------------------------------------

    def _commands(self, verb, items, args=None):
        """One `verb` command per shard and COMMAND_ITEMS items (args(shard,
        start): the words between the key and the items); with the items'
        indexes of each."""
        by_shard = [[] for _ in range(self.shards)]
        for index, shard in enumerate(_bloomkit.shard_of(items, self.shards)):
            by_shard[shard].append(index)
        commands, owners = [], []
        for shard, indexes in enumerate(by_shard):
            for start in range(0, len(indexes), COMMAND_ITEMS):
                chunk = indexes[start:start + COMMAND_ITEMS]
                words = args(shard, start) if args else ()
                commands.append((verb, self.keys[shard], *words, *(items[i] for i in chunk)))
                owners.append(chunk)
        return commands, owners

    def _batched(self, verb, items, args=None, replies=None):
        """One `verb` command per shard and COMMAND_ITEMS items; the answers
        come back in the items' order."""
        items = self._keys(items)
        commands, owners = self._commands(verb, items, args)
        answers = [False] * len(items)
        for chunk, replies in zip(owners, replies(commands) if replies else
                                  self._execute(commands)):
            for index, reply in zip(chunk, replies):
                if isinstance(reply, Exception):
                    raise reply
                answers[index] = bool(reply)
        return answers

    def add(self, item):
        """Adds one item; True if it was new."""
        key = self._keys([item])[0]
        shard = _bloomkit.shard_of([key], self.shards)[0]
        return bool(self._execute([("BF.ADD", self.keys[shard], key)])[0])

    def exists(self, item):
        """True if the item may have been added; False if it certainly was not."""
        key = self._keys([item])[0]
        shard = _bloomkit.shard_of([key], self.shards)[0]
        return bool(self._execute([("BF.EXISTS", self.keys[shard], key)])[0])

    __contains__ = exists

    def madd(self, items):
        """Adds many items; a list of 'was new' flags in their order."""
        return self._batched("BF.MADD", items)

    def mexists(self, items):
        """Checks many items; a list of 'may be present' flags in order."""
        return self._batched("BF.MEXISTS", items)

    def claim(self, items, batch_id=None, retries=3, seconds=CLAIM_SECONDS):
        """Adds many items as madd does, so that each is reported new to
        exactly one caller even when a reply is lost: every command
        carries an id made from batch_id (random when None), bloomkit.so
        keeps its answers for `seconds` (BF.CLAIM), and a command whose
        reply was lost to a dropped connection or a timeout is sent again,
        up to `retries` times, with the same id, getting the first try's
        answers (where BF.MADD would answer "seen" of items nobody was told
        were new). Pass the same batch_id to retry a whole call yourself.
        With RedisBloom, which has no BF.CLAIM, this is madd, with a
        warning once that a lost reply can then lose items."""
        from redis.exceptions import ConnectionError as LostError, TimeoutError as SlowError
        if getattr(self, "_claims", True) is False:
            return self.madd(items)
        batch = batch_id if batch_id is not None else os.urandom(12).hex()

        def args(shard, start):
            return ("%s:%d:%d" % (batch, shard, start), str(int(seconds)))

        def send(commands):
            for attempt in range(retries + 1):
                try:
                    return self._execute(commands)
                except (LostError, SlowError):
                    if attempt == retries:
                        raise
                    time.sleep(0.05 * (attempt + 1))
        try:
            return self._batched("BF.CLAIM", items, args, send)
        except self._response_error() as error:
            if "unknown command" not in str(error).lower():
                raise
            self._claims = False
            warnings.warn("bloomkit.redis: the server has no BF.CLAIM (RedisBloom, not "
                          "bloomkit.so): claims are plain BF.MADD, and a reply lost to a "
                          "dropped connection can lose its items", RuntimeWarning, stacklevel=2)
            return self.madd(items)

    add_many = madd
    contains_many = mexists

    # ---- the whole filter ------------------------------------------------------

    def card(self):
        """Items added (the sum of the shards' BF.CARD)."""
        return sum(self._execute([("BF.CARD", key) for key in self.keys]))

    def info(self):
        """The shards' BF.INFO summed (capacity, size, filters, items), with
        the layout and each shard's key, slot, node and items."""
        replies = [_pairs(r) for r in self._execute([("BF.INFO", key) for key in self.keys])]
        per_shard = []
        for key, reply in zip(self.keys, replies):
            node = self._node_of(key)
            per_shard.append({"key": key, "slot": key_slot(key),
                              "node": None if node is None else node.name,
                              "items": reply.get("Number of items inserted", 0),
                              "capacity": reply.get("Capacity", 0)})
        total = {field: sum(r.get(name, 0) for r in replies) for field, name in
                 (("capacity", "Capacity"), ("size", "Size"), ("filters", "Number of filters"),
                  ("items", "Number of items inserted"))}
        total.update(name=self.name, shards=self.shards, requested_capacity=self.capacity,
                     error_rate=self.error_rate, per_shard=per_shard)
        return total

    def delete(self):
        """Deletes every shard key and the layout."""
        self._execute([("DEL", key) for key in self.keys])
        self.client.delete(self.meta_key)

    def __repr__(self):
        return "<bloomkit.redis.ShardedFilter %r shards=%d capacity=%d error_rate=%g>" % (
            self.name, self.shards, self.capacity, self.error_rate)
