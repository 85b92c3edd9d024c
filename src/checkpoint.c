/*
 * Checkpoints that write what changed (bk_checkpoint_*); finishing one that
 * a killed writer left half done is journal.c's (bkf_settle, run by every
 * load and open of a filter file).
 *
 * Why: a crawler's seen-set of a billion keys is a 2 GB file saved every
 * 30 s; rewriting it whole costs 2 GB of writes for the few thousand keys
 * that arrived since. A checkpoint instead finds the 512-byte sectors of
 * the serialized form that differ from what it last wrote, by a 64-bit
 * XXH3 of each sector it keeps (1/64 of the file; nothing is added to the
 * add path), and writes only those, in place, made crash-safe by a redo
 * journal next to the file (docs/FORMAT.md, "Checkpoint journal"):
 *
 *   1. lock the file (an OFD write lock on one byte far past its end, which
 *      loads take shared) and check it is still the file last written;
 *      retire a settled journal whose file is on disk (step 5), or keep it
 *      to append to;
 *   2. allocate the blocks the changed sectors need, so that a full disk
 *      fails here, with the file untouched;
 *   3. write a journal segment to PATH-journal (a new journal, or appended
 *      to the kept one): the changed runs, then a checksum; fsync it (and
 *      the directory, for a new journal). The checkpoint is durable now;
 *   4. write the runs into the file;
 *   5. append a settled record (this boot's id) to the journal, and leave
 *      the file's sync to the kernel's writeback. A large checkpoint into
 *      a filling file writes scattered pages, one block each, and their
 *      sync was most of its time (0.33 of 0.92 s for a billion-URL state's
 *      first 50,000 URLs). A later checkpoint retires the journal (fsync
 *      the file, remove the journal, fsync the directory, so a removed
 *      journal never comes back to be replayed over a later state) once
 *      the file is written back (journal.c, worth_retiring), or once the
 *      journal reaches the file's size (cp_jmax: 1 to 64 MiB).
 *
 * Killed before step 3 ends, the file is as it was and the journal is
 * absent or ends in a torn segment that nothing depends on; after, every
 * load replays the journal before reading (replaying is idempotent),
 * except that a journal settled in this boot means this kernel holds
 * every run in the file already: it is read as it is, by any reader,
 * write access or not. After a restart (another boot id) the journal is
 * replayed, every segment in order. Between checkpoints the file is an
 * ordinary bloomkit file: the format does not change. A checkpoint is an
 * ordinary atomic save instead when that writes less (most sectors
 * changed), the layout changed (a scalable filter grew), or the file is not
 * the one last written (replaced, or written by someone else).
 */
#define _GNU_SOURCE
#include "journal.h"
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define CP_SECTOR 512u
#define CP_PAGE 4096u
#define CP_CHUNK (64u * CP_SECTOR) /* hashed while in cache, twice */

/* Tests only (tests/unit/lib/test_checkpoint.c): make the next in-place
 * checkpoint stop as a killed process would, 1 with its journal half
 * written, 2 with the journal whole and half of the runs written. */
BKI_HIDDEN int bki_checkpoint_crash;

struct bk_checkpoint {
    char *target;  /* the file, links followed */
    char *journal; /* target + "-journal" */
    char *dir;     /* their directory */
    uint64_t size; /* serialized size the shadow describes; 0: none */
    uint64_t nsectors;
    uint64_t *shadow;  /* XXH3-64 of each sector as the file holds it */
    uint64_t head_sum; /* the file's header checksum as last written */
    uint8_t *trailer;  /* a paged file's page and group sums as last
                          scanned (g.trailer to the end) */
    uint64_t trailer_len;
    dev_t dev;
    ino_t ino;
};

/* ---- finding what changed ---- */

/* One payload as the file holds it. */
typedef struct cp_part {
    uint64_t off, len;
    const uint8_t *data;
} cp_part_t;

typedef struct cp_change {
    uint64_t sector, hash;
} cp_change_t;

/* One pass over a filter's serialized form. */
typedef struct cp_scan {
    bkf_obj_t o;
    uint64_t total, mlen, nsectors;
    cp_part_t *parts;
    uint32_t nregions; /* parts, and a paged file's page sums after them */
    uint64_t *sums;
    uint8_t *meta;        /* mlen bytes, encoded with sums */
    bkf_paging_t g;       /* o.paged: where the page sums lie */
    const struct bki_pages *pg; /* a filter read from a paged file: its
                                   pages that may be holes are the only
                                   ones whose blocks need allocating */
    uint8_t *trailer;     /* o.paged: the page and group sums (the
                             checkpointer's, updated by the scan) */
    cp_change_t *changes; /* sectors whose hash differs from the shadow */
    uint64_t nchanges, cap;
    bool others_changed; /* a paged scan: a part after the paged one (a
                            window's state) differs from the file */
} cp_scan_t;

static void scan_free(cp_scan_t *c)
{
    bki_free(c->parts);
    bki_free(c->sums);
    bki_free(c->meta);
    bki_free(c->changes);
}

static bool note_change(cp_scan_t *c, uint64_t sector, uint64_t hash)
{
    if (c->nchanges == c->cap) {
        uint64_t cap = c->cap ? 2 * c->cap : 1024;
        cp_change_t *n = bki_realloc(c->changes, (size_t)(c->cap * sizeof *n), (size_t)(cap * sizeof *n));
        if (!n)
            return false;
        c->changes = n;
        c->cap = cap;
    }
    c->changes[c->nchanges++] = (cp_change_t){sector, hash};
    return true;
}

/* Records sector s's hash h: into the shadow (building) or as a change. */
static bool visit(cp_scan_t *c, uint64_t *shadow, bool build, uint64_t s, uint64_t h)
{
    if (build) {
        shadow[s] = h;
        return true;
    }
    return shadow[s] == h || note_change(c, s, h);
}

static uint32_t sector_len(const cp_scan_t *c, uint64_t s)
{
    uint64_t left = c->total - s * CP_SECTOR;
    return left < CP_SECTOR ? (uint32_t)left : CP_SECTOR;
}

