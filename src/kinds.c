/*
 * The kinds, in one table: each kind's name, what it may be (a filter or a
 * bitmap, a file's kind on its own, a scalable chain's sub-kind in a file
 * or at creation, made by bk_filter_create), and a single-array kind's
 * geometry (layout.c reads it). Its operations, which live in the kind's
 * own file above this one, are found through array.c's table
 * (bki_kind_ops). The codec, the scalable chain, creation, sizing and the
 * names ask here instead of listing kinds; a new kind is one row here, one
 * in array.c's table and its file (or, for a composite, a row in
 * registry.c and its files).
 */
#include "internal.h"

#include <string.h>
#include <strings.h>

typedef struct kind_row {
    const char *name;
    unsigned what;       /* BKI_KIND_* */
    bki_layout_t layout; /* single-array kinds; zero for composites */
    unsigned caps;       /* BK_CAP_*: what its filters can do */
    unsigned fp_bits;    /* fingerprint kinds of one width: its bits */
    bk_kind_text_t text; /* what the tool and Python print about it */
    bk_kind_t plan_as;   /* sized as this single-array kind (a chain: its
                            first link's); 0: itself */
} kind_row_t;

#define F BKI_KIND_FILTER
#define T BKI_KIND_TOP
#define C BKI_KIND_CREATE
#define A BK_CAP_ADD
#define M BK_CAP_MERGE
#define BITS {"bits", "bits set", "k", "", 0}

static const kind_row_t rows[] = {
    [BK_KIND_BLOCKED] = {"blocked", F | T | C | BKI_KIND_SUB_FILE | BKI_KIND_SUB_CREATE,
                         {BKI_LINE_BITS, 1, BKI_LINE_BITS, BKI_BLOCKED_MAX_K, 0, 1, 0}, A | M,
                         .text = BITS},
    [BK_KIND_CLASSIC] = {"classic", F | T | C | BKI_KIND_SUB_FILE | BKI_KIND_SUB_CREATE |
                                        BKI_KIND_DOUBLE_HASH,
                         {64, 1, 0, BKI_CLASSIC_MAX_K, 0, 1, 0}, A | M, .text = BITS},
    [BK_KIND_COUNTING] = {"counting", F | T | C,
                          {BKI_LINE_COUNTERS, 4, BKI_LINE_COUNTERS, BKI_BLOCKED_MAX_K, 0, 1, 0},
                          A | BK_CAP_REMOVE | BK_CAP_COUNT | M,
                          .text = {"counters", "counters set", "k", "", 0}},
    [BK_KIND_SCALABLE] = {"scalable", F | T | C | BKI_KIND_CHAIN, {0},
                          A | M | BK_CAP_GROW | BK_CAP_BOUNDED, .text = BITS,
                          .plan_as = BK_KIND_BLOCKED},
    [BK_KIND_BITMAP] = {"bitmap", BKI_KIND_BITMAP | T, {1, 1, 0, 0, BKI_BITMAP_MAX_N, 0, 0}, 0,
                        .text = {"values", "set", "", "one bit per value: seen or not", 1}},
    [BK_KIND_BITMAP2] = {"bitmap2", BKI_KIND_BITMAP | T, {1, 2, 0, 0, BKI_BITMAP_MAX_N, 0, 0}, 0,
                         .text = {"values", "seen", "",
                                  "two bits per value: never, once, more than once", 2}},
    /* a chain's later parts may be precise (deep chains): codec.c */
    [BK_KIND_PRECISE] = {"precise", F | T | C | BKI_KIND_DEEP,
                         {64, 1, 0, BKI_CLASSIC_MAX_K, 0, 1, 0}, A | M, .text = BITS},
    [BK_KIND_BLOCKED2] = {"blocked2", F | T | C | BKI_KIND_SUB_FILE | BKI_KIND_SUB_CREATE,
                          {BKI_LINE_BITS, 1, BKI_LINE_BITS, BKI_BLOCKED_MAX_K, 0, 2, 0}, A | M,
                          .text = BITS},
    [BK_KIND_WINDOW] = {"window", F | T | C, {0}, A | BK_CAP_WINDOW | BK_CAP_BOUNDED,
                        .text = BITS},
    [BK_KIND_SPLIT] = {"split", F | T | C,
                       {BKI_SPLIT_BLOCK_BITS, 1, BKI_SPLIT_BLOCK_BITS, BKI_SPLIT_K, 0, 1,
                        BKI_SPLIT_K}, A | M, .text = BITS},
    /* RedisBloom's links: only inside the chains bk_redisbloom_new makes;
     * whole 64-bit words, and a k with no cap of its own */
    [BK_KIND_REDISBLOOM] = {"redisbloom", F | BKI_KIND_SUB_FILE | BKI_KIND_RB_LINK,
                            {64, 1, 0, BK_REDISBLOOM_MAX_HASHES, 0, 1, 0}, A, .text = BITS},
    [BK_KIND_CUCKOO] = {"cuckoo", F | T | C | BKI_KIND_BUCKETS, {0},
                        A | BK_CAP_REMOVE | BK_CAP_COUNT | BK_CAP_GROW,
                        .text = {"slots", "slots used", "bucket size",
                                 "its two buckets; deletes, at a fraction of counting's bytes",
                                 0}},
    /* static: bk_filter_build makes them, never bk_filter_create */
    [BK_KIND_FUSE8] = {"fuse8", F | T | BKI_KIND_STATIC | BKI_KIND_SEGMENTS, {0}, BK_CAP_STATIC, 8,
                       .text = {"fingerprints", "fingerprints", "",
                                "static: built whole from the set, never added to; --static", 0}},
    [BK_KIND_FUSE16] = {"fuse16", F | T | BKI_KIND_STATIC | BKI_KIND_SEGMENTS, {0}, BK_CAP_STATIC,
                        16,
                        .text = {"fingerprints", "fingerprints", "",
                                 "static: built whole from the set, never added to; --static",
                                 0}},
    [BK_KIND_FUSE32] = {"fuse32", F | T | BKI_KIND_STATIC | BKI_KIND_SEGMENTS, {0}, BK_CAP_STATIC,
                        32,
                        .text = {"fingerprints", "fingerprints", "",
                                 "static: built whole from the set, never added to; --static",
                                 0}},
};

