/*
 * Writing out: bkc_write_all() is the tool's one loop that writes a whole
 * buffer to a file descriptor (spill files and standard output use it),
 * and the bkc_out_* calls are a 1 MiB buffer of its own in front of
 * standard output for the subcommands that print input lines (no stdio
 * lock per line). A write error is remembered and reported once, by
 * bkc_stdout_finish().
 */
#ifndef BKC_OUTPUT_H
#define BKC_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

/* Writes buf[0..n) to fd, retrying short writes and EINTR. 0, or -1 with
 * errno set. */
int bkc_write_all(int fd, const void *buf, size_t n);

/* Gives stdout (stdio) a large buffer unless it is a terminal. */
void bkc_stdout_setup(void);

/* Writes line[0..len) and "\n" to standard output through the buffer.
 * 0, or -1 after a write error (reported by bkc_stdout_finish). */
int bkc_out_line(const char *line, size_t len);

/* Writes bytes[0..len), whole lines each ending in "\n", to standard
 * output through the same buffer (a large block goes straight out). 0 or
 * -1 as bkc_out_line. */
int bkc_out_lines(const char *bytes, size_t len);

/* Writes out the buffer of bkc_out_line. 0 or -1 as bkc_out_line. */
int bkc_out_flush(void);

/* The errno of the first write error of bkc_out_line/bkc_out_flush, or 0,
 * for a subcommand that words the message itself. */
int bkc_out_error(void);

/* Bytes of bkc_out_line's output the kernel has taken so far, including
 * those of a write that then failed. */
uint64_t bkc_out_written(void);

/* When standard output is a pipe: *unread receives how many bytes written
 * into it its reader has not read yet (still so after the reader went
 * away), and 0 is returned; -1 for anything else. */
int bkc_out_unread(uint64_t *unread);

/* bkc_out_flush() when stdout is a terminal (a person sees lines as they
 * come); callers use it after each batch. */
void bkc_out_sync(void);

/* Flushes both buffers; prints a message and returns -1 on a write
 * error. */
int bkc_stdout_finish(void);

#endif /* BKC_OUTPUT_H */
