/* Tests for src/window.c: the window filter against an exact "last N adds"
 * / "last T time units" model over long random streams (no false negative
 * inside the window, FPR <= p for new and for forgotten keys, also at the
 * worst moment of each generation), idle gaps, clocks that go back,
 * lookups at a later time, batches against single calls, the slot layout
 * against a blocked filter, sizing and allocation failure. */
#include "harness.h"
#include "window.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NONE UINT64_MAX
#define SEED 0x5eed

static bk_hash_t hash_of(uint64_t v)
{
    return bk_hash_key(BK_HASH_XXH3, SEED, &v, sizeof v);
}

/* Keys never added: the stream draws from [0, universe), these from the
 * top half of the 64-bit range. */
static uint64_t fresh_key(uint64_t *rng)
{
    return bkt_rand(rng) | (UINT64_C(1) << 63);
}

typedef struct tally {
    uint64_t asked, positive;
} tally_t;

static void tally(tally_t *t, bool positive)
{
    t->asked++;
    t->positive += positive;
}

static bool within(const tally_t *t, double p)
{
    return t->asked > 0 && (double)t->positive <= p * (double)t->asked;
}

static bki_window_t *make(uint64_t capacity, double p, uint64_t span, uint32_t gens)
{
    bki_window_params_t prm = {.capacity = capacity, .fpr = p, .span = span, .generations = gens};
    bki_window_t *w = NULL;
    CHECK_OK(bki_window_create(&w, &prm, BK_HASH_XXH3, SEED));
    return w;
}

/* ---- count windows ---- */

typedef struct count_run {
    uint64_t window, universe, adds;
    uint32_t gens;
    double p;
} count_run_t;

/* Every key among the last N adds is present (the ring holds them). */
static void check_ring_present(const bki_window_t *w, const uint64_t *ring, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        CHECK_MSG(bki_window_contains(w, hash_of(ring[i])), "recent key %llu missing",
                  (unsigned long long)ring[i]);
}

static void run_count_model(count_run_t r, uint64_t rng)
{
    bki_window_t *w = make(r.window, r.p, 0, r.gens);
    if (!w)
        return;
    const uint64_t g = w->geom.gen_capacity, forget = r.gens * g;
    uint64_t *last = malloc(r.universe * sizeof *last);
    uint64_t *ring = calloc(r.window, sizeof *ring);
    for (uint64_t i = 0; i < r.universe; i++)
        last[i] = NONE;
    tally_t fresh = {0}, old = {0}, worst = {0};
    uint64_t false_neg = 0;
    for (uint64_t a = 0; a < r.adds; a++) {
        uint64_t v = bkt_rand(&rng) % r.universe;
        bool recent = last[v] != NONE && a - last[v] <= r.window;
        bool was_new = bki_window_add(w, hash_of(v));
        false_neg += recent && was_new;
        last[v] = a;
        ring[a % r.window] = v;
        uint64_t u = bkt_rand(&rng) % r.universe, done = a + 1;
        bool hit = bki_window_contains(w, hash_of(u));
        if (last[u] != NONE && done - last[u] <= r.window)
            false_neg += !hit;
        else if (last[u] == NONE || done - last[u] > forget)
            tally(&old, hit);
        tally(&fresh, bki_window_contains(w, hash_of(fresh_key(&rng))));
        if (done % g == 0) { /* every slot full: the worst moment */
            for (int i = 0; i < 400; i++)
                tally(&worst, bki_window_contains(w, hash_of(fresh_key(&rng))));
            check_ring_present(w, ring, done < r.window ? done : r.window);
        }
    }
    CHECK_MSG(false_neg == 0, "G=%u: %llu false negatives", r.gens, (unsigned long long)false_neg);
    CHECK_MSG(within(&fresh, r.p), "G=%u fresh FPR %llu/%llu", r.gens,
              (unsigned long long)fresh.positive, (unsigned long long)fresh.asked);
    CHECK_MSG(within(&worst, r.p), "G=%u worst-moment FPR %llu/%llu", r.gens,
              (unsigned long long)worst.positive, (unsigned long long)worst.asked);
    CHECK_MSG(within(&old, r.p), "G=%u forgotten keys FPR %llu/%llu", r.gens,
              (unsigned long long)old.positive, (unsigned long long)old.asked);
    free(last);
    free(ring);
    bki_window_free(w);
}

static void test_count_window_model(void)
{
    const uint32_t gens[] = {2, 4, 8, 16};
    for (size_t i = 0; i < sizeof gens / sizeof *gens; i++) {
        count_run_t r = {.window = 3000, .universe = 9000, .adds = bkt_scaled(300000),
                         .gens = gens[i], .p = 0.01};
        run_count_model(r, 11 + i);
    }
    count_run_t tight = {.window = 5000, .universe = 12000, .adds = bkt_scaled(300000),
                         .gens = 4, .p = 0.001};
    run_count_model(tight, 99);
}

/* The window's edges, exactly: the N-th most recent add is present; after
 * G g more adds a key is gone (no bits left, so a key whose bits no other
 * key shares reads absent). */
static void test_count_window_edges(void)
{
    bki_window_t *w = make(100, 0.01, 0, 4);
    if (!w)
        return;
    const uint64_t g = w->geom.gen_capacity;
    CHECK(g * 3 >= 100 && (g - 1) * 3 < 100);
    uint64_t still_found = 0;
    for (uint64_t start = 0; start < 2 * g; start++) {
        bki_window_clear(w);
        for (uint64_t i = 0; i < start; i++)
            bki_window_add(w, hash_of(1000000 + i));
        bki_window_add(w, hash_of(7));
        for (uint64_t i = 0; i < 99; i++)
            bki_window_add(w, hash_of(2000000 + i));
        CHECK_MSG(bki_window_contains(w, hash_of(7)), "start %llu: 100th newest missing",
                  (unsigned long long)start);
        for (uint64_t i = 99; i < 4 * g; i++)
            bki_window_add(w, hash_of(2000000 + i));
        /* Every slot was recycled since key 7: only a false positive
         * (p = 1%) can still find it. */
        bki_window_usage_t u;
        bki_window_usage(w, &u);
        CHECK(u.forgotten_before > start);
        still_found += bki_window_contains(w, hash_of(7));
    }
    CHECK_MSG(still_found <= 3, "forgotten key found %llu times of %llu",
              (unsigned long long)still_found, (unsigned long long)(2 * g));
    bki_window_free(w);
}

/* ---- time windows ---- */

typedef struct stamped {
    uint64_t key, time;
} stamped_t;

typedef struct time_run {
    uint64_t span, capacity, universe, adds;
    uint32_t gens;
    double p;
} time_run_t;

/* The next time of the stream: mostly 0-2 units ahead, sometimes an idle
 * gap longer than the window, sometimes a time in the past (ignored). */
