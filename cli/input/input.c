/*
 * Line reader for the bloomkit tool (see input.h).
 *
 * The buffer holds [start, end) of unread bytes; a line is found with memchr
 * and returned as a pointer into the buffer. When no newline is left, the
 * partial line is moved to the front and the rest of the buffer refilled
 * with one big read(). Only a line longer than the whole buffer makes it
 * grow (doubling), so the cost is one memchr pass and at most one memmove of
 * a partial line per block; `scanned` remembers how far a long line was
 * already searched so megabyte lines are not rescanned on every refill.
 */
#define _GNU_SOURCE
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BKC_DEFAULT_BUFFER ((size_t)1 << 20)

static size_t g_line_max = BKC_LINE_MAX;
static size_t g_initial_buffer = BKC_DEFAULT_BUFFER;
static volatile sig_atomic_t *g_stop_flag;
static int (*g_idle_fn)(void *ctx);
static void *g_idle_ctx;

void bkc_reader_set_idle_hook(int (*fn)(void *ctx), void *ctx)
{
    g_idle_fn = fn;
    g_idle_ctx = ctx;
}

void bkc_reader_set_stop_flag(volatile sig_atomic_t *flag)
{
    g_stop_flag = flag;
}

/* Set from another thread (bkc_reader_interrupt), so an atomic, not the
 * signal handler's flag. */
static int g_interrupted;

void bkc_reader_interrupt(bool on)
{
    __atomic_store_n(&g_interrupted, on, __ATOMIC_RELAXED);
}

/* Whether reading should end here: a signal's stop flag, or a thread that
 * stopped the readers. */
static bool stopping(void)
{
    return (g_stop_flag && __atomic_load_n(g_stop_flag, __ATOMIC_RELAXED)) ||
           __atomic_load_n(&g_interrupted, __ATOMIC_RELAXED);
}

static volatile sig_atomic_t *g_catch_flag;

/* The flag is read by other threads too (a read-ahead's reader): an
 * atomic store, which is also async-signal-safe. */
static void on_ending(int sig)
{
    int saved = errno;
    __atomic_store_n(g_catch_flag, sig, __ATOMIC_RELAXED);
    errno = saved;
}

void bkc_catch_endings(volatile sig_atomic_t *flag)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_ending;
    sigemptyset(&sa.sa_mask);
    g_catch_flag = flag;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    bkc_reader_set_stop_flag(flag);
}

struct bkc_reader {
    int fd;
    int own_fd;        /* close fd on close (not for stdin) */
    char *name;
    char *buf;
    size_t cap;
    size_t start;      /* first unread byte */
    size_t end;        /* one past the last valid byte */
    size_t scanned;    /* [start, scanned) is known to hold no '\n' */
    uint64_t searched; /* bytes the peek calls searched for a '\n' */
    size_t line_max;
    int eof;
    int stopped;       /* a read was interrupted with the stop flag set */
    int failed;
    uint64_t lineno;
    uint64_t offset;
    int64_t size;
    /* A range reader (bkc_reader_open_range): the file offset of the
     * range's first line, and the offset no line of the range starts at or
     * after (UINT64_MAX for a whole input). `offset` counts from `base`. */
    uint64_t base, limit;
    int lineno_known;  /* the range starts the file: line numbers are real */
    uint64_t line_start; /* file offset of the last line bkc_reader_next gave */
    char err[512];
};

void bkc_reader_set_limits(size_t line_max, size_t initial_buffer)
{
    g_line_max = line_max ? line_max : BKC_LINE_MAX;
    g_initial_buffer = initial_buffer ? initial_buffer : BKC_DEFAULT_BUFFER;
}

