/*
 * Shared helpers for the bloomkit tool: messages on stderr, parsing of
 * sizes and counts given on the command line, loading and saving filter
 * files with messages that name the file, and the loop that feeds every
 * line of every input to a subcommand.
 */
#ifndef BKC_UTIL_H
#define BKC_UTIL_H

#include "bloomkit/bloomkit.h"
#include "input.h"
#include "normalize.h"
#include "progress.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses, as grep: 0 yes / done, 1 no, 2 trouble. */
#define BKC_EXIT_YES 0
#define BKC_EXIT_NO 1
#define BKC_EXIT_ERROR 2

/* The subcommand being run, for messages ("bloomkit add: ..."). */
extern const char *bkc_cmd_name;

/* "bloomkit CMD: message\n" on stderr. */
void bkc_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "bloomkit CMD: message (see 'bloomkit CMD --help')" and returns 2,
 * for bad command lines. */
int bkc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For getopt's '?': "unknown option or missing value: '-x'" as a usage
 * error (argv as given to the subcommand). Returns 2. */
int bkc_bad_option(char **argv);

/* "bloomkit CMD: INPUT: line N: message\n" on stderr about the line r just
 * read, after erasing the progress bar (prog may be NULL). Returns 2, for
 * the line callbacks of bkc_for_each_line that stop there. */
int bkc_line_error(bkc_progress_t *prog, const bkc_reader_t *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A count: digits with an optional decimal suffix k, M, G, T (10^3..10^12)
 * or a float form such as 1e7. 0 ok, -1 bad syntax or out of range. */
int bkc_parse_count(const char *s, uint64_t *out);

/* A size in bytes: digits with an optional binary suffix K, M, G, T
 * (2^10..2^40; "KB", "KiB" accepted too). 0 ok, -1 bad. */
int bkc_parse_size(const char *s, uint64_t *out);

/* A probability in (0, 1): "0.001", "1e-3" or "0.1%". 0 ok, -1 bad. */
int bkc_parse_prob(const char *s, double *out);

/* An unsigned 64-bit integer in decimal or 0x hex. 0 ok, -1 bad. */
int bkc_parse_u64(const char *s, uint64_t *out);

/* Loads a filter file, printing one line naming the file on failure.
 * Returns the filter (caller frees) or NULL. */
bk_filter_t *bkc_load_filter(const char *path);

/* Takes the FILE operand at argv[optind] (advancing optind past it) and
 * loads it with bkc_load_filter, or with map maps it read-only
 * (bk_filter_open). Sets *path to it and returns the filter (caller frees),
 * or NULL after printing why: "FILE is required" as a usage error, or a
 * message naming the file. The subcommand then exits with 2. */
bk_filter_t *bkc_filter_operand(int argc, char **argv, bool map, const char **path);

/* Saves atomically, printing one line naming the file on failure. 0 or -1. */
int bkc_save_filter(const bk_filter_t *f, const char *path);

/* If a non-scaling filter holds more items than it was sized for, warns
 * "NAME: warning: N items exceed the capacity C; WHAT P (...)" with P its
 * expected FPR now. */
void bkc_warn_over_capacity(const bk_filter_t *f, const char *name, const char *what);

/* "1.5 MB", "12.0 GB": a human-readable byte count in buf. */
const char *bkc_human_bytes(double bytes, char *buf, size_t len);

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

/* Total size of the inputs if all are regular files, else -1. */
int64_t bkc_inputs_size(char **paths, int n);

/* Gives stdout a large buffer. */
void bkc_stdout_setup(void);
/* Writes line[0..len) and "\n" to standard output through a 1 MiB buffer
 * of its own (no stdio locking per line). 0, or -1 after a write error
 * (reported by bkc_stdout_finish). */
int bkc_out_line(const char *line, size_t len);
/* Writes out the buffer of bkc_out_line; also done when stdout is a
 * terminal by bkc_out_sync(), which callers use after each batch. */
int bkc_out_flush(void);
void bkc_out_sync(void);
/* Flushes both buffers; prints a message and returns -1 on a write
 * error. */
int bkc_stdout_finish(void);

#endif /* BKC_UTIL_H */