/* The first part (or region) ending after byte a, by bisection. */
static uint32_t part_after(const cp_scan_t *c, uint64_t a)
{
    uint32_t lo = 0, hi = c->nregions;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->parts[mid].off + c->parts[mid].len <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The serialized form's bytes [a, a + n) where they lie whole in one
 * part's memory (no metadata, no padding): a pointer to them, written
 * from without a copy (a paged checkpoint's runs nearly all are); else
 * NULL. */
static const uint8_t *range_in_part(const cp_scan_t *c, uint64_t a, uint64_t n)
{
    if (a < c->mlen)
        return NULL;
    uint32_t i = part_after(c, a);
    if (i < c->nregions && c->parts[i].off <= a && a + n <= c->parts[i].off + c->parts[i].len)
        return c->parts[i].data + (a - c->parts[i].off);
    return NULL;
}

/* Sector s's bytes into buf: metadata, payload bytes and zero padding. */
static void fill_sector(const cp_scan_t *c, uint64_t s, uint8_t *buf)
{
    uint64_t a = s * CP_SECTOR;
    uint32_t n = sector_len(c, s);
    memset(buf, 0, n);
    bkf_copy_overlap(buf, a, n, c->meta, 0, c->mlen);
    for (uint32_t i = part_after(c, a); i < c->nregions && c->parts[i].off < a + n; i++)
        bkf_copy_overlap(buf, a, n, c->parts[i].data, c->parts[i].off, c->parts[i].len);
}

/* Prepares a scan of f: its layout and parts; a large single array's as
 * the paged file a save writes, its page sums in cp's trailer. */
static bk_status_t scan_init(cp_scan_t *c, const bk_filter_t *f, bk_checkpoint_t *cp)
{
    memset(c, 0, sizeof *c);
    bk_status_t st = bkf_obj_from_filter(&c->o, f);
    if (st != BK_OK)
        return st;
    c->total = bkf_obj_size(&c->o);
    c->mlen = bkf_meta_len(c->o.nparts);
    c->nsectors = (c->total + CP_SECTOR - 1) / CP_SECTOR;
    if (c->total > SIZE_MAX / 2)
        return BK_ENOMEM;
    c->nregions = c->o.nparts;
    c->parts = bki_calloc(c->o.nparts + 1, sizeof *c->parts);
    c->sums = bki_calloc(c->o.nparts, sizeof *c->sums);
    c->meta = bki_malloc((size_t)c->mlen);
    if (!c->parts || !c->sums || !c->meta)
        return BK_ENOMEM;
    uint64_t off = c->mlen;
    for (uint32_t i = 0; i < c->o.nparts; i++) {
        bkf_part_t p;
        bkf_obj_part(&c->o, i, &p);
        c->parts[i] = (cp_part_t){off, p.length, p.data};
        off += bkf_align64(p.length);
    }
    if (bkf_obj_pageable(&c->o)) {
        c->o.paged = true;
        bkf_obj_paging(&c->o, &c->g);
        uint64_t tlen = c->g.size - c->g.trailer;
        if (cp->trailer_len != tlen) {
            bki_free(cp->trailer);
            cp->trailer = bki_calloc(1, (size_t)tlen);
            cp->trailer_len = cp->trailer ? tlen : 0;
            if (!cp->trailer)
                return BK_ENOMEM;
        }
        c->trailer = cp->trailer;
        c->total = c->g.size;
        c->nsectors = (c->total + CP_SECTOR - 1) / CP_SECTOR;
        c->parts[c->nregions++] = (cp_part_t){c->g.trailer, tlen, cp->trailer};
    }
    return BK_OK;
}

/* A paged scan, once the payload sectors are compared: the sums of the
 * pages they changed (every page when building) and of their groups. */
static void scan_pages(cp_scan_t *c, bool build)
{
    const cp_part_t *p = &c->parts[0];
    if (build) {
        bkf_pages_fill(&c->g, p->data, p->len, c->trailer, &c->o.groups_sum, NULL);
        return;
    }
    uint8_t *groups = c->trailer + (c->g.groups_at - c->g.trailer);
    /* The pages of the changed sectors, in order, and before and after
     * them the pages holding the payload's first and last bytes: the
     * sectors those share with the metadata or the padding are compared
     * only after this (scan_run), so a change there is not among the
     * changes yet, and the page's sum must not be left as it was. */
    if (p->len == 0)
        return;
    uint64_t head = p->off / BKF_PAGE - c->g.first;
    uint64_t tail = (p->off + p->len - 1) / BKF_PAGE - c->g.first;
    uint64_t last = UINT64_MAX, last_group = UINT64_MAX;
    for (uint64_t i = 0; i < c->nchanges + 2; i++) {
        uint64_t j = head;
        if (i > c->nchanges)
            j = tail;
        else if (i > 0)
            j = c->changes[i - 1].sector * CP_SECTOR / BKF_PAGE - c->g.first;
        if (j == last || j >= c->g.npages)
            continue;
        last = j;
        bkf_put_u64(c->trailer + j * 8, bkf_page_sum(&c->g, p->data, p->len, j));
        if (j / BKF_GROUP != last_group && last_group != UINT64_MAX)
            bkf_put_u64(groups + last_group * 8, bkf_group_sum(&c->g, c->trailer, last_group));
        last_group = j / BKF_GROUP;
    }
    if (last_group != UINT64_MAX)
        bkf_put_u64(groups + last_group * 8, bkf_group_sum(&c->g, c->trailer, last_group));
    c->o.groups_sum = XXH3_64bits(groups, (size_t)(c->g.ngroups * 8));
}

/* Hashes every sector of the serialized form once, computing the payload
 * checksums on the way (the same pass): into shadow (build) or comparing
 * with it. Sectors wholly inside a payload are hashed in place; the rest
 * (metadata, payload edges and padding) are assembled first. */
static bk_status_t scan_run(cp_scan_t *c, uint64_t *shadow, bool build)
{
    for (uint32_t i = 0; i < c->o.nparts; i++) {
        const cp_part_t *p = &c->parts[i];
        uint64_t first = (p->off + CP_SECTOR - 1) / CP_SECTOR;
        uint64_t end = (p->off + p->len) / CP_SECTOR;
        /* (a paged file's payload has no checksum of its own: computed
         * and ignored) */
        XXH3_state_t sum;
        XXH3_64bits_reset(&sum);
        if (end <= first) {
            XXH3_64bits_update(&sum, p->data, (size_t)p->len);
        } else {
            uint64_t head = first * CP_SECTOR - p->off;
            XXH3_64bits_update(&sum, p->data, (size_t)head);
            for (uint64_t s = first; s < end; s += CP_CHUNK / CP_SECTOR) {
                uint64_t n = end - s < CP_CHUNK / CP_SECTOR ? end - s : CP_CHUNK / CP_SECTOR;
                const uint8_t *q = p->data + (s * CP_SECTOR - p->off);
                XXH3_64bits_update(&sum, q, (size_t)(n * CP_SECTOR));
                for (uint64_t k = 0; k < n; k++)
                    if (!visit(c, shadow, build, s + k, XXH3_64bits(q + k * CP_SECTOR, CP_SECTOR)))
                        return BK_ENOMEM;
            }
            uint64_t tail = end * CP_SECTOR - p->off;
            XXH3_64bits_update(&sum, p->data + tail, (size_t)(p->len - tail));
        }
        c->sums[i] = XXH3_64bits_digest(&sum);
    }
    if (c->o.paged)
        scan_pages(c, build);
    c->o.sums = c->sums;
    bkf_encode_meta(&c->o, c->meta);
    /* the sectors no payload holds whole */
    uint8_t buf[CP_SECTOR];
    uint64_t s = 0;
    for (uint32_t i = 0; i <= c->o.nparts; i++) {
        uint64_t first = c->nsectors, end = c->nsectors;
        if (i < c->o.nparts) {
            const cp_part_t *p = &c->parts[i];
            first = (p->off + CP_SECTOR - 1) / CP_SECTOR;
            end = (p->off + p->len) / CP_SECTOR;
            if (end <= first)
                continue;
        }
        for (; s < first; s++) {
            fill_sector(c, s, buf);
            if (!visit(c, shadow, build, s, XXH3_64bits(buf, sector_len(c, s))))
                return BK_ENOMEM;
        }
        s = end;
    }
    return BK_OK;
}

static int by_sector(const void *a, const void *b)
{
    uint64_t x = ((const cp_change_t *)a)->sector, y = ((const cp_change_t *)b)->sector;
    return x < y ? -1 : x > y;
}

static uint64_t header_sum(const cp_scan_t *c)
{
    return get_u64(c->meta + BKF_HEADER + (uint64_t)BKF_PART * c->o.nparts);
}

/* ---- writing ---- */

/* Buffered, checksummed writes of the journal, JW_BUF bytes a write: the
 * journal's bytes are the same at any size, and a small checkpoint (a
 * run's thousand pages: 1.5 MB of journal) then holds a quarter of the
 * memory for it that a CP_BUF one did. */
#define JW_BUF ((size_t)256 << 10)
typedef struct jwriter {
    int fd;
    uint8_t *buf;
    size_t used;
    uint64_t written;
    XXH3_state_t sum;
    bk_status_t st;
} jwriter_t;

static void jw_put(jwriter_t *w, const void *src, uint64_t n)
{
    const uint8_t *p = src;
    XXH3_64bits_update(&w->sum, p, (size_t)n);
    while (n > 0 && w->st == BK_OK) {
        size_t k = JW_BUF - w->used < n ? JW_BUF - w->used : (size_t)n;
        memcpy(w->buf + w->used, p, k);
        w->used += k;
        p += k;
        n -= k;
        if (w->used == JW_BUF) {
            w->st = bkf_pwrite_all(w->fd, w->buf, w->used, w->written);
            w->written += w->used;
            w->used = 0;
        }
    }
}

static bk_status_t jw_flush(jwriter_t *w)
{
    if (w->st == BK_OK && w->used) {
        w->st = bkf_pwrite_all(w->fd, w->buf, w->used, w->written);
        w->written += w->used;
        w->used = 0;
    }
    return w->st;
}

/* A run: sectors [first, end) that all changed. */
static uint64_t run_end(const cp_scan_t *c, uint64_t i)
{
    uint64_t j = i + 1;
    while (j < c->nchanges && c->changes[j].sector == c->changes[j - 1].sector + 1)
        j++;
    return j;
}

static uint64_t run_bytes(const cp_scan_t *c, uint64_t i, uint64_t j)
{
    uint64_t a = c->changes[i].sector * CP_SECTOR;
    uint64_t b = c->changes[j - 1].sector * CP_SECTOR + sector_len(c, c->changes[j - 1].sector);
    return b - a;
}

/* The bytes [a, a + n) of the serialized form into buf (n <= CP_BUF). */
static void fill_range(const cp_scan_t *c, uint64_t a, uint64_t n, uint8_t *buf)
{
    for (uint64_t s = a / CP_SECTOR; s * CP_SECTOR < a + n; s++)
        fill_sector(c, s, buf + (s * CP_SECTOR - a));
}

/* The serialized form's bytes [a, a + n): where they lie in one part's
 * memory, or else filled into buf (CP_BUF bytes). */
static const uint8_t *range_bytes(const cp_scan_t *c, uint64_t a, uint64_t n, uint8_t *buf)
{
    const uint8_t *in = range_in_part(c, a, n);
    if (in)
        return in;
    fill_range(c, a, n, buf);
    return buf;
}

/* Writes the journal segment of the changes at journal offset at (0, or
 * the end of the segments a settled journal holds): header, runs,
 * checksum; synced. *seg_sum: its checksum; *end: where it ends. */
static bk_status_t write_journal(const cp_scan_t *c, int jfd, uint64_t at, uint64_t ino,
                                 uint64_t old_sum, uint8_t *buf, uint8_t *data,
                                 uint64_t *seg_sum, uint64_t *end)
{
    jwriter_t w = {.fd = jfd, .buf = buf, .written = at};
    XXH3_64bits_reset(&w.sum);
    uint64_t nruns = 0;
    for (uint64_t i = 0; i < c->nchanges; i = run_end(c, i))
        nruns++;
    uint8_t h[CP_JHEAD] = {0};
    memcpy(h + J_MAGIC, cp_jmagic, 8);
    put_u32(h + J_VERSION, CP_JVERSION);
    put_u64(h + J_FILESIZE, c->total);
    put_u64(h + J_INODE, ino);
    put_u64(h + J_HEADSUM, header_sum(c));
    put_u64(h + J_NRUNS, nruns);
    put_u64(h + J_OLDSUM, old_sum);
    put_u64(h + J_SUMAT, BKF_HEADER + (uint64_t)BKF_PART * c->o.nparts);
    jw_put(&w, h, CP_JHEAD);
    for (uint64_t i = 0, j; i < c->nchanges && w.st == BK_OK; i = j) {
        j = run_end(c, i);
        uint64_t a = c->changes[i].sector * CP_SECTOR, len = run_bytes(c, i, j);
        uint8_t e[CP_JRUN];
        put_u64(e, a);
        put_u64(e + 8, len);
        jw_put(&w, e, CP_JRUN);
        for (uint64_t done = 0; done < len; done += CP_BUF) {
            uint64_t n = len - done < CP_BUF ? len - done : CP_BUF;
            jw_put(&w, range_bytes(c, a + done, n, data), n);
        }
    }
    uint8_t sum[8];
    *seg_sum = XXH3_64bits_digest(&w.sum);
    put_u64(sum, *seg_sum);
    jw_put(&w, sum, 8);
    bk_status_t st = jw_flush(&w);
    *end = w.written;
    if (st == BK_OK && ftruncate(jfd, (off_t)w.written) != 0)
        st = bkf_errno_status();
    if (st == BK_OK && fdatasync(jfd) != 0)
        st = bkf_errno_status();
    return st;
}

/* Whether file bytes [a, a + len) of a filter read from a paged file may
 * lie in a hole: a payload page read as zeros. Everything else there was
 * written when the file was saved. */
static bool may_be_hole(const struct bki_pages *pg, uint64_t a, uint64_t len)
{
    for (uint64_t p = a / BKF_PAGE; p * BKF_PAGE < a + len; p++) {
        if (p < pg->g.first || p - pg->g.first >= pg->g.npages)
            continue;
        uint64_t j = p - pg->g.first;
        if ((pg->zero[j >> 6] >> (j & 63)) & 1)
            return true;
    }
    return false;
}

/* Whether the file system has room to spare for every page the runs of a
 * paged checkpoint may allocate: twice that and 64 MiB more. Then their
 * blocks are not allocated one run at a time (a system call each, a
 * fifth of a new state's first checkpoint); the journal, written first,
 * still holds every run if the disk fills meanwhile. */
static bool ample_room(const cp_scan_t *c, int fd)
{
    uint64_t need = 0;
    for (uint64_t i = 0, j; i < c->nchanges; i = j) {
        j = run_end(c, i);
        uint64_t a = c->changes[i].sector * CP_SECTOR;
        if (may_be_hole(c->pg, a, run_bytes(c, i, j)))
            need += 2 * CP_PAGE; /* a run may straddle two pages */
    }
    struct statvfs v;
    return fstatvfs(fd, &v) == 0 &&
           (uint64_t)v.f_bavail * v.f_frsize / 2 > need + (UINT64_C(64) << 20);
}

/* Allocates the file's blocks under every run (a full disk fails here,
 * before anything is written), or writes the runs. */
static bk_status_t each_run(const cp_scan_t *c, int fd, uint8_t *data, bool write)
{
    if (!write && c->pg && ample_room(c, fd))
        return BK_OK;
    for (uint64_t i = 0, j; i < c->nchanges; i = j) {
        j = run_end(c, i);
        uint64_t a = c->changes[i].sector * CP_SECTOR, len = run_bytes(c, i, j);
        if (!write) {
            if (c->pg && !may_be_hole(c->pg, a, len))
                continue;
            if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)len) != 0 &&
                errno != EOPNOTSUPP && errno != ENOSYS)
                return bkf_errno_status();
            continue;
        }
        for (uint64_t done = 0; done < len; done += CP_BUF) {
            uint64_t n = len - done < CP_BUF ? len - done : CP_BUF;
            bk_status_t st = bkf_pwrite_all(fd, range_bytes(c, a + done, n, data), n, a + done);
            if (st != BK_OK)
                return st;
        }
    }
    return BK_OK;
}

