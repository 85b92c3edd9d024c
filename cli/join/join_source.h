/*
 * The inputs of the join (see join.h) as it reads them: an input file at
 * level 0, or one partition of a spill file below, each read as batches of
 * keys hashed with the level's seed. At level 0 a line becomes its key
 * here (--normalize, --ignore-case); spilled lines are keys already.
 */
#ifndef BKC_JOIN_SOURCE_H
#define BKC_JOIN_SOURCE_H

#include "bloomkit/bloomkit.h"
#include "input.h"
#include "join.h"
#include "spill.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bkc_join_src {
    const char *path;          /* level 0 */
    bkc_reader_t *pre;         /* level 0: a pipe, opened up front */
    bkc_reader_t *rd;
    /* Level 0, when ranged: only the lines starting in bytes [lo, hi) of
     * path (bkc_reader_open_range), one thread's part of a split input. */
    bool ranged;
    uint64_t lo, hi;
    /* Deeper levels: partition `part` of sp[0], then of sp[1], and so on to
     * sp[nsp - 1] (one spill per thread that wrote the level, in the
     * order of the input's byte ranges, so the lines come back in the
     * input's order). */
    bkc_spill_t *const *sp;
    uint32_t nsp, part;
    uint32_t sp_at;            /* the spill being read */
    uint64_t sp_done;          /* bytes read from the spills before it */
    bkc_spill_reader_t *sr;
    uint64_t size;             /* bytes, UINT64_MAX if unknown */
};

/* Keys are hashed a group at a time, then probed, so the memory accesses
 * of the group overlap instead of queueing. */
#define BKC_JOIN_BATCH 32

typedef struct bkc_join_batch {
    uint32_t n;
    char *buf; /* copies of the keys (the reader's are valid for one call) */
    size_t cap, used;
    size_t off[BKC_JOIN_BATCH], len[BKC_JOIN_BATCH];
    /* The two halves of each key's hash, in separate arrays: gcc copied a
     * returned struct as one 16-byte load of two 8-byte stores, which
     * cannot be forwarded and stalled every line (about 7% of the CPU time
     * in perf). */
    uint64_t lo[BKC_JOIN_BATCH], hi[BKC_JOIN_BATCH];
} bkc_join_batch_t;

/* Sets join->err from a format; returns -1 (for "return bkc_join_fail()"). */
int bkc_join_fail(bkc_join_t *join, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hands a common key to join->emit and counts it. 0, or -1 with
 * join->emit_failed set. */
int bkc_join_emit(bkc_join_t *join, const char *key, size_t len);

/* Smallest first (stable; n is small): the smallest input becomes the
 * in-memory set. */
void bkc_join_sort_by_size(bkc_join_src_t *srcs, uint32_t n);

int bkc_join_src_open(bkc_join_t *join, bkc_join_src_t *s);
void bkc_join_src_close(bkc_join_src_t *s);
void bkc_join_close_all(bkc_join_src_t *srcs, uint32_t n);
/* Whether s can be read again from its start: a spill partition or a
 * named regular file; not a pipe (named or not), nor standard input even
 * when it is a regular file (it is one open file, read once). */
bool bkc_join_src_rereadable(const bkc_join_src_t *s);
/* Bytes consumed so far. */
uint64_t bkc_join_src_offset(const bkc_join_src_t *s);

/* The next key: 1 with *key, *len valid until the next call, 0 at the
 * end, -1 with join->err. */
int bkc_join_src_next(bkc_join_t *join, bkc_join_src_t *s, const char **key, size_t *len);

/* Reads up to BKC_JOIN_BATCH keys of s into b with their hashes: 1 if any
 * were read, 0 at the end, -1 with join->err. Input files are hashed with
 * seed (both halves). Spill partitions give back the low half stored with
 * each line (the hash of the level that wrote it, all the set needs) and
 * hi = 0, unless fresh asks for both halves hashed with seed (to partition
 * again). At level 0 a worker (join->nshards > 1) gets only the keys of
 * its own shard. */
int bkc_join_src_batch(bkc_join_t *join, bkc_join_src_t *s, bkc_join_batch_t *b, uint64_t seed,
                       bool fresh);

/* Spills batch b (keys hashed fresh, see bkc_join_src_batch) into parts
 * partitions of sp through the prefilter f (may be NULL): with `add`, every
 * key is added to f and spilled (the smallest input); without, keys f
 * cannot hold are counted in join->filtered_lines and not spilled (they
 * cannot be common). f must use the join's hash and the batch's seed: the
 * keys are not hashed again. 0, or -1 with join->err. */
int bkc_join_spill_batch(bkc_join_t *join, bkc_spill_t *sp, uint32_t parts, bk_filter_t *f,
                         bool add, const bkc_join_batch_t *b);

static inline const char *bkc_join_batch_key(const bkc_join_batch_t *b, uint32_t i)
{
    return b->buf + b->off[i];
}

static inline bk_hash_t bkc_join_hash(uint64_t seed, const char *key, size_t len)
{
    return bk_hash_key(BK_HASH_XXH3, seed, key, len);
}

/* The shard (worker) of a key at level 0: the low 32 bits of the hash's
 * high half scaled to [0, nshards); partitions use its top 32 bits and the
 * set the low half, so the three choices are independent. */
static inline uint32_t bkc_join_shard_of(uint64_t hi, uint32_t nshards)
{
    return (uint32_t)(((hi & 0xFFFFFFFFu) * nshards) >> 32);
}

/* The partition of a key: the top 32 bits of the hash's high half scaled
 * to [0, parts) by multiply-shift; the set uses the low half, so the lines
 * of one partition still spread over the whole table. */
static inline uint32_t bkc_join_part_of(uint64_t hi, uint32_t parts)
{
    return (uint32_t)(((hi >> 32) * parts) >> 32);
}

/* The seed of a partitioning level: a fresh one per level, so lines that
 * shared a partition split up at the next level. */
static inline uint64_t bkc_join_level_seed(const bkc_join_t *join, unsigned level)
{
    return join->seed ^ (UINT64_C(0x9E3779B97F4A7C15) * (level + 1));
}

#endif /* BKC_JOIN_SOURCE_H */
