/*
 * The line loop every line-reading subcommand runs (see lines.h): open
 * each input in turn, read its lines, normalize each into a key, hand both
 * to the subcommand, and keep the progress display told how far it got.
 */
#define _GNU_SOURCE
#include "lines.h"
#include "message.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int bkc_line_error(bkc_progress_t *prog, const bkc_reader_t *r, const char *fmt, ...)
{
    bkc_progress_clear(prog);
    va_list ap;
    va_start(ap, fmt);
    bkc_verror_at(r, fmt, ap);
    va_end(ap);
    return BKC_EXIT_ERROR;
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

int bkc_for_each_input(char **paths, int n, bkc_progress_t *prog, bkc_input_fn fn, void *ctx)
{
    static char *stdin_only[] = {"-"};
    if (n == 0) {
        paths = stdin_only;
        n = 1;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char err[600];
        bkc_reader_t *r = bkc_reader_open(paths[i], err, sizeof err);
        if (!r) {
            bkc_progress_clear(prog);
            bkc_error("%s", err);
            return BKC_EXIT_ERROR;
        }
        if (prog)
            prog->reader = r;
        rc = fn(ctx, r);
        if (prog) {
            prog->done_base += bkc_reader_offset(r);
            prog->reader = NULL;
        }
        bkc_reader_close(r);
    }
    return rc;
}

int bkc_input_failed(bkc_progress_t *prog, const bkc_reader_t *r)
{
    bkc_progress_clear(prog);
    bkc_error("%s", bkc_reader_error(r));
    return BKC_EXIT_ERROR;
}

/* bkc_for_each_line's work on one input. */
typedef struct line_loop {
    bkc_norm_t norm;
    bkc_progress_t *prog;
    bkc_line_fn fn;
    bkc_end_fn end;
    void *ctx;
    char *nbuf; /* the normalized key */
    size_t ncap;
} line_loop_t;

static int each_line(void *vloop, bkc_reader_t *r)
{
    line_loop_t *l = vloop;
    const char *line;
    size_t len;
    int got, rc = 0;
    while ((got = bkc_reader_next(r, &line, &len)) == 1) {
        const char *key = line;
        size_t klen = len;
        if (l->norm != BKC_NORM_NONE) {
            ptrdiff_t k = bkc_normalize(l->norm, line, len, &l->nbuf, &l->ncap);
            if (k < 0)
                return bkc_line_error(l->prog, r, "out of memory");
            key = l->nbuf;
            klen = (size_t)k;
        }
        if ((rc = l->fn(l->ctx, line, len, key, klen, r)) != 0)
            return rc;
        bkc_progress_tick(l->prog);
    }
    if (got < 0)
        return bkc_input_failed(l->prog, r);
    return l->end ? l->end(l->ctx, r) : 0;
}

int bkc_for_each_line(char **paths, int n, bkc_norm_t norm, bkc_progress_t *prog,
                      bkc_line_fn fn, bkc_end_fn end, void *ctx)
{
    line_loop_t l = {norm, prog, fn, end, ctx, NULL, 0};
    int rc = bkc_for_each_input(paths, n, prog, each_line, &l);
    free(l.nbuf);
    return rc;
}
