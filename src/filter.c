/*
 * The filter handle: creation, destruction and the per-kind dispatch behind
 * the public bk_filter_* calls, plus the operations that treat the payload
 * as a whole (clear, union, clone, info) and the batch calls.
 *
 * Batches exist for large filters: one lookup there is one cache miss
 * (~80-100 ns), but the memory system can serve ten or more misses at once.
 * Hashing keys ahead of the probe and prefetching their target lines turns
 * a chain of dependent misses into overlapping ones.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* How far ahead of the probe the batch calls hash and prefetch: key
 * i + BATCH_AHEAD's line is requested while key i is probed, so up to this
 * many misses are in flight at once. Memory latency on a loaded server can
 * reach several hundred ns; on a 272 MB blocked filter 32 measured about
 * 10% faster than 16, and 64 no faster than 32. A power of two (the ring
 * is indexed by mask). Shared with blocked.c's own batch loop. */
#define BATCH_AHEAD BKI_BATCH_AHEAD

static inline uint64_t load_items(const bk_filter_t *f)
{
    return atomic_load_explicit(&f->items, memory_order_relaxed);
}

/* Single-writer increment: a plain load and store, no locked instruction. */
static inline void bump_items(bk_filter_t *f)
{
    atomic_store_explicit(&f->items, load_items(f) + 1, memory_order_relaxed);
}

uint64_t bki_round_cells(bk_kind_t kind, uint64_t cells)
{
    uint64_t unit;
    switch (kind) {
    case BK_KIND_BLOCKED: unit = BKI_LINE_BITS; break;
    case BK_KIND_COUNTING: unit = BKI_LINE_COUNTERS; break;
    case BK_KIND_CLASSIC: unit = 64; break;
    default: return 0;
    }
    if (cells == 0 || cells > UINT64_MAX - unit)
        return 0;
    cells = (cells + unit - 1) / unit * unit;
    if (bki_payload_bytes(kind, cells) > BKI_MAX_PAYLOAD_BYTES)
        return 0;
    return cells;
}

uint64_t bki_payload_bytes(bk_kind_t kind, uint64_t cells)
{
    return kind == BK_KIND_COUNTING ? cells / 2 : cells / 8;
}

static bool valid_hash(bk_hash_id_t id)
{
    return (unsigned)id >= 1 && (unsigned)id <= BK_HASH_COUNT;
}

bk_status_t bki_filter_new(bk_filter_t **out, bk_kind_t kind, uint64_t cells, uint32_t k,
                           bk_hash_id_t hash, uint64_t seed)
{
    uint32_t max_k = kind == BK_KIND_CLASSIC ? BKI_CLASSIC_MAX_K : BKI_BLOCKED_MAX_K;
    if (kind != BK_KIND_BLOCKED && kind != BK_KIND_CLASSIC && kind != BK_KIND_COUNTING)
        return BK_EINVAL;
    if (k == 0 || k > max_k || !valid_hash(hash) || bki_round_cells(kind, cells) != cells)
        return BK_EINVAL;
    bk_filter_t *f = bki_calloc(1, sizeof *f);
    if (!f)
        return BK_ENOMEM;
    f->kind = kind;
    f->hash = hash;
    f->seed = seed;
    f->cells = cells;
    f->k = k;
    f->lines = kind == BK_KIND_BLOCKED    ? cells / BKI_LINE_BITS
               : kind == BK_KIND_COUNTING ? cells / BKI_LINE_COUNTERS
                                          : 0;
    f->nbytes = bki_payload_bytes(kind, cells);
    f->map_fd = -1;
    atomic_init(&f->items, 0);
    f->data = bki_payload_alloc(f->nbytes, &f->mem);
    if (!f->data) {
        bki_free(f);
        return BK_ENOMEM;
    }
    *out = f;
    return BK_OK;
}

/* Fills *o from opts (NULL = defaults) and clears *out; every create call
 * starts here so defaults and validation live in one place. */
