/*
 * Packed filters: a Bloom filter of one precise or classic sub-filter, in
 * one block its program allocates (bloomkit.h, "Packed filters").
 *
 * Why: a program that holds many filters pays for every byte of each, and
 * an ordinary filter costs two structs (the chain and its sub-filter, 232
 * bytes each), the chain's list of sub-filters and the payload, in four
 * allocations. A Redis key of 100 items at 0.1% was 904 bytes of which the
 * bits are 200. Packed, the same filter is a 64-byte head and its bits in
 * one block: the program's allocator rounds one request instead of four,
 * and the bits fill the block's size class (the spare bits lower the error
 * for free, as k is chosen for the bits the filter got).
 *
 * The head holds no pointer, so the block may be copied with memcpy (a
 * Redis COPY) and moved. A view (bk_packed_view) is an ordinary scalable
 * filter, a chain of one sub-filter whose payload borrows the block's
 * bits: every call of the library works on it, at the same speed. What a
 * call changes outside the bits (the item count) is written back by
 * bk_packed_store; a call that grows the chain makes the view no longer
 * fit the block, and bk_packed_detach then turns it into a filter of its
 * own. One view is rebound from block to block without allocating, so a
 * program may keep one and bind it to whichever block a command needs.
 *
 * Head layout (little-endian, in memory only: files and serialized bytes
 * keep the ordinary format, where a packed filter is a chain of one
 * sub-filter):
 *   0  8  the program's own bytes (never read or written here)
 *   8  1  sub-filter kind: classic, or precise where that needs fewer
 *         bits (a few items at a tiny error); the chain's sub-kind is
 *         classic (later sub-filters are classic, or precise below 1e-7)
 *   9  1  k
 *  10  1  hash id
 *  11  1  flags: 1 non-scaling, 2 first error as given
 *  12  1  key form
 *  13  1  reserved, 0
 *  14  2  growth (an integer, 1..65535)
 *  16  8  seed
 *  24  8  items (the chain's, which are its sub-filter's)
 *  32  8  capacity (the chain's, which is its sub-filter's)
 *  40  8  error rate asked for (the chain's; the sub-filter's follows)
 *  48  8  cells (bits) of the sub-filter
 *  56  4  tightening (an IEEE single: 0.5 as RedisBloom uses it)
 *  60  4  reserved, 0
 *  64     the bits
 */
#include "internal.h"

#include <math.h>
#include <string.h>

#define HEAD BK_PACKED_HEAD

enum { FLAG_NONSCALING = 1, FLAG_FIRST_ERROR_AS_GIVEN = 2 };

typedef struct head {
    bk_kind_t kind;
    uint32_t k;
    bk_hash_id_t hash;
    uint8_t flags;
    bk_key_form_t key_form;
    uint32_t growth;
    uint64_t seed, items, capacity, cells;
    double fpr;
    float tightening;
} head_t;

static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, sizeof v);
}

static void read_head(const uint8_t *b, head_t *h)
{
    h->kind = (bk_kind_t)b[8];
    h->k = b[9];
    h->hash = (bk_hash_id_t)b[10];
    h->flags = b[11];
    h->key_form = (bk_key_form_t)b[12];
    h->growth = (uint32_t)b[14] | (uint32_t)b[15] << 8;
    h->seed = get64(b + 16);
    h->items = get64(b + 24);
    h->capacity = get64(b + 32);
    uint64_t bits = get64(b + 40);
    memcpy(&h->fpr, &bits, sizeof bits);
    h->cells = get64(b + 48);
    memcpy(&h->tightening, b + 56, sizeof h->tightening);
}

static void write_head(uint8_t *b, const head_t *h)
{
    memset(b + 8, 0, HEAD - 8);
    b[8] = (uint8_t)h->kind;
    b[9] = (uint8_t)h->k;
    b[10] = (uint8_t)h->hash;
    b[11] = h->flags;
    b[12] = (uint8_t)h->key_form;
    b[14] = (uint8_t)(h->growth & 0xff);
    b[15] = (uint8_t)(h->growth >> 8);
    put64(b + 16, h->seed);
    put64(b + 24, h->items);
    put64(b + 32, h->capacity);
    uint64_t bits;
    memcpy(&bits, &h->fpr, sizeof bits);
    put64(b + 40, bits);
    put64(b + 48, h->cells);
    memcpy(b + 56, &h->tightening, sizeof h->tightening);
}

