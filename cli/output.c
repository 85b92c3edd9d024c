/*
 * Output (see output.h): the one place the tool writes whole buffers to a
 * file descriptor, and the buffered standard output the filtering
 * subcommands print their lines through.
 */
#define _GNU_SOURCE
#include "output.h"
#include "message.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int bkc_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) { /* no progress and no error: call it a full disk */
            errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static char stdout_buf[1 << 16];
static char out_buf[1 << 20];
static size_t out_used;
static int out_errno;
static int out_tty = -1;

static uint64_t out_written; /* bytes the kernel took, a failed write's included */

/* Writes to standard output, remembering the first error for
 * bkc_stdout_finish and counting every byte taken, so that a caller can
 * tell how far a write that failed half-way got (bkc_out_written). */
static int out_write(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            out_errno = w < 0 ? errno : ENOSPC;
            return -1;
        }
        out_written += (uint64_t)w;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

uint64_t bkc_out_written(void)
{
    return out_written;
}

int bkc_out_unread(uint64_t *unread)
{
    struct stat sb;
    int n = 0;
    if (fstat(1, &sb) != 0 || !S_ISFIFO(sb.st_mode) || ioctl(1, FIONREAD, &n) != 0 || n < 0)
        return -1;
    *unread = (uint64_t)n;
    return 0;
}

int bkc_out_error(void)
{
    return out_errno;
}

int bkc_out_flush(void)
{
    if (out_errno)
        return -1;
    size_t n = out_used;
    out_used = 0;
    return n ? out_write(out_buf, n) : 0;
}

void bkc_out_sync(void)
{
    if (out_tty < 0)
        out_tty = isatty(1) == 1;
    if (out_tty)
        (void)bkc_out_flush();
}

int bkc_out_line(const char *line, size_t len)
{
    if (out_errno)
        return -1;
    if (len + 1 > sizeof out_buf - out_used) {
        if (bkc_out_flush() != 0)
            return -1;
        if (len + 1 > sizeof out_buf) {
            if (out_write(line, len) != 0)
                return -1;
            return out_write("\n", 1);
        }
    }
    memcpy(out_buf + out_used, line, len);
    out_buf[out_used + len] = '\n';
    out_used += len + 1;
    return 0;
}

int bkc_out_lines(const char *bytes, size_t len)
{
    if (out_errno)
        return -1;
    if (len > sizeof out_buf - out_used) {
        if (bkc_out_flush() != 0)
            return -1;
        if (len >= sizeof out_buf)
            return out_write(bytes, len);
    }
    memcpy(out_buf + out_used, bytes, len);
    out_used += len;
    return 0;
}

void bkc_stdout_setup(void)
{
    /* A person watching a terminal sees lines as they come. */
    if (!isatty(1))
        setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
}

int bkc_stdout_finish(void)
{
    if (bkc_out_flush() != 0) {
        bkc_error("standard output: %s", strerror(out_errno ? out_errno : EIO));
        return -1;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        bkc_error("standard output: %s", strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
