/*
 * Tests of cli/join/lineset.c (the exact line set of `bloomkit common`) and
 * cli/join/spill.c (its partitioned spill files), each against a naive model:
 * an array of the distinct lines in first-insertion order, and per
 * partition the list of lines added to it.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "lineset.h"
#include "spill.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <signal.h>

/* A small universe of lines of 0..300 bytes, any byte values (NUL too),
 * some much longer than the others. */
#define UNIVERSE 3000
static char *uni[UNIVERSE];
static size_t uni_len[UNIVERSE];

static void make_universe(void)
{
    uint64_t st = 42;
    for (int i = 0; i < UNIVERSE; i++) {
        size_t len = (size_t)(bkt_rand(&st) % 40);
        if (i % 97 == 0)
            len = 300 + (size_t)(bkt_rand(&st) % 5000);
        uni[i] = malloc(len + 8);
        bkt_rand_bytes(&st, uni[i], len);
        /* make each line unique by its index (4 bytes at the end) */
        memcpy(uni[i] + len, &i, sizeof i);
        uni_len[i] = len + sizeof i;
    }
    /* the empty line is a line */
    uni_len[1] = 0;
}

/* A deliberately weak hash (few distinct values), so probing past equal
 * hashes with different lines is exercised. */
static uint64_t weak_hash(const char *p, size_t n)
{
    uint64_t h = n * 31;
    for (size_t i = 0; i < n && i < 3; i++)
        h = h * 131 + (unsigned char)p[i];
    return h % 509;
}

typedef struct walk {
    int idx[UNIVERSE];
    uint32_t stamp[UNIVERSE];
    int n;
} walk_t;

static int collect(void *ctx, const char *line, size_t len, uint32_t stamp)
{
    walk_t *w = ctx;
    for (int i = 0; i < UNIVERSE; i++)
        if (uni_len[i] == len && memcmp(uni[i], line, len) == 0) {
            w->idx[w->n] = i;
            w->stamp[w->n] = stamp;
            w->n++;
            return 0;
        }
    w->idx[w->n++] = -1;
    return 0;
}

/* Random inserts and stamp updates on s, checked against the model; the
 * set must start empty. */
static void run_model(bkc_lineset_t *s, uint64_t st)
{
    static int order[UNIVERSE];
    static int seen[UNIVERSE];
    static uint32_t stamp[UNIVERSE];
    memset(seen, 0, sizeof seen);
    memset(stamp, 0, sizeof stamp);
    int norder = 0;
    uint64_t ops = bkt_scaled(20000);
    for (uint64_t k = 0; k < ops; k++) {
        int i = (int)(bkt_rand(&st) % UNIVERSE);
        uint64_t h = weak_hash(uni[i], uni_len[i]);
        if (bkt_rand(&st) % 3) {
            int rc = bkc_lineset_insert(s, h, uni[i], uni_len[i]);
            CHECK_EQ_U64(rc, seen[i] ? BKC_SET_OLD : BKC_SET_NEW);
            if (!seen[i]) {
                seen[i] = 1;
                order[norder++] = i;
            }
        } else {
            uint32_t *p = bkc_lineset_stamp(s, h, uni[i], uni_len[i]);
            CHECK(seen[i] ? p != NULL : p == NULL);
            if (p) {
                CHECK_EQ_U64(*p, stamp[i]);
                *p = ++stamp[i];
            }
        }
    }
    CHECK_EQ_U64(bkc_lineset_count(s), norder);
    static walk_t w;
    w.n = 0;
    CHECK_EQ_U64(bkc_lineset_foreach(s, collect, &w), 0);
    CHECK_EQ_U64(w.n, norder);
    for (int j = 0; j < w.n && j < norder; j++) {
        CHECK_EQ_U64(w.idx[j], order[j]);
        if (w.idx[j] >= 0)
            CHECK_EQ_U64(w.stamp[j], stamp[w.idx[j]]);
    }
}

static void test_lineset_model(void)
{
    bkc_lineset_t *s = bkc_lineset_new((size_t)64 << 20);
    CHECK(s != NULL);
    if (!s)
        return;
    run_model(s, 7);
    /* After a reset the set is empty and works again, reusing memory. */
    size_t held = bkc_lineset_bytes(s);
    bkc_lineset_reset(s);
    CHECK_EQ_U64(bkc_lineset_count(s), 0);
    CHECK(bkc_lineset_stamp(s, weak_hash(uni[5], uni_len[5]), uni[5], uni_len[5]) == NULL);
    run_model(s, 8);
    CHECK(bkc_lineset_bytes(s) <= held + ((size_t)1 << 20));
    bkc_lineset_reset(s);
    run_model(s, 9);
    bkc_lineset_free(s);
    bkc_lineset_free(NULL);
}

