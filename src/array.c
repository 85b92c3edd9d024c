/*
 * Single-array filters (blocked, classic, counting): creation, each
 * operation dispatched to its kind's operations (kinds.c), the batch calls, and
 * the operations that treat the payload as a whole (clear, union, clone,
 * info).
 *
 * DESIGN: adding a single-array kind. A kind is
 *   1. one file on rung 2 (like bloom.c) with its add / contains / prefetch
 *      (and, if it has them, atomic add, remove, counter, union) over the
 *      payload, declared in internal.h;
 *   2. its row in kinds.c, with its geometry: its unit, bits per cell, cells per
 *      line and largest k (sizing, allocation and the file format's checks
 *      all read it);
 *   3. its operations (a bki_kind_ops_t in its file), which its row in
 *      kinds.c points to.
 * Then a kind value in bloomkit.h and its row in kinds.c (its name, and
 * whether it may be made alone, be a chain's sub-kind, stand in a file). plan.c sizes
 * it from its layout row (the line model when it has lines, the classic
 * model otherwise) and needs a case only for an FPR that follows neither.
 * Nothing above this file changes: the scalable chain, the public handle
 * and the file format reach a kind only through bki_array_* and the layout
 * table. precise.c is the most recent kind added this way.
 */
#include "batch.h"
#include "keyhash.h"

#include <math.h>
#include <string.h>

/* Each single-array kind's operations, defined in its own file (rung 2,
 * below this one: kinds.c, on rung 0, holds what they are, not what they
 * do). */
static const bki_kind_ops_t *const kind_ops[] = {
    [BK_KIND_BLOCKED] = &bki_blocked_ops,       [BK_KIND_CLASSIC] = &bki_classic_ops,
    [BK_KIND_COUNTING] = &bki_counting_ops,     [BK_KIND_PRECISE] = &bki_precise_ops,
    [BK_KIND_BLOCKED2] = &bki_blocked2_ops,     [BK_KIND_SPLIT] = &bki_split_ops,
    [BK_KIND_REDISBLOOM] = &bki_redisbloom_ops,
};

const bki_kind_ops_t *bki_kind_ops(bk_kind_t kind)
{
    return (unsigned)kind < sizeof kind_ops / sizeof kind_ops[0] ? kind_ops[kind] : NULL;
}

/* The one-key calls of a kind without its own: hash, then probe through
 * the kind's table (a paged file's pages are checked by the calls
 * pages.c binds over these). */
static bk_status_t array_add_key(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    if (BKI_UNLIKELY(f->readonly)) {
        if (was_new)
            *was_new = false;
        return BK_EREADONLY;
    }
    bool added = bki_array_add(f, bki_key_hash(f->hash, f->seed, key, len));
    if (was_new)
        *was_new = added;
    return BK_OK;
}

static bool array_contains_key(const bk_filter_t *f, const void *key, size_t len)
{
    return bki_array_contains(f, bki_key_hash(f->hash, f->seed, key, len));
}

void bki_array_bind(bk_filter_t *f)
{
    const bki_kind_ops_t *o = bki_kind_ops(f->kind);
    if (!o)
        return; /* composites bind their own calls when they are made */
    f->add_key = array_add_key;
    f->contains_key = array_contains_key;
    f->contains_hash = bki_array_contains;
    f->u64 = NULL; /* the kinds that have their own set them in o->bind */
    f->key8_secret = bki_key8_secret(f->hash, f->seed);
    if (o->bind)
        o->bind(f);
    if (f->readonly)
        f->add_key = array_add_key; /* which refuses */
}

/* Only called on filters bki_array_new built, whose kind has a row. */
static inline const bki_kind_ops_t *ops_of(const bk_filter_t *f)
{
    return bki_kind_ops(f->kind);
}

static bool valid_hash(bk_hash_id_t id)
{
    return (unsigned)id >= 1 && (unsigned)id <= BK_HASH_COUNT;
}

