/*
 * Paged files: a large single-array file whose payload is covered by a
 * checksum per 4 KiB page, the page sums by a checksum per group of 512,
 * and the group sums by the header (docs/FORMAT.md, "Paged files").
 *
 * Why: a crawler's seen-set of a billion URLs is a 2 GB file that a run
 * of a thousand new lines touches in a thousand places. With one checksum
 * over the payload, trusting any bit meant reading all 2 GB first. Here a
 * load maps the file and reads nothing but the header and the group sums
 * (8 KiB for 2 GB); the first key to touch a page has that page's group of
 * sums read and checked (4 KiB), then the page hashed against its sum.
 * Every bit a probe trusts has been checked; what no key touches is never
 * read.
 *
 * A page that fails is replaced in memory by a page of ones: every key on
 * it answers "present" (a lookup may say "seen" wrongly, never "absent"
 * for a key that was added), adds to it are refused with BK_ECORRUPT, and
 * the filter is marked damaged (bk_filter_damage) so that no save writes
 * it and the tool stops with the byte offset.
 */
#define _GNU_SOURCE
#include "pages.h"
#include "keyhash.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- the format ---- */

/* The sum of a page of BKF_PAGE zero bytes, the most common page of a
 * filter that is filling: computed once. */
static uint64_t zero_page_sum(void)
{
    static _Atomic uint64_t sum; /* 0: not yet (XXH3 of zeros is not 0) */
    uint64_t s = sum;
    if (!s) {
        static const uint8_t zeros[BKF_PAGE];
        s = XXH3_64bits(zeros, BKF_PAGE);
        sum = s;
    }
    return s;
}

/* Page j's sum; *zero: whether it is a whole page of zeros. */
static uint64_t page_sum(const bkf_paging_t *g, const uint8_t *body, uint64_t len, uint64_t j,
                         bool *zero)
{
    uint64_t lo, hi;
    bkf_page_span(g, j, &lo, &hi);
    uint64_t a = lo - g->body, b = hi - g->body;
    *zero = false;
    if (b <= len) {
        if (b - a == BKF_PAGE && bkf_all_zero(body + a, BKF_PAGE)) {
            *zero = true;
            return zero_page_sum();
        }
        return XXH3_64bits(body + a, (size_t)(b - a));
    }
    /* the last page: payload bytes, then its zero padding */
    uint8_t buf[BKF_PAGE];
    memset(buf, 0, sizeof buf);
    if (a < len)
        memcpy(buf, body + a, (size_t)(len - a));
    return XXH3_64bits(buf, (size_t)(b - a));
}

uint64_t bkf_page_sum(const bkf_paging_t *g, const uint8_t *body, uint64_t len, uint64_t j)
{
    bool zero;
    return page_sum(g, body, len, j, &zero);
}

uint64_t bkf_group_sum(const bkf_paging_t *g, const uint8_t *trailer, uint64_t i)
{
    uint64_t first = i * BKF_GROUP;
    uint64_t n = g->npages - first < BKF_GROUP ? g->npages - first : BKF_GROUP;
    return XXH3_64bits(trailer + first * 8, (size_t)(n * 8));
}

void bkf_pages_fill(const bkf_paging_t *g, const uint8_t *body, uint64_t len, uint8_t *trailer,
                    uint64_t *groups_sum, uint64_t *zeros)
{
    for (uint64_t j = 0; j < g->npages; j++) {
        bool zero;
        bkf_put_u64(trailer + j * 8, page_sum(g, body, len, j, &zero));
        if (zeros && zero)
            zeros[j >> 6] |= UINT64_C(1) << (j & 63);
    }
    uint8_t *groups = trailer + (g->groups_at - g->trailer);
    for (uint64_t i = 0; i < g->ngroups; i++)
        bkf_put_u64(groups + i * 8, bkf_group_sum(g, trailer, i));
    *groups_sum = XXH3_64bits(groups, (size_t)(g->ngroups * 8));
}

