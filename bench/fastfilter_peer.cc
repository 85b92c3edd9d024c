/*
 * Benchmark driver: bloomkit's cuckoo and split filters side by side with
 * the FastFilter suite's Cuckoo16 and BlockedBloom (its split-block
 * filter), built from the suite's own headers by bench/fastfilter.sh.
 * Same random 64-bit keys for every entry, the suite's way: n keys added,
 * then lookups of a shuffled mix with a given share of added keys. Times
 * are thread CPU ns per key (and wall ns), medians of ROUNDS rounds, each
 * round building every entry afresh in turn. "make + add" is the time to
 * make the filter and add the keys, per key: the peers zero their tables
 * when made (outside the add column), bloomkit's pages are zeroed by the
 * kernel as the adds first touch them (inside it), so the add column alone
 * charges bloomkit for work the peers do before it; "of which kernel" is
 * the add's system time (page faults), per key. On a virtual machine that
 * hands free memory back to its host (free page reporting), a huge page
 * first touched costs several milliseconds (the host faults it in), so a
 * filter made just after another was freed can pay 2-3 ns a key more at
 * 100M keys than one made later (docs/BENCHMARKS.md, "The caller's frame").
 * The row "split, pages provided when made" calls bk_filter_prefault right
 * after making the filter, as the peer's constructor zeroes its table: its
 * add column has no page faults left in it, and its make + add has them.
 *
 *   fastfilter_peer N [ROUNDS]
 *
 * bloomkit is called as a program with 64-bit integer keys calls it:
 * bk_filter_add_u64 / bk_filter_contains_u64 / bk_filter_remove_u64, and
 * bk_filter_contains_batch for the batch row; the rows marked "key bytes"
 * call bk_filter_add / _contains / _remove with the key's 8 bytes. The
 * timed loops are built the suite's way (its
 * benchmarks/bulk-insert-and-query.cc with filterapi.h): one loop per
 * entry, instantiated from a template, with the entry's add and remove
 * inlined into it and its lookup a call kept out of line (the suite's
 * CONTAIN_ATTRIBUTES, noinline). Each loop is its own small function, so
 * the compiler keeps the key pointer and the bound in
 * registers. The calling shape matters as much as the filter: the same
 * BlockedBloom add, reached through a wrapper function that keeps the key
 * in its own stack frame and passes its address (this driver's earlier
 * shape for bloomkit), took 28 ns a key at 100M instead of 21
 * (docs/BENCHMARKS.md, "The caller's frame").
 * It asserts nothing except zero false negatives (a broken entry is
 * reported, not timed as fast).
 */
#include "bloomkit/bloomkit.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>

/* The suite's headers expect the names its benchmark brings in. */
using std::vector;

#include "fastfilter_common.h"
#include "cuckoofilter.h"
#include "simd-block-fixed-fpp.h"

/* The shares of added keys among the lookups, as the suite's table. */
static const double shares[] = {0.0, 0.5, 1.0};
enum { NSHARES = 3 };

struct times {
    vector<double> add, made_add, add_sys, del, batch[NSHARES], look[NSHARES], look_wall[NSHARES];
    double bytes = 0;
    uint64_t fneg = 0, fpos = 0, absent = 0;
};

typedef cuckoofilter::CuckooFilter<uint64_t, 16, cuckoofilter::SingleTable> cuckoo16_t;
typedef SimdBlockFilterFixed<hashing::SimpleMixSplit> blocked_t;

/* Each entry's one-key operations, as the suite's FilterAPI<Table>. */
struct cuckoo16_api {
    static void add(void *f, uint64_t k)
    {
        if (static_cast<cuckoo16_t *>(f)->Add(k) != cuckoofilter::Ok)
            std::fprintf(stderr, "Cuckoo16: full\n");
    }
    CONTAIN_ATTRIBUTES static bool has(const void *f, uint64_t k)
    {
        return static_cast<const cuckoo16_t *>(f)->Contain(k) == cuckoofilter::Ok;
    }
    static void del(void *f, uint64_t k) { static_cast<cuckoo16_t *>(f)->Delete(k); }
};

