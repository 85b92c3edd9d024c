/*
 * Paged files (pages.c; docs/FORMAT.md, "Paged files"): the page
 * checksums of a large single-array file, and a filter made from such a
 * file whose pages are checked the first time a key touches them.
 */
#ifndef BLOOMKIT_PAGES_H
#define BLOOMKIT_PAGES_H

#include "codec.h"

#include <pthread.h>
#include <sys/types.h>

/* What pages.c needs of a composite kind in a paged file (a single
 * array's come from its kind's operations, bki_kind_ops): which payload
 * bytes a key reads, and a call made once the pages are attached
 * (own_map: the filter lives in memory of its own, so it may grow;
 * every_page(arg) checks every page and marks it written, for a change
 * that rewrites them all). The registry's row gives them
 * (bki_page_calls_of). */
typedef struct bki_page_calls {
    uint32_t (*reads)(const bk_filter_t *f, bk_hash_t h, uint64_t *off);
    void (*attached)(bk_filter_t *f, bool own_map, void (*every_page)(void *arg), void *arg);
} bki_page_calls_t;

/* A filter of a paged file, its bytes checked as they are first read.
 * The outermost filter owns it (f->pages); bk_filter_free frees it. */
struct bki_pages {
    bkf_paging_t g;
    int fd;             /* the file, for its page sums; owned */
    uint8_t *map;       /* the file's bytes from offset 0 (the payload at
                           map + g.body is f->data) */
    uint64_t map_len;
    const bki_page_calls_t *calls; /* a composite's; NULL for a single array */
    bool own_map;       /* a load's anonymous memory, each page read into it
                           when first touched; else bk_filter_open's shared
                           mapping of the file */
    uint8_t *trailer;   /* the file's bytes [g.trailer, g.size): the page
                           sums (filled a group at a time), then the group
                           sums (read when made) */
    uint64_t trailer_len;
    bki_mem_t trailer_mem;
    /* one bit per page: checked; written by an add since the last save;
     * damaged (answers "present" from then on); one per group: its page
     * sums read and checked */
    uint64_t *ok, *written, *bad, *gok;
    /* own_map: one bit per page, read as all zeros (a hole in a sparse
     * file, most likely: a checkpoint allocates its blocks first) */
    uint64_t *zero;
    /* own_map: pages [hole_lo, hole_hi) lie in a hole of the file (learnt
     * with one SEEK_DATA when loaded): a new state's pages need no read */
    uint64_t hole_lo, hole_hi;
    /* own_map: for each page written since the last save, an XXH3 of
     * each of its 512-byte sectors as the file holds them, taken before
     * its first write (the checkpoint writes just the sectors that
     * differ). A table by page, sized by the pages written, not by the
     * file: a run of a thousand adds holds a thousand entries. */
    struct bki_sector_sums *sums_of;
    uint64_t nsums, sums_cap; /* entries used, slots (a power of two) */
    uint64_t nchecked;
    bool padding_checked; /* the zeros around the page sums (bki_pages_all) */
    pthread_mutex_t lock; /* the slow path: a page or group read and checked */
    bk_status_t damage;   /* BK_OK, or BK_ECORRUPT once a page failed */
    uint64_t damage_at;   /* the first damaged byte range's file offset */
    char why[192];
    uint64_t head_sum;    /* the file's header checksum as read or last written */
    uint32_t nparts;      /* the file's parts (2 for a window) */
    dev_t dev;
    ino_t ino;
    /* the kind's one-key calls, made once the key's pages are checked */
    bki_add_key_fn add_key;
    bki_contains_key_fn contains_key;
    bki_contains_hash_fn contains_hash;
};

/* ---- the format ---- */

/* XXH3-64 of page j of the payload region, whose first byte (file offset
 * g->body) is at body; bytes past len (the payload's zero padding) count
 * as zero. */
BKI_HIDDEN uint64_t bkf_page_sum(const bkf_paging_t *g, const uint8_t *body, uint64_t len,
                                 uint64_t j);
/* Fills trailer (g->size - g->trailer bytes, zeroed by the caller) with
 * the page sums and group sums of a payload; *groups_sum for the header.
 * zeros, when not NULL ((npages + 63) / 64 words, zeroed by the caller):
 * bit j set for each page j that is a whole page of zeros. */
BKI_HIDDEN void bkf_pages_fill(const bkf_paging_t *g, const uint8_t *body, uint64_t len,
                               uint8_t *trailer, uint64_t *groups_sum, uint64_t *zeros);
/* XXH3-64 of group i's page sums in trailer. */
BKI_HIDDEN uint64_t bkf_group_sum(const bkf_paging_t *g, const uint8_t *trailer, uint64_t i);

/* ---- a filter checked as it is read ---- */

/* Makes f (a single-array filter whose payload borrows map + g.body) check
 * its pages as keys touch them: reads and checks the group sums (the only
 * bytes read here), takes fd (closed by bki_pages_free, or here on error)
 * and, with own_map, the memory (anonymous: each page is read into it
 * from fd when first touched; else map is the file's shared mapping). BK_ECORRUPT with *why on damaged group
 * sums; BK_ENOMEM. */
BKI_HIDDEN bk_status_t bki_pages_attach(bk_filter_t *f, int fd, const bkf_meta_t *m,
                                        const uint8_t *meta, uint8_t *map, uint64_t map_len,
                                        bool own_map, const bki_page_calls_t *calls,
                                        const char **why);
/* Rebinds f's one-key calls through the page checks (after
 * bki_array_bind, which binds the kind's own). */
BKI_HIDDEN void bki_pages_bind(bk_filter_t *f);
#define BKF_SECTOR 512u
#define BKF_PAGE_SECTORS (BKF_PAGE / BKF_SECTOR)
struct bki_sector_sums {
    uint64_t page_plus_1; /* 0: a free slot */
    uint64_t sum[BKF_PAGE_SECTORS];
};
/* Page j's sector sums taken at its first write, or NULL (none kept). */
BKI_HIDDEN const uint64_t *bki_pages_sector_sums(const struct bki_pages *pg, uint64_t j);
/* Forgets every page's sector sums (a checkpoint wrote them). */
BKI_HIDDEN void bki_pages_sector_reset(struct bki_pages *pg);
/* The XXH3 of the bytes of page j's sector k that lie in the payload
 * region (0 for none). */
BKI_HIDDEN uint64_t bkf_sector_sum(const struct bki_pages *pg, uint64_t j, uint32_t k);
/* Pages marked written since the last save. */
BKI_HIDDEN uint64_t bki_pages_written(const struct bki_pages *pg);
/* After page sums changed: group i's sum recomputed into the trailer. */
BKI_HIDDEN void bki_pages_regroup(struct bki_pages *pg, uint64_t i);
/* The groups' checksum for the header, from the trailer. */
BKI_HIDDEN uint64_t bki_pages_groups_sum(const struct bki_pages *pg);

#endif /* BLOOMKIT_PAGES_H */
