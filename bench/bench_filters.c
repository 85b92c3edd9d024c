/*
 * Benchmark: bloomkit's blocked and classic filters against libbloom 1.6
 * (Debian's libbloom-dev), side by side in one run on the same keys.
 *
 * Two filter sizes, both sized for 1% FPR: a small one that lives in the
 * CPU caches, and a large one of about 256 MB, where libbloom's limit of
 * 2^31 bits sets n (the largest n libbloom accepts at 1%). For each
 * implementation and mode it prints ns per add, ns per contains of keys
 * that were added (+) and keys that were not (-), the FPR measured on the
 * negative queries, and bits per key. Next to the large filter it measures
 * this machine's floor for one random cache line: independent 64-byte reads
 * from a buffer of the same size (what a perfectly overlapped lookup could
 * reach), and a dependent chain of reads (one full memory latency each).
 * Last, URL-shaped keys (~60 bytes) looked up in the large filter: the
 * crawler's "have I fetched this?" in URLs per second on one core.
 *
 * It asserts nothing: it prints tables, and a few lines comparing the
 * numbers with the goals in DESIGN.md. Each time is the median of RUNS runs
 * over different keys (adds: the fill is cut into slices, each timed); the
 * machine may be shared, so compare rows of one run, not runs.
 *
 * Keys are 8-byte values mix64(i): i < n were added, i >= n were not.
 * Adds and the key generation share the timed loop (about 1 ns per key,
 * the same for every row); lookups read pre-generated query arrays.
 *
 * Before that table, a one-key-per-call section: bloomkit's single-key
 * calls against a split-block Bloom filter built from the Parquet spec
 * (sbbf.h) at 100 thousand, 10 million and 100 million keys, called out of
 * line as a library is and, in one row, inlined into the loop as the
 * FastFilter suite times the filters it ships in headers. That section's
 * adds read their keys from memory, made before the clock starts.
 *
 * Environment: BK_BENCH_QUICK=1 shrinks everything for a smoke run;
 * BK_BENCH_ONLY=single or core runs one section.
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"
#include "sbbf.h"

#include <bloom.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "timing.h"

#define RUNS 5
#define FPR 0.01
/* Largest n for which libbloom 1.6's bit count at 1% fits its int:
 * n * -ln(0.01) / ln(2)^2 < 2^31. */
#define LARGE_N_DEFAULT 224000000u
#define SMALL_N 50000u
#define FILL_CHUNK 4096u

static int quick;

/* ---- utilities ------------------------------------------------------------ */

/* CPU time of this (single) thread: time it actually ran, memory stalls
 * included, descheduled time excluded. */
static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Every measurement is taken on both clocks: wall-clock time is what a user
 * waits; on-CPU time is what the same run costs when the thread is not
 * waiting for a core, which on a busy shared machine is the closer guide
 * to an idle machine's wall-clock time. */
enum { WALL = 0, CPU = 1, NCLK = 2 };

typedef struct span {
    double t[NCLK];
} span_t;

static span_t span_begin(void)
{
    span_t s;
    s.t[WALL] = now_ns();
    s.t[CPU] = cpu_ns();
    return s;
}

/* Time per operation since b, for n operations. */
static span_t span_per(span_t b, double n)
{
    span_t e = span_begin();
    for (int c = 0; c < NCLK; c++)
        e.t[c] = (e.t[c] - b.t[c]) / n;
    return e;
}

/* splitmix64's finalizer: a bijection, so mix64(i) are distinct keys. */
static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* ---- the timed loops --------------------------------------------------- */

/* Out of line and opaque to the optimizer, as a call into a library is:
 * noipa keeps GCC from passing a callee the fields it reads instead of the
 * struct (IPA-SRA) or specializing it for constant arguments, which it did
 * to the split-block reference's calls (and no library call gets). */
#if defined(__GNUC__) && !defined(__clang__)
#define OUT_OF_LINE __attribute__((noinline, noipa))
#else
#define OUT_OF_LINE __attribute__((noinline))
#endif

/* Each timed loop of one key per call is a function of its own, kept out of
 * line. Inlined into a large caller, the compiler kept some loops' counter
 * or sum on the stack: a store and a reload per call, on a chain from one
 * iteration to the next, that the other side's loop did not pay (it cost a
 * 3-4 ns in-cache lookup up to 1.5x). Out of line, every loop is the same
 * few instructions around its call. */

OUT_OF_LINE static uint64_t loop_add(bk_filter_t *f, uint64_t from, uint64_t to)
{
    uint64_t fresh = 0;
    for (uint64_t i = from; i < to; i++) {
        uint64_t v = mix64(i);
        bool was_new;
        bk_filter_add(f, &v, sizeof v, &was_new);
        fresh += was_new;
    }
    return fresh;
}

/* As loop_add, not asking whether each key was new: the split-block
 * reference's add cannot tell, so the one-key section compares adds that
 * report nothing. */
OUT_OF_LINE static void loop_add_quiet(bk_filter_t *f, const uint64_t *val, size_t n)
{
    for (size_t i = 0; i < n; i++)
        bk_filter_add(f, &val[i], sizeof val[i], NULL);
}

OUT_OF_LINE static uint64_t loop_contains(const bk_filter_t *f, const uint64_t *val,
                                                        size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += bk_filter_contains(f, &val[i], sizeof val[i]);
    return hits;
}

OUT_OF_LINE static uint64_t loop_contains_hash(const bk_filter_t *f,
                                                             const bk_hash_t *hashes, size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += bk_filter_contains_hash(f, hashes[i]);
    return hits;
}

OUT_OF_LINE static uint64_t loop_libbloom_add(struct bloom *b, uint64_t from,
                                                            uint64_t to)
{
    uint64_t fresh = 0;
    for (uint64_t i = from; i < to; i++) {
        uint64_t v = mix64(i);
        fresh += bloom_add(b, &v, (int)sizeof v) == 0;
    }
    return fresh;
}

OUT_OF_LINE static uint64_t loop_libbloom_check(struct bloom *b, const uint64_t *val,
                                                              size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += bloom_check(b, &val[i], (int)sizeof val[i]) == 1;
    return hits;
}

static uint64_t rng_state = 42;
static uint64_t rng_next(void)
{
    rng_state += 1;
    return mix64(rng_state * UINT64_C(0xD1342543DE82EF95));
}

static uint64_t rng_below(uint64_t n)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)rng_next() * n) >> 64);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_filters: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* Consumed results, so the compiler cannot drop a timed loop. */
static volatile uint64_t sink;

/* ---- the implementations, behind one small interface ---------------------- */

typedef enum impl {
    BLOCKED_BATCH,
    BLOCKED_SINGLE,
    BLOCKED_PREHASHED,
    CLASSIC_BATCH,
    CLASSIC_SINGLE,
    LIBBLOOM,
    NIMPL
} impl_t;

static const char *const impl_name[NIMPL] = {
    "bloomkit blocked, batch",
    "bloomkit blocked, single",
    "bloomkit blocked, pre-hashed",
    "bloomkit classic, batch",
    "bloomkit classic, single",
    "libbloom 1.6",
};

typedef struct row {
    double add_ns[NCLK], pos_ns[NCLK], neg_ns[NCLK]; /* < 0: not measured */
    uint64_t neg_queries, false_pos, pos_queries, pos_found;
    double bits_per_key;
    int k;
} row_t;

/* One filter under test: a bloomkit filter or a libbloom struct. */
typedef struct target {
    bk_filter_t *bk;
    struct bloom lb;
    int is_lb;
} target_t;

/* The query keys of one run: values and the bk_key_t views of them. */
typedef struct queries {
    size_t n;
    uint64_t *val;
    bk_key_t *keys;
    bool *out;
} queries_t;