struct blocked_api {
    static void add(void *f, uint64_t k) { static_cast<blocked_t *>(f)->Add(k); }
    CONTAIN_ATTRIBUTES static bool has(const void *f, uint64_t k)
    {
        return static_cast<const blocked_t *>(f)->Find(k);
    }
    static void del(void *, uint64_t) {}
};

/* bloomkit called with the key as a 64-bit integer (the _u64 calls, what
 * a program with integer keys calls) or, as bytes = true, with its 8
 * bytes' address (the calls for keys of any length). */
template <bool bytes> struct bloomkit_api {
    static void add(void *f, uint64_t k)
    {
        if (bytes)
            bk_filter_add(static_cast<bk_filter_t *>(f), &k, sizeof k, nullptr);
        else
            bk_filter_add_u64(static_cast<bk_filter_t *>(f), k, nullptr);
    }
    CONTAIN_ATTRIBUTES static bool has(const void *f, uint64_t k)
    {
        if (bytes)
            return bk_filter_contains(static_cast<const bk_filter_t *>(f), &k, sizeof k);
        return bk_filter_contains_u64(static_cast<const bk_filter_t *>(f), k);
    }
    static void del(void *f, uint64_t k)
    {
        if (bytes)
            bk_filter_remove(static_cast<bk_filter_t *>(f), &k, sizeof k);
        else
            bk_filter_remove_u64(static_cast<bk_filter_t *>(f), k);
    }
};

/* The timed loops of one entry. */
template <class Api> __attribute__((noinline)) void add_loop(void *f, const uint64_t *k, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        Api::add(f, k[i]);
}


template <class Api> __attribute__((noinline)) void del_loop(void *f, const uint64_t *k, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        Api::del(f, k[i]);
}

/* One entry: a filter type, its timed loops, and the untimed rest. */
struct entry {
    const char *name;
    bool removes, batches;
    void *(*make)(uint64_t n);
    void (*add_all)(void *f, const uint64_t *k, uint64_t n);
    size_t (*has_all)(const void *f, const uint64_t *k, uint64_t n);
    void (*del_all)(void *f, const uint64_t *k, uint64_t n);
    size_t (*has_batch)(const void *f, const uint64_t *k, size_t n);
    size_t (*bytes)(const void *f);
    void (*drop)(void *f);
};

static const entry peers[] = {
    {"Cuckoo16 (FastFilter)", true, false,
     [](uint64_t n) -> void * { return new cuckoo16_t(n); }, add_loop<cuckoo16_api>,
     has_loop<cuckoo16_api::has>, del_loop<cuckoo16_api>, nullptr,
     [](const void *f) { return static_cast<const cuckoo16_t *>(f)->SizeInBytes(); },
     [](void *f) { delete static_cast<cuckoo16_t *>(f); }},
    {"BlockedBloom (FastFilter)", false, false,
     [](uint64_t n) -> void * { return new blocked_t(n); }, add_loop<blocked_api>,
     has_loop<blocked_api::has>, nullptr, nullptr,
     [](const void *f) { return static_cast<const blocked_t *>(f)->SizeInBytes(); },
     [](void *f) { delete static_cast<blocked_t *>(f); }},
};

/* bloomkit's entries: a kind and the error its peer row is compared at
 * (Cuckoo16's 2 * 4 / 2^16 and BlockedBloom's about 0.4% at 8 bits/key
 * would need different sizes; each is made at the error the issue's
 * table names, 1%, which the planner serves with 16-bit fingerprints and
 * an 8-bits-per-key split filter). */
static bk_kind_t bk_kind_now;

static void *bk_make(uint64_t n)
{
    bk_options_t o = {};
    o.kind = bk_kind_now;
    o.seed_set = true;
    o.seed = 42;
    bk_filter_t *f = nullptr;
    if (bk_filter_create(&f, n, 0.01, &o) != BK_OK)
        return nullptr;
    return f;
}

