"""Large filter files are paged (docs/FORMAT.md, "Paged files"): load()
and open() read a header and the group checksums, then a page per key
touched, counted here in bytes read (/proc/self/io), never timed. A page
damaged under a key raises CorruptError naming its offset instead of
answering; one no key reads costs nothing until verify()."""
import os

import pytest

import bloomkit


def proc_io(what):
    """A counter of /proc/self/io: "rchar" (bytes read), "wchar" (written)."""
    with open("/proc/self/io") as fp:
        for line in fp:
            if line.startswith(what + ":"):
                return int(line.split()[1])
    return 0


def rchar():
    return proc_io("rchar")


def wchar():
    return proc_io("wchar")


def keys(prefix, n):
    return ["%s-%d" % (prefix, i) for i in range(n)]


@pytest.fixture
def big(tmp_path):
    """A 120 MB blocked filter file with 10,000 keys in it."""
    path = str(tmp_path / "big.bk")
    f = bloomkit.Filter(100_000_000, 0.01, kind="blocked", seed=5)
    f.add_many(keys("in", 10_000))
    f.save(path)
    with open(path, "rb") as fp:
        assert int.from_bytes(fp.read(12)[8:12], "little") == 3  # paged
    return path


@pytest.mark.parametrize("how", ["load", "open"])
def test_a_large_file_costs_the_pages_keys_touch(big, how):
    before = rchar()
    f = bloomkit.load(big) if how == "load" else bloomkit.open(big)
    assert rchar() - before < 64 * 1024, "opening read the file"
    before = rchar()
    present = keys("in", 200)
    assert all(f.contains_many(present))
    assert all(k in f for k in present)
    # 200 keys: at most a page and its group of page checksums each
    assert rchar() - before <= 200 * 2 * 4096
    assert len(f) == 10_000
    # absent keys: the answers of the filter as it was saved
    want = bloomkit.Filter(100_000_000, 0.01, kind="blocked", seed=5)
    want.add_many(keys("in", 10_000))
    assert f.contains_many(keys("out", 5000)) == want.contains_many(keys("out", 5000))
    f.verify()  # the whole file, checked on demand
    f.close()


def test_a_damaged_page_under_a_key_raises_with_its_offset(tmp_path):
    path = str(tmp_path / "one.bk")
    f = bloomkit.Filter(100_000_000, 0.01, kind="blocked", seed=5)
    f.add("lonely")
    f.save(path)
    # the key's page: the one payload page (past the first) holding data
    fd = os.open(path, os.O_RDWR)
    page = os.lseek(fd, 4096, os.SEEK_DATA) // 4096 * 4096
    os.pwrite(fd, bytes(4096), page)  # its bits cleared: read as is, "absent"
    os.close(fd)
    g = bloomkit.load(path)
    with pytest.raises(bloomkit.CorruptError, match="at byte %d" % page):
        "lonely" in g
    with pytest.raises(bloomkit.CorruptError):
        g.add("lonely")
    with pytest.raises(bloomkit.CorruptError):
        g.save(str(tmp_path / "copy.bk"))


def test_damage_no_key_reads_waits_for_verify(big):
    # the middle of the file: a hole in a sparse file no key set a bit in
    fd = os.open(big, os.O_RDWR)
    size = os.fstat(fd).st_size
    mid = size // 2 // 4096 * 4096
    assert os.lseek(fd, mid, os.SEEK_DATA) > mid + 4096
    os.pwrite(fd, b"\xff", mid + 7)
    os.close(fd)
    f = bloomkit.load(big)
    assert all(f.contains_many(keys("in", 10_000)))
    with pytest.raises(bloomkit.CorruptError, match="at byte %d" % mid):
        f.verify()


def test_checkpoint_of_a_loaded_file_writes_in_place(big):
    ino = os.stat(big).st_ino
    f = bloomkit.load(big)
    f.add_many(keys("more", 100))
    f.checkpoint(big)
    assert os.stat(big).st_ino == ino, "written whole, not in place"
    g = bloomkit.load(big)
    assert all(g.contains_many(keys("in", 10_000) + keys("more", 100)))
    g.verify()
    assert len(g) == 10_100