/* The 4 KiB file pages the changes lie in, and the journal's size. */
static void change_costs(const cp_scan_t *c, uint64_t *pages, uint64_t *journal)
{
    *pages = 0;
    *journal = CP_JHEAD + 8;
    uint64_t last_page = UINT64_MAX;
    for (uint64_t i = 0, j; i < c->nchanges; i = j) {
        j = run_end(c, i);
        *journal += CP_JRUN + run_bytes(c, i, j);
        for (uint64_t k = i; k < j; k++) {
            uint64_t page = c->changes[k].sector * CP_SECTOR / CP_PAGE;
            if (page != last_page)
                (*pages)++;
            last_page = page;
        }
    }
}

/* The state a process killed inside a checkpoint leaves (tests): its
 * journal segment, [at, end), torn or whole. */
static bk_status_t crash(const cp_scan_t *c, int fd, int jfd, uint64_t at, uint64_t end,
                         uint8_t *buf, uint8_t *data)
{
    if (bki_checkpoint_crash == 1)
        (void)ftruncate(jfd, (off_t)(at + (end - at) / 2));
    if (bki_checkpoint_crash == 2) {
        cp_scan_t half = *c;
        half.nchanges = c->nchanges / 2;
        (void)each_run(&half, fd, data, true);
    }
    bki_checkpoint_crash = 0;
    close(jfd);
    bki_free(buf);
    bki_free(data);
    errno = EIO;
    return BK_EIO;
}

