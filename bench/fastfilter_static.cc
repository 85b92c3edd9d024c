/*
 * Benchmark driver: bloomkit's static filters (fuse8, fuse16) side by side
 * with the FastFilter suite's binary fuse filters (XorBinaryFuse8 and
 * XorBinaryFuse16, its entries 116 and 117: xorbinaryfusefilter_lowmem;
 * and the same template with 32-bit fingerprints beside fuse32),
 * built from the suite's own headers by bench/fastfilter.sh, and the
 * space bloomkit's Bloom kinds need at the same rates (bk_plan).
 *
 *   fastfilter_static N [ROUNDS]
 *   fastfilter_static --sweep     every size from 0 keys to a million
 *
 * Same random 64-bit keys for every entry; each is built from all n keys
 * at once (thread CPU ns per key), then answers lookups of a shuffled mix
 * with 0, 50 or 100% added keys (thread CPU ns per key; bloomkit also
 * through its batch call). bloomkit is called as a program with 64-bit
 * keys calls it: bk_filter_build over the keys' 8 bytes,
 * bk_filter_contains_u64, bk_filter_contains_batch. The lookup loops are
 * the suite's shape: each entry's lookup a call of its own (noinline, the
 * suite's CONTAIN_ATTRIBUTES) from a loop made for it (has_loop). Medians
 * of ROUNDS rounds, each building every entry afresh in turn. Zero false
 * negatives is checked, not assumed.
 */
#include "bloomkit/bloomkit.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <sstream>
#include <string>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

using std::vector;

#include "3wise_xor_binary_fuse_filter_lowmem.h"
#include "fastfilter_common.h"

static const double shares[] = {0.0, 0.5, 1.0};
enum { NSHARES = 3 };

struct times {
    vector<double> build, look[NSHARES], batch[NSHARES];
    double bytes = 0;
    uint64_t fneg = 0, fpos = 0, absent = 0;
};

/* One entry: built from all keys at once, then asked one key at a time. */
struct entry {
    const char *name;
    void *(*build)(const vector<uint64_t> &keys);
    bool (*has)(const void *f, uint64_t k);
    size_t (*has_all)(const void *f, const uint64_t *k, uint64_t n);
    size_t (*has_batch)(const void *f, const uint64_t *k, size_t n);
    size_t (*bytes)(const void *f);
    void (*drop)(void *f);
};

template <typename FP> using fuse_t = xorbinaryfusefilter_lowmem::XorBinaryFuseFilter<uint64_t, FP>;

template <typename FP> static void *peer_build(const vector<uint64_t> &keys)
{
    auto *f = new fuse_t<FP>(keys.size());
    if (f->AddAll(keys, 0, keys.size()) != xorbinaryfusefilter_lowmem::Ok) {
        delete f;
        return nullptr;
    }
    return f;
}

template <typename FP> CONTAIN_ATTRIBUTES static bool peer_has(const void *f, uint64_t k)
{
    return static_cast<const fuse_t<FP> *>(f)->Contain(k) == xorbinaryfusefilter_lowmem::Ok;
}

template <typename FP> static size_t peer_bytes(const void *f)
{
    return static_cast<const fuse_t<FP> *>(f)->SizeInBytes();
}

template <typename FP> static void peer_drop(void *f)
{
    delete static_cast<fuse_t<FP> *>(f);
}

static bk_kind_t bk_kind_now;
/* The keys as the library takes them (pointer and length), made once
 * before any timing: each entry is given its input in its API's form, as
 * the suite's filters are given the vector of integers. */
static vector<bk_key_t> bk_keys;

static void *bk_build(const vector<uint64_t> &keys)
{
    const vector<bk_key_t> &k = bk_keys;
    (void)keys;
    bk_options_t o = {};
    o.kind = bk_kind_now;
    o.seed_set = true;
    o.seed = 42;
    bk_filter_t *f = nullptr;
    if (bk_filter_build(&f, k.data(), k.size(), 0.0, &o) != BK_OK)
        return nullptr;
    return f;
}

