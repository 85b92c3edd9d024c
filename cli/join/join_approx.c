/*
 * The approximate join (`common --approx`, see join.h): Bloom filters
 * only, one pass over each input, memory fixed in advance. Filter i holds
 * the keys of input i that passed filter i-1, so the last one approximates
 * the intersection of all but the last input; the last input's keys that
 * pass it are emitted, once each thanks to a last filter of emitted keys.
 * A common line is never missed, except when the filter of emitted keys
 * wrongly says it was emitted already; a line that is not common is
 * emitted with probability at most the sum of the filters' rates.
 */
#include "join.h"
#include "join_plan.h"
#include "join_source.h"

static bk_filter_t *approx_filter(bkc_join_t *join, uint64_t size, size_t bytes, double fpr,
                                  uint64_t seed)
{
    /* Lines are assumed to be about 32 bytes when sizing; the rate that
     * is reported is measured from the filled filter, not assumed. */
    uint64_t n_est = size == UINT64_MAX ? (uint64_t)bytes : size / 32 + 1;
    bk_filter_t *f = NULL;
    bk_status_t st = bkc_join_filter(&f, n_est, bytes, fpr, seed);
    if (st != BK_OK) {
        bkc_join_fail(join, "cannot create a filter: %s", bk_strerror(st));
        return NULL;
    }
    return f;
}

/* Calls fn for every key of s (opened and closed here); stops at fn's
 * first non-zero. 0 or -1. */
static int each_key(bkc_join_t *join, bkc_join_src_t *s,
                    int (*fn)(bkc_join_t *join, void *ctx, const char *key, size_t len),
                    void *ctx)
{
    if (bkc_join_src_open(join, s) != 0)
        return -1;
    const char *key;
    size_t len;
    int r;
    while ((r = bkc_join_src_next(join, s, &key, &len)) == 1)
        if (fn(join, ctx, key, len) != 0)
            return -1;
    if (r < 0)
        return -1;
    bkc_join_src_close(s);
    return 0;
}

/* Filters of one pass: prev (NULL on the first) lets keys through; cur
 * remembers them; printed remembers what was emitted. */
typedef struct pass {
    const bk_filter_t *prev;
    bk_filter_t *cur, *printed;
    uint64_t seed;
} pass_t;

/* Adds to cur a key that prev may hold. */
static int filter_key(bkc_join_t *join, void *vp, const char *key, size_t len)
{
    pass_t *p = vp;
    bk_hash_t h = bkc_join_hash(p->seed, key, len);
    if (p->prev && !bk_filter_contains_hash(p->prev, h))
        return 0;
    if (bk_filter_add_hash(p->cur, h, NULL) != BK_OK)
        return bkc_join_fail(join, "filter add failed");
    return 0;
}

/* Emits a key that prev may hold, once (printed remembers). */
static int emit_key(bkc_join_t *join, void *vp, const char *key, size_t len)
{
    pass_t *p = vp;
    if (!bk_filter_contains_hash(p->prev, bkc_join_hash(p->seed, key, len)))
        return 0;
    bool was_new = false;
    if (bk_filter_add(p->printed, key, len, &was_new) != BK_OK)
        return bkc_join_fail(join, "filter add failed");
    if (!was_new)
        return 0;
    return bkc_join_emit(join, key, len);
}

static double expected_fpr(const bk_filter_t *f)
{
    bk_filter_info_t inf;
    bk_filter_info(f, &inf);
    return inf.expected_fpr;
}

int bkc_join_approx(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, double fpr)
{
    bkc_join_sort_by_size(srcs, n);
    uint64_t seed = bkc_join_level_seed(join, 0);
    size_t each = join->mem / 3;
    bk_filter_t *prev = NULL, *cur = NULL, *printed = NULL;
    double fp_total = 0;
    int rc = 0;
    for (uint32_t i = 0; i + 1 < n && rc == 0; i++) {
        cur = approx_filter(join, srcs[i].size, each, fpr, seed);
        pass_t p = {prev, cur, NULL, seed};
        rc = cur ? each_key(join, &srcs[i], filter_key, &p) : -1;
        if (rc == 0)
            fp_total += expected_fpr(cur);
        bk_filter_free(prev);
        prev = cur;
        cur = NULL;
    }
    if (rc == 0) {
        printed = approx_filter(join, srcs[n - 1].size, each, fpr / 100, seed ^ 1);
        pass_t p = {prev, NULL, printed, seed};
        rc = printed ? each_key(join, &srcs[n - 1], emit_key, &p) : -1;
    }
    if (rc == 0) {
        join->approx_false_rate = fp_total > 1 ? 1.0 : fp_total;
        join->approx_miss_rate = expected_fpr(printed);
    } else {
        bkc_join_close_all(srcs, n);
    }
    bk_filter_free(prev);
    bk_filter_free(printed);
    return rc;
}
