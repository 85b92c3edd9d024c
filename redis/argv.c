/*
 * Strict argument parsing: a word compared without case, an unsigned
 * integer and a double that take the whole argument or nothing (no
 * trailing bytes, no sign on an unsigned, no NaN).
 */
#define _GNU_SOURCE
#include "argv.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool bkr_arg_is(const RedisModuleString *arg, const char *word)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

bool bkr_arg_u64(const RedisModuleString *arg, uint64_t *out)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (buf[0] < '0' || buf[0] > '9')
        return false; /* no sign, no spaces */
    errno = 0;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

bool bkr_arg_double(const RedisModuleString *arg, double *out)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || *end != '\0' || isnan(v))
        return false;
    *out = v;
    return true;
}