/* Checks a whole paged input: the bytes between the payload and the
 * sums, the trailer's padding, the group sums against the header, each
 * group's sums, each page. body: the payload in memory, or NULL to take
 * it from s->buf. */
bk_status_t bkf_pages_verify(const bkf_meta_t *m, const bkf_source_t *s, const uint8_t *body,
                             const char **why)
{
    bkf_paging_t g;
    bkf_meta_paging(m, &g);
    bkf_part_t p;
    bkf_decode_part(m, 0, &p);
    if (!body)
        body = s->buf + g.body;
    /* the gap after the last part to the sums, then the trailer */
    uint64_t tlen = g.size - g.parts_end;
    uint8_t *t = bki_malloc((size_t)(tlen ? tlen : 1));
    if (!t)
        FAIL(BK_ENOMEM, "out of memory");
    bk_status_t st = bkf_source_read(s, g.parts_end, t, tlen);
    const uint8_t *trailer = t + (g.trailer - g.parts_end);
    const uint8_t *groups = t + (g.groups_at - g.parts_end);
    const char *bad = NULL;
    if (st != BK_OK)
        bad = "read error";
    else if (!bkf_all_zero(t, g.trailer - g.parts_end) ||
             !bkf_all_zero(trailer + g.npages * 8, g.groups_at - g.trailer - g.npages * 8) ||
             !bkf_all_zero(groups + g.ngroups * 8, g.size - g.groups_at - g.ngroups * 8))
        bad = "padding around the page checksums is not zero";
    else if (XXH3_64bits(groups, (size_t)(g.ngroups * 8)) != m->groups_sum)
        bad = "page checksum groups damaged (their checksum does not match the header)";
    for (uint64_t i = 0; !bad && i < g.ngroups; i++)
        if (bkf_group_sum(&g, trailer, i) != bkf_get_u64(groups + i * 8))
            bad = "page checksums damaged (a group does not match its checksum)";
    for (uint64_t j = 0; !bad && j < g.npages; j++)
        if (bkf_page_sum(&g, body, p.length, j) != bkf_get_u64(trailer + j * 8))
            bad = "page checksum mismatch (data damaged)";
    bki_free(t);
    if (bad)
        FAIL(st != BK_OK ? BK_EIO : BK_ECORRUPT, bad);
    return BK_OK;
}

/* ---- a filter checked as it is read ---- */

static inline bool has(const uint64_t *bits, uint64_t j)
{
    return (__atomic_load_n(&bits[j >> 6], __ATOMIC_ACQUIRE) >> (j & 63)) & 1;
}

static inline void mark(uint64_t *bits, uint64_t j)
{
    __atomic_fetch_or(&bits[j >> 6], UINT64_C(1) << (j & 63), __ATOMIC_RELEASE);
}

/* Pages [a, b) replaced by anonymous pages whose payload bytes are all
 * ones: every probe there finds its bits set. The file is not touched (a
 * shared mapping's pages are swapped out of the mapping, not written). */