def test_save_back_to_its_file_writes_in_place(big, tmp_path):
    ino = os.stat(big).st_ino
    f = bloomkit.load(big)
    f.add_many(keys("saved", 100))
    f.save(big)
    assert os.stat(big).st_ino == ino, "saved whole, not in place"
    copy = str(tmp_path / "copy.bk")
    f.save(copy)  # elsewhere: a whole file
    for path in (big, copy):
        g = bloomkit.load(path)
        assert all(g.contains_many(keys("in", 10_000) + keys("saved", 100)))
        g.verify()
        assert len(g) == 10_100


@pytest.fixture
def big_bitmap(tmp_path):
    """A 256 MB bitmap file (2^31 values) with 1,000 values spread over it."""
    path = str(tmp_path / "ids.bk")
    b = bloomkit.Bitmap(1 << 31)
    b.add_many(range(7, 1 << 31, (1 << 31) // 1000))
    b.save(path)
    with open(path, "rb") as fp:
        assert int.from_bytes(fp.read(12)[8:12], "little") == 3  # paged
    return path


def test_a_large_bitmap_costs_the_pages_values_touch(big_bitmap):
    step = (1 << 31) // 1000
    before = rchar()
    b = bloomkit.load(big_bitmap)
    assert isinstance(b, bloomkit.Bitmap)
    assert rchar() - before < 64 * 1024, "loading read the file"
    before = rchar()
    assert all(b.contains_many(range(7, 200 * step, step)))
    assert not any(b.contains_many(range(8, 200 * step, step)))
    assert 7 + 3 * step in b
    # 200 values on 200 pages: a page and a group of page checksums each
    assert rchar() - before <= 200 * 2 * 4096
    before_w = wchar()
    assert b.add(9)
    b.save(big_bitmap)  # one changed page, written in place
    assert wchar() - before_w < 64 * 1024
    n = len(range(7, 1 << 31, step)) + 1
    assert len(b) == n  # counting reads every page
    c = bloomkit.Bitmap.load(big_bitmap)
    assert 9 in c and len(c) == n
    c.verify()


def test_a_damaged_bitmap_page_raises_with_its_offset(big_bitmap, tmp_path):
    fd = os.open(big_bitmap, os.O_RDWR)
    at = 256 + 7 // 8  # value 7's byte, on page 0 (bytes 256..4095)
    os.pwrite(fd, bytes(1), at)  # its bit cleared: read as is, "unset"
    os.close(fd)
    b = bloomkit.load(big_bitmap)
    assert 7 + (1 << 31) // 1000 in b  # another page: answers
    with pytest.raises(bloomkit.CorruptError, match="at byte 256"):
        7 in b
    with pytest.raises(bloomkit.CorruptError):
        b.save(str(tmp_path / "copy.bk"))
    assert not os.path.exists(str(tmp_path / "copy.bk"))
    with pytest.raises(bloomkit.CorruptError, match="at byte 256"):
        bloomkit.load(big_bitmap).verify()


def test_info_of_a_large_bitmap_reads_kilobytes_until_asked(big_bitmap, tool):
    import json
    import subprocess

    def info(*args):
        out = subprocess.run([tool, "info", "--json", *args, big_bitmap], check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)

    quick = info()
    assert quick["values"] == 1 << 31 and quick["counted"] is False and "set" not in quick
    assert quick["pages"] == (256 + (1 << 28) + 4095) // 4096
    full = info("--verify")
    assert full["counted"] is True
    assert full["set"] == len(range(7, 1 << 31, (1 << 31) // 1000))
    fd = os.open(big_bitmap, os.O_RDWR)
    os.pwrite(fd, b"\x01", 256 + (1 << 27))  # a page no value is on
    os.close(fd)
    assert info()["counted"] is False  # not read: not noticed
    bad = subprocess.run([tool, "info", "--verify", big_bitmap], capture_output=True, text=True)
    assert bad.returncode == 2 and "damaged" in bad.stderr
    assert "at byte %d" % ((256 + (1 << 27)) // 4096 * 4096) in bad.stderr


def test_open_of_a_bitmap_file_is_its_paged_load(big_bitmap):
    before = rchar()
    b = bloomkit.open(big_bitmap)
    assert isinstance(b, bloomkit.Bitmap)
    assert 7 in b and 8 not in b
    assert rchar() - before < 64 * 1024
    with pytest.raises(bloomkit.KindError, match="not mapped for writing"):
        bloomkit.open(big_bitmap, writable=True)