static bool packable_kind(bk_kind_t kind)
{
    return kind == BK_KIND_CLASSIC || kind == BK_KIND_PRECISE;
}

/* A growth and tightening the head can hold exactly. */
static bool head_rates_ok(double growth, double tightening)
{
    return growth >= 1.0 && growth <= 65535.0 && growth == floor(growth) && tightening > 0.0 &&
           tightening < 1.0 && (double)(float)tightening == tightening;
}

/* Whether a head describes a filter the bits after it can hold: the
 * block's contents are the program's memory, but a damaged head must not
 * send a probe outside the block. */
static bool head_ok(const head_t *h, size_t size, const char **why)
{
    if (!packable_kind(h->kind))
        BKI_FAIL(false, "the sub-filter kind is not classic or precise");
    if (!bki_layout_k_ok(h->kind, h->k) || h->hash == BK_HASH_DEFAULT || !bk_hash_name(h->hash))
        BKI_FAIL(false, "bad k or hash id");
    if (h->cells == 0 || bki_layout_round_cells(h->kind, h->cells) != h->cells ||
        bki_layout_bytes(h->kind, h->cells) > size - HEAD)
        BKI_FAIL(false, "the bits do not fit the block");
    if (h->capacity == 0 || !(h->fpr > 0.0 && h->fpr < 1.0) ||
        !head_rates_ok(h->growth, h->tightening) || h->flags > 3 || !bk_key_form_name(h->key_form))
        BKI_FAIL(false, "bad capacity, error rate, growth or flags");
    return true;
}

/* The chain a head describes (its first sub-filter's capacity is the
 * chain's). */
static bki_chain_t chain_of(const head_t *h)
{
    bki_chain_t c;
    memset(&c, 0, sizeof c);
    c.hash = h->hash;
    c.seed = h->seed;
    c.capacity = h->capacity;
    c.fpr = h->fpr;
    c.items = h->items;
    c.sub_kind = BK_KIND_CLASSIC;
    c.growth = (double)h->growth;
    c.tightening = (double)h->tightening;
    c.nonscaling = (h->flags & FLAG_NONSCALING) != 0;
    c.first_error_as_given = (h->flags & FLAG_FIRST_ERROR_AS_GIVEN) != 0;
    return c;
}

/* The chain's fields from a head, in an existing view's struct. */
static void set_chain(bk_filter_t *f, const head_t *h)
{
    bki_chain_t c = chain_of(h);
    f->hash = c.hash;
    f->seed = c.seed;
    f->capacity = c.capacity;
    f->fpr = c.fpr;
    bki_set_items(f, c.items);
    f->sub_kind = BK_KIND_CLASSIC;
    f->growth = c.growth;
    f->tightening = c.tightening;
    f->nonscaling = c.nonscaling;
    f->first_error_as_given = c.first_error_as_given;
    f->max_bytes = 0;
    f->key_form = h->key_form;
    f->packed_view = true;
}

/* The sub-filter's fields, its payload the block's bits. */
static void set_sub(bk_filter_t *s, const bk_filter_t *f, const head_t *h, uint8_t *bits)
{
    s->data = bits;
    s->mem = BKI_MEM_BORROWED;
    s->kind = h->kind;
    s->hash = h->hash;
    s->seed = h->seed;
    s->cells = h->cells;
    s->k = h->k;
    s->lines = bki_layout_lines(h->kind, h->cells);
    s->nbytes = bki_layout_bytes(h->kind, h->cells);
    s->capacity = h->capacity;
    s->fpr = bki_scalable_sub_fpr(f, 0);
    bki_set_items(s, h->items);
    bki_array_bind(s);
}

static void sum_subs(bk_filter_t *f)
{
    const bk_filter_t *s = f->subs[0];
    f->subs_capacity = s->capacity;
    f->subs_bytes = s->nbytes;
    f->subs_precise = s->kind == BK_KIND_PRECISE;
}

