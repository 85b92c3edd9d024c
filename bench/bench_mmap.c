/*
 * Time to first answer from a saved 1 GiB filter: mapping the file
 * (bk_filter_open), loading it (bk_filter_load of the paged file this
 * release saves: pages read as keys touch them), against the peer, the
 * same filter in version 1 read into memory whole (bk_filter_load of a
 * file without page checksums: what every earlier release did, and what a
 * loader without mmap or page checksums has to do). Measured with the
 * file's pages evicted from the page cache (posix_fadvise DONTNEED on this
 * file only, so other work on the machine is not disturbed) and with them
 * cached. Also the time for the first 1000 random queries, where the
 * mapped and paged filters pay a page read per untouched page.
 *
 * Medians of several runs. BK_BENCH_QUICK=1 uses a 64 MiB filter;
 * BK_BENCH_DIR picks the directory for the file (default /tmp).
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
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

enum { MAPPED, PAGED, WHOLE, METHODS };
static const char *const method_name[METHODS] = {
    "bloomkit bk_filter_open (mmap)", "bloomkit bk_filter_load (paged file)",
    "peer: bk_filter_load (version 1, read whole)"};

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
    /* the peer's file: the serialized form, version 1, no page checksums */
    char old[520];
    snprintf(old, sizeof old, "%s.v1", path);
    size_t n = (size_t)bk_filter_serialized_size(f);
    uint8_t *buf = malloc(n);
    FILE *fp = fopen(old, "wb");
    bool ok = buf && fp && bk_filter_serialize(f, buf, n, NULL) == BK_OK &&
              fwrite(buf, 1, n, fp) == n;
    if (fp)
        ok = fclose(fp) == 0 && ok;
    free(buf);
    bk_filter_free(f);
    if (st != BK_OK || !ok) {
        fprintf(stderr, "bench_mmap: save %s: %s\n", path, bk_strerror(st));
        unlink(path);
        unlink(old);
        return 1;
    }

    enum { RUNS = 5 };
    double first[METHODS][2][RUNS], thou[METHODS][2][RUNS]; /* [method][warm][run] */
    for (int r = 0; r < RUNS; r++)
        for (int warm_cache = 0; warm_cache < 2; warm_cache++)
            for (int m = 0; m < METHODS; m++) {
                const char *file = m == WHOLE ? old : path;
                if (warm_cache)
                    warm(file);
                else
                    evict(file);
                if (measure(file, m == MAPPED, &first[m][warm_cache][r],
                            &thou[m][warm_cache][r]) < 1) {
                    unlink(path);
                    unlink(old);
                    return 1;
                }
            }
    unlink(path);
    unlink(old);

    printf("## bench_mmap: time to first answer, %llu MiB blocked filter (median of %d)\n\n",
           (unsigned long long)(bytes >> 20), RUNS);
    printf("save (write, fsync, rename): %.2f s\n\n", save_s);
    printf("| method | page cache | first answer | next 1000 random queries |\n");
    printf("|---|---|---:|---:|\n");
    double m[METHODS][2];
    for (int warm_cache = 0; warm_cache < 2; warm_cache++)
        for (int k = 0; k < METHODS; k++) {
            double a = median(first[k][warm_cache], RUNS);
            double b = median(thou[k][warm_cache], RUNS);
            m[k][warm_cache] = a;
            printf("| %s | %s | %.3f ms | %.3f ms |\n", method_name[k],
                   warm_cache ? "warm" : "cold", a * 1e3, b * 1e3);
        }
    printf("\nfirst answer against the peer: mapped %.0fx faster cold, %.0fx warm; "
           "paged load %.0fx cold, %.0fx warm\n",
           m[WHOLE][0] / m[MAPPED][0], m[WHOLE][1] / m[MAPPED][1], m[WHOLE][0] / m[PAGED][0],
           m[WHOLE][1] / m[PAGED][1]);
    return 0;
}