static void set_error(bkc_reader_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Names the line being read for an error message: "line 12", or in a
 * range that starts inside the file, where line numbers are not known,
 * "the line at byte 123456". */
static const char *next_line_name(const bkc_reader_t *r, char *buf, size_t len)
{
    if (r->lineno_known)
        snprintf(buf, len, "line %llu", (unsigned long long)(r->lineno + 1));
    else
        snprintf(buf, len, "the line at byte %llu", (unsigned long long)(r->base + r->offset));
    return buf;
}

static void set_error(bkc_reader_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->failed = 1;
}

bkc_reader_t *bkc_reader_open(const char *path, char *err, size_t errlen)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "(standard input)" : path;
    int fd = 0;
    struct stat st;

    if (errlen)
        err[0] = '\0';
    if (!is_stdin) {
        do {
            fd = open(path, O_RDONLY | O_CLOEXEC);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            if (errlen)
                snprintf(err, errlen, "%s: %s", name, strerror(errno));
            return NULL;
        }
    }
    if (fstat(fd, &st) != 0) {
        if (errlen)
            snprintf(err, errlen, "%s: %s", name, strerror(errno));
        if (!is_stdin)
            close(fd);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        if (errlen)
            snprintf(err, errlen, "%s: %s", name, strerror(EISDIR));
        if (!is_stdin)
            close(fd);
        return NULL;
    }

    bkc_reader_t *r = calloc(1, sizeof *r);
    char *nm = strdup(name);
    size_t cap = g_initial_buffer;
    char *buf = malloc(cap);
    if (!r || !nm || !buf) {
        free(r);
        free(nm);
        free(buf);
        if (!is_stdin)
            close(fd);
        if (errlen)
            snprintf(err, errlen, "%s: %s", name, strerror(ENOMEM));
        return NULL;
    }
    r->fd = fd;
    r->own_fd = !is_stdin;
    r->name = nm;
    r->buf = buf;
    r->cap = cap;
    r->line_max = g_line_max;
    r->size = S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
    r->limit = UINT64_MAX;
    r->lineno_known = 1;
#ifdef POSIX_FADV_SEQUENTIAL
    if (S_ISREG(st.st_mode))
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL); /* a hint */
#endif
    return r;
}

bkc_reader_t *bkc_reader_open_range(const char *path, uint64_t lo, uint64_t hi, char *err,
                                    size_t errlen)
{
    bkc_reader_t *r = bkc_reader_open(path, err, errlen);
    if (!r)
        return NULL;
    if (r->size < 0 || !r->own_fd) {
        if (errlen)
            snprintf(err, errlen, "%s: not a regular file (it cannot be read in parts)", r->name);
        bkc_reader_close(r);
        return NULL;
    }
    r->limit = hi;
    if (lo == 0)
        return r;
    /* The line holding byte lo - 1 belongs to the range before: read it
     * (its end, at the latest, is where this range's first line starts)
     * and start counting after it. */
    if (lseek(r->fd, (off_t)(lo - 1), SEEK_SET) < 0) {
        if (errlen)
            snprintf(err, errlen, "%s: %s", r->name, strerror(errno));
        bkc_reader_close(r);
        return NULL;
    }
    r->lineno_known = 0;
    r->base = lo - 1;
    r->limit = UINT64_MAX;
    const char *line;
    size_t len;
    if (bkc_reader_next(r, &line, &len) < 0) {
        if (errlen)
            snprintf(err, errlen, "%s", r->err);
        bkc_reader_close(r);
        return NULL;
    }
    r->base += r->offset;
    r->offset = 0;
    r->lineno = 0;
    r->limit = hi;
    return r;
}

/* Makes room after `end` for another read: moves the partial line to the
 * front, and grows the buffer if the partial line fills it. 0 or -1. */
static int make_room(bkc_reader_t *r)
{
    if (r->start > 0) {
        size_t n = r->end - r->start;
        memmove(r->buf, r->buf + r->start, n);
        r->scanned -= r->start;
        r->end = n;
        r->start = 0;
    }
    if (r->end < r->cap)
        return 0;
    /* The partial line fills the buffer. */
    if (r->cap > r->line_max) {
        char at[64];
        set_error(r, "%s: %s: longer than %zu bytes", r->name, next_line_name(r, at, sizeof at),
                  r->line_max);
        return -1;
    }
    size_t ncap = r->cap * 2;
    if (ncap > r->line_max + 2)
        ncap = r->line_max + 2; /* room for the longest line and its "\r\n" */
    if (ncap <= r->cap)
        ncap = r->cap + 1;
    char *nb = realloc(r->buf, ncap);
    if (!nb) {
        char at[64];
        set_error(r, "%s: %s: out of memory for a line of %zu bytes", r->name,
                  next_line_name(r, at, sizeof at), r->cap);
        return -1;
    }
    r->buf = nb;
    r->cap = ncap;
    return 0;
}

/* Calls the idle hook while r's input has no bytes ready, as often as it
 * asks; returns when bytes (or the end, or an error) are ready, or a
 * signal interrupts the wait. */
static void wait_while_idle(const bkc_reader_t *r)
{
    struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
    if (poll(&pfd, 1, 0) != 0)
        return;
    int again = g_idle_fn(g_idle_ctx);
    while (again >= 0 && !stopping() && poll(&pfd, 1, again) == 0)
        again = g_idle_fn(g_idle_ctx);
}

