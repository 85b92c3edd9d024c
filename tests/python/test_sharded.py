"""bloomkit.redis.ShardedFilter on a 3-master Redis Cluster started here
(and on one plain server): shards spread over every master, no false
negatives, FPR within the bound, and a slot migration of one shard key
under a client with a stale slot map."""
import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

import bloomkit
from bloomkit.redis import ShardedFilter, key_slot, shard_capacity, shard_tags

N = 60_000


def items(prefix, n):
    return ["%s/%d" % (prefix, i) for i in range(n)]


def test_shard_tags_cover_the_slot_ranges():
    for shards in (1, 2, 3, 7, 64):
        tags = shard_tags(shards)
        assert [key_slot(t) * shards // 16384 for t in tags] == list(range(shards))
    with pytest.raises(ValueError):
        shard_tags(0)
    assert shard_capacity(3_000_000, 3) > 1_000_000


def test_routing_is_even_and_independent_of_the_key_type():
    counts = [0] * 4
    for s in bloomkit.shard_of(items("r", 40_000), 4):
        counts[s] += 1
    assert all(abs(c - 10_000) < 500 for c in counts), counts
    assert bloomkit.shard_of(["x", b"x"], 7)[0] == bloomkit.shard_of(["x", b"x"], 7)[1]


def test_on_one_plain_server(redis_server):
    sf = ShardedFilter(redis_server.client, "plain", shards=4, capacity=10_000, error_rate=0.001)
    assert all(sf.madd(items("p", 5000)))
    assert sf.add("p/1") is False and sf.add("new") is True
    assert "new" in sf and all(sf.mexists(items("p", 5000)))
    assert sf.card() == 5001
    assert redis_server.client.exists(*sf.keys) == 4
    with pytest.raises(ValueError):
        ShardedFilter(redis_server.client, "plain", shards=5)
    with pytest.raises(LookupError):
        ShardedFilter(redis_server.client, "never-made")
    sf.delete()
    assert redis_server.client.exists(*sf.keys, sf.meta_key) == 0


def node_ids(cluster):
    return {n.port: n.client.execute_command("CLUSTER", "MYID").decode() for n in cluster}


def move_keys(slot, source, target):
    """Every key of a slot MIGRATEd from node `source` to node `target`."""
    while True:
        keys = source.client.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
        if not keys:
            return
        source.client.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 10000,
                                      "KEYS", *keys)


def migrate_slot(cluster, slot, source, target):
    """Moves a slot and its keys from node `source` to node `target` the way
    redis-cli --cluster reshard does it."""
    ids = node_ids(cluster)
    target.client.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source.port])
    source.client.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target.port])
    move_keys(slot, source, target)
    for node in cluster:
        node.client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[target.port])


def test_sharded_filter_on_a_cluster(cluster):
    rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", cluster[0].port)])
    for key in shard_tags(6):
        assert rc.keyslot("x{%s}" % key) == key_slot("x{%s}" % key)
    sf = ShardedFilter(rc, "crawl", shards=6, capacity=N, error_rate=0.01)
    present = items("https://in.example", N)
    assert sum(sf.madd(present)) > N * 0.99

    # every master holds shards and about a third of the items
    per_node = {}
    for shard in sf.info()["per_shard"]:
        per_node[shard["node"]] = per_node.get(shard["node"], 0) + shard["items"]
    assert len(per_node) == 3, per_node
    assert all(0.25 * N < n < 0.42 * N for n in per_node.values()), per_node
    for node in cluster:
        assert node.client.dbsize() >= 2  # two shard keys each (+ maybe the meta key)

    assert all(sf.mexists(present))
    absent = items("https://out.example", 100_000)
    fpr = sum(sf.mexists(absent)) / len(absent)
    assert 0 < fpr <= 0.01, fpr
    assert abs(sf.card() - N) < N * 0.01
    info = sf.info()
    assert info["shards"] == 6 and info["capacity"] >= N and info["items"] == sf.card()

    # reopened by another client: same layout from NAME:meta
    other = ShardedFilter(RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", cluster[1].port)]),
                          "crawl")
    assert other.keys == sf.keys and all(other.mexists(present[:1000]))
    with pytest.raises(ValueError):
        ShardedFilter(rc, "crawl", shards=3)

    # migrate shard 0's slot to another master; sf keeps a stale slot map
    key = sf.keys[0]
    slot = key_slot(key)
    source_port = rc.get_node_from_key(key).port
    source = next(n for n in cluster if n.port == source_port)
    target = next(n for n in cluster if n.port != source_port)
    migrate_slot(cluster, slot, source, target)
    def keys_in_slot(node):
        return node.client.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
    assert keys_in_slot(target) == 1 and keys_in_slot(source) == 0

    refreshes = []
    original = rc.nodes_manager.initialize
    rc.nodes_manager.initialize = lambda: (refreshes.append(1), original())[1]
    assert all(sf.mexists(present)), "false negatives after the migration"
    assert refreshes, "the stale slot map was not refreshed (no MOVED seen?)"
    more = items("https://after.example", 5000)
    assert sum(sf.madd(more)) > 4900 and all(sf.mexists(more + present))
    assert rc.get_node_from_key(key).port == target.port
    assert abs(sf.card() - N - 5000) < N * 0.01