static void test_lineset_budget(void)
{
    /* Insert distinct lines until the set says FULL: the bytes it holds
     * never exceed the budget, and a refused line changes nothing. */
    size_t budgets[] = {(size_t)1 << 16, (size_t)200 << 10, (size_t)1 << 20};
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
        bkc_lineset_t *s = bkc_lineset_new(budgets[b]);
        CHECK(s != NULL);
        if (!s)
            return;
        int full_at = -1;
        for (int i = 0; i < UNIVERSE * 20; i++) {
            char line[64];
            int n = snprintf(line, sizeof line, "line number %d with some padding", i);
            int rc = bkc_lineset_insert(s, (uint64_t)i * 0x9E3779B97F4A7C15u, line, (size_t)n);
            CHECK(bkc_lineset_bytes(s) <= budgets[b]);
            if (rc == BKC_SET_FULL) {
                full_at = i;
                break;
            }
            CHECK_EQ_U64(rc, BKC_SET_NEW);
        }
        CHECK(full_at > 0);
        uint64_t count = bkc_lineset_count(s);
        CHECK_EQ_U64(count, full_at);
        char line[64];
        int n = snprintf(line, sizeof line, "line number %d with some padding", full_at);
        CHECK(bkc_lineset_stamp(s, (uint64_t)full_at * 0x9E3779B97F4A7C15u, line, (size_t)n) ==
              NULL);
        /* Lines already in still answer OLD when full. */
        n = snprintf(line, sizeof line, "line number %d with some padding", 0);
        CHECK_EQ_U64(bkc_lineset_insert(s, 0, line, (size_t)n), BKC_SET_OLD);
        /* Most of the budget is usable (not refused at a tenth of it). */
        CHECK(bkc_lineset_bytes(s) > budgets[b] / 3);
        bkc_lineset_free(s);
    }
    /* An empty set takes its first line even when it exceeds the budget;
     * after it, lines may still go into space already held, but the set
     * takes no more memory. */
    bkc_lineset_t *s = bkc_lineset_new(4096);
    CHECK(s != NULL);
    if (!s)
        return;
    static char big[100000];
    memset(big, 'x', sizeof big);
    CHECK_EQ_U64(bkc_lineset_insert(s, 1, big, sizeof big), BKC_SET_NEW);
    size_t held = bkc_lineset_bytes(s);
    CHECK(held > 100000);
    int rc = BKC_SET_NEW, i;
    for (i = 0; i < 100000 && rc == BKC_SET_NEW; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "y%d", i);
        rc = bkc_lineset_insert(s, (uint64_t)i + 2, line, (size_t)n);
    }
    CHECK_EQ_U64(rc, BKC_SET_FULL);
    CHECK(i < 1000);
    CHECK_EQ_U64(bkc_lineset_bytes(s), held);
    CHECK(bkc_lineset_stamp(s, 1, big, sizeof big) != NULL);
    bkc_lineset_free(s);
}

/* The hash stored with the k-th line added: differs per line and uses
 * all 64 bits, so a record that returned another line's hash, or lost
 * bytes of it, is caught. */
static uint64_t spill_hash(uint64_t k)
{
    return (k + 1) * UINT64_C(0x9E3779B97F4A7C15) ^ (k << 7);
}

/* Fills a set with `lines` distinct lines; returns how many went in. */
static uint64_t fill_lines(bkc_lineset_t *s, uint64_t lines)
{
    uint64_t in = 0;
    for (uint64_t i = 0; i < lines; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "reserved line %llu", (unsigned long long)i);
        if (bkc_lineset_insert(s, (i + 1) * 0x9E3779B97F4A7C15u, line, (size_t)n) != BKC_SET_NEW)
            break;
        in++;
    }
    return in;
}

static void test_lineset_reserve(void)
{
    /* A table reserved for N lines does not grow while N lines go in: the
     * bytes held grow by the records alone. */
    bkc_lineset_t *s = bkc_lineset_new((size_t)64 << 20);
    CHECK(s != NULL);
    if (!s)
        return;
    size_t before = bkc_lineset_bytes(s);
    CHECK_EQ_U64(bkc_lineset_reserve(s, 100000), 0);
    size_t table = bkc_lineset_table_bytes(100000);
    CHECK(table >= (size_t)100000 * 16 * 4 / 3);
    CHECK_EQ_U64(bkc_lineset_bytes(s), before - bkc_lineset_table_bytes(0) + table);
    CHECK_EQ_U64(fill_lines(s, 100000), 100000);
    size_t records = bkc_lineset_bytes(s) - table;
    CHECK(records < (size_t)100000 * 40 + ((size_t)4 << 20));
    bkc_lineset_free(s);

    /* A reservation that does not fit the budget is refused and changes
     * nothing; raising the budget lets it and the lines in. */
    s = bkc_lineset_new((size_t)1 << 20);
    CHECK(s != NULL);
    if (!s)
        return;
    before = bkc_lineset_bytes(s);
    CHECK_EQ_U64(bkc_lineset_reserve(s, 200000), BKC_SET_FULL);
    CHECK_EQ_U64(bkc_lineset_bytes(s), before);
    CHECK(fill_lines(s, 200000) < 200000);
    bkc_lineset_reset(s);
    bkc_lineset_set_budget(s, (size_t)32 << 20);
    CHECK_EQ_U64(bkc_lineset_reserve(s, 200000), 0);
    CHECK_EQ_U64(fill_lines(s, 200000), 200000);
    CHECK(bkc_lineset_bytes(s) <= (size_t)32 << 20);
    bkc_lineset_free(s);
}

