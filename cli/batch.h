/*
 * A batch of input lines for the library's batch calls: lines are copied
 * into one arena (the reader's buffer is only valid until its next line),
 * and handed to bk_filter_add_batch / bk_filter_contains_batch in groups,
 * which hash a group first and prefetch every target cache line, so a
 * filter far larger than the caches costs about one memory latency per
 * group rather than per key.
 */
#ifndef BKC_BATCH_H
#define BKC_BATCH_H

#include "bloomkit/bloomkit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BKC_BATCH_KEYS 256
#define BKC_BATCH_BYTES ((size_t)1 << 20)

typedef struct bkc_batch {
    char *arena;
    size_t used, cap;
    size_t n;
    size_t line_off[BKC_BATCH_KEYS], line_len[BKC_BATCH_KEYS];
    /* The line's bytes in the arena with its line end as read: line_len
     * + 1 when a "\n" follows it there (the read-ahead keeps the input as
     * it was), else line_len (bkc_batch_push copies the line alone). */
    size_t raw_len[BKC_BATCH_KEYS];
    size_t key_off[BKC_BATCH_KEYS];
    bk_key_t keys[BKC_BATCH_KEYS];
    bool flags[BKC_BATCH_KEYS];
    uint64_t lineno[BKC_BATCH_KEYS]; /* input line of each entry, for messages */
    bk_hash_t hash[BKC_BATCH_KEYS];  /* each key's filter hash, once bkc_batch_hash
                                        (or the read-ahead, ahead.h) set them */
} bkc_batch_t;

void bkc_batch_init(bkc_batch_t *b);
void bkc_batch_free(bkc_batch_t *b);

/* Appends a line and its key (key may equal line: stored once). Returns 0,
 * or -1 if out of memory. After it, bkc_batch_full() says whether to
 * process the batch now. */
int bkc_batch_push(bkc_batch_t *b, const char *line, size_t len, const char *key, size_t klen);

static inline bool bkc_batch_full(const bkc_batch_t *b)
{
    return b->n == BKC_BATCH_KEYS || b->used >= BKC_BATCH_BYTES;
}

/* Fills b->keys[0..n) from the arena (call before a batch call). */
void bkc_batch_keys(bkc_batch_t *b);

/* Fills b->hash[0..n) with f's hash of each key (keys filled first). */
void bkc_batch_hash(bkc_batch_t *b, const bk_filter_t *f);

static inline const char *bkc_batch_line(const bkc_batch_t *b, size_t i)
{
    return b->arena + b->line_off[i];
}

/* Prints the lines i with flags[i] set, each with "\n", in order: a run
 * of such lines that lie one after the other in the arena, each followed
 * there by its "\n", goes out in one copy. 0, or -1 as bkc_out_line. */
int bkc_batch_print_flagged(const bkc_batch_t *b);

/* fresh[i] = the key is new: not seen[i] (a probe said the filter may hold
 * it) and not an earlier key of the batch; keys must be filled
 * (bkc_batch_keys). Finds what an add would find without adding, for a
 * caller that must print lines before recording them. */
void bkc_batch_first_fresh(const bkc_batch_t *b, const bool *seen, bool *fresh);

/* Records the input line of the entry just pushed. */
static inline void bkc_batch_set_line(bkc_batch_t *b, uint64_t lineno)
{
    b->lineno[b->n - 1] = lineno;
}

/* Empties the batch (keeps the memory). */
static inline void bkc_batch_reset(bkc_batch_t *b)
{
    b->n = 0;
    b->used = 0;
}

#endif /* BKC_BATCH_H */
