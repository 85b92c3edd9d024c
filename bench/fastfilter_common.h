/*
 * What the FastFilter-suite drivers (fastfilter_peer.cc, fastfilter_static.cc)
 * share: thread CPU and wall clocks, the median of rounds, and bloomkit's
 * calls in the shape the drivers' entry tables take (a filter as void *,
 * keys as 64-bit integers passed as their 8 bytes).
 */
#ifndef BENCH_FASTFILTER_COMMON_H
#define BENCH_FASTFILTER_COMMON_H

#include "bloomkit/bloomkit.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

static inline double thread_ns()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline double wall_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline double med(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* After one share's one-key lookups (hits of q, share of them added): the
 * batch row, checked against the one-key answers, and the counts of
 * missed keys (false negatives) and, for the share of none added, false
 * positives. Entry: name and has_batch (may be null); Tally: batch[],
 * fneg, fpos, absent. */
template <class Entry, class Tally>
static void batch_and_tally(const Entry &e, const void *f, const std::vector<uint64_t> &q,
                            double share, int s, size_t hits, Tally &t)
{
    if (e.has_batch) {
        double c0 = thread_ns();
        size_t bh = e.has_batch(f, q.data(), q.size());
        t.batch[s].push_back((thread_ns() - c0) / q.size());
        if (bh != hits)
            std::printf("%s: batch found %zu, one by one %zu\n", e.name, bh, hits);
    }
    /* Present keys must all be found: count what is missing. */
    size_t present = (size_t)(share * q.size() + 0.5);
    if (hits < present)
        t.fneg += present - hits;
    if (s == 0) {
        t.fpos += hits;
        t.absent += q.size();
    }
}

/* The suite's lookup attribute (its benchmarks/filterapi.h): every
 * entry's Contain is a real call, kept out of the timed loop. */
#define CONTAIN_ATTRIBUTES __attribute__((noinline))

/* bloomkit's lookup of a 64-bit key, as the suite's Contain of an entry. */
CONTAIN_ATTRIBUTES __attribute__((unused)) static bool bk_has(const void *f, uint64_t k)
{
    return bk_filter_contains_u64(static_cast<const bk_filter_t *>(f), k);
}

/* A timed loop of one-key lookups, one per entry's Contain (Has), so its
 * call is direct, as in the suite's templated benchmark loop. */
template <bool (*Has)(const void *, uint64_t)>
__attribute__((noinline)) size_t has_loop(const void *f, const uint64_t *k, uint64_t n)
{
    size_t hits = 0;
    for (uint64_t i = 0; i < n; i++)
        hits += Has(f, k[i]);
    return hits;
}

static inline size_t bk_has_batch(const void *f, const uint64_t *k, size_t n)
{
    enum { B = 1024 };
    bk_key_t keys[B];
    bool out[B];
    size_t hits = 0;
    for (size_t at = 0; at < n; at += B) {
        size_t m = n - at < B ? n - at : B;
        for (size_t j = 0; j < m; j++)
            keys[j] = bk_key_t{&k[at + j], sizeof k[at + j]};
        hits += bk_filter_contains_batch(static_cast<const bk_filter_t *>(f), keys, m, out);
    }
    return hits;
}

static inline size_t bk_bytes(const void *f)
{
    bk_filter_shape_t s;
    bk_filter_shape(static_cast<const bk_filter_t *>(f), &s);
    return s.bytes;
}

static inline void bk_drop(void *f)
{
    bk_filter_free(static_cast<bk_filter_t *>(f));
}

#endif /* BENCH_FASTFILTER_COMMON_H */
