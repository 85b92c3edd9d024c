/*
 * Messages on stderr (see message.h).
 */
#define _GNU_SOURCE
#include "message.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

const char *bkc_shown(const char *s, size_t len, char *buf)
{
    size_t show = len > 40 ? 40 : len;
    for (size_t i = 0; i < show; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    strcpy(buf + show, len > 40 ? "..." : "");
    return buf;
}

/* The argument a short option letter came from. getopt reorders argv and
 * only steps past a cluster of letters ("-abc") when it is done with it,
 * so argv[optind - 1] may be another argument: look for the cluster. */
static const char *cluster_of(char **argv, int letter)
{
    for (int i = 1; argv[i]; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (argv[i][0] == '-' && argv[i][1] && argv[i][1] != '-' && strchr(argv[i] + 1, letter))
            return argv[i];
    }
    return NULL;
}

int bkc_bad_option(char **argv)
{
    const char *arg = argv[optind - 1];
    bool letter = optopt > ' ' && optopt < 0x7f; /* a short option's letter */
    bool in_arg = arg[0] == '-' && arg[1] != '-' && letter && strchr(arg + 1, optopt);
    const char *cluster = letter && !in_arg ? cluster_of(argv, optopt) : NULL;
    if (cluster)
        arg = cluster;
    /* "-data.txt" read as options -d -a -t ...: say how to name the file */
    if (arg[0] == '-' && arg[1] != '-' && (strchr(arg, '.') || strchr(arg, '/')))
        return bkc_usage_error("unknown option '-%c' in '%s'; to name a file that starts with "
                               "'-', write ./%s or put -- before it",
                               letter ? optopt : arg[1], arg, arg);
    return bkc_usage_error("unknown option or missing value: '%s'", arg);
}