static bk_status_t resolve_options(bk_filter_t **out, const bk_options_t *opts, bk_options_t *o)
{
    static const bk_options_t defaults = {0};
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    *o = opts ? *opts : defaults;
    if (o->kind == BK_KIND_DEFAULT)
        o->kind = BK_KIND_BLOCKED;
    if (o->hash == BK_HASH_DEFAULT)
        o->hash = BK_HASH_XXH3;
    if (!valid_hash(o->hash))
        return BK_EINVAL;
    if (!o->seed_set) {
        o->seed = bk_random_seed();
        o->seed_set = true;
    }
    return BK_OK;
}

bk_status_t bk_filter_create(bk_filter_t **out, uint64_t capacity, double fpr,
                             const bk_options_t *opts)
{
    bk_options_t o;
    bk_status_t st = resolve_options(out, opts, &o);
    if (st != BK_OK)
        return st;
    switch (o.kind) {
    case BK_KIND_BLOCKED:
    case BK_KIND_CLASSIC:
    case BK_KIND_COUNTING:
        break;
    case BK_KIND_SCALABLE:
        return bki_scalable_create(out, capacity, fpr, &o, o.hash, o.seed);
    default:
        return BK_EINVAL;
    }
    bk_plan_t plan;
    st = bk_plan(o.kind, capacity, fpr, &plan);
    if (st != BK_OK)
        return st;
    bk_filter_t *f;
    st = bki_filter_new(&f, o.kind, plan.cells, plan.k, o.hash, o.seed);
    if (st != BK_OK)
        return st;
    f->capacity = capacity;
    f->fpr = fpr;
    *out = f;
    return BK_OK;
}

bk_status_t bk_filter_create_exact(bk_filter_t **out, bk_kind_t kind, uint64_t cells,
                                   uint32_t k, const bk_options_t *opts)
{
    bk_options_t o;
    bk_status_t st = resolve_options(out, opts, &o);
    if (st != BK_OK)
        return st;
    if (kind == BK_KIND_DEFAULT)
        kind = BK_KIND_BLOCKED;
    if (kind != BK_KIND_BLOCKED && kind != BK_KIND_CLASSIC && kind != BK_KIND_COUNTING)
        return BK_EINVAL;
    uint64_t rounded = bki_round_cells(kind, cells);
    if (rounded == 0)
        return cells == 0 ? BK_EINVAL : BK_ENOMEM;
    return bki_filter_new(out, kind, rounded, k, o.hash, o.seed);
}

void bk_filter_free(bk_filter_t *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->nsubs; i++)
        bk_filter_free(f->subs[i]);
    bki_free(f->subs);
    bki_payload_free(f->data, f->nbytes, f->mem);
    if (f->map_base)
        munmap(f->map_base, (size_t)f->map_len);
    if (f->map_fd >= 0)
        close(f->map_fd);
    bki_free(f);
}

bk_hash_t bk_filter_hash(const bk_filter_t *f, const void *key, size_t len)
{
    return bk_hash_key(f->hash, f->seed, key, len);
}

bk_status_t bk_filter_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new)
{
    bool added;
    if (BKI_UNLIKELY(f->readonly))
        return BK_EREADONLY;
    switch (f->kind) {
    case BK_KIND_BLOCKED: added = bki_blocked_add(f, h); break;
    case BK_KIND_CLASSIC: added = bki_classic_add(f, h); break;
    case BK_KIND_COUNTING: added = bki_counting_add(f, h); break;
    case BK_KIND_SCALABLE: return bki_scalable_add(f, h, was_new);
    default: return BK_EKIND;
    }
    if (added)
        bump_items(f);
    if (was_new)
        *was_new = added;
    return BK_OK;
}

