/*
 * The value under a BF, CBF or WBF key, in its two forms, and closing a
 * key (bkr_done), where a command's changes to a packed value settle.
 *
 * Full: a bkr_obj_t pointing at a library filter (or a chunked load).
 * Packed: a BF key of one sub-filter, in one block of Redis memory (the
 * library's packed filters, bloomkit.h): the block's first 8 bytes are
 * bkr_obj_t's (family, and packed = 1), the rest the library's head and
 * the bits. A key of 100 items at 0.1% takes one 320-byte block this way,
 * where the full form took a 32-byte object, two 256-byte structs, a list
 * and a payload (904 bytes of used_memory against RedisBloom's 424). The
 * block is asked for at a size class of Redis' allocator (jemalloc), and
 * every byte of it serves as bits: the class's spare bytes lower the
 * error instead of being wasted. The class is computed here, not asked of
 * the allocator, so a replica or an AOF replay builds the same filter bit
 * for bit from BKI.CREATE whatever allocator it runs.
 *
 * Commands see every value as a bkr_obj_t: bkr_resolve binds a packed
 * value to one of a few slots, each a bkr_obj_t whose filter is a view of
 * the block (rebound in place, no allocation per command). bkr_done(key)
 * settles the slots bound through that key: the view's item count goes
 * back into the block. A packed key grows into the full form before its
 * first growth (bkr_promote, called where an add may grow the chain), so a
 * view never has to grow. Type callbacks (save, rewrite, copy) bind with
 * no key and release their slot when done.
 */
#define _GNU_SOURCE
#include "value.h"
#include "config.h"
#include "stats.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The first 8 bytes of a packed block, as bkr_obj_t begins. */
typedef struct packed_tag {
    bkr_family_t family;
    uint32_t packed;
} packed_tag_t;

_Static_assert(sizeof(packed_tag_t) <= BK_PACKED_CALLER, "the tag fits the program's bytes");
_Static_assert(offsetof(bkr_obj_t, packed) == offsetof(packed_tag_t, packed),
               "a full object and a packed block say which they are at the same place");

/* Packed values bound at once: a command binds at most two (BF.MERGE's
 * destination and one source); callbacks one. */
#define SLOTS 4

typedef struct slot {
    bkr_obj_t obj;       /* what a command sees; obj.f is view */
    bk_filter_t *view;   /* kept between bindings */
    uint64_t view_heap;  /* Redis memory the view's structs hold */
    void *block;         /* the value bound, or NULL: free */
    size_t size;         /* its usable bytes */
    RedisModuleKey *key; /* the key it was looked up through; NULL: a callback */
    /* The block the view was last settled into, and its head then: the
     * next command on the same key (the common case) finds the view as it
     * left it and skips binding it again (the head is compared whole, so
     * a block freed and another made at the same address holding any
     * other filter is bound afresh). */
    const void *last;
    size_t last_size;
    uint8_t last_head[BK_PACKED_HEAD];
} slot_t;

static slot_t slots[SLOTS];

/* ---- the families ------------------------------------------------------------------ */

/* Which filters a family's keys hold, by what the kind can do (a value
 * loaded from a dump or a chunk is checked against it): BF any Bloom
 * filter that adds and merges (what the commands make: chains, blocked and
 * classic arrays; also a file's split, blocked2 or precise filter restored
 * into a key), CBF one that removes and counts and still merges (counting
 * filters), WBF a window. */
static bool bf_holds(bk_kind_t kind)
{
    unsigned caps = bk_kind_caps(kind);
    return (caps & BK_CAP_ADD) && (caps & BK_CAP_MERGE) &&
           !(caps & (BK_CAP_REMOVE | BK_CAP_WINDOW | BK_CAP_STATIC));
}

static bool cbf_holds(bk_kind_t kind)
{
    unsigned caps = bk_kind_caps(kind);
    return (caps & BK_CAP_REMOVE) && (caps & BK_CAP_COUNT) && (caps & BK_CAP_MERGE);
}

