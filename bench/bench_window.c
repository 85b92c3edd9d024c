/*
 * Window filters side by side in one run: "seen in the last N adds?" kept
 * four ways, each sized so its FPR at the worst moment of a steady stream is
 * at most p:
 *   window G=4 / G=8   bloomkit's window kind (src/window.c): G rotating
 *                      blocked generations, a key's G lines adjacent
 *   APBF k,l           age-partitioned Bloom filter (Shtul, Baquero, Almeida
 *                      2020), written here from the paper: k + l one-bit
 *                      slices, insert into the k newest, present when k
 *                      consecutive slices hold the key; (10, 7) is the usual
 *                      setting, (9, 40) the most compact one found
 *   rotate two         the by-hand approach: two blocked filters of N keys at
 *                      p/2, the older one cleared when the newer is full
 *   blocked (no window) one blocked filter of N keys at p that never forgets:
 *                      the memory and speed reference
 * Each is fed a stream of distinct 8-byte keys until it is in its steady
 * state (every slot or slice recycled at least once), stopped at its worst
 * moment (all generations full). Reported: bits per window item (payload
 * bits / N), how long it remembers (forgets everything after x N adds),
 * ns per add over the steady part of the stream (rotations included), ns
 * per lookup of a key in the window and of a new key (single calls), and
 * the FPR measured on 10^6 new keys at the worst moment. Keys are hashed
 * once per call with XXH3 (bk_hash_key) for every row. Timings: median of
 * REPS lookup runs; the machine is shared, so read the ratios.
 * BK_BENCH_QUICK=1 shrinks sizes.
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

#define REPS 5
#define P 0.01
#define SEED 42
#define LOOKUPS 1000000u
#define CHUNK 1000000u
#define COUNT 6

__extension__ typedef unsigned __int128 u128;

static bk_hash_t hash_of(uint64_t v)
{
    return bk_hash_key(BK_HASH_XXH3, SEED, &v, sizeof v);
}

/* ---- the contenders, behind one small interface ---- */

typedef struct contender {
    const char *name;
    void *state;
    uint64_t bytes, generation; /* adds per generation: the stream stops at a multiple */
    double forgets;             /* everything forgotten after forgets * N adds */
    void (*add)(void *s, bk_hash_t h);
    bool (*contains)(const void *s, bk_hash_t h);
    void (*free)(void *s);
} contender_t;

/* bloomkit's window kind, through the public calls */
static void win_add(void *s, bk_hash_t h)
{
    bk_filter_add_hash(s, h, NULL);
}

static bool win_contains(const void *s, bk_hash_t h)
{
    return bk_filter_contains_hash(s, h);
}

static void win_free(void *s)
{
    bk_filter_free(s);
}

static int make_window(contender_t *c, uint64_t n, uint32_t gens, const char *name)
{
    bk_options_t o = {.kind = BK_KIND_WINDOW, .seed_set = true, .seed = SEED,
                      .window_generations = gens};
    bk_filter_t *f;
    if (bk_filter_create(&f, n, P, &o) != BK_OK)
        return 1;
    bk_filter_info_t info;
    bk_filter_info(f, &info);
    *c = (contender_t){name, f, info.bytes, info.window_generation,
                       (double)(gens * info.window_generation) / (double)n,
                       win_add, win_contains, win_free};
    return 0;
}

/* APBF: slice for generation e is physical slice e mod (k + l); a key's bit
 * in physical slice s is at reduce(h.hi + s * h.lo, m). */
typedef struct apbf {
    uint32_t k, l, slices;
    uint64_t m, words, gen, in_gen, epoch;
    uint64_t *bits; /* slices * words */
} apbf_t;

static inline uint64_t apbf_pos(const apbf_t *a, bk_hash_t h, uint32_t s)
{
    return (uint64_t)(((u128)(h.hi + s * h.lo) * a->m) >> 64);
}

static inline bool apbf_test(const apbf_t *a, bk_hash_t h, uint32_t s)
{
    uint64_t p = apbf_pos(a, h, s);
    return (a->bits[s * a->words + p / 64] >> (p % 64)) & 1;
}

static void apbf_add(void *st, bk_hash_t h)
{
    apbf_t *a = st;
    if (a->in_gen == a->gen) { /* recycle the oldest slice as the newest */
        a->epoch++;
        memset(a->bits + (a->epoch % a->slices) * a->words, 0, a->words * 8);
        a->in_gen = 0;
    }
    for (uint32_t j = 0; j < a->k; j++) {
        uint32_t s = (uint32_t)((a->epoch + a->slices - j) % a->slices);
        uint64_t p = apbf_pos(a, h, s);
        a->bits[s * a->words + p / 64] |= UINT64_C(1) << (p % 64);
    }
    a->in_gen++;
}

