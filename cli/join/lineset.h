/*
 * An exact set of lines held within a byte budget, for `bloomkit common`.
 *
 * Lines are copied into an arena of large chunks (no allocation per line)
 * and indexed by an open-addressing table of (64-bit hash, record pointer)
 * slots with linear probing. Each line carries a 32-bit stamp the caller
 * uses to record which inputs it has been seen in. Every byte the set holds
 * (chunks and table) is counted against the budget given at creation, and
 * an insert that would go over it is refused (BKC_SET_FULL) rather than
 * done, so the caller can switch to spilling with the set still intact.
 * An empty set always accepts its first line, whatever its size, so a
 * caller that partitions on BKC_SET_FULL always makes progress.
 *
 * Chunks and tables come straight from mmap, so freeing a set gives the
 * memory back to the system at once and the process's peak memory is the
 * budget, not the budget plus allocator fragmentation.
 */
#ifndef BKC_LINESET_H
#define BKC_LINESET_H

#include <stddef.h>
#include <stdint.h>

typedef struct bkc_lineset bkc_lineset_t;

enum {
    BKC_SET_NEW = 1,   /* inserted */
    BKC_SET_OLD = 0,   /* was already there */
    BKC_SET_FULL = -1, /* would exceed the budget; nothing changed */
    BKC_SET_NOMEM = -2 /* the system refused memory; nothing changed */
};

/* A new empty set that will hold at most `budget` bytes. NULL if out of
 * memory. Release with bkc_lineset_free(). */
bkc_lineset_t *bkc_lineset_new(size_t budget);
void bkc_lineset_free(bkc_lineset_t *s);

/* Changes the budget of a set (for example when a caller learns that an
 * input will fit in memory whole). A smaller budget than what the set
 * holds only refuses further growth. */
void bkc_lineset_set_budget(bkc_lineset_t *s, size_t budget);

/* Sizes the table for about `lines` lines at once, so filling it later
 * needs no doubling (no rehash, no old and new table side by side).
 * 0, BKC_SET_FULL if that table would not fit in the budget beside what
 * the set holds, or BKC_SET_NOMEM; on failure nothing changed. */
int bkc_lineset_reserve(bkc_lineset_t *s, uint64_t lines);

/* The table bytes that bkc_lineset_reserve(s, lines) would map. */
size_t bkc_lineset_table_bytes(uint64_t lines);

/* Empties the set but keeps its memory (chunks of the usual size and the
 * table) for the next use, so solving many partitions one after another
 * does not pay the system's zero-filling of fresh pages each time. */
void bkc_lineset_reset(bkc_lineset_t *s);

/* Inserts line[0..len) with hash h (the caller's; equal lines must have
 * equal hashes) and stamp 0 if it is not there. Returns BKC_SET_NEW,
 * BKC_SET_OLD, BKC_SET_FULL or BKC_SET_NOMEM. */
int bkc_lineset_insert(bkc_lineset_t *s, uint64_t h, const char *line, size_t len);

/* The stamp of line[0..len) (hash h) for reading and writing, or NULL if
 * the line is not in the set. Valid until the next insert or free. */
uint32_t *bkc_lineset_stamp(bkc_lineset_t *s, uint64_t h, const char *line, size_t len);

/* A hint that hash h is about to be inserted or looked up: fetches its
 * table slot into the cache, so a caller that hashes a batch of lines
 * first and then probes them overlaps the cache misses. */
void bkc_lineset_prefetch(const bkc_lineset_t *s, uint64_t h);

/* Distinct lines held, and bytes held (chunks + table). */
uint64_t bkc_lineset_count(const bkc_lineset_t *s);
size_t bkc_lineset_bytes(const bkc_lineset_t *s);

/* Calls fn for each line in insertion order with its stamp; stops and
 * returns that value when fn returns non-zero, else returns 0. */
int bkc_lineset_foreach(const bkc_lineset_t *s,
                        int (*fn)(void *ctx, const char *line, size_t len, uint32_t stamp),
                        void *ctx);

#endif /* BKC_LINESET_H */
