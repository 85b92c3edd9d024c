/*
 * Hash-partitioned spill files for `bloomkit common`.
 *
 * One spill holds the lines of one input split into P partitions, in one
 * temporary file: each partition has a write buffer, and a full buffer is
 * appended to the file as a block whose offset and length go into that
 * partition's block list. Reading partition p back reads its blocks in
 * order, so its lines come back in the order they were added. One file
 * per input (not one per partition) keeps the number of open files small
 * however many partitions there are.
 *
 * The file is created already unlinked (O_TMPFILE, or mkstemp + unlink
 * where the file system lacks it): it has no name to leave behind, and the
 * kernel frees its space when the process exits, whether it finishes, fails,
 * is interrupted by Ctrl-C or is killed.
 *
 * Record format inside a block: the line length as a LEB128 varint, the
 * line's 64-bit hash (8 bytes, host order: the file never outlives the
 * process), then the line's bytes. A record never spans blocks. Keeping
 * the hash costs 8 bytes of disk per line and saves hashing every spilled
 * line again when its partition is read back.
 */
#ifndef BKC_SPILL_H
#define BKC_SPILL_H

#include <stddef.h>
#include <stdint.h>

typedef struct bkc_spill bkc_spill_t;
typedef struct bkc_spill_reader bkc_spill_reader_t;

/* A new spill of `parts` partitions in directory dir, with write buffers
 * of `bufsize` bytes each (allocated on first use). NULL with a message in
 * err on failure (e.g. "cannot create a spill file in DIR: reason"). */
bkc_spill_t *bkc_spill_create(const char *dir, uint32_t parts, size_t bufsize, char *err,
                              size_t errlen);

/* Appends a line and its hash h to partition part. 0 on success, -1 on a write or memory
 * error (bkc_spill_error() says which; every later call fails too). */
int bkc_spill_add(bkc_spill_t *s, uint32_t part, uint64_t h, const char *line, size_t len);

/* Writes out every buffer and releases them; the spill becomes readable.
 * 0 or -1 as for add. */
int bkc_spill_finish(bkc_spill_t *s);

/* Closes (and so frees) the file and releases everything. NULL is a no-op. */
void bkc_spill_free(bkc_spill_t *s);

const char *bkc_spill_error(const bkc_spill_t *s);
/* Bytes of records in partition part (after finish) and in all of them. */
uint64_t bkc_spill_part_bytes(const bkc_spill_t *s, uint32_t part);
uint64_t bkc_spill_total_bytes(const bkc_spill_t *s);

/* A reader of one partition of a finished spill. NULL if out of memory.
 * Several readers of one spill may be open at once. */
bkc_spill_reader_t *bkc_spill_reader_open(const bkc_spill_t *s, uint32_t part);
/* 1: *line, *len valid until the next call and *h the hash given to add;
 * 0: end; -1: read error or a damaged record (bkc_spill_reader_error()
 * says which). */
int bkc_spill_reader_next(bkc_spill_reader_t *r, const char **line, size_t *len, uint64_t *h);
const char *bkc_spill_reader_error(const bkc_spill_reader_t *r);
/* Bytes of records consumed so far. */
uint64_t bkc_spill_reader_offset(const bkc_spill_reader_t *r);
void bkc_spill_reader_close(bkc_spill_reader_t *r);

#endif /* BKC_SPILL_H */