#undef BITS
#undef F
#undef T
#undef C
#undef A
#undef M

bool bki_kind_is(bk_kind_t kind, unsigned what)
{
    return (unsigned)kind < sizeof rows / sizeof rows[0] && (rows[kind].what & what) == what &&
           rows[kind].name != NULL;
}

const bki_layout_t *bki_layout_of(bk_kind_t kind)
{
    if ((unsigned)kind >= sizeof rows / sizeof rows[0] || rows[kind].layout.unit == 0)
        return NULL;
    return &rows[kind].layout;
}

const char *bk_kind_name(bk_kind_t kind)
{
    if ((unsigned)kind >= sizeof rows / sizeof rows[0])
        return NULL;
    return rows[kind].name;
}

bk_status_t bk_kind_parse(const char *name, bk_kind_t *out)
{
    if (!name || !out)
        return BK_EINVAL;
    for (unsigned i = 1; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].name && strcasecmp(name, rows[i].name) == 0) {
            *out = (bk_kind_t)i;
            return BK_OK;
        }
    }
    return BK_EINVAL;
}

unsigned bk_kind_caps(bk_kind_t kind)
{
    if ((unsigned)kind >= sizeof rows / sizeof rows[0])
        return 0;
    return rows[kind].caps;
}

unsigned bki_kind_fp_bits(bk_kind_t kind)
{
    if ((unsigned)kind >= sizeof rows / sizeof rows[0])
        return 0;
    return rows[kind].fp_bits;
}

bk_kind_t bki_kind_with_fp_bits(unsigned what, unsigned fp_bits)
{
    for (unsigned i = 1; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].fp_bits == fp_bits && bki_kind_is((bk_kind_t)i, what))
            return (bk_kind_t)i;
    return BK_KIND_DEFAULT;
}