static void saturate(struct bki_pages *pg, uint64_t a, uint64_t b)
{
    uint8_t *lo = pg->map + (pg->g.first + a) * BKF_PAGE;
    size_t n = (size_t)((b - a) * BKF_PAGE);
    if (!pg->own_map &&
        mmap(lo, n, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
            MAP_FAILED)
        return; /* the bits stay as read: the damage is still reported */
    for (uint64_t j = a; j < b; j++) {
        uint64_t x, y;
        bkf_page_span(&pg->g, j, &x, &y);
        memset(pg->map + x, 0xff, (size_t)(y - x));
        mark(pg->bad, j);
    }
}

static void note_damage(struct bki_pages *pg, uint64_t at, const char *what)
{
    if (pg->damage != BK_OK)
        return;
    pg->damage = BK_ECORRUPT;
    pg->damage_at = at;
    /* A header checksum other than the one read: another program wrote
     * the file in place (a checkpoint) since, not damage. */
    uint8_t b[8];
    bool changed = bkf_pread_all(pg->fd, b, 8, BKF_HEADER + BKF_PART) == BK_OK &&
                   bkf_get_u64(b) != pg->head_sum;
    if (changed)
        snprintf(pg->why, sizeof pg->why,
                 "%s at byte %" PRIu64 ": the file was written in place since it was opened "
                 "(a checkpoint by another program); open it again",
                 what, at);
    else
        snprintf(pg->why, sizeof pg->why, "%s at byte %" PRIu64 " (data damaged)", what, at);
}

/* Group i's page sums read from the file and checked (lock held). */
static bool load_group(struct bki_pages *pg, uint64_t i)
{
    uint64_t first = i * BKF_GROUP;
    uint64_t n = pg->g.npages - first < BKF_GROUP ? pg->g.npages - first : BKF_GROUP;
    uint8_t *dst = pg->trailer + first * 8;
    const uint8_t *groups = pg->trailer + (pg->g.groups_at - pg->g.trailer);
    bool read = bkf_pread_all(pg->fd, dst, n * 8, pg->g.trailer + first * 8) == BK_OK;
    if (!read && !pg->own_map)
        return false; /* truncated under the mapping: check_page_at says why */
    if (!read || XXH3_64bits(dst, (size_t)(n * 8)) != bkf_get_u64(groups + i * 8)) {
        note_damage(pg, pg->g.trailer + first * 8, "page checksums damaged");
        saturate(pg, first, first + n);
        for (uint64_t j = first; j < first + n; j++)
            mark(pg->ok, j);
        pg->nchecked += n;
        return false;
    }
    mark(pg->gok, i);
    return true;
}

/* Page j checked (lock held). Its bytes: at src when the caller read them
 * already (bki_pages_all reads runs of pages at once), else read here:
 * into the filter's memory (own_map), or, for a shared mapping of the
 * file, into a buffer. A shared mapping is never read under the lock: a
 * file truncated under it raises SIGBUS there, which a program may turn
 * into a jump out of the library (Python does), and the lock would stay
 * held. */
static void check_page_at(struct bki_pages *pg, uint64_t j, const uint8_t *src);

static void check_page(struct bki_pages *pg, uint64_t j)
{
    check_page_at(pg, j, NULL);
}

static void check_page_at(struct bki_pages *pg, uint64_t j, const uint8_t *src)
{
    if (has(pg->ok, j))
        return;
    uint64_t i = j / BKF_GROUP;
    if (!has(pg->gok, i) && !load_group(pg, i))
        return;
    uint64_t lo, hi;
    bkf_page_span(&pg->g, j, &lo, &hi);
    bool hole = j >= pg->hole_lo && j < pg->hole_hi; /* its bytes are zeros already */
    uint8_t buf[BKF_PAGE];
    bool unread = false;
    if (!src && pg->own_map) {
        src = pg->map + lo;
        unread = !hole && bkf_pread_all(pg->fd, pg->map + lo, hi - lo, lo) != BK_OK;
    } else if (!src) {
        src = buf;
        unread = bkf_pread_all(pg->fd, buf, hi - lo, lo) != BK_OK;
    }
    if (unread && !pg->own_map) {
        /* The file ended before the page (truncated under the mapping):
         * left unchecked, for the probe to meet the missing page as any
         * access to a shrunken mapping does (SIGBUS, which the program's
         * guard reports: bk_filter_mapping). */
        return;
    } else if (unread) {
        note_damage(pg, lo, "page unreadable");
        saturate(pg, j, j + 1);
    } else if ((hole && hi - lo == BKF_PAGE ? zero_page_sum()
                                            : XXH3_64bits(src, (size_t)(hi - lo))) !=
               bkf_get_u64(pg->trailer + j * 8)) {
        note_damage(pg, lo, "page checksum mismatch");
        saturate(pg, j, j + 1);
    } else if (pg->own_map && (hole || bkf_all_zero(pg->map + lo, hi - lo))) {
        mark(pg->zero, j);
    }
    mark(pg->ok, j);
    pg->nchecked++;
}

uint64_t bkf_sector_sum(const struct bki_pages *pg, uint64_t j, uint32_t k)
{
    uint64_t lo, hi;
    bkf_page_span(&pg->g, j, &lo, &hi);
    uint64_t a = (pg->g.first + j) * BKF_PAGE + (uint64_t)k * BKF_SECTOR, b = a + BKF_SECTOR;
    a = a < lo ? lo : a;
    b = b > hi ? hi : b;
    return a < b ? XXH3_64bits(pg->map + a, (size_t)(b - a)) : 0;
}

/* The slot of page j in the sector-sum table (open addressing). */
static struct bki_sector_sums *slot_of(const struct bki_pages *pg, uint64_t j)
{
    uint64_t mask = pg->sums_cap - 1, i = (j * UINT64_C(0x9E3779B97F4A7C15)) >> 20 & mask;
    while (pg->sums_of[i].page_plus_1 && pg->sums_of[i].page_plus_1 != j + 1)
        i = (i + 1) & mask;
    return &pg->sums_of[i];
}

const uint64_t *bki_pages_sector_sums(const struct bki_pages *pg, uint64_t j)
{
    if (!pg->sums_cap)
        return NULL;
    const struct bki_sector_sums *e = slot_of(pg, j);
    return e->page_plus_1 ? e->sum : NULL;
}

void bki_pages_sector_reset(struct bki_pages *pg)
{
    if (pg->sums_cap)
        memset(pg->sums_of, 0, (size_t)pg->sums_cap * sizeof *pg->sums_of);
    pg->nsums = 0;
}

/* Room for one more entry (the table at most half full). */
static bool sums_room(struct bki_pages *pg)
{
    if (2 * (pg->nsums + 1) <= pg->sums_cap)
        return true;
    uint64_t cap = pg->sums_cap ? 2 * pg->sums_cap : 256;
    struct bki_sector_sums *old = pg->sums_of, *n = bki_calloc((size_t)cap, sizeof *n);
    if (!n)
        return false;
    uint64_t old_cap = pg->sums_cap;
    pg->sums_of = n;
    pg->sums_cap = cap;
    for (uint64_t i = 0; i < old_cap; i++)
        if (old[i].page_plus_1)
            *slot_of(pg, old[i].page_plus_1 - 1) = old[i];
    bki_free(old);
    return true;
}

/* Page j's first write since the last save (lock held): its sectors as
 * the file holds them, hashed before the write changes them. Without
 * memory for them none are kept, and the checkpoint compares the page
 * with the file's bytes instead. */
static void first_write(struct bki_pages *pg, uint64_t j)
{
    if (has(pg->written, j))
        return;
    /* A page the file holds as zeros needs no sums: the checkpoint finds
     * its changed sectors as those that are no longer zero. */
    if (pg->own_map && !has(pg->zero, j) && sums_room(pg)) {
        struct bki_sector_sums *e = slot_of(pg, j);
        if (!e->page_plus_1)
            pg->nsums++;
        e->page_plus_1 = j + 1;
        for (uint32_t k = 0; k < BKF_PAGE_SECTORS; k++)
            e->sum[k] = bkf_sector_sum(pg, j, k);
    }
    mark(pg->written, j);
}

/* Page j may be trusted (checked now if it was not); false if it is
 * damaged. A write marks it for the next save. */
static inline bool touch(struct bki_pages *pg, uint64_t j, bool write)
{
    if (BKI_UNLIKELY(!has(pg->ok, j))) {
        pthread_mutex_lock(&pg->lock);
        bool fresh = !has(pg->ok, j) && pg->own_map && j >= pg->hole_lo && j < pg->hole_hi;
        check_page(pg, j);
        /* A hole's page is first read by a key's lookup, which maps the
         * kernel's zero page, and an add then copies it (a second fault,
         * and a TLB flush on every core the process ran on). Faulted in
         * for writing now, it is one fault and 4 KiB, as a page read from
         * the file is; nothing touches it before it is marked checked.
         * (Only here, where a key asks for the page: a check of every
         * page leaves a hole's pages unmapped.) */
        if (fresh && pg->damage == BK_OK) {
            uint64_t lo, hi;
            bkf_page_span(&pg->g, j, &lo, &hi);
            *(volatile uint8_t *)(pg->map + lo) = 0;
        }
        pthread_mutex_unlock(&pg->lock);
    }
    if (BKI_UNLIKELY(pg->damage != BK_OK) && has(pg->bad, j))
        return false;
    if (write && !has(pg->written, j)) {
        pthread_mutex_lock(&pg->lock);
        first_write(pg, j);
        pthread_mutex_unlock(&pg->lock);
    }
    return true;
}

/* The payload offsets key h reads: a single array kind's reads, or those
 * of the composite a paged file holds (the calls given when attached: a
 * window's bucket, a cuckoo filter's two buckets). */
static uint32_t key_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    const bki_kind_ops_t *ops = bki_kind_ops(f->kind);
    if (ops)
        return ops->reads(f, h, off);
    return f->pages->calls->reads(f, h, off);
}

