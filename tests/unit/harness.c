/* The test harness: see harness.h. */
#define _GNU_SOURCE /* mkdtemp under -std=c11 */
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bkt_failures_in_test;
static int tests_passed, tests_failed;
static const char *current_test = "?";

void bkt_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    /* Cap the noise from one test that fails in a loop. */
    if (++bkt_failures_in_test > 20)
        return;
    fprintf(stdout, "  FAIL %s (%s:%d): ", current_test, file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

void bkt_run(const char *name, void (*fn)(void))
{
    current_test = name;
    bkt_failures_in_test = 0;
    fn();
    if (bkt_failures_in_test) {
        tests_failed++;
        printf("not ok  %s (%d failed checks)\n", name, bkt_failures_in_test);
    } else {
        tests_passed++;
        printf("ok      %s\n", name);
    }
    fflush(stdout);
}

int bkt_finish(void)
{
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}

uint64_t bkt_scaled(uint64_t n)
{
    const char *s = getenv("BK_TEST_SCALE");
    double scale = s ? atof(s) : 1.0;
    if (!(scale > 0))
        scale = 1.0;
    double v = (double)n * scale;
    return v < 1 ? 1 : (uint64_t)v;
}

uint64_t bkt_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void bkt_rand_bytes(uint64_t *state, void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len >= 8) {
        uint64_t r = bkt_rand(state);
        memcpy(p, &r, 8);
        p += 8;
        len -= 8;
    }
    if (len) {
        uint64_t r = bkt_rand(state);
        memcpy(p, &r, len);
    }
}

void bkt_spec_mix8(uint64_t key, uint64_t seed, uint64_t *lo, uint64_t *hi)
{
    __extension__ typedef unsigned __int128 u128;
    u128 p = (u128)(key ^ seed ^ UINT64_C(0x8ebc6af09c88c6e3)) * UINT64_C(0xa0761d6478bd642f);
    uint64_t t = (uint64_t)p ^ (uint64_t)(p >> 64);
    u128 q = (u128)t * UINT64_C(0xe7037ed1a0b428db);
    uint64_t f = (uint64_t)q ^ (uint64_t)(q >> 64);
    *lo = f;
    *hi = f + t;
}

bool bkt_tmpdir(char *buf, size_t size, const char *prefix)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/%s-XXXXXX", base && *base ? base : "/tmp", prefix);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        return false;
    }
    return true;
}

void bkt_tmpdir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4096];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (unlink(path) != 0)
                fprintf(stderr, "could not remove %s\n", path);
        }
        closedir(d);
    }
    if (rmdir(dir) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

uint8_t *bkt_slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    struct stat sb;
    uint8_t *b = NULL;
    if (fp && fstat(fileno(fp), &sb) == 0 && (b = malloc((size_t)sb.st_size + 1)) != NULL &&
        fread(b, 1, (size_t)sb.st_size, fp) != (size_t)sb.st_size) {
        free(b);
        b = NULL;
    }
    *n = b ? (size_t)sb.st_size : 0;
    if (fp)
        fclose(fp);
    return b;
}

bool bkt_spill(const char *path, const uint8_t *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    bool ok = fp && fwrite(b, 1, n, fp) == n;
    if (fp)
        ok = fclose(fp) == 0 && ok;
    return ok;
}

uint64_t bkt_proc_io(const char *what)
{
    FILE *fp = fopen("/proc/self/io", "r");
    char line[128], name[32];
    unsigned long long v = 0, x;
    while (fp && fgets(line, sizeof line, fp))
        if (sscanf(line, "%31[^:]: %llu", name, &x) == 2 && strcmp(name, what) == 0)
            v = x;
    if (fp)
        fclose(fp);
    return v;
}
