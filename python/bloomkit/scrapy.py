"""Scrapy dupefilters backed by bloomkit.

Scrapy's default RFPDupeFilter keeps every request fingerprint as a
40-character hex string in a Python set (about 150 bytes each: gigabytes
for tens of millions of URLs) and appends them to JOBDIR/requests.seen.
These filters keep the same fingerprints (Scrapy's own request
fingerprinter, so `dont_filter`, canonicalization and custom
REQUEST_FINGERPRINTER_CLASS settings behave as usual) in a Bloom filter.

BloomDupeFilter (DUPEFILTER_CLASS = "bloomkit.scrapy.BloomDupeFilter")
    An in-process filter. With JOBDIR set it is loaded from
    JOBDIR/requests.bloom when the crawl starts, and saved there (crash-safe
    checkpoints that write only what changed: Filter.checkpoint) when it
    closes and every BLOOMKIT_CHECKPOINT seconds while requests
    come, as Scrapy's own RFPDupeFilter appends to JOBDIR/requests.seen as
    it goes. Pause with Ctrl-C and resume with the same JOBDIR: no request
    seen is fetched again. Lose the process to kill -9 or a crash and
    resume: only the requests of the last interval are fetched again. (What
    a kill does lose is Scrapy's: its JOBDIR queue of pending requests is
    written only when the crawl stops gracefully, so a resumed crawl does
    not fetch the requests that were pending, with this filter as with
    Scrapy's own.)

BloomRedisDupeFilter (DUPEFILTER_CLASS = "bloomkit.scrapy.BloomRedisDupeFilter")
    One seen-set shared by many crawler processes, kept in Redis by the
    bloomkit.so module's BF.* commands (a bloomkit.redis.ShardedFilter, so
    it can also be spread over a Redis Cluster).

Settings:
    BLOOMKIT_DUPEFILTER_CAPACITY    requests the filter is sized for (1000000)
    BLOOMKIT_DUPEFILTER_ERROR_RATE  false-positive rate at that capacity
                                    (1e-6): the chance that a new URL is
                                    wrongly skipped
    BLOOMKIT_DUPEFILTER_KIND        bloomkit filter kind ("scalable": grows
                                    past the capacity, keeping the rate)
    BLOOMKIT_CHECKPOINT             seconds between saves of JOBDIR's
                                    filter while the crawl runs (5; 0: only
                                    when it closes)
    BLOOMKIT_REDIS_URL              redis://127.0.0.1:6379 (Redis variant)
    BLOOMKIT_REDIS_CLUSTER          connect with RedisCluster (False)
    BLOOMKIT_REDIS_KEY              filter name; "%(spider)s:seen"
    BLOOMKIT_REDIS_SHARDS           shard keys of the filter (1)
    DUPEFILTER_DEBUG                log every filtered request

Stats: "dupefilter/filtered" counts filtered requests (as Scrapy's own
filter does); "bloomkit/dupefilter/items" and "bloomkit/dupefilter/bytes"
are set when the crawl closes.
"""
import logging
import os
import time

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.job import job_dir
from scrapy.utils.request import referer_str

import bloomkit

FILE_NAME = "requests.bloom"
DEFAULT_CAPACITY = 1_000_000
DEFAULT_ERROR_RATE = 1e-6
DEFAULT_KIND = "scalable"
DEFAULT_CHECKPOINT = 5.0

logger = logging.getLogger(__name__)


class _LegacyFingerprinter:
    """Scrapy < 2.7 has no crawler.request_fingerprinter: its function."""

    def fingerprint(self, request):
        from scrapy.utils.request import request_fingerprint
        return bytes.fromhex(request_fingerprint(request))


def _fingerprinter(crawler):
    return getattr(crawler, "request_fingerprinter", None) or _LegacyFingerprinter()


class _LoggingDupeFilter(BaseDupeFilter):
    """What both filters share: fingerprints, logging and the stats entry."""

    def __init__(self, fingerprinter=None, debug=False, stats=None):
        self.fingerprinter = fingerprinter or _LegacyFingerprinter()
        self.debug = debug
        self.logdupes = True
        self.stats = stats

    def request_fingerprint(self, request):
        """Scrapy's fingerprint of the request, as 20 raw bytes."""
        return self.fingerprinter.fingerprint(request)

    def log(self, request, spider):
        if self.debug:
            logger.debug("Filtered duplicate request: %(request)s (referer: %(referer)s)",
                         {"request": request, "referer": referer_str(request)},
                         extra={"spider": spider})
        elif self.logdupes:
            logger.debug("Filtered duplicate request: %(request)s - no more duplicates will be "
                         "shown (see DUPEFILTER_DEBUG to show all duplicates)",
                         {"request": request}, extra={"spider": spider})
            self.logdupes = False
        spider.crawler.stats.inc_value("dupefilter/filtered", spider=spider)

    def _set_stat(self, name, value):
        if self.stats is not None:
            self.stats.set_value(name, value)