/* f->touch: the pages of payload bytes [p, p + len) checked (written:
 * marked); bytes outside the file's payload (a sub-filter grown since the
 * load) need nothing. */
static bool pages_touch(const bk_filter_t *f, const uint8_t *p, uint64_t len, bool write)
{
    struct bki_pages *pg = f->pages;
    const uint8_t *body = pg->map + pg->g.body;
    if (len == 0 || p < body || p >= body + (pg->g.end - pg->g.body))
        return true;
    uint64_t a = (pg->g.body + (uint64_t)(p - body)) / BKF_PAGE - pg->g.first;
    uint64_t b = (pg->g.body + (uint64_t)(p - body) + len - 1) / BKF_PAGE - pg->g.first;
    bool fine = true;
    for (uint64_t j = a; j <= b && j < pg->g.npages; j++)
        fine &= touch(pg, j, write);
    return fine;
}

bool bki_pages_key(const bk_filter_t *f, bk_hash_t h, bool write)
{
    struct bki_pages *pg = f->pages;
    uint64_t off[BKI_MAX_READS];
    uint32_t n = key_reads(f, h, off);
    bool fine = true;
    for (uint32_t i = 0; i < n; i++)
        fine &= touch(pg, (pg->g.body + off[i]) / BKF_PAGE - pg->g.first, write);
    return fine;
}