/* The journal a checkpoint writes its segment to, under the write lock:
 * the settled one bkf_journal_finish kept (append: its size), opened again
 * as that was (no link, a trusted owner) with anything past its settled
 * segments (a writer killed appending) cut off; or, with append 0, a new
 * one. *jfd, or BK_EEXIST when this checkpoint cannot go through the
 * journal's name (the caller saves whole). */
static bk_status_t journal_for(const bk_checkpoint_t *cp, int fd, mode_t mode, uint64_t append,
                               int *jfd)
{
    if (append) {
        *jfd = bkf_journal_open(cp->journal, fd, true);
        struct stat js;
        if (*jfd < 0 || fstat(*jfd, &js) != 0 || (uint64_t)js.st_size < append)
            return BK_EEXIST; /* gone, or not what was kept */
        if ((uint64_t)js.st_size > append && ftruncate(*jfd, (off_t)append) != 0)
            return bkf_errno_status();
        return BK_OK;
    }
    /* Under the write lock, with any journal of ours finished, what is
     * left at the name is not ours (a link, a FIFO, a stranger's file):
     * removed, and the journal made new. O_EXCL never follows a link nor
     * truncates anything; if something is put back there meanwhile (or
     * cannot be removed: a sticky directory), the caller saves whole. */
    if (unlink(cp->journal) != 0 && errno != ENOENT && errno != EPERM && errno != EACCES)
        return bkf_errno_status();
    *jfd = open(cp->journal, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0666);
    if (*jfd < 0)
        return errno == EEXIST ? BK_EEXIST : bkf_errno_status();
    return BK_OK;
}