bk_kind_t bki_kind_exact(bk_kind_t kind)
{
    return kind == BK_KIND_DEFAULT ? BK_KIND_BLOCKED : kind;
}

bk_kind_t bki_bitmap_kind(unsigned cell_bits)
{
    for (unsigned i = 1; i < sizeof rows / sizeof rows[0]; i++)
        if ((rows[i].what & BKI_KIND_BITMAP) && rows[i].layout.cell_bits == cell_bits)
            return (bk_kind_t)i;
    return BK_KIND_DEFAULT;
}

bk_kind_t bki_kind_of_layout(uint32_t line_cells, uint32_t key_lines, uint32_t cell_bits)
{
    for (unsigned i = 1; i < sizeof rows / sizeof rows[0]; i++) {
        const bki_layout_t *l = &rows[i].layout;
        if ((rows[i].what & BKI_KIND_CREATE) && l->unit && l->line_cells == line_cells &&
            l->key_lines == key_lines && l->cell_bits == cell_bits && l->fixed_k == 0)
            return (bk_kind_t)i;
    }
    return BK_KIND_DEFAULT;
}

const bk_kind_text_t *bk_kind_text(bk_kind_t kind)
{
    if ((unsigned)kind >= sizeof rows / sizeof rows[0] || !rows[kind].name)
        return NULL;
    return &rows[kind].text;
}

bk_kind_t bki_kind_with(unsigned what)
{
    for (unsigned i = 1; i < sizeof rows / sizeof rows[0]; i++)
        if (bki_kind_is((bk_kind_t)i, what))
            return (bk_kind_t)i;
    return BK_KIND_DEFAULT;
}

bk_kind_t bki_kind_plan_as(bk_kind_t kind)
{
    if (kind == BK_KIND_DEFAULT)
        return bki_kind_exact(kind); /* the model of the default when no p is given */
    if ((unsigned)kind < sizeof rows / sizeof rows[0] && rows[kind].plan_as)
        return rows[kind].plan_as;
    return kind;
}

/* The default kind: one memory access per key down to 1e-3, two below.
 *
 * Blocked (one 64-byte line per key) stays within 1.11x of the classic
 * optimum's bits per key for p >= 1e-3; below that its space grows fast
 * (1.17x at 1e-4, 1.38x at 1e-6) while blocked2 (two lines) stays within
 * 1.10x down to 1e-6.
 *
 * Within [0.004, 0.02] the default is split (a
 * 32-byte block, k fixed at 8): its one-key calls take about half the
 * instructions of blocked's, which in the caches makes one-key adds and
 * lookups 1.2-1.3x as fast (medians of docs/BENCHMARKS.md's runs) and on
 * large filters lets more calls' cache misses overlap. Its bits per key there are 5.4-7.4% over blocked's and within
 * 1.14x of the optimum (1.12x at 1%). Outside the band its fixed k costs
 * too much: 1.17x the optimum at 4% and 1e-3, 1.29x at 10%, 1.40x at
 * 1e-4. The first band that holds p wins. */
static const struct {
    double lo, hi; /* p in [lo, hi] */
    bk_kind_t kind;
} defaults[] = {
    {0.004, 0.02, BK_KIND_SPLIT},
    {1e-3, 1.0, BK_KIND_BLOCKED},
    {0.0, 1e-3, BK_KIND_BLOCKED2},
};

bk_kind_t bki_kind_default(double p)
{
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (p >= defaults[i].lo && p <= defaults[i].hi)
            return defaults[i].kind;
    return BK_KIND_BLOCKED2; /* unreached for p in (0, 1) */
}

size_t bk_filter_kinds(bk_kind_t *out, size_t cap)
{
    size_t n = 0;
    for (unsigned i = 1; i < sizeof rows / sizeof rows[0]; i++) {
        if (!bki_kind_is((bk_kind_t)i, BKI_KIND_FILTER) ||
            !(rows[i].what & (BKI_KIND_CREATE | BKI_KIND_STATIC)))
            continue;
        if (n < cap)
            out[n] = (bk_kind_t)i;
        n++;
    }
    return n;
}