/* A batch's pages not read yet, and their groups of sums, asked of the
 * kernel at once (POSIX_FADV_WILLNEED) before they are read one by one:
 * from a cold disk the reads then overlap instead of waiting in turn. Only
 * for a batch with several such pages (a cached file gains nothing and
 * pays a system call each). */
static void ask_ahead(const bk_filter_t *f, const bk_hash_t *hashes, size_t n)
{
    struct bki_pages *pg = f->pages;
    if (!pg->own_map || pg->nchecked >= pg->g.npages)
        return;
    uint64_t want[256];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 256; i++) {
        uint64_t off[BKI_MAX_READS];
        uint32_t k = key_reads(f, hashes[i], off);
        for (uint32_t r = 0; r < k && m < 256; r++) {
            uint64_t j = (pg->g.body + off[r]) / BKF_PAGE - pg->g.first;
            if (!has(pg->ok, j) && !(j >= pg->hole_lo && j < pg->hole_hi))
                want[m++] = j;
        }
    }
    if (m < 8)
        return;
    for (size_t i = 0; i < m; i++) {
        uint64_t lo, hi, grp = want[i] / BKF_GROUP;
        bkf_page_span(&pg->g, want[i], &lo, &hi);
        (void)posix_fadvise(pg->fd, (off_t)lo, (off_t)(hi - lo), POSIX_FADV_WILLNEED);
        if (!has(pg->gok, grp))
            (void)posix_fadvise(pg->fd, (off_t)(pg->g.trailer + grp * BKF_GROUP * 8),
                                BKF_PAGE, POSIX_FADV_WILLNEED);
    }
}

bool bki_pages_hashes(const bk_filter_t *f, const bk_hash_t *hashes, size_t n, bool write)
{
    bool fine = true;
    for (size_t i = 0; i < n; i += 256) {
        size_t c = n - i < 256 ? n - i : 256;
        ask_ahead(f, hashes + i, c);
        for (size_t j = i; j < i + c; j++)
            fine &= bki_pages_key(f, hashes[j], write);
    }
    return fine;
}

