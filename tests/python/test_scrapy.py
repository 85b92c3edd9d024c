"""bloomkit.scrapy on real crawls: a site of PAGES pages served on loopback
by http.server in a thread, each page linking to others with duplicates
(repeated links, links differing only by a fragment). The server counts
every GET; the crawls run in subprocesses with Debian's Scrapy."""
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
PAGES = 60


def links(i):
    """Every page is reachable from page 0 through i+1; each page is linked
    from several others, and each links some page twice."""
    targets = [(i + 1) % PAGES, (2 * i) % PAGES, (7 * i + 3) % PAGES, 0, (i + 1) % PAGES]
    hrefs = ["/p/%d" % t for t in targets]
    hrefs.append("/p/%d#again" % ((i + 1) % PAGES))
    return hrefs


class Site(http.server.BaseHTTPRequestHandler):
    hits = {}
    lock = threading.Lock()

    def do_GET(self):  # noqa: N802 - http.server's name
        with self.lock:
            self.hits[self.path] = self.hits.get(self.path, 0) + 1
        if not self.path.startswith("/p/"):
            self.send_error(404)
            return
        i = int(self.path[3:])
        body = "<html><body>%s</body></html>" % "".join(
            '<a href="%s">link</a>' % h for h in links(i))
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    Site.hits = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/p/0" % server.server_address[1]
    server.shutdown()
    server.server_close()


def page_hits():
    return {p: n for p, n in Site.hits.items() if p.startswith("/p/")}