static uint64_t next_time(uint64_t now, uint64_t idle, uint64_t *rng)
{
    uint64_t r = bkt_rand(rng);
    if (r % 4001 == 0)
        return now + idle + r % 1000;
    if (r % 997 == 0 && now > 50)
        return now - 50;
    return now + r % 3 + (r % 5 == 0);
}

static void run_time_model(time_run_t r, uint64_t rng)
{
    bki_window_t *w = make(r.capacity, r.p, r.span, r.gens);
    if (!w)
        return;
    const uint64_t d = w->geom.gen_span, forget = r.gens * d;
    const uint64_t ring_n = 4 * r.capacity;
    uint64_t *last = malloc(r.universe * sizeof *last);
    stamped_t *ring = calloc(ring_n, sizeof *ring);
    for (uint64_t i = 0; i < r.universe; i++)
        last[i] = NONE;
    tally_t fresh = {0}, old = {0};
    uint64_t false_neg = 0, clock = 0, idle_gaps = 0;
    for (uint64_t a = 0; a < r.adds; a++) {
        uint64_t t = next_time(clock, forget, &rng);
        idle_gaps += t >= clock + forget;
        bki_window_advance(w, t);
        clock = t > clock ? t : clock;
        uint64_t v = bkt_rand(&rng) % r.universe;
        bool recent = last[v] != NONE && clock - last[v] <= r.span;
        bool was_new = bki_window_add(w, hash_of(v));
        false_neg += recent && was_new;
        last[v] = clock;
        ring[a % ring_n] = (stamped_t){v, clock};
        uint64_t u = bkt_rand(&rng) % r.universe;
        bool hit = bki_window_contains(w, hash_of(u));
        if (last[u] != NONE && clock - last[u] <= r.span)
            false_neg += !hit;
        else if (last[u] == NONE || clock - last[u] >= forget)
            tally(&old, hit);
        tally(&fresh, bki_window_contains(w, hash_of(fresh_key(&rng))));
        if (a % 1000 == 999)
            for (uint64_t i = 0; i < ring_n && i <= a; i++)
                if (clock - ring[i].time <= r.span)
                    false_neg += !bki_window_contains(w, hash_of(ring[i].key));
    }
    CHECK_MSG(false_neg == 0, "G=%u: %llu false negatives", r.gens, (unsigned long long)false_neg);
    CHECK_MSG(idle_gaps > 0, "the stream had no idle gap");
    CHECK_MSG(within(&fresh, r.p), "G=%u fresh FPR %llu/%llu", r.gens,
              (unsigned long long)fresh.positive, (unsigned long long)fresh.asked);
    CHECK_MSG(within(&old, r.p), "G=%u forgotten keys FPR %llu/%llu", r.gens,
              (unsigned long long)old.positive, (unsigned long long)old.asked);
    free(last);
    free(ring);
    bki_window_free(w);
}

static void test_time_window_model(void)
{
    const uint32_t gens[] = {2, 4, 7};
    for (size_t i = 0; i < sizeof gens / sizeof *gens; i++) {
        /* About 1 add per 1.2 units: under 1000 adds per 1000 units. */
        time_run_t r = {.span = 1000, .capacity = 1000, .universe = 4000,
                        .adds = bkt_scaled(300000), .gens = gens[i], .p = 0.01};
        run_time_model(r, 21 + i);
    }
}

/* ---- time windows under every arrival pattern within the promise ----
 *
 * A time window promises, for any arrival of at most N adds in any T
 * units: every key added within the last T is present, and at most p of
 * the keys never added (or forgotten) read as present. Each pattern below
 * keeps to that promise; an exact model (each key's last add time) says
 * which keys must be present, and fresh keys measure the FPR at the
 * moments the window is fullest (the end of each burst). Before time
 * windows had slots that move on when full, a burst of N into one
 * generation read 2% to 14% of fresh keys as present at p = 0.1%. */

typedef struct arrival {
    const char *name;
    uint64_t n; /* adds */
    uint64_t *times;
} arrival_t;

/* Adds at most `per_span` in any window of `span`: a candidate time is
 * taken only if the adds in [t - span, t] stay within it (the window keeps
 * one tick past T, so the promise is read over T + 1 ticks). times
 * sorted. */
static uint64_t capped(uint64_t *times, uint64_t n, uint64_t span, uint64_t per_span)
{
    uint64_t kept = 0, lo = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t = times[i];
        while (lo < kept && t - times[lo] > span)
            lo++;
        if (kept - lo < per_span)
            times[kept++] = t;
    }
    return kept;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The arrival patterns for N adds per T. */
static arrival_t make_arrival(int which, uint64_t N, uint64_t T, uint64_t *rng)
{
    arrival_t a = {0};
    uint64_t cap = 6 * N;
    a.times = malloc(cap * sizeof *a.times);
    uint64_t n = 0, t0 = 1000000;
    switch (which) {
    case 0: /* one burst of N at one instant */
        a.name = "one burst";
        for (; n < N; n++)
            a.times[n] = t0;
        break;
    case 1: /* steady: N per T, for 4 T */
        a.name = "steady";
        for (; n < 4 * N; n++)
            a.times[n] = t0 + n * T / N;
        break;
    case 2: /* bursts of N / 2 separated by idle stretches of T / 2 + 1 */
        a.name = "bursts with idle stretches";
        for (uint64_t b = 0; b < 8; b++)
            for (uint64_t i = 0; i < N / 2; i++)
                a.times[n++] = t0 + b * (T / 2 + 1);
        break;
    case 3: /* random times over 5 T, at most N in any T */
        a.name = "spread over several windows";
        for (; n < cap; n++)
            a.times[n] = t0 + bkt_rand(rng) % (5 * T);
        qsort(a.times, n, sizeof *a.times, cmp_u64);
        n = capped(a.times, n, T, N);
        break;
    case 4: /* a trickle for a whole window, then a burst filling it up */
        a.name = "trickle then burst";
        for (uint64_t i = 0; i < N / 10; i++)
            a.times[n++] = t0 + i * T / (N / 10);
        for (uint64_t i = 0; i < N - N / 10; i++)
            a.times[n++] = t0 + T - 1;
        break;
    default: /* a burst, the clock jumping 10 T ahead (a machine that was
                off), another burst */
        a.name = "clock jumps forward";
        for (uint64_t i = 0; i < N; i++)
            a.times[n++] = t0;
        for (uint64_t i = 0; i < N; i++)
            a.times[n++] = t0 + 10 * T;
        break;
    }
    a.n = n;
    return a;
}
#define NARRIVALS 6

