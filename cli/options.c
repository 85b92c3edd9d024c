/*
 * The options several subcommands share (see options.h). The checks and
 * messages here are the only ones for these options: a capacity is a
 * positive count, a rate lies strictly between 0 and 1, a kind is one of
 * the filter kinds (bitmaps are not filters), a seed is a 64-bit integer.
 */
#define _GNU_SOURCE
#include "message.h"
#include "numbers.h"
#include "options.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void bkc_input_opts_init(bkc_input_opts_t *in)
{
    in->norm = BKC_NORM_NONE;
    in->norm_given = false;
    in->pmode = BKC_PROGRESS_AUTO;
}

void bkc_sizing_opts_init(bkc_sizing_opts_t *sz, uint64_t n, double p)
{
    sz->n = n;
    sz->p = p;
    memset(&sz->o, 0, sizeof sz->o);
    /* The library's default: split from 0.4% to 2%, blocked at other
     * rates down to 1e-3, blocked2 below, where one line per key costs
     * too much space (plan.c): kind 0, as the memset left it. */
}

/* 0 after parsing a sizing option, 2 after a usage error, -1 if c is not
 * one. */
static int sizing_option(int c, const char *arg, bkc_sizing_opts_t *sz)
{
    switch (c) {
    case 'n':
        if (bkc_parse_count(arg, &sz->n) != 0 || sz->n == 0)
            return bkc_usage_error("bad capacity '%s'", arg);
        return 0;
    case 'p':
        if (bkc_parse_prob(arg, &sz->p) != 0)
            return bkc_usage_error("bad false-positive rate '%s' (want 0 < P < 1)", arg);
        return 0;
    case 'k':
        /* a kind with no filter capability is a bitmap: not here */
        if (bk_kind_parse(arg, &sz->o.kind) != BK_OK || bk_kind_caps(sz->o.kind) == 0)
            return bkc_usage_error("unknown filter kind '%s'", arg);
        return 0;
    case BKC_OPT_HASH:
        if (bk_hash_parse(arg, &sz->o.hash) != BK_OK)
            return bkc_usage_error("unknown hash '%s'", arg);
        return 0;
    case BKC_OPT_SEED:
        if (bkc_parse_u64(arg, &sz->o.seed) != 0)
            return bkc_usage_error("bad seed '%s'", arg);
        sz->o.seed_set = true;
        return 0;
    default:
        return -1;
    }
}

/* As sizing_option, for the input options. */
static int input_option(int c, const char *arg, bkc_input_opts_t *in)
{
    switch (c) {
    case BKC_OPT_NORMALIZE:
        if (bkc_norm_parse(arg, &in->norm) != 0)
            return bkc_usage_error("unknown normalization '%s' (url, email)", arg);
        in->norm_given = true;
        return 0;
    case 'q':
        in->pmode = BKC_PROGRESS_OFF;
        return 0;
    case BKC_OPT_PROGRESS:
        in->pmode = BKC_PROGRESS_ON;
        return 0;
    default:
        return -1;
    }
}

int bkc_shared_option(int c, char **argv, const char *usage, bkc_sizing_opts_t *sz,
                      bkc_input_opts_t *in)
{
    if (c == 'h') {
        fputs(usage, stdout);
        return 0;
    }
    if (c == BKC_OPT_NO_WAIT) {
        bkc_lock_no_wait = true;
        return -1;
    }
    int rc = -1;
    if (sz)
        rc = sizing_option(c, optarg, sz);
    if (rc < 0 && in)
        rc = input_option(c, optarg, in);
    if (rc < 0)
        return bkc_bad_option(argv, usage);
    return rc ? rc : -1;
}

int bkc_filter_inputs_options(int argc, char **argv, const char *usage, bkc_input_opts_t *in)
{
    static const struct option opts[] = {BKC_INPUT_LONG_OPTIONS,
                                         BKC_LOCK_LONG_OPTION,
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bkc_input_opts_init(in);
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1)
        if ((rc = bkc_shared_option(c, argv, usage, NULL, in)) >= 0)
            return rc;
    return -1;
}

const char *bkc_static_reach(char *buf, size_t len)
{
    /* every static kind the library has, in kind order, with the lowest
     * rate bk_static_kind_for gives it (its fingerprints' and a margin) */
    size_t at = 0, n = 0, total = 0;
    for (unsigned k = 1; k < 64; k++)
        total += (bk_kind_caps((bk_kind_t)k) & BK_CAP_STATIC) != 0;
    buf[0] = '\0';
    for (unsigned k = 1; k < 64 && at < len; k++) {
        bk_static_plan_t sp;
        if (!(bk_kind_caps((bk_kind_t)k) & BK_CAP_STATIC) ||
            bk_static_plan((bk_kind_t)k, 1, 0.0, &sp) != BK_OK)
            continue;
        char rate[32];
        snprintf(rate, sizeof rate, "%.2g", 1.05 * sp.expected_fpr);
        char *e = strstr(rate, "e-0"); /* 1.6e-05 as 1.6e-5 */
        if (e)
            memmove(e + 2, e + 3, strlen(e + 3) + 1);
        n++;
        at += (size_t)snprintf(buf + at, len - at, "%s%s%s %s", n == 1 ? "" : n == total ? " and " : ", ",
                               bk_kind_name((bk_kind_t)k), n == 1 ? " reaches" : "", rate);
    }
    return buf;
}