static bool wbf_holds(bk_kind_t kind)
{
    return (bk_kind_caps(kind) & BK_CAP_WINDOW) != 0;
}

/* One row per family, indexed by bkr_family_t; the data types are set
 * when the module loads (module.c, from these rows). */
static RedisModuleType *family_types[BKR_WBF + 1];
RedisModuleType *bkr_type_rb;
RedisModuleType *bkr_type_rbcf;
static const bkr_family_row_t families[BKR_WBF + 1] = {
    [BKR_BF] = {BKR_BF, "BF", "bkbloom-1", "BF.LOADCHUNK", "not a Bloom filter", bf_holds, true,
                &bkr_config.bf_capacity, &bkr_config.bf_error, &bkr_config.bf_expansion},
    [BKR_CBF] = {BKR_CBF, "CBF", "bkcount-1", "CBF.LOADCHUNK", "not a counting filter", cbf_holds,
                 false, &bkr_config.cbf_capacity, &bkr_config.cbf_error, NULL},
    [BKR_WBF] = {BKR_WBF, "WBF", "bkwindw-1", "WBF.LOADCHUNK", "not a window filter", wbf_holds,
                 false, NULL, NULL, NULL},
};

bkr_params_t bkr_defaults(bkr_family_t family)
{
    const bkr_family_row_t *r = bkr_family(family);
    bkr_params_t p;
    memset(&p, 0, sizeof p);
    if (r->default_capacity) {
        p.capacity = *r->default_capacity;
        p.error = *r->default_error;
        p.expansion = r->default_expansion ? *r->default_expansion : 1;
        p.nonscaling = !r->default_expansion;
    }
    return p;
}

const bkr_family_row_t *bkr_family(bkr_family_t family)
{
    return family >= BKR_BF && family <= BKR_WBF ? &families[family] : &families[BKR_BF];
}

void bkr_family_set_type(bkr_family_t family, RedisModuleType *type)
{
    family_types[bkr_family(family)->family] = type;
}

RedisModuleType *bkr_value_type(bkr_family_t family, const void *v)
{
    const bkr_obj_t *o = v;
    if (family == BKR_BF && !o->packed && o->f && bk_redisbloom_is(o->f))
        return bkr_type_rb;
    return bkr_family_type(family);
}

RedisModuleType *bkr_family_type(bkr_family_t family)
{
    return family_types[bkr_family(family)->family];
}

const char *bkr_family_prefix(bkr_family_t family)
{
    return bkr_family(family)->prefix;
}

bkr_obj_t *bkr_obj_new(bkr_family_t family, bk_filter_t *f, uint64_t since)
{
    bkr_obj_t *o = RedisModule_Alloc(sizeof *o);
    memset(o, 0, sizeof *o);
    o->family = family;
    o->f = f;
    if (f) {
        o->heap = bkr_lib_bytes() - since;
        /* The library holds MAX_BYTES too, on every growth, whatever made
         * f (created, loaded, copied, merged): the cap is not stored with
         * a filter, so it is set on each one a key takes. */
        bk_filter_set_max_bytes(f, bkr_config.max_bytes);
    }
    return o;
}

/* The slot bound to value, if any. Also called by the free callback, which
 * Redis may run in a background thread (FLUSHALL ASYNC frees a whole
 * database there); a value freed that way is never bound (bindings end
 * with their command), so the scan finds nothing, and its reads of a field
 * the main thread writes are atomic. */
static slot_t *slot_of(const void *value)
{
    for (int i = 0; i < SLOTS; i++)
        if (value && __atomic_load_n(&slots[i].block, __ATOMIC_RELAXED) == value)
            return &slots[i];
    return NULL;
}

static void unbind(slot_t *s)
{
    __atomic_store_n(&s->block, NULL, __ATOMIC_RELAXED);
    s->key = NULL;
    s->obj.f = NULL;
}

