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
    Scrapy's own.) The filter knows when the last crawl was not closed
    cleanly (JOBDIR/requests.bloom.open is still there): it then warns at
    the start, with how many fingerprints it loaded, and sets the stat
    "bloomkit/dupefilter/unclean_start". With BLOOMKIT_DUPEFILTER_REBUILD
    the crawl instead starts from the filter as of the last clean close
    (kept in JOBDIR/requests.bloom.closed), or from an empty one if it
    never closed cleanly: the requests seen since are fetched again, and
    the pages they lead to rebuild the lost queue.

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
    BLOOMKIT_DUPEFILTER_REBUILD     after a crawl that was killed, start
                                    from the filter of the last clean close
                                    (False; see above)
    BLOOMKIT_REDIS_URL              redis://127.0.0.1:6379 (Redis variant)
    BLOOMKIT_REDIS_CLUSTER          connect with RedisCluster (False)
    BLOOMKIT_REDIS_KEY              filter name; "%(spider)s:seen"
    BLOOMKIT_REDIS_SHARDS           shard keys of the filter (1)
    BLOOMKIT_REDIS_RESET            empty the seen-set at start: a new
                                    crawl from scratch (False; set it on one
                                    process only: every process that starts
                                    with it clears what the others saw)
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


# How long a request's claim is kept (seconds): long enough for the retries
# of one lost reply.
CLAIM_SECONDS = 60


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
                 checkpoint=DEFAULT_CHECKPOINT, rebuild=False):
        super().__init__(fingerprinter, debug, stats)
        self.file = os.path.join(path, FILE_NAME) if path else None
        self.checkpoint = checkpoint
        self.rebuild = rebuild
        self._last_save = time.monotonic()
        # Present from the start of a crawl to its clean close: found at the
        # start, it says the last crawl was killed.
        self.marker = self.file + ".open" if self.file else None
        self.closed_copy = self.file + ".closed" if self.file else None
        unclean = bool(self.marker) and os.path.exists(self.marker)
        source = self.file
        if unclean and rebuild:
            source = self.closed_copy
        if source and os.path.exists(source):
            # A damaged file raises bloomkit.CorruptError: better a crawl
            # that stops than one that silently refetches everything.
            self.filter = bloomkit.Filter.load(source)
        else:
            self.filter = bloomkit.Filter(capacity, error_rate, kind=kind)
        if unclean:
            self._set_stat("bloomkit/dupefilter/unclean_start", 1)
            if rebuild:
                logger.warning(
                    "bloomkit dupefilter: the last crawl in %s was not closed cleanly (killed?); "
                    "BLOOMKIT_DUPEFILTER_REBUILD: starting from the filter of its last clean "
                    "close (%d request fingerprints), so the requests seen since are fetched "
                    "again", path, len(self.filter))
            else:
                logger.warning(
                    "bloomkit dupefilter: the last crawl in %s was not closed cleanly (killed?): "
                    "loaded %d request fingerprints, but Scrapy's queue of the requests pending "
                    "then was lost with it, and those requests count as seen; set "
                    "BLOOMKIT_DUPEFILTER_REBUILD = True to fetch again what was seen since the "
                    "last clean close", path, len(self.filter))
        elif source and os.path.exists(source):
            logger.info("bloomkit dupefilter: loaded %d request fingerprints from %s",
                        len(self.filter), source)
        if self.marker:
            with open(self.marker, "w"):
                pass

    @classmethod
    def from_settings(cls, settings, *, fingerprinter=None, stats=None):
        return cls(job_dir(settings),
                   capacity=settings.getint("BLOOMKIT_DUPEFILTER_CAPACITY", DEFAULT_CAPACITY),
                   error_rate=settings.getfloat("BLOOMKIT_DUPEFILTER_ERROR_RATE",
                                                DEFAULT_ERROR_RATE),
                   kind=settings.get("BLOOMKIT_DUPEFILTER_KIND", DEFAULT_KIND),
                   debug=settings.getbool("DUPEFILTER_DEBUG"),
                   fingerprinter=fingerprinter, stats=stats,
                   checkpoint=settings.getfloat("BLOOMKIT_CHECKPOINT", DEFAULT_CHECKPOINT),
                   rebuild=settings.getbool("BLOOMKIT_DUPEFILTER_REBUILD"))

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
            if self.rebuild:
                # what a crawl killed later starts again from
                self.filter.save(self.closed_copy)
            try:
                os.remove(self.marker)
            except FileNotFoundError:
                pass
        info = self.filter.info()
        self._set_stat("bloomkit/dupefilter/items", info["items"])
        self._set_stat("bloomkit/dupefilter/bytes", info["bytes"])


class BloomRedisDupeFilter(_LoggingDupeFilter):
    """Request fingerprints in a Bloom filter kept in Redis (BF.* commands
    of the bloomkit.so module), shared by every crawler process that names
    the same key."""

    def __init__(self, client, key, capacity=DEFAULT_CAPACITY, error_rate=DEFAULT_ERROR_RATE,
                 shards=1, debug=False, *, fingerprinter=None, stats=None, reset=False):
        from bloomkit.redis import ShardedFilter
        super().__init__(fingerprinter, debug, stats)
        if reset:
            try:
                ShardedFilter(client, key).delete()
            except LookupError:
                pass  # nothing to clear
        self.filter = ShardedFilter(client, key, shards=shards, capacity=capacity,
                                    error_rate=error_rate)
        keys = self.filter.keys
        logger.info("bloomkit dupefilter: seen-set %r in Redis%s: %d shard key%s (%s%s) and %s",
                    key, ", cleared at start (BLOOMKIT_REDIS_RESET)" if reset else "",
                    len(keys), "" if len(keys) == 1 else "s", keys[0],
                    " ... " + keys[-1] if len(keys) > 1 else "", self.filter.meta_key)

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
                   fingerprinter=_fingerprinter(crawler), stats=crawler.stats,
                   reset=settings.getbool("BLOOMKIT_REDIS_RESET"))

    def request_seen(self, request):
        # a claim: a retry after a lost reply does not turn a new request
        # into a "seen" one that nobody crawls. Its record (a key of about
        # 150 bytes) is kept a minute, the retries' window: at 1,000
        # requests a second, about 9 MB of them at any time.
        return not self.filter.claim([self.request_fingerprint(request)],
                                     seconds=CLAIM_SECONDS)[0]

    def close(self, reason):
        self._set_stat("bloomkit/dupefilter/items", self.filter.card())
