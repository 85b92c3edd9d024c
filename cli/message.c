/*
 * Messages on stderr (see message.h).
 */
#define _GNU_SOURCE
#include "message.h"

#include <getopt.h>
#include <stdio.h>

const char *bkc_cmd_name = "";

/* Written in pieces, not formatted into a buffer first: a message may
 * quote an input line of any length. */
void bkc_verror_at(const bkc_reader_t *at, const char *fmt, va_list ap)
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
    bkc_verror_at(NULL, fmt, ap);
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