static void run_arrival(int which, uint64_t N, uint64_t T, double p, uint32_t gens)
{
    uint64_t rng = 77 + (uint64_t)which;
    arrival_t a = make_arrival(which, N, T, &rng);
    bki_window_t *w = make(N, p, T, gens);
    uint64_t *last = malloc(a.n * sizeof *last); /* key i: the i-th add's, or NONE */
    if (!w || !last)
        goto out;
    for (uint64_t i = 0; i < a.n; i++)
        last[i] = NONE;
    tally_t fresh = {0};
    uint64_t false_neg = 0, checks = 0;
    for (uint64_t i = 0; i < a.n; i++) {
        bki_window_advance(w, a.times[i]);
        /* every 7th add re-adds an earlier key: it must count as seen */
        uint64_t key = i % 7 == 6 ? i - 3 : i;
        bool was_new = bki_window_add(w, hash_of(key));
        if (last[key] != NONE && a.times[i] - last[key] <= T)
            false_neg += was_new;
        last[key] = a.times[i];
        bool end_of_burst = i + 1 == a.n || a.times[i + 1] != a.times[i];
        if (!end_of_burst || (i % 50 != 49 && a.times[i + (i + 1 < a.n)] - a.times[i] < T / 4 &&
                              i + 1 != a.n && which == 3))
            continue;
        /* the window at its fullest: every key of the last T present,
         * fresh keys within p */
        checks++;
        uint64_t now = a.times[i];
        for (uint64_t j = 0; j <= i; j++)
            if (last[j] != NONE && now - last[j] <= T)
                false_neg += !bki_window_contains(w, hash_of(j));
        for (int q = 0; q < 2000; q++)
            tally(&fresh, bki_window_contains(w, hash_of(fresh_key(&rng))));
    }
    CHECK_MSG(checks > 0, "%s: never checked", a.name);
    CHECK_MSG(false_neg == 0, "%s (N %llu, p %g, G %u): %llu false negatives", a.name,
              (unsigned long long)N, p, gens, (unsigned long long)false_neg);
    CHECK_MSG(within(&fresh, p), "%s (N %llu, p %g, G %u): FPR %llu/%llu = %.4f%%", a.name,
              (unsigned long long)N, p, gens, (unsigned long long)fresh.positive,
              (unsigned long long)fresh.asked, 100.0 * (double)fresh.positive / (double)fresh.asked);
out:
    free(last);
    free(a.times);
    bki_window_free(w);
}

/* A clock of whole seconds and a key added less than T ago in real time:
 * added at 10.9 s (tick 10) and asked at 12.05 s (tick 12) in a 2 s window
 * it is 1.15 s old, and must be found (it read as new, 1.05-1.75 s old
 * lines were printed again). Every pair of real times in milliseconds
 * with the key younger than T, probed to T - 1 ms, for several spans. */
static void test_time_window_whole_ticks(void)
{
    const uint64_t spans[] = {1, 2, 5, 60};
    for (size_t si = 0; si < sizeof spans / sizeof *spans; si++) {
        const uint64_t T = spans[si], T_ms = T * 1000;
        uint64_t missed = 0, asked = 0;
        for (uint64_t add_ms = 1000000; add_ms < 1000000 + 1000; add_ms += 50) {
            bki_window_t *w = make(1000, 0.01, T, 4);
            if (!w)
                return;
            bki_window_advance(w, add_ms / 1000);
            bki_window_add(w, hash_of(add_ms));
            /* ages from 0 to T - 1 ms, the clock only moving forward */
            for (uint64_t age = 0; age < T_ms; age += (age + 1 >= T_ms - 50 ? 1 : 37)) {
                bki_window_advance(w, (add_ms + age) / 1000);
                missed += !bki_window_contains(w, hash_of(add_ms));
                asked++;
            }
            bki_window_free(w);
        }
        CHECK_MSG(missed == 0, "span %llu s: %llu of %llu probes younger than the span missed",
                  (unsigned long long)T, (unsigned long long)missed, (unsigned long long)asked);
    }
}

/* Past the promise (three times N within one span): the rate stays
 * within p, the newest N keys stay present, and the window says that it
 * forgot early. */
static void test_time_window_over_capacity(void)
{
    const uint64_t N = 2000;
    bki_window_t *w = make(N, 0.01, 1000, 4);
    if (!w)
        return;
    bki_window_advance(w, 5000);
    for (uint64_t i = 0; i < 3 * N; i++)
        bki_window_add(w, hash_of(i));
    uint64_t rng = 9, missing = 0;
    tally_t fresh = {0};
    for (uint64_t i = 2 * N; i < 3 * N; i++)
        missing += !bki_window_contains(w, hash_of(i));
    for (int q = 0; q < 20000; q++)
        tally(&fresh, bki_window_contains(w, hash_of(fresh_key(&rng))));
    CHECK_EQ_U64(missing, 0);
    CHECK_MSG(within(&fresh, 0.01), "over capacity: FPR %llu/%llu",
              (unsigned long long)fresh.positive, (unsigned long long)fresh.asked);
    CHECK(w->cleared_early > 0);
    CHECK(bki_window_held(w) <= 4 * w->geom.gen_capacity);
    bki_window_free(w);
}

static void test_time_window_arrivals(void)
{
    for (int which = 0; which < NARRIVALS; which++) {
        run_arrival(which, 3000, 7 * 86400, 0.01, 4);
        run_arrival(which, 3000, 600, 0.001, 4);
        run_arrival(which, 2000, 1000, 0.01, 2);
        run_arrival(which, 2000, 1000, 0.01, 8);
    }
}

/* An idle period of G generations empties the window; a shorter one keeps
 * what is still inside it. */
static void test_idle_gap_empties(void)
{
    bki_window_t *w = make(1000, 0.01, 600, 4);
    if (!w)
        return;
    const uint64_t d = w->geom.gen_span;
    bki_window_advance(w, 10000);
    for (uint64_t i = 0; i < 500; i++)
        bki_window_add(w, hash_of(i));
    bki_window_advance(w, 10000 + 599);
    for (uint64_t i = 0; i < 500; i++)
        CHECK(bki_window_contains(w, hash_of(i)));
    bki_window_advance(w, (10000 / d + 4) * d); /* 4 generations on */
    bki_window_usage_t u;
    bki_window_usage(w, &u);
    CHECK_EQ_U64(u.bits_set, 0);
    CHECK_EQ_U64(u.items, 0);
    for (uint64_t i = 0; i < 500; i++)
        CHECK(!bki_window_contains(w, hash_of(i)));
    bki_window_free(w);
}

/* A clock that goes back changes nothing. */
static void test_clock_backwards_ignored(void)
{
    bki_window_t *w = make(1000, 0.01, 100, 4);
    if (!w)
        return;
    bki_window_advance(w, 5000);
    bki_window_add(w, hash_of(1));
    uint64_t epoch = w->epoch;
    bki_window_advance(w, 10);
    CHECK_EQ_U64(w->now, 5000);
    CHECK_EQ_U64(w->epoch, epoch);
    bki_window_add(w, hash_of(2));
    bki_window_advance(w, 5099);
    CHECK(bki_window_contains(w, hash_of(1)));
    CHECK(bki_window_contains(w, hash_of(2)));
    bki_window_free(w);
}

