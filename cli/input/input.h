/*
 * Line input for the bloomkit tool: reads a file or standard input in big
 * blocks and hands out one line at a time, pointing into its own buffer, so
 * a pipeline of 100 million keys costs no allocation per line.
 *
 * Lines are bytes, not text: a line may contain NUL bytes and invalid UTF-8
 * and may be megabytes long (the buffer grows to hold it, up to
 * BKC_LINE_MAX). A line ends at "\n"; a "\r" right before that "\n" is
 * dropped too, so CRLF files give the same keys as LF files. A last line
 * without a newline is still a line; an empty file has no lines.
 */
#ifndef BKC_INPUT_H
#define BKC_INPUT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest line the reader accepts (1 GiB); a longer one is a read error
 * that names the file and line, never a silent split or skip. */
#define BKC_LINE_MAX ((size_t)1 << 30)

typedef struct bkc_reader bkc_reader_t;

/* Opens path for reading; "-" means standard input (not closed by
 * bkc_reader_close). Returns a reader the caller releases with
 * bkc_reader_close(), or NULL with a message "PATH: reason" in err (errlen
 * bytes, always NUL-terminated when errlen > 0). A directory is refused
 * here rather than failing on the first read. */
bkc_reader_t *bkc_reader_open(const char *path, char *err, size_t errlen);

/* A reader of the lines of regular file path that start in the byte range
 * [lo, hi): the first is the line after the "\n" at or after lo - 1 (the
 * whole file's first line when lo is 0), the last is the one holding byte
 * hi - 1, read to its end wherever that is. Ranges that split a file end to
 * end (hi of one the lo of the next) thus give every line once, to one of
 * them. Line numbers are unknown in a range that does not start at 0
 * (bkc_reader_lineno gives 0, and errors name the line by its byte
 * offset). For bkc_reader_next only, not the peek calls. NULL with a
 * message in err as for bkc_reader_open, or when path is not a regular
 * file. */
bkc_reader_t *bkc_reader_open_range(const char *path, uint64_t lo, uint64_t hi, char *err,
                                    size_t errlen);

/* Next line without its "\n" / "\r\n".
 * 1: *line and *len are valid until the next call (the bytes may contain
 *    NUL; *line is not NUL-terminated);
 * 0: end of input;
 * -1: read error or a line longer than BKC_LINE_MAX; bkc_reader_error()
 *    says what. Every later call returns -1 again. */
int bkc_reader_next(bkc_reader_t *r, const char **line, size_t *len);

/* For parsers that take many short lines at a time: the bytes of the
 * whole lines buffered now, *block and *len, reading more if none is
 * (every line in it ends with "\n", except the last line of the input,
 * which may lack it). Nothing is consumed: the caller hands back the
 * prefix it used with bkc_reader_consume, and can take a line it does not
 * handle itself with bkc_reader_next. 1; 0 at the end of the input (or
 * when the stop flag ended it); -1 on a read error or a line longer than
 * the limit, as bkc_reader_next. */
int bkc_reader_peek_lines(bkc_reader_t *r, const char **block, size_t *len);

/* Bytes the peek calls have searched for a line end so far: about the
 * input's size however the input arrives (each byte is searched once,
 * even in a line that takes many reads; the tests hold that). */
uint64_t bkc_reader_searched(const bkc_reader_t *r);

/* Consumes the first `bytes` bytes of the last peek, which end at a line
 * end and hold `lines` lines: the line number and offset advance past
 * them. */
void bkc_reader_consume(bkc_reader_t *r, size_t bytes, uint64_t lines);

/* The last error as a complete message naming the file and, where it
 * applies, the line: "PATH: line 12: longer than 1073741824 bytes" or
 * "PATH: Input/output error". "" if there was none. */
const char *bkc_reader_error(const bkc_reader_t *r);

/* "path" as given to open, or "(standard input)" for "-". */
const char *bkc_reader_name(const bkc_reader_t *r);

/* 1-based number of the last line returned (0 before the first, and in a
 * range reader that does not start the file). */
uint64_t bkc_reader_lineno(const bkc_reader_t *r);

/* The file offset at which the last line bkc_reader_next returned starts
 * (also in a range reader: counted from the start of the file). */
uint64_t bkc_reader_line_offset(const bkc_reader_t *r);

/* Bytes consumed so far: the lines returned plus their line ends. */
uint64_t bkc_reader_offset(const bkc_reader_t *r);

/* Total bytes if the input is a regular file, else -1 (pipes, terminals). */
int64_t bkc_reader_size(const bkc_reader_t *r);

/* Closes the file (not standard input) and frees the reader. NULL is a
 * no-op. */
void bkc_reader_close(bkc_reader_t *r);

/* When *flag is non-zero as a signal interrupts a read (the handler must
 * be installed without SA_RESTART), the input ends there: bkc_reader_next
 * returns 0 and a partial last line is dropped. Lets a tool stop on SIGINT
 * while it waits on a pipe or terminal. NULL turns it off. */
void bkc_reader_set_stop_flag(volatile sig_atomic_t *flag);
/* on: every reader ends its input at its next read or wait, as the stop
 * flag would (a wait with an idle hook notices within the hook's period).
 * Safe to call from any thread: lets one thread stop another that reads.
 * off: reading goes on as before. */
void bkc_reader_interrupt(bool on);

/* Makes SIGINT, SIGTERM and SIGHUP end a run after the lines read so far
 * instead of killing it: the handler stores the signal in *flag (also the
 * readers' stop flag, above), and no SA_RESTART, so a read waiting on a
 * pipe returns and the reader ends the input there. For the subcommands
 * that save what they did (add, dedup --state). */
void bkc_catch_endings(volatile sig_atomic_t *flag);

/* fn(ctx) is called before a read that would wait: input from a pipe or
 * terminal with no bytes ready. A tool that holds lines or output back for
 * speed pushes them out there, so a slow producer's lines still flow
 * through a pipeline at once. fn returns how many milliseconds later it
 * wants to be called again if the input is still idle (a checkpoint that
 * falls due while the producer is quiet), or -1 for never. NULL turns it
 * off. */
void bkc_reader_set_idle_hook(int (*fn)(void *ctx), void *ctx);

/* For tests: the largest line accepted (default BKC_LINE_MAX), and the
 * initial buffer size (default 1 MiB), so long-line paths can be reached
 * with small inputs. Applies to readers opened afterwards. */
void bkc_reader_set_limits(size_t line_max, size_t initial_buffer);

#endif /* BKC_INPUT_H */