void bkr_obj_free(void *value)
{
    bkr_obj_t *o = value;
    if (!o)
        return;
    if (o->packed) {
        slot_t *s = slot_of(value);
        if (s)
            unbind(s);
        RedisModule_Free(value);
        return;
    }
    bk_filter_free(o->f);
    if (o->block)
        RedisModule_Free(o->block); /* after f, whose first bits it held */
    bk_filter_loader_free(o->load);
    RedisModule_Free(o);
}

size_t bkr_size_class(size_t n)
{
    /* jemalloc's classes: multiples of 16 up to 128, then four per
     * doubling (160, 192, 224, 256, 320, ...; 12, 14, 16 MiB, ...). */
    if (n <= 8)
        return 8;
    if (n <= 128)
        return (n + 15) & ~(size_t)15;
    unsigned g = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
    size_t step = (size_t)1 << (g - 2);
    if (n > SIZE_MAX - step)
        return n;
    return (n + step - 1) & ~(step - 1);
}

size_t bkr_size_class_below(size_t size)
{
    if (size <= 16)
        return size > 8 ? 8 : 0;
    if (size <= 128)
        return size - 16;
    unsigned g = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
    return size - ((size_t)1 << (g - 2));
}

static void tag(void *block, bkr_family_t family)
{
    packed_tag_t t = {family, 1};
    memcpy(block, &t, sizeof t);
}

/* The last shape bkr_packed_new planned, per thread: its parameters (all
 * of bk_options_t that shapes a packed filter; the seed does not), the
 * block size it chose and the block's head. Keys of one shape (per-user
 * filters made by BF.ADD, their AOF replay) then skip the planning: a
 * head copied with the new key's seed (bk_packed_init_like). */
static _Thread_local struct {
    bool valid;
    bkr_family_t family;
    uint64_t capacity, max_bytes;
    double error, growth, tightening;
    bk_kind_t kind, sub_kind;
    bk_hash_id_t hash;
    bool nonscaling, first_error_as_given;
    size_t size;
    uint8_t head[BK_PACKED_HEAD];
} last_shape;

static bool last_shape_is(bkr_family_t family, uint64_t capacity, double error,
                          const bk_options_t *o)
{
    return last_shape.valid && last_shape.family == family && last_shape.capacity == capacity &&
           last_shape.error == error && last_shape.max_bytes == o->max_bytes &&
           last_shape.growth == o->growth && last_shape.tightening == o->tightening &&
           last_shape.kind == o->kind && last_shape.sub_kind == o->sub_kind &&
           last_shape.hash == o->hash && last_shape.nonscaling == o->nonscaling &&
           last_shape.first_error_as_given == o->first_error_as_given;
}

bk_status_t bkr_packed_new(bkr_family_t family, uint64_t capacity, double error,
                           const bk_options_t *opts, void **out)
{
    *out = NULL;
    bool zeroed = RedisModule_TryCalloc != NULL;
    if (opts->seed_set && last_shape_is(family, capacity, error, opts)) {
        void *b = zeroed ? RedisModule_TryCalloc(1, last_shape.size)
                         : RedisModule_TryAlloc(last_shape.size);
        if (!b)
            return BK_ENOMEM;
        bk_status_t st = bk_packed_init_like(b, last_shape.size, last_shape.head, opts->seed,
                                             zeroed);
        if (st != BK_OK) {
            RedisModule_Free(b);
            return st;
        }
        tag(b, family);
        *out = b;
        return BK_OK;
    }
    size_t need = bk_packed_size(capacity, error, opts);
    if (need == 0)
        return BK_EKIND;
    size_t size = bkr_size_class(need);
    /* The plan's bits aim under the error the first sub-filter is given;
     * where they and the head pass a size class by a little, the class
     * below may still hold the error (bk_packed_fits): a whole class less
     * for the key (0.1% at 1,000 items: 2,048 bytes, not 2,560). */
    size_t below = bkr_size_class_below(size);
    if (below >= BK_PACKED_HEAD + 8 && bk_packed_fits(below, capacity, error, opts))
        size = below;
    void *b = zeroed ? RedisModule_TryCalloc(1, size) : RedisModule_TryAlloc(size);
    if (!b)
        return BK_ENOMEM;
    bk_status_t st = bk_packed_init(b, size, capacity, error, opts, zeroed);
    if (st != BK_OK) {
        RedisModule_Free(b);
        return st;
    }
    last_shape.valid = opts->seed_set;
    last_shape.family = family;
    last_shape.capacity = capacity;
    last_shape.error = error;
    last_shape.max_bytes = opts->max_bytes;
    last_shape.growth = opts->growth;
    last_shape.tightening = opts->tightening;
    last_shape.kind = opts->kind;
    last_shape.sub_kind = opts->sub_kind;
    last_shape.hash = opts->hash;
    last_shape.nonscaling = opts->nonscaling;
    last_shape.first_error_as_given = opts->first_error_as_given;
    last_shape.size = size;
    memcpy(last_shape.head, b, BK_PACKED_HEAD);
    tag(b, family);
    *out = b;
    return BK_OK;
}

