/*
 * bloomkit: Bloom filters and their relatives, for one question at scale:
 * "have I seen this before?"
 *
 * This is the whole public API. Conventions, which every function follows:
 *
 *  - Names are bk_<noun>_<verb>. Objects are opaque and created by a
 *    *_create / *_load / *_open call; the caller owns what it creates and
 *    releases it with the matching *_free. *_free(NULL) is a no-op.
 *  - Every call that can fail returns a bk_status_t (BK_OK == 0). The
 *    library never prints, exits or aborts on bad input: it returns a
 *    status, and bk_strerror() names it. The calls that return something
 *    else cannot fail, for one of these reasons, stated at each of them:
 *      - queries (contains, test, counter, size, items, info, shape) only
 *        read memory the object already owns: they return their answer;
 *      - bitmap updates (bk_bitmap_set, bk_bitmap2_add) and lookups take a
 *        value v; v >= n is not an error but a no-op answered as "not
 *        set" (false / 0), because a caller streaming values checks the
 *        range once with bk_bitmap_size() rather than a status per value;
 *      - bk_filter_contains_batch returns a count, and answers 0 with out
 *        untouched when keys or out is NULL (n > 0): there is nothing to
 *        report but "no hits".
 *    Invalid pointers (a NULL object) are a caller bug the library does
 *    not check, except where a prototype says so.
 *  - Keys are (const void *key, size_t len): binary-safe, any length,
 *    including 0 (key may then be NULL).
 *  - Sizes are 64-bit everywhere.
 *  - An object may be read (contains, info) from many threads at once.
 *    Writes need external locking, except bk_filter_add_atomic(), which any
 *    number of threads may call together (but not together with clear,
 *    union or free).
 *
 * Stable promises: the hash output for a given (hash id, seed, key), and so
 * the bits a key sets, never change for a given file-format version; see
 * docs/FORMAT.md.
 */
#ifndef BLOOMKIT_H
#define BLOOMKIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BK_VERSION_MAJOR 0
#define BK_VERSION_MINOR 1
#define BK_VERSION_PATCH 0
#define BK_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

typedef enum bk_status {
    BK_OK = 0,
    BK_EINVAL,    /* a parameter is out of range or inconsistent */
    BK_ENOMEM,    /* an allocation failed, or a size does not fit in memory */
    BK_EIO,       /* a read, write, sync or rename failed (see errno) */
    BK_ENOSPC,    /* the disk or a quota is full */
    BK_ECORRUPT,  /* serialized bytes are malformed, truncated or damaged */
    BK_EVERSION,  /* serialized bytes are of a format version we do not know */
    BK_EFULL,     /* a non-scaling filter is at capacity, or a scalable one may
                     not grow: its size cap (max_bytes) or length limit */
    BK_ENOTFOUND, /* remove of a key that is not in the filter */
    BK_EKIND,     /* the operation does not apply to this kind of filter */
    BK_EREADONLY, /* the object is a read-only mapping */
    BK_EINCOMPAT, /* union of filters that differ in kind, size, k, hash or seed */
    BK_EEXIST,    /* a save that only creates (bk_filter_save_new) found a file
                     there; errno is EEXIST too */
    BK_ENOTFILE,  /* the path names a directory, device, FIFO or socket, not a
                     regular file: never read as a filter nor replaced by a
                     save; errno is EISDIR (a directory) or EINVAL too */
    BK_EBUDGET,   /* the call would do more work than the caller allowed
                     (bk_cuckoo_add_within); nothing changed */
    BK_ESTATIC    /* an add, remove or clear of a static filter (fuse8,
                     fuse16), which holds exactly the keys it was built
                     from: build it again with the new keys */
} bk_status_t;

/* A short constant English description of a status; never NULL. */
const char *bk_strerror(bk_status_t status);

/* ------------------------------------------------------------------------ */
/* Kinds and hashes                                                          */
/* ------------------------------------------------------------------------ */

/* The numeric values are stored in files: never renumber. */
typedef enum bk_kind {
    BK_KIND_DEFAULT = 0, /* in options: BK_KIND_SPLIT for 0.004 <= p <=
                          * 0.02, else BK_KIND_BLOCKED for p >= 1e-3, else
                          * BK_KIND_BLOCKED2 (bk_filter_create, bk_plan);
                          * BK_KIND_BLOCKED where no p is given */
    BK_KIND_BLOCKED = 1, /* k probes inside one 64-byte line (default) */
    BK_KIND_CLASSIC = 2, /* k probes over the whole bit array */
    BK_KIND_COUNTING = 3, /* 4-bit saturating counters, one line per key */
    BK_KIND_SCALABLE = 4, /* chain of blocked/classic filters that grows */
    BK_KIND_BITMAP = 5,  /* bk_bitmap_t: 1 bit per integer */
    BK_KIND_BITMAP2 = 6, /* bk_bitmap2_t: 2-bit saturating cells */
    BK_KIND_PRECISE = 7, /* classic layout, each probe hashed on its own:
                            the textbook size at any size and error (classic
                            needs several times it at small sizes and low
                            p to keep p, see bk_plan); deep
                            scalable chains use it for tiny errors */
    BK_KIND_BLOCKED2 = 8, /* k probes in each of two 64-byte lines: near the
                          * classic optimum's space at low error rates */
    BK_KIND_WINDOW = 9,  /* sliding window: keys of the last N adds or T time
                            units; older keys are forgotten (see below) */
    BK_KIND_SPLIT = 10,  /* split block: 8 bits in one 32-byte block, one in
                            each 32-bit word (Parquet's layout): the fastest
                            one-key calls, a few % more bits than blocked */
    BK_KIND_REDISBLOOM = 11, /* a RedisBloom link: its bit array, probes and
                            sizing, so a chain taken over from RedisBloom
                            answers as RedisBloom did; only the sub-filters
                            of bk_redisbloom_new()'s chains, never made by
                            bk_filter_create or bk_plan */
    BK_KIND_CUCKOO = 12, /* bk_cuckoo_t: fingerprints in buckets, with delete
                            and count (see "Cuckoo filters" below) */
    BK_KIND_FUSE8 = 13,  /* static: a binary fuse filter of 8-bit
                            fingerprints, built from the whole key set
                            (bk_filter_build, "Static filters" below);
                            p = 2^-8, 9.0 bits a key for large sets */
    BK_KIND_FUSE16 = 14, /* static, 16-bit fingerprints: p = 2^-16, 18.0
                            bits a key */
    BK_KIND_FUSE32 = 15  /* static, 32-bit fingerprints: p = 2^-32 (2.3e-10),
                            36.0 bits a key, where a Bloom filter at 1e-9
                            takes 43 or more */
} bk_kind_t;

/* Name of a kind ("blocked", "classic", ...), or NULL if unknown. */
const char *bk_kind_name(bk_kind_t kind);
/* Parses a kind name (case-insensitive). BK_EINVAL if unknown. */
bk_status_t bk_kind_parse(const char *name, bk_kind_t *out);

/* What a kind's filters can do, as bits of bk_kind_caps(). */
enum {
    BK_CAP_ADD = 1u << 0,    /* keys are added one by one (bk_filter_add) */
    BK_CAP_REMOVE = 1u << 1, /* bk_filter_remove (counting, cuckoo) */
    BK_CAP_COUNT = 1u << 2,  /* bk_filter_counter tells how many times */
    BK_CAP_MERGE = 1u << 3,  /* bk_filter_union of two of the same shape is
                                exactly the filter of both key sets */
    BK_CAP_GROW = 1u << 4,   /* it may grow past its capacity (scalable,
                                cuckoo with an expansion) */
    BK_CAP_STATIC = 1u << 5, /* built whole from its keys (bk_filter_build),
                                never changed after: adds, removes and clear
                                return BK_ESTATIC */
    BK_CAP_WINDOW = 1u << 6, /* keys age out: it holds those of the last N
                                adds or T time (window_* options) */
    BK_CAP_BOUNDED = 1u << 7 /* its false-positive rate stays within its
                                target however many keys are added: a
                                scalable chain grows with tighter rates, a
                                window forgets its oldest keys */
};
/* The BK_CAP_* bits of a kind; 0 for an unknown kind or a bitmap. */
unsigned bk_kind_caps(bk_kind_t kind);

/* How a kind's parts are spoken of: what the tool and Python print about
 * it, so that none of them lists kinds. */
typedef struct bk_kind_text {
    const char *cells;     /* what bk_filter_info's cells count: "bits",
                              "counters", "slots" (a cuckoo filter's), or
                              "fingerprints" */
    const char *cells_set; /* what cells_set counts: "bits set", "counters
                              set", "slots used" */
    const char *k;         /* what k is: "k" (probes a key), "bucket size" */
    const char *about;     /* one line of what sets it apart, for a list of
                              kinds ("" where nothing does) */
    unsigned value_bits;   /* bitmaps: bits a value (1 seen or not, 2 never,
                              once or more); 0 for filters */
} bk_kind_text_t;

/* The texts of a kind; NULL for a number that is no kind. */
const bk_kind_text_t *bk_kind_text(bk_kind_t kind);

/* The numeric values are stored in files: never renumber.
 * XXH3_MIX8 (new filters' default) and XXH3 are the ones fit for
 * adversarial or huge key sets: both hash every key with XXH3-128 and the
 * filter's seed, except that XXH3_MIX8 mixes an 8-byte key (a 64-bit
 * integer id) with a seeded two-round multiply-fold of about a third of
 * XXH3's instructions, which makes one-key calls on such keys about a
 * third faster (docs/FORMAT.md has the function). XXH3 is what filters made
 * before 0.2 record; they keep it. The others are the classic 32-bit string
 * hashes (FNV-1a is 64-bit), kept for compatibility and teaching. */
typedef enum bk_hash_id {
    BK_HASH_DEFAULT = 0, /* in options and hash calls: means BK_HASH_XXH3_MIX8 */
    BK_HASH_XXH3 = 1,
    BK_HASH_BKDR = 2,
    BK_HASH_AP = 3,
    BK_HASH_DJB = 4,
    BK_HASH_JS = 5,
    BK_HASH_RS = 6,
    BK_HASH_SDBM = 7,
    BK_HASH_DEK = 8,
    BK_HASH_ELF = 9,
    BK_HASH_PJW = 10,
    BK_HASH_FNV1A = 11,
    BK_HASH_MURMUR64A = 12, /* RedisBloom's 64-bit pair: a = MurmurHash64A(key,
                               0xc6a4a7935bd1e995), b = MurmurHash64A(key, a);
                               the seed is not used */
    BK_HASH_MURMUR2 = 13,   /* RedisBloom's 32-bit pair (filters made without
                               its FORCE64 option): MurmurHash2 with seed
                               0x9747b28c, then with the first value */
    BK_HASH_XXH3_MIX8 = 14  /* the default: XXH3-128, but 8-byte keys mixed */
} bk_hash_id_t;

#define BK_HASH_COUNT 14 /* ids 1..BK_HASH_COUNT are valid */

const char *bk_hash_name(bk_hash_id_t id); /* "xxh3", "bkdr", ...; NULL if unknown */
bk_status_t bk_hash_parse(const char *name, bk_hash_id_t *out);

/* The raw hash of a key: the classic hashes' own value (32-bit ones
 * zero-extended), or the low 64 bits of the key hash (bk_hash_key) for
 * XXH3 and XXH3_MIX8.
 * The classic hashes ignore the seed here. For measuring and teaching. */
uint64_t bk_hash_raw(bk_hash_id_t id, uint64_t seed, const void *key, size_t len);

/* A key's hash as the filters use it: 128 bits, from which all probe
 * positions are derived. Computing it once and reusing it (with
 * bk_filter_add_hash / bk_filter_contains_hash) saves rehashing when one key
 * is checked against several filters with the same hash id and seed. */
typedef struct bk_hash {
    uint64_t lo, hi;
} bk_hash_t;

