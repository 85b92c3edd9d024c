/*
 * Time to first answer from a saved 1 GiB filter: mapping the file
 * (bk_filter_open) against reading it into memory (bk_filter_load, the
 * peer: what a loader without mmap has to do). Measured with the file's
 * pages evicted from the page cache (posix_fadvise DONTNEED on this file
 * only, so other work on the machine is not disturbed) and with them
 * cached. Also the time for the first 1000 random queries, where the
 * mapped filter pays a page fault per untouched page.
 *
 * Medians of several runs. BK_BENCH_QUICK=1 uses a 64 MiB filter;
 * BK_BENCH_DIR picks the directory for the file (default /tmp).
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

static void warm(const char *path)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
}

/* One measurement: open or load, then one query, then 1000 more. */
static int measure(const char *path, int mapped, double *first, double *thousand)
{
    char key[64];
    bk_filter_t *f = NULL;
    const char *why = NULL;
    double t0 = now();
    bk_status_t st = mapped ? bk_filter_open(&f, path, BK_MAP_READONLY, &why)
                            : bk_filter_load(&f, path, &why);
    if (st != BK_OK) {
        fprintf(stderr, "bench_mmap: %s: %s (%s)\n", path, bk_strerror(st), why ? why : "");
        return -1;
    }
    int hit = bk_filter_contains(f, "key-0", 5);
    double t1 = now();
    for (int i = 1; i <= 1000; i++) {
        snprintf(key, sizeof key, "probe-%d", i);
        hit += bk_filter_contains(f, key, strlen(key));
    }
    double t2 = now();
    *first = t1 - t0;
    *thousand = t2 - t1;
    bk_filter_free(f);
    return hit;
}

int main(void)
{
    int quick = getenv("BK_BENCH_QUICK") != NULL;
    uint64_t bytes = quick ? UINT64_C(64) << 20 : UINT64_C(1) << 30;
    const char *dir = getenv("BK_BENCH_DIR") ? getenv("BK_BENCH_DIR") : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/bench_mmap-%ld.bkf", dir, (long)getpid());

    bk_options_t o = {.seed_set = true, .seed = 42};
    bk_filter_t *f = NULL;
    if (bk_filter_create_exact(&f, BK_KIND_BLOCKED, bytes * 8, 8, &o) != BK_OK) {
        fprintf(stderr, "bench_mmap: cannot create a %llu-byte filter\n",
                (unsigned long long)bytes);
        return 1;
    }
    char key[64];
    for (int i = 0; i < 1000000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        bk_filter_add(f, key, strlen(key), NULL);
    }
    double t0 = now();
    bk_status_t st = bk_filter_save(f, path);
    double save_s = now() - t0;
    bk_filter_free(f);
    if (st != BK_OK) {
        fprintf(stderr, "bench_mmap: save %s: %s\n", path, bk_strerror(st));
        return 1;
    }

    enum { RUNS = 5 };
    double first[2][2][RUNS], thou[2][2][RUNS]; /* [mapped][warm][run] */
    for (int r = 0; r < RUNS; r++)
        for (int warm_cache = 0; warm_cache < 2; warm_cache++)
            for (int mapped = 0; mapped < 2; mapped++) {
                if (warm_cache)
                    warm(path);
                else
                    evict(path);
                if (measure(path, mapped, &first[mapped][warm_cache][r],
                            &thou[mapped][warm_cache][r]) < 1) {
                    unlink(path);
                    return 1;
                }
            }
    unlink(path);

    printf("## bench_mmap: time to first answer, %llu MiB blocked filter (median of %d)\n\n",
           (unsigned long long)(bytes >> 20), RUNS);
    printf("save (write, fsync, rename): %.2f s\n\n", save_s);
    printf("| method | page cache | first answer | next 1000 random queries |\n");
    printf("|---|---|---:|---:|\n");
    double m[2][2];
    for (int warm_cache = 0; warm_cache < 2; warm_cache++)
        for (int mapped = 1; mapped >= 0; mapped--) {
            double a = median(first[mapped][warm_cache], RUNS);
            double b = median(thou[mapped][warm_cache], RUNS);
            m[mapped][warm_cache] = a;
            printf("| %s | %s | %.3f ms | %.3f ms |\n",
                   mapped ? "bloomkit bk_filter_open (mmap)" : "peer: bk_filter_load (read)",
                   warm_cache ? "warm" : "cold", a * 1e3, b * 1e3);
        }
    printf("\nmapped vs read, first answer: %.0fx faster cold, %.0fx faster warm\n",
           m[0][0] / m[1][0], m[0][1] / m[1][1]);
    return 0;
}