/* A packed copy of o's filter, or NULL when it cannot be packed (or no
 * memory: the full form serves as well). */
static void *packed_copy(const bkr_obj_t *o)
{
    if (!o || o->packed || o->family != BKR_BF || !o->f)
        return NULL;
    size_t need = bk_filter_packed_size(o->f);
    if (need == 0)
        return NULL;
    size_t size = bkr_size_class(need);
    void *b = RedisModule_TryAlloc(size);
    if (!b)
        return NULL;
    if (bk_filter_pack(o->f, b, size) != BK_OK) {
        RedisModule_Free(b);
        return NULL;
    }
    tag(b, o->family);
    return b;
}

void *bkr_value_pack(bkr_obj_t *o)
{
    void *b = packed_copy(o);
    if (!b)
        return o;
    bkr_obj_free(o);
    return b;
}

void bkr_key_pack(RedisModuleKey *key, bkr_obj_t *o)
{
    void *b = packed_copy(o);
    if (!b)
        return;
    void *old = NULL;
    RedisModule_ModuleTypeReplaceValue(key, bkr_family_type(o->family), b, &old);
    bkr_obj_free(o);
}

size_t bkr_value_mem(const void *value)
{
    const bkr_obj_t *o = value;
    /* What used_memory grew by for this key, as near as the module can
     * tell: the blocks as Redis' allocator sized them. */
    if (o->packed)
        return RedisModule_MallocSize((void *)value);
    return sizeof *o + (size_t)o->heap;
}

/* Writes a bound slot's count into its block and frees the slot; false if
 * the view no longer fits the block (it grew: see bkr_promote). */
static bool settle(slot_t *s)
{
    if (bk_packed_store(s->view, s->block, s->size) != BK_OK)
        return false;
    s->last = s->block;
    s->last_size = s->size;
    memcpy(s->last_head, s->block, BK_PACKED_HEAD);
    unbind(s);
    return true;
}

/* A free slot whose view was last settled into value, unchanged since. */
static slot_t *slot_as_left(const void *value)
{
    for (int i = 0; i < SLOTS; i++) {
        slot_t *s = &slots[i];
        if (!s->block && s->view && s->last == value &&
            memcmp(s->last_head, value, BK_PACKED_HEAD) == 0)
            return s;
    }
    return NULL;
}

int bkr_value_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value)
{
    (void)key;
    bkr_obj_t *o = *value;
    if (o->packed) {
        if (slot_of(o))
            return 0;
        void *moved = bkr_defrag_move(ctx, o);
        if (moved) {
            /* A slot that remembers the old address must not take
             * another block made there for this one. */
            for (int i = 0; i < SLOTS; i++)
                if (slots[i].last == o)
                    slots[i].last = NULL;
            *value = moved;
        }
        return 0;
    }
    bkr_obj_t *moved = bkr_defrag_move(ctx, o);
    if (moved)
        *value = o = moved;
    if (o->f)
        (void)bk_filter_defrag(&o->f, bkr_defrag_move, ctx);
    return 0;
}