static void queries_init(queries_t *q, size_t n)
{
    q->n = n;
    q->val = xmalloc(n * sizeof *q->val);
    q->keys = xmalloc(n * sizeof *q->keys);
    q->out = xmalloc(n * sizeof *q->out);
    for (size_t i = 0; i < n; i++) {
        q->keys[i].ptr = &q->val[i];
        q->keys[i].len = sizeof q->val[i];
    }
}

static void queries_free(queries_t *q)
{
    free(q->val);
    free(q->keys);
    free(q->out);
}

/* Run r's positives: random keys among the n added. Negatives: keys never
 * added, different in every run. */
static void queries_fill(queries_t *pos, queries_t *neg, uint64_t n, int run)
{
    for (size_t i = 0; i < pos->n; i++)
        pos->val[i] = mix64(rng_below(n));
    for (size_t i = 0; i < neg->n; i++)
        neg->val[i] = mix64(n + (uint64_t)run * neg->n + i);
}

/* Adds keys [from, to) one at a time, or in batches; returns ns per add. */
static span_t timed_fill(target_t *t, uint64_t from, uint64_t to, int batch)
{
    uint64_t val[FILL_CHUNK];
    bk_key_t keys[FILL_CHUNK];
    uint64_t fresh = 0;
    span_t t0 = span_begin();
    if (t->is_lb) {
        fresh = loop_libbloom_add(&t->lb, from, to);
    } else if (!batch) {
        fresh = loop_add(t->bk, from, to);
    } else {
        for (uint64_t i = from; i < to; i += FILL_CHUNK) {
            size_t g = to - i < FILL_CHUNK ? (size_t)(to - i) : FILL_CHUNK;
            for (size_t j = 0; j < g; j++) {
                val[j] = mix64(i + j);
                keys[j].ptr = &val[j];
                keys[j].len = sizeof val[j];
            }
            uint64_t nn;
            bk_filter_add_batch(t->bk, keys, g, NULL, &nn);
            fresh += nn;
        }
    }
    span_t per = span_per(t0, (double)(to - from));
    sink += fresh;
    return per;
}

/* Looks up all of q in one mode; returns ns per lookup, *hits the hits. */
static span_t timed_contains(target_t *t, impl_t mode, queries_t *q, const bk_hash_t *hashes,
                             uint64_t *hits)
{
    uint64_t h = 0;
    span_t t0 = span_begin();
    switch (mode) {
    case BLOCKED_BATCH:
    case CLASSIC_BATCH:
        h = bk_filter_contains_batch(t->bk, q->keys, q->n, q->out);
        break;
    case BLOCKED_SINGLE:
    case CLASSIC_SINGLE:
        h = loop_contains(t->bk, q->val, q->n);
        break;
    case BLOCKED_PREHASHED:
        h = loop_contains_hash(t->bk, hashes, q->n);
        break;
    case LIBBLOOM:
        h = loop_libbloom_check(&t->lb, q->val, q->n);
        break;
    default:
        break;
    }
    span_t per = span_per(t0, (double)q->n);
    sink += h;
    *hits = h;
    return per;
}

static void fill_hashes(const target_t *t, const queries_t *q, bk_hash_t *hashes)
{
    for (size_t i = 0; i < q->n; i++)
        hashes[i] = bk_filter_hash(t->bk, &q->val[i], sizeof q->val[i]);
}

/* Measures the lookups of the given modes on one filled filter: RUNS runs,
 * each with fresh positives and negatives; medians go into rows[mode]. */
static void measure_lookups(target_t *t, const impl_t *modes, int nmodes, uint64_t n,
                            size_t per_run, row_t *rows)
{
    queries_t pos, neg;
    queries_init(&pos, per_run);
    queries_init(&neg, per_run);
    bk_hash_t *hpos = xmalloc(per_run * sizeof *hpos);
    bk_hash_t *hneg = xmalloc(per_run * sizeof *hneg);
    double tp[NIMPL][NCLK][RUNS], tn[NIMPL][NCLK][RUNS];
    uint64_t seed_state = rng_state;
    for (int r = 0; r < RUNS; r++) {
        queries_fill(&pos, &neg, n, r);
        if (!t->is_lb) {
            fill_hashes(t, &pos, hpos);
            fill_hashes(t, &neg, hneg);
        }
        for (int m = 0; m < nmodes; m++) {
            impl_t mode = modes[m];
            uint64_t hits;
            span_t sp = timed_contains(t, mode, &pos, hpos, &hits);
            rows[mode].pos_queries += pos.n;
            rows[mode].pos_found += hits;
            span_t sn = timed_contains(t, mode, &neg, hneg, &hits);
            for (int c = 0; c < NCLK; c++) {
                tp[m][c][r] = sp.t[c];
                tn[m][c][r] = sn.t[c];
            }
            rows[mode].neg_queries += neg.n;
            rows[mode].false_pos += hits;
        }
    }
    /* Every target sees the same queries: restart the generator. */
    rng_state = seed_state;
    for (int m = 0; m < nmodes; m++) {
        for (int c = 0; c < NCLK; c++) {
            rows[modes[m]].pos_ns[c] = median(tp[m][c], RUNS);
            rows[modes[m]].neg_ns[c] = median(tn[m][c], RUNS);
        }
    }
    queries_free(&pos);
    queries_free(&neg);
    free(hpos);
    free(hneg);
}

/* Fills a target with keys [0, n) in 2 * RUNS slices, alternating single
 * and batched adds for bloomkit (so both see the same fill levels), and
 * records the median ns per add of each mode. */
static void fill_and_time(target_t *t, uint64_t n, impl_t batch_mode, impl_t single_mode,
                          row_t *rows)
{
    int slices = t->is_lb ? RUNS : 2 * RUNS;
    double tb[NCLK][RUNS], ts[NCLK][RUNS];
    for (int s = 0; s < slices; s++) {
        uint64_t from = n * (uint64_t)s / (uint64_t)slices;
        uint64_t to = n * (uint64_t)(s + 1) / (uint64_t)slices;
        int batch = !t->is_lb && s % 2;
        int run = t->is_lb ? s : s / 2;
        span_t sp = timed_fill(t, from, to, batch);
        for (int c = 0; c < NCLK; c++)
            (batch ? tb : ts)[c][run] = sp.t[c];
    }
    for (int c = 0; c < NCLK; c++) {
        rows[single_mode].add_ns[c] = median(ts[c], RUNS);
        if (!t->is_lb)
            rows[batch_mode].add_ns[c] = median(tb[c], RUNS);
    }
}

static void set_bits_per_key(const target_t *t, uint64_t n, const impl_t *modes, int nmodes,
                             row_t *rows)
{
    double bpk;
    int k;
    if (t->is_lb) {
        bpk = (double)t->lb.bits / (double)n;
        k = t->lb.hashes;
    } else {
        bk_filter_info_t info;
        bk_filter_info(t->bk, &info);
        bpk = (double)info.cells / (double)n;
        k = (int)info.k;
    }
    for (int m = 0; m < nmodes; m++) {
        rows[modes[m]].bits_per_key = bpk;
        rows[modes[m]].k = k;
    }
}

static int make_bk_hashed(target_t *t, bk_kind_t kind, bk_hash_id_t hash, uint64_t n)
{
    bk_options_t o = {0};
    o.kind = kind;
    o.hash = hash;
    o.seed_set = true;
    o.seed = 12345;
    memset(t, 0, sizeof *t);
    bk_status_t st = bk_filter_create(&t->bk, n, FPR, &o);
    if (st != BK_OK) {
        fprintf(stderr, "bench_filters: bk_filter_create: %s\n", bk_strerror(st));
        return -1;
    }
    return 0;
}

static int make_bk(target_t *t, bk_kind_t kind, uint64_t n)
{
    return make_bk_hashed(t, kind, BK_HASH_DEFAULT, n);
}

static int make_lb(target_t *t, uint64_t n)
{
    memset(t, 0, sizeof *t);
    t->is_lb = 1;
    if (n > INT32_MAX || bloom_init(&t->lb, (int)n, FPR) != 0 || t->lb.bits <= 0) {
        fprintf(stderr, "bench_filters: libbloom cannot hold %" PRIu64 " keys at 1%%\n", n);
        return -1;
    }
    return 0;
}

