/*
 * bloomkit plan: sizes a filter before it is made, so a user can see what
 * 100 million keys at 0.1% cost (bits, k, bytes) and how the false-positive
 * rate climbs if the filter is filled past what it was sized for.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "message.h"
#include "numbers.h"
#include "options.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: bloomkit plan -n N -p P [--kind KIND]\n"
    "\n"
    "Sizes a filter for N items at false-positive rate P: bits, probes (k),\n"
    "bytes, bits per key, the expected FPR at N items, and a table of the\n"
    "expected FPR as the filter fills from 10% to 200% of N.\n"
    "\n"
    "  -n, --capacity N   items the filter must hold (10000000, 10M, 1e7)\n"
    "  -p, --fpr P        false-positive rate at N items (0.001, 1e-3, 0.1%)\n"
    "  -k, --kind KIND    blocked (default), classic, counting or scalable\n"
    "  -h, --help         this text\n";

int bkc_cmd_plan(int argc, char **argv)
{
    static const struct option opts[] = {{"capacity", required_argument, 0, 'n'},
                                         {"fpr", required_argument, 0, 'p'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 0, 0);
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "n:p:k:h", opts, NULL)) != -1)
        if ((rc = bkc_shared_option(c, argv, usage, &sz, NULL)) >= 0)
            return rc;
    if (optind < argc)
        return bkc_usage_error("unexpected argument '%s'", argv[optind]);
    if (sz.n == 0 || sz.p == 0)
        return bkc_usage_error("-n and -p are required");
    bk_kind_t kind = sz.o.kind;
    uint64_t n = sz.n;
    double p = sz.p;

    bk_plan_t pl;
    bk_status_t st = bk_plan(kind, n, p, &pl);
    if (st != BK_OK) {
        bkc_error("cannot size a %s filter for n=%llu p=%g: %s", bk_kind_name(kind),
                  (unsigned long long)n, p, bk_strerror(st));
        return BKC_EXIT_ERROR;
    }
    char hb[32];
    printf("kind            %s\n", bk_kind_name(pl.kind));
    printf("capacity        %llu\n", (unsigned long long)pl.capacity);
    printf("target FPR      %g\n", pl.fpr_target);
    printf("bits            %llu\n", (unsigned long long)pl.bits);
    if (pl.cells != pl.bits)
        printf("cells           %llu\n", (unsigned long long)pl.cells);
    printf("k               %u\n", pl.k);
    printf("bytes           %llu (%s)\n", (unsigned long long)pl.bytes,
           bkc_human_bytes((double)pl.bytes, hb, sizeof hb));
    printf("bits per key    %.2f\n", pl.bits_per_key);
    printf("expected FPR    %.4g\n", pl.expected_fpr);
    if (kind == BK_KIND_SCALABLE)
        printf("(scalable: the first sub-filter; each further one is larger and tighter)\n");
    printf("\n%8s  %14s  %s\n", "fill", "items", "expected FPR");
    static const int pct[] = {10, 25, 50, 75, 100, 125, 150, 200};
    bk_kind_t model = kind == BK_KIND_SCALABLE ? BK_KIND_BLOCKED : kind;
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++) {
        uint64_t items = (uint64_t)((double)n * pct[i] / 100.0);
        printf("%7d%%  %14llu  %.4g\n", pct[i], (unsigned long long)items,
               bk_fpr_expected(model, pl.cells, items, pl.k));
    }
    return 0;
}