/* Newest to oldest, looking for k consecutive slices holding the key. */
static bool apbf_contains(const void *st, bk_hash_t h)
{
    const apbf_t *a = st;
    uint32_t run = 0;
    for (uint32_t j = 0; j < a->slices && run + (a->slices - j) >= a->k; j++) {
        uint32_t s = (uint32_t)((a->epoch + a->slices - j) % a->slices);
        run = apbf_test(a, h, s) ? run + 1 : 0;
        if (run == a->k)
            return true;
    }
    return false;
}

static void apbf_free(void *st)
{
    apbf_t *a = st;
    free(a->bits);
    free(a);
}

/* The chance a new key finds k consecutive set slices when every slice is
 * as full as it gets (slice of age i holds min(i + 1, k) generations). */
static double apbf_fpr(uint32_t k, uint32_t l, double m, double gen)
{
    double run[64] = {1.0}, hit = 0.0;
    for (uint32_t age = 0; age < k + l; age++) {
        double fill = -expm1(-(double)(age + 1 < k ? age + 1 : k) * gen / m);
        double next[64] = {0};
        for (uint32_t r = 0; r < k; r++) {
            next[0] += run[r] * (1.0 - fill);
            if (r + 1 == k)
                hit += run[r] * fill;
            else
                next[r + 1] += run[r] * fill;
        }
        memcpy(run, next, sizeof run);
    }
    return hit;
}

static int make_apbf(contender_t *c, uint64_t n, uint32_t k, uint32_t l, const char *name)
{
    apbf_t *a = calloc(1, sizeof *a);
    if (!a)
        return 1;
    a->k = k;
    a->l = l;
    a->slices = k + l;
    a->gen = (n + l - 1) / l;
    double lo = 1, hi = 64.0 * (double)a->gen; /* bits per slice: bisect to 0.9 p */
    while (hi - lo > 1)
        if (apbf_fpr(k, l, (lo + hi) / 2, (double)a->gen) <= 0.9 * P)
            hi = (lo + hi) / 2;
        else
            lo = (lo + hi) / 2;
    a->m = (uint64_t)ceil(hi);
    a->words = (a->m + 63) / 64;
    a->bits = calloc(a->slices * a->words, 8);
    if (!a->bits)
        return 1;
    *c = (contender_t){name, a, a->slices * a->words * 8, a->gen,
                       (double)((k + l) * a->gen) / (double)n, apbf_add, apbf_contains, apbf_free};
    return 0;
}

/* Two blocked filters of N keys at p/2, rotated by hand. */
typedef struct rotate {
    bk_filter_t *cur, *old;
    uint64_t n, in_cur;
} rotate_t;

static void rot_add(void *st, bk_hash_t h)
{
    rotate_t *r = st;
    if (r->in_cur == r->n) {
        bk_filter_t *t = r->old;
        bk_filter_clear(t);
        r->old = r->cur;
        r->cur = t;
        r->in_cur = 0;
    }
    bk_filter_add_hash(r->cur, h, NULL);
    r->in_cur++;
}

static bool rot_contains(const void *st, bk_hash_t h)
{
    const rotate_t *r = st;
    return bk_filter_contains_hash(r->cur, h) || (r->old && bk_filter_contains_hash(r->old, h));
}

static void rot_free(void *st)
{
    rotate_t *r = st;
    bk_filter_free(r->cur);
    bk_filter_free(r->old);
    free(r);
}

static int make_rotate(contender_t *c, uint64_t n, uint32_t filters, const char *name)
{
    rotate_t *r = calloc(1, sizeof *r);
    bk_options_t o = {.kind = BK_KIND_BLOCKED, .seed_set = true, .seed = SEED};
    if (!r || bk_filter_create(&r->cur, n, P / filters, &o) != BK_OK ||
        (filters == 2 && bk_filter_create(&r->old, n, P / filters, &o) != BK_OK))
        return 1;
    r->n = n;
    bk_filter_info_t info;
    bk_filter_info(r->cur, &info);
    uint64_t bytes = filters == 2 ? 2 * info.bytes : info.bytes;
    *c = (contender_t){name, r, bytes, n, filters == 2 ? 2.0 : INFINITY,
                       rot_add, rot_contains, rot_free};
    if (filters == 1) /* one filter, never rotated: the stream stops at N */
        r->n = UINT64_MAX;
    return 0;
}

/* ---- the run ---- */

typedef struct result {
    double bits, forgets, add, hit, miss, fpr;
} result_t;

static uint64_t stream_length(const contender_t *c, uint64_t n)
{
    if (isinf(c->forgets))
        return n;
    uint64_t want = (uint64_t)ceil(c->forgets * (double)n) + c->generation;
    if (want < n + 2 * CHUNK) /* small windows: enough steady adds to time */
        want = n + 2 * CHUNK;
    return (want + c->generation - 1) / c->generation * c->generation;
}


/* Feeds every contender its stream in chunks, round robin, so that the
 * machine's background load falls on all of them alike; the add time is
 * that of the steady part (after the first N adds). */