bk_hash_t bk_hash_key(bk_hash_id_t id, uint64_t seed, const void *key, size_t len);

/* A fresh random 64-bit seed from the operating system (getrandom, 32
 * seeds per call, kept per thread; a forked child does not reuse its
 * parent's), falling back to a mix of time and address bits if that
 * fails. Thread-safe. */
uint64_t bk_random_seed(void);

/* ------------------------------------------------------------------------ */
/* Sizing                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct bk_plan {
    bk_kind_t kind;
    uint64_t capacity;    /* n: items the filter is sized for */
    double fpr_target;    /* p: requested false-positive rate at n items */
    uint64_t bits;        /* m: bits of the payload (counting: 4 per counter) */
    uint64_t cells;       /* bits for 1-bit kinds; counters for counting */
    uint32_t k;           /* probes per key */
    uint64_t bytes;       /* payload bytes */
    double bits_per_key;  /* bits / capacity */
    double expected_fpr;  /* the model's FPR at n items, <= fpr_target */
    uint32_t lines;       /* 64-byte lines a lookup reads in a filter larger
                             than the caches: 1 (blocked, split, counting),
                             2 (blocked2; a cuckoo filter's two buckets), k
                             where each probe is a line of its own */
    bool per_probe;       /* each probe a line of its own (classic, precise):
                             an absent key stops at its first zero */
} bk_plan_t;

/* Sizes a filter of the given kind for n items at false-positive rate p.
 * Every plan aims at an expected FPR of 0.9 p, so that the FPR a user
 * measures on a real filter at capacity (which scatters around the model's)
 * stays <= p. Classic: m = -n ln p' / (ln 2)^2 with p' = 0.9 p,
 * k = round((m/n) ln 2) (at most m / 64), m raised until the expected FPR
 * is <= p', where the expected FPR adds to the textbook one what double
 * hashing costs (about 1/m from strides that fold a key's probes together,
 * and n/m^2 from queries that repeat a key's probes): a small classic
 * filter at a low p is several times the textbook size (n = 100 at 1e-6:
 * 139 bits per key) so that it keeps p. Precise: the textbook model alone
 * (its probes are independent), so never larger than classic. Blocked and counting: the
 * smallest size whose expected FPR (averaged over the Poisson spread of
 * keys per 64-byte line) is <= p'. Blocked2: the same for two lines per
 * key (k in each; out->k is per line). Split: the one-line model with
 * 32-byte blocks and k = 8. Default: split for 0.004 <= p <= 0.02, blocked
 * for other p >= 1e-3, blocked2 below (out->kind says which). Scalable: the first sub-filter
 * (blocked, aimed at p' * (1 - 0.5)).
 * BK_EINVAL if n == 0, p is not in (0, 1), or p is NaN; BK_ENOMEM if the
 * size does not fit in 64 bits / size_t. */
bk_status_t bk_plan(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out);

/* The kinds a program can choose among for n keys at p, in kind order:
 * every kind bk_filter_create makes as one array (bk_plan sizes it) and
 * the cuckoo filter (bk_cuckoo_plan). Writes the first cap of them to out
 * (out may be NULL when cap is 0); returns how many there are. For a
 * tool's comparison of kinds, so a new kind shows there by itself. */
size_t bk_plan_kinds(bk_kind_t *out, size_t cap);

/* Every kind a program makes filters of, in kind order: those
 * bk_filter_create makes and the static ones bk_filter_build makes (not
 * bitmaps, nor RedisBloom's links, made only inside the chains taken over
 * from it). Writes the first cap of them to out (out may be NULL when cap
 * is 0); returns how many there are. For a tool's or a binding's list of
 * kinds, so a new kind shows there by itself. */
size_t bk_filter_kinds(bk_kind_t *out, size_t cap);

/* How a window filter (BK_KIND_WINDOW) is sized: a count window of the
 * last `capacity` adds (span 0) or a time window of `span` units holding
 * at most `capacity` adds within any span, with `generations` G (0: 4). */
typedef struct bk_window_plan {
    uint64_t capacity;     /* N */
    double fpr_target;     /* p */
    uint64_t span;         /* T; 0 for a count window */
    uint32_t generations;  /* G */
    uint32_t slots;        /* filters kept: G (count) or 2 G (time) */
    uint64_t slot_capacity; /* adds per slot: ceil(N / (G - 1)) */
    uint64_t slot_span;    /* time windows: units per generation, ceil(T / (G - 1)) */
    uint32_t k;            /* probes per key, in one 64-byte line per slot */
    uint64_t bytes;        /* payload bytes */
    double bits_per_key;   /* bits / N */
    double expected_fpr;   /* the model's FPR at the fullest moment, <= p */
    double forget_after;   /* a key not added for this many windows (G / (G-1))
                              is forgotten; within 1 window it is present */
    uint32_t lines_per_lookup; /* 64-byte lines a lookup reads (adjacent) */
} bk_window_plan_t;

/* Sizes a window filter as bk_filter_create would make it. BK_EINVAL for
 * capacity 0, fpr outside (0, 1) or generations outside 2..16; BK_ENOMEM
 * when it would pass the 64 TiB payload limit. */
bk_status_t bk_plan_window(uint64_t capacity, double fpr, uint64_t span, uint32_t generations,
                           bk_window_plan_t *out);

/* The expected FPR of a filter of the given kind with m cells, n items and
 * k probes (for counting, m counters). Returns 1.0 for m == 0 or k == 0. */
double bk_fpr_expected(bk_kind_t kind, uint64_t m, uint64_t n, uint32_t k);

/* ------------------------------------------------------------------------ */
/* Filters: blocked, classic, counting, precise, scalable                    */
/* ------------------------------------------------------------------------ */

typedef struct bk_filter bk_filter_t;

typedef struct bk_key {
    const void *ptr;
    size_t len;
} bk_key_t;

/* Options for bk_filter_create. A zeroed struct (or NULL) means defaults:
 * blocked kind, XXH3, a fresh random seed, no size cap, and for scalable
 * filters growth 2 and tightening ratio 0.5.
 *
 * How a scalable chain grows. Sub-filter i has capacity
 * c_i = ceil(c_{i-1} * growth) (c_0 = capacity) and error e_i, where
 * e_0 = p (1 - tightening) (p itself if nonscaling or first_error_as_given)
 * and e_i = e_{i-1} * tightening for i < 32. From sub-filter 32 on, the
 * tightening is bounded: the rest of the error budget,
 * T = e_0 tightening^32 / (1 - tightening), is shared out as
 * e_{32+j} = min(T / ((j+1)(j+2)), e_0 tightening^32), so the errors still
 * sum to at most p while the bits per key grow with log(j) instead of j.
 * The first sub-filter is of sub_kind; later ones are too, except that
 * those with an error below 1e-7 are BK_KIND_PRECISE (a blocked filter
 * needs over 1.5x the classic bits there, and a small classic one several
 * times the textbook bits). So each sub-filter stays near the classic optimum for its
 * capacity and error, and a chain of thousands of sub-filters stays small:
 * capacity 1, growth 1, p = 0.0001 holds 5,000 keys in about 80 KB of
 * payload. */
typedef struct bk_options {
    bk_kind_t kind;
    bk_hash_id_t hash;
    bool seed_set;  /* use `seed` instead of a random seed */
    uint64_t seed;
    /* scalable only */
    bk_kind_t sub_kind;  /* BLOCKED (default), BLOCKED2 or CLASSIC */
    double growth;       /* capacity factor per new sub-filter; 0 = 2; >= 1 */
    double tightening;   /* error factor per new sub-filter; 0 = 0.5; in (0,1) */
    bool nonscaling;     /* BK_EFULL at capacity instead of growing; the
                            only sub-filter then gets p itself */
    bool first_error_as_given; /* the first sub-filter gets p itself, not
                                  p * (1 - tightening): older RedisBloom
                                  releases' rule; a grown chain may then
                                  reach p / (1 - tightening) */
    uint64_t max_bytes;  /* cap on the filter's payload bytes; 0 = none.
                            See bk_filter_set_max_bytes(). */
    /* window only */
    uint64_t window_span; /* 0: a count window, the last `capacity` adds.
                             > 0: a time window of this many units of the
                             caller's clock (bk_filter_advance), sized for at
                             most `capacity` adds per span */
    uint32_t window_generations; /* 0 = 4; 2..16. More generations cost a
                                    little less memory and forget more
                                    sharply; each lookup reads one 64-byte
                                    line per generation */
} bk_options_t;

/* Creates an empty filter for `capacity` items at false-positive rate `fpr`.
 * On success *out owns a new filter: release it with bk_filter_free().
 * BK_EINVAL for bad parameters, BK_ENOMEM if it cannot be allocated,
 * BK_EFULL if its payload (a scalable filter's first sub-filter) is larger
 * than opts->max_bytes.
 *
 * Window filters (BK_KIND_WINDOW) answer "was this key added within the
 * window?" and forget older keys, in constant memory. They keep G
 * generations (window_generations) of g = ceil(N / (G - 1)) adds (count
 * window, N = capacity) or of d = ceil(T / (G - 1)) time units (time
 * window, T = window_span); each add goes to the current generation, and
 * starting a generation empties the oldest. Guarantees:
 *  - no false negatives within the window: a key added among the last N
 *    adds, or at a clock value t with now - t <= T, is present (one tick
 *    past T: a clock of whole ticks reads now - t = T for a key added
 *    less than T ago, so a key younger than T is found whatever the
 *    clock's granularity);
 *  - forgotten after G generations: a key not added for G g adds (G d time
 *    units) is absent unless falsely present (rate <= p); between N and
 *    G g (T and G d) it may or may not still be present;
 *  - FPR <= p at every moment, as long as no generation takes more than g
 *    adds (a time window: about N adds per T at most; more raises the FPR,
 *    which bk_filter_info reports, and never loses a key);
 *  - each add counts once, repeated keys too: "the last N adds" are add
 *    calls, and re-adding a key keeps it for another window.
 * Time windows move with bk_filter_advance(); an idle gap of G generations
 * or more empties them. Not supported for windows (BK_EKIND): add_atomic,
 * remove, union, next_growth. */
bk_status_t bk_filter_create(bk_filter_t **out, uint64_t capacity, double fpr,
                             const bk_options_t *opts);

/* Creates an empty split, blocked, blocked2, classic, counting or precise
 * filter of exactly `cells` cells (bits or counters, rounded up to a whole
 * 32-byte block for split, a 64-byte line for blocked, blocked2 and
 * counting, a 64-bit word for classic and precise) and k probes, for
 * callers that size filters themselves. BK_EINVAL for k == 0, k > 64
 * (blocked, blocked2 and counting: k > 16; split: k != 8), cells == 0, or
 * a scalable kind;
 * BK_EFULL if the payload is larger than opts->max_bytes. */
bk_status_t bk_filter_create_exact(bk_filter_t **out, bk_kind_t kind, uint64_t cells,
                                   uint32_t k, const bk_options_t *opts);

void bk_filter_free(bk_filter_t *f);

/* Adds a key. *was_new (may be NULL) is set to true if the key was not
 * already (possibly falsely) present. BK_EREADONLY on a read-only mapping;
 * BK_EFULL when a scalable filter needs to grow for this key and may not:
 * it is non-scaling, mapped, at its length limit, or the new sub-filter
 * would take its payload past max_bytes (bk_filter_set_max_bytes); BK_ENOMEM
 * if a scalable filter cannot grow for want of memory. On error the filter
 * is unchanged. A key already present never needs growth, so it is
 * answered BK_OK even at the cap. */
bk_status_t bk_filter_add(bk_filter_t *f, const void *key, size_t len, bool *was_new);

/* True if the key may be in the set; false if it certainly is not. */
bool bk_filter_contains(const bk_filter_t *f, const void *key, size_t len);