/* Payloads up to this size share one allocation with their struct, the
 * payload first and the struct's probe fields right after it: the
 * sub-filters of a deep chain are mostly tiny, and a lookup that visits
 * each then touches two adjacent cache lines instead of two anywhere. */
#define INLINE_PAYLOAD_MAX BKI_INLINE_PAYLOAD_MAX
#define STRUCT_BYTES ((sizeof(bk_filter_t) + 63) & ~(size_t)63)
#define ROUND64(n) (((n) + 63) & ~(uint64_t)63)

/* A zeroed struct with its payload: inline before it when small, borrowed,
 * or allocated on its own. NULL when out of memory. */
static bk_filter_t *alloc_filter(uint64_t nbytes, uint8_t *borrow)
{
    bk_filter_t *f;
    if (!borrow && nbytes <= INLINE_PAYLOAD_MAX) {
        bki_mem_t block;
        uint8_t *p = bki_payload_alloc(ROUND64(nbytes) + STRUCT_BYTES, &block);
        if (!p)
            return NULL;
        f = (bk_filter_t *)(void *)(p + ROUND64(nbytes));
        f->block = block;
        f->data = p;
        f->mem = BKI_MEM_BORROWED;
        return f;
    }
    f = bki_calloc(1, sizeof *f);
    if (!f)
        return NULL;
    bki_mem_t mem = BKI_MEM_BORROWED;
    f->data = borrow ? borrow : bki_payload_alloc(nbytes, &mem);
    f->mem = mem;
    if (!f->data) {
        bki_free(f);
        return NULL;
    }
    return f;
}

bk_status_t bki_array_new(bk_filter_t **out, bk_kind_t kind, uint64_t cells, uint32_t k,
                          bk_hash_id_t hash, uint64_t seed, uint8_t *borrow)
{
    if (!bki_layout_is_filter(kind) || !bki_kind_ops(kind))
        return BK_EINVAL;
    if (!bki_layout_k_ok(kind, k) || !valid_hash(hash) || bki_layout_round_cells(kind, cells) != cells)
        return BK_EINVAL;
    bk_filter_t *f = alloc_filter(bki_layout_bytes(kind, cells), borrow);
    if (!f)
        return BK_ENOMEM;
    f->kind = kind;
    f->hash = hash;
    f->seed = seed;
    f->cells = cells;
    f->k = k;
    f->lines = bki_layout_lines(kind, cells);
    f->nbytes = bki_layout_bytes(kind, cells);
    f->map_fd = -1;
    bki_set_items(f, 0);
    bki_array_bind(f);
    *out = f;
    return BK_OK;
}

void bki_array_free(bk_filter_t *f)
{
    if (f->block != BKI_MEM_NONE) {
        bki_payload_free(f->data, ROUND64(f->nbytes) + STRUCT_BYTES, f->block);
        return;
    }
    bki_payload_free(f->data, f->nbytes, f->mem);
    bki_free(f);
}

bk_filter_t *bki_array_defrag(bk_filter_t *f, bki_mover_t *mv)
{
    if (f->block != BKI_MEM_NONE) { /* the payload, then the struct, in one block */
        uint64_t lead = ROUND64(f->nbytes);
        uint8_t *p = bki_move_payload(f->data, lead + STRUCT_BYTES, f->block, mv);
        f = (bk_filter_t *)(void *)(p + lead);
        f->data = p;
        return f;
    }
    f = bki_move_block(f, mv);
    f->data = bki_move_payload(f->data, f->nbytes, f->mem, mv);
    return f;
}

bool bki_array_add(bk_filter_t *f, bk_hash_t h)
{
    bool added = ops_of(f)->add(f, h);
    if (added) /* single writer: a plain load and store, no locked op */
        bki_set_items(f, bki_items(f) + 1);
    return added;
}

bool bki_array_contains(const bk_filter_t *f, bk_hash_t h)
{
    /* Blocked first, ahead of the table (a scalable chain's usual sub-filter;
     * single filters of the fast kinds call their bound probes instead). */
    if (BKI_LIKELY(f->kind == BK_KIND_BLOCKED))
        return bki_blocked_contains(f, h);
    return ops_of(f)->contains(f, h);
}

