/*
 * Counting the "\n" bytes of a block of input: the read-ahead's reader
 * (cli/ahead.c) counts every byte of dedup's input this way on its own
 * thread, the one whose work cannot be shared out, so the count is
 * written once per instruction set and chosen by the CPU at run time.
 */
#ifndef BKC_NEWLINES_H
#define BKC_NEWLINES_H

#include <stddef.h>
#include <stdint.h>

/* Counts the "\n" bytes in p[0..n). */
typedef uint64_t (*bkc_newline_counter_t)(const char *p, size_t n);

/* The fastest counter this CPU runs (AVX2 where it has it). Call it once,
 * before threads use the counter it returns. */
bkc_newline_counter_t bkc_newline_counter(void);

/* The portable counter, eight bytes a step, for every CPU. */
uint64_t bkc_count_newlines_generic(const char *p, size_t n);

/* The AVX2 counter, 64 bytes a step; NULL where the tool was built for a
 * CPU family without it. Only to be called where the CPU has AVX2 and
 * POPCNT (bkc_newline_counter checks). */
extern const bkc_newline_counter_t bkc_count_newlines_avx2;

#endif /* BKC_NEWLINES_H */