static void free_target(target_t *t)
{
    if (t->is_lb)
        bloom_free(&t->lb);
    else
        bk_filter_free(t->bk);
}

/* ---- the floor: random 64-byte reads from a buffer of the filter's size --- */

typedef struct floor_result {
    double independent_ns[NCLK], chain_ns[NCLK];
} floor_result_t;

/* Allocated like a large filter payload (anonymous mapping, huge pages
 * asked for) so the floor sees the same TLB behaviour as the filter. */
static uint64_t *floor_buffer(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "bench_filters: cannot map %zu bytes\n", bytes);
        exit(1);
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static floor_result_t measure_floor(size_t bytes, size_t per_run)
{
    size_t lines = bytes / 64;
    uint64_t *buf = floor_buffer(lines * 64);
    /* A random cyclic permutation of the lines (Sattolo's algorithm): each
     * line's first word holds the next line's index, for the chain. */
    uint32_t *perm = xmalloc(lines * sizeof *perm);
    for (size_t i = 0; i < lines; i++)
        perm[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)rng_below(i);
        uint32_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    for (size_t i = 0; i < lines; i++) {
        uint64_t *line = buf + (size_t)perm[i] * 8;
        line[0] = perm[(i + 1) % lines];
        for (int w = 1; w < 8; w++)
            line[w] = i + (uint64_t)w;
    }
    free(perm);

    uint32_t *idx = xmalloc(per_run * sizeof *idx);
    double ti[NCLK][RUNS], tc[NCLK][RUNS];
    uint64_t pos = 0;
    for (int r = 0; r < RUNS; r++) {
        for (size_t i = 0; i < per_run; i++)
            idx[i] = (uint32_t)rng_below(lines);
        /* Independent: every address is known up front, so the core can
         * have as many misses in flight as it is able to. The sum keeps
         * the loads alive. */
        uint64_t sum = 0;
        span_t t0 = span_begin();
        for (size_t i = 0; i < per_run; i++)
            sum += buf[(size_t)idx[i] * 8 + (i & 7)];
        span_t si = span_per(t0, (double)per_run);
        sink += sum;
        /* Dependent: each address comes from the previous load. */
        size_t steps = per_run / 4;
        t0 = span_begin();
        for (size_t i = 0; i < steps; i++)
            pos = buf[pos * 8];
        span_t sc = span_per(t0, (double)steps);
        sink += pos;
        for (int c = 0; c < NCLK; c++) {
            ti[c][r] = si.t[c];
            tc[c][r] = sc.t[c];
        }
    }
    free(idx);
    munmap(buf, lines * 64);
    floor_result_t fr;
    for (int c = 0; c < NCLK; c++) {
        fr.independent_ns[c] = median(ti[c], RUNS);
        fr.chain_ns[c] = median(tc[c], RUNS);
    }
    return fr;
}

/* ---- URL-shaped keys --------------------------------------------------- */

/* A block of variable-length keys stored back to back. */
typedef struct strkeys {
    size_t n;
    char *bytes;
    bk_key_t *keys;
    bool *out;
} strkeys_t;

/* URL number id: about 60 bytes, distinct for distinct ids. */
static int make_url(char *dst, size_t cap, uint64_t id)
{
    uint64_t h = mix64(id ^ UINT64_C(0x5555));
    static const char *const tld[] = {"com", "org", "net", "cn", "io"};
    return snprintf(dst, cap, "https://www.site%05u.example.%s/articles/%" PRIu64 "/p-%06x.html",
                    (unsigned)(h % 100000), tld[(h >> 20) % 5], id, (unsigned)(h >> 40) & 0xFFFFFFu);
}

static void strkeys_init(strkeys_t *s, size_t n)
{
    s->n = n;
    s->bytes = xmalloc(n * 96);
    s->keys = xmalloc(n * sizeof *s->keys);
    s->out = xmalloc(n * sizeof *s->out);
}

/* Fills s with URLs of the given ids, in order (as a stream would deliver
 * them: the key bytes are read sequentially). */
static void strkeys_fill(strkeys_t *s, const uint64_t *ids)
{
    char *p = s->bytes;
    for (size_t i = 0; i < s->n; i++) {
        int len = make_url(p, 96, ids[i]);
        s->keys[i].ptr = p;
        s->keys[i].len = (size_t)len;
        p += len;
    }
}

static void strkeys_free(strkeys_t *s)
{
    free(s->bytes);
    free(s->keys);
    free(s->out);
}

typedef struct url_result {
    double batch_ns[NCLK], single_ns[NCLK], lb_ns[NCLK];
    double mean_len;
} url_result_t;

/* Adds URLs [0, nurl) to the target, then looks up RUNS streams of per_run
 * URLs, half of them added, half not, in random order. Fills the fields of
 * *res that belong to this target. */
static void measure_urls(target_t *t, uint64_t nurl, size_t per_run, url_result_t *res)
{
    strkeys_t s;
    strkeys_init(&s, per_run);
    uint64_t *ids = xmalloc(per_run * sizeof *ids);
    /* Add in chunks of per_run. */
    for (uint64_t base = 0; base < nurl; base += per_run) {
        size_t g = nurl - base < per_run ? (size_t)(nurl - base) : per_run;
        for (size_t i = 0; i < g; i++)
            ids[i] = base + i;
        s.n = g;
        strkeys_fill(&s, ids);
        for (size_t i = 0; i < g; i++) {
            if (t->is_lb)
                bloom_add(&t->lb, s.keys[i].ptr, (int)s.keys[i].len);
            else
                bk_filter_add(t->bk, s.keys[i].ptr, s.keys[i].len, NULL);
        }
    }
    s.n = per_run;
    double tb[NCLK][RUNS], tsg[NCLK][RUNS];
    uint64_t seed_state = rng_state;
    size_t total_len = 0;
    for (int r = 0; r < RUNS; r++) {
        for (size_t i = 0; i < per_run; i++)
            ids[i] = rng_next() & 1 ? rng_below(nurl) : nurl + rng_below(UINT64_C(1) << 40);
        strkeys_fill(&s, ids);
        for (size_t i = 0; i < per_run; i++)
            total_len += s.keys[i].len;
        uint64_t h = 0;
        span_t sb = {{0, 0}}, ss;
        span_t t0 = span_begin();
        if (t->is_lb) {
            for (size_t i = 0; i < per_run; i++)
                h += bloom_check(&t->lb, s.keys[i].ptr, (int)s.keys[i].len) == 1;
            ss = span_per(t0, (double)per_run);
        } else {
            h += bk_filter_contains_batch(t->bk, s.keys, per_run, s.out);
            sb = span_per(t0, (double)per_run);
            t0 = span_begin();
            for (size_t i = 0; i < per_run; i++)
                h += bk_filter_contains(t->bk, s.keys[i].ptr, s.keys[i].len);
            ss = span_per(t0, (double)per_run);
        }
        for (int c = 0; c < NCLK; c++) {
            tb[c][r] = sb.t[c];
            tsg[c][r] = ss.t[c];
        }
        sink += h;
    }
    rng_state = seed_state;
    res->mean_len = (double)total_len / (double)(RUNS * per_run);
    for (int c = 0; c < NCLK; c++) {
        if (t->is_lb) {
            res->lb_ns[c] = median(tsg[c], RUNS);
        } else {
            res->batch_ns[c] = median(tb[c], RUNS);
            res->single_ns[c] = median(tsg[c], RUNS);
        }
    }
    free(ids);
    strkeys_free(&s);
}

/* ---- printing ---------------------------------------------------------- */

static void print_ns(double v)
{
    if (v < 0)
        printf(" %9s |", "-");
    else
        printf(" %9.1f |", v);
}

/* ---- one key per call: bloomkit vs the split-block reference ------------- */

