/*
 * The kinds, in one table: each kind's name, what it may be (a filter or a
 * bitmap, a file's kind on its own, a scalable chain's sub-kind in a file
 * or at creation, made by bk_filter_create), and a single-array kind's
 * geometry (layout.c reads it). Its operations, which live in the kind's
 * own file above this one, are found through array.c's table
 * (bki_kind_ops). The codec, the scalable chain, creation, sizing and the
 * names ask here instead of listing kinds; a new kind is one row here, one
 * in array.c's table and its file (or, for a composite, a row in
 * filter.c).
 */
#include "internal.h"

#include <string.h>
#include <strings.h>

typedef struct kind_row {
    const char *name;
    unsigned what;       /* BKI_KIND_* */
    bki_layout_t layout; /* single-array kinds; zero for composites */
    unsigned caps;       /* BK_CAP_*: what its filters can do */
} kind_row_t;

#define F BKI_KIND_FILTER
#define T BKI_KIND_TOP
#define C BKI_KIND_CREATE
#define A BK_CAP_ADD
#define M BK_CAP_MERGE

static const kind_row_t rows[] = {
    [BK_KIND_BLOCKED] = {"blocked", F | T | C | BKI_KIND_SUB_FILE | BKI_KIND_SUB_CREATE,
                         {BKI_LINE_BITS, 1, BKI_LINE_BITS, BKI_BLOCKED_MAX_K, 0, 1, 0}, A | M},
    [BK_KIND_CLASSIC] = {"classic", F | T | C | BKI_KIND_SUB_FILE | BKI_KIND_SUB_CREATE,
                         {64, 1, 0, BKI_CLASSIC_MAX_K, 0, 1, 0}, A | M},
    [BK_KIND_COUNTING] = {"counting", F | T | C,
                          {BKI_LINE_COUNTERS, 4, BKI_LINE_COUNTERS, BKI_BLOCKED_MAX_K, 0, 1, 0}, A | BK_CAP_REMOVE | BK_CAP_COUNT | M},
    [BK_KIND_SCALABLE] = {"scalable", F | T | C, {0}, A | M | BK_CAP_GROW},
    [BK_KIND_BITMAP] = {"bitmap", BKI_KIND_BITMAP | T, {1, 1, 0, 0, BKI_BITMAP_MAX_N, 0, 0}, 0},
    [BK_KIND_BITMAP2] = {"bitmap2", BKI_KIND_BITMAP | T, {1, 2, 0, 0, BKI_BITMAP_MAX_N, 0, 0}, 0},
    /* a chain's later parts may be precise (deep chains): codec.c */
    [BK_KIND_PRECISE] = {"precise", F | T | C, {64, 1, 0, BKI_CLASSIC_MAX_K, 0, 1, 0}, A | M},
    [BK_KIND_BLOCKED2] = {"blocked2", F | T | C | BKI_KIND_SUB_FILE | BKI_KIND_SUB_CREATE,
                          {BKI_LINE_BITS, 1, BKI_LINE_BITS, BKI_BLOCKED_MAX_K, 0, 2, 0}, A | M},
    [BK_KIND_WINDOW] = {"window", F | T | C, {0}, A | BK_CAP_WINDOW},
    [BK_KIND_SPLIT] = {"split", F | T | C,
                       {BKI_SPLIT_BLOCK_BITS, 1, BKI_SPLIT_BLOCK_BITS, BKI_SPLIT_K, 0, 1,
                        BKI_SPLIT_K}, A | M},
    /* RedisBloom's links: only inside the chains bk_redisbloom_new makes;
     * whole 64-bit words, and a k with no cap of its own */
    [BK_KIND_REDISBLOOM] = {"redisbloom", F | BKI_KIND_SUB_FILE,
                            {64, 1, 0, BK_REDISBLOOM_MAX_HASHES, 0, 1, 0}, A},
    [BK_KIND_CUCKOO] = {"cuckoo", F | T | C, {0}, A | BK_CAP_REMOVE | BK_CAP_COUNT | BK_CAP_GROW},
    /* static: bk_filter_build makes them, never bk_filter_create */
    [BK_KIND_FUSE8] = {"fuse8", F | T | BKI_KIND_STATIC, {0}, BK_CAP_STATIC},
    [BK_KIND_FUSE16] = {"fuse16", F | T | BKI_KIND_STATIC, {0}, BK_CAP_STATIC},
};

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
