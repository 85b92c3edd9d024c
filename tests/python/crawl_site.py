"""Crawls a site with Scrapy in this process and prints the crawl's stats
as one JSON line. Run by test_scrapy.py in a subprocess (Twisted's reactor
cannot be restarted within one process).
    crawl_site.py START_URL SETTINGS_JSON"""
import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess


class SiteSpider(scrapy.Spider):
    name = "site"

    def start_requests(self):
        # dont_filter=False: the start page goes through the dupefilter as
        # well, so a resumed crawl does not fetch it again.
        yield scrapy.Request(self.start_url, dont_filter=False)

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)


def main():
    start_url, settings = sys.argv[1], json.loads(sys.argv[2])
    base = {"LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7", "DOWNLOAD_DELAY": 0}
    base.update(settings)
    process = CrawlerProcess(base)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start_url=start_url)
    process.start()
    print(json.dumps(crawler.stats.get_stats(), default=str))


if __name__ == "__main__":
    main()