/* contains_at(t) answers what contains would after advance(t), and leaves
 * the window as it was. */
static void test_contains_at_matches_advance(void)
{
    bki_window_t *w = make(2000, 0.01, 1000, 5);
    bki_window_t *moved = make(2000, 0.01, 1000, 5);
    if (!w || !moved)
        goto out;
    uint64_t rng = 5, t = 0;
    for (uint64_t i = 0; i < 3000; i++) {
        t += bkt_rand(&rng) % 2;
        bki_window_advance(w, t);
        bki_window_add(w, hash_of(i));
    }
    uint64_t later[] = {t, t + 1, t + 250, t + 600, t + 999, t + 1400, t + 5000};
    for (size_t j = 0; j < sizeof later / sizeof *later; j++) {
        memcpy(moved->data, w->data, (size_t)w->geom.bytes);
        memcpy(moved->gen_adds, w->gen_adds, sizeof w->gen_adds);
        memcpy(moved->last, w->last, sizeof w->last);
        moved->newest = w->newest;
        moved->epoch = w->epoch;
        moved->now = w->now;
        bki_window_advance(moved, later[j]);
        uint64_t differ = 0, present = 0;
        for (uint64_t i = 0; i < 4000; i++) {
            bool at = bki_window_contains_at(w, hash_of(i), later[j]);
            differ += at != bki_window_contains(moved, hash_of(i));
            present += at;
        }
        CHECK_MSG(differ == 0, "t+%llu: %llu answers differ", (unsigned long long)(later[j] - t),
                  (unsigned long long)differ);
        CHECK_MSG(j < 5 || present < 3000, "t+%llu: old keys still present",
                  (unsigned long long)(later[j] - t));
    }
    CHECK_EQ_U64(w->now, t);
out:
    bki_window_free(w);
    bki_window_free(moved);
}

/* ---- layout, batches, sizing ---- */

/* Each slot is a blocked filter: one generation's line for a key equals
 * the line a blocked filter of the same lines, k and seed gives it. */
static void test_slot_is_blocked_filter(void)
{
    bki_window_t *w = make(20000, 0.01, 0, 4);
    if (!w)
        return;
    bk_options_t o = {.kind = BK_KIND_BLOCKED, .hash = BK_HASH_XXH3, .seed_set = true, .seed = SEED};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create_exact(&f, BK_KIND_BLOCKED, w->geom.lines * 512, w->geom.k, &o));
    if (!f)
        goto out;
    CHECK_EQ_U64(f->lines, w->geom.lines);
    uint64_t g = w->geom.gen_capacity;
    for (uint64_t i = 0; i < g + g / 2; i++) { /* generation 0, then half of 1 */
        bki_window_add(w, hash_of(i));
        if (i < g)
            CHECK_OK(bk_filter_add(f, &i, sizeof i, NULL));
    }
    uint64_t differ = 0;
    for (uint64_t b = 0; b < w->geom.lines; b++)
        differ += memcmp(w->data + b * 4 * 64, f->data + b * 64, 64) != 0;
    CHECK_MSG(differ == 0, "%llu lines of slot 0 differ", (unsigned long long)differ);
out:
    bk_filter_free(f);
    bki_window_free(w);
}

static void keys_of(bk_key_t *keys, uint64_t *vals, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) {
        vals[i] = bkt_rand(rng) % (n / 2); /* repeats within the batch */
        keys[i] = (bk_key_t){&vals[i], sizeof vals[i]};
    }
}

/* Batches give the single calls' flags and state, across generations, on
 * a window large enough for the prefetching pipeline and a small one. */
static void test_batch_matches_single(void)
{
    const uint64_t caps[] = {3000, 700000};
    for (size_t c = 0; c < 2; c++) {
        bki_window_t *one = make(caps[c], 0.01, 0, 4), *many = make(caps[c], 0.01, 0, 4);
        size_t n = (size_t)(caps[c] * 2 / 3 + 17);
        bk_key_t *keys = malloc(n * sizeof *keys);
        uint64_t *vals = malloc(n * sizeof *vals);
        bool *flag_one = malloc(n), *flag_many = malloc(n);
        if (!one || !many || !keys || !vals || !flag_one || !flag_many)
            goto next;
        uint64_t rng = 77 + c;
        for (int round = 0; round < 4; round++) {
            keys_of(keys, vals, n, &rng);
            uint64_t fresh = 0;
            for (size_t i = 0; i < n; i++)
                fresh += flag_one[i] = bki_window_add(one, hash_of(vals[i]));
            CHECK_EQ_U64(bki_window_add_batch(many, keys, n, flag_many), fresh);
            CHECK(memcmp(flag_one, flag_many, n) == 0);
            CHECK(memcmp(one->data, many->data, (size_t)one->geom.bytes) == 0);
            CHECK(memcmp(one->gen_adds, many->gen_adds, sizeof one->gen_adds) == 0);
            CHECK_EQ_U64(one->epoch, many->epoch);
            keys_of(keys, vals, n, &rng);
            size_t hits = 0;
            for (size_t i = 0; i < n; i++)
                hits += flag_one[i] = bki_window_contains(one, hash_of(vals[i]));
            CHECK_EQ_U64(bki_window_contains_batch(many, keys, n, flag_many), hits);
            CHECK(memcmp(flag_one, flag_many, n) == 0);
        }
        CHECK(one->epoch >= 2);
    next:
        free(keys);
        free(vals);
        free(flag_one);
        free(flag_many);
        bki_window_free(one);
        bki_window_free(many);
    }
}

/* The AVX2 and portable probes build identical windows and answer alike. */
static void test_simd_and_scalar_identical(void)
{
    bki_window_t *fast = make(5000, 0.01, 0, 5), *plain = make(5000, 0.01, 0, 5);
    if (!fast || !plain)
        goto out;
    uint64_t rng = 3, differ = 0;
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t v = bkt_rand(&rng) % 12000;
        bool was_fast = bki_window_add(fast, hash_of(v));
        bool was = bki_simd_force_scalar(true);
        differ += bki_window_add(plain, hash_of(v)) != was_fast;
        uint64_t u = bkt_rand(&rng) % 24000;
        differ += bki_window_contains(plain, hash_of(u)) != bki_window_contains(fast, hash_of(u));
        bki_simd_force_scalar(false);
        (void)was;
    }
    CHECK_EQ_U64(differ, 0);
    CHECK(memcmp(fast->data, plain->data, (size_t)fast->geom.bytes) == 0);
    CHECK(fast->epoch >= 5);
out:
    bki_window_free(fast);
    bki_window_free(plain);
}

/* Below the published APBF's 22.8 bits per item at 1%, with the model's
 * worst-moment FPR inside p; windows of (G - 1) generations cover N. */
