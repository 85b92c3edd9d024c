/*
 * Numbers as users write them on the command line (counts, sizes,
 * probabilities, seeds) and as the tool prints them back (human-readable
 * byte counts). Pure functions: no messages; the caller says what was bad.
 */
#ifndef BKC_NUMBERS_H
#define BKC_NUMBERS_H

#include <stddef.h>
#include <stdint.h>

/* A count: digits with an optional decimal suffix k, M, G, T (10^3..10^12),
 * a float form such as 1e7, or a power such as 2^32. 0 ok, -1 bad syntax
 * or out of range. */
int bkc_parse_count(const char *s, uint64_t *out);

/* A size in bytes: digits (a fraction allowed) with an optional binary
 * suffix K, M, G, T (2^10..2^40; "KB", "KiB" accepted too). 0 ok, -1 bad. */
int bkc_parse_size(const char *s, uint64_t *out);

/* A probability in (0, 1): "0.001", "1e-3" or "0.1%". 0 ok, -1 bad. */
int bkc_parse_prob(const char *s, double *out);

/* An unsigned 64-bit integer in decimal or 0x hex. 0 ok, -1 bad. */
int bkc_parse_u64(const char *s, uint64_t *out);

/* "1.5 MB", "12.0 GB": a human-readable byte count in buf; returns buf. */
const char *bkc_human_bytes(double bytes, char *buf, size_t len);

#endif /* BKC_NUMBERS_H */