/* bk_filter_add, bk_filter_contains and (below) bk_filter_remove for a key
 * that is a 64-bit integer (an id, a number, a hash of the caller's own),
 * passed by value: exactly those calls on the key's 8 bytes in
 * little-endian order, so a filter and its files are the same whichever
 * call made them and on any machine (on x86-64 and little-endian ARM, the
 * bytes at &key). Same statuses and answers. Faster where the caller's
 * call sits in a small function of its own: it passes the key in a
 * register instead of storing it in a stack frame to pass its address, and
 * can end in a jump to these (docs/BENCHMARKS.md, "The caller's frame"). */
bk_status_t bk_filter_add_u64(bk_filter_t *f, uint64_t key, bool *was_new);
bool bk_filter_contains_u64(const bk_filter_t *f, uint64_t key);

/* Pre-hashed variants: h must come from bk_filter_hash(f, ...) or from
 * bk_hash_key() with f's hash id and seed. */
bk_hash_t bk_filter_hash(const bk_filter_t *f, const void *key, size_t len);
bk_status_t bk_filter_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new);
bool bk_filter_contains_hash(const bk_filter_t *f, bk_hash_t h);

/* Time windows: moves the window's clock to `now`, in the unit window_span
 * was given in (seconds since the epoch, milliseconds, or a sequence
 * number). Generations that ended are emptied; a `now` earlier than the
 * latest one given is ignored (the clock never goes back), so the answer
 * for keys added at the latest time stays true. Adds and lookups use the
 * clock as last advanced. Count windows: BK_OK, nothing changes.
 * BK_EKIND for other kinds, BK_EREADONLY on a read-only mapping. */
bk_status_t bk_filter_advance(bk_filter_t *f, uint64_t now);

/* bk_filter_contains as if the clock of a time window stood at `now`
 * (when later than its own), without changing the filter: what a reader
 * of a read-only mapping asks. Other filters: bk_filter_contains. Cannot
 * fail (a query). */
bool bk_filter_contains_at(const bk_filter_t *f, const void *key, size_t len, uint64_t now);

/* Thread-safe add (atomic OR): any number of threads may call it at once on
 * the same filter. Blocked, classic and precise only (BK_EKIND otherwise,
 * scalable included: its growth is not thread-safe, so the size cap never
 * meets this path). The item count is updated atomically too. */
bk_status_t bk_filter_add_atomic(bk_filter_t *f, const void *key, size_t len, bool *was_new);

/* Batch calls: hash a group of keys, prefetch every target line, then probe.
 * Results are exactly those of the one-at-a-time calls in array order
 * (a key repeated within the batch is new only the first time).
 * add_batch: was_new (may be NULL) receives n flags; *n_new (may be NULL)
 * the number of new keys. BK_EINVAL if keys is NULL with n > 0,
 * BK_EREADONLY, and for scalable filters the statuses of bk_filter_add()
 * (BK_EFULL at the size cap, BK_ENOMEM): on such an error the keys before
 * the failing one are in (was_new and *n_new say which), the failing key
 * and those after it are not tried (their was_new entries are false). The
 * size cap is checked before each growth, key by key, as for single adds. */
bk_status_t bk_filter_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                bool *was_new, uint64_t *n_new);
/* As bk_filter_add_batch, and *done (may be NULL) says where it stopped:
 * n when every key was taken, else the index of the key that failed (the
 * keys before it are in; it and those after are not), 0 for an error
 * before any key (BK_EINVAL, BK_EREADONLY). So a caller learns which key
 * filled a filter without trying the keys again one by one. */
bk_status_t bk_filter_add_batch_done(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                     bool *was_new, uint64_t *n_new, size_t *done);
/* out receives n flags; returns how many were (possibly) present. Cannot
 * fail: with keys or out NULL (n > 0) it returns 0 and writes nothing. */
size_t bk_filter_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                bool *out);

/* Pre-hashed batch calls: the batch calls above for keys already hashed,
 * each hashes[i] as bk_filter_add_hash() takes it (from bk_filter_hash()
 * or bk_hash_key() with f's hash id and seed). Same results, statuses and
 * order as the batch calls on the keys the hashes came from; nothing is
 * hashed. For a program that hashes its keys once for several uses (a
 * partition, a shard, a table, and the filter). add_hash_batch: BK_EINVAL
 * if hashes is NULL with n > 0. contains_hash_batch cannot fail: with
 * hashes or out NULL (n > 0) it returns 0 and writes nothing. */
bk_status_t bk_filter_add_hash_batch(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                     bool *was_new, uint64_t *n_new);
/* As bk_filter_add_hash_batch, and *done (may be NULL) says where it
 * stopped, as bk_filter_add_batch_done's does. */
bk_status_t bk_filter_add_hash_batch_done(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                          bool *was_new, uint64_t *n_new, size_t *done);
size_t bk_filter_contains_hash_batch(const bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                     bool *out);

/* Counting and cuckoo filters only (BK_EKIND otherwise). Removes one
 * occurrence of a key: each of its counters is decremented unless
 * saturated (15), or one matching fingerprint is cleared. If any counter
 * is zero (no fingerprint matches) the key was never added: BK_ENOTFOUND,
 * nothing changes. A key never added that the filter holds all the same
 * (a false positive) cannot be told from an added one: removing it lowers
 * another key's counters or clears its fingerprint, which may make that
 * key absent (a false negative). Remove only keys that were added. */
bk_status_t bk_filter_remove(bk_filter_t *f, const void *key, size_t len);
/* The same for a 64-bit key, as bk_filter_add_u64 takes it. */
bk_status_t bk_filter_remove_u64(bk_filter_t *f, uint64_t key);

/* One key's counter. Counting filters: the smallest of the key's counters
 * (an upper bound of how many times it was added, saturating at 15). Other
 * kinds: 1 if contained, else 0. Cannot fail (a query). Not to be confused
 * with bk_bitmap_count(), a popcount, or bk_filter_items(). */
unsigned bk_filter_counter(const bk_filter_t *f, const void *key, size_t len);

/* Deprecated: the former name of bk_filter_counter(), kept so existing
 * code compiles and links; same behaviour. */
unsigned bk_filter_count(const bk_filter_t *f, const void *key, size_t len);

/* Makes the kernel provide share `share` (of `shares` equal shares) of a
 * large single-array filter's memory now, on the calling thread: each
 * page is touched for writing and no bit changes. A new filter's memory
 * is zero-filled by the kernel page by page as the first adds write to
 * it, on the adding thread; threads that each call this for one share
 * before the adds begin spread that work instead (for gigabytes, seconds
 * in a virtual machine). One call (share 0 of 1) right after making the
 * filter takes that work out of the adds, as a table zeroed when made
 * would: for a program whose first adds must not wait on the kernel (a
 * 2 MiB huge page first touched in a virtual machine whose host took the
 * memory back measured 4-5 ms; docs/BENCHMARKS.md, "One load nearer, and
 * the pages the first adds touch"), at the price of the whole filter's
 * memory from the start. Not while another thread uses the filter.
 * Chains, windows and filters mapped from a file: nothing is done.
 * BK_EINVAL if share >= shares, BK_EREADONLY for a read-only filter. */
bk_status_t bk_filter_prefault(bk_filter_t *f, unsigned share, unsigned shares);

/* Forgets every key (keeps size, k, hash and seed). Scalable filters drop
 * all sub-filters but the first. */
bk_status_t bk_filter_clear(bk_filter_t *f);

/* dst |= src. Both must have the same kind, size, k, hash id and seed
 * (scalable: the same chain shape); BK_EINCOMPAT otherwise. Counting
 * filters add counters, saturating at 15. dst's item count becomes the
 * estimate from the merged bits. */
bk_status_t bk_filter_union(bk_filter_t *dst, const bk_filter_t *src);

/* Scalable filters: the capacity, error and payload bytes of the sub-filter
 * the chain adds next, when its newest one is full (each out pointer may be
 * NULL). BK_EKIND for other kinds; BK_EFULL if the chain cannot grow
 * (non-scaling, its length limit, or max_bytes: in that last case the out
 * values are still set, so a caller can say what the growth would need);
 * BK_ENOMEM if the next sub-filter's size does not fit in memory. */
/* Why the next new key would be refused (BK_EFULL), in words with the
 * numbers, into buf (len bytes, always terminated; truncated to fit):
 * "it is non-scaling and holds its capacity of N items", "its next
 * sub-filter of N bytes would bring it to M bytes, over its size cap of C
 * bytes", "it has as many sub-filters as a chain may have (N)", ... .
 * Returns the reason's length, 0 (buf "") when the next new key would be
 * taken: a caller learns why without deriving the library's decision
 * again. Chains only; 0 for every other kind. */
size_t bk_filter_full_reason(const bk_filter_t *f, char *buf, size_t len);

bk_status_t bk_filter_next_growth(const bk_filter_t *f, uint64_t *capacity, double *fpr,
                                  uint64_t *bytes);

/* Caps the filter's payload bytes (bk_filter_shape().bytes) at max_bytes;
 * 0 removes the cap. Held by the library and checked before every growth
 * of a scalable filter, on every add path (bk_filter_add, _add_hash,
 * _add_batch): the key whose new sub-filter would take the payload past the
 * cap gets BK_EFULL, the keys before it are in, and with a batch the keys
 * after it are not tried (see bk_filter_add_batch). The payload never
 * exceeds the cap through growth. A cap below the current size stops all
 * growth and frees nothing. Filters that never grow (single-array kinds,
 * non-scaling chains) keep the cap only for bk_filter_shape(). The cap is
 * not stored in files or serialized bytes: set it again after a load (the
 * Redis module sets its MAX_BYTES this way). Clones keep it. Cannot fail.
 * bk_options_t.max_bytes sets it at creation, where a first sub-filter
 * (or a single-array payload) larger than the cap gives BK_EFULL. The
 * memory a chain uses beyond its payload is about 300 bytes per
 * sub-filter (its descriptor and allocation rounding). */
void bk_filter_set_max_bytes(bk_filter_t *f, uint64_t max_bytes);

/* A deep copy, key form included. *out owns it. */
bk_status_t bk_filter_clone(bk_filter_t **out, const bk_filter_t *f);

/* How a filter's keys were canonicalized before they were added. The
 * library never changes a key: it only records the form, so a file says
 * how to spell the keys a later lookup must use (the bloomkit tool's
 * --normalize, see bloomkit(1) for the rules of url and email). New
 * filters start UNRECORDED; files with a recorded form are written as
 * format version 2 (docs/FORMAT.md), all others as version 1, byte for
 * byte as before. bk_filter_union refuses (BK_EINCOMPAT) two different
 * recorded forms, and an unrecorded destination takes the source's. */
typedef enum bk_key_form {
    BK_KEY_FORM_UNRECORDED = 0, /* not said (every version 1 file) */
    BK_KEY_FORM_AS_GIVEN = 1,   /* keys added byte for byte as given */
    BK_KEY_FORM_URL = 2,        /* bloomkit's url normalization */
    BK_KEY_FORM_EMAIL = 3       /* bloomkit's email normalization */
} bk_key_form_t;

/* Records form. BK_EINVAL for NULL or an unknown form, BK_EREADONLY for a
 * read-only mapping (a writable one stores it at the next sync). */
bk_status_t bk_filter_set_key_form(bk_filter_t *f, bk_key_form_t form);
bk_key_form_t bk_filter_key_form(const bk_filter_t *f);
/* "unrecorded", "as-given", "url", "email"; NULL for an unknown value. */
const char *bk_key_form_name(bk_key_form_t form);

/* Spells a key in a key form: the canonical spelling of a URL
 * (BK_KEY_FORM_URL: RFC 3986 section 6.2.2, syntax-based: surrounding
 * blanks trimmed; scheme and host lowercased; an empty port and the
 * scheme's default port dropped (http/ws 80, https/wss 443, ftp 21); the
 * fragment dropped; percent-escapes uppercased and escaped unreserved
 * characters decoded; "." and ".." segments resolved in a path that starts
 * with "/"; an empty path after a host becomes "/") or of an e-mail address
 * (BK_KEY_FORM_EMAIL: surrounding blanks trimmed, ASCII letters
 * lowercased); the other forms copy the key. Bytes outside ASCII pass
 * through. Writes *out_len bytes to out, which holds cap >= len + 1 bytes
 * (the result is at most one byte longer than the key), with no NUL added.
 * BK_EINVAL for a smaller cap or an unknown form. What the bloomkit tool's
 * --normalize and the Python package do before they hash a key of a filter
 * that records a form, so every front end finds the same keys. */