/* Whether v is a view that can be rebound in place: still one sub-filter
 * borrowing a block, nothing of its own. */
static bool reusable(const bk_filter_t *v)
{
    return v && v->kind == BK_KIND_SCALABLE && v->packed_view && v->nsubs == 1 &&
           v->subs[0]->mem == BKI_MEM_BORROWED && v->subs[0]->block == BKI_MEM_NONE && !v->map_base;
}

bk_status_t bk_packed_view(bk_filter_t **view, void *block, size_t size, const char **why)
{
    if (why)
        *why = NULL;
    if (!view || !block || size < HEAD)
        BKI_FAIL(BK_EINVAL, "no block, or one smaller than its head");
    head_t h;
    read_head(block, &h);
    if (!head_ok(&h, size, why))
        return BK_ECORRUPT;
    uint8_t *bits = (uint8_t *)block + HEAD;
    bk_filter_t *v = *view;
    if (reusable(v)) {
        set_chain(v, &h);
        set_sub(v->subs[0], v, &h, bits);
        sum_subs(v);
        return BK_OK;
    }
    bk_filter_free(v);
    *view = NULL;
    bki_chain_t c = chain_of(&h);
    bk_status_t st = bki_scalable_shell(&v, &c, 1);
    if (st != BK_OK)
        return st;
    bk_filter_t *s;
    st = bki_array_new(&s, h.kind, h.cells, h.k, h.hash, h.seed, bits);
    if (st != BK_OK) {
        bki_scalable_free(v);
        return st;
    }
    set_chain(v, &h);
    set_sub(s, v, &h, bits);
    bki_scalable_append(v, s);
    *view = v;
    return BK_OK;
}

/* Whether f (a chain of one classic or precise sub-filter holding all its
 * items, at the chain's capacity and first error) fits a head. */
static bool packable(const bk_filter_t *f)
{
    if (!f || f->kind != BK_KIND_SCALABLE || f->sub_kind != BK_KIND_CLASSIC || f->nsubs != 1 ||
        f->map_base || f->readonly || f->rb_options)
        return false;
    const bk_filter_t *s = f->subs[0];
    return packable_kind(s->kind) && s->k <= 255 && (unsigned)s->hash <= 255 &&
           s->capacity == f->capacity && s->fpr == bki_scalable_sub_fpr(f, 0) &&
           bki_items(s) == bki_items(f) && head_rates_ok(f->growth, f->tightening);
}

static void head_from(const bk_filter_t *f, head_t *h)
{
    const bk_filter_t *s = f->subs[0];
    memset(h, 0, sizeof *h);
    h->kind = s->kind;
    h->k = s->k;
    h->hash = f->hash;
    h->flags = (uint8_t)((f->nonscaling ? FLAG_NONSCALING : 0) |
                         (f->first_error_as_given ? FLAG_FIRST_ERROR_AS_GIVEN : 0));
    h->key_form = f->key_form;
    h->growth = (uint32_t)f->growth;
    h->seed = f->seed;
    h->items = bki_items(f);
    h->capacity = f->capacity;
    h->fpr = f->fpr;
    h->cells = s->cells;
    h->tightening = (float)f->tightening;
}

bk_status_t bk_packed_store(const bk_filter_t *view, void *block, size_t size)
{
    /* Still the block's one sub-filter, holding all the items: then only
     * the count, and the key form a program may set, can differ from the
     * head (a view's other fields change only with a growth, which makes
     * it no longer fit: BK_EINVAL). */
    if (!view || !block || size < HEAD || !view->packed_view || view->nsubs != 1 ||
        view->subs[0]->data != (uint8_t *)block + HEAD ||
        bki_items(view->subs[0]) != bki_items(view) || !bk_key_form_name(view->key_form))
        return BK_EINVAL;
    uint8_t *b = block;
    put64(b + 24, bki_items(view));
    b[12] = (uint8_t)view->key_form;
    return BK_OK;
}