/* Reads once into the free space; sets eof at end of input. 0 or -1. */
static int fill(bkc_reader_t *r)
{
    if (make_room(r) != 0)
        return -1;
    for (;;) {
        if (stopping()) {
            r->stopped = 1; /* the signal came between reads */
            return 0;
        }
        if (g_idle_fn && r->size < 0) {
            wait_while_idle(r);
            if (stopping())
                continue; /* the signal came while waiting */
        }
        ssize_t got = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (got > 0) {
            r->end += (size_t)got;
            return 0;
        }
        if (got == 0) {
            r->eof = 1;
            return 0;
        }
        if (errno == EINTR) {
            if (stopping()) {
                r->stopped = 1;
                return 0;
            }
            continue;
        }
        set_error(r, "%s: %s", r->name, strerror(errno));
        return -1;
    }
}

/* Returns the line [start, start+len) and consumes `consumed` bytes. */
static int emit(bkc_reader_t *r, size_t len, size_t consumed, const char **line,
                size_t *lenp)
{
    const char *p = r->buf + r->start;
    if (len > r->line_max) {
        char at[64];
        set_error(r, "%s: %s: longer than %zu bytes", r->name, next_line_name(r, at, sizeof at),
                  r->line_max);
        return -1;
    }
    r->start += consumed;
    r->scanned = r->start;
    r->line_start = r->base + r->offset;
    r->offset += consumed;
    r->lineno++;
    *line = p;
    *lenp = len;
    return 1;
}

/* More input after a partial line, unless that line is already over the
 * limit. 0 or -1 (error set). */
static int read_more(bkc_reader_t *r)
{
    if (r->end - r->start > r->line_max + 1) {
        char at[64];
        set_error(r, "%s: %s: longer than %zu bytes", r->name, next_line_name(r, at, sizeof at),
                  r->line_max);
        return -1;
    }
    return fill(r);
}

int bkc_reader_next(bkc_reader_t *r, const char **line, size_t *len)
{
    if (r->failed)
        return -1;
    if (r->base + r->offset >= r->limit)
        return 0; /* the next line starts in the next range */
    for (;;) {
        if (r->stopped)
            return 0;
        if (r->scanned < r->end) {
            char *nl = memchr(r->buf + r->scanned, '\n', r->end - r->scanned);
            if (nl) {
                size_t n = (size_t)(nl - (r->buf + r->start));
                size_t consumed = n + 1;
                if (n > 0 && r->buf[r->start + n - 1] == '\r')
                    n--;
                return emit(r, n, consumed, line, len);
            }
            r->scanned = r->end;
        }
        if (r->eof) {
            size_t n = r->end - r->start;
            if (n == 0)
                return 0;
            return emit(r, n, n, line, len);
        }
        if (read_more(r) != 0)
            return -1;
    }
}

int bkc_reader_peek_lines(bkc_reader_t *r, const char **block, size_t *len)
{
    if (r->failed)
        return -1;
    for (;;) {
        if (r->stopped)
            return 0;
        if (r->start < r->end) {
            /* Only the bytes read since the last look: [start, scanned)
             * holds no '\n', so a line arriving 64 KiB at a time through a
             * pipe is searched once, not once per read (quadratic). */
            size_t from = r->scanned > r->start ? r->scanned : r->start;
            const char *nl = from < r->end ? memrchr(r->buf + from, '\n', r->end - from) : NULL;
            r->searched += r->end - from;
            if (!nl)
                r->scanned = r->end;
            if (nl || r->eof) {
                *block = r->buf + r->start;
                *len = nl ? (size_t)(nl + 1 - *block) : r->end - r->start;
                return 1;
            }
        } else if (r->eof) {
            return 0;
        }
        if (read_more(r) != 0)
            return -1;
    }
}

void bkc_reader_consume(bkc_reader_t *r, size_t bytes, uint64_t lines)
{
    r->start += bytes;
    if (r->scanned < r->start)
        r->scanned = r->start;
    r->offset += bytes;
    r->lineno += lines;
}

uint64_t bkc_reader_searched(const bkc_reader_t *r)
{
    return r->searched;
}

const char *bkc_reader_error(const bkc_reader_t *r)
{
    return r->err;
}

const char *bkc_reader_name(const bkc_reader_t *r)
{
    return r->name;
}

uint64_t bkc_reader_lineno(const bkc_reader_t *r)
{
    return r->lineno_known ? r->lineno : 0;
}

uint64_t bkc_reader_line_offset(const bkc_reader_t *r)
{
    return r->line_start;
}

uint64_t bkc_reader_offset(const bkc_reader_t *r)
{
    return r->offset;
}

int64_t bkc_reader_size(const bkc_reader_t *r)
{
    return r->size;
}

void bkc_reader_close(bkc_reader_t *r)
{
    if (!r)
        return;
    if (r->own_fd)
        close(r->fd);
    free(r->buf);
    free(r->name);
    free(r);
}