bk_status_t bk_key_normalize(bk_key_form_t form, const void *key, size_t len, void *out,
                             size_t cap, size_t *out_len);

typedef struct bk_filter_info {
    bk_kind_t kind;
    bk_kind_t sub_kind;      /* scalable: kind of the sub-filters */
    bk_hash_id_t hash;
    uint64_t seed;
    uint64_t capacity;       /* n it was sized for (scalable: total of subs) */
    double fpr_target;       /* p it was sized for */
    uint64_t cells;          /* bits (counting: counters); scalable: total */
    uint32_t k;              /* probes (scalable: of the newest sub-filter) */
    uint64_t bytes;          /* payload bytes in memory */
    uint64_t items;          /* keys added that were new */
    uint64_t cells_set;      /* bits set (counting: non-zero counters) */
    double fill;             /* cells_set / cells */
    double estimated_items;  /* -(m/k) ln(1 - X/m), summed over subs */
    double expected_fpr;     /* at the current fill */
    uint32_t filters;        /* scalable: sub-filters in the chain; else 1 */
    uint32_t precise_filters; /* scalable: how many of them are precise
                                (deep chains, see bk_options_t); else 0 */
    double growth;           /* scalable */
    double tightening;       /* scalable */
    bool nonscaling;         /* scalable */
    bool mapped;             /* backed by a file mapping */
    bool readonly;
    /* window (else 0): `filters` holds the generations, `items` the adds
     * the live generations hold, `expected_fpr` the FPR at their loads */
    uint64_t window_span;        /* time windows: T; count windows: 0 */
    uint64_t window_generation;  /* adds (count) or time units (time) per
                                    generation: g or d */
    uint64_t window_now;         /* time windows: the clock */
    uint64_t window_adds;        /* add calls since creation or clear */
    uint64_t window_certain_from; /* keys added at or after this add number
                                     (count, from 0) or time are present */
    uint64_t window_forgotten_before; /* keys last added before this are
                                         forgotten (read new up to p) */
    uint32_t window_slots;       /* filters the window keeps: G for count
                                    windows, 2 G for time windows (G for
                                    time windows made before 0.1.1) */
    uint64_t window_cleared_early; /* time windows, since this object was
                                      made or loaded: slots cleared before
                                      their time because more than `capacity`
                                      adds came within one span (their keys
                                      were forgotten early) */
} bk_filter_info_t;

/* Fills *out. Counting the set cells reads the whole payload: O(bytes).
 * For sizes and counts alone, bk_filter_shape() answers in O(1). */
void bk_filter_info(const bk_filter_t *f, bk_filter_info_t *out);

/* What a filter is made of, known without reading its payload. */
typedef struct bk_filter_shape {
    bk_kind_t kind;
    bk_kind_t sub_kind;        /* scalable: kind of the sub-filters; else kind */
    bk_hash_id_t hash;
    uint64_t seed;
    uint64_t capacity;         /* n it was sized for (scalable: sum over subs) */
    double fpr_target;         /* p it was sized for */
    uint32_t k;                /* probes (scalable: of the newest sub-filter) */
    uint64_t bytes;            /* payload bytes in memory (scalable: sum) */
    uint64_t items;            /* keys added that were new */
    uint32_t filters;          /* scalable: sub-filters in the chain; else 1 */
    uint32_t precise_filters;  /* scalable: how many of them are precise */
    double growth;             /* scalable; else 0 */
    double tightening;         /* scalable; else 0 */
    bool nonscaling;           /* never grows: non-scaling chains and every
                                  single-array filter */
    uint64_t newest_capacity;  /* scalable: capacity of the newest sub-filter */
    uint64_t newest_items;     /* scalable: new keys it holds; the chain grows
                                  on the next new key once this reaches
                                  newest_capacity (see bk_filter_next_growth) */
    uint64_t max_bytes;        /* the size cap (bk_filter_set_max_bytes); 0:
                                  none */
    uint64_t window_span;      /* window: T of a time window; 0 for a count
                                  window and other kinds */
    bool mapped;               /* backed by a file mapping */
    bool readonly;
} bk_filter_shape_t;

/* Fills *out in O(1) (O(1) per call however large the payload or long the
 * chain): no payload is read. Meant for callers that report sizes often,
 * such as a server answering INFO or checking a memory limit before each
 * write. Cannot fail. */
void bk_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out);

/* Scalable filters: the shape of sub-filter i, 0 the oldest (i below
 * bk_filter_shape().filters): its kind, capacity, error, k, payload bytes
 * and the new keys it holds. O(1). BK_EKIND for other kinds, BK_EINVAL for
 * an i out of range (out untouched then). */
bk_status_t bk_filter_sub_shape(const bk_filter_t *f, uint32_t i, bk_filter_shape_t *out);

/* Keys added that were new; window filters: the adds their live
 * generations hold. */
uint64_t bk_filter_items(const bk_filter_t *f);
bk_kind_t bk_filter_kind(const bk_filter_t *f);

/* ------------------------------------------------------------------------ */
/* RedisBloom chains                                                         */
/* ------------------------------------------------------------------------ */

/* A Bloom filter that RedisBloom 2.x wrote (an RDB value of its type
 * MBbloom--, or its BF.SCANDUMP chunks), rebuilt as a scalable bloomkit
 * filter whose sub-filters are of kind BK_KIND_REDISBLOOM: each keeps
 * RedisBloom's bit array byte for byte and sets and tests the bits
 * RedisBloom does, with RedisBloom's key hash (BK_HASH_MURMUR64A, or
 * BK_HASH_MURMUR2 without the FORCE64 option), so every key answers as it
 * did in RedisBloom, false positives included. Such a chain grows as
 * RedisBloom's does (next link: capacity times growth, error halved, sized
 * by RedisBloom's rule), so it stays a RedisBloom filter that can be
 * written back in RedisBloom's encodings (bk_redisbloom_chain,
 * bk_redisbloom_link, bk_redisbloom_read). docs/FORMAT.md, "RedisBloom
 * chains", is the specification. */

/* RedisBloom's chain options (its BLOOM_OPT_* bits). */
#define BK_REDISBLOOM_NOROUND 1u      /* links sized exactly, probes mod bits */
#define BK_REDISBLOOM_ENTS_IS_BITS 2u /* first link given as 2^n bits */
#define BK_REDISBLOOM_FORCE64 4u      /* the 64-bit key hash */
#define BK_REDISBLOOM_NO_SCALING 8u   /* never grows */

/* A chain's header fields, as RedisBloom records them. */
typedef struct bk_redisbloom_chain {
    uint64_t items;   /* keys added that were new (its "size") */
    uint32_t links;   /* sub-filters, 1 or more */
    uint32_t options; /* BK_REDISBLOOM_* bits; no others */
    uint32_t growth;  /* capacity factor per link, >= 1 */
} bk_redisbloom_chain_t;

/* One link, as RedisBloom records it. */
typedef struct bk_redisbloom_link {
    uint64_t entries; /* the capacity it was sized for */
    double error;     /* its error rate, in (0, 1) */
    double bpe;       /* bits per entry RedisBloom computed from error */
    uint32_t hashes;  /* probes per key, 1..BK_REDISBLOOM_MAX_HASHES */
    uint64_t bits;    /* payload bits: a positive multiple of 64 */
    uint32_t n2;      /* nonzero: probes are taken mod 2^n2 (n2 <= 63,
                         2^n2 <= bits); 0: mod bits */
    uint64_t items;   /* keys added to this link (its "size") */
} bk_redisbloom_link_t;

#define BK_REDISBLOOM_MAX_HASHES 1024u

/* Builds an empty-payload chain from a header and its links (links[0] the
 * oldest); the payload bytes then come through bk_redisbloom_write. The
 * chain's items must equal the sum of the links'. *out is the caller's
 * (bk_filter_free). BK_ECORRUPT with *why (a static string; why may be
 * NULL) for fields RedisBloom itself would refuse or that the library
 * cannot hold; BK_ENOMEM. */
bk_status_t bk_redisbloom_new(bk_filter_t **out, const bk_redisbloom_chain_t *chain,
                              const bk_redisbloom_link_t *links, const char **why);

/* A new, empty chain as RedisBloom 2.x's BF.RESERVE makes one: options
 * FORCE64 and NOROUND (and NO_SCALING when nonscaling), one link of
 * `capacity` entries at error / 2 (at error itself when nonscaling), sized
 * by RedisBloom's rule, growth its expansion. It answers, grows, dumps and
 * saves as RedisBloom's would, bit for bit. *out is the caller's
 * (bk_filter_free). BK_EINVAL for capacity 0, error outside (0, 1) or
 * growth 0; BK_ENOMEM for a link too large to hold, or memory. */
bk_status_t bk_redisbloom_create(bk_filter_t **out, uint64_t capacity, double error,
                                 uint32_t growth, bool nonscaling);
/* The payload bytes bk_redisbloom_create would allocate for its first link
 * (*bytes; 0 on error), without allocating: a program holds a size cap
 * before it creates. Its statuses. */
bk_status_t bk_redisbloom_plan(uint64_t capacity, double error, bool nonscaling, uint64_t *bytes);

/* Whether f is a chain of RedisBloom links (made by bk_redisbloom_new or
 * loaded from a file that holds one). */
bool bk_redisbloom_is(const bk_filter_t *f);

/* The chain's header, and link i's fields (0 the oldest). BK_EKIND if f is
 * not a RedisBloom chain; BK_EINVAL for an i out of range. */
bk_status_t bk_redisbloom_chain(const bk_filter_t *f, bk_redisbloom_chain_t *out);
bk_status_t bk_redisbloom_link(const bk_filter_t *f, uint32_t i, bk_redisbloom_link_t *out);

/* The links' payloads seen as one byte string, oldest link first (the
 * order of RedisBloom's SCANDUMP chunks). bk_redisbloom_read points *bytes
 * at up to max bytes from offset, never past the end of the link that
 * holds offset; the bytes are f's, valid until f changes. *len = 0 at or
 * past the end. bk_redisbloom_write copies len bytes to offset; they must
 * lie inside one link (BK_EINVAL with *why otherwise; nothing written).
 * Both BK_EKIND if f is not a RedisBloom chain. */
bk_status_t bk_redisbloom_read(const bk_filter_t *f, uint64_t offset, uint64_t max,
                               const void **bytes, uint64_t *len);
bk_status_t bk_redisbloom_write(bk_filter_t *f, uint64_t offset, const void *bytes,
                                uint64_t len, const char **why);
/* Total payload bytes of the links (the end offset of the string above). */
uint64_t bk_redisbloom_bytes(const bk_filter_t *f);

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

/* Where the library's memory comes from. By default: malloc and free, with
 * payloads of 2 MB and more as anonymous mappings (zeroed lazily, with
 * transparent huge pages requested). A program with its own memory
 * accounting (the Redis module: used_memory, maxmemory) routes every
 * allocation of the library through its allocator instead; payloads then
 * still start on a 64-byte boundary (the library over-allocates 64 bytes
 * and aligns them itself), and file mappings (bk_filter_open) still map. */
typedef struct bk_allocator {
    /* n bytes (n > 0), suitably aligned for any object, or NULL when they
     * cannot be had: the library then returns BK_ENOMEM. Must not abort. */
    void *(*alloc)(size_t n);
    /* count * size zeroed bytes, or NULL; may itself be NULL, and then
     * payloads come from alloc and are zeroed by the library. */
    void *(*calloc)(size_t count, size_t size);
    /* Releases a block from alloc or calloc; never called with NULL. */
    void (*free)(void *p);
} bk_allocator_t;