bk_status_t bk_packed_detach(bk_filter_t *view)
{
    if (!view || view->kind != BK_KIND_SCALABLE || !view->packed_view || view->nsubs == 0)
        return BK_EINVAL;
    bk_filter_t *s = view->subs[0];
    if (s->mem == BKI_MEM_BORROWED && s->block == BKI_MEM_NONE) {
        bki_mem_t mem;
        uint8_t *own = bki_payload_alloc(s->nbytes, &mem);
        if (!own)
            return BK_ENOMEM;
        memcpy(own, s->data, (size_t)s->nbytes);
        s->data = own;
        s->mem = mem;
    }
    view->packed_view = false;
    return BK_OK;
}

bk_status_t bk_packed_keep(bk_filter_t *view)
{
    if (!view || view->kind != BK_KIND_SCALABLE || !view->packed_view || view->nsubs == 0)
        return BK_EINVAL;
    /* Its first sub-filter still borrows the block (BKI_MEM_BORROWED): the
     * filter never frees those bits, and the caller does. */
    view->packed_view = false;
    return BK_OK;
}

size_t bk_filter_packed_size(const bk_filter_t *f)
{
    if (!packable(f) || f->subs[0]->nbytes > SIZE_MAX - HEAD)
        return 0;
    return HEAD + (size_t)f->subs[0]->nbytes;
}

bk_status_t bk_filter_pack(const bk_filter_t *f, void *block, size_t size)
{
    size_t need = bk_filter_packed_size(f);
    if (need == 0)
        return BK_EKIND;
    if (!block || size < need)
        return BK_EINVAL;
    head_t h;
    head_from(f, &h);
    write_head(block, &h);
    uint8_t *bits = (uint8_t *)block + HEAD;
    memcpy(bits, f->subs[0]->data, (size_t)f->subs[0]->nbytes);
    memset(bits + f->subs[0]->nbytes, 0, size - need);
    return BK_OK;
}

/* ---- creating one ---------------------------------------------------------- */

/* The chain an options struct asks for, as a head without cells or k;
 * BK_EINVAL/BK_EKIND as bk_filter_create would say. */
static bk_status_t head_for(uint64_t capacity, double fpr, const bk_options_t *o, head_t *h)
{
    if (capacity == 0 || !(fpr > 0.0 && fpr < 1.0))
        return BK_EINVAL;
    if (o->kind != BK_KIND_SCALABLE || o->sub_kind != BK_KIND_CLASSIC)
        return BK_EKIND;
    double growth = o->growth == 0.0 ? 2.0 : o->growth;
    double tightening = o->tightening == 0.0 ? 0.5 : o->tightening;
    if (!head_rates_ok(growth, tightening))
        return BK_EINVAL;
    memset(h, 0, sizeof *h);
    h->kind = BK_KIND_CLASSIC; /* or precise: see first_plan */
    h->hash = o->hash == BK_HASH_DEFAULT ? BK_HASH_XXH3_MIX8 : o->hash;
    if (!bk_hash_name(h->hash) || (unsigned)h->hash > 255)
        return BK_EINVAL;
    h->flags = (uint8_t)((o->nonscaling ? FLAG_NONSCALING : 0) |
                         (o->first_error_as_given ? FLAG_FIRST_ERROR_AS_GIVEN : 0));
    h->key_form = BK_KEY_FORM_UNRECORDED;
    h->growth = (uint32_t)growth;
    h->seed = o->seed_set ? o->seed : bk_random_seed();
    h->capacity = capacity;
    h->fpr = fpr;
    h->tightening = (float)tightening;
    return BK_OK;
}

/* The first sub-filter's error under a head's rule. */
static double first_error(const head_t *h)
{
    bk_filter_t f;
    memset(&f, 0, sizeof f);
    bki_chain_t c = chain_of(h);
    f.fpr = c.fpr;
    f.tightening = c.tightening;
    f.nonscaling = c.nonscaling;
    f.first_error_as_given = c.first_error_as_given;
    return bki_scalable_sub_fpr(&f, 0);
}

/* The last first sub-filter's plan made on this thread, and its error: a
 * key's creation asks for it three times (bk_packed_size, bk_packed_fits,
 * bk_packed_init), and a server making keys of one shape (a BF.ADD of a
 * new key each) asks for the same one again and again. The plan depends on
 * the capacity and the first sub-filter's error only, which the head's
 * capacity, rate, tightening and flags decide. */