void *bkr_value_copy(const void *value)
{
    slot_t *s = slot_of(value);
    if (s && s->key == NULL)
        (void)settle(s); /* a callback's binding: nothing left to write */
    size_t size = RedisModule_MallocSize((void *)value);
    void *c = RedisModule_TryAlloc(size);
    if (c)
        memcpy(c, value, size);
    return c;
}

bkr_obj_t *bkr_resolve(void *value, RedisModuleKey *key)
{
    bkr_obj_t *o = value;
    if (!o || !o->packed)
        return o;
    slot_t *s = slot_of(value);
    if (s) {
        if (key && !s->key)
            s->key = key;
        return &s->obj;
    }
    size_t size;
    s = slot_as_left(value);
    if (s) {
        size = s->last_size;
    } else {
        for (int i = 0; i < SLOTS && !s; i++)
            if (!slots[i].block)
                s = &slots[i];
        if (!s)
            return NULL;
        s->last = NULL;
        size = RedisModule_MallocSize(value);
        uint64_t mark = bkr_lib_bytes();
        bk_filter_t *before = s->view;
        if (bk_packed_view(&s->view, value, size, NULL) != BK_OK)
            return NULL; /* memory for a new view (the block is the module's own) */
        if (s->view != before)
            s->view_heap = bkr_lib_bytes() - mark;
    }
    bk_filter_set_max_bytes(s->view, bkr_config.max_bytes);
    memset(&s->obj, 0, sizeof s->obj);
    s->obj.family = o->family;
    s->obj.f = s->view;
    s->obj.heap = size;
    __atomic_store_n(&s->block, value, __ATOMIC_RELAXED);
    s->size = size;
    s->key = key;
    return &s->obj;
}

static slot_t *slot_holding(const bkr_obj_t *o)
{
    for (int i = 0; i < SLOTS; i++)
        if (o == &slots[i].obj && slots[i].block)
            return &slots[i];
    return NULL;
}

void bkr_release(bkr_obj_t *o)
{
    slot_t *s = slot_holding(o);
    if (s && s->key == NULL)
        (void)settle(s);
}

bool bkr_is_packed(const bkr_obj_t *o)
{
    return slot_holding(o) != NULL;
}

bkr_obj_t *bkr_promote(RedisModuleKey *key, bkr_obj_t *o)
{
    slot_t *s = slot_holding(o);
    if (!s)
        return o;
    /* The block stays: the full form's first sub-filter goes on using its
     * bits (no copy of a possibly large array, no second one beside it), and
     * the new object frees it with the filter. */
    if (bk_packed_keep(s->view) != BK_OK)
        return NULL;
    bkr_obj_t *full = bkr_obj_new(s->obj.family, s->view, bkr_lib_bytes());
    full->heap = s->view_heap + RedisModule_MallocSize(s->block);
    full->block = s->block;
    void *old = NULL;
    RedisModule_ModuleTypeReplaceValue(key, bkr_family_type(s->obj.family), full, &old);
    s->view = NULL; /* the key's filter now */
    s->last = NULL;
    unbind(s);
    return full;
}

/* ---- CF values: full or compact (value.h) --------------------------------------- */

enum { CF_COMPACT_TAG = 1, CF_SLOTS = 2 }; /* a command binds one CF key; callbacks one */

typedef struct cf_slot {
    bkr_cf_t obj;                /* what a command sees; obj.c is view */
    bk_cuckoo_t *view;           /* kept between bindings */
    uint64_t view_heap;          /* Redis memory the view's structs hold */
    bk_cuckoo_compact_t *bound;  /* the value bound, or NULL: free */
    RedisModuleKey *key;         /* looked up through; NULL: a callback */
} cf_slot_t;