/* Makes *a (copied) the process-wide allocator; NULL restores the default.
 * Only while the library holds no memory at all (before the first object
 * is created, or after the last one is freed), so no block can be released
 * to an allocator other than the one it came from: BK_EINVAL then, or when
 * a->alloc or a->free is NULL, and the allocator in use stays. Not
 * thread-safe: call it before any thread uses the library. */
bk_status_t bk_allocator_set(const bk_allocator_t *a);

/* Moves a block of the program's allocator for defragmentation: returns
 * the block's new address, its bytes copied there and `block` released,
 * or NULL to leave it where it is (Redis' RedisModule_DefragAlloc). The
 * new block must be as large and as aligned as the old one, as a block
 * moved within its size class is. */
typedef void *(*bk_move_fn)(void *arg, void *block);

/* Offers move() every block of *f that came from the program's allocator
 * (bk_allocator_set): its structs, lists and payloads, and updates every
 * pointer to those that moved, so a server's active defragmentation can
 * compact memory a filter holds. *f itself may move (the new handle is
 * stored). Blocks the library did not take from that allocator (mapped
 * payloads, a file's mapping, a packed filter's block, which is the
 * program's) are never offered. Returns the number of blocks moved; f
 * answers exactly as before. Not for a filter another thread is using. */
size_t bk_filter_defrag(bk_filter_t **f, bk_move_fn move, void *arg);

/* ---- packed filters: one block per filter ----
 *
 * For a program that holds many filters and pays for every byte of each
 * (the Redis module: one per key, counted in used_memory). A packed filter
 * is a scalable (or non-scaling) Bloom filter of one sub-filter, laid out
 * in one block the program allocates, owns, copies (memcpy) and frees:
 * BK_PACKED_HEAD bytes of head, which hold no pointer, then the bits. The
 * first BK_PACKED_CALLER bytes of the head are the program's own; the
 * library never reads or writes them. The sub-filter is classic, or
 * precise where that needs fewer bits (a few items at a tiny error); the
 * chain grows with classic sub-filters, as bk_options_t says.
 *
 * Packed filters are used through a view: an ordinary bk_filter_t whose
 * sub-filter's bits are the block's, so every call works on it at the
 * usual speed and writes the bits in place. After a call that may have
 * changed the filter, bk_packed_store writes the rest (the item count)
 * back into the head; a call that grew the chain leaves a view that no
 * longer fits the block (bk_packed_store: BK_EINVAL), and bk_packed_detach
 * then makes it a filter of its own. Saved or serialized, a packed filter
 * is an ordinary chain of one sub-filter (docs/FORMAT.md). */
#define BK_PACKED_HEAD 64
#define BK_PACKED_CALLER 8

/* The smallest block for a packed filter of `capacity` items at `fpr`
 * (opts: kind BK_KIND_SCALABLE, sub_kind BK_KIND_CLASSIC, and the chain's
 * growth, tightening, nonscaling, first_error_as_given, hash, seed); 0 if
 * such a filter cannot be packed or sized. */
size_t bk_packed_size(uint64_t capacity, double fpr, const bk_options_t *opts);

/* Whether a block of `size` bytes, smaller than bk_packed_size asks, still
 * holds such a filter: with the bits it has (and the best k for them) the
 * first sub-filter's expected error is at most the share of fpr it is given
 * (the plan aims under that share, so its bits plus the head may pass an
 * allocator's size class by a few bytes: a program whose allocator rounds
 * up may ask whether the class below will do). False for bad parameters.
 * Cost: a few evaluations of the error model, as bk_packed_init makes. */
bool bk_packed_fits(size_t size, uint64_t capacity, double fpr, const bk_options_t *opts);

/* Makes block (size bytes, at least bk_packed_size, or smaller where
 * bk_packed_fits says so) an empty packed
 * filter. All of the block serves as bits: more bits than planned lower
 * the error, and k is chosen for them. zeroed: the bits past the head are
 * already zero (a calloc'ed block). Otherwise the library zeroes them as it
 * zeroes payloads from a program's allocator (bk_allocator_set): from 2 MB
 * up by handing the block's whole pages back to the kernel, so a large
 * filter costs resident memory only as keys are added; that assumes
 * anonymous private memory, which malloc-family allocators give for large
 * blocks. Zero other memory (a shared mapping) yourself and pass true.
 * The program's bytes of the head are left as they are. BK_EINVAL for bad
 * parameters or a block too small, BK_EKIND for options that are not a
 * packable chain, BK_EFULL past opts->max_bytes. */
bk_status_t bk_packed_init(void *block, size_t size, uint64_t capacity, double fpr,
                           const bk_options_t *opts, bool zeroed);

/* Makes block (size bytes) an empty packed filter shaped as model (a
 * block of the same size that bk_packed_init made, or its first
 * BK_PACKED_HEAD bytes), but for its seed: what bk_packed_init would make
 * with that seed and model's parameters, without planning again (a
 * program making many keys of one shape plans the first). zeroed as for
 * bk_packed_init; the program's bytes of the head are left as they are.
 * BK_EINVAL if model's head does not describe a filter that fits size. */
bk_status_t bk_packed_init_like(void *block, size_t size, const void *model, uint64_t seed,
                                bool zeroed);

/* The block size bk_filter_pack needs for f, or 0 if f cannot be packed:
 * anything but a scalable filter of one classic or precise sub-filter at
 * the chain's capacity and first error, holding all its items, not mapped
 * and not a RedisBloom chain. */
size_t bk_filter_packed_size(const bk_filter_t *f);

/* Copies f into block (size >= bk_filter_packed_size(f)); f is unchanged
 * and still the caller's. BK_EKIND if f cannot be packed, BK_EINVAL for a
 * block too small. */
bk_status_t bk_filter_pack(const bk_filter_t *f, void *block, size_t size);

/* Binds *view to block: *view NULL or a previous view, which is rebound
 * without allocating when it can be (one view may serve every block in
 * turn); otherwise it is freed and a new one made. *view is the caller's
 * (bk_filter_free) and borrows block's bits: it must not be used once the
 * block is freed or moved, except to bind it again. Its size cap
 * (bk_filter_set_max_bytes) is reset to none. BK_ECORRUPT with *why for a
 * head that does not describe bits within size bytes (nothing is
 * trusted), BK_ENOMEM. */
bk_status_t bk_packed_view(bk_filter_t **view, void *block, size_t size, const char **why);

/* Writes view's item count and key form (its only state outside the
 * bits) into the head of block, the block it was bound to. BK_EINVAL if
 * the view does not fit it any more (it grew a sub-filter): then use
 * bk_packed_detach. */
bk_status_t bk_packed_store(const bk_filter_t *view, void *block, size_t size);

/* Gives view bits of its own (a copy of the block's): it is then an
 * ordinary filter, no longer tied to the block, which the caller may free.
 * BK_EINVAL if view is not a view, BK_ENOMEM (view unchanged). */
bk_status_t bk_packed_detach(bk_filter_t *view);

/* Makes view an ordinary filter that goes on using the block's bits as its
 * first sub-filter's, without copying them (a large filter's first growth
 * then costs no copy and no second block): the caller keeps the block,
 * unmoved, until it has freed the filter, and frees it after. The head is
 * no longer kept up to date. BK_EINVAL if view is not a view. */
bk_status_t bk_packed_keep(bk_filter_t *view);

/* ------------------------------------------------------------------------ */
/* Persistence (docs/FORMAT.md is the spec)                                  */
/* ------------------------------------------------------------------------ */

/* Bytes that bk_filter_serialize() will write. */
uint64_t bk_filter_serialized_size(const bk_filter_t *f);

/* Writes the portable serialized form into buf (cap bytes). *written (may
 * be NULL) receives the size. BK_EINVAL if cap is too small. */
bk_status_t bk_filter_serialize(const bk_filter_t *f, void *buf, size_t cap, size_t *written);

/* Validates and loads serialized bytes (copied; buf is not retained).
 * *out owns the new filter. BK_ECORRUPT / BK_EVERSION with the reason in
 * *why (may be NULL; a constant string) on bad input; never reads past
 * buf + len, and never allocates more than the bytes given justify. */
bk_status_t bk_filter_deserialize(bk_filter_t **out, const void *buf, size_t len,
                                  const char **why);

/* Bytes [offset, offset + len) of the serialized form into buf, read
 * straight from the filter: no allocation, so a server can write a filter
 * of any size in pieces of its choosing without a second copy of it.
 * Concatenated, the slices are exactly bk_filter_serialize()'s bytes
 * (provided the filter does not change between calls; a slice taken after
 * a change disagrees with the checksums in the first slice, and a loader
 * refuses the whole as damaged). A slice that reaches into the first
 * bk_filter_serialized_size() - payload bytes (the header and part table)
 * reads every payload once for its checksums. BK_EINVAL if the range runs
 * past the end. */
bk_status_t bk_filter_serialize_range(const bk_filter_t *f, uint64_t offset, void *buf,
                                      size_t len);

/* Incremental loading: serialized bytes fed in pieces of any size, in
 * order, as they arrive (a stream, chunks of a dump), without holding them
 * all. The loader validates the header and part table as
 * bk_filter_deserialize does once they are in, then allocates the filter
 * once and copies every later byte straight into it, verifying each
 * payload's checksum as its last byte arrives. So a load costs the filter
 * plus the piece in hand, and accepts exactly what bk_filter_deserialize
 * accepts from the same bytes.
 *
 * total is the number of bytes the caller expects; the loader allocates
 * what the header describes, up to total, so a caller taking bytes from
 * outside bounds total first. */
typedef struct bk_filter_loader bk_filter_loader_t;

/* A new loader for total bytes (*out, freed by bk_filter_loader_free).
 * BK_ENOMEM. */
bk_status_t bk_filter_loader_new(bk_filter_loader_t **out, uint64_t total);

/* Takes the next len bytes. On the first bad byte (BK_ECORRUPT,
 * BK_EVERSION, BK_EKIND for a bitmap) or failed allocation (BK_ENOMEM),
 * returns the status with the reason in *why (may be NULL; a constant
 * string), and every later feed or finish returns the same. */
bk_status_t bk_filter_loader_feed(bk_filter_loader_t *l, const void *bytes, size_t len,
                                  const char **why);

/* Bytes received so far, and the total announced at creation. */
uint64_t bk_filter_loader_received(const bk_filter_loader_t *l);
uint64_t bk_filter_loader_total(const bk_filter_loader_t *l);

/* Gives back bytes [off, off + len) of those received so far (a server
 * persisting a load still in progress). BK_EINVAL past what was received. */
bk_status_t bk_filter_loader_read(const bk_filter_loader_t *l, uint64_t off, void *buf,
                                  size_t len);

/* Once all total bytes are in: *out owns the filter (the loader no longer
 * holds it). BK_ECORRUPT if bytes are missing or were refused. The loader
 * must still be freed. */
bk_status_t bk_filter_loader_finish(bk_filter_loader_t *l, bk_filter_t **out, const char **why);

/* Frees the loader and anything it still holds (NULL is fine). */
void bk_filter_loader_free(bk_filter_loader_t *l);

/* Room on this machine for a new filter of `bytes` payload bytes, for
 * callers that refuse a size typo (1e13 for 1e9) before making it: the
 * memory available (MemAvailable, else the physical memory) and, when
 * path is not NULL, the free space of the file system that path's
 * directory is on (as an unprivileged writer sees it). BK_OK; BK_ENOMEM
 * or BK_ENOSPC, with *have (may be NULL) the bytes there are. Unknown
 * figures count as room. The library itself never refuses on this. */
bk_status_t bk_room_for(uint64_t bytes, const char *path, uint64_t *have);
/* The memory available now (MemAvailable of /proc/meminfo, else the
 * physical memory); 0 if unknown. */
uint64_t bk_memory_available(void);

