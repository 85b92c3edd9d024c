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
#include <math.h>
#include <stdio.h>

static const char usage[] =
    "usage: bloomkit plan -n N -p P [--kind KIND]\n"
    "\n"
    "Sizes a filter for N items at false-positive rate P: bits, probes (k),\n"
    "bytes, bits per key, the expected FPR at N items, and a table of the\n"
    "expected FPR as the filter fills from 10% to 200% of N. Then the other\n"
    "kinds for the same N and P: their memory, and how many memory accesses\n"
    "one lookup costs in a filter larger than the caches.\n"
    "\n"
    "  -n, --capacity N   items the filter must hold (10000000, 10M, 1e7)\n"
    "  -p, --fpr P        false-positive rate at N items (0.001, 1e-3, 0.1%)\n"
    "  -k, --kind KIND    split, blocked, blocked2, classic, precise, counting\n"
    "                     or scalable; default: split for 0.004 <= P <= 0.02,\n"
    "                     blocked for other P >= 0.001, blocked2 below\n"
    "  -h, --help         this text\n";

/* One alternative: a kind's memory next to the classic optimum, and the
 * cache lines one lookup touches in a filter far larger than the caches
 * (what a lookup's speed there comes down to). */
static void print_alternative(bk_kind_t kind, uint64_t n, double p, double optimum)
{
    bk_plan_t pl;
    char hb[32];
    if (bk_plan(kind, n, p, &pl) != BK_OK) {
        printf("  %-9s  (cannot be sized for this n and p)\n", bk_kind_name(kind));
        return;
    }
    bool per_probe = kind == BK_KIND_CLASSIC || kind == BK_KIND_PRECISE;
    uint32_t lines = kind == BK_KIND_BLOCKED2 ? 2 : per_probe ? pl.k : 1;
    printf("  %-9s  %9.2f  %9.3fx  %10s  %u%s\n", bk_kind_name(kind), pl.bits_per_key,
           pl.bits_per_key / optimum, bkc_human_bytes((double)pl.bytes, hb, sizeof hb), lines,
           per_probe ? " (k; absent keys stop early)" : "");
}

/* The kinds a user could pick instead, and which one stays near the
 * optimum where the default kind does not. */
static void print_alternatives(uint64_t n, double p, bk_kind_t chosen)
{
    static const bk_kind_t kinds[] = {BK_KIND_SPLIT,   BK_KIND_BLOCKED, BK_KIND_BLOCKED2,
                                      BK_KIND_CLASSIC, BK_KIND_PRECISE, BK_KIND_COUNTING};
    const double ln2 = 0.69314718055994530942;
    double optimum = -log(p) / (ln2 * ln2);
    printf("\nalternatives (optimum: %.2f bits per key, -ln p / ln(2)^2)\n", optimum);
    printf("  %-9s  %9s  %10s  %10s  %s\n", "kind", "bits/key", "vs optimum", "bytes",
           "lines per lookup");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        print_alternative(kinds[i], n, p, optimum);
    /* Where the lined kinds are far from the optimum, name the one-bit-per-
     * probe kind that needs the fewest bits: classic, or precise for small
     * filters, where classic's double hashing needs more (plan.c). */
    bk_plan_t two, classic, precise;
    if (chosen == BK_KIND_CLASSIC || chosen == BK_KIND_PRECISE ||
        bk_plan(BK_KIND_BLOCKED2, n, p, &two) != BK_OK || two.bits_per_key <= 1.15 * optimum ||
        bk_plan(BK_KIND_CLASSIC, n, p, &classic) != BK_OK ||
        bk_plan(BK_KIND_PRECISE, n, p, &precise) != BK_OK)
        return;
    bool use_precise = precise.bits_per_key < classic.bits_per_key;
    const bk_plan_t *best = use_precise ? &precise : &classic;
    if (best->bits_per_key <= 1.15 * optimum)
        printf("at this rate the lined kinds need over 1.15x the optimum; %s stays\n"
               "near it (%.2fx), at one memory access per probe\n",
               use_precise ? "precise" : "classic", best->bits_per_key / optimum);
    else
        printf("at this size and rate every kind needs over 1.15x the optimum; %s needs\n"
               "the fewest bits (%.2fx)\n",
               use_precise ? "precise" : "classic", best->bits_per_key / optimum);
}

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
        const char *name = bk_kind_name(kind);
        /* bk_plan's BK_ENOMEM here is its size limit, not this machine's
         * memory: a filter's payload is at most 2^46 bytes (64 TiB). */
        bkc_error("cannot size a %s filter for n=%llu p=%g: %s", name ? name : "default",
                  (unsigned long long)n, p,
                  st == BK_ENOMEM ? "it would need more than the 64 TiB a filter may hold"
                                  : bk_strerror(st));
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
    bk_kind_t model = kind == BK_KIND_SCALABLE ? BK_KIND_BLOCKED : pl.kind;
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++) {
        uint64_t items = (uint64_t)((double)n * pct[i] / 100.0);
        printf("%7d%%  %14llu  %.4g\n", pct[i], (unsigned long long)items,
               bk_fpr_expected(model, pl.cells, items, pl.k));
    }
    print_alternatives(n, p, pl.kind);
    return 0;
}
