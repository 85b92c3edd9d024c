/*
 * The join's sizing arithmetic (see join_plan.h).
 */
#include "join_plan.h"
#include "lineset.h"

#include <math.h>

double bkc_join_set_bytes(uint64_t off, uint64_t count)
{
    return (double)off + (double)count * (12.0 + 32.0);
}

double bkc_join_set_need(uint64_t bytes, uint64_t count, double scale)
{
    double lines = (double)count * scale * 1.1 + 1;
    return ((double)bytes + (double)count * 10.0) * scale * 1.05 + (double)(4u << 20) +
           (double)bkc_lineset_table_bytes((uint64_t)lines);
}

/* Write buffers per partition, within bufmem in all: the child level reads
 * n partitions at once, each through a buffer of one block, so keep those
 * within a sixteenth of the budget. Small buffers stay in the cache between
 * the copy into them and the write() out of them: 128 KB took less CPU than
 * 1 MB (bench/common.sh) and still makes each write() and pread() a large
 * sequential one. */
static size_t buffer_size(size_t mem, size_t bufmem, uint32_t parts, uint32_t n)
{
    size_t bufsize = bufmem / parts;
    if (bufsize > mem / 16 / n)
        bufsize = mem / 16 / n;
    if (bufsize > ((size_t)128 << 10))
        bufsize = (size_t)128 << 10;
    if (bufsize < 4096)
        bufsize = 4096;
    return bufsize;
}

bkc_join_parts_t bkc_join_plan_parts(size_t mem, size_t bufmem, uint64_t count, uint64_t off,
                                     uint64_t size, uint32_t n)
{
    double scale = 16; /* unknown size: assume the input is large */
    if (size != UINT64_MAX && off > 0)
        scale = (double)size / (double)off;
    if (scale < 1)
        scale = 1;
    double est = bkc_join_set_bytes(off, count) * scale * 1.1;
    /* Partitions of about an eighth of the set's budget. Half would be
     * enough for the random spread of partition sizes never to make one
     * overflow, but smaller ones are faster to solve: each partition's set
     * (records and table) touches fewer fresh pages and less memory beyond
     * the caches. On 2 x 10 million URLs with --memory 256M, 55 partitions
     * instead of 14 took about 15% less CPU time (bench/common.sh). */
    double want = ceil(est / ((double)bkc_join_set_budget(mem) / 8));
    uint64_t pmax = bufmem / (16 << 10);
    if (pmax > 4096)
        pmax = 4096;
    if (pmax < 2)
        pmax = 2;
    bkc_join_parts_t p;
    p.parts = want < 2 ? 2 : want > (double)pmax ? (uint32_t)pmax : (uint32_t)want;
    p.bufsize = buffer_size(mem, bufmem, p.parts, n);
    p.lines = (uint64_t)((double)count * scale * 1.1);
    return p;
}

bk_status_t bkc_join_filter(bk_filter_t **out, uint64_t n_est, size_t bytes, double fpr,
                            uint64_t seed)
{
    bk_options_t o = {0};
    o.kind = BK_KIND_BLOCKED;
    o.hash = BK_HASH_XXH3;
    o.seed_set = true;
    o.seed = seed;
    if (n_est == 0)
        n_est = 1;
    bk_plan_t plan;
    if (bk_plan(BK_KIND_BLOCKED, n_est, fpr, &plan) == BK_OK && plan.bytes <= bytes)
        return bk_filter_create(out, n_est, fpr, &o);
    uint64_t cells = (uint64_t)bytes * 8;
    double kk = (double)cells / (double)n_est * 0.6931;
    uint32_t k = kk < 1 ? 1 : kk > 16 ? 16 : (uint32_t)(kk + 0.5);
    return bk_filter_create_exact(out, BK_KIND_BLOCKED, cells < 512 ? 512 : cells, k, &o);
}