/* Atomic save: temp file in the same directory, fsync, rename, fsync of the
 * directory. The file is sparse: every 4 KiB block of zeros is left a hole
 * (a new 2 GB filter takes a few KB of disk). On any error the old file at
 * path is untouched and the temp file removed. BK_EIO / BK_ENOSPC (errno is kept). A save killed before
 * it could remove its temp file (SIGKILL, power loss) leaves it; the next
 * save of the same path on the same machine removes it before writing.
 * A writable mapping (bk_filter_open) saved to its own file (the same
 * inode, through any link) is synced in place instead (bk_filter_sync):
 * the mapping stays the file, and later adds stay in it; so is one given
 * to bk_checkpoint_save for its own file.
 * A symbolic link at path is followed: the file it names is replaced, in
 * its own directory, and the link stays. A path that names a directory,
 * device, FIFO or socket is refused (BK_ENOTFILE, errno EISDIR or EINVAL) and
 * left alone. A replaced file keeps its mode, and its owner and group when
 * the caller may set them. Other hard links to a replaced file keep the
 * old contents (the rename gives the path a new inode). */
bk_status_t bk_filter_save(const bk_filter_t *f, const char *path);

/* As bk_filter_save, but only where nothing is yet: the file appears whole
 * at path (following a dangling symbolic link to where it points), or,
 * when something is already there or appears meanwhile, nothing changes
 * and the call fails with BK_EEXIST (errno EEXIST). For a writer that must
 * not replace another's new file (two processes creating the same file:
 * one wins, the other learns it). Like every save, it removes the temp
 * files that earlier saves of path on this machine left when they were
 * killed. */
bk_status_t bk_filter_save_new(const bk_filter_t *f, const char *path);

/* bk_filter_save (only_new false) or bk_filter_save_new (true), and *why
 * (may be NULL; a constant string, NULL on success) says which step
 * failed, as loads do: "cannot create a temp file in its directory",
 * "cannot write the temp file", "cannot flush the temp file to disk",
 * "cannot rename the temp file into place", "a file is already there", "a
 * directory is there", "the file is in place, but its directory could not
 * be flushed to disk", ... . The status and errno are those of the two
 * calls above: a program prints "PATH: WHY: strerror(errno)". */
bk_status_t bk_filter_save_why(const bk_filter_t *f, const char *path, bool only_new,
                               const char **why);

/* Reads a file into memory and validates it. *why as for deserialize.
 * Like bk_filter_open, it first waits for a checkpoint in progress
 * (bk_checkpoint_save) and finishes one a killed writer left; a journal
 * that needs finishing without write access to the file is BK_EIO with
 * *why saying so. */
bk_status_t bk_filter_load(bk_filter_t **out, const char *path, const char **why);

/* ---- checkpoints: writing only what changed ---- */

/* Keeps a filter's file up to date a checkpoint at a time, writing only
 * the 512-byte sectors that changed since the last one: in place, through
 * a journal beside the file (PATH-journal; docs/FORMAT.md), so a process
 * killed at any instant leaves the previous checkpoint or this one. For a
 * long-running writer of a large filter (a crawler's seen-set saved every
 * few seconds). The file stays an ordinary filter file. */
typedef struct bk_checkpoint bk_checkpoint_t;

typedef struct bk_checkpoint_stats {
    bool whole;             /* written whole, as bk_filter_save does */
    uint64_t sectors;       /* 512-byte sectors that changed */
    uint64_t pages;         /* 4 KiB pages of the file they lie in */
    uint64_t bytes_written; /* journal bytes plus the pages written in place
                               (whole: the file's size) */
} bk_checkpoint_stats_t;

/* Starts checkpoints of f into path (symbolic links followed). f is what
 * was loaded from path, or path does not hold f's bytes (nothing there
 * yet, another filter), in which case the first checkpoint writes the
 * file whole. Reads f once, keeping a 64-bit hash per sector: 1/64 of the
 * file's size in memory. *out is the caller's (bk_checkpoint_free); f
 * stays the caller's and is not retained. BK_EINVAL, BK_ENOMEM. */
bk_status_t bk_checkpoint_new(bk_checkpoint_t **out, const bk_filter_t *f, const char *path);

/* Makes the file at cp's path hold f as it is now (f is the filter given
 * to bk_checkpoint_new, changed since). Reads all of f to find what
 * changed (about 0.1 s per GB) and writes those sectors, or the whole
 * file, atomically, when that writes less, when the layout changed (a
 * scalable filter grew) or when the file is not the one this checkpointer
 * last wrote (replaced, or changed by another writer). Loads wait while it
 * writes in place. stats (may be NULL) says what was written. Errors as
 * bk_filter_save: BK_ENOSPC or BK_EIO with errno, the file then holding
 * the previous checkpoint (or, once its journal is whole, this one, which
 * the next load or checkpoint finishes); BK_ENOMEM. On BK_OK the
 * checkpoint is on disk in the journal; the file holds it as the kernel
 * caches it, and the journal stays beside it until a later checkpoint
 * finds the file written back (a load after a power loss replays it). */
bk_status_t bk_checkpoint_save(bk_checkpoint_t *cp, const bk_filter_t *f,
                               bk_checkpoint_stats_t *stats);

/* Frees cp (NULL is fine); the file is left as the last checkpoint made it. */
void bk_checkpoint_free(bk_checkpoint_t *cp);

typedef enum bk_map_mode {
    BK_MAP_READONLY = 0, /* queries only; adds give BK_EREADONLY */
    BK_MAP_WRITABLE = 1  /* in-place updates; bk_filter_sync() writes them */
} bk_map_mode_t;

/* Maps a file instead of reading it: a multi-GB filter answers at once.
 * The header is validated; the payload checksum is not verified at open
 * (that would read the whole file) but by bk_filter_verify(). A writable
 * mapping of a scalable filter cannot grow it (BK_EFULL when full).
 * bk_filter_free() unmaps.
 *
 * Writable mappings change the file in place, and the stored checksums
 * describe the payload as of the last bk_filter_sync() (or save). So:
 *  - call bk_filter_sync() before the file is read by anything else
 *    (bk_filter_load, bk_filter_deserialize of its bytes, another process,
 *    a copy): an unsynced file fails their checksum check and is refused
 *    with BK_ECORRUPT ("payload checksum mismatch"), by design, since it
 *    cannot be told from a damaged one;
 *  - bk_filter_free() does not sync; changes since the last sync stay in
 *    the file's payload, under stale checksums, until the next sync;
 *  - bk_filter_open() itself does not check payload checksums, so it opens
 *    an unsynced file; bk_filter_verify() tells whether it was synced.
 * docs/FORMAT.md ("Mapped files") has the details. */
bk_status_t bk_filter_open(bk_filter_t **out, const char *path, bk_map_mode_t mode,
                           const char **why);

/* The memory a mapped filter's file backs (the whole file, mapped at
 * *addr for *len bytes; either pointer may be NULL), valid until
 * bk_filter_free(). For a program that guards that range: a file that
 * another program truncates while it is mapped raises SIGBUS at the next
 * access past its new end, which the library cannot turn into a status.
 * In-memory filters: BK_EINVAL, *addr NULL and *len 0. */
bk_status_t bk_filter_mapping(const bk_filter_t *f, const void **addr, size_t *len);

/* Writable mapping: recomputes the checksums and flushes to disk (msync).
 * In-memory filter: BK_EINVAL. */
bk_status_t bk_filter_sync(bk_filter_t *f);

/* Recomputes the payload checksum of a mapped filter and compares it with
 * the stored one: BK_ECORRUPT on mismatch. A filter loaded or opened from
 * a paged file: checks every page not yet checked (reads the whole file),
 * BK_ECORRUPT with the offset of the first damaged one. Other in-memory
 * filters: BK_OK. */
bk_status_t bk_filter_verify(const bk_filter_t *f, const char **why);

/* Paged files. A single-array filter of 1 MiB or more is saved with a
 * checksum per 4 KiB page (format version 3, docs/FORMAT.md). Loading or
 * opening one reads only its header and group checksums; each page is
 * read and checked the first time a key touches it, so a run costs the
 * pages it touches, and a checkpoint (bk_checkpoint_save) writes back
 * just the pages its adds changed.
 *
 * A page that fails its check is never trusted: every key on it answers
 * "present" (a false "absent" is impossible), adds to it fail with
 * BK_ECORRUPT, and the filter is damaged: bk_filter_damage() returns
 * BK_ECORRUPT with *why naming the file offset, and saves and checkpoints
 * refuse it. A program that prints answers should ask bk_filter_damage()
 * before it does. BK_OK for an undamaged filter and for every filter not
 * read from a paged file.
 *
 * The file must not be changed in place by another writer while it is
 * loaded (checkpoints of other processes included): a page changed under
 * a loaded filter fails its check as a damaged one would. */
bk_status_t bk_filter_damage(const bk_filter_t *f, const char **why);

/* bk_filter_info without reading what has not been read: for a filter
 * read from a paged file whose pages are not all checked yet, the cells
 * set, fill and estimated items are the ones its item count leads one to
 * expect (the fill n keys leave on average), not counted, and false is
 * returned; bk_filter_info reads and checks every page to count them.
 * Every other filter: bk_filter_info, and true. */
bool bk_filter_info_fast(const bk_filter_t *f, bk_filter_info_t *out);

/* Pages of its paged file the filter has checked so far, and in all; 0
 * and 0 for a filter not read from a paged file. */
void bk_filter_pages(const bk_filter_t *f, uint64_t *checked, uint64_t *total);

/* ------------------------------------------------------------------------ */
/* Cuckoo filters                                                            */
/* ------------------------------------------------------------------------ */

/* A cuckoo filter (Fan, Andersen, Kaminsky, Mitzenmacher, "Cuckoo Filter:
 * Practically Better Than Bloom", 2014): each key leaves a small
 * fingerprint in one of two buckets, so keys can be removed and counted,
 * at a fraction of a counting Bloom filter's memory. When both buckets are
 * full, fingerprints are kicked to their other bucket, at most
 * max_iterations times; when that fails the filter grows a sub-filter
 * (expansion times the buckets of the newest) or, with expansion 0,
 * answers BK_EFULL and stays as it was.
 *
 * Two flavours share the code. BK_CUCKOO_REDISBLOOM is RedisBloom's own
 * filter, bit for bit: 8-bit fingerprints, MurmurHash64A keys, its bucket
 * addressing, kick order, growth and compaction, so the Redis module's
 * CF.* commands answer as RedisBloom's and its data moves both ways (docs/
 * FORMAT.md, "RedisBloom cuckoo filters"). BK_CUCKOO_NATIVE is sized from
 * (n, p) by bk_cuckoo_plan: XXH3 keys, 8-, 16- or 32-bit fingerprints,
 * buckets of 4, so its false-positive rate at capacity stays under p. */
typedef struct bk_cuckoo bk_cuckoo_t;

typedef enum bk_cuckoo_flavour {
    BK_CUCKOO_NATIVE = 0,
    BK_CUCKOO_REDISBLOOM = 1
} bk_cuckoo_flavour_t;

typedef struct bk_cuckoo_options {
    bk_cuckoo_flavour_t flavour;
    uint32_t bucket_size;    /* fingerprints per bucket, 1..255; 0: 2 for
                                RedisBloom, 4 native */
    uint32_t max_iterations; /* kicks before growing, 1..65535; 0: 20 for
                                RedisBloom, 500 native */
    uint32_t expansion;      /* new sub-filter's buckets over the newest's,
                                rounded up to a power of two (1 = same
                                size); 0: never grows (BK_EFULL); set
                                expansion_set to make 0 mean that */
    bool expansion_set;      /* false: 1 for RedisBloom, 2 native */
    uint32_t fingerprint_bits; /* native: 8, 16 or 32; 0: from p */
    uint64_t seed;           /* native: the XXH3 seed */
} bk_cuckoo_options_t;