def _open_new(args):
    port, name = args
    client = redis.Redis(port=port)
    sf = ShardedFilter(client, name, shards=3, capacity=30_000, error_rate=0.001)
    return sf.shards, sf.capacity


def test_many_processes_create_one_filter_at_once(redis_server):
    # Before, the layout was written in two steps and a concurrent opener
    # could read it half written (KeyError: 'capacity').
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    for round_ in range(5):
        name = "race%d" % round_
        with ctx.Pool(12) as pool:
            got = pool.map(_open_new, [(redis_server.port, name)] * 36)
        assert set(got) == {(3, 30_000)}, got


def test_a_half_created_filter_can_be_opened(redis_server):
    # What a creator of an earlier release that died between its two
    # writes left: the shard count only.
    c = redis_server.client
    c.hset("half:meta", "shards", 2)
    with pytest.raises(LookupError, match="half created"):
        ShardedFilter(c, "half")
    sf = ShardedFilter(c, "half", capacity=5000, error_rate=0.01)
    assert (sf.shards, sf.capacity) == (2, 5000)
    sf.add("x")
    assert "x" in ShardedFilter(c, "half")


def test_a_claim_survives_a_lost_reply(redis_server, monkeypatch):
    """claim() sends BF.CLAIM with ids a retry repeats: a reply lost after
    the server took the items is sent again and gets the first answers,
    where a retried madd hears "seen" of items it was never told were
    new."""
    sf = ShardedFilter(redis_server.client, "claims", shards=3, capacity=10_000, error_rate=0.001)
    real = sf._execute
    lost = {"n": 0}

    def loses_the_first_reply(commands, tolerate=None):
        out = real(commands, tolerate)  # the server took them
        if lost["n"] == 0:
            lost["n"] += 1
            raise redis.exceptions.ConnectionError("reply lost")
        return out

    monkeypatch.setattr(sf, "_execute", loses_the_first_reply)
    assert sf.claim(items("c", 3000)) == [True] * 3000
    assert lost["n"] == 1
    lost["n"] = 0
    with pytest.raises(redis.exceptions.ConnectionError):
        sf.madd(items("d", 100))
    assert sf.madd(items("d", 100)) == [False] * 100
    monkeypatch.setattr(sf, "_execute", real)
    # a whole call retried by its caller, with its batch id
    first = sf.claim(items("e", 50) + items("c", 2), batch_id="job-17")
    again = sf.claim(items("e", 50) + items("c", 2), batch_id="job-17")
    assert first == again == [True] * 50 + [False] * 2
    assert sf.claim(items("e", 50), batch_id="job-18") == [False] * 50


def test_claims_fall_back_to_madd_without_bf_claim(redis_server, monkeypatch):
    sf = ShardedFilter(redis_server.client, "noclaims", shards=2, capacity=1000, error_rate=0.01)
    real = sf._execute

    def no_claim(commands, tolerate=None):
        if commands and commands[0][0] == "BF.CLAIM":
            raise redis.exceptions.ResponseError("unknown command 'BF.CLAIM'")
        return real(commands, tolerate)

    monkeypatch.setattr(sf, "_execute", no_claim)
    with pytest.warns(RuntimeWarning, match="no BF.CLAIM"):
        assert sf.claim(["a", "b"]) == [True, True]
    assert sf.claim(["a", "c"]) == [False, True]