/* Step 5 of the header comment, the runs being in the file: the journal
 * (open at jfd, its segment ending at end, checksum seg_sum) settled.
 * The checkpoint is durable since its segment was synced; the file's own
 * sync (most of a large checkpoint's time: one block written back per
 * scattered page) is left to the kernel's writeback, the settled record
 * saying this boot's kernel holds the runs in the file, so readers read
 * it as it is and only after a restart (another boot id) is the journal
 * replayed. A journal past cp_jmax is not kept (it would hold its disk
 * space until the next checkpoint; a checkpoint that large pays for its
 * sync), nor one without a boot id to name: the file is synced now and
 * the journal removed, as when the record cannot be written. */
static bk_status_t settle(const bk_checkpoint_t *cp, const cp_scan_t *c, int fd, int jfd,
                          uint64_t end, uint64_t seg_sum)
{
    uint8_t boot[16], rec[CP_SETTLED];
    if (end + CP_SETTLED <= cp_jmax(c->total) && bkf_boot_id(boot)) {
        bkf_settled_record(rec, boot, (uint64_t)cp->ino, c->total, header_sum(c),
                           BKF_HEADER + (uint64_t)BKF_PART * c->o.nparts, seg_sum);
        if (bkf_pwrite_all(jfd, rec, CP_SETTLED, end) == BK_OK)
            return BK_OK;
    }
    return bkf_journal_retire(fd, cp->journal, cp->dir);
}

/* Steps 2-5 of the header comment, on the open file fd; append: where
 * in a settled journal the new segment goes (0: a journal of its own).
 * On failure after the segment is whole, it stays, and the next load or
 * checkpoint finishes the job. */
static bk_status_t write_in_place(bk_checkpoint_t *cp, const cp_scan_t *c, int fd, mode_t mode,
                                  uint64_t append)
{
    uint8_t *buf = bki_malloc(JW_BUF), *data = bki_malloc(CP_BUF);
    bk_status_t st = buf && data ? BK_OK : BK_ENOMEM;
    if (st == BK_OK)
        st = each_run(c, fd, data, false);
    int jfd = -1;
    if (st == BK_OK)
        st = journal_for(cp, fd, mode, append, &jfd);
    uint64_t seg_sum = 0, end = 0;
    if (st == BK_OK) {
        st = write_journal(c, jfd, append, (uint64_t)cp->ino, cp->head_sum, buf, data, &seg_sum,
                           &end);
        if (st == BK_OK && bki_checkpoint_crash)
            return crash(c, fd, jfd, append, end, buf, data);
        if (st == BK_OK && !append)
            st = bkf_fsync_dir(cp->dir);
        if (st != BK_OK) {
            /* never complete: nothing depends on it (an appended segment
             * is cut off where the settled ones end) */
            if (append)
                (void)ftruncate(jfd, (off_t)append);
            else
                (void)unlink(cp->journal);
        }
    }
    if (st == BK_OK) {
        /* A reader (the load, for one) leaves the file in the page cache
         * in large folios, and a 512-byte write dirties a whole folio (up
         * to 2 MiB written back for it). Dropped first, the written pages
         * are cached as single 4 KiB pages. Clean pages only: mapped ones
         * stay. */
        if (!c->pg) /* a paged file's reader reads single pages (pages.c) */
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        st = each_run(c, fd, data, true);
        if (st == BK_OK)
            st = settle(cp, c, fd, jfd, end, seg_sum);
    }
    if (jfd >= 0)
        close(jfd);
    int saved = errno;
    bki_free(buf);
    bki_free(data);
    errno = saved;
    return st;
}

/* Whether the file open at fd is the one this checkpointer last wrote:
 * the same inode and size, with the header checksum it wrote. */
static bool still_ours(const bk_checkpoint_t *cp, const cp_scan_t *c, int fd, const struct stat *sb)
{
    if (!cp->shadow || cp->size != c->total || sb->st_ino != cp->ino || sb->st_dev != cp->dev ||
        (uint64_t)sb->st_size != c->total)
        return false;
    uint8_t b[8];
    uint64_t at = BKF_HEADER + (uint64_t)BKF_PART * c->o.nparts;
    return bkf_pread_all(fd, b, 8, at) == BK_OK && get_u64(b) == cp->head_sum;
}

/* Makes the shadow describe the scanned form, as the file now holds it. */
static bk_status_t adopt(bk_checkpoint_t *cp, cp_scan_t *c, const char *target, bool rebuild)
{
    if (rebuild) {
        bki_free(cp->shadow);
        cp->shadow = NULL;
        cp->size = 0;
        uint64_t *shadow = bki_malloc((size_t)(c->nsectors ? c->nsectors : 1) * 8);
        if (!shadow)
            return BK_ENOMEM;
        c->nchanges = 0;
        bk_status_t st = scan_run(c, shadow, true);
        if (st != BK_OK) {
            bki_free(shadow);
            return st;
        }
        cp->shadow = shadow;
    } else {
        for (uint64_t i = 0; i < c->nchanges; i++)
            cp->shadow[c->changes[i].sector] = c->changes[i].hash;
    }
    struct stat sb;
    if (stat(target, &sb) != 0) {
        bki_free(cp->shadow);
        cp->shadow = NULL;
        return BK_OK; /* no shadow: the next checkpoint writes it whole */
    }
    cp->size = c->total;
    cp->nsectors = c->nsectors;
    cp->head_sum = header_sum(c);
    cp->dev = sb.st_dev;
    cp->ino = sb.st_ino;
    return BK_OK;
}

/* ---- public API ---- */

