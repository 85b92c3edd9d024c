/*
 * The loop that feeds every line of every input to a subcommand (add,
 * check, remove, dedup, distinct, once), with the key normalization and
 * the progress display, and the message about one input line.
 */
#ifndef BKC_LINES_H
#define BKC_LINES_H

#include "input.h"
#include "normalize.h"
#include "progress.h"

#include <stddef.h>
#include <stdint.h>

/* "bloomkit CMD: INPUT: line N: message\n" on stderr about the line r just
 * read, after erasing the progress bar (prog may be NULL). Returns 2, for
 * the line callbacks of bkc_for_each_line that stop there. */
int bkc_line_error(bkc_progress_t *prog, const bkc_reader_t *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Called for each line of the inputs: the raw line (without its line end)
 * and the key to use (normalized; the same bytes when no normalization is
 * asked for). Returns 0 to go on; any other value stops the loop and is
 * returned by bkc_for_each_line. */
typedef int (*bkc_line_fn)(void *ctx, const char *line, size_t len, const char *key,
                           size_t klen, const bkc_reader_t *r);

/* Called after the last line of each input, while its reader is still
 * open (to finish a batch and name the input in messages). Returns as fn. */
typedef int (*bkc_end_fn)(void *ctx, const bkc_reader_t *r);

/* Reads every line of paths[0..n) in order ("-" is standard input; n == 0
 * means standard input alone), normalizes it, and calls fn; then end (may
 * be NULL) once per input. Progress (may be NULL) is told the bytes
 * consumed. Returns 0 when all were read, 2 after printing a message naming
 * the file (and line) on an input error, or fn's or end's non-zero value. */
int bkc_for_each_line(char **paths, int n, bkc_norm_t norm, bkc_progress_t *prog,
                      bkc_line_fn fn, bkc_end_fn end, void *ctx);

/* Called once per input with its open reader (the progress display reads
 * its offset). Returns 0 to go on to the next input; any other value
 * stops and is returned by bkc_for_each_input. */
typedef int (*bkc_input_fn)(void *ctx, bkc_reader_t *r);

/* Opens paths[0..n) in order ("-" is standard input; n == 0 means standard
 * input alone) and calls fn with each, for readers that take the lines
 * their own way. Returns 0, 2 after a message naming a file that cannot
 * be opened, or fn's non-zero value. */
int bkc_for_each_input(char **paths, int n, bkc_progress_t *prog, bkc_input_fn fn, void *ctx);

/* After a reader returned -1: its message (naming the file and line), the
 * progress bar erased first. Returns 2. */
int bkc_input_failed(bkc_progress_t *prog, const bkc_reader_t *r);

/* Total size of the inputs if all are regular files, else -1 (for the
 * progress display's percentage). */
int64_t bkc_inputs_size(char **paths, int n);

#endif /* BKC_LINES_H */
