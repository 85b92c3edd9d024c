/*
 * The join's sizing arithmetic (see join.h): how much memory a set of
 * lines costs, how many partitions a spill needs and how large their
 * buffers are, and a Bloom filter sized to a memory budget. No I/O.
 *
 * Memory: the budget is split so that at any moment the set (5/8), the
 * Bloom filter (1/4) and the spill buffers (1/8) fit in it together
 * (join_split.c, which holds no set while it spills, gives the filter and
 * the buffers more).
 */
#ifndef BKC_JOIN_PLAN_H
#define BKC_JOIN_PLAN_H

#include "bloomkit/bloomkit.h"

#include <stddef.h>
#include <stdint.h>

/* The set's share of a budget. */
static inline size_t bkc_join_set_budget(size_t mem)
{
    return mem / 8 * 5;
}

/* What a set holding `count` lines read from `off` bytes of input costs:
 * the bytes, a record header and padding per line, and table slots at a
 * load between 3/8 and 3/4 (16 bytes each). */
double bkc_join_set_bytes(uint64_t off, uint64_t count);

/* What holding a whole input in a set needs, projected from a sample:
 * `count` keys in `bytes` bytes read, the input being `scale` times the
 * sample. The records (bytes, an 8-byte header and padding; the line end
 * already counted in bytes), a chunk partly used, and a table sized for
 * the projected lines with a tenth to spare. */
double bkc_join_set_need(uint64_t bytes, uint64_t count, double scale);

typedef struct bkc_join_parts {
    uint32_t parts;   /* partitions */
    size_t bufsize;   /* write buffer per partition */
    uint64_t lines;   /* estimated lines of the smallest input */
} bkc_join_parts_t;

/* Partitions for the smallest input when `count` of its lines, from `off`
 * of its `size` bytes (UINT64_MAX: unknown), outgrew the set of a budget
 * of mem; n inputs; the write buffers of all partitions within bufmem
 * (mem / 8 beside a set, more when nothing else is held), at least 16 KB
 * each, which caps the partitions. */
bkc_join_parts_t bkc_join_plan_parts(size_t mem, size_t bufmem, uint64_t count, uint64_t off,
                                     uint64_t size, uint32_t n);

/* A blocked Bloom filter (XXH3, seed) for about n_est keys in at most
 * `bytes`: at rate fpr if that fits, else the best k for the bytes there
 * are. Returns the library's status; *out (caller frees) on BK_OK. */
bk_status_t bkc_join_filter(bk_filter_t **out, uint64_t n_est, size_t bytes, double fpr,
                            uint64_t seed);

#endif /* BKC_JOIN_PLAN_H */