static void test_plan(void)
{
    const double ps[] = {0.1, 0.01, 0.001, 1e-5};
    for (size_t i = 0; i < 4; i++) {
        for (uint32_t gens = 2; gens <= 16; gens++) {
            bki_window_params_t prm = {.capacity = 1000000, .fpr = ps[i], .span = 86400,
                                       .generations = gens};
            bki_window_geom_t g;
            CHECK_OK(bki_window_plan(&prm, &g));
            CHECK(g.expected_fpr <= ps[i]);
            /* the slotted bound: G full slots' rates sum to at most p */
            CHECK(gens * g.gen_fpr <= ps[i]);
            CHECK(g.gen_capacity * (gens - 1) >= prm.capacity);
            CHECK(g.gen_span * (gens - 1) >= prm.span);
            CHECK(g.slotted && g.slots == 2 * gens);
            CHECK_EQ_U64(g.bytes, g.lines * 2 * gens * 64);
            prm.span = 0; /* a count window: G slots */
            CHECK_OK(bki_window_plan(&prm, &g));
            CHECK(!g.slotted && g.slots == gens);
            CHECK_EQ_U64(g.bytes, g.lines * gens * 64);
        }
    }
    bki_window_params_t dflt = {.capacity = 1000000, .fpr = 0.01};
    bki_window_geom_t g;
    CHECK_OK(bki_window_plan(&dflt, &g));
    CHECK_EQ_U64(g.generations, BKI_WINDOW_DEFAULT_GENS);
    double bits = (double)g.bytes * 8 / 1e6;
    CHECK_MSG(bits < 22.8, "%.2f bits per item", bits);
}

static void test_bad_parameters(void)
{
    bki_window_params_t bad[] = {
        {.capacity = 0, .fpr = 0.01},
        {.capacity = 10, .fpr = 0},
        {.capacity = 10, .fpr = 1},
        {.capacity = 10, .fpr = -0.5},
        {.capacity = 10, .fpr = 0.01, .generations = 1},
        {.capacity = 10, .fpr = 0.01, .generations = BKI_WINDOW_MAX_GENS + 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        bki_window_t *w = (bki_window_t *)&bad[i];
        CHECK_STATUS(bki_window_create(&w, &bad[i], BK_HASH_XXH3, 1), BK_EINVAL);
        CHECK(w == NULL);
    }
    bki_window_params_t huge = {.capacity = UINT64_C(1) << 62, .fpr = 1e-9};
    bki_window_t *w = NULL;
    CHECK_STATUS(bki_window_create(&w, &huge, BK_HASH_XXH3, 1), BK_ENOMEM);
    CHECK(w == NULL);
}

static void test_allocation_failure(void)
{
    bki_window_params_t prm = {.capacity = 5000, .fpr = 0.01};
    bool created = false;
    for (long fail_at = 1; fail_at < 10 && !created; fail_at++) {
        bki_window_t *w = NULL;
        bki_fail_countdown = fail_at;
        bk_status_t s = bki_window_create(&w, &prm, BK_HASH_XXH3, 1);
        bki_fail_countdown = 0;
        if (s == BK_OK) {
            created = true;
            CHECK(fail_at == 3); /* struct, payload */
            bki_window_add(w, hash_of(1));
            CHECK(bki_window_contains(w, hash_of(1)));
        } else {
            CHECK_STATUS(s, BK_ENOMEM);
            CHECK(w == NULL);
        }
        bki_window_free(w);
    }
    CHECK(created);
}

/* Usage: items held, the window's edges, the expected FPR from the loads. */
static void test_usage(void)
{
    bki_window_t *w = make(300, 0.01, 0, 4);
    if (!w)
        return;
    const uint64_t g = w->geom.gen_capacity;
    bki_window_usage_t u;
    bki_window_usage(w, &u);
    CHECK_EQ_U64(u.items, 0);
    CHECK(u.expected_fpr == 0.0);
    for (uint64_t i = 0; i < 10 * g + 5; i++)
        bki_window_add(w, hash_of(i));
    bki_window_usage(w, &u);
    CHECK_EQ_U64(u.items, 3 * g + 5);
    CHECK_EQ_U64(u.certain_from, 10 * g + 5 - 300);
    CHECK_EQ_U64(u.forgotten_before, 7 * g);
    CHECK(u.bits_set > 0 && u.fill > 0.0 && u.fill < 0.6);
    CHECK(u.expected_fpr > 0.0 && u.expected_fpr <= w->geom.expected_fpr);
    bki_window_clear(w);
    bki_window_usage(w, &u);
    CHECK_EQ_U64(u.bits_set, 0);
    CHECK_EQ_U64(u.items, 0);
    bki_window_free(w);
}

/* A clone answers like the original and is independent of it; a window
 * restored from its parts and state equals the original, and states that
 * do not add up are refused. */
static void test_clone_and_restore(void)
{
    const uint64_t spans[] = {0, 500};
    for (int t = 0; t < 2; t++) {
        bki_window_t *w = make(1000, 0.01, spans[t], 5), *c = NULL, *r = NULL;
        if (!w)
            return;
        for (uint64_t i = 0; i < 2600; i++) {
            bki_window_advance(w, i / 2);
            bki_window_add(w, hash_of(i));
        }
        CHECK_OK(bki_window_clone(&c, w));
        CHECK_OK(bki_window_restore(&r, &w->params, w->geom.k, w->geom.lines, w->geom.slotted,
                                    w->hash, w->seed, NULL));
        if (!c || !r)
            goto next;
        memcpy(r->data, w->data, (size_t)w->geom.bytes);
        r->epoch = w->epoch;
        r->now = w->now;
        r->adds = w->adds;
        r->newest = w->newest;
        memcpy(r->gen_adds, w->gen_adds, sizeof w->gen_adds);
        memcpy(r->last, w->last, sizeof w->last);
        CHECK(bki_window_check_state(r) == NULL);
        CHECK_EQ_U64(r->newest, w->newest);
        CHECK(memcmp(&r->geom, &w->geom, sizeof w->geom) == 0);
        uint64_t differ = 0;
        for (uint64_t i = 0; i < 4000; i++) {
            bool in_w = bki_window_contains(w, hash_of(i));
            differ += bki_window_contains(c, hash_of(i)) != in_w;
            differ += bki_window_contains(r, hash_of(i)) != in_w;
        }
        CHECK_EQ_U64(differ, 0);
        bki_window_add(c, hash_of(999999));
        CHECK(memcmp(c->data, w->data, (size_t)w->geom.bytes) != 0);
        r->adds += 1; /* counts that no longer add up */
        CHECK(spans[t] != 0 || bki_window_check_state(r) != NULL);
        r->adds -= 1;
        r->epoch += 1;
        CHECK(bki_window_check_state(r) != NULL);
        r->epoch -= 1;
        r->gen_adds[BKI_WINDOW_MAX_SLOTS - 1] = 1;
        CHECK(bki_window_check_state(r) != NULL);
    next:
        bki_window_free(w);
        bki_window_free(c);
        bki_window_free(r);
    }
    bki_window_params_t prm = {.capacity = 100, .fpr = 0.01, .generations = 4};
    bki_window_t *r = NULL;
    CHECK_STATUS(bki_window_restore(&r, &prm, 17, 10, false, BK_HASH_XXH3, 1, NULL), BK_ECORRUPT);
    CHECK_STATUS(bki_window_restore(&r, &prm, 5, 0, false, BK_HASH_XXH3, 1, NULL), BK_ECORRUPT);
    /* slotted is for time windows only */
    CHECK_STATUS(bki_window_restore(&r, &prm, 5, 10, true, BK_HASH_XXH3, 1, NULL), BK_ECORRUPT);
    prm.generations = 1;
    CHECK_STATUS(bki_window_restore(&r, &prm, 5, 10, false, BK_HASH_XXH3, 1, NULL), BK_ECORRUPT);
    CHECK(r == NULL);
}


/* ---- through the public handle ---- */

static bk_filter_t *make_filter(uint64_t capacity, uint64_t span, uint32_t gens, uint64_t seed)
{
    bk_options_t o = {.kind = BK_KIND_WINDOW, .seed_set = true, .seed = seed,
                      .window_span = span, .window_generations = gens};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, capacity, 0.01, &o));
    return f;
}