/* The way most users call a filter: a loop that adds or looks up one key at
 * a time, each call independent of the last. bloomkit's default filter at
 * 1% (split: Parquet's layout, in the library) and its blocked filter
 * (bk_filter_add, bk_filter_contains) against a split-block Bloom filter as
 * Parquet specifies it (sbbf.h; its calls kept out of line, as a library's
 * are), on random 8-byte keys, filters sized for n keys at 1%, lookups half
 * present, in random order. The pre-hashed rows take hashes computed
 * outside the timed loops (sk_prehashed); the batch rows are bk_filter_contains_batch on
 * the same keys, for scale. */

/* bloomkit's filters here: the default at 1% (split, hashing 8-byte keys
 * with the default's mixer), blocked, and split with hash xxh3 (XXH3-128
 * for every key, as the references hash). */
enum { SK_SPLIT, SK_BLOCKED, SK_SPLIT_XXH3, SK_NBK };

typedef enum sk_impl {
    SK_SPLIT_SINGLE,
    SK_SPLIT_PREHASHED,
    SK_SPLIT_BATCH,
    SK_BLOCKED_SINGLE,
    SK_BLOCKED_PREHASHED,
    SK_BLOCKED_BATCH,
    SK_SBBF_SINGLE,
    SK_SBBF_PREHASHED,
    SK_SBBF_U64,
    SK_POW2_U64,
    SK_POW2_MIX,
    SK_SPLIT_XXH3_SINGLE, /* one-key calls only: the hash compared, not the paths */
    SK_POW2_MIX_INLINE,   /* the integer-mixer filter's code inlined into the loop */
    SK_NIMPL
} sk_impl_t;

/* The references: split-block as Parquet sizes it, and its power-of-two
 * variant (sbbf.h). Indexes past bloomkit's filters (SK_NBK). */
enum { SK_REF_SBBF = SK_NBK, SK_REF_POW2, SK_REF_MIX, SK_NFILTERS };

typedef struct sk_refs {
    sbbf_t sb;
    sbbf_pow2_t p2;
    sbbf_pow2_t mix; /* keys hashed with mix_key, not XXH3 */
} sk_refs_t;

static const char *const sk_name[SK_NIMPL] = {
    "bloomkit split (default), call", "bloomkit split, pre-hashed",
    "bloomkit split, batch",          "bloomkit blocked, one per call",
    "bloomkit blocked, pre-hashed",   "bloomkit blocked, batch",
    "split-block (Parquet), per call", "split-block, pre-hashed",
    "split-block, 8-byte key call",
    "split-block pow2, 8-byte key",
    "split-block pow2, integer mixer",
    "bloomkit split, xxh3, call",
    "split-block pow2, mixer inlined",
};

/* Which filter a mode uses (a bloomkit one, or SK_REF_*), and how. */
static int sk_filter_of(sk_impl_t m)
{
    if (m == SK_POW2_U64)
        return SK_REF_POW2;
    if (m == SK_POW2_MIX || m == SK_POW2_MIX_INLINE)
        return SK_REF_MIX;
    if (m == SK_SPLIT_XXH3_SINGLE)
        return SK_SPLIT_XXH3;
    return m <= SK_SPLIT_BATCH ? SK_SPLIT : m <= SK_BLOCKED_BATCH ? SK_BLOCKED : SK_REF_SBBF;
}

typedef enum { HOW_SINGLE, HOW_PREHASHED, HOW_BATCH } sk_how_t;

static sk_how_t sk_how(sk_impl_t m)
{
    if (m == SK_SBBF_SINGLE || m == SK_SBBF_U64 || m == SK_POW2_U64 || m == SK_POW2_MIX ||
        m == SK_SPLIT_XXH3_SINGLE || m == SK_POW2_MIX_INLINE)
        return HOW_SINGLE;
    if (m == SK_SBBF_PREHASHED)
        return HOW_PREHASHED;
    return (sk_how_t)(m % 3);
}

typedef struct sk_row {
    double add_ns[NCLK], has_ns[NCLK]; /* < 0: not measured */
    uint64_t negs, false_pos, pos, found;
    double bits_per_key;
} sk_row_t;

OUT_OF_LINE static void sbbf_add_call(sbbf_t *f, const void *key, size_t len)
{
    sbbf_add(f, key, len);
}

OUT_OF_LINE static bool sbbf_contains_call(const sbbf_t *f, const void *key,
                                                         size_t len)
{
    return sbbf_contains(f, key, len);
}

OUT_OF_LINE static bool sbbf_contains_hash_call(const sbbf_t *f, uint64_t h)
{
    return sbbf_contains_hash(f, h);
}

/* The reference as a program with 8-byte keys writes it (and as the
 * FastFilter suite calls its filters): the key by value, hashed with its
 * length known to the compiler. The (pointer, length) call above hashes
 * with a length known only at run time, a general XXH3 path several
 * nanoseconds slower, which made the reference agree with bloomkit too
 * easily; bloomkit's own calls take (pointer, length) and specialize the
 * 8-byte case inside. The faster of the two is the one compared with. */
OUT_OF_LINE static void sbbf_add_u64_call(sbbf_t *f, uint64_t key)
{
    sbbf_add_hash(f, XXH3_64bits_withSeed(&key, 8, f->seed));
}

OUT_OF_LINE static bool sbbf_contains_u64_call(const sbbf_t *f, uint64_t key)
{
    return sbbf_contains_hash(f, XXH3_64bits_withSeed(&key, 8, f->seed));
}

OUT_OF_LINE static void loop_sbbf_add_u64(sbbf_t *f, const uint64_t *val, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sbbf_add_u64_call(f, val[i]);
}

OUT_OF_LINE static uint64_t loop_sbbf_contains_u64(const sbbf_t *f, const uint64_t *val,
                                                   size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += sbbf_contains_u64_call(f, val[i]);
    return hits;
}

OUT_OF_LINE static void sbbf_pow2_add_u64_call(sbbf_pow2_t *f, uint64_t key)
{
    sbbf_pow2_add_hash(f, XXH3_64bits_withSeed(&key, 8, f->base.seed));
}

OUT_OF_LINE static bool sbbf_pow2_contains_u64_call(const sbbf_pow2_t *f, uint64_t key)
{
    return sbbf_pow2_contains_hash(f, XXH3_64bits_withSeed(&key, 8, f->base.seed));
}

/* The hashing of the FastFilter suite's split-block filters: a key is an
 * integer, mixed by a multiply-xorshift finalizer (here MurmurHash3's
 * fmix64, seeded) instead of a byte-string hash. A file format that must
 * hash any byte string the same way cannot take it; the row shows what
 * that choice costs a one-key call. */
static inline uint64_t mix_key(uint64_t key, uint64_t seed)
{
    uint64_t h = key + seed;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ (h >> 33);
}

OUT_OF_LINE static void sbbf_mix_add_call(sbbf_pow2_t *f, uint64_t key)
{
    sbbf_pow2_add_hash(f, mix_key(key, f->base.seed));
}

OUT_OF_LINE static bool sbbf_mix_contains_call(const sbbf_pow2_t *f, uint64_t key)
{
    return sbbf_pow2_contains_hash(f, mix_key(key, f->base.seed));
}

OUT_OF_LINE static void loop_mix_add(sbbf_pow2_t *f, const uint64_t *val, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sbbf_mix_add_call(f, val[i]);
}

OUT_OF_LINE static uint64_t loop_mix_contains(const sbbf_pow2_t *f, const uint64_t *val, size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += sbbf_mix_contains_call(f, val[i]);
    return hits;
}

/* The same filter as the FastFilter suite times its own filters: their
 * code is in a header, so the compiler inlines each add and lookup into the
 * loop and overlaps consecutive keys' work, where a library's call cannot
 * be inlined. The rows above hold every reference to a call, as bloomkit's
 * are; this one shows what the suite's loop measures. */