bk_status_t bki_array_add_atomic(bk_filter_t *f, bk_hash_t h, bool *was_new)
{
    const bki_kind_ops_t *o = ops_of(f);
    if (!o->add_atomic)
        return BK_EKIND;
    bool added = o->add_atomic(f, h);
    if (added)
        __atomic_fetch_add(&f->items, 1, __ATOMIC_RELAXED);
    if (was_new)
        *was_new = added;
    return BK_OK;
}

bk_status_t bki_array_remove(bk_filter_t *f, bk_hash_t h)
{
    const bki_kind_ops_t *o = ops_of(f);
    if (!o->remove)
        return BK_EKIND;
    bk_status_t st = o->remove(f, h);
    /* The inverse of add's "new" (a counter went 0 -> 1): the key is gone
     * when a counter went 1 -> 0. */
    if (st == BK_OK && !o->contains(f, h) && bki_items(f) > 0)
        bki_set_items(f, bki_items(f) - 1);
    return st;
}

unsigned bki_array_counter(const bk_filter_t *f, bk_hash_t h)
{
    const bki_kind_ops_t *o = ops_of(f);
    if (o->counter)
        return o->counter(f, h);
    return o->contains(f, h) ? 1u : 0u;
}

/* ---- batches: the pipeline of batch.h through the kind table ---- */

static inline bk_hash_t locate_hash(const bk_filter_t *f, bk_hash_t h)
{
    (void)f;
    return h;
}

static inline void prefetch_hash(const bk_filter_t *f, bk_hash_t h)
{
    ops_of(f)->prefetch(f, h);
}

#define PUT_TABLE(f, h) ops_of(f)->add(f, h)
#define PROBE_TABLE(f, h) ops_of(f)->contains(f, h)
BKI_DEFINE_ADD_BATCH(add_batch_table, , bk_hash_t, locate_hash, prefetch_hash, PUT_TABLE)
BKI_DEFINE_CONTAINS_BATCH(contains_batch_table, , bk_hash_t, locate_hash, prefetch_hash,
                          PROBE_TABLE)
BKI_DEFINE_ADD_HASH_BATCH(add_hash_batch_table, , bk_hash_t, locate_hash, prefetch_hash, PUT_TABLE)
BKI_DEFINE_CONTAINS_HASH_BATCH(contains_hash_batch_table, , bk_hash_t, locate_hash, prefetch_hash,
                               PROBE_TABLE)

uint64_t bki_array_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new)
{
    const bki_kind_ops_t *o = ops_of(f);
    uint64_t fresh = o->add_batch ? o->add_batch(f, keys, n, was_new)
                                  : add_batch_table(f, keys, n, was_new);
    bki_set_items(f, bki_items(f) + fresh);
    return fresh;
}

size_t bki_array_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out)
{
    const bki_kind_ops_t *o = ops_of(f);
    return o->contains_batch ? o->contains_batch(f, keys, n, out)
                             : contains_batch_table(f, keys, n, out);
}

uint64_t bki_array_add_hash_batch(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                  bool *was_new)
{
    const bki_kind_ops_t *o = ops_of(f);
    uint64_t fresh = o->add_hash_batch ? o->add_hash_batch(f, hashes, n, was_new)
                                       : add_hash_batch_table(f, hashes, n, was_new);
    bki_set_items(f, bki_items(f) + fresh);
    return fresh;
}

size_t bki_array_contains_hash_batch(const bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                     bool *out)
{
    const bki_kind_ops_t *o = ops_of(f);
    return o->contains_hash_batch ? o->contains_hash_batch(f, hashes, n, out)
                                  : contains_hash_batch_table(f, hashes, n, out);
}

/* ---- the payload as a whole ---- */

void bki_array_clear(bk_filter_t *f)
{
    if (f->data)
        memset(f->data, 0, (size_t)f->nbytes);
    bki_set_items(f, 0);
}