bool bk_filter_contains_hash(const bk_filter_t *f, bk_hash_t h)
{
    /* The default kind first, ahead of the switch: one compare. */
    if (BKI_LIKELY(f->kind == BK_KIND_BLOCKED))
        return bki_blocked_contains(f, h);
    switch (f->kind) {
    case BK_KIND_CLASSIC: return bki_classic_contains(f, h);
    case BK_KIND_COUNTING: return bki_counting_contains(f, h);
    case BK_KIND_SCALABLE: return bki_scalable_contains(f, h);
    default: return false;
    }
}

bk_status_t bk_filter_add(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    return bk_filter_add_hash(f, bk_filter_hash(f, key, len), was_new);
}

bool bk_filter_contains(const bk_filter_t *f, const void *key, size_t len)
{
    return bk_filter_contains_hash(f, bk_filter_hash(f, key, len));
}

bk_status_t bk_filter_add_atomic(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    bool added;
    if (f->readonly)
        return BK_EREADONLY;
    bk_hash_t h = bk_filter_hash(f, key, len);
    switch (f->kind) {
    case BK_KIND_BLOCKED: added = bki_blocked_add_atomic(f, h); break;
    case BK_KIND_CLASSIC: added = bki_classic_add_atomic(f, h); break;
    default: return BK_EKIND;
    }
    if (added)
        atomic_fetch_add_explicit(&f->items, 1, memory_order_relaxed);
    if (was_new)
        *was_new = added;
    return BK_OK;
}

/* Starts the memory loads a probe of h will need. */
static inline void prefetch_key(const bk_filter_t *f, bk_hash_t h)
{
    switch (f->kind) {
    case BK_KIND_BLOCKED:
    case BK_KIND_COUNTING: /* same line addressing as blocked */
        __builtin_prefetch(bki_blocked_line(f, h));
        break;
    case BK_KIND_CLASSIC:
        bki_classic_prefetch(f, h);
        break;
    default:
        break;
    }
}

/* Hashes a key and starts loading the memory its probe will touch. */
static inline bk_hash_t hash_prefetch(const bk_filter_t *f, const bk_key_t *key)
{
    bk_hash_t h = bk_filter_hash(f, key->ptr, key->len);
    prefetch_key(f, h);
    return h;
}

/* Both batch calls run a software pipeline over a ring of BATCH_AHEAD
 * hashes: the ring is primed with the first keys, then each step takes key
 * i's hash out of its slot, puts key i + BATCH_AHEAD's hash (with its line
 * requested) in, and probes key i. Unlike hashing and probing fixed groups,
 * the memory system never drains at a group boundary. Probes still run in
 * array order, so the results are those of the one-at-a-time calls.
 * A payload small enough to stay in the caches gains nothing from this and
 * would pay for computing each line twice: it is probed directly. Blocked
 * filters run the same pipeline in blocked.c, specialised (adds and
 * lookups). */
#define BATCH_PIPELINE_MIN_BYTES BKI_BATCH_PIPELINE_MIN_BYTES

static inline bool ring_prime(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                              bk_hash_t *ring)
{
    if (f->nbytes < BATCH_PIPELINE_MIN_BYTES)
        return false;
    size_t ahead = n < BATCH_AHEAD ? n : BATCH_AHEAD;
    for (size_t i = 0; i < ahead; i++)
        ring[i] = hash_prefetch(f, &keys[i]);
    return true;
}

static inline bk_hash_t ring_step(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                  bk_hash_t *ring, size_t i, bool pipelined)
{
    if (!pipelined)
        return bk_filter_hash(f, keys[i].ptr, keys[i].len);
    bk_hash_t h = ring[i & (BATCH_AHEAD - 1)];
    if (i + BATCH_AHEAD < n)
        ring[i & (BATCH_AHEAD - 1)] = hash_prefetch(f, &keys[i + BATCH_AHEAD]);
    return h;
}