bk_status_t bk_checkpoint_new(bk_checkpoint_t **out, const bk_filter_t *f, const char *path)
{
    if (!out || !f || !path || !*path)
        return BK_EINVAL;
    *out = NULL;
    bk_checkpoint_t *cp = bki_calloc(1, sizeof *cp);
    if (!cp)
        return BK_ENOMEM;
    cp->target = bkf_link_target(path);
    cp->journal = cp->target ? bkf_journal_path(cp->target) : NULL;
    cp->dir = cp->target ? bkf_parent_dir(cp->target) : NULL;
    cp_scan_t c;
    memset(&c, 0, sizeof c);
    bk_status_t st = cp->dir && cp->journal ? BK_OK : BK_ENOMEM;
    if (st == BK_OK && f->pages) {
        /* A filter read from a paged file knows the pages it changed: no
         * shadow (which would read the whole file). */
        *out = cp;
        return BK_OK;
    }
    if (st == BK_OK)
        st = scan_init(&c, f, cp);
    if (st == BK_OK) {
        uint64_t *shadow = bki_malloc((size_t)(c.nsectors ? c.nsectors : 1) * 8);
        st = shadow ? scan_run(&c, shadow, true) : BK_ENOMEM;
        if (st == BK_OK)
            cp->shadow = shadow;
        else
            bki_free(shadow);
    }
    /* The shadow describes the file only if the file's metadata is f's:
     * it holds every payload's checksum, so equal metadata means equal
     * payloads. Otherwise the first checkpoint writes the file whole. */
    int fd = st == BK_OK ? open(cp->target, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        struct stat sb;
        uint8_t *m = bki_malloc((size_t)c.mlen);
        if (m && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == c.total &&
            bkf_pread_all(fd, m, c.mlen, 0) == BK_OK && memcmp(m, c.meta, (size_t)c.mlen) == 0) {
            cp->size = c.total;
            cp->nsectors = c.nsectors;
            cp->head_sum = header_sum(&c);
            cp->dev = sb.st_dev;
            cp->ino = sb.st_ino;
        }
        bki_free(m);
        close(fd);
    }
    if (cp->size == 0) {
        bki_free(cp->shadow);
        cp->shadow = NULL;
    }
    scan_free(&c);
    if (st != BK_OK) {
        bk_checkpoint_free(cp);
        return st;
    }
    *out = cp;
    return BK_OK;
}

void bk_checkpoint_free(bk_checkpoint_t *cp)
{
    if (!cp)
        return;
    bki_free(cp->shadow);
    bki_free(cp->trailer);
    bki_free(cp->target);
    bki_free(cp->journal);
    bki_free(cp->dir);
    bki_free(cp);
}

/* The target opened for writing in place, under the checkpoint lock, with
 * any journal a failed checkpoint of ours left finished first, or a
 * settled one kept to append to (*append: where; 0: none): the descriptor
 * (and *sb, the file as it is then), or -1. */