bool bki_pages_keys(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool write)
{
    bool fine = true;
    bk_hash_t h[256];
    for (size_t i = 0; i < n; i += 256) {
        size_t c = n - i < 256 ? n - i : 256;
        for (size_t j = 0; j < c; j++)
            h[j] = bki_key_hash(f->hash, f->seed, keys[i + j].ptr, keys[i + j].len);
        fine &= bki_pages_hashes(f, h, c, write);
    }
    return fine;
}

/* The zeros a paged file keeps between its payload and its page sums,
 * and after the sums (read whole files check them; so does this, once). */
static void check_padding(struct bki_pages *pg)
{
    uint8_t buf[BKF_PAGE];
    uint64_t sums_end = pg->g.trailer + pg->g.npages * 8;
    uint64_t spans[2][2] = {{pg->g.parts_end, pg->g.trailer}, {sums_end, pg->g.groups_at}};
    for (int i = 0; i < 2; i++) {
        uint64_t a = spans[i][0], b = spans[i][1];
        if (a >= b)
            continue;
        if (bkf_pread_all(pg->fd, buf, b - a, a) != BK_OK) {
            /* a shared mapping's file truncated under it: the mapping's
             * own access reports that (check_page_at) */
            if (pg->own_map)
                note_damage(pg, a, "unreadable");
        } else if (!bkf_all_zero(buf, b - a)) {
            note_damage(pg, a, "padding around the page checksums is not zero");
        }
    }
}

bk_status_t bki_pages_all(const bk_filter_t *f, const char **why)
{
    struct bki_pages *pg = f->pages;
    if (!pg)
        return BK_OK;
    if (!pg->padding_checked) {
        pthread_mutex_lock(&pg->lock);
        check_padding(pg);
        pg->padding_checked = true;
        pthread_mutex_unlock(&pg->lock);
    }
    if (pg->nchecked < pg->g.npages) {
        /* a shared mapping's runs are read into a buffer, not the mapping */
        uint8_t *buf = pg->own_map ? NULL : bki_malloc((size_t)1024 * BKF_PAGE);
        pthread_mutex_lock(&pg->lock);
        for (uint64_t j = 0; j < pg->g.npages;) {
            /* a run of unread pages, read in one call (up to 4 MiB) */
            uint64_t e = j;
            while (e < pg->g.npages && e - j < 1024 && !has(pg->ok, e) &&
                   !(e >= pg->hole_lo && e < pg->hole_hi))
                e++;
            uint64_t lo = 0, hi = 0, x;
            const uint8_t *run = NULL;
            if (e > j) {
                bkf_page_span(&pg->g, j, &lo, &x);
                bkf_page_span(&pg->g, e - 1, &x, &hi);
                uint8_t *to = pg->own_map ? pg->map + lo : buf;
                if (to && bkf_pread_all(pg->fd, to, hi - lo, lo) == BK_OK)
                    run = to;
            }
            for (uint64_t i = j; i < (e > j ? e : j + 1); i++) {
                uint64_t a;
                bkf_page_span(&pg->g, i, &a, &x);
                check_page_at(pg, i, run ? run + (a - lo) : NULL);
            }
            j = e > j ? e : j + 1;
        }
        pthread_mutex_unlock(&pg->lock);
        bki_free(buf);
    }
    if (pg->damage != BK_OK)
        FAIL(pg->damage, pg->why);
    return BK_OK;
}

void bki_pages_mark_all_written(const bk_filter_t *f)
{
    struct bki_pages *pg = f->pages;
    pthread_mutex_lock(&pg->lock);
    /* each page read first: its sectors as the file holds them are what
     * the next checkpoint compares with */
    for (uint64_t j = 0; j < pg->g.npages; j++) {
        check_page(pg, j);
        first_write(pg, j);
    }
    pthread_mutex_unlock(&pg->lock);
}