bk_status_t bk_filter_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new,
                                uint64_t *n_new)
{
    bk_hash_t ring[BATCH_AHEAD];
    uint64_t fresh = 0;
    if (n_new)
        *n_new = 0;
    if (f->readonly)
        return BK_EREADONLY;
    if (n && !keys)
        return BK_EINVAL;
    if (f->kind == BK_KIND_BLOCKED) {
        fresh = bki_blocked_add_batch(f, keys, n, was_new);
        atomic_store_explicit(&f->items, load_items(f) + fresh, memory_order_relaxed);
        if (n_new)
            *n_new = fresh;
        return BK_OK;
    }
    bool pipelined = ring_prime(f, keys, n, ring);
    for (size_t i = 0; i < n; i++) {
        bool added;
        bk_status_t st = bk_filter_add_hash(f, ring_step(f, keys, n, ring, i, pipelined), &added);
        if (st != BK_OK) {
            if (n_new)
                *n_new = fresh;
            return st;
        }
        fresh += added;
        if (was_new)
            was_new[i] = added;
    }
    if (n_new)
        *n_new = fresh;
    return BK_OK;
}

size_t bk_filter_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out)
{
    bk_hash_t ring[BATCH_AHEAD];
    size_t hits = 0;
    if (n && (!keys || !out))
        return 0;
    /* The default kind has its own loop, compiled for the CPU's probe. */
    if (f->kind == BK_KIND_BLOCKED)
        return bki_blocked_contains_batch(f, keys, n, out);
    bool pipelined = ring_prime(f, keys, n, ring);
    for (size_t i = 0; i < n; i++) {
        bool hit = bk_filter_contains_hash(f, ring_step(f, keys, n, ring, i, pipelined));
        out[i] = hit;
        hits += hit;
    }
    return hits;
}

bk_status_t bk_filter_remove(bk_filter_t *f, const void *key, size_t len)
{
    if (f->kind != BK_KIND_COUNTING)
        return BK_EKIND;
    if (f->readonly)
        return BK_EREADONLY;
    bk_hash_t h = bk_filter_hash(f, key, len);
    bk_status_t st = bki_counting_remove(f, h);
    /* The inverse of add's "new" (a counter went 0 -> 1): the key is gone
     * when a counter went 1 -> 0. */
    if (st == BK_OK && !bki_counting_contains(f, h) && load_items(f) > 0)
        atomic_store_explicit(&f->items, load_items(f) - 1, memory_order_relaxed);
    return st;
}

unsigned bk_filter_count(const bk_filter_t *f, const void *key, size_t len)
{
    if (f->kind == BK_KIND_COUNTING)
        return bki_counting_count(f, bk_filter_hash(f, key, len));
    return bk_filter_contains(f, key, len) ? 1u : 0u;
}

bk_status_t bk_filter_clear(bk_filter_t *f)
{
    if (f->readonly)
        return BK_EREADONLY;
    if (f->kind == BK_KIND_SCALABLE)
        return bki_scalable_clear(f);
    if (f->data)
        memset(f->data, 0, (size_t)f->nbytes);
    atomic_store_explicit(&f->items, 0, memory_order_relaxed);
    return BK_OK;
}

uint64_t bki_cells_set(const bk_filter_t *f)
{
    uint64_t set = 0;
    const uint8_t *p = f->data;
    if (f->kind == BK_KIND_COUNTING) {
        /* A counter is set when its nibble is non-zero: fold each nibble's
         * four bits into its low bit, 16 counters per word (payloads are
         * whole 64-byte lines). */
        for (uint64_t i = 0; i + 8 <= f->nbytes; i += 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            w = (w | w >> 1 | w >> 2 | w >> 3) & UINT64_C(0x1111111111111111);
            set += (uint64_t)__builtin_popcountll(w);
        }
        return set;
    }
    for (uint64_t i = 0; i + 8 <= f->nbytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        set += (uint64_t)__builtin_popcountll(w);
    }
    return set;
}

