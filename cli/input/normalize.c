/*
 * Key normalization for the tool (see normalize.h for the rules and
 * examples): the names of the modes, and a growing buffer in front of the
 * library's bk_key_normalize, which every front end shares.
 */
#define _GNU_SOURCE
#include "normalize.h"

#include "bloomkit/bloomkit.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

int bkc_norm_parse(const char *name, bkc_norm_t *out)
{
    if (strcasecmp(name, "none") == 0)
        *out = BKC_NORM_NONE;
    else if (strcasecmp(name, "url") == 0)
        *out = BKC_NORM_URL;
    else if (strcasecmp(name, "email") == 0)
        *out = BKC_NORM_EMAIL;
    else
        return -1;
    return 0;
}

ptrdiff_t bkc_normalize(bkc_norm_t mode, const char *in, size_t len, char **buf, size_t *cap)
{
    if (len > (size_t)PTRDIFF_MAX - 2)
        return -1;
    size_t need = len + 2; /* one more byte for an empty path's "/", and a NUL */
    if (!*buf || *cap < need) {
        size_t ncap = *cap ? *cap : 64;
        while (ncap < need)
            ncap = ncap > (size_t)PTRDIFF_MAX / 2 ? need : ncap * 2;
        char *nb = realloc(*buf, ncap);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = ncap;
    }
    bk_key_form_t form = mode == BKC_NORM_URL     ? BK_KEY_FORM_URL
                         : mode == BKC_NORM_EMAIL ? BK_KEY_FORM_EMAIL
                                                  : BK_KEY_FORM_AS_GIVEN;
    size_t w = 0;
    if (bk_key_normalize(form, in, len, *buf, *cap - 1, &w) != BK_OK)
        return -1;
    (*buf)[w] = '\0';
    return (ptrdiff_t)w;
}