uint64_t bki_cells_set(const bk_filter_t *f)
{
    /* Payloads are whole 64-bit words, 64-byte aligned. A 4-bit counter
     * is set when its nibble is non-zero. */
    bool nibbles = bki_layout_of(f->kind)->cell_bits == 4;
    return bki_popcount_words((const uint64_t *)(const void *)f->data, f->nbytes / 8, nibbles);
}

/* Probes a key makes in all: k in each of its lines. */
static uint32_t probes_per_key(const bk_filter_t *f)
{
    return f->k * bki_layout_of(f->kind)->key_lines;
}

static bool same_shape(const bk_filter_t *a, const bk_filter_t *b)
{
    return a->kind == b->kind && a->cells == b->cells && a->k == b->k && a->hash == b->hash &&
           a->seed == b->seed && a->rb_n2 == b->rb_n2;
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

bk_status_t bki_array_union(bk_filter_t *dst, const bk_filter_t *src)
{
    if (!bki_layout_is_filter(src->kind) || !same_shape(dst, src))
        return BK_EINCOMPAT;
    const bki_kind_ops_t *o = ops_of(dst);
    if (o->union_into)
        o->union_into(dst, src);
    else
        for (uint64_t i = 0; i < dst->nbytes; i++)
            dst->data[i] |= src->data[i];
    double est = estimate_items(dst->cells, probes_per_key(dst), bki_cells_set(dst));
    bki_set_items(dst, isfinite(est) ? (uint64_t)llround(est) : dst->cells);
    return BK_OK;
}

bk_status_t bki_array_clone(bk_filter_t **out, const bk_filter_t *f)
{
    bk_filter_t *c;
    bk_status_t st = bki_array_new(&c, f->kind, f->cells, f->k, f->hash, f->seed, NULL);
    if (st != BK_OK)
        return st;
    memcpy(c->data, f->data, (size_t)f->nbytes);
    c->capacity = f->capacity;
    c->fpr = f->fpr;
    c->max_bytes = f->max_bytes;
    c->rb_n2 = f->rb_n2;
    c->rb_bpe = f->rb_bpe;
    bki_set_items(c, bki_items(f));
    *out = c;
    return BK_OK;
}

/* The info with set cells counted (bki_cells_set), or, with estimate,
 * expected from the item count: m (1 - e^(-kn/m)), the fill n keys of k
 * probes each leave on average, and which estimate_items turns back into
 * n. */
static void array_info(const bk_filter_t *f, bk_filter_info_t *out, bool estimate);

void bki_array_info(const bk_filter_t *f, bk_filter_info_t *out)
{
    array_info(f, out, false);
}

void bki_array_shape(const bk_filter_t *f, bk_filter_shape_t *out)
{
    memset(out, 0, sizeof *out);
    out->kind = f->kind;
    out->hash = f->hash;
    out->seed = f->seed;
    out->fpr_target = f->fpr;
    out->items = bki_items(f);
    out->max_bytes = f->max_bytes;
    out->sub_kind = f->kind;
    out->capacity = f->capacity;
    out->k = f->k;
    out->bytes = f->nbytes;
    out->filters = 1;
    out->nonscaling = true;
}

void bki_array_info_estimated(const bk_filter_t *f, bk_filter_info_t *out)
{
    array_info(f, out, true);
}

static void array_info(const bk_filter_t *f, bk_filter_info_t *out, bool estimate)
{
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
    out->items = bki_items(f);
    if (estimate) {
        double m = (double)f->cells, kn = (double)probes_per_key(f) * (double)bki_items(f);
        out->cells_set = m > 0 ? (uint64_t)llround(-m * expm1(-kn / m)) : 0;
    } else {
        out->cells_set = bki_cells_set(f);
    }
    out->fill = f->cells ? (double)out->cells_set / (double)f->cells : 0.0;
    out->estimated_items = estimate_items(f->cells, probes_per_key(f), out->cells_set);
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
