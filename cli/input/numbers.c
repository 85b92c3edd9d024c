/*
 * Command-line numbers (see numbers.h). Each parser refuses a sign, a
 * leading blank and trailing junk, so "-1" or "10 " is an error rather than
 * a surprise.
 */
#include "numbers.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The number at the start of s, with no sign or blank before it; *end
 * after it. 0 or -1. */
static int leading_number(const char *s, double *v, char **end)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    *v = strtod(s, end);
    return errno || *end == s || isnan(*v) ? -1 : 0;
}

int bkc_parse_count(const char *s, uint64_t *out)
{
    double v;
    char *end;
    if (leading_number(s, &v, &end) != 0)
        return -1;
    double mul = 1;
    if (*end == '^') { /* 2^32, as the help texts write sizes */
        char *e2;
        double x;
        if (leading_number(end + 1, &x, &e2) != 0 || *e2 || x != floor(x) || x < 0 || x > 64)
            return -1;
        v = pow(v, x);
    } else if (*end) {
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
    double v;
    char *end;
    if (leading_number(s, &v, &end) != 0 || v < 0)
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
            !(*rest == '\0' || strcasecmp(rest, "b") == 0 || strcasecmp(rest, "ib") == 0 ||
              strcmp(rest, "i") == 0))
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
