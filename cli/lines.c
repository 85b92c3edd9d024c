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