class BloomDupeFilter(_LoggingDupeFilter):
    """Request fingerprints in an in-process bloomkit filter, persisted in
    JOBDIR/requests.bloom when a JOBDIR is set."""

    def __init__(self, path=None, capacity=DEFAULT_CAPACITY, error_rate=DEFAULT_ERROR_RATE,
                 kind=DEFAULT_KIND, debug=False, *, fingerprinter=None, stats=None,
                 checkpoint=DEFAULT_CHECKPOINT):
        super().__init__(fingerprinter, debug, stats)
        self.file = os.path.join(path, FILE_NAME) if path else None
        self.checkpoint = checkpoint
        self._last_save = time.monotonic()
        if self.file and os.path.exists(self.file):
            # A damaged file raises bloomkit.CorruptError: better a crawl
            # that stops than one that silently refetches everything.
            self.filter = bloomkit.Filter.load(self.file)
        else:
            self.filter = bloomkit.Filter(capacity, error_rate, kind=kind)

    @classmethod
    def from_settings(cls, settings, *, fingerprinter=None, stats=None):
        return cls(job_dir(settings),
                   capacity=settings.getint("BLOOMKIT_DUPEFILTER_CAPACITY", DEFAULT_CAPACITY),
                   error_rate=settings.getfloat("BLOOMKIT_DUPEFILTER_ERROR_RATE",
                                                DEFAULT_ERROR_RATE),
                   kind=settings.get("BLOOMKIT_DUPEFILTER_KIND", DEFAULT_KIND),
                   debug=settings.getbool("DUPEFILTER_DEBUG"),
                   fingerprinter=fingerprinter, stats=stats,
                   checkpoint=settings.getfloat("BLOOMKIT_CHECKPOINT", DEFAULT_CHECKPOINT))

    @classmethod
    def from_crawler(cls, crawler):
        return cls.from_settings(crawler.settings, fingerprinter=_fingerprinter(crawler),
                                 stats=crawler.stats)

    def request_seen(self, request):
        new = self.filter.add(self.request_fingerprint(request))
        if new and self.file and self.checkpoint > 0 and \
                time.monotonic() - self._last_save >= self.checkpoint:
            # Writes the sectors that changed, through a journal: a kill
            # during it leaves the previous checkpoint or this one whole.
            self.filter.checkpoint(self.file)
            self._last_save = time.monotonic()
        return not new

    def close(self, reason):
        if self.file:
            self.filter.checkpoint(self.file)
        info = self.filter.info()
        self._set_stat("bloomkit/dupefilter/items", info["items"])
        self._set_stat("bloomkit/dupefilter/bytes", info["bytes"])


class BloomRedisDupeFilter(_LoggingDupeFilter):
    """Request fingerprints in a Bloom filter kept in Redis (BF.* commands
    of the bloomkit.so module), shared by every crawler process that names
    the same key."""

    def __init__(self, client, key, capacity=DEFAULT_CAPACITY, error_rate=DEFAULT_ERROR_RATE,
                 shards=1, debug=False, *, fingerprinter=None, stats=None):
        from bloomkit.redis import ShardedFilter
        super().__init__(fingerprinter, debug, stats)
        self.filter = ShardedFilter(client, key, shards=shards, capacity=capacity,
                                    error_rate=error_rate)

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        url = settings.get("BLOOMKIT_REDIS_URL", "redis://127.0.0.1:6379")
        if settings.getbool("BLOOMKIT_REDIS_CLUSTER"):
            from redis.cluster import RedisCluster
            client = RedisCluster.from_url(url)
        else:
            import redis
            client = redis.Redis.from_url(url)
        spider = getattr(crawler, "spider", None)
        key = settings.get("BLOOMKIT_REDIS_KEY", "%(spider)s:seen") % {
            "spider": spider.name if spider is not None else "scrapy"}
        return cls(client, key,
                   capacity=settings.getint("BLOOMKIT_DUPEFILTER_CAPACITY", DEFAULT_CAPACITY),
                   error_rate=settings.getfloat("BLOOMKIT_DUPEFILTER_ERROR_RATE",
                                                DEFAULT_ERROR_RATE),
                   shards=settings.getint("BLOOMKIT_REDIS_SHARDS", 1),
                   debug=settings.getbool("DUPEFILTER_DEBUG"),
                   fingerprinter=_fingerprinter(crawler), stats=crawler.stats)

    def request_seen(self, request):
        return not self.filter.add(self.request_fingerprint(request))

    def close(self, reason):
        self._set_stat("bloomkit/dupefilter/items", self.filter.card())