static cf_slot_t cf_slots[CF_SLOTS];

_Static_assert(offsetof(bkr_cf_t, compact) == 0, "both CF forms say which they are first");

bool bkr_cf_is_compact(const void *value)
{
    uint32_t tag;
    memcpy(&tag, value, sizeof tag);
    return tag == CF_COMPACT_TAG;
}

/* The Redis memory a compact value's buckets hold: the library asks for
 * them at their size rounded to 64 bytes, which jemalloc serves from that
 * size's class. */
static uint64_t cf_buckets_heap(const bk_cuckoo_compact_t *p)
{
    return bkr_size_class((size_t)((bk_cuckoo_compact_bytes(p) + 63) & ~(uint64_t)63));
}

/* A compact value's 48 bytes, tagged, holding nothing yet; NULL without
 * memory. */
static bk_cuckoo_compact_t *compact_head(void)
{
    bk_cuckoo_compact_t *p = RedisModule_TryAlloc(sizeof *p);
    if (p) {
        memset(p, 0, sizeof *p);
        uint32_t tag = CF_COMPACT_TAG;
        memcpy(p->caller, &tag, sizeof tag);
    }
    return p;
}

void *bkr_cf_compact_of(bk_cuckoo_t **c)
{
    bk_cuckoo_compact_t *p = compact_head();
    if (p && bk_cuckoo_compact_take(c, p) != BK_OK) {
        RedisModule_Free(p);
        p = NULL;
    }
    return p;
}

void *bkr_cf_value(bk_cuckoo_t **c, uint64_t since)
{
    void *p = bkr_cf_compact_of(c);
    return p ? p : bkr_cf_new(*c, since);
}

/* As slot_of: also called by the free callback, which Redis may run in a
 * background thread (FLUSHALL ASYNC); a value freed that way is never
 * bound, and `bound` is read and written atomically. */
void *bkr_cf_new_compact(uint64_t capacity, const bk_cuckoo_options_t *opts, bk_status_t *st)
{
    bk_cuckoo_compact_t *p = compact_head();
    if (!p) {
        *st = BK_ENOMEM;
        return NULL;
    }
    *st = bk_cuckoo_compact_create(p, capacity, opts);
    if (*st != BK_OK) {
        RedisModule_Free(p);
        return NULL;
    }
    return p;
}

static cf_slot_t *cf_slot_of(const void *value)
{
    for (int i = 0; i < CF_SLOTS; i++)
        if (value && __atomic_load_n(&cf_slots[i].bound, __ATOMIC_RELAXED) == value)
            return &cf_slots[i];
    return NULL;
}

static void cf_unbind(cf_slot_t *s)
{
    __atomic_store_n(&s->bound, NULL, __ATOMIC_RELAXED);
    s->key = NULL;
    s->obj.c = NULL;
}

bkr_cf_t *bkr_cf_new(bk_cuckoo_t *c, uint64_t since)
{
    bkr_cf_t *o = RedisModule_Alloc(sizeof *o);
    memset(o, 0, sizeof *o);
    o->c = c;
    o->heap = bkr_lib_bytes() - since;
    bk_cuckoo_set_max_bytes(c, bkr_config.max_bytes);
    return o;
}

void bkr_cf_free(void *value)
{
    if (!value)
        return;
    if (bkr_cf_is_compact(value)) {
        bkr_cf_compact_free(value);
        return;
    }
    bkr_cf_t *o = value;
    bk_cuckoo_free(o->c);
    RedisModule_Free(o);
}