static _Thread_local struct {
    bool set;
    uint64_t capacity;
    double fpr;
    float tightening;
    uint8_t flags;
    bk_kind_t kind;
    bk_plan_t plan;
    double error;
    /* bits_for's last two answers for this plan (a creation asks about
     * the size class below its block, then the block): the block size
     * asked about (0: none), whether that fits, and its cells and k */
    struct {
        size_t size;
        bool ok;
        uint64_t cells;
        uint32_t k;
    } bits[2];
} last_plan;

static bool last_plan_is(const head_t *h)
{
    return last_plan.set && last_plan.capacity == h->capacity && last_plan.fpr == h->fpr &&
           last_plan.tightening == h->tightening && last_plan.flags == h->flags;
}

/* first_error, from the last plan when it is h's. */
static double first_error_of(const head_t *h)
{
    return last_plan_is(h) ? last_plan.error : first_error(h);
}

/* The first sub-filter's plan: classic, or precise where that is smaller
 * (plan.c keeps a classic key's probes sparse, which at a few items and a
 * tiny error costs several times the optimum; precise stays near it).
 * Sets h->kind. */
static bk_status_t first_plan(head_t *h, bk_plan_t *plan)
{
    if (last_plan_is(h)) {
        h->kind = last_plan.kind;
        *plan = last_plan.plan;
        return BK_OK;
    }
    double p = first_error(h);
    bk_plan_t precise;
    bk_status_t st = bk_plan(BK_KIND_CLASSIC, h->capacity, p, plan);
    if (st != BK_OK)
        return st;
    h->kind = BK_KIND_CLASSIC;
    if (bk_plan(BK_KIND_PRECISE, h->capacity, p, &precise) == BK_OK &&
        precise.bytes < plan->bytes) {
        *plan = precise;
        h->kind = BK_KIND_PRECISE;
    }
    last_plan.set = true;
    last_plan.capacity = h->capacity;
    last_plan.fpr = h->fpr;
    last_plan.tightening = h->tightening;
    last_plan.flags = h->flags;
    last_plan.kind = h->kind;
    last_plan.plan = *plan;
    last_plan.error = p;
    memset(last_plan.bits, 0, sizeof last_plan.bits);
    return BK_OK;
}

size_t bk_packed_size(uint64_t capacity, double fpr, const bk_options_t *opts)
{
    head_t h;
    bk_plan_t plan;
    if (!opts || head_for(capacity, fpr, opts, &h) != BK_OK || first_plan(&h, &plan) != BK_OK ||
        plan.bytes > SIZE_MAX - HEAD)
        return 0;
    return HEAD + (size_t)plan.bytes;
}

/* The k that gives m bits for n keys the lowest expected error, near
 * (m / n) ln 2; for the classic layout at most m / 64 (plan.c: one key's
 * probes stay sparse). */
static uint32_t best_k(bk_kind_t kind, uint64_t m, uint64_t n)
{
    double textbook = (double)m / (double)n * 0.69314718055994530942;
    uint32_t lo = textbook > 3.0 ? (uint32_t)textbook - 2 : 1;
    uint32_t best = 0;
    double best_fpr = 2.0;
    for (uint32_t k = lo; k <= lo + 4 && k <= BKI_CLASSIC_MAX_K; k++) {
        if (!bki_layout_k_ok(kind, k) || (kind == BK_KIND_CLASSIC && k > m / 64 && k > 1))
            continue;
        double e = bk_fpr_expected(kind, m, n, k);
        if (e < best_fpr) {
            best = k;
            best_fpr = e;
        }
    }
    return best;
}

/* The bits a block of `size` bytes gives h's sub-filter, and their k: every
 * whole word of the block is a bit of the filter. At least the plan's
 * bits: more only lower the error, and k is chosen for them (kept as
 * planned unless another k does better). Fewer than planned (a block one
 * allocator size class below the plan's) only where the expected error
 * with them and their best k is still at most the sub-filter's own error:
 * the plan aims under it, at 0.9 of it, and the bits it asks for plus the
 * head may just pass a size class, which then costs the program a whole
 * class more (a Redis key of 1,000 items at 0.1%: 2,560 bytes instead of
 * 2,048). False if the block is too small either way. */