/* The one-key calls of a filter read from a paged file: the key's pages
 * checked, then the kind's own call. */
static bk_status_t paged_add_key(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    if (!f->readonly && !bki_pages_key(f, bki_key_hash(f->hash, f->seed, key, len), true)) {
        if (was_new)
            *was_new = false;
        return BK_ECORRUPT;
    }
    return f->pages->add_key(f, key, len, was_new);
}

/* A key on a damaged page is "present": a Bloom filter's damaged page
 * reads as ones anyway; a cuckoo filter's ones are one fingerprint. */
static bool paged_contains_key(const bk_filter_t *f, const void *key, size_t len)
{
    bool fine = bki_pages_key(f, bki_key_hash(f->hash, f->seed, key, len), false);
    return f->pages->contains_key(f, key, len) || !fine;
}

static bool paged_contains_hash(const bk_filter_t *f, bk_hash_t h)
{
    bool fine = bki_pages_key(f, h, false);
    return f->pages->contains_hash(f, h) || !fine;
}

void bki_pages_bind(bk_filter_t *f)
{
    struct bki_pages *pg = f->pages;
    /* Bound already (a mapping rebinds after its read-only calls, which a
     * cuckoo filter, binding its own when made, leaves as they were). */
    if (f->contains_key == paged_contains_key)
        return;
    pg->add_key = f->add_key;
    pg->contains_key = f->contains_key;
    pg->contains_hash = f->contains_hash;
    f->add_key = paged_add_key;
    f->contains_key = paged_contains_key;
    f->contains_hash = paged_contains_hash;
    f->u64 = NULL; /* 64-bit keys as their bytes, through the calls above */
}

static uint64_t *bits_for(uint64_t n)
{
    return bki_calloc((size_t)((n + 63) / 64 + 1), sizeof(uint64_t));
}

void bki_pages_free(struct bki_pages *pg)
{
    if (!pg)
        return;
    if (pg->trailer)
        munmap(pg->trailer, (size_t)pg->trailer_len);
    bki_free(pg->sums_of);
    bki_free(pg->zero);
    if (pg->own_map && pg->map)
        munmap(pg->map, (size_t)pg->map_len);
    if (pg->fd >= 0)
        close(pg->fd);
    bki_free(pg->ok);
    bki_free(pg->written);
    bki_free(pg->bad);
    bki_free(pg->gok);
    pthread_mutex_destroy(&pg->lock);
    bki_free(pg);
}

/* Before a change that rewrites every page (a window's generation step):
 * its pages all read and checked, and marked for the next checkpoint (a
 * damaged one stays reported). */
static void before_every_page(void *arg)
{
    bk_filter_t *f = arg;
    (void)bki_pages_all(f, NULL);
    bki_pages_mark_all_written(f);
}

