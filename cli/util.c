/*
 * Shared helpers for the bloomkit tool (see util.h). Every message the tool
 * prints goes through bkc_error() so they all read "bloomkit CMD: ..." and
 * name the file they are about.
 */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

const char *bkc_cmd_name = "";

/* Written in pieces, not formatted into a buffer first: a message may
 * quote an input line of any length. at (may be NULL) is the reader whose
 * current line the message is about. */
static void vmessage(const bkc_reader_t *at, const char *fmt, va_list ap)
{
    fprintf(stderr, "bloomkit%s%s: ", *bkc_cmd_name ? " " : "", bkc_cmd_name);
    if (at)
        fprintf(stderr, "%s: line %llu: ", bkc_reader_name(at),
                (unsigned long long)bkc_reader_lineno(at));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void bkc_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(NULL, fmt, ap);
    va_end(ap);
}

int bkc_usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "bloomkit %s: ", bkc_cmd_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'bloomkit %s --help')\n", bkc_cmd_name);
    return BKC_EXIT_ERROR;
}

int bkc_bad_option(char **argv)
{
    return bkc_usage_error("unknown option or missing value: '%s'", argv[optind - 1]);
}

int bkc_line_error(bkc_progress_t *prog, const bkc_reader_t *r, const char *fmt, ...)
{
    bkc_progress_clear(prog);
    va_list ap;
    va_start(ap, fmt);
    vmessage(r, fmt, ap);
    va_end(ap);
    return BKC_EXIT_ERROR;
}

int bkc_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int bkc_parse_count(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || isnan(v))
        return -1;
    double mul = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': mul = 1e3; break;
        case 'm': case 'M': mul = 1e6; break;
        case 'g': case 'G': mul = 1e9; break;
        case 't': case 'T': mul = 1e12; break;
        default: return -1;
        }
        if (end[1])
            return -1;
    }
    v *= mul;
    if (!(v >= 0) || v >= 18446744073709551616.0 || v != floor(v))
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int bkc_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || isnan(v) || v < 0)
        return -1;
    double mul = 1;
    if (*end) {
        switch (*end) {
        case 'b': case 'B': mul = 1; break;
        case 'k': case 'K': mul = 1024.0; break;
        case 'm': case 'M': mul = 1048576.0; break;
        case 'g': case 'G': mul = 1073741824.0; break;
        case 't': case 'T': mul = 1099511627776.0; break;
        default: return -1;
        }
        const char *rest = end + 1;
        if (*end != 'b' && *end != 'B' &&
            !(*rest == '\0' || strcasecmp(rest, "b") == 0 || strcasecmp(rest, "ib") == 0))
            return -1;
        if ((*end == 'b' || *end == 'B') && *rest)
            return -1;
    }
    v *= mul;
    if (v >= 18446744073709551616.0)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int bkc_parse_prob(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s)
        return -1;
    if (*end == '%' && end[1] == '\0')
        v /= 100;
    else if (*end)
        return -1;
    if (!(v > 0 && v < 1))
        return -1;
    *out = v;
    return 0;
}

static void status_message(const char *path, const char *doing, bk_status_t st, const char *why)
{
    if (st == BK_EIO || st == BK_ENOSPC)
        bkc_error("%s: %s: %s", path, doing, errno ? strerror(errno) : bk_strerror(st));
    else if (why && *why)
        bkc_error("%s: %s: %s (%s)", path, doing, bk_strerror(st), why);
    else
        bkc_error("%s: %s: %s", path, doing, bk_strerror(st));
}

bk_filter_t *bkc_load_filter(const char *path)
{
    bk_filter_t *f = NULL;
    const char *why = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        bkc_error("%s: %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(sb.st_mode)) {
        bkc_error("%s: %s", path, strerror(EISDIR));
        return NULL;
    }
    errno = 0;
    bk_status_t st = bk_filter_load(&f, path, &why);
    if (st != BK_OK) {
        status_message(path, "cannot load filter", st, why);
        return NULL;
    }
    return f;
}