bkr_cf_t *bkr_cf_resolve(void *value, RedisModuleKey *key)
{
    if (!value || !bkr_cf_is_compact(value))
        return value;
    cf_slot_t *s = cf_slot_of(value);
    if (s) {
        if (key && !s->key)
            s->key = key;
        return &s->obj;
    }
    for (int i = 0; i < CF_SLOTS && !s; i++)
        if (!cf_slots[i].bound)
            s = &cf_slots[i];
    if (!s)
        return NULL;
    bk_cuckoo_compact_t *p = value;
    uint64_t mark = bkr_lib_bytes();
    bk_cuckoo_t *before = s->view;
    if (bk_cuckoo_bind(&s->view, p) != BK_OK)
        return NULL;
    if (s->view != before)
        s->view_heap = bkr_lib_bytes() - mark;
    bk_cuckoo_set_max_bytes(s->view, bkr_config.max_bytes);
    memset(&s->obj, 0, sizeof s->obj);
    s->obj.c = s->view;
    s->obj.heap = cf_buckets_heap(p);
    __atomic_store_n(&s->bound, p, __ATOMIC_RELAXED);
    s->key = key;
    return &s->obj;
}

/* Writes a bound slot's counts back and frees it; a view that grew
 * becomes the key's full value instead (the view takes the buckets). */
static void cf_settle(cf_slot_t *s, RedisModuleKey *key)
{
    if (bk_cuckoo_store(s->view, s->bound) == BK_OK || !key) {
        cf_unbind(s);
        return;
    }
    bk_cuckoo_t *own = NULL;
    if (bk_cuckoo_detach(&s->view, s->bound, &own) != BK_OK) {
        cf_unbind(s);
        return;
    }
    bkr_cf_t *full = RedisModule_Alloc(sizeof *full);
    memset(full, 0, sizeof *full);
    full->c = own;
    full->heap = s->view_heap + s->obj.heap;
    bk_cuckoo_set_max_bytes(own, bkr_config.max_bytes);
    void *old = NULL;
    RedisModule_ModuleTypeReplaceValue(key, bkr_type_rbcf, full, &old);
    RedisModule_Free(old); /* the compact head: its buckets are the filter's now */
    s->view = NULL;
    s->view_heap = 0;
    cf_unbind(s);
}

void bkr_cf_release(const bkr_cf_t *o)
{
    for (int i = 0; i < CF_SLOTS; i++)
        if (o == &cf_slots[i].obj && cf_slots[i].bound && !cf_slots[i].key)
            cf_settle(&cf_slots[i], NULL);
}

void bkr_cf_compact_free(void *value)
{
    cf_slot_t *s = cf_slot_of(value);
    if (s)
        cf_unbind(s);
    bk_cuckoo_compact_free(value);
    RedisModule_Free(value);
}

size_t bkr_cf_compact_mem(const void *value)
{
    return RedisModule_MallocSize((void *)value) + (size_t)cf_buckets_heap(value);
}

void *bkr_cf_compact_copy(const void *value)
{
    bk_cuckoo_compact_t *c = RedisModule_TryAlloc(sizeof *c);
    if (!c)
        return NULL;
    if (bk_cuckoo_compact_copy(value, c) != BK_OK) {
        RedisModule_Free(c);
        return NULL;
    }
    return c;
}

void bkr_cf_compact_defrag(RedisModuleDefragCtx *ctx, void **value)
{
    if (cf_slot_of(*value))
        return;
    bk_cuckoo_compact_t *moved = bkr_defrag_move(ctx, *value);
    if (moved)
        *value = moved;
    (void)bk_cuckoo_compact_defrag(*value, bkr_defrag_move, ctx);
}

int bkr_done(RedisModuleKey *key)
{
    if (!key)
        return REDISMODULE_OK;
    for (int i = 0; i < CF_SLOTS; i++)
        if (cf_slots[i].bound && cf_slots[i].key == key)
            cf_settle(&cf_slots[i], key);
    for (int i = 0; i < SLOTS; i++) {
        slot_t *s = &slots[i];
        /* A view that grew (not reached: adds promote first) becomes the
         * key's own filter rather than lose what it holds. */
        if (s->block && s->key == key && !settle(s))
            (void)bkr_promote(key, &s->obj);
    }
    RedisModule_CloseKey(key);
    return REDISMODULE_OK;
}