bk_status_t bki_pages_attach(bk_filter_t *f, int fd, const bkf_meta_t *m, const uint8_t *meta,
                             uint8_t *map, uint64_t map_len, bool own_map,
                             const bki_page_calls_t *calls, const char **why)
{
    struct bki_pages *pg = bki_calloc(1, sizeof *pg);
    if (!pg) {
        close(fd);
        FAIL(BK_ENOMEM, "out of memory");
    }
    pg->fd = fd;
    pg->map = map;
    pg->map_len = map_len;
    pg->own_map = own_map;
    pg->calls = calls;
    pthread_mutex_init(&pg->lock, NULL);
    bkf_meta_paging(m, &pg->g);
    pg->trailer_len = pg->g.size - pg->g.trailer;
    /* Anonymous and lazily zeroed: a run that touches a few groups holds
     * only their pages of sums. */
    void *t = mmap(NULL, (size_t)pg->trailer_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pg->trailer = t == MAP_FAILED ? NULL : t;
    if (pg->trailer)
        (void)madvise(pg->trailer, (size_t)pg->trailer_len, MADV_NOHUGEPAGE);
    pg->ok = bits_for(pg->g.npages);
    pg->written = bits_for(pg->g.npages);
    pg->bad = bits_for(pg->g.npages);
    pg->gok = bits_for(pg->g.ngroups);
    pg->zero = bits_for(pg->g.npages);
    if (!pg->trailer || !pg->ok || !pg->written || !pg->bad || !pg->gok || !pg->zero) {
        pg->own_map = false; /* the caller unmaps on error */
        bki_pages_free(pg);
        FAIL(BK_ENOMEM, "out of memory");
    }
    uint8_t *groups = pg->trailer + (pg->g.groups_at - pg->g.trailer);
    uint64_t glen = pg->g.size - pg->g.groups_at;
    bk_status_t st = bkf_pread_all(fd, groups, glen, pg->g.groups_at);
    const char *bad = st != BK_OK ? "read error" : NULL;
    if (!bad && XXH3_64bits(groups, (size_t)(pg->g.ngroups * 8)) != m->groups_sum)
        bad = "page checksum groups damaged (their checksum does not match the header)";
    if (!bad && !bkf_all_zero(groups + pg->g.ngroups * 8, glen - pg->g.ngroups * 8))
        bad = "padding around the page checksums is not zero";
    struct stat sb;
    if (!bad && fstat(fd, &sb) != 0)
        bad = "cannot stat the file";
    if (bad) {
        pg->own_map = false;
        bki_pages_free(pg);
        FAIL(st != BK_OK ? BK_EIO : BK_ECORRUPT, bad);
    }
    pg->dev = sb.st_dev;
    pg->ino = sb.st_ino;
    /* Pages are read one at a time where keys fall: read-ahead around
     * each would read (and cache, in large folios that a checkpoint's
     * small writes then write back whole) what no key asked for. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    if (own_map) {
        /* A new state is one hole from its first whole page to its page
         * sums: those pages are zeros without reading them (still held
         * to their sums). */
        uint64_t a = bkf_align_page(pg->g.body);
        off_t d = lseek(fd, (off_t)a, SEEK_DATA);
        if (d > (off_t)a) {
            pg->hole_lo = a / BKF_PAGE - pg->g.first;
            pg->hole_hi = (uint64_t)d / BKF_PAGE - pg->g.first;
        }
    }
    pg->head_sum = bkf_get_u64(meta + BKF_HEADER + (uint64_t)BKF_PART * m->nparts);
    pg->nparts = m->nparts;
    f->pages = pg;
    f->touch = pages_touch;
    if (calls && calls->attached)
        calls->attached(f, own_map, before_every_page, f);
    bki_pages_bind(f);
    return BK_OK;
}

uint64_t bki_pages_written(const struct bki_pages *pg)
{
    uint64_t n = 0;
    for (uint64_t w = 0; w < (pg->g.npages + 63) / 64; w++)
        n += (uint64_t)__builtin_popcountll(__atomic_load_n(&pg->written[w], __ATOMIC_ACQUIRE));
    return n;
}

void bki_pages_regroup(struct bki_pages *pg, uint64_t i)
{
    uint8_t *groups = pg->trailer + (pg->g.groups_at - pg->g.trailer);
    bkf_put_u64(groups + i * 8, bkf_group_sum(&pg->g, pg->trailer, i));
}

uint64_t bki_pages_groups_sum(const struct bki_pages *pg)
{
    const uint8_t *groups = pg->trailer + (pg->g.groups_at - pg->g.trailer);
    return XXH3_64bits(groups, (size_t)(pg->g.ngroups * 8));
}

/* ---- public API ---- */

bk_status_t bk_filter_damage(const bk_filter_t *f, const char **why)
{
    if (!f)
        FAIL(BK_EINVAL, "invalid argument");
    if (f->pages && f->pages->damage != BK_OK)
        FAIL(f->pages->damage, f->pages->why);
    return BK_OK;
}

void bk_filter_pages(const bk_filter_t *f, uint64_t *checked, uint64_t *total)
{
    const struct bki_pages *pg = f ? f->pages : NULL;
    if (checked)
        *checked = pg ? pg->nchecked : 0;
    if (total)
        *total = pg ? pg->g.npages : 0;
}
