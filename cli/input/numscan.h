/*
 * Plain decimal lines to values, fast: the inner loop of distinct and once.
 * A plain line is 1 to 19 digits followed by "\n" or "\r\n", below a
 * maximum, and of the width asked for (see bkc_digits_fit); anything else
 * (blanks, signs, longer numbers, empty lines) is left to the caller's
 * careful parser, which explains what is wrong with it.
 *
 * bkc_numscan_file reads a whole regular file with several threads at
 * once: the file is cut into one byte range per thread at line ends, each
 * thread reads (pread, in 1 MiB chunks) and parses only its own range, and
 * all set their values in
 * the one map with the library's shared batch calls (atomic word updates:
 * bk_bitmap_set_batch_shared, bk_bitmap2_add_batch_shared), so the counts
 * stay exact. Parsing, the bulk of the work, is divided; before, every
 * thread parsed the whole file and kept its share of the values.
 */
#ifndef BKC_NUMSCAN_H
#define BKC_NUMSCAN_H

#include "bloomkit/bloomkit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Two different lines must never count as one value: with a width every
 * value has exactly that many digits; without, a number may not start
 * with 0 (unless it is 0), since 0123 would be taken as 123. */
static inline bool bkc_digits_fit(const char *s, size_t ndigits, unsigned width)
{
    return width ? ndigits == width : (s[0] != '0' || ndigits == 1);
}

/* Parses plain lines from p (the text up to end must end with "\n") into
 * vals (room for cap), stopping at end, at a line that is not plain, or
 * when vals is full. Returns where it stopped (a line start); *n is the
 * number of lines taken, one value each. */
const char *bkc_scan_plain(const char *p, const char *end, uint64_t max, unsigned width,
                           uint64_t *vals, size_t cap, size_t *n);

#define BKC_NUMSCAN_MAX_THREADS 256

typedef struct bkc_numscan {
    bk_bitmap_t *b1;  /* distinct: the map to set, or NULL */
    bk_bitmap2_t *b2; /* once: the map to add to, or NULL */
    uint64_t max;
    unsigned width;
    unsigned threads; /* at most BKC_NUMSCAN_MAX_THREADS are used */
    const char *path; /* the file's name */
    /* results */
    uint64_t lines, fresh;
} bkc_numscan_t;

/* Whether bkc_numscan_file is worth using: more than one thread to run. */
bool bkc_numscan_usable(const bkc_numscan_t *s);

/* Sets the values of every line of the regular file fd (size bytes) in
 * s's map. 1: done, s->lines and s->fresh set. 0: a line is not plain, or
 * the file could not be mapped: nothing is counted, the map may hold part
 * of the values, and the caller clears it and reads the file the careful
 * way (which names the line). */
int bkc_numscan_file(bkc_numscan_t *s, int fd, uint64_t size);

#endif /* BKC_NUMSCAN_H */