/* A native filter's geometry for n keys at false-positive rate p:
 * buckets of 4 at most 95% full, the narrowest fingerprint whose rate
 * (2 * 4 / (2^bits - 1)) is at most 0.9 p. BK_EINVAL for n == 0 or p
 * outside (2e-9, 1). */
typedef struct bk_cuckoo_plan {
    uint64_t buckets;
    uint32_t bucket_size;
    uint32_t fingerprint_bits;
    uint64_t bytes;
    double bits_per_key;
    double expected_fpr;
} bk_cuckoo_plan_t;
bk_status_t bk_cuckoo_plan(uint64_t n, double p, bk_cuckoo_plan_t *out);

/* A filter for `capacity` keys. Native: sized by bk_cuckoo_plan(capacity,
 * p) unless opts fix the bucket size or fingerprint width. RedisBloom:
 * capacity / bucket_size buckets rounded up to a power of two, p unused.
 * *out is the caller's (bk_cuckoo_free). BK_EINVAL, BK_ENOMEM. */
bk_status_t bk_cuckoo_create(bk_cuckoo_t **out, uint64_t capacity, double p,
                             const bk_cuckoo_options_t *opts);
void bk_cuckoo_free(bk_cuckoo_t *c);
/* bk_filter_defrag for a cuckoo filter: *c may move; the number of blocks
 * moved (0 for one on a file's mapping). */
size_t bk_cuckoo_defrag(bk_cuckoo_t **c, bk_move_fn move, void *arg);

/* Adds key (again, if it is there: a cuckoo filter counts). BK_OK, or
 * BK_EFULL when no room was found and the filter may not grow (nothing
 * changed), BK_ENOMEM when growing failed (nothing changed). */
bk_status_t bk_cuckoo_add(bk_cuckoo_t *c, const void *key, size_t len);
/* Adds key unless it may be present already (*added says which). */
bk_status_t bk_cuckoo_add_unique(bk_cuckoo_t *c, const void *key, size_t len, bool *added);
/* bk_cuckoo_add (unique false) or bk_cuckoo_add_unique (true) with a
 * bound on the work: a key with no free slot in its buckets relocates
 * others (the kick loop: up to max_iterations swaps, and as many again to
 * undo them when no room is found). Each swap and each undo spends one of
 * *budget. When the loop's worst case (2 x max_iterations) is more than
 * *budget holds, the call changes nothing and returns BK_EBUDGET, so a
 * caller that must not stall (a server running one command of many keys)
 * stops there; the answer for every key it did add is the one
 * bk_cuckoo_add gives. *budget is decreased by what was spent. */
bk_status_t bk_cuckoo_add_within(bk_cuckoo_t *c, const void *key, size_t len, bool unique,
                                 bool *added, uint64_t *budget);
bool bk_cuckoo_contains(const bk_cuckoo_t *c, const void *key, size_t len);
/* Fingerprints of key found (an upper bound of the times it was added
 * and not removed). */
uint64_t bk_cuckoo_count(const bk_cuckoo_t *c, const void *key, size_t len);
/* Removes one fingerprint of key: true if one was there. Removing a key
 * that was never added may remove another key's fingerprint (the filter
 * cannot tell them apart): only remove keys that were added. */
bool bk_cuckoo_remove(bk_cuckoo_t *c, const void *key, size_t len);
/* Moves fingerprints into older sub-filters where they fit and frees the
 * newest sub-filters that empty (RedisBloom's CF.COMPACT). */
void bk_cuckoo_compact(bk_cuckoo_t *c);

/* What a filter is made of (O(1)). */
typedef struct bk_cuckoo_shape {
    bk_cuckoo_flavour_t flavour;
    uint64_t buckets;       /* of the first sub-filter */
    uint32_t bucket_size;
    uint32_t fingerprint_bits;
    uint32_t max_iterations;
    uint32_t expansion;     /* a power of two, or 0 */
    uint32_t filters;       /* sub-filters */
    uint64_t items;         /* fingerprints held */
    uint64_t deletes;       /* removals since the last compaction */
    uint64_t capacity;      /* as created */
    double fpr;             /* as created (native) */
    uint64_t bytes;         /* payload bytes of every sub-filter */
} bk_cuckoo_shape_t;
void bk_cuckoo_shape(const bk_cuckoo_t *c, bk_cuckoo_shape_t *out);

/* RedisBloom's SCANDUMP and RDB carry these fields and the sub-filters'
 * bytes, oldest first: bk_cuckoo_restore builds a RedisBloom-flavour
 * filter of zeroed sub-filters from them (filters sub-filters, sub-filter
 * i with buckets * expansion^i buckets unless `sub_buckets` gives each),
 * and the bytes then come through bk_cuckoo_write. BK_ECORRUPT with *why
 * for fields RedisBloom would not have written. */
typedef struct bk_cuckoo_fields {
    uint64_t buckets, items, deletes;
    uint32_t filters, bucket_size, max_iterations, expansion;
} bk_cuckoo_fields_t;
bk_status_t bk_cuckoo_restore(bk_cuckoo_t **out, const bk_cuckoo_fields_t *f,
                              const uint64_t *sub_buckets, const char **why);
void bk_cuckoo_fields(const bk_cuckoo_t *c, bk_cuckoo_fields_t *out);
/* Buckets of sub-filter i (0 if i is out of range). */
uint64_t bk_cuckoo_sub_buckets(const bk_cuckoo_t *c, uint32_t i);
/* The sub-filters' bytes as one string, oldest first: a view of up to max
 * bytes at offset, never past the end of the sub-filter holding it (*len
 * 0 at the end); and a write that must lie in one sub-filter (BK_EINVAL
 * otherwise, nothing written). */
bk_status_t bk_cuckoo_read(const bk_cuckoo_t *c, uint64_t offset, uint64_t max,
                           const void **bytes, uint64_t *len);
bk_status_t bk_cuckoo_write(bk_cuckoo_t *c, uint64_t offset, const void *bytes, uint64_t len);
uint64_t bk_cuckoo_bytes(const bk_cuckoo_t *c);
/* A cap on the payload bytes of all sub-filters (0: none): an add that
 * would grow the filter past it gets BK_EFULL and changes nothing. */
void bk_cuckoo_set_max_bytes(bk_cuckoo_t *c, uint64_t max_bytes);

/* ---- compact cuckoo filters: 48 bytes and the buckets ----
 *
 * For a program that holds many small filters and pays for every byte of
 * each (the Redis module: a CF key each): a RedisBloom-flavour filter of
 * one sub-filter, held as this struct (the program's memory) and its
 * buckets (the library's). It is used through a view: a bk_cuckoo_t bound
 * to it (bk_cuckoo_bind) that reads and writes the buckets in place at
 * the usual speed; after a call that may have changed it, bk_cuckoo_store
 * writes the counts back. A call that grew the view (a second sub-filter)
 * leaves a filter that no longer fits: bk_cuckoo_detach makes it a filter
 * of its own, which takes the buckets over. */
typedef struct bk_cuckoo_compact {
    uint8_t caller[8]; /* the program's own: never read or written */
    uint64_t items, deletes;
    uint64_t buckets;
    uint8_t *data; /* buckets * bucket_size one-byte fingerprints */
    uint16_t bucket_size, max_iterations, expansion;
    uint8_t mem; /* how the library obtained data */
    uint8_t reserved;
} bk_cuckoo_compact_t;

/* A new, empty compact filter in *out (its caller bytes left as they
 * are): what bk_cuckoo_create then bk_cuckoo_compact_take would give for a
 * RedisBloom-flavour filter of `capacity` (opts->flavour must be
 * BK_CUCKOO_REDISBLOOM), with one allocation, its buckets. BK_EINVAL as
 * bk_cuckoo_create, BK_ENOMEM. */
bk_status_t bk_cuckoo_compact_create(bk_cuckoo_compact_t *out, uint64_t capacity,
                                     const bk_cuckoo_options_t *opts);
/* Makes *c compact into *out (its caller bytes left as they are) and frees
 * the rest of *c (*c set to NULL). BK_EKIND, with *c unchanged, unless it
 * is a RedisBloom-flavour filter of one sub-filter held in memory (not a
 * file's mapping) with fields that fit; BK_EINVAL for NULLs. */
bk_status_t bk_cuckoo_compact_take(bk_cuckoo_t **c, bk_cuckoo_compact_t *out);
/* Binds *view to p: *view NULL or a previous view, which is rebound
 * without allocating when it can be; otherwise it is freed and a new one
 * made. *view is the caller's (bk_cuckoo_free, which leaves p's buckets
 * alone) and borrows p's buckets: it must not be used once they are freed
 * or moved, except to bind it again. Its size cap is reset to none.
 * BK_EINVAL for a p without buckets, BK_ENOMEM. */
bk_status_t bk_cuckoo_bind(bk_cuckoo_t **view, const bk_cuckoo_compact_t *p);
/* Writes view's counts into p; BK_EINVAL if view is not bound to p or has
 * grown past one sub-filter (bk_cuckoo_detach). */
bk_status_t bk_cuckoo_store(const bk_cuckoo_t *view, bk_cuckoo_compact_t *p);
/* Makes the view bound to p a filter of its own: *out takes it, with p's
 * buckets (p->data set to NULL: p holds nothing to free), and *view is set
 * to NULL. BK_EINVAL if *view is not bound to p. */
bk_status_t bk_cuckoo_detach(bk_cuckoo_t **view, bk_cuckoo_compact_t *p, bk_cuckoo_t **out);
/* Bytes of p's buckets. */
uint64_t bk_cuckoo_compact_bytes(const bk_cuckoo_compact_t *p);
/* A copy of p's buckets for *out (a copy of p's other fields and caller
 * bytes): BK_ENOMEM, with out->data NULL, when they cannot be allocated. */
bk_status_t bk_cuckoo_compact_copy(const bk_cuckoo_compact_t *p, bk_cuckoo_compact_t *out);
/* Frees p's buckets (p->data set to NULL); p itself is the program's. */
void bk_cuckoo_compact_free(bk_cuckoo_compact_t *p);
/* bk_filter_defrag for p's buckets: the number of blocks moved (0 or 1). */
size_t bk_cuckoo_compact_defrag(bk_cuckoo_compact_t *p, bk_move_fn move, void *arg);

/* ------------------------------------------------------------------------ */
/* Static filters                                                            */
/* ------------------------------------------------------------------------ */

/*
 * A static filter (kinds BK_KIND_FUSE8, BK_KIND_FUSE16: binary fuse
 * filters) holds a key set given whole, in about 9.0 or 18.0 bits a key
 * at rates 2^-8 and 2^-16: a quarter less than a Bloom filter at the same
 * rate. It is built once (bk_filter_build, or a bk_builder_t fed key by
 * key) and then answers bk_filter_contains, _contains_batch, _info, and
 * is saved, loaded and mapped as every filter is. Adds, removes and
 * clear return BK_ESTATIC: it holds exactly the keys it was built from,
 * so a changed set is built again. Zero false negatives; absent keys pass
 * with probability 2^-8 or 2^-16.
 *
 * Large sets are built in parts (the key hashes split by their top bits,
 * each part a binary fuse filter of its own), so a build's memory can be
 * capped (bk_builder_set_memory): past the cap, key hashes (8 bytes a key)
 * go to unlinked temporary files and each part is built from its own.
 */

/* The static kind for an error rate: BK_KIND_FUSE8 when fpr >= 1.05 *
 * 2^-8 (a margin, so that a measured rate stays below fpr), BK_KIND_FUSE16
 * when fpr >= 1.05 * 2^-16, else BK_KIND_DEFAULT (no static kind reaches
 * it: use a Bloom kind). */
bk_kind_t bk_static_kind_for(double fpr);