static bool bits_for_planned(const head_t *h, const bk_plan_t *plan, size_t size,
                             uint64_t *cells, uint32_t *k);

/* bits_for_planned, from the last answer when it was for h's plan and this
 * size (a creation asks twice, bk_packed_fits then bk_packed_init, and
 * keys of one shape ask the same again: each answer weighs seven expected
 * error rates). */
static bool bits_for(const head_t *h, const bk_plan_t *plan, size_t size, uint64_t *cells,
                     uint32_t *k)
{
    bool mine = last_plan_is(h);
    for (int i = 0; mine && i < 2; i++) {
        if (last_plan.bits[i].size == size) {
            *cells = last_plan.bits[i].cells;
            *k = last_plan.bits[i].k;
            return last_plan.bits[i].ok;
        }
    }
    bool ok = bits_for_planned(h, plan, size, cells, k);
    if (mine) {
        last_plan.bits[1] = last_plan.bits[0];
        last_plan.bits[0].size = size;
        last_plan.bits[0].ok = ok;
        last_plan.bits[0].cells = ok ? *cells : 0;
        last_plan.bits[0].k = ok ? *k : 0;
    }
    return ok;
}

static bool bits_for_planned(const head_t *h, const bk_plan_t *plan, size_t size,
                             uint64_t *cells, uint32_t *k)
{
    if (size < HEAD)
        return false;
    uint64_t room = (uint64_t)(size - HEAD) / 8 * 64;
    uint64_t c = bki_layout_round_cells(h->kind, room);
    while (c > room && c > bki_layout_of(h->kind)->unit)
        c = bki_layout_round_cells(h->kind, c - bki_layout_of(h->kind)->unit);
    if (c > room || c == 0)
        return false;
    if (c >= plan->cells) {
        uint32_t best = best_k(h->kind, c, h->capacity);
        *k = best == 0 || bk_fpr_expected(h->kind, c, h->capacity, best) >
                              bk_fpr_expected(h->kind, c, h->capacity, plan->k)
                 ? plan->k
                 : best;
        *cells = c;
        return true;
    }
    uint32_t best = best_k(h->kind, c, h->capacity);
    if (best == 0 || bk_fpr_expected(h->kind, c, h->capacity, best) > first_error_of(h))
        return false;
    *cells = c;
    *k = best;
    return true;
}

bool bk_packed_fits(size_t size, uint64_t capacity, double fpr, const bk_options_t *opts)
{
    head_t h;
    bk_plan_t plan;
    uint64_t cells;
    uint32_t k;
    return opts && head_for(capacity, fpr, opts, &h) == BK_OK && first_plan(&h, &plan) == BK_OK &&
           bits_for(&h, &plan, size, &cells, &k);
}

bk_status_t bk_packed_init_like(void *block, size_t size, const void *model, uint64_t seed,
                                bool zeroed)
{
    head_t h;
    if (!block || !model || size < HEAD)
        return BK_EINVAL;
    read_head(model, &h);
    if (!head_ok(&h, size, NULL))
        return BK_EINVAL;
    h.seed = seed;
    h.items = 0;
    write_head(block, &h);
    if (!zeroed)
        bki_zero_fill((uint8_t *)block + HEAD, size - HEAD);
    return BK_OK;
}

bk_status_t bk_packed_init(void *block, size_t size, uint64_t capacity, double fpr,
                           const bk_options_t *opts, bool zeroed)
{
    head_t h;
    if (!block || !opts)
        return BK_EINVAL;
    bk_status_t st = head_for(capacity, fpr, opts, &h);
    if (st != BK_OK)
        return st;
    bk_plan_t plan;
    st = first_plan(&h, &plan);
    if (st != BK_OK)
        return st;
    if (opts->max_bytes && plan.bytes > opts->max_bytes)
        return BK_EFULL;
    if (!bits_for(&h, &plan, size, &h.cells, &h.k) || !head_ok(&h, size, NULL))
        return BK_EINVAL;
    write_head(block, &h);
    if (!zeroed)
        bki_zero_fill((uint8_t *)block + HEAD, size - HEAD);
    return BK_OK;
}