OUT_OF_LINE static void loop_mix_add_inline(sbbf_pow2_t *f, const uint64_t *val, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sbbf_pow2_add_hash(f, mix_key(val[i], f->base.seed));
}

OUT_OF_LINE static uint64_t loop_mix_contains_inline(const sbbf_pow2_t *f, const uint64_t *val,
                                                     size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += sbbf_pow2_contains_hash(f, mix_key(val[i], f->base.seed));
    return hits;
}

OUT_OF_LINE static void loop_pow2_add_u64(sbbf_pow2_t *f, const uint64_t *val, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sbbf_pow2_add_u64_call(f, val[i]);
}

OUT_OF_LINE static uint64_t loop_pow2_contains_u64(const sbbf_pow2_t *f, const uint64_t *val,
                                                   size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += sbbf_pow2_contains_u64_call(f, val[i]);
    return hits;
}

OUT_OF_LINE static void loop_sbbf_add(sbbf_t *f, const uint64_t *val, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sbbf_add_call(f, &val[i], sizeof val[i]);
}

OUT_OF_LINE static uint64_t loop_sbbf_contains(const sbbf_t *f, const uint64_t *val,
                                                             size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += sbbf_contains_call(f, &val[i], sizeof val[i]);
    return hits;
}

OUT_OF_LINE static uint64_t loop_sbbf_contains_hash(const sbbf_t *f,
                                                                  const uint64_t *hashes, size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += sbbf_contains_hash_call(f, hashes[i]);
    return hits;
}

/* Adds the n keys at val to one implementation (bk: the bloomkit filter
 * of the mode, if it has one). The keys are made before the clock starts
 * and read from memory in order, as the FastFilter suite feeds its loops:
 * made inside the loop (mix64, two multiplies a key), they added the same
 * few nanoseconds to every row and shrank the ratios between rows. */
static span_t sk_fill(bk_filter_t *bk, sk_refs_t *refs, sk_impl_t mode, const uint64_t *val,
                      size_t n)
{
    bk_key_t keys[FILL_CHUNK];
    span_t t0 = span_begin();
    if (mode == SK_SBBF_SINGLE) {
        loop_sbbf_add(&refs->sb, val, n);
    } else if (mode == SK_SBBF_U64) {
        loop_sbbf_add_u64(&refs->sb, val, n);
    } else if (mode == SK_POW2_U64) {
        loop_pow2_add_u64(&refs->p2, val, n);
    } else if (mode == SK_POW2_MIX) {
        loop_mix_add(&refs->mix, val, n);
    } else if (mode == SK_POW2_MIX_INLINE) {
        loop_mix_add_inline(&refs->mix, val, n);
    } else if (sk_how(mode) == HOW_SINGLE) {
        loop_add_quiet(bk, val, n);
    } else {
        for (size_t i = 0; i < n; i += FILL_CHUNK) {
            size_t g = n - i < FILL_CHUNK ? n - i : FILL_CHUNK;
            for (size_t j = 0; j < g; j++) {
                keys[j].ptr = &val[i + j];
                keys[j].len = sizeof val[i + j];
            }
            bk_filter_add_batch(bk, keys, g, NULL, NULL);
        }
    }
    return span_per(t0, (double)n);
}

/* Pre-hashed lookups hash SK_HASH_CHUNK queries at a time, untimed, and
 * then time the chunk's lookups: the hashes are in the caches when they are
 * used, as in a program that hashes a key once for several filters. Taken
 * from one array of every query's hash, a 16-byte hash per lookup streamed
 * from memory measured up to 1.4x the time of the in-cache lookup itself
 * (the reference's 8-byte hashes cost it half as much), which compared the
 * hashes' sizes, not the lookups. 8192 bloomkit hashes are 128 KB. The
 * clock reads add about 0.1% to a chunk's wall time in the caches and up to
 * 3% to its on-CPU time. */
#define SK_HASH_CHUNK 8192u

static span_t sk_prehashed(const bk_filter_t *bk, const sbbf_t *sb, const queries_t *q,
                           uint64_t *hits)
{
    static bk_hash_t bh[SK_HASH_CHUNK];
    static uint64_t sh[SK_HASH_CHUNK];
    span_t sum = {{0, 0}};
    uint64_t h = 0;
    for (size_t from = 0; from < q->n; from += SK_HASH_CHUNK) {
        size_t g = q->n - from < SK_HASH_CHUNK ? q->n - from : SK_HASH_CHUNK;
        const uint64_t *val = &q->val[from];
        for (size_t i = 0; i < g; i++) {
            if (bk)
                bh[i] = bk_filter_hash(bk, &val[i], sizeof val[i]);
            else
                sh[i] = sbbf_hash(sb, &val[i], sizeof val[i]);
        }
        /* The wall clock read inside the on-CPU one: the on-CPU clock is a
         * system call (about 0.75 us here), the wall clock not. */
        double c0 = cpu_ns(), w0 = now_ns();
        h += bk ? loop_contains_hash(bk, bh, g) : loop_sbbf_contains_hash(sb, sh, g);
        double w1 = now_ns(), c1 = cpu_ns();
        sum.t[WALL] += w1 - w0;
        sum.t[CPU] += c1 - c0;
    }
    for (int c = 0; c < NCLK; c++)
        sum.t[c] /= (double)q->n;
    *hits = h;
    return sum;
}

/* Looks up all of q in one mode. */
static span_t sk_lookup(bk_filter_t *const *bks, const sk_refs_t *refs, sk_impl_t mode,
                        queries_t *q, uint64_t *hits)
{
    uint64_t h = 0;
    int which = sk_filter_of(mode);
    const bk_filter_t *bk = which < SK_NBK ? bks[which] : NULL;
    const sbbf_t *sb = &refs->sb;
    if (sk_how(mode) == HOW_PREHASHED) {
        span_t per = sk_prehashed(bk, sb, q, &h);
        sink += h;
        *hits = h;
        return per;
    }
    span_t t0 = span_begin();
    if (mode == SK_SBBF_SINGLE)
        h = loop_sbbf_contains(sb, q->val, q->n);
    else if (mode == SK_SBBF_U64)
        h = loop_sbbf_contains_u64(sb, q->val, q->n);
    else if (mode == SK_POW2_U64)
        h = loop_pow2_contains_u64(&refs->p2, q->val, q->n);
    else if (mode == SK_POW2_MIX)
        h = loop_mix_contains(&refs->mix, q->val, q->n);
    else if (mode == SK_POW2_MIX_INLINE)
        h = loop_mix_contains_inline(&refs->mix, q->val, q->n);
    else if (sk_how(mode) == HOW_SINGLE)
        h = loop_contains(bk, q->val, q->n);
    else
        h = bk_filter_contains_batch(bk, q->keys, q->n, q->out);
    span_t per = span_per(t0, (double)q->n);
    sink += h;
    *hits = h;
    return per;
}

/* Queries of run r: each key present (one of the n added) or not, by a coin
 * flip recorded in present[]. */
static void sk_queries(queries_t *q, bool *present, uint64_t n, int r)
{
    for (size_t i = 0; i < q->n; i++) {
        present[i] = rng_next() & 1;
        q->val[i] = present[i] ? mix64(rng_below(n)) : mix64(n + (uint64_t)(r + 1) * q->n + i);
    }
}

/* Accuracy, untimed: false positives and false negatives of each filter on
 * run r's queries (the rows of one filter answer alike; tests pin that). */