/* What a static filter of n keys at rate p takes (bk_static_plan). */
typedef struct bk_static_plan {
    bk_kind_t kind;      /* BK_KIND_FUSE8 or BK_KIND_FUSE16 */
    uint64_t cells;      /* fingerprints */
    uint64_t bytes;
    double bits_per_key;
    double expected_fpr; /* 2^-8 or 2^-16, whatever the fill */
    uint32_t lines;      /* 64-byte lines a lookup reads (3: one a segment) */
} bk_static_plan_t;

/* Sizes a static filter built in one part from n keys: kind as
 * bk_builder_create takes it (BK_KIND_DEFAULT: bk_static_kind_for(p)).
 * BK_EINVAL for a rate no static kind reaches or a kind that is not
 * static. A build under a memory cap in parts takes the same to within
 * a fraction of a percent. */
bk_status_t bk_static_plan(bk_kind_t kind, uint64_t n, double p, bk_static_plan_t *out);

typedef struct bk_builder bk_builder_t;

/* A builder of a static filter. opts: kind (BK_KIND_FUSE8, BK_KIND_FUSE16,
 * or BK_KIND_DEFAULT for bk_static_kind_for(fpr)), hash (the default or
 * BK_HASH_XXH3), seed; other fields are ignored. fpr 0 with a static kind:
 * the kind's own rate. BK_EINVAL: a kind that is not static, a rate below
 * the kind's (or below 2^-16 with no kind given), another hash. The caller
 * owns *out and frees it with bk_builder_free. */
bk_status_t bk_builder_create(bk_builder_t **out, double fpr, const bk_options_t *opts);
/* Caps the builder's memory at `bytes` (0: no cap; at least 1 MiB). Key
 * hashes beyond a part's worth (about bytes / 48 keys) are spilled to
 * unlinked files in `tmpdir` (NULL: $TMPDIR, else /tmp), which vanish on
 * any exit. Call before the first add: BK_EINVAL after it. With a cap,
 * the directory is checked now: BK_EIO with errno (ENOENT, ENOTDIR,
 * EACCES, ...) when it is no directory the builder can write in. */
bk_status_t bk_builder_set_memory(bk_builder_t *b, uint64_t bytes, const char *tmpdir);
/* The directory the builder spills to (owned by the builder or the
 * environment; valid while both are unchanged). */
const char *bk_builder_tmpdir(const bk_builder_t *b);
/* Adds keys to the set. A key given twice is held once. BK_ENOMEM;
 * BK_EIO / BK_ENOSPC from a spill file (the builder is then unusable:
 * free it). */
bk_status_t bk_builder_add(bk_builder_t *b, const void *key, size_t len);
bk_status_t bk_builder_add_batch(bk_builder_t *b, const bk_key_t *keys, size_t n);
/* Keys given so far (repeats counted). */
uint64_t bk_builder_count(const bk_builder_t *b);
/* Builds the filter of every key added; the caller owns *out. Once per
 * builder (BK_EINVAL after). BK_ENOMEM, BK_EIO, BK_ENOSPC. */
bk_status_t bk_builder_finish(bk_builder_t *b, bk_filter_t **out);
void bk_builder_free(bk_builder_t *b);

/* A static filter of n keys in one call, built in memory (about 48 bytes
 * a key while it is built): bk_builder_create, _add_batch, _finish. */
bk_status_t bk_filter_build(bk_filter_t **out, const bk_key_t *keys, size_t n, double fpr,
                            const bk_options_t *opts);

/* ------------------------------------------------------------------------ */
/* Bitmaps over integers                                                     */
/* ------------------------------------------------------------------------ */

/* A dense 1-bit map over [0, n): one bit per integer. Maps of 64 MiB and
 * more are address space backed only where values are set, and keep a
 * record of the 4 KiB pages their updates touched: count, foreach, next,
 * or and and (and the bitmap2 calls, but foreach of state 0) read only
 * those pages, so they cost what the values touched, not n. */
typedef struct bk_bitmap bk_bitmap_t;

/* *out owns a zeroed map over [0, n). BK_EINVAL for n == 0 or n > 2^48,
 * BK_ENOMEM. */
bk_status_t bk_bitmap_create(bk_bitmap_t **out, uint64_t n);
void bk_bitmap_free(bk_bitmap_t *b);
uint64_t bk_bitmap_size(const bk_bitmap_t *b); /* n */
/* Sets bit v; returns true if it was clear. Cannot fail: v >= n is a
 * no-op that returns false (check the range with bk_bitmap_size() first;
 * the tool reports such values). */
bool bk_bitmap_set(bk_bitmap_t *b, uint64_t v);
/* Sets the n bits v[0..n-1] (v non-NULL when n > 0), as n calls of
 * bk_bitmap_set would, and returns how many of them were clear (a value
 * repeated in v counts once). Faster on large maps: the words are
 * requested ahead of their update, so their cache misses overlap. Values
 * >= the map's size are skipped, as bk_bitmap_set skips them. */
uint64_t bk_bitmap_set_batch(bk_bitmap_t *b, const uint64_t *v, size_t n);
/* As bk_bitmap_set_batch, and safe while other threads make this call (or
 * bk_bitmap_test) on the same map: words are updated with atomic ORs, so
 * the bits set and the counts returned are exact however the threads
 * interleave (summed over the threads, the fresh counts equal the distinct
 * values). Costs a locked instruction per new bit; a duplicate costs a
 * plain load. */
uint64_t bk_bitmap_set_batch_shared(bk_bitmap_t *b, const uint64_t *v, size_t n);
bool bk_bitmap_test(const bk_bitmap_t *b, uint64_t v);
uint64_t bk_bitmap_count(const bk_bitmap_t *b); /* set bits (popcount) */
/* Calls fn(v, ctx) for each set bit in increasing order; stops early and
 * returns false if fn returns false. */
bool bk_bitmap_foreach(const bk_bitmap_t *b, bool (*fn)(uint64_t v, void *ctx), void *ctx);
/* Finds the first set bit >= from; false if none. */
bool bk_bitmap_next(const bk_bitmap_t *b, uint64_t from, uint64_t *out);
/* dst |= src / dst &= src; BK_EINCOMPAT if sizes differ. */
bk_status_t bk_bitmap_or(bk_bitmap_t *dst, const bk_bitmap_t *src);
bk_status_t bk_bitmap_and(bk_bitmap_t *dst, const bk_bitmap_t *src);
void bk_bitmap_clear(bk_bitmap_t *b);

/* A dense 2-bit map over [0, n): cells 0 (never seen), 1 (seen once),
 * 2 (seen twice or more; saturates). */
typedef struct bk_bitmap2 bk_bitmap2_t;

bk_status_t bk_bitmap2_create(bk_bitmap2_t **out, uint64_t n);
void bk_bitmap2_free(bk_bitmap2_t *b);
uint64_t bk_bitmap2_size(const bk_bitmap2_t *b);
/* Records one sighting of v; returns the new state. Cannot fail: v >= n is
 * a no-op that returns 0 (check with bk_bitmap2_size()). */
unsigned bk_bitmap2_add(bk_bitmap2_t *b, uint64_t v);
/* Records the n sightings v[0..n-1] (v non-NULL when n > 0), as n calls of
 * bk_bitmap2_add would, and returns how many of them were first sightings
 * (state 0 -> 1). Words are requested ahead, as in bk_bitmap_set_batch;
 * values >= the map's size are skipped. */
uint64_t bk_bitmap2_add_batch(bk_bitmap2_t *b, const uint64_t *v, size_t n);
/* As bk_bitmap2_add_batch, and safe while other threads make this call on
 * the same map: each cell changes by compare-and-swap, so states and first
 * sightings are exact however the threads interleave. */
uint64_t bk_bitmap2_add_batch_shared(bk_bitmap2_t *b, const uint64_t *v, size_t n);
unsigned bk_bitmap2_state(const bk_bitmap2_t *b, uint64_t v);
/* counts[0..2] receive the number of values in each state. */
void bk_bitmap2_counts(const bk_bitmap2_t *b, uint64_t counts[3]);
/* Calls fn for each value in `state` (0, 1 or 2) in increasing order. */
bool bk_bitmap2_foreach(const bk_bitmap2_t *b, unsigned state,
                        bool (*fn)(uint64_t v, void *ctx), void *ctx);
void bk_bitmap2_clear(bk_bitmap2_t *b);

/* Bitmap persistence: same container format as filters (docs/FORMAT.md). */
uint64_t bk_bitmap_serialized_size(const bk_bitmap_t *b);
bk_status_t bk_bitmap_serialize(const bk_bitmap_t *b, void *buf, size_t cap, size_t *written);
bk_status_t bk_bitmap_deserialize(bk_bitmap_t **out, const void *buf, size_t len,
                                  const char **why);
bk_status_t bk_bitmap_save(const bk_bitmap_t *b, const char *path);
bk_status_t bk_bitmap_load(bk_bitmap_t **out, const char *path, const char **why);
uint64_t bk_bitmap2_serialized_size(const bk_bitmap2_t *b);
bk_status_t bk_bitmap2_serialize(const bk_bitmap2_t *b, void *buf, size_t cap, size_t *written);
bk_status_t bk_bitmap2_deserialize(bk_bitmap2_t **out, const void *buf, size_t len,
                                   const char **why);
bk_status_t bk_bitmap2_save(const bk_bitmap2_t *b, const char *path);
bk_status_t bk_bitmap2_load(bk_bitmap2_t **out, const char *path, const char **why);

/* Large bitmap files. A bitmap of 1 MiB or more (8.4 million values, or
 * 4.2 million for bitmap2) is saved paged, as a large filter is (a
 * checksum per 4 KiB page, format version 3, docs/FORMAT.md), and loading
 * one reads only its header and group checksums: each page is read and
 * checked the first time a value on it is set, tested or counted, so a
 * run that touches a thousand values of a 2 GB bitmap reads a thousand
 * pages. Passes over the whole map (count, counts, foreach, next, or,
 * and, clear, serialize) read and check every page first. A save of
 * such a bitmap to the file it was loaded from writes only the pages that
 * changed, in place through a journal (as bk_checkpoint_save does: a
 * process killed at any instant leaves the old file or the new one); to
 * any other path it writes the whole bitmap. Older files (version 1) load
 * whole, as before, and their next save writes them paged.
 *
 * A page that fails its check is never trusted: every value on it reads
 * as set (bitmap2: state 2), never as unset, and the bitmap is damaged:
 * bk_bitmap_damage() returns BK_ECORRUPT with *why naming the file
 * offset; saves and serialization refuse it (BK_ECORRUPT, nothing
 * written). A program that prints answers should ask bk_bitmap_damage()
 * before it does. BK_OK for every bitmap not read from a paged file.
 *
 * As for a filter, the file must not be changed in place by another
 * writer (another process's save to it) while the bitmap is loaded: a
 * page read after that fails its check as a damaged one would, and *why
 * says the file was written since it was opened. Load it again. */
bk_status_t bk_bitmap_damage(const bk_bitmap_t *b, const char **why);
bk_status_t bk_bitmap2_damage(const bk_bitmap2_t *b, const char **why);
/* Reads and checks every page not yet checked (the whole file):
 * BK_ECORRUPT with the offset of the first damaged one. BK_OK for a
 * bitmap not read from a paged file. */
bk_status_t bk_bitmap_verify(const bk_bitmap_t *b, const char **why);
bk_status_t bk_bitmap2_verify(const bk_bitmap2_t *b, const char **why);
/* Pages of its paged file the bitmap has checked so far, and in all; 0
 * and 0 for a bitmap not read from a paged file. Either pointer may be
 * NULL. */
void bk_bitmap_pages(const bk_bitmap_t *b, uint64_t *checked, uint64_t *total);
void bk_bitmap2_pages(const bk_bitmap2_t *b, uint64_t *checked, uint64_t *total);

/* Reads the kind stored in a serialized buffer's header without loading it
 * (BK_ECORRUPT if the header is not a bloomkit header). */
bk_status_t bk_peek_kind(const void *buf, size_t len, bk_kind_t *out);

#ifdef __cplusplus
}
#endif

#endif /* BLOOMKIT_H */