static int open_locked(const bk_checkpoint_t *cp, struct stat *sb, uint64_t *append)
{
    int fd = open(cp->target, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && (bkf_journal_lock(fd, F_WRLCK) != 0 ||
                    bkf_journal_finish(fd, cp->journal, cp->dir, append) != BK_OK ||
                    fstat(fd, sb) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* ---- a filter read from a paged file: the pages it changed ---- */

/* The changes sorted, each sector once. */
static void sort_unique(cp_scan_t *c)
{
    if (c->nchanges > 1)
        qsort(c->changes, (size_t)c->nchanges, sizeof *c->changes, by_sector);
    uint64_t n = 0;
    for (uint64_t i = 0; i < c->nchanges; i++)
        if (n == 0 || c->changes[n - 1].sector != c->changes[i].sector)
            c->changes[n++] = c->changes[i];
    c->nchanges = n;
}

/* The sectors of page j that differ from the file's: those no longer zero
 * where the file holds zeros (a hole, most pages of a filter filling), by
 * the sector sums taken before its first write, or (a shared mapping's)
 * read from fd. */
static bk_status_t note_page(cp_scan_t *c, const struct bki_pages *pg, int fd, uint64_t j,
                             uint8_t *buf)
{
    uint64_t lo, hi;
    bkf_page_span(&pg->g, j, &lo, &hi);
    if (pg->own_map && ((pg->zero[j >> 6] >> (j & 63)) & 1)) {
        for (uint64_t s = lo / CP_SECTOR; s * CP_SECTOR < hi; s++) {
            uint64_t a = s * CP_SECTOR < lo ? lo : s * CP_SECTOR;
            uint64_t b = (s + 1) * CP_SECTOR > hi ? hi : (s + 1) * CP_SECTOR;
            const uint8_t *p = pg->map + a;
            if (!bkf_all_zero(p, (size_t)(b - a)) && !note_change(c, s, 0))
                return BK_ENOMEM;
        }
        return BK_OK;
    }
    const uint64_t *was = bki_pages_sector_sums(pg, j);
    if (was) {
        for (uint32_t k = 0; k < BKF_PAGE_SECTORS; k++)
            if (bkf_sector_sum(pg, j, k) != was[k] &&
                !note_change(c, (pg->g.first + j) * BKF_PAGE_SECTORS + k, 0))
                return BK_ENOMEM;
        return BK_OK;
    }
    bk_status_t st = bkf_pread_all(fd, buf, hi - lo, lo);
    if (st != BK_OK)
        return st;
    for (uint64_t s = lo / CP_SECTOR; s * CP_SECTOR < hi; s++) {
        uint64_t a = s * CP_SECTOR < lo ? lo : s * CP_SECTOR;
        uint64_t b = (s + 1) * CP_SECTOR > hi ? hi : (s + 1) * CP_SECTOR;
        if (memcmp(pg->map + a, buf + (a - lo), (size_t)(b - a)) != 0 && !note_change(c, s, 0))
            return BK_ENOMEM;
    }
    return BK_OK;
}

/* What a paged scan writes whole besides the pages: sectors that hold
 * payload bytes too (the metadata's last, with the payload's first bytes
 * on page 0; for a window, the one where its state starts, with the paged
 * part's last bytes) get their pages read and checked first, so those
 * bytes are written as the file holds them, not as zeros of a page never
 * read; and the parts after the paged one (a window's state: small, with
 * a checksum of its own) become regions, their sectors noted when they
 * differ from the file's (c->others_changed). */
static bk_status_t paged_edges(cp_scan_t *c, const bk_filter_t *f, int fd, const uint8_t *data,
                               uint64_t len)
{
    if (len > 0 && !f->touch(f, data, 1, false))
        return BK_ECORRUPT;
    if (c->o.nparts > 1 && len > 0 && !f->touch(f, data + len - 1, 1, false))
        return BK_ECORRUPT;
    bk_status_t st = BK_OK;
    uint64_t off = c->pg->g.end;
    for (uint32_t i = 1; i < c->o.nparts && st == BK_OK; i++) {
        bkf_part_t p;
        bkf_obj_part(&c->o, i, &p);
        c->parts[i] = (cp_part_t){off, p.length, p.data};
        uint64_t n = bkf_align64(p.length);
        uint8_t *was = bki_malloc((size_t)(n ? n : 1));
        st = was ? bkf_pread_all(fd, was, n, off) : BK_ENOMEM;
        if (st == BK_OK && memcmp(was, p.data, (size_t)p.length) != 0) {
            c->others_changed = true;
            for (uint64_t s = off / CP_SECTOR; s * CP_SECTOR < off + p.length && st == BK_OK; s++)
                if (!note_change(c, s, 0))
                    st = BK_ENOMEM;
        }
        bki_free(was);
        off += n;
    }
    return st;
}

/* The scan of a paged checkpoint: the pages written since the last one
 * hashed again; for each that changed, its sectors that differ from the
 * file, the sector of its page sum and of its group's sum; then the
 * metadata's sectors. *olds (heap, the changed pages' previous sums, for
 * undo) and *changed (their indices) are the caller's to free. */
static bk_status_t paged_scan(cp_scan_t *c, const bk_filter_t *f, int fd, uint64_t **changed,
                              uint64_t **olds, uint64_t *nchanged)
{
    struct bki_pages *pg = f->pages;
    const bkf_paging_t *g = &pg->g;
    memset(c, 0, sizeof *c);
    bk_status_t st = bkf_obj_from_filter(&c->o, f);
    if (st != BK_OK)
        return st;
    c->o.paged = true;
    c->total = g->size;
    c->mlen = bkf_meta_len(c->o.nparts);
    c->nsectors = (c->total + CP_SECTOR - 1) / CP_SECTOR;
    c->nregions = c->o.nparts + 1; /* the parts, then the page sums */
    c->parts = bki_calloc(c->nregions, sizeof *c->parts);
    c->meta = bki_malloc((size_t)c->mlen);
    uint64_t written = bki_pages_written(pg);
    *changed = bki_malloc((size_t)(written ? written : 1) * 8);
    *olds = bki_malloc((size_t)(written ? written : 1) * 8);
    uint8_t *buf = bki_malloc(BKF_PAGE);
    if (!c->parts || !c->meta || !*changed || !*olds || !buf) {
        bki_free(buf);
        return BK_ENOMEM;
    }
    c->pg = pg;
    uint8_t *data;
    uint64_t len;
    (void)bki_paged_payload(f, &data, &len); /* its file's shape: save_paged */
    c->parts[0] = (cp_part_t){g->body, len, data};
    c->parts[c->o.nparts] = (cp_part_t){g->trailer, pg->trailer_len, pg->trailer};
    st = paged_edges(c, f, fd, data, len);
    if (st != BK_OK) {
        bki_free(buf);
        return st;
    }
    /* The written pages hashed again; those that changed get their new
     * sums (the old ones kept for an undo). */
    *nchanged = 0;
    for (uint64_t w = 0; w < (g->npages + 63) / 64; w++) {
        uint64_t bits = __atomic_exchange_n(&pg->written[w], 0, __ATOMIC_ACQ_REL);
        for (; bits; bits &= bits - 1) {
            uint64_t j = w * 64 + (uint64_t)__builtin_ctzll(bits);
            if (*nchanged == written) { /* marked meanwhile: the next one's */
                __atomic_fetch_or(&pg->written[w], bits, __ATOMIC_RELEASE);
                break;
            }
            uint64_t sum = bkf_page_sum(g, data, len, j);
            uint64_t old = bkf_get_u64(pg->trailer + j * 8);
            if (sum != old) {
                (*changed)[*nchanged] = j;
                (*olds)[(*nchanged)++] = old;
                bkf_put_u64(pg->trailer + j * 8, sum);
            }
        }
    }
    uint64_t last_group = UINT64_MAX;
    for (uint64_t i = 0; i < *nchanged && st == BK_OK; i++) {
        uint64_t j = (*changed)[i], grp = j / BKF_GROUP;
        st = note_page(c, pg, fd, j, buf);
        if (st == BK_OK && !note_change(c, (g->trailer + j * 8) / CP_SECTOR, 0))
            st = BK_ENOMEM;
        if (st == BK_OK && grp != last_group) {
            bki_pages_regroup(pg, grp);
            if (!note_change(c, (g->groups_at + grp * 8) / CP_SECTOR, 0))
                st = BK_ENOMEM;
            last_group = grp;
        }
    }
    bki_free(buf);
    c->o.groups_sum = bki_pages_groups_sum(pg);
    bkf_encode_meta(&c->o, c->meta);
    for (uint64_t s = 0; st == BK_OK && s * CP_SECTOR < c->mlen; s++)
        if (!note_change(c, s, 0))
            st = BK_ENOMEM;
    if (st == BK_OK)
        sort_unique(c);
    return st;
}

/* A failed paged checkpoint: the page sums put back and the pages marked
 * written again, so the next checkpoint writes them. */
static void paged_undo(struct bki_pages *pg, const uint64_t *changed, const uint64_t *olds,
                       uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = changed[i];
        bkf_put_u64(pg->trailer + j * 8, olds[i]);
        __atomic_fetch_or(&pg->written[j >> 6], UINT64_C(1) << (j & 63), __ATOMIC_RELEASE);
    }
    for (uint64_t i = 0; i < n; i++)
        bki_pages_regroup(pg, changed[i] / BKF_GROUP);
}

/* The checkpoint of a filter read from the paged file at the target, when
 * the file is still the one it read (same inode, size and header
 * checksum, as its own last checkpoint left it): the pages its adds
 * changed, in place through the journal. *other (nothing written) when
 * the file is another, or the journal's name is taken: the caller saves
 * whole. */
static bk_status_t save_paged(bk_checkpoint_t *cp, const bk_filter_t *f,
                              bk_checkpoint_stats_t *stats, bool *other)
{
    struct bki_pages *pg = f->pages;
    *other = false;
    if (pg->damage != BK_OK)
        return pg->damage;
    /* A cuckoo filter that grew since it was read is no longer the
     * file's shape: written whole (*other). */
    uint8_t *data;
    uint64_t len;
    if (!bki_paged_payload(f, &data, &len)) {
        *other = true;
        return BK_OK;
    }
    struct stat sb;
    uint64_t append = 0;
    int fd = open_locked(cp, &sb, &append);
    uint8_t b[8];
    uint64_t at = BKF_HEADER + (uint64_t)BKF_PART * pg->nparts; /* the header sum */
    bool ours = fd >= 0 && sb.st_ino == pg->ino && sb.st_dev == pg->dev &&
                (uint64_t)sb.st_size == pg->g.size && bkf_pread_all(fd, b, 8, at) == BK_OK &&
                get_u64(b) == pg->head_sum;
    if (!ours) {
        if (fd >= 0)
            close(fd);
        *other = true;
        return BK_OK;
    }
    cp_scan_t c;
    uint64_t *changed = NULL, *olds = NULL, nchanged = 0;
    bk_status_t st = paged_scan(&c, f, fd, &changed, &olds, &nchanged);
    if (st == BK_OK) {
        uint64_t pages, journal;
        change_costs(&c, &pages, &journal);
        stats->sectors = c.nchanges;
        stats->pages = pages;
        if (header_sum(&c) != pg->head_sum || nchanged || c.others_changed) {
            cp->ino = pg->ino;
            cp->dev = pg->dev;
            cp->head_sum = pg->head_sum;
            st = write_in_place(cp, &c, fd, sb.st_mode, append);
            if (st == BK_OK) {
                stats->bytes_written = journal + pages * CP_PAGE;
                pg->head_sum = header_sum(&c);
                for (uint64_t i = 0; i < nchanged; i++) /* allocated now */
                    __atomic_fetch_and(&pg->zero[changed[i] >> 6],
                                       ~(UINT64_C(1) << (changed[i] & 63)), __ATOMIC_RELAXED);
            }
        }
    }
    if (st != BK_OK)
        paged_undo(pg, changed, olds, nchanged);
    else
        bki_pages_sector_reset(pg); /* the file holds every page now */
    int saved = errno;
    close(fd);
    scan_free(&c);
    bki_free(changed);
    bki_free(olds);
    errno = saved;
    if (st == BK_EEXIST) {
        *other = true;
        return BK_OK;
    }
    return st;
}

/* The whole file, as bk_filter_save writes it, and any journal left for
 * the file it replaced removed. */
static bk_status_t save_whole(bk_checkpoint_t *cp, cp_scan_t *c, bk_checkpoint_stats_t *stats)
{
    c->o.sums = NULL; /* the saver reads the payloads itself */
    bk_status_t st = bkf_save_obj(&c->o, cp->target);
    c->o.sums = c->sums;
    if (st != BK_OK) {
        bki_free(cp->shadow);
        cp->shadow = NULL;
        cp->size = 0;
        return st;
    }
    (void)unlink(cp->journal);
    stats->whole = true;
    stats->bytes_written = c->total;
    return adopt(cp, c, cp->target, true);
}

bk_status_t bk_checkpoint_save(bk_checkpoint_t *cp, const bk_filter_t *f,
                               bk_checkpoint_stats_t *stats)
{
    bk_checkpoint_stats_t ignored;
    if (!stats)
        stats = &ignored;
    memset(stats, 0, sizeof *stats);
    if (!cp || !f)
        return BK_EINVAL;
    /* A writable mapping of the file itself: the file already holds every
     * add; writing it back is a sync (a whole save would rename a new file
     * over the mapping, and later adds would go to the unlinked one). */
    if (f->map_base && !f->readonly && bkf_maps_file(f, cp->target))
        return bkf_sync_map(f);
    if (f->pages) {
        bool other;
        bk_status_t st = save_paged(cp, f, stats, &other);
        if (!other)
            return st;
        /* another file: written whole, every page read and checked first */
        if ((st = bki_pages_all(f, NULL)) != BK_OK)
            return st;
    }
    cp_scan_t c;
    bk_status_t st = scan_init(&c, f, cp);
    if (st != BK_OK) {
        scan_free(&c);
        return st;
    }
    struct stat sb;
    uint64_t append = 0;
    int fd = cp->shadow && cp->size == c.total ? open_locked(cp, &sb, &append) : -1;
    if (fd < 0 || !still_ours(cp, &c, fd, &sb)) {
        if (fd >= 0)
            close(fd);
        st = save_whole(cp, &c, stats);
        scan_free(&c);
        return st;
    }
    st = scan_run(&c, cp->shadow, false);
    if (st == BK_OK) {
        if (c.nchanges > 1)
            qsort(c.changes, (size_t)c.nchanges, sizeof *c.changes, by_sector);
        uint64_t pages, journal;
        change_costs(&c, &pages, &journal);
        stats->sectors = c.nchanges;
        stats->pages = pages;
        if (c.nchanges == 0) {
            /* nothing to write */
        } else if (journal + pages * CP_PAGE >= c.total) {
            close(fd);
            fd = -1;
            st = save_whole(cp, &c, stats);
        } else {
            st = write_in_place(cp, &c, fd, sb.st_mode, append);
            if (st == BK_EEXIST) {
                /* the journal's name is taken: nothing was written yet */
                close(fd);
                fd = -1;
                st = save_whole(cp, &c, stats);
            } else if (st == BK_OK) {
                stats->bytes_written = journal + pages * CP_PAGE;
                st = adopt(cp, &c, cp->target, false);
            } else {
                /* the file may hold part of this checkpoint: trust
                 * nothing of it until the next whole write */
                bki_free(cp->shadow);
                cp->shadow = NULL;
                cp->size = 0;
            }
        }
    }
    int saved = errno;
    if (fd >= 0)
        close(fd);
    scan_free(&c);
    errno = saved;
    return st;
}