static bool same_shape(const bk_filter_t *a, const bk_filter_t *b)
{
    return a->kind == b->kind && a->cells == b->cells && a->k == b->k && a->hash == b->hash &&
           a->seed == b->seed;
}

/* -(m/k) ln(1 - X/m): the number of distinct keys that most likely set X of
 * m cells with k probes each (Swamidass & Baldi, 2007). */
static double estimate_items(uint64_t m, uint32_t k, uint64_t set)
{
    if (m == 0 || k == 0)
        return 0.0;
    if (set >= m)
        return INFINITY;
    return -((double)m / (double)k) * log1p(-(double)set / (double)m);
}

bk_status_t bk_filter_union(bk_filter_t *dst, const bk_filter_t *src)
{
    if (dst->readonly)
        return BK_EREADONLY;
    if (dst->kind == BK_KIND_SCALABLE)
        return src->kind == BK_KIND_SCALABLE ? bki_scalable_union(dst, src) : BK_EINCOMPAT;
    if (!same_shape(dst, src))
        return BK_EINCOMPAT;
    if (dst->kind == BK_KIND_COUNTING)
        bki_counting_union(dst, src);
    else if (dst->kind == BK_KIND_BLOCKED || dst->kind == BK_KIND_CLASSIC)
        for (uint64_t i = 0; i < dst->nbytes; i++)
            dst->data[i] |= src->data[i];
    else
        return BK_EKIND;
    double est = estimate_items(dst->cells, dst->k, bki_cells_set(dst));
    uint64_t items = isfinite(est) ? (uint64_t)llround(est) : dst->cells;
    atomic_store_explicit(&dst->items, items, memory_order_relaxed);
    return BK_OK;
}

bk_status_t bk_filter_clone(bk_filter_t **out, const bk_filter_t *f)
{
    bk_filter_t *c;
    if (f->kind == BK_KIND_SCALABLE)
        return bki_scalable_clone(out, f);
    if (f->kind != BK_KIND_BLOCKED && f->kind != BK_KIND_CLASSIC && f->kind != BK_KIND_COUNTING)
        return BK_EKIND;
    bk_status_t st = bki_filter_new(&c, f->kind, f->cells, f->k, f->hash, f->seed);
    if (st != BK_OK)
        return st;
    memcpy(c->data, f->data, (size_t)f->nbytes);
    c->capacity = f->capacity;
    c->fpr = f->fpr;
    atomic_init(&c->items, load_items(f));
    *out = c;
    return BK_OK;
}

void bk_filter_info(const bk_filter_t *f, bk_filter_info_t *out)
{
    if (f->kind == BK_KIND_SCALABLE) {
        bki_scalable_info(f, out);
        return;
    }
    memset(out, 0, sizeof *out);
    out->kind = f->kind;
    out->sub_kind = f->kind;
    out->hash = f->hash;
    out->seed = f->seed;
    out->capacity = f->capacity;
    out->fpr_target = f->fpr;
    out->cells = f->cells;
    out->k = f->k;
    out->bytes = f->nbytes;
    out->items = load_items(f);
    out->cells_set = bki_cells_set(f);
    out->fill = f->cells ? (double)out->cells_set / (double)f->cells : 0.0;
    out->estimated_items = estimate_items(f->cells, f->k, out->cells_set);
    /* The FPR a fresh key sees now: the model at the estimated item count,
     * which for lined kinds also accounts for unevenly filled lines. */
    if (isfinite(out->estimated_items))
        out->expected_fpr =
            bk_fpr_expected(f->kind, f->cells, (uint64_t)llround(out->estimated_items), f->k);
    else
        out->expected_fpr = 1.0;
    out->filters = 1;
    out->mapped = f->map_base != NULL;
    out->readonly = f->readonly;
}

uint64_t bk_filter_items(const bk_filter_t *f)
{
    return load_items(f);
}

bk_kind_t bk_filter_kind(const bk_filter_t *f)
{
    return f->kind;
}
