/*
 * Lines printed into a pipe that its reader has not read yet
 * (dedup --state): their hashes in the order they were written, each with
 * the output offset its line ends at, and a set of the same hashes for
 * "is this line in flight?". dedup records a line in its seen-set only
 * once the reader has taken it (the kernel says how much of a pipe is
 * unread), so lines a reader that went away never read are printed again
 * by the next run; meanwhile the set answers for them.
 */
#ifndef BKC_INFLIGHT_H
#define BKC_INFLIGHT_H

#include "bloomkit/bloomkit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bkc_inflight {
    bk_hash_t *hash; /* FIFO ring of cap entries, count from head */
    uint64_t *end;
    size_t head, count, cap;
    bk_hash_t *set; /* open addressing, set_cap slots (a power of two) */
    bool *used;
    size_t set_cap;
} bkc_inflight_t;

void bkc_inflight_init(bkc_inflight_t *q);
void bkc_inflight_free(bkc_inflight_t *q);
/* True if a line with this hash is in flight. */
bool bkc_inflight_has(const bkc_inflight_t *q, bk_hash_t h);
/* A printed line whose bytes end at output offset `end` (offsets never
 * decrease). 0, or -1 when memory runs out. */
int bkc_inflight_push(bkc_inflight_t *q, bk_hash_t h, uint64_t end);
/* Takes out up to max of the oldest lines that end at or before
 * `consumed`, into out; returns how many. */
size_t bkc_inflight_pop_upto(bkc_inflight_t *q, uint64_t consumed, bk_hash_t *out, size_t max);
/* Lines in flight. */
size_t bkc_inflight_count(const bkc_inflight_t *q);

#endif /* BKC_INFLIGHT_H */