static bool has(const bk_filter_t *f, uint64_t v)
{
    return bk_filter_contains(f, &v, sizeof v);
}

static void put_key(bk_filter_t *f, uint64_t v)
{
    CHECK_OK(bk_filter_add(f, &v, sizeof v, NULL));
}

static uint8_t *serialize(const bk_filter_t *f, size_t *len)
{
    *len = (size_t)bk_filter_serialized_size(f);
    uint8_t *buf = *len ? malloc(*len) : NULL;
    if (!buf || bk_filter_serialize(f, buf, *len, len) != BK_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The calls every filter has, and the ones a window refuses. */
static void test_handle_calls(void)
{
    bk_kind_t kind;
    CHECK_OK(bk_kind_parse("window", &kind));
    CHECK(kind == BK_KIND_WINDOW && strcmp(bk_kind_name(kind), "window") == 0);
    bk_filter_t *f = make_filter(1000, 0, 0, 9), *blocked = NULL, *c = NULL;
    CHECK_OK(bk_filter_create(&blocked, 1000, 0.01, NULL));
    if (!f || !blocked)
        goto out;
    uint64_t v = 5;
    bool was_new = false;
    CHECK_OK(bk_filter_add(f, &v, sizeof v, &was_new));
    CHECK(was_new);
    CHECK_OK(bk_filter_add(f, &v, sizeof v, &was_new));
    CHECK(!was_new);
    CHECK(has(f, 5) && bk_filter_counter(f, &v, sizeof v) == 1);
    CHECK(bk_filter_contains_at(f, &v, sizeof v, 1u << 30)); /* count windows: no clock */
    CHECK_STATUS(bk_filter_add_atomic(f, &v, sizeof v, NULL), BK_EKIND);
    CHECK_STATUS(bk_filter_remove(f, &v, sizeof v), BK_EKIND);
    CHECK_STATUS(bk_filter_union(f, f), BK_EKIND);
    CHECK_STATUS(bk_filter_union(f, blocked), BK_EINCOMPAT);
    CHECK_STATUS(bk_filter_union(blocked, f), BK_EINCOMPAT);
    CHECK_STATUS(bk_filter_next_growth(f, NULL, NULL, NULL), BK_EKIND);
    CHECK_OK(bk_filter_advance(f, 100)); /* count windows: no effect */
    CHECK_STATUS(bk_filter_advance(blocked, 100), BK_EKIND);
    CHECK_STATUS(bk_filter_create_exact(&c, BK_KIND_WINDOW, 4096, 7, NULL), BK_EINVAL);
    for (uint64_t i = 0; i < 2500; i++)
        put_key(f, 100 + i);
    bk_filter_info_t info;
    bk_filter_info(f, &info);
    CHECK(info.kind == BK_KIND_WINDOW && info.filters == 4 && info.capacity == 1000);
    CHECK_EQ_U64(info.window_generation, 334);
    CHECK_EQ_U64(info.window_adds, 2502);
    CHECK_EQ_U64(info.items, 3 * 334 + 2502 % 334);
    CHECK_EQ_U64(bk_filter_items(f), info.items);
    CHECK_EQ_U64(info.window_certain_from, 1502);
    CHECK(info.cells == info.bytes * 8 && info.fill > 0 && info.expected_fpr < 0.01);
    bk_filter_shape_t shape;
    bk_filter_shape(f, &shape);
    CHECK(shape.kind == BK_KIND_WINDOW && shape.bytes == info.bytes && shape.items == info.items);
    CHECK_EQ_U64(shape.window_span, 0);
    CHECK(!has(f, 5)); /* 2500 adds ago, past G g = 1336 */
    CHECK_OK(bk_filter_clone(&c, f));
    CHECK_OK(bk_filter_clear(f));
    CHECK_EQ_U64(bk_filter_items(f), 0);
    CHECK(!has(f, 2599) && c && has(c, 2599));
out:
    bk_filter_free(f);
    bk_filter_free(c);
    bk_filter_free(blocked);
}

static void test_handle_bad_options(void)
{
    const uint32_t gens[] = {1, 17};
    for (int i = 0; i < 2; i++) {
        bk_options_t o = {.kind = BK_KIND_WINDOW, .window_generations = gens[i]};
        bk_filter_t *f = (bk_filter_t *)&o;
        CHECK_STATUS(bk_filter_create(&f, 1000, 0.01, &o), BK_EINVAL);
        CHECK(f == NULL);
    }
    bk_options_t o = {.kind = BK_KIND_WINDOW};
    bk_filter_t *f = NULL;
    CHECK_STATUS(bk_filter_create(&f, 0, 0.01, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(&f, 10, 1.5, &o), BK_EINVAL);
    o.hash = (bk_hash_id_t)99;
    CHECK_STATUS(bk_filter_create(&f, 10, 0.01, &o), BK_EINVAL);
    CHECK(f == NULL);
}

/* A time window through the handle: the clock moves with advance, lookups
 * at a later time leave it, batches agree with single calls. */
static void test_handle_time_window(void)
{
    bk_filter_t *f = make_filter(10000, 3600, 4, 3);
    if (!f)
        return;
    CHECK_OK(bk_filter_advance(f, 1700000000));
    bk_key_t keys[300];
    uint64_t vals[300];
    bool fresh[300], found[300];
    for (int i = 0; i < 300; i++) {
        vals[i] = (uint64_t)i % 200;
        keys[i] = (bk_key_t){&vals[i], sizeof vals[i]};
    }
    uint64_t n_new = 0;
    CHECK_OK(bk_filter_add_batch(f, keys, 300, fresh, &n_new));
    CHECK(n_new <= 200 && n_new >= 199 && !fresh[250]);
    CHECK_EQ_U64(bk_filter_contains_batch(f, keys, 300, found), 300);
    uint64_t v = 7;
    CHECK(bk_filter_contains_at(f, &v, sizeof v, 1700000000 + 3599));
    CHECK(!bk_filter_contains_at(f, &v, sizeof v, 1700000000 + 4 * 1200 + 1200));
    CHECK(has(f, 7)); /* the lookups at later times left the clock */
    CHECK_OK(bk_filter_advance(f, 1700000000 + 3599));
    CHECK(has(f, 7));
    CHECK_OK(bk_filter_advance(f, 1700000000 + 3600 * 2));
    CHECK(!has(f, 7));
    bk_filter_info_t info;
    bk_filter_info(f, &info);
    CHECK_EQ_U64(info.window_span, 3600);
    bk_filter_shape_t shape;
    bk_filter_shape(f, &shape);
    CHECK_EQ_U64(shape.window_span, 3600);
    CHECK_EQ_U64(info.window_generation, 1200);
    CHECK_EQ_U64(info.window_now, 1700000000 + 7200);
    CHECK_EQ_U64(info.items, 0);
    bk_filter_free(f);
}

/* A window that went through the format keeps going exactly as the
 * original: same bytes now, and after more adds and clock moves. */
static void test_serialize_round_trip(void)
{
    const uint64_t spans[] = {0, 1000};
    for (int t = 0; t < 2; t++) {
        bk_filter_t *f = make_filter(3000, spans[t], 5, 17), *g = NULL;
        if (!f)
            return;
        for (uint64_t i = 0; i < 7000; i++) {
            bk_filter_advance(f, i / 3);
            put_key(f, i);
        }
        size_t len, len2;
        uint8_t *a = serialize(f, &len);
        const char *why = NULL;
        CHECK_OK(bk_filter_deserialize(&g, a, len, &why));
        if (!g) {
            free(a);
            bk_filter_free(f);
            return;
        }
        uint8_t *b = serialize(g, &len2);
        CHECK(b && len == len2 && memcmp(a, b, len) == 0);
        free(b);
        for (uint64_t i = 7000; i < 9000; i++) {
            bk_filter_advance(f, i / 3);
            bk_filter_advance(g, i / 3);
            put_key(f, i);
            put_key(g, i);
        }
        free(a);
        a = serialize(f, &len);
        b = serialize(g, &len2);
        CHECK(a && b && len == len2 && memcmp(a, b, len) == 0);
        free(a);
        free(b);
        bk_filter_free(f);
        bk_filter_free(g);
    }
}

/* Every single-byte change and every truncation of a window's bytes is
 * refused; a state that does not add up is refused although its checksums
 * are right. */
static void test_damaged_bytes_refused(void)
{
    bk_filter_t *f = make_filter(20, 100, 3, 5), *g = NULL;
    if (!f)
        return;
    for (uint64_t i = 0; i < 25; i++) {
        bk_filter_advance(f, 10 * i);
        put_key(f, i);
    }
    size_t len;
    uint8_t *buf = serialize(f, &len);
    uint64_t accepted = 0;
    for (size_t i = 0; buf && i < len; i++) {
        buf[i] ^= 0x10;
        accepted += bk_filter_deserialize(&g, buf, len, NULL) == BK_OK;
        bk_filter_free(g);
        g = NULL;
        buf[i] ^= 0x10;
        accepted += bk_filter_deserialize(&g, buf, i, NULL) == BK_OK;
    }
    CHECK_EQ_U64(accepted, 0);
    f->window->epoch += 1; /* written as is, refused on reading */
    free(buf);
    buf = serialize(f, &len);
    const char *why = NULL;
    CHECK_STATUS(bk_filter_deserialize(&g, buf, len, &why), BK_ECORRUPT);
    CHECK(why && strstr(why, "window"));
    free(buf);
    bk_filter_free(f);
}

static const char *tmp_path(const char *name)
{
    static char path[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/bk-window-%d-%s", dir ? dir : "/tmp", (int)getpid(), name);
    return path;
}

/* Save, load and map: read-only maps refuse changes, writable ones keep
 * them (payload and clock) once synced. */
static void test_save_load_map(void)
{
    bk_filter_t *f = make_filter(5000, 600, 4, 23), *twin = make_filter(5000, 600, 4, 23);
    bk_filter_t *loaded = NULL, *ro = NULL, *rw = NULL;
    const char *path = tmp_path("w.bkf"), *why = NULL;
    if (!f || !twin)
        goto out;
    for (uint64_t i = 0; i < 4000; i++) {
        bk_filter_advance(f, i / 4);
        bk_filter_advance(twin, i / 4);
        put_key(f, i);
        put_key(twin, i);
    }
    CHECK_OK(bk_filter_save(f, path));
    CHECK_OK(bk_filter_load(&loaded, path, &why));
    CHECK_OK(bk_filter_open(&ro, path, BK_MAP_READONLY, &why));
    if (!loaded || !ro)
        goto out;
    CHECK(has(loaded, 3999) && has(ro, 3999) && has(ro, 1700) && !has(ro, 1));
    uint64_t v = 1;
    CHECK_STATUS(bk_filter_add(ro, &v, sizeof v, NULL), BK_EREADONLY);
    CHECK_STATUS(bk_filter_advance(ro, 5000), BK_EREADONLY);
    CHECK_STATUS(bk_filter_clear(ro), BK_EREADONLY);
    v = 3999;
    CHECK(!bk_filter_contains_at(ro, &v, sizeof v, 5000));
    CHECK_OK(bk_filter_open(&rw, path, BK_MAP_WRITABLE, &why));
    if (!rw)
        goto out;
    for (uint64_t i = 4000; i < 5000; i++) {
        bk_filter_advance(rw, i / 4);
        bk_filter_advance(twin, i / 4);
        put_key(rw, i);
        put_key(twin, i);
    }
    CHECK_OK(bk_filter_sync(rw));
    CHECK_OK(bk_filter_verify(rw, &why));
    bk_filter_free(loaded);
    loaded = NULL;
    CHECK_OK(bk_filter_load(&loaded, path, &why));
    size_t a_len, b_len;
    uint8_t *a = loaded ? serialize(loaded, &a_len) : NULL, *b = serialize(twin, &b_len);
    CHECK(a && b && a_len == b_len && memcmp(a, b, a_len) == 0);
    free(a);
    free(b);
out:
    remove(path);
    bk_filter_free(f);
    bk_filter_free(twin);
    bk_filter_free(loaded);
    bk_filter_free(ro);
    bk_filter_free(rw);
}

/* ---- golden files (tests/data/window-*.bkf, docs/FORMAT.md) ---- */

/* The objects the golden files hold: fixed geometry (not the planner's, so
 * a sizing change cannot alter them), seed, keys and times. A count window
 * of 40 adds in 3 generations of 20, and a time window of 90 units in 3
 * generations of 45; k = 6, 2 buckets; 75 keys "w0".."w74". */
static bk_filter_t *golden_window(uint64_t span, bool slotted)
{
    bki_window_params_t p = {.capacity = 40, .fpr = 0.01, .span = span, .generations = 3};
    bki_window_t *w = NULL;
    bk_filter_t *f = NULL;
    CHECK_OK(bki_window_restore(&w, &p, 6, 2, slotted, BK_HASH_XXH3, 0x60d, NULL));
    if (!w || bki_window_wrap(&f, w, BK_KIND_WINDOW) != BK_OK) {
        bki_window_free(w);
        return NULL;
    }
    for (int i = 0; i < 75; i++) {
        char key[8];
        int len = snprintf(key, sizeof key, "w%d", i);
        bk_filter_advance(f, (uint64_t)(1000 + 2 * i));
        CHECK_OK(bk_filter_add(f, key, (size_t)len, NULL));
    }
    return f;
}

/* The golden windows: a count window, a time window of G generations (the
 * layout before slotted ones, which must keep loading) and a slotted time
 * window (6 slots). */
#define NGOLDEN 3
static const uint64_t golden_span[NGOLDEN] = {0, 90, 90};
static const bool golden_slotted[NGOLDEN] = {false, false, true};

static const char *golden_path(int i)
{
    static const char *const names[NGOLDEN] = {"window-count.bkf", "window-time.bkf",
                                               "window-time-slotted.bkf"};
    static char path[512];
    const char *d = getenv("BK_TEST_DATA");
    snprintf(path, sizeof path, "%s/%s", d ? d : "tests/data", names[i]);
    return path;
}

/* This build writes the committed bytes. BK_WRITE_GOLDEN=1 rewrites them
 * (only for a deliberate format change). */
static void test_golden_regenerate(void)
{
    for (int gi = 0; gi < NGOLDEN; gi++) {
        bk_filter_t *f = golden_window(golden_span[gi], golden_slotted[gi]);
        size_t len = 0, have_len = 0;
        uint8_t *want = f ? serialize(f, &len) : NULL;
        CHECK(want != NULL);
        const char *path = golden_path(gi);
        if (want && getenv("BK_WRITE_GOLDEN")) {
            FILE *fp = fopen(path, "wb");
            CHECK(fp && fwrite(want, 1, len, fp) == len);
            if (fp)
                fclose(fp);
        }
        FILE *fp = fopen(path, "rb");
        uint8_t *have = malloc(len + 1);
        if (fp && have)
            have_len = fread(have, 1, len + 1, fp);
        if (fp)
            fclose(fp);
        CHECK_MSG(want && have_len == len && memcmp(have, want, len) == 0,
                  "%s differs from what this build writes", path);
        free(have);
        free(want);
        bk_filter_free(f);
    }
}

/* The committed files load and answer as the spec says, against constants
 * rather than this build's writer. */
static void test_golden_load(void)
{
    for (int gi = 0; gi < NGOLDEN; gi++) {
        const uint64_t span = golden_span[gi];
        bk_filter_t *f = NULL;
        const char *why = NULL;
        CHECK_OK(bk_filter_load(&f, golden_path(gi), &why));
        if (!f)
            continue;
        bk_filter_info_t in;
        bk_filter_info(f, &in);
        CHECK(in.kind == BK_KIND_WINDOW && in.hash == BK_HASH_XXH3 && in.seed == 0x60d);
        CHECK(in.capacity == 40 && in.fpr_target == 0.01 && in.k == 6 && in.filters == 3);
        CHECK_EQ_U64(in.bytes, 2 * (golden_slotted[gi] ? 6 : 3) * 64);
        CHECK_EQ_U64(in.window_span, span);
        CHECK_EQ_U64(in.window_generation, span ? 45 : 20);
        CHECK_EQ_U64(in.window_adds, 75);
        CHECK_EQ_U64(in.window_now, span ? 1148 : 0);
        /* count: generations 1..3 hold adds 20..74; time: 1035/45 = 23,
         * generations 23..25 hold times 1035..1148, keys w18..w74;
         * slotted: slots of at most 20 adds, each within one generation of
         * 45 (w0..w17 | w18..w37 | w38,w39 | w40..w59 | w60..w62 |
         * w63..w74), kept while their last add is within 90 of 1148: all
         * but the first (last add 1034), 57 adds, keys w18..w74 */
        CHECK_EQ_U64(in.items, span ? 57 : 55);
        uint64_t missing = 0;
        for (int i = 35; i < 75; i++) {
            char key[8];
            int len = snprintf(key, sizeof key, "w%d", i);
            missing += !bk_filter_contains(f, key, (size_t)len);
        }
        CHECK_EQ_U64(missing, 0);
        bk_filter_free(f);
    }
}

int main(void)
{
    bkt_run("count window vs exact model", test_count_window_model);
    bkt_run("count window edges", test_count_window_edges);
    bkt_run("time window vs exact model", test_time_window_model);
    bkt_run("time window: every arrival pattern", test_time_window_arrivals);
    bkt_run("time window: a key younger than T on a clock of whole ticks", test_time_window_whole_ticks);
    bkt_run("time window: over capacity", test_time_window_over_capacity);
    bkt_run("idle gap empties the window", test_idle_gap_empties);
    bkt_run("clock going back is ignored", test_clock_backwards_ignored);
    bkt_run("contains_at matches advance", test_contains_at_matches_advance);
    bkt_run("each slot is a blocked filter", test_slot_is_blocked_filter);
    bkt_run("batches match single calls", test_batch_matches_single);
    bkt_run("simd and scalar identical", test_simd_and_scalar_identical);
    bkt_run("plan", test_plan);
    bkt_run("bad parameters", test_bad_parameters);
    bkt_run("allocation failure", test_allocation_failure);
    bkt_run("usage", test_usage);
    bkt_run("clone and restore", test_clone_and_restore);
    bkt_run("handle: calls", test_handle_calls);
    bkt_run("handle: bad options", test_handle_bad_options);
    bkt_run("handle: time window", test_handle_time_window);
    bkt_run("serialize round trip", test_serialize_round_trip);
    bkt_run("damaged bytes refused", test_damaged_bytes_refused);
    bkt_run("save, load, map", test_save_load_map);
    bkt_run("golden files regenerate", test_golden_regenerate);
    bkt_run("golden files load", test_golden_load);
    return bkt_finish();
}