/* bk_make, then the filter's pages provided by the kernel at once
 * (bk_filter_prefault on this thread), before the adds. */
static void *bk_make_provided(uint64_t n)
{
    void *f = bk_make(n);
    if (f && bk_filter_prefault(static_cast<bk_filter_t *>(f), 0, 1) != BK_OK) {
        bk_filter_free(static_cast<bk_filter_t *>(f));
        return nullptr;
    }
    return f;
}

static const entry ours[] = {
    {"bloomkit cuckoo", true, true, bk_make, add_loop<bloomkit_api<false>>,
     has_loop<bloomkit_api<false>::has>, del_loop<bloomkit_api<false>>, bk_has_batch, bk_bytes, bk_drop},
    {"bloomkit split", false, true, bk_make, add_loop<bloomkit_api<false>>,
     has_loop<bloomkit_api<false>::has>, nullptr, bk_has_batch, bk_bytes, bk_drop},
    {"bloomkit cuckoo, key bytes", true, false, bk_make, add_loop<bloomkit_api<true>>,
     has_loop<bloomkit_api<true>::has>, del_loop<bloomkit_api<true>>, nullptr, bk_bytes, bk_drop},
    {"bloomkit split, key bytes", false, false, bk_make, add_loop<bloomkit_api<true>>,
     has_loop<bloomkit_api<true>::has>, nullptr, nullptr, bk_bytes, bk_drop},
    {"bloomkit split, pages provided when made", false, false, bk_make_provided,
     add_loop<bloomkit_api<false>>, has_loop<bloomkit_api<false>::has>, nullptr, nullptr, bk_bytes,
     bk_drop},
};