static void sk_accuracy(bk_filter_t *const *bks, const sk_refs_t *refs, queries_t *q,
                        const bool *present, sk_row_t *rows)
{
    bool *hit[SK_NFILTERS];
    for (int b = 0; b < SK_NBK; b++) {
        hit[b] = xmalloc(q->n * sizeof *hit[b]);
        bk_filter_contains_batch(bks[b], q->keys, q->n, hit[b]);
    }
    hit[SK_REF_SBBF] = xmalloc(q->n * sizeof *hit[SK_REF_SBBF]);
    hit[SK_REF_POW2] = xmalloc(q->n * sizeof *hit[SK_REF_POW2]);
    hit[SK_REF_MIX] = xmalloc(q->n * sizeof *hit[SK_REF_MIX]);
    for (size_t i = 0; i < q->n; i++) {
        uint64_t h = sbbf_hash(&refs->sb, &q->val[i], sizeof q->val[i]);
        hit[SK_REF_SBBF][i] = sbbf_contains_hash(&refs->sb, h);
        hit[SK_REF_POW2][i] = sbbf_pow2_contains_hash(&refs->p2, h);
        hit[SK_REF_MIX][i] =
            sbbf_pow2_contains_hash(&refs->mix, mix_key(q->val[i], refs->mix.base.seed));
    }
    for (int m = 0; m < SK_NIMPL; m++) {
        const bool *h = hit[sk_filter_of((sk_impl_t)m)];
        for (size_t i = 0; i < q->n; i++) {
            rows[m].pos += present[i];
            rows[m].found += present[i] && h[i];
            rows[m].negs += !present[i];
            rows[m].false_pos += !present[i] && h[i];
        }
    }
    for (int b = 0; b < SK_NFILTERS; b++)
        free(hit[b]);
}

/* Untimed: looks up all of q in mode's filter, so that each timed row
 * starts with its filter as warm as the caches allow. Without it, a row
 * that followed another row on the same filter found it in the caches and
 * the first row on a filter did not: with 1M keys (1.3 MB, the size of the
 * L2 here) the reference's second call measured 2x faster than the rows
 * around it. */
static void sk_warm(bk_filter_t *const *bks, const sk_refs_t *refs, sk_impl_t mode, queries_t *q)
{
    int which = sk_filter_of(mode);
    uint64_t hits = 0;
    if (which < SK_NBK) {
        hits = bk_filter_contains_batch(bks[which], q->keys, q->n, q->out);
    } else if (which == SK_REF_MIX) {
        for (size_t i = 0; i < q->n; i++)
            hits += sbbf_pow2_contains_hash(&refs->mix, mix_key(q->val[i], refs->mix.base.seed));
    } else {
        for (size_t i = 0; i < q->n; i++) {
            uint64_t h = sbbf_hash(&refs->sb, &q->val[i], sizeof q->val[i]);
            hits += which == SK_REF_POW2 ? sbbf_pow2_contains_hash(&refs->p2, h)
                                         : sbbf_contains_hash(&refs->sb, h);
        }
    }
    sink += hits;
}

/* Fills the filters with n keys in 2 * RUNS slices (each bloomkit filter
 * alternating single and batched adds, the reference single adds, slice by
 * slice), then RUNS rounds of lookups, each starting with a different
 * implementation. */
static void sk_measure(bk_filter_t *const *bks, sk_refs_t *refs, uint64_t n, size_t per_run,
                       sk_row_t *rows)
{
    double ta[SK_NIMPL][NCLK][2 * RUNS], th[SK_NIMPL][NCLK][RUNS];
    int na[SK_NIMPL] = {0};
    uint64_t *slice = xmalloc((n / (2 * RUNS) + 1) * sizeof *slice);
    for (int s = 0; s < 2 * RUNS; s++) {
        uint64_t from = n * (uint64_t)s / (2 * RUNS), to = n * (uint64_t)(s + 1) / (2 * RUNS);
        for (uint64_t i = from; i < to; i++)
            slice[i - from] = mix64(i);
        /* A reference's calls that hash a key to the same value take turns
         * filling its one filter, as bloomkit's calls do theirs. */
        sk_impl_t modes[SK_NFILTERS] = {s % 2 ? SK_SPLIT_BATCH : SK_SPLIT_SINGLE,
                                         s % 2 ? SK_BLOCKED_BATCH : SK_BLOCKED_SINGLE,
                                         SK_SPLIT_XXH3_SINGLE,
                                         s % 2 ? SK_SBBF_U64 : SK_SBBF_SINGLE, SK_POW2_U64,
                                         s % 2 ? SK_POW2_MIX_INLINE : SK_POW2_MIX};
        for (int b = 0; b < SK_NFILTERS; b++) {
            int j = (b + s) % SK_NFILTERS; /* who goes first changes */
            sk_impl_t m = modes[j];
            span_t sp = sk_fill(j < SK_NBK ? bks[j] : NULL, refs, m, slice, (size_t)(to - from));
            for (int c = 0; c < NCLK; c++)
                ta[m][c][na[m]] = sp.t[c];
            na[m]++;
        }
    }
    free(slice);
    queries_t q;
    queries_init(&q, per_run);
    bool *present = xmalloc(per_run * sizeof *present);
    for (int r = 0; r < RUNS; r++) {
        sk_queries(&q, present, n, r);
        sk_accuracy(bks, refs, &q, present, rows);
        for (int j = 0; j < SK_NIMPL; j++) {
            sk_impl_t mode = (sk_impl_t)((j + r) % SK_NIMPL);
            uint64_t hits;
            sk_warm(bks, refs, mode, &q);
            span_t sp = sk_lookup(bks, refs, mode, &q, &hits);
            for (int c = 0; c < NCLK; c++)
                th[mode][c][r] = sp.t[c];
        }
    }
    for (int m = 0; m < SK_NIMPL; m++) {
        for (int c = 0; c < NCLK; c++) {
            rows[m].has_ns[c] = median(th[m][c], RUNS);
            rows[m].add_ns[c] = na[m] ? median(ta[m][c], na[m]) : -1;
        }
    }
    queries_free(&q);
    free(present);
}

static void sk_print(const sk_row_t *rows, int clk)
{
    printf("| %-31s | %9s | %9s | %8s | %8s |\n", "implementation", "ns/add", "ns/lookup",
           "FPR %", "bits/key");
    printf("|---------------------------------|----------:|----------:|---------:|---------:|\n");
    for (int m = 0; m < SK_NIMPL; m++) {
        const sk_row_t *r = &rows[m];
        printf("| %-31s |", sk_name[m]);
        print_ns(r->add_ns[clk]);
        print_ns(r->has_ns[clk]);
        printf(" %8.3f | %8.2f |\n",
               r->negs ? 100.0 * (double)r->false_pos / (double)r->negs : 0.0, r->bits_per_key);
        if (clk == WALL && r->found != r->pos)
            printf("!! %s: %" PRIu64 " false negatives\n", sk_name[m], r->pos - r->found);
    }
}

/* One size: the filters for n keys at 1%, filled and queried; returns 0
 * on success, with the rows filled in and *bk_mb the default filter's
 * size. The default kind at 1% must be split (plan.c); said if not. */
