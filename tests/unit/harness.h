/*
 * A small test harness. Checks never abort: a failed check is reported with
 * file and line and counted, and the test goes on, so one run shows every
 * failure. Built on plain ifs, not assert(), so NDEBUG cannot remove them.
 *
 * A test file defines its tests as `static void test_x(void)` and a main
 * that calls bkt_run() for each and returns bkt_finish(), whose last line
 * is "N passed, N failed" (counting tests, not checks).
 */
#ifndef BKT_HARNESS_H
#define BKT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int bkt_failures_in_test;

void bkt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void bkt_run(const char *name, void (*fn)(void));
int bkt_finish(void);

/* Test scale: BK_TEST_SCALE (default 1.0) multiplies workload sizes, so the
 * sanitizer runs can use smaller ones. Never below 1 item. */
uint64_t bkt_scaled(uint64_t n);

/* A deterministic PRNG for test data (splitmix64). */
uint64_t bkt_rand(uint64_t *state);
/* Fills buf with len random bytes. */
void bkt_rand_bytes(uint64_t *state, void *buf, size_t len);

/* Makes a fresh private directory $TMPDIR/<prefix>-XXXXXX (or under /tmp)
 * into buf (size >= 256); false, with a message on stderr, if it cannot. */
bool bkt_tmpdir(char *buf, size_t size, const char *prefix);
/* Removes dir and the files in it (one level: the tests make no
 * subdirectories), including those a killed child left (its temporary
 * files); a test's temporary files must not outlive it. */
void bkt_tmpdir_remove(const char *dir);

/* Reads a whole file into a malloc'd buffer (*n its size); NULL (and *n
 * 0) if it cannot. */
uint8_t *bkt_slurp(const char *path, size_t *n);
/* Writes n bytes to path (created or truncated); false on any error. */
bool bkt_spill(const char *path, const uint8_t *b, size_t n);
/* A counter of this process's /proc/self/io ("rchar": bytes read by
 * read and pread; "wchar": bytes written); 0 if unknown. */
uint64_t bkt_proc_io(const char *what);

/* The default hash's value for an 8-byte key (hash id 14, xxh3-mix8) as
 * docs/FORMAT.md writes it, apart from the library's: key is the 8 bytes
 * read little-endian. */
void bkt_spec_mix8(uint64_t key, uint64_t seed, uint64_t *lo, uint64_t *hi);

#define CHECK(cond)                                                    \
    do {                                                               \
        if (!(cond))                                                   \
            bkt_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);          \
    } while (0)

#define CHECK_MSG(cond, ...)                                           \
    do {                                                               \
        if (!(cond))                                                   \
            bkt_fail(__FILE__, __LINE__, __VA_ARGS__);                 \
    } while (0)

#define CHECK_EQ_U64(a, b)                                             \
    do {                                                               \
        uint64_t bkt_a_ = (uint64_t)(a), bkt_b_ = (uint64_t)(b);       \
        if (bkt_a_ != bkt_b_)                                          \
            bkt_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, \
                     #b, (unsigned long long)bkt_a_,                   \
                     (unsigned long long)bkt_b_);                      \
    } while (0)

#define CHECK_STATUS(expr, want)                                       \
    do {                                                               \
        bk_status_t bkt_s_ = (expr);                                   \
        if (bkt_s_ != (want))                                          \
            bkt_fail(__FILE__, __LINE__, "%s: got %s, want %s", #expr, \
                     bk_strerror(bkt_s_), bk_strerror(want));          \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, BK_OK)

#endif
