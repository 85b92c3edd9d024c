"""Static filters from Python (bloomkit.build, Filter.build): every key
given is found, absent keys pass at the fingerprint's rate, repeats count
once, the kind follows fpr, a memory cap builds in parts, the file is the
tool's (built here, checked there and the other way), and every change is
refused with StaticError, a KindError."""
import os
import pickle
import subprocess

import pytest

import bloomkit


def keys(prefix, n):
    return ["%s-%d@example.com" % (prefix, i) for i in range(n)]


SET = keys("user", 50_000)
ABSENT = keys("other", 50_000)


def test_every_key_found_and_rate():
    f = bloomkit.build(SET, 0.01, seed=3)
    assert f.kind == "fuse8"
    assert all(f.contains_many(SET))
    assert all(k in f for k in SET[:1000])
    fp = sum(f.contains_many(ABSENT))
    # 2^-8 of 50,000 is 195; 300 is over 7 standard deviations above
    assert 90 <= fp <= 300, fp
    info = f.info()
    assert info["items"] == len(SET) == len(f)
    assert info["expected_fpr"] == 1 / 256
    # 1.125 cells a key from 10M keys on; at 50,000 the sizing asks 1.19
    assert 8.9 < 8 * info["bytes"] / len(SET) < 10.0


def test_kind_follows_fpr_and_rates_out_of_reach_are_refused():
    assert bloomkit.build(SET[:100], 0.005).kind == "fuse8"
    assert bloomkit.build(SET[:100], 0.001).kind == "fuse16"
    assert bloomkit.build(SET[:100], kind="fuse16").kind == "fuse16"
    assert bloomkit.build(SET[:100], 1e-7).kind == "fuse32"
    with pytest.raises(bloomkit.InvalidArgumentError):
        bloomkit.build(SET[:100], 1e-10)
    with pytest.raises(bloomkit.InvalidArgumentError):
        bloomkit.build(SET[:100], 0.001, kind="fuse8")
    with pytest.raises(ValueError):
        bloomkit.build(SET[:100], kind="blocked")


def test_plan_of_a_static_kind():
    p = bloomkit.plan(100_000_000, 0.01, kind="fuse8")
    assert p["kind"] == "fuse8" and p["expected_fpr"] == 1 / 256
    assert 8.9 < p["bits_per_key"] < 9.1 and p["bytes"] == p["cells"]
    # the filter built from that many keys takes what the plan says
    f = bloomkit.build(SET, 0.01)
    assert bloomkit.plan(len(SET), 0.01, kind="fuse8")["bytes"] == f.info()["bytes"]
    with pytest.raises(bloomkit.InvalidArgumentError):
        bloomkit.plan(1000, 0.001, kind="fuse8")


def test_fuse32_holds_its_set_at_two_to_the_minus_32():
    f = bloomkit.build(SET, kind="fuse32")
    assert f.kind == "fuse32" and all(f.contains_many(SET))
    assert sum(f.contains_many(ABSENT)) == 0  # 2^-32 of 50,000: 0.00001 expected
    info = f.info()
    assert info["expected_fpr"] == 2.0 ** -32
    assert 35.9 < 8 * info["bytes"] / len(SET) < 40.0
    p = bloomkit.plan(len(SET), 1e-9, kind="fuse32")
    assert p["bytes"] == info["bytes"] and p["cells"] * 4 == p["bytes"]


def test_repeats_and_generators():
    f = bloomkit.build((k for k in SET[:1000] * 3), kind="fuse16")
    assert len(f) == 1000
    assert all(f.contains_many(SET[:1000]))
    assert sum(f.contains_many(ABSENT)) <= 5


def test_an_empty_static_filter_is_refused_in_words():
    with pytest.raises(bloomkit.InvalidArgumentError) as e:
        bloomkit.Filter(100, 0.01, kind="fuse8")
    assert "bloomkit.build" in str(e.value)


def test_changes_are_refused():
    f = bloomkit.build(SET[:1000], 0.01)
    for change in (lambda: f.add("new"), lambda: f.add_many(["a", "b"]),
                   lambda: f.remove(SET[0]), f.clear):
        with pytest.raises(bloomkit.StaticError) as e:
            change()
        assert isinstance(e.value, bloomkit.KindError)
        assert "static" in str(e.value)
    assert all(f.contains_many(SET[:1000]))


def test_memory_cap_builds_in_parts(tmp_path):
    d = tmp_path / "spill"
    d.mkdir()
    f = bloomkit.build(SET, 0.01, memory=1 << 20, tmpdir=str(d))
    assert f.info()["filters"] >= 2
    assert all(f.contains_many(SET))
    assert os.listdir(str(d)) == []


def test_a_spill_directory_that_cannot_be_is_refused_at_once(tmp_path):
    with pytest.raises(bloomkit.FileError):
        bloomkit.build(iter(SET), 0.01, memory=1 << 20, tmpdir=str(tmp_path / "none"))


def test_saved_mapped_pickled(tmp_path):
    f = bloomkit.build(SET, 0.01, normalize="email")
    path = str(tmp_path / "spam.bkf")
    f.save(path)
    assert bloomkit.file_kind(path) == "fuse8"
    with bloomkit.open(path) as m:
        assert m.kind == "fuse8"
        assert m.key_form == "email"
        # the recorded form applies to lookups: the mixed-case spelling is found
        assert "USER-7@Example.COM" in m
        assert all(m.contains_many(SET))
    g = bloomkit.load(path)
    assert g.contains_many(ABSENT) == f.contains_many(ABSENT)
    p = pickle.loads(pickle.dumps(f))
    assert p.kind == "fuse8" and all(p.contains_many(SET[:100]))


def test_the_tools_file_and_back(tmp_path, tool):
    src = tmp_path / "set.txt"
    src.write_text("\n".join(SET) + "\n")
    path = str(tmp_path / "tool.bkf")
    subprocess.run([tool, "create", "--kind", "fuse16", "-q", path, str(src)], check=True)
    f = bloomkit.load(path)
    assert f.kind == "fuse16" and all(f.contains_many(SET))
    mine = str(tmp_path / "mine.bkf")
    bloomkit.build(SET, kind="fuse8").save(mine)
    r = subprocess.run([tool, "check", mine, str(src)], stdout=subprocess.PIPE, check=True)
    assert r.stdout.decode().split() == SET