static void feed(contender_t *c, uint64_t n, result_t *out)
{
    uint64_t pos[COUNT] = {0}, len[COUNT];
    double spent[COUNT] = {0};
    for (int i = 0; i < COUNT; i++)
        len[i] = stream_length(&c[i], n);
    for (bool more = true; more;) {
        more = false;
        for (int i = 0; i < COUNT; i++) {
            uint64_t end = pos[i] + CHUNK < len[i] ? pos[i] + CHUNK : len[i];
            if (pos[i] < n && end > n)
                end = n; /* the steady part starts on a chunk edge */
            double t0 = now_ns();
            for (uint64_t k = pos[i]; k < end; k++)
                c[i].add(c[i].state, hash_of(k));
            if (pos[i] >= n)
                spent[i] += now_ns() - t0;
            pos[i] = end;
            more |= end < len[i];
        }
    }
    for (int i = 0; i < COUNT; i++) {
        out[i].add = len[i] > n ? spent[i] / (double)(len[i] - n) : NAN;
        out[i].bits = (double)c[i].bytes * 8.0 / (double)n;
        out[i].forgets = c[i].forgets;
    }
}

/* Lookups of keys among the last N adds, then of new keys, each contender
 * in turn per repetition; the FPR is counted on the new keys. */
static void look_up(contender_t *c, uint64_t n, result_t *out)
{
    double t_hit[COUNT][REPS], t_miss[COUNT][REPS];
    for (int r = 0; r < REPS; r++) {
        for (int i = 0; i < COUNT; i++) {
            uint64_t len = stream_length(&c[i], n), found = 0, fp = 0, rng = (uint64_t)r;
            double t0 = now_ns();
            for (uint64_t j = 0; j < LOOKUPS; j++) {
                rng = rng * 6364136223846793005u + 1442695040888963407u;
                found += c[i].contains(c[i].state, hash_of(len - 1 - (rng >> 11) % n));
            }
            t_hit[i][r] = (now_ns() - t0) / LOOKUPS;
            t0 = now_ns();
            for (uint64_t j = 0; j < LOOKUPS; j++)
                fp += c[i].contains(c[i].state, hash_of(j | UINT64_C(1) << 63 | (uint64_t)r << 40));
            t_miss[i][r] = (now_ns() - t0) / LOOKUPS;
            if (found != LOOKUPS)
                fprintf(stderr, "bench_window: %s lost %llu keys of the window\n", c[i].name,
                        (unsigned long long)(LOOKUPS - found));
            if (r == 0)
                out[i].fpr = (double)fp / LOOKUPS;
        }
    }
    for (int i = 0; i < COUNT; i++) {
        out[i].hit = median(t_hit[i], REPS);
        out[i].miss = median(t_miss[i], REPS);
    }
}

static void print_row(const char *name, const result_t *r, const result_t *ref)
{
    char forgets[16];
    if (isinf(r->forgets))
        snprintf(forgets, sizeof forgets, "never");
    else
        snprintf(forgets, sizeof forgets, "%.2f N", r->forgets);
    printf("| %-20s | %6.2f | %-8s | %6.1f | %6.1f (%.2fx) | %6.1f (%.2fx) | %.4f |\n", name,
           r->bits, forgets, r->add, r->hit, r->hit / ref->hit, r->miss, r->miss / ref->miss,
           r->fpr);
}

static int bench_size(uint64_t n)
{
    contender_t c[COUNT];
    if (make_rotate(&c[0], n, 1, "blocked (no window)") ||
        make_window(&c[1], n, 4, "window G=4") || make_window(&c[2], n, 8, "window G=8") ||
        make_apbf(&c[3], n, 10, 7, "APBF k=10 l=7") || make_apbf(&c[4], n, 9, 40, "APBF k=9 l=40") ||
        make_rotate(&c[5], n, 2, "rotate two blocked")) {
        fprintf(stderr, "bench_window: out of memory\n");
        return 1;
    }
    result_t r[COUNT];
    feed(c, n, r);
    look_up(c, n, r);
    printf("\nN = %llu (window G=4: %.1f MB)\n\n", (unsigned long long)n, (double)c[1].bytes / 1e6);
    printf("| structure | bits/item | forgets after | ns/add | ns/lookup in window (vs blocked) "
           "| ns/lookup new key (vs blocked) | FPR at worst moment |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < COUNT; i++) {
        print_row(c[i].name, &r[i], &r[0]);
        c[i].free(c[i].state);
    }
    fflush(stdout);
    return 0;
}

int main(void)
{
    const char *quick = getenv("BK_BENCH_QUICK");
    bool q = quick && *quick && strcmp(quick, "0") != 0;
    printf("## Window filters: bloomkit's window vs APBF vs rotating two filters "
           "(p = %.2f, 8-byte keys, XXH3; lookups median of %d)\n",
           P, REPS);
    /* In cache, then about 250 MB for the window. */
    if (bench_size(q ? 20000 : 100000) || bench_size(q ? 2000000 : 110000000))
        return 1;
    return 0;
}