static const entry entries[] = {
    {"bloomkit fuse8", bk_build, bk_has, has_loop<bk_has>, bk_has_batch, bk_bytes, bk_drop},
    {"XorBinaryFuse8 (FastFilter)", peer_build<uint8_t>, peer_has<uint8_t>,
     has_loop<peer_has<uint8_t>>, nullptr,
     peer_bytes<uint8_t>, peer_drop<uint8_t>},
    {"bloomkit fuse16", bk_build, bk_has, has_loop<bk_has>, bk_has_batch, bk_bytes, bk_drop},
    {"XorBinaryFuse16 (FastFilter)", peer_build<uint16_t>, peer_has<uint16_t>,
     has_loop<peer_has<uint16_t>>, nullptr,
     peer_bytes<uint16_t>, peer_drop<uint16_t>},
    /* the suite's filter template with 32-bit fingerprints (no entry of
     * its own in the suite's table) */
    {"bloomkit fuse32", bk_build, bk_has, has_loop<bk_has>, bk_has_batch, bk_bytes, bk_drop},
    {"XorBinaryFuse32 (FastFilter template)", peer_build<uint32_t>, peer_has<uint32_t>,
     has_loop<peer_has<uint32_t>>, nullptr,
     peer_bytes<uint32_t>, peer_drop<uint32_t>},
};
static const bk_kind_t kinds[] = {BK_KIND_FUSE8,  BK_KIND_DEFAULT, BK_KIND_FUSE16,
                                  BK_KIND_DEFAULT, BK_KIND_FUSE32, BK_KIND_DEFAULT};
enum { NENTRIES = 6 };

static void run_entry(const entry &e, const vector<uint64_t> &keys,
                      const vector<uint64_t> (&look)[NSHARES], times &t)
{
    double c0 = thread_ns();
    void *f = e.build(keys);
    if (!f) {
        std::printf("%s: build failed\n", e.name);
        return;
    }
    t.build.push_back((thread_ns() - c0) / keys.size());
    t.bytes = e.bytes(f);
    for (int s = 0; s < NSHARES; s++) {
        const vector<uint64_t> &q = look[s];
        c0 = thread_ns();
        size_t hits = e.has_all(f, q.data(), q.size());
        t.look[s].push_back((thread_ns() - c0) / q.size());
        batch_and_tally(e, f, q, shares[s], s, hits, t);
    }
    e.drop(f);
}

/* Every size from 0 keys up: bits a key, the false-positive rate over a
 * million absent keys and the false negatives, both sides; the suite's
 * filter is left out below 2 keys (its sizing divides by log n). */