static int sk_bench_size(uint64_t n, size_t per_run, sk_row_t *rows, double *bk_mb)
{
    target_t t[SK_NBK];
    sk_refs_t refs;
    memset(rows, 0, SK_NIMPL * sizeof *rows);
    memset(t, 0, sizeof t);
    int rc = -1;
    if (make_bk(&t[SK_SPLIT], BK_KIND_DEFAULT, n) != 0 ||
        make_bk(&t[SK_BLOCKED], BK_KIND_BLOCKED, n) != 0 ||
        make_bk_hashed(&t[SK_SPLIT_XXH3], BK_KIND_SPLIT, BK_HASH_XXH3, n) != 0)
        goto out;
    if (bk_filter_kind(t[SK_SPLIT].bk) != BK_KIND_SPLIT)
        printf("!! the default kind at 1%% is %s, not split\n",
               bk_kind_name(bk_filter_kind(t[SK_SPLIT].bk)));
    memset(&refs, 0, sizeof refs);
    if (sbbf_init(&refs.sb, n, 0.9 * FPR, 12345) != 0 ||
        sbbf_pow2_init(&refs.p2, n, 0.9 * FPR, 12345) != 0 ||
        sbbf_pow2_init(&refs.mix, n, 0.9 * FPR, 12345) != 0) {
        fprintf(stderr, "bench_filters: cannot allocate the split-block filters\n");
        goto out_refs;
    }
    bk_filter_t *bks[SK_NBK] = {t[SK_SPLIT].bk, t[SK_BLOCKED].bk, t[SK_SPLIT_XXH3].bk};
    sk_measure(bks, &refs, n, per_run, rows);
    for (int m = 0; m < SK_NIMPL; m++) {
        int which = sk_filter_of((sk_impl_t)m);
        if (which >= SK_NBK) {
            const sbbf_t *ref = which == SK_REF_POW2 ? &refs.p2.base
                                : which == SK_REF_MIX  ? &refs.mix.base
                                                       : &refs.sb;
            rows[m].bits_per_key = (double)(ref->blocks * 256) / (double)n;
        } else {
            bk_filter_info_t info;
            bk_filter_info(bks[which], &info);
            rows[m].bits_per_key = (double)info.cells / (double)n;
            if (which == SK_SPLIT)
                *bk_mb = (double)info.bytes / 1048576.0;
        }
    }
    rc = 0;
out_refs:
    sbbf_free(&refs.sb);
    sbbf_free(&refs.p2.base);
    sbbf_free(&refs.mix.base);
out:
    for (int b = 0; b < SK_NBK; b++)
        if (t[b].bk)
            free_target(&t[b]);
    return rc;
}

/* The single-key section: an in-cache filter, one in the last-level cache
 * or just past it, and one far larger than the caches. */
static int sk_bench(void)
{
    static const uint64_t full[] = {100000u, 10000000u, 100000000u};
    static const uint64_t small[] = {100000u, 1000000u};
    const uint64_t *sizes = quick ? small : full;
    int nsizes = quick ? 2 : 3;
    size_t per_run = quick ? 200000u : 4000000u;
    sk_row_t rows[3][SK_NIMPL];
    double mb[3];
    for (int s = 0; s < nsizes; s++)
        if (sk_bench_size(sizes[s], per_run, rows[s], &mb[s]) != 0)
            return -1;
    printf("## One key per call vs a split-block filter (bench_filters%s)\n\n",
           quick ? ", BK_BENCH_QUICK" : "");
    printf("Random 8-byte keys, filters for n keys at 1%%; lookups %zu per run, half\n"
           "present, in random order; medians of %d runs (adds: of the fill's slices, keys read from memory,\n"
           "bloomkit alternating single and batched adds). The default kind at 1%% is\n"
           "split. The split-block filter is bench/sbbf.h (Parquet's layout,\n"
           "XXH3-64), its calls out of line: per call with (pointer, length) as\n"
           "bloomkit's, and with the 8-byte key by value (its length known when\n"
           "hashing); \"pow2\" is its power-of-two variant (a mask, not a multiply,\n"
           "picks the block; up to 2x the memory); the integer-mixer row is pow2\n"
           "with a multiply-xorshift instead of XXH3, as the FastFilter suite\n"
           "hashes. bloomkit's default hash (xxh3-mix8) mixes an 8-byte key too, so\n"
           "its rows compare with that row; the \"xxh3\" row (a split filter made\n"
           "with hash xxh3) compares with the fastest of the XXH3 reference rows.\n"
           "The \"inlined\" row is the integer-mixer filter with its code inlined\n"
           "into the timed loop, as the FastFilter suite times the filters it ships\n"
           "in headers; every other row, bloomkit's included, pays for a call.\n",
           per_run, RUNS);
    for (int clk = 0; clk < NCLK; clk++) {
        printf("\n# %s\n", clk == WALL ? "Wall-clock time" : "On-CPU time");
        for (int s = 0; s < nsizes; s++) {
            printf("\n### n = %" PRIu64 " (bloomkit default %.1f MB)\n\n", sizes[s], mb[s]);
            sk_print(rows[s], clk);
            const sk_row_t *r = rows[s];
            /* The fastest reference row of the three, add and lookup each. */
            double ref_add = r[SK_SBBF_SINGLE].add_ns[clk], ref_has = r[SK_SBBF_SINGLE].has_ns[clk];
            for (int m = SK_SBBF_U64; m <= SK_POW2_U64; m++) { /* XXH3 rows */
                if (m == SK_SBBF_PREHASHED)
                    continue;
                ref_add = r[m].add_ns[clk] < ref_add ? r[m].add_ns[clk] : ref_add;
                ref_has = r[m].has_ns[clk] < ref_has ? r[m].has_ns[clk] : ref_has;
            }
            printf("\nvs the integer-mixer row (an integer key mixed, as the FastFilter suite "
                   "hashes; bloomkit's default mixes 8-byte keys): bloomkit split add %.2fx, "
                   "lookup %.2fx; blocked add %.2fx, lookup %.2fx\n",
                   r[SK_SPLIT_SINGLE].add_ns[clk] / r[SK_POW2_MIX].add_ns[clk],
                   r[SK_SPLIT_SINGLE].has_ns[clk] / r[SK_POW2_MIX].has_ns[clk],
                   r[SK_BLOCKED_SINGLE].add_ns[clk] / r[SK_POW2_MIX].add_ns[clk],
                   r[SK_BLOCKED_SINGLE].has_ns[clk] / r[SK_POW2_MIX].has_ns[clk]);
            printf("vs the inlined integer-mixer row (no call per key, as in the suite's loop): "
                   "bloomkit split add %.2fx, lookup %.2fx\n",
                   r[SK_SPLIT_SINGLE].add_ns[clk] / r[SK_POW2_MIX_INLINE].add_ns[clk],
                   r[SK_SPLIT_SINGLE].has_ns[clk] / r[SK_POW2_MIX_INLINE].has_ns[clk]);
            printf("vs the fastest XXH3 split-block row (of the three above): bloomkit split "
                   "with hash xxh3 add %.2fx, lookup %.2fx\n",
                   r[SK_SPLIT_XXH3_SINGLE].add_ns[clk] / ref_add,
                   r[SK_SPLIT_XXH3_SINGLE].has_ns[clk] / ref_has);
            printf("pre-hashed lookups vs split-block's: split %.2fx, blocked %.2fx\n",
                   r[SK_SPLIT_PREHASHED].has_ns[clk] / r[SK_SBBF_PREHASHED].has_ns[clk],
                   r[SK_BLOCKED_PREHASHED].has_ns[clk] / r[SK_SBBF_PREHASHED].has_ns[clk]);
        }
    }
    printf("\n");
    return 0;
}

static void print_rows(const row_t *rows, const impl_t *order, int n, int clk)
{
    printf("| %-28s | %9s | %9s | %9s | %8s | %8s | %2s |\n", "implementation", "ns/add",
           "ns/has(+)", "ns/has(-)", "FPR %", "bits/key", "k");
    printf("|------------------------------|----------:|----------:|----------:|---------:|---------:|---:|\n");
    for (int i = 0; i < n; i++) {
        const row_t *r = &rows[order[i]];
        printf("| %-28s |", impl_name[order[i]]);
        print_ns(r->add_ns[clk]);
        print_ns(r->pos_ns[clk]);
        print_ns(r->neg_ns[clk]);
        printf(" %8.3f | %8.2f | %2d |\n",
               r->neg_queries ? 100.0 * (double)r->false_pos / (double)r->neg_queries : 0.0,
               r->bits_per_key, r->k);
        if (clk == WALL && r->pos_found != r->pos_queries)
            printf("!! %s: %" PRIu64 " false negatives\n", impl_name[order[i]],
                   r->pos_queries - r->pos_found);
    }
}

static void init_rows(row_t *rows)
{
    for (int i = 0; i < NIMPL; i++) {
        memset(&rows[i], 0, sizeof rows[i]);
        for (int c = 0; c < NCLK; c++)
            rows[i].add_ns[c] = rows[i].pos_ns[c] = rows[i].neg_ns[c] = -1;
    }
}