bk_filter_t *bkc_filter_operand(int argc, char **argv, bool map, const char **path)
{
    if (optind >= argc) {
        bkc_usage_error("FILE is required");
        return NULL;
    }
    *path = argv[optind++];
    if (!map)
        return bkc_load_filter(*path);
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_open(&f, *path, BK_MAP_READONLY, &why);
    if (st != BK_OK) {
        if (why)
            bkc_error("%s: cannot open filter: %s (%s)", *path, bk_strerror(st), why);
        else
            bkc_error("%s: cannot open filter: %s", *path, bk_strerror(st));
        return NULL;
    }
    return f;
}

int bkc_save_filter(const bk_filter_t *f, const char *path)
{
    errno = 0;
    bk_status_t st = bk_filter_save(f, path);
    if (st != BK_OK) {
        status_message(path, "cannot save filter", st, NULL);
        return -1;
    }
    return 0;
}

void bkc_warn_over_capacity(const bk_filter_t *f, const char *name, const char *what)
{
    if (bk_filter_kind(f) == BK_KIND_SCALABLE)
        return; /* grows instead, or refuses when non-scaling */
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    if (in.items > in.capacity)
        bkc_error("%s: warning: %llu items exceed the capacity %llu; %s %.3g (sized for %g; "
                  "use a larger -n)",
                  name, (unsigned long long)in.items, (unsigned long long)in.capacity, what,
                  in.expected_fpr, in.fpr_target);
}

const char *bkc_human_bytes(double b, char *buf, size_t len)
{
    static const char *units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (b >= 1000 && u < 5) {
        b /= 1000;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f %s", b, units[u]);
    else
        snprintf(buf, len, "%.1f %s", b, units[u]);
    return buf;
}

int64_t bkc_inputs_size(char **paths, int n)
{
    if (n == 0)
        return -1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        struct stat sb;
        if (strcmp(paths[i], "-") == 0 || stat(paths[i], &sb) != 0 || !S_ISREG(sb.st_mode))
            return -1;
        total += (int64_t)sb.st_size;
    }
    return total;
}

int bkc_for_each_line(char **paths, int n, bkc_norm_t norm, bkc_progress_t *prog,
                      bkc_line_fn fn, bkc_end_fn end, void *ctx)
{
    static char *stdin_only[] = {"-"};
    if (n == 0) {
        paths = stdin_only;
        n = 1;
    }
    char *nbuf = NULL;
    size_t ncap = 0;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char err[600];
        bkc_reader_t *r = bkc_reader_open(paths[i], err, sizeof err);
        if (!r) {
            bkc_progress_clear(prog);
            bkc_error("%s", err);
            rc = BKC_EXIT_ERROR;
            break;
        }
        if (prog)
            prog->reader = r;
        const char *line;
        size_t len;
        int got;
        while ((got = bkc_reader_next(r, &line, &len)) == 1) {
            const char *key = line;
            size_t klen = len;
            if (norm != BKC_NORM_NONE) {
                ptrdiff_t k = bkc_normalize(norm, line, len, &nbuf, &ncap);
                if (k < 0) {
                    rc = bkc_line_error(prog, r, "out of memory");
                    break;
                }
                key = nbuf;
                klen = (size_t)k;
            }
            rc = fn(ctx, line, len, key, klen, r);
            if (rc)
                break;
            bkc_progress_tick(prog);
        }
        if (got < 0 && rc == 0) {
            bkc_progress_clear(prog);
            bkc_error("%s", bkc_reader_error(r));
            rc = BKC_EXIT_ERROR;
        }
        if (rc == 0 && end)
            rc = end(ctx, r);
        if (prog) {
            prog->done_base += bkc_reader_offset(r);
            prog->reader = NULL;
        }
        bkc_reader_close(r);
    }
    free(nbuf);
    return rc;
}

static char stdout_buf[1 << 16];
static char out_buf[1 << 20];
static size_t out_used;
static int out_errno;
static int out_tty = -1;

static int write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            out_errno = errno;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int bkc_out_flush(void)
{
    if (out_errno)
        return -1;
    size_t n = out_used;
    out_used = 0;
    return n ? write_all(out_buf, n) : 0;
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
            if (write_all(line, len) != 0)
                return -1;
            return write_all("\n", 1);
        }
    }
    memcpy(out_buf + out_used, line, len);
    out_buf[out_used + len] = '\n';
    out_used += len + 1;
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