static int sweep()
{
    static const uint64_t sizes[] = {0, 1, 2, 10, 100, 1000, 10000, 100000, 1000000};
    const uint64_t probes = 1000000;
    std::mt19937_64 rng(99);
    vector<uint64_t> absent(probes);
    for (auto &k : absent)
        k = rng();
    std::printf("\nevery size: bits/key, FPR over %llu absent keys, false negatives\n\n",
                (unsigned long long)probes);
    std::printf("| keys | fuse8 bits/key | fuse8 FPR | fuse8 FN | XorBinaryFuse8 bits/key | "
                "XorBinaryFuse8 FPR | fuse16 bits/key | fuse16 FPR | fuse16 FN | "
                "XorBinaryFuse16 bits/key | XorBinaryFuse16 FPR |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (uint64_t n : sizes) {
        vector<uint64_t> keys(n);
        for (auto &k : keys)
            k = rng();
        bk_keys.resize(n);
        for (size_t i = 0; i < n; i++)
            bk_keys[i] = bk_key_t{&keys[i], sizeof keys[i]};
        std::printf("| %llu |", (unsigned long long)n);
        for (int i = 0; i < NENTRIES; i++) {
            bool ours = i == 0 || i == 2;
            if (!ours && n < 2) {
                std::printf(" - | - |");
                continue;
            }
            bk_kind_now = kinds[i];
            void *f = entries[i].build(keys);
            if (!f) {
                std::printf(" build failed |%s", ours ? " - | - |" : " - |");
                continue;
            }
            uint64_t fn = 0, fp = 0;
            for (uint64_t k : keys)
                fn += !entries[i].has(f, k);
            for (uint64_t k : absent)
                fp += entries[i].has(f, k);
            double bits = n ? 8.0 * entries[i].bytes(f) / n : 0.0;
            std::printf(" %.2f | %.4f%% |", bits, 100.0 * fp / probes);
            if (ours)
                std::printf(" %llu |", (unsigned long long)fn);
            entries[i].drop(f);
        }
        std::printf("\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && std::string(argv[1]) == "--sweep")
        return sweep();
    uint64_t n = argc > 1 ? strtoull(argv[1], nullptr, 10) : 10000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    uint64_t q = n < 10000000 ? n : 10000000;
    std::mt19937_64 rng(777);
    vector<uint64_t> keys(n);
    for (auto &k : keys)
        k = rng();
    vector<uint64_t> look[NSHARES];
    for (int s = 0; s < NSHARES; s++) {
        uint64_t present = (uint64_t)(shares[s] * q + 0.5);
        for (uint64_t i = 0; i < present; i++)
            look[s].push_back(keys[rng() % n]);
        for (uint64_t i = present; i < q; i++)
            look[s].push_back(rng());
        std::shuffle(look[s].begin(), look[s].end(), rng);
    }
    bk_keys.resize(n);
    for (size_t i = 0; i < n; i++)
        bk_keys[i] = bk_key_t{&keys[i], sizeof keys[i]};
    times t[NENTRIES];
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < NENTRIES; i++) {
            bk_kind_now = kinds[i];
            run_entry(entries[i], keys, look, t[i]);
        }
    std::printf("\n%llu keys built whole, %llu lookups per share of present keys; thread CPU "
                "ns per key, median of %d rounds\n\n",
                (unsigned long long)n, (unsigned long long)q, rounds);
    std::printf("| entry | bits/key | FPR | build | lookup 0%% | lookup 50%% | lookup 100%% | "
                "batch 0%% | batch 50%% | batch 100%% |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < NENTRIES; i++) {
        times &x = t[i];
        if (x.build.empty())
            continue;
        std::printf("| %s | %.2f | %.4f%% | %.1f | %.1f | %.1f | %.1f |", entries[i].name,
                    8.0 * x.bytes / n, 100.0 * x.fpos / (x.absent ? x.absent : 1), med(x.build),
                    med(x.look[0]), med(x.look[1]), med(x.look[2]));
        for (int s = 0; s < NSHARES; s++) {
            if (x.batch[s].empty())
                std::printf(" - |");
            else
                std::printf(" %.1f |", med(x.batch[s]));
        }
        std::printf("\n");
        if (x.fneg)
            std::printf("!! %s: %llu false negatives\n", entries[i].name,
                        (unsigned long long)x.fneg);
    }
    /* What a Bloom filter of bloomkit's needs at the same two rates. */
    static const double rates[] = {1.0 / 256, 1.0 / 65536, 1.0 / 4294967296.0};
    for (double p : rates) {
        bk_plan_t best = {};
        double best_bits = 0;
        static const bk_kind_t bloom[] = {BK_KIND_SPLIT, BK_KIND_BLOCKED, BK_KIND_BLOCKED2,
                                          BK_KIND_CLASSIC};
        const char *name = "";
        for (bk_kind_t k : bloom) {
            bk_plan_t pl;
            if (bk_plan(k, n, p, &pl) != BK_OK)
                continue;
            double bits = 8.0 * pl.bytes / n;
            if (best_bits == 0 || bits < best_bits) {
                best_bits = bits;
                best = pl;
                name = bk_kind_name(k);
            }
        }
        (void)best;
        std::printf("\nbloomkit's smallest Bloom kind at p = %.3g: %s, %.2f bits/key", p, name,
                    best_bits);
    }
    auto ratio = [&](int a, int b, int s) { return med(t[a].look[s]) / med(t[b].look[s]); };
    std::printf("\n\nbloomkit / FastFilter:");
    for (int i = 0; i + 1 < NENTRIES; i += 2) {
        if (t[i].build.empty() || t[i + 1].build.empty())
            continue;
        std::printf("%s %s build %.2fx, lookup 0%% %.2fx, 50%% %.2fx, 100%% %.2fx",
                    i ? ";" : "", entries[i].name + 9 /* past "bloomkit " */,
                    med(t[i].build) / med(t[i + 1].build), ratio(i, i + 1, 0),
                    ratio(i, i + 1, 1), ratio(i, i + 1, 2));
    }
    std::printf("\n");
    return 0;
}