static const impl_t bk_blocked_modes[] = {BLOCKED_BATCH, BLOCKED_SINGLE, BLOCKED_PREHASHED};
static const impl_t bk_classic_modes[] = {CLASSIC_BATCH, CLASSIC_SINGLE};
static const impl_t lb_modes[] = {LIBBLOOM};
static const impl_t print_order[] = {BLOCKED_BATCH, BLOCKED_SINGLE, BLOCKED_PREHASHED,
                                     CLASSIC_BATCH, CLASSIC_SINGLE, LIBBLOOM};

/* Fills and measures the three filters of one size; returns 0 on success.
 * With urls, also adds nurl URLs and measures URL lookups (*ures). */
static int bench_size(uint64_t n, size_t per_run, row_t *rows, uint64_t *blocked_bytes,
                      uint64_t nurl, size_t url_per_run, url_result_t *ures)
{
    target_t t;
    init_rows(rows);

    if (make_bk(&t, BK_KIND_BLOCKED, n) != 0)
        return -1;
    bk_filter_info_t info;
    bk_filter_info(t.bk, &info);
    *blocked_bytes = info.bytes;
    fill_and_time(&t, n, BLOCKED_BATCH, BLOCKED_SINGLE, rows);
    measure_lookups(&t, bk_blocked_modes, 3, n, per_run, rows);
    set_bits_per_key(&t, n, bk_blocked_modes, 3, rows);
    if (ures)
        measure_urls(&t, nurl, url_per_run, ures);
    free_target(&t);

    if (make_bk(&t, BK_KIND_CLASSIC, n) != 0)
        return -1;
    fill_and_time(&t, n, CLASSIC_BATCH, CLASSIC_SINGLE, rows);
    measure_lookups(&t, bk_classic_modes, 2, n, per_run, rows);
    set_bits_per_key(&t, n, bk_classic_modes, 2, rows);
    free_target(&t);

    if (make_lb(&t, n) != 0)
        return -1;
    fill_and_time(&t, n, LIBBLOOM, LIBBLOOM, rows);
    measure_lookups(&t, lb_modes, 1, n, per_run, rows);
    set_bits_per_key(&t, n, lb_modes, 1, rows);
    if (ures)
        measure_urls(&t, nurl, url_per_run, ures);
    free_target(&t);
    return 0;
}

int main(void)
{
    const char *q = getenv("BK_BENCH_QUICK");
    quick = q && *q && strcmp(q, "0") != 0;
    /* BK_BENCH_ONLY=single or =core runs one of the two sections. */
    const char *only = getenv("BK_BENCH_ONLY");
    bool run_single = !only || strcmp(only, "single") == 0;
    bool run_core = !only || strcmp(only, "core") == 0;
    if (run_single && sk_bench() != 0)
        return 1;
    if (!run_core)
        return 0;
    uint64_t large_n = quick ? 4000000u : LARGE_N_DEFAULT;
    size_t large_per_run = quick ? 200000u : 1000000u;
    size_t small_per_run = quick ? 200000u : 2000000u;
    uint64_t nurl = quick ? 200000u : 1000000u;
    size_t url_per_run = quick ? 200000u : 500000u;
    row_t small[NIMPL], large[NIMPL];
    uint64_t small_bytes, large_bytes;
    url_result_t ures;
    memset(&ures, 0, sizeof ures);

    printf("## Core filters vs libbloom %s (bench_filters%s)\n\n", bloom_version(),
           quick ? ", BK_BENCH_QUICK" : "");
    printf("All filters sized for n keys at 1%% FPR; 8-byte keys mix64(i); times are\n"
           "medians of %d runs, in ns per operation; FPR measured on %zu (in-cache)\n"
           "and %zu (large) keys never added; libbloom is used as its API allows\n"
           "(one key at a time).\n\n",
           RUNS, RUNS * small_per_run, RUNS * large_per_run);

    double t_start = now_ns(), cpu_start = cpu_ns();
    if (bench_size(SMALL_N, small_per_run, small, &small_bytes, 0, 0, NULL) != 0)
        return 1;
    if (bench_size(large_n, large_per_run, large, &large_bytes, nurl, url_per_run, &ures) != 0)
        return 1;
    floor_result_t fl = measure_floor((size_t)large_bytes, large_per_run);
    double wall = now_ns() - t_start, share = (cpu_ns() - cpu_start) / wall;

    for (int clk = 0; clk < NCLK; clk++) {
        if (clk == WALL)
            printf("# Wall-clock time (CLOCK_MONOTONIC)\n\n");
        else
            printf("\n# The same runs in on-CPU time (CLOCK_THREAD_CPUTIME_ID): the time\n"
                   "# the thread ran, memory stalls included, time spent waiting for a\n"
                   "# core excluded\n\n");
        printf("### In-cache filter: n = %u (blocked filter %.0f KB)\n\n", SMALL_N,
               (double)small_bytes / 1024.0);
        print_rows(small, print_order, NIMPL, clk);
        printf("\n### Large filter: n = %" PRIu64 " (blocked filter %.0f MB)\n\n", large_n,
               (double)large_bytes / 1048576.0);
        print_rows(large, print_order, NIMPL, clk);
        printf("\nMachine floor, %.0f MB buffer: random independent 64-byte reads %.1f ns/read;\n"
               "dependent chain (one memory latency per read) %.1f ns/read.\n",
               (double)large_bytes / 1048576.0, fl.independent_ns[clk], fl.chain_ns[clk]);

        printf("\n### URL-shaped keys (mean %.0f bytes) in the large filter, half present\n\n",
               ures.mean_len);
        printf("| %-28s | %9s | %9s |\n", "implementation", "ns/URL", "M URLs/s");
        printf("|------------------------------|----------:|----------:|\n");
        printf("| %-28s | %9.1f | %9.1f |\n", impl_name[BLOCKED_BATCH], ures.batch_ns[clk],
               1e3 / ures.batch_ns[clk]);
        printf("| %-28s | %9.1f | %9.1f |\n", impl_name[BLOCKED_SINGLE], ures.single_ns[clk],
               1e3 / ures.single_ns[clk]);
        printf("| %-28s | %9.1f | %9.1f |\n", impl_name[LIBBLOOM], ures.lb_ns[clk],
               1e3 / ures.lb_ns[clk]);

        /* The goals from DESIGN.md, against this run's numbers. */
        const row_t *bb = &large[BLOCKED_BATCH], *lb = &large[LIBBLOOM];
        const row_t *ph = &small[BLOCKED_PREHASHED];
        double batch_large = (bb->pos_ns[clk] + bb->neg_ns[clk]) / 2;
        double lb_large = (lb->pos_ns[clk] + lb->neg_ns[clk]) / 2;
        double prehashed = (ph->pos_ns[clk] + ph->neg_ns[clk]) / 2;
        printf("\nGoals (large-filter lookups: mean of + and -), %s:\n",
               clk == WALL ? "wall-clock" : "on-CPU time");
        if (quick)
            printf("(quick run: its \"large\" filter fits in the caches, so these lines\n"
                   "do not speak to the goals)\n");
        printf("- batched large lookup / floor: %.2fx (goal <= 2x)\n",
               batch_large / fl.independent_ns[clk]);
        printf("- libbloom / batched large lookup: %.1fx (goal >= 10x)\n", lb_large / batch_large);
        printf("- in-cache pre-hashed lookup: %.1f ns (goal: a few ns)\n", prehashed);
        printf("- URLs, batched, large filter: %.1f M/s (goal >= 30 M/s)\n",
               1e3 / ures.batch_ns[clk]);
    }
    printf("\nRun took %.0f s; the benchmark thread was on a CPU %.0f%% of that time.\n",
           wall / 1e9, 100.0 * share);
    if (share < 0.95)
        printf("Other work on the machine slowed this run: the wall-clock numbers are\n"
               "inflated, the on-CPU ones much less so (neighbours still share the\n"
               "caches and the memory bus).\n");
    return 0;
}