def crawl(url, **settings):
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    out = subprocess.run([sys.executable, os.path.join(HERE, "crawl_site.py"), url,
                          json.dumps(settings)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    crawl.log = out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


BLOOM = "bloomkit.scrapy.BloomDupeFilter"


def crawl_killed(url, settings, pages):
    """A crawl killed with SIGKILL once it fetched `pages` pages (or after a
    minute) and a checkpoint interval (0.5 s in the settings) passed."""
    import signal
    import time as _time
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "crawl_site.py"), url,
                             json.dumps(settings)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = _time.monotonic() + 60
        while sum(page_hits().values()) < pages and _time.monotonic() < deadline:
            _time.sleep(0.05)
        _time.sleep(0.6)  # a checkpoint falls due meanwhile
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_without_a_dupefilter_the_site_is_refetched(site):
    # The control: the site really has duplicate links.
    crawl(site, DUPEFILTER_CLASS="scrapy.dupefilters.BaseDupeFilter", CLOSESPIDER_PAGECOUNT=70)
    assert max(page_hits().values()) > 1


def test_each_page_fetched_once(site):
    stats = crawl(site, DUPEFILTER_CLASS=BLOOM, BLOOMKIT_DUPEFILTER_CAPACITY=1000,
                  BLOOMKIT_DUPEFILTER_ERROR_RATE=1e-6)
    hits = page_hits()
    assert len(hits) == PAGES and set(hits.values()) == {1}, hits
    assert stats["dupefilter/filtered"] >= PAGES * 4
    assert stats["bloomkit/dupefilter/items"] == PAGES
    assert 0 < stats["bloomkit/dupefilter/bytes"] < 10_000


def test_pause_and_resume_with_jobdir(site, tmp_path):
    jobdir = str(tmp_path / "job")
    first = crawl(site, DUPEFILTER_CLASS=BLOOM, JOBDIR=jobdir, CLOSESPIDER_PAGECOUNT=12,
                  CONCURRENT_REQUESTS=2)
    assert first["finish_reason"] == "closespider_pagecount"
    fetched_first = sum(page_hits().values())
    assert fetched_first < PAGES
    assert os.path.exists(os.path.join(jobdir, "requests.bloom"))

    second = crawl(site, DUPEFILTER_CLASS=BLOOM, JOBDIR=jobdir)
    assert second["finish_reason"] == "finished"
    hits = page_hits()
    assert len(hits) == PAGES, sorted(hits)
    assert set(hits.values()) == {1}, {p: n for p, n in hits.items() if n != 1}
    assert second["dupefilter/filtered"] >= 1  # the start page, seen in the first run


def test_redis_dupefilter_shares_the_seen_set(site, redis_server):
    settings = dict(DUPEFILTER_CLASS="bloomkit.scrapy.BloomRedisDupeFilter",
                    BLOOMKIT_REDIS_URL="redis://127.0.0.1:%d" % redis_server.port,
                    BLOOMKIT_REDIS_SHARDS=2, BLOOMKIT_DUPEFILTER_CAPACITY=10_000,
                    LOG_LEVEL="INFO")
    first = crawl(site, **settings)
    hits = page_hits()
    assert len(hits) == PAGES and set(hits.values()) == {1}
    assert first["bloomkit/dupefilter/items"] == PAGES
    assert redis_server.client.exists("site:seen:meta") == 1
    assert "seen-set 'site:seen' in Redis: 2 shard keys (site:seen:0{" in crawl.log
    assert "site:seen:meta" in crawl.log
    second = crawl(site, **settings)  # another process, same Redis filter
    assert sum(page_hits().values()) == PAGES, "the second crawler refetched"
    assert second["dupefilter/filtered"] == 1
    # a new crawl from scratch: the seen-set emptied at start, said in the log
    crawl(site, BLOOMKIT_REDIS_RESET=True, **settings)
    assert set(page_hits().values()) == {2}, "a reset crawl fetches every page again"
    assert "cleared at start (BLOOMKIT_REDIS_RESET)" in crawl.log


def test_kill_9_and_resume_refetches_at_most_a_checkpoint(site, tmp_path):
    # A slow crawl (one request at a time, 0.1 s apart) is killed with
    # SIGKILL once it fetched about half the site and a checkpoint
    # interval (0.5 s) passed; the resumed crawl fetches again only what
    # the last interval saw, where before (a filter saved only when the
    # crawl closed) it fetched every page of the first run again. (Scrapy's
    # own JOBDIR queue of pending requests does not survive a kill: the
    # resumed crawl may not reach every page, as with Scrapy's own filter.)
    jobdir = str(tmp_path / "job")
    settings = dict(DUPEFILTER_CLASS=BLOOM, JOBDIR=jobdir, CONCURRENT_REQUESTS=1,
                    DOWNLOAD_DELAY=0.1, RANDOMIZE_DOWNLOAD_DELAY=False, BLOOMKIT_CHECKPOINT=0.5)
    crawl_killed(site, settings, PAGES // 2)
    first = dict(page_hits())
    assert PAGES // 2 <= sum(first.values()) < PAGES, first
    assert os.path.exists(os.path.join(jobdir, "requests.bloom"))
    resumed = crawl(site, **dict(settings, DOWNLOAD_DELAY=0))
    again = sum(page_hits()[p] - 1 for p in first)
    # 0.5 s of a crawl at 0.1 s per page, and the page in hand: 8 at most
    assert again <= 8, {p: n for p, n in page_hits().items() if n > 1}
    # the resumed crawl knew the last one was killed, and said so
    assert resumed.get("bloomkit/dupefilter/unclean_start") == 1
    # a clean close since: the next start is clean
    clean = crawl(site, **dict(settings, DOWNLOAD_DELAY=0))
    assert "bloomkit/dupefilter/unclean_start" not in clean


def test_kill_9_and_rebuild_the_frontier(site, tmp_path):
    # Killed before it ever closed cleanly, a crawl resumed with
    # BLOOMKIT_DUPEFILTER_REBUILD starts from an empty filter: every page is
    # reached again (without it, the pages that were only queued when the
    # kill came are never fetched: Scrapy lost its queue).
    jobdir = str(tmp_path / "job")
    settings = dict(DUPEFILTER_CLASS=BLOOM, JOBDIR=jobdir, CONCURRENT_REQUESTS=1,
                    DOWNLOAD_DELAY=0.1, RANDOMIZE_DOWNLOAD_DELAY=False, BLOOMKIT_CHECKPOINT=0.5,
                    BLOOMKIT_DUPEFILTER_REBUILD=True)
    crawl_killed(site, settings, PAGES // 3)
    assert os.path.exists(os.path.join(jobdir, "requests.bloom.open"))
    Site.hits = {}
    resumed = crawl(site, **dict(settings, DOWNLOAD_DELAY=0))
    assert resumed.get("bloomkit/dupefilter/unclean_start") == 1
    hits = page_hits()
    assert len(hits) == PAGES and set(hits.values()) == {1}, sorted(hits)
    # closed cleanly now: the copy a later kill would start from is there
    assert os.path.exists(os.path.join(jobdir, "requests.bloom.closed"))
    assert not os.path.exists(os.path.join(jobdir, "requests.bloom.open"))
