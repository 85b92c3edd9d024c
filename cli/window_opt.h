/*
 * Window filters in the tool: the --window option of create and dedup, and
 * the wall clock that moves time windows. A window remembers lines for the
 * last N adds ("--window 100M") or the last T of time ("--window 7d"); the
 * library holds the generations, the tool gives it the time.
 */
#ifndef BKC_WINDOW_OPT_H
#define BKC_WINDOW_OPT_H

#include "options.h"

#include <stdbool.h>

/* Parses --window SPEC into *sz: a count ("100M", "5000", "1e6": the last
 * that many adds; sets the capacity, so -n must not say otherwise) or a
 * time with a unit s, m, h, d or w ("7d", "90m": seconds of wall clock;
 * the capacity -n is then the most lines expected per window). Sets the
 * kind to window. Returns -1 when parsing goes on, else 2 after a usage
 * error; *is_time says which kind of window it was. */
int bkc_window_option(const char *spec, bkc_sizing_opts_t *sz, bool *is_time);

/* A time window's clock: seconds since the epoch. */
uint64_t bkc_window_now(void);

/* Whether f is a window with a time span. */
bool bkc_is_time_window(const bk_filter_t *f);

/* Moves a writable time window to the wall clock; other filters and
 * read-only ones are left alone. */
void bkc_window_tick(bk_filter_t *f);

/* Lookups of a batch of keys in f as of time `now` (bk_filter_contains_at
 * for each): a read-only or mapped time window answers for the present
 * without being moved. Returns the hits; out receives n flags. */
size_t bkc_window_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out,
                                 uint64_t now);

/* A span in seconds in the largest unit that divides it ("7d", "90m"),
 * into buf. */
const char *bkc_window_span_text(uint64_t seconds, char *buf, size_t len);

#endif /* BKC_WINDOW_OPT_H */
