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

/* Edit distance (insertions, deletions, substitutions, swaps of two
 * neighbours) between a[0..n) and b[0..m), both at most 31 long. */
static int distance(const char *a, size_t n, const char *b, size_t m)
{
    int d[32][32];
    if (n > 31 || m > 31)
        return 99;
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* The --name in usage closest to the long option arg ("--fprr=x"), if
 * close enough to be a slip (a third of its letters, at least one), into
 * out; false if none. */
static bool closest_option(const char *arg, const char *usage, char *out, size_t cap)
{
    if (!usage || strncmp(arg, "--", 2) != 0)
        return false;
    const char *name = arg + 2;
    size_t n = strcspn(name, "=");
    int best = 99;
    for (const char *u = strstr(usage, "--"); u; u = strstr(u + 2, "--")) {
        const char *w = u + 2;
        size_t m = strspn(w, "abcdefghijklmnopqrstuvwxyz-");
        if (m < 2)
            continue;
        int dist = distance(name, n, w, m);
        /* a prefix of a longer name is a slip too (getopt refused it as
         * ambiguous, or it is of another command) */
        if (n >= 3 && n < m && strncmp(name, w, n) == 0)
            dist = 1;
        int limit = (int)n / 3 > 1 ? (int)n / 3 : 1;
        if (dist <= limit && dist < best && m + 3 <= cap) {
            best = dist;
            snprintf(out, cap, "--%.*s", (int)m, w);
        }
    }
    return best < 99;
}

int bkc_bad_option(char **argv, const char *usage)
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
    char near[40];
    if (closest_option(arg, usage, near, sizeof near))
        return bkc_usage_error("unknown option '%s' (did you mean %s?)", arg, near);
    return bkc_usage_error("unknown option or missing value: '%s'", arg);
}
