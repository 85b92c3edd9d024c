/*
 * Benchmark: the first adds into a fresh large filter, one key a call, each
 * timed on its own (wall clock): what a program that makes a filter and
 * starts serving pays while the filter's memory comes in. Rows:
 *  - bloomkit's split filter as made: its memory is provided by the kernel
 *    as the adds first touch it, in 2 MiB huge pages (asked for with
 *    MADV_HUGEPAGE), so a run costs the memory it touches;
 *  - the same filter with bk_filter_prefault(f, 0, 1) right after making
 *    it: the whole payload provided before the first add;
 *  - libbloom 1.6 (Debian's libbloom-dev), whose table comes from calloc:
 *    4 KiB pages provided as the adds touch them.
 * For each: the time to make the filter (and prefault it), the first ADDS
 * adds' total, median, 99th percentile and largest time, and the resident
 * memory the process gained by the end of them. Rounds alternate the rows;
 * each figure is the median of the rounds'. Two tables: each filter made
 * after a pause (PAUSE_S seconds with no memory freed: a program starting
 * on a machine that sat idle), and each made right after the one before
 * was freed (the kernel hands back the pages it just got). How long a
 * first touch takes depends on that and on the machine: in a virtual
 * machine whose host takes idle free memory back, a huge page took
 * milliseconds (docs/BENCHMARKS.md, "One load nearer, and the pages the
 * first adds touch").
 *
 * It asserts nothing but that every key added is found (a row that loses
 * keys is reported, not timed as fast).
 *
 * Environment: BK_BENCH_QUICK=1 for a small filter (a smoke run).
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"

#include <bloom.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timing.h"

#define FPR 0.01
#define ADDS 1000
#define ROUNDS 3
/* Long enough for a guest's free page reporting (2 s after pages are
 * freed) to hand the last filter's memory to the host. */
#define PAUSE_S 5

enum { BK_LAZY, BK_PREFAULT, LIBBLOOM, NROWS };

static const char *const row_name[NROWS] = {
    "bloomkit split, as made",
    "bloomkit split, bk_filter_prefault",
    "libbloom 1.6 (calloc)",
};

typedef struct round_result {
    double make_ms, total_ms, p50_us, p99_us, max_us, rss_mb;
    uint64_t lost;
} round_t;

/* splitmix64's finalizer: distinct keys for distinct i. */
static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* The process's resident bytes (/proc/self/statm); 0 where unreadable. */
static double resident_mb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &rss) != 2)
        rss = 0;
    fclose(f);
    return (double)rss * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

/* One row, one round: make, then ADDS adds timed one by one. -1 if the
 * filter cannot be made. */
static int run_row(int row, uint64_t n, uint64_t salt, round_t *r)
{
    static double each[ADDS];
    bk_filter_t *f = NULL;
    struct bloom lb;
    double rss0 = resident_mb();
    double t0 = now_ns();
    if (row == LIBBLOOM) {
        if (n > INT32_MAX || bloom_init(&lb, (int)n, FPR) != 0)
            return -1;
    } else {
        bk_options_t o;
        memset(&o, 0, sizeof o);
        o.kind = BK_KIND_SPLIT;
        if (bk_filter_create(&f, n, FPR, &o) != BK_OK)
            return -1;
        if (row == BK_PREFAULT && bk_filter_prefault(f, 0, 1) != BK_OK) {
            bk_filter_free(f);
            return -1;
        }
    }
    r->make_ms = (now_ns() - t0) / 1e6;
    double total = 0;
    for (int i = 0; i < ADDS; i++) {
        uint64_t key = mix64(salt + (uint64_t)i);
        double a = now_ns();
        if (row == LIBBLOOM)
            (void)bloom_add(&lb, &key, sizeof key);
        else
            (void)bk_filter_add_u64(f, key, NULL);
        each[i] = now_ns() - a;
        total += each[i];
    }
    r->rss_mb = resident_mb() - rss0;
    r->lost = 0;
    for (int i = 0; i < ADDS; i++) {
        uint64_t key = mix64(salt + (uint64_t)i);
        bool in = row == LIBBLOOM ? bloom_check(&lb, &key, sizeof key) == 1
                                  : bk_filter_contains_u64(f, key);
        r->lost += !in;
    }
    if (row == LIBBLOOM)
        bloom_free(&lb);
    else
        bk_filter_free(f);
    qsort(each, ADDS, sizeof each[0], cmp_double);
    r->total_ms = total / 1e6;
    r->p50_us = each[ADDS / 2] / 1e3;
    r->p99_us = each[ADDS * 99 / 100] / 1e3;
    r->max_us = each[ADDS - 1] / 1e3;
    return 0;
}

/* One table: every row ROUNDS times, alternating; pause_s seconds before
 * each make. */
static void run_table(uint64_t n, unsigned pause_s, const char *title)
{
    round_t res[NROWS][ROUNDS];
    bool ok[NROWS] = {true, true, true};
    for (int round = 0; round < ROUNDS; round++)
        for (int row = 0; row < NROWS; row++) {
            if (!ok[row])
                continue;
            if (pause_s)
                sleep(pause_s);
            if (run_row(row, n, (uint64_t)round << 32, &res[row][round]) != 0) {
                printf("%s: cannot be made for %" PRIu64 " keys here\n", row_name[row], n);
                ok[row] = false;
            }
        }
    printf("\n### %s\n\n", title);
    printf("| filter | make | first %d adds | median add | 99th pct | largest | resident "
           "after |\n",
           ADDS);
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int row = 0; row < NROWS; row++) {
        if (!ok[row])
            continue;
        double v[6][ROUNDS];
        uint64_t lost = 0;
        for (int r = 0; r < ROUNDS; r++) {
            v[0][r] = res[row][r].make_ms;
            v[1][r] = res[row][r].total_ms;
            v[2][r] = res[row][r].p50_us;
            v[3][r] = res[row][r].p99_us;
            v[4][r] = res[row][r].max_us;
            v[5][r] = res[row][r].rss_mb;
            lost += res[row][r].lost;
        }
        printf("| %s | %.1f ms | %.1f ms | %.2f us | %.1f us | %.1f us | +%.1f MB |\n",
               row_name[row], median(v[0], ROUNDS), median(v[1], ROUNDS), median(v[2], ROUNDS),
               median(v[3], ROUNDS), median(v[4], ROUNDS), median(v[5], ROUNDS));
        if (lost)
            printf("!! %s: %" PRIu64 " added keys not found\n", row_name[row], lost);
    }
}

int main(void)
{
    const char *q = getenv("BK_BENCH_QUICK");
    bool quick = q && *q && strcmp(q, "0") != 0;
    uint64_t n = quick ? 4000000u : 100000000u;
    printf("## The first %d adds into a fresh filter for %" PRIu64 " keys at 1%% "
           "(bench_first_adds%s)\n\n",
           ADDS, n, quick ? ", BK_BENCH_QUICK" : "");
    printf("Wall-clock time of each add on its own; medians of %d rounds, rows "
           "alternating.\n",
           ROUNDS);
    char title[128];
    snprintf(title, sizeof title, "Each filter made after a %u s pause", quick ? 1u : PAUSE_S);
    run_table(n, quick ? 1u : PAUSE_S, title);
    run_table(n, 0, "Each filter made right after the one before was freed");
    return 0;
}