static void test_spill_model(void)
{
    const uint32_t parts = 7;
    size_t bufsizes[] = {64, 1000, (size_t)1 << 16};
    for (size_t bi = 0; bi < 3; bi++) {
        char err[600];
        bkc_spill_t *s = bkc_spill_create("/tmp", parts, bufsizes[bi], err, sizeof err);
        CHECK_MSG(s != NULL, "create: %s", err);
        if (!s)
            return;
        uint64_t n = bkt_scaled(20000);
        int *seq = malloc(n * sizeof *seq);
        uint32_t *part = malloc(n * sizeof *part);
        uint64_t st = 99 + bi;
        uint64_t bytes[7] = {0};
        for (uint64_t k = 0; k < n; k++) {
            seq[k] = (int)(bkt_rand(&st) % UNIVERSE);
            part[k] = (uint32_t)(bkt_rand(&st) % parts);
            CHECK_EQ_U64(bkc_spill_add(s, part[k], spill_hash(k), uni[seq[k]], uni_len[seq[k]]), 0);
        }
        CHECK_EQ_U64(bkc_spill_finish(s), 0);
        /* Read partitions interleaved: two readers at once. */
        for (uint32_t p = 0; p < parts; p += 2) {
            bkc_spill_reader_t *r1 = bkc_spill_reader_open(s, p);
            bkc_spill_reader_t *r2 = p + 1 < parts ? bkc_spill_reader_open(s, p + 1) : NULL;
            uint64_t k1 = 0, k2 = 0;
            for (;;) {
                const char *line;
                size_t len;
                uint64_t h = 0;
                int a = bkc_spill_reader_next(r1, &line, &len, &h);
                CHECK(a >= 0);
                if (a == 1) {
                    while (k1 < n && part[k1] != p)
                        k1++;
                    CHECK(k1 < n);
                    if (k1 < n) {
                        CHECK(len == uni_len[seq[k1]] && memcmp(line, uni[seq[k1]], len) == 0);
                        CHECK_EQ_U64(h, spill_hash(k1));
                        bytes[p] += len;
                        k1++;
                    }
                }
                int b = r2 ? bkc_spill_reader_next(r2, &line, &len, &h) : 0;
                CHECK(b >= 0);
                if (b == 1) {
                    while (k2 < n && part[k2] != p + 1)
                        k2++;
                    CHECK(k2 < n);
                    if (k2 < n) {
                        CHECK(len == uni_len[seq[k2]] && memcmp(line, uni[seq[k2]], len) == 0);
                        CHECK_EQ_U64(h, spill_hash(k2));
                        k2++;
                    }
                }
                if (a != 1 && b != 1)
                    break;
            }
            /* nothing left unread */
            while (k1 < n && part[k1] != p)
                k1++;
            CHECK_EQ_U64(k1, n);
            bkc_spill_reader_close(r1);
            bkc_spill_reader_close(r2);
        }
        CHECK(bkc_spill_part_bytes(s, 0) >= bytes[0]);
        free(seq);
        free(part);
        bkc_spill_free(s);
    }
    bkc_spill_free(NULL);
}

static void test_spill_errors(void)
{
    char err[600];
    CHECK(bkc_spill_create("/nonexistent-dir/x", 4, 4096, err, sizeof err) == NULL);
    CHECK(strstr(err, "/nonexistent-dir/x") != NULL);
    /* A write that fails (file size limit, SIGXFSZ ignored) is an error
     * that sticks, never a silent loss. */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    bkc_spill_t *s = bkc_spill_create("/tmp", 2, 4096, err, sizeof err);
    CHECK(s != NULL);
    if (!s)
        return;
    lim = old;
    lim.rlim_cur = 100000;
    setrlimit(RLIMIT_FSIZE, &lim);
    int failed = 0;
    for (int i = 0; i < 100000 && !failed; i++)
        failed = bkc_spill_add(s, (uint32_t)(i & 1), (uint64_t)i, "some line of text", 17) != 0;
    if (!failed)
        failed = bkc_spill_finish(s) != 0;
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK(failed);
    CHECK(strstr(bkc_spill_error(s), "File too large") != NULL);
    CHECK(bkc_spill_add(s, 0, 0, "x", 1) != 0);
    CHECK(bkc_spill_finish(s) != 0);
    bkc_spill_free(s);
}

int main(void)
{
    make_universe();
    bkt_run("lineset_model", test_lineset_model);
    bkt_run("lineset_budget", test_lineset_budget);
    bkt_run("lineset_reserve", test_lineset_reserve);
    bkt_run("spill_model", test_spill_model);
    bkt_run("spill_errors", test_spill_errors);
    for (int i = 0; i < UNIVERSE; i++)
        free(uni[i]);
    return bkt_finish();
}