static void run_entry(const entry &e, uint64_t n, const vector<uint64_t> &keys,
                      const vector<uint64_t> (&look)[NSHARES], times &t)
{
    double m0 = thread_ns();
    void *f = e.make(n);
    if (!f) {
        std::printf("%s: cannot be made here\n", e.name);
        return;
    }
    rusage u0, u1;
    getrusage(RUSAGE_THREAD, &u0);
    double c0 = thread_ns();
    e.add_all(f, keys.data(), n);
    double c1 = thread_ns();
    getrusage(RUSAGE_THREAD, &u1);
    t.add.push_back((c1 - c0) / n);
    t.made_add.push_back((c1 - m0) / n);
    t.add_sys.push_back(((u1.ru_stime.tv_sec - u0.ru_stime.tv_sec) * 1e9 +
                         (u1.ru_stime.tv_usec - u0.ru_stime.tv_usec) * 1e3) /
                        n);
    t.bytes = e.bytes(f);
    for (int s = 0; s < NSHARES; s++) {
        const vector<uint64_t> &q = look[s];
        double w0 = wall_ns();
        c0 = thread_ns();
        size_t hits = e.has_all(f, q.data(), q.size());
        t.look[s].push_back((thread_ns() - c0) / q.size());
        t.look_wall[s].push_back((wall_ns() - w0) / q.size());
        batch_and_tally(e, f, q, shares[s], s, hits, t);
    }
    if (e.removes) {
        uint64_t m = n / 2;
        c0 = thread_ns();
        e.del_all(f, keys.data(), m);
        t.del.push_back((thread_ns() - c0) / m);
    }
    e.drop(f);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], nullptr, 10) : 10000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    uint64_t q = n < 10000000 ? n : 10000000; /* lookups per share, as the suite */
    std::mt19937_64 rng(12345);
    vector<uint64_t> keys(n);
    for (auto &k : keys)
        k = rng();
    vector<uint64_t> look[NSHARES];
    for (int s = 0; s < NSHARES; s++) {
        uint64_t present = (uint64_t)(shares[s] * q + 0.5);
        look[s].reserve(q);
        for (uint64_t i = 0; i < present; i++)
            look[s].push_back(keys[rng() % n]);
        for (uint64_t i = present; i < q; i++)
            look[s].push_back(rng()); /* absent but for a 2^-64 chance */
        std::shuffle(look[s].begin(), look[s].end(), rng);
    }
    const int nentries = 7;
    times t[nentries];
    const entry *es[nentries] = {&ours[0], &peers[0], &ours[1], &peers[1],
                                 &ours[3], &ours[2], &ours[4]};
    bk_kind_t kinds[nentries] = {BK_KIND_CUCKOO, BK_KIND_DEFAULT, BK_KIND_SPLIT, BK_KIND_DEFAULT,
                                 BK_KIND_SPLIT,  BK_KIND_CUCKOO,  BK_KIND_SPLIT};
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < nentries; i++) {
            bk_kind_now = kinds[i];
            run_entry(*es[i], n, keys, look, t[i]);
        }
    std::printf("\n%llu keys, %llu lookups per share of present keys; thread CPU ns per key, "
                "median of %d rounds\n\n",
                (unsigned long long)n, (unsigned long long)q, rounds);
    std::printf("| entry | bits/key | FPR | add | of which kernel | make + add | lookup 0%% | "
                "lookup 50%% | lookup 100%% | lookup 50%% wall | batch 0%% | batch 50%% | "
                "batch 100%% | remove |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < nentries; i++) {
        times &x = t[i];
        if (x.add.empty())
            continue;
        std::printf("| %s | %.2f | %.4f%% | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |",
                    es[i]->name, 8.0 * x.bytes / n, 100.0 * x.fpos / (x.absent ? x.absent : 1),
                    med(x.add), med(x.add_sys), med(x.made_add), med(x.look[0]), med(x.look[1]), med(x.look[2]),
                    med(x.look_wall[1]));
        for (int s = 0; s < NSHARES; s++) {
            if (x.batch[s].empty())
                std::printf(" - |");
            else
                std::printf(" %.1f |", med(x.batch[s]));
        }
        if (x.del.empty())
            std::printf(" - |\n");
        else
            std::printf(" %.1f |\n", med(x.del));
        if (x.fneg)
            std::printf("!! %s: %llu false negatives\n", es[i]->name, (unsigned long long)x.fneg);
    }
    /* Ratios of the pairs the issue tracks. */
    auto ratio = [&](int a, int b, vector<double> times::*m) {
        if (t[a].add.empty() || t[b].add.empty() || (t[a].*m).empty() || (t[b].*m).empty())
            return 0.0;
        return med(t[a].*m) / med(t[b].*m);
    };
    std::printf("\nbloomkit cuckoo / Cuckoo16: lookup 0%% %.2fx, 50%% %.2fx, 100%% %.2fx, "
                "remove %.2fx; batch 50%% / Cuckoo16 one-key 50%% %.2fx\n",
                med(t[0].look[0]) / med(t[1].look[0]), med(t[0].look[1]) / med(t[1].look[1]),
                med(t[0].look[2]) / med(t[1].look[2]), ratio(0, 1, &times::del),
                med(t[0].batch[1]) / med(t[1].look[1]));
    std::printf("bloomkit split / BlockedBloom: add %.2fx (make + add %.2fx), lookup 50%% %.2fx, "
                "batch 50%% / one-key 50%% %.2fx\n",
                ratio(2, 3, &times::add), ratio(2, 3, &times::made_add),
                med(t[2].look[1]) / med(t[3].look[1]), med(t[2].batch[1]) / med(t[3].look[1]));
    std::printf("with the key's bytes (bk_filter_add / _contains / _remove): cuckoo lookup 50%% "
                "%.2fx, remove %.2fx Cuckoo16; split add %.2fx, lookup 50%% %.2fx BlockedBloom\n",
                med(t[5].look[1]) / med(t[1].look[1]), ratio(5, 1, &times::del),
                ratio(4, 3, &times::add), med(t[4].look[1]) / med(t[3].look[1]));
    std::printf("split with its pages provided when made (bk_filter_prefault): add %.2fx, "
                "make + add %.2fx BlockedBloom\n",
                ratio(6, 3, &times::add), ratio(6, 3, &times::made_add));
    return 0;
}
