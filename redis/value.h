/*
 * value.c: the family table and the value under a key, full or packed (the ladder is in bkr.h).
 */
#ifndef BKR_VALUE_H
#define BKR_VALUE_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* RedisBloom's data types (set by redisbloom.c when the module loads),
 * beside the families' own. */
extern RedisModuleType *bkr_type_rb;   /* MBbloom--: BF keys taken over from RedisBloom */
extern RedisModuleType *bkr_type_rbcf; /* MBbloomCF: RedisBloom's CF keys, kept as stored */

/* A new value (zeroed but for family and f); never NULL (small, from
 * RedisModule_Alloc). f (NULL for a pending load) was made from the Redis
 * memory the library took since `since`, a bkr_lib_bytes() reading taken
 * just before f was created: that is what MEMORY USAGE reports for it.
 * f gets MAX_BYTES as its library-held size cap. */
bkr_obj_t *bkr_obj_new(bkr_family_t family, bk_filter_t *f, uint64_t since);
/* Frees a value of either form (the types' free callback). */
void bkr_obj_free(void *value);
/* What a family is, wherever the module needs it: one row per family. */
typedef struct bkr_family_row {
    bkr_family_t family;
    const char *prefix;    /* "BF": its commands' prefix, and in messages */
    const char *type_name; /* its data type's name, 9 characters, stored in
                              RDB files: never renamed */
    const char *loadchunk; /* its LOADCHUNK command, as AOF rewrites emit it */
    const char *wrong_kind; /* "not a Bloom filter": the error for a filter
                               of another family's kind */
    bool (*fits)(bk_kind_t kind); /* whether a filter of kind belongs here */
    bool packs;            /* new keys are one packed block (BF) */
    /* What its commands create when they create implicitly (bkr_defaults):
     * the module arguments' capacity and error, and either the expansion
     * argument or (NULL) a filter that never grows. NULL capacity: the
     * family creates nothing implicitly (WBF). */
    const uint64_t *default_capacity;
    const double *default_error;
    const uint64_t *default_expansion;
} bkr_family_row_t;
const bkr_family_row_t *bkr_family(bkr_family_t family);
/* The data type a new value v of the family is stored as: the family's,
 * or RedisBloom's MBbloom-- for a BF that is a RedisBloom chain. */
RedisModuleType *bkr_value_type(bkr_family_t family, const void *v);
/* The family's data type, set once when the module loads. */
void bkr_family_set_type(bkr_family_t family, RedisModuleType *type);
RedisModuleType *bkr_family_type(bkr_family_t family);
const char *bkr_family_prefix(bkr_family_t family); /* "BF", "CBF" or "WBF" */
/* The size class of Redis' allocator (jemalloc) that n bytes land in. */
size_t bkr_size_class(size_t n);
/* The largest size class below the class `size` (0 below the smallest). */
size_t bkr_size_class_below(size_t size);
/* A new packed value of the family (*out), or BK_EKIND when opts do not
 * make a packable filter (the caller makes a full one), BK_ENOMEM, or the
 * library's status for bad parameters. */
bk_status_t bkr_packed_new(bkr_family_t family, uint64_t capacity, double error,
                           const bk_options_t *opts, void **out);
/* o, or a packed value that replaces it (o freed) when its filter can be
 * packed: what a load or a merge stores. */
void *bkr_value_pack(bkr_obj_t *o);
/* The same for o, the value under key (open for writing), in place. */
void bkr_key_pack(RedisModuleKey *key, bkr_obj_t *o);
/* The type callback of active defragmentation (Redis' jemalloc moves
 * blocks into fuller pages): a packed value's block moves whole; a full
 * value's object and the library's blocks of its filter move (the block
 * a promoted key's first sub-filter borrows stays). A value bound to a
 * slot is left alone. Returns 0: done. */
int bkr_value_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value);
/* MEMORY USAGE of a value; a byte copy of a packed one (COPY), or NULL. */
size_t bkr_value_mem(const void *value);
void *bkr_value_copy(const void *value);
/* The object to work on for a value: itself, or for a packed value a slot
 * bound to it until bkr_done(key) (key NULL: until bkr_release). NULL
 * when no slot or no memory for a view is left. */
bkr_obj_t *bkr_resolve(void *value, RedisModuleKey *key);
void bkr_release(bkr_obj_t *o);
/* Whether o is a packed value's slot. */
bool bkr_is_packed(const bkr_obj_t *o);
/* Turns the packed value that o is bound to into the full form under key
 * (before a change the block cannot hold: growth); returns the object to
 * go on with (o itself when it is not packed; NULL not reached: the full
 * form keeps the block's bits, nothing is allocated). */
bkr_obj_t *bkr_promote(RedisModuleKey *key, bkr_obj_t *o);
/* Settles what the command did to packed values looked up through key,
 * closes it and returns REDISMODULE_OK: `return bkr_done(key);`. */
int bkr_done(RedisModuleKey *key);

/* ---- CF values: full (bkr_cf_t) or compact ----
 * A CF key of one sub-filter is a bk_cuckoo_compact_t (48 bytes beside its
 * buckets, where the full form takes 160: RedisBloom's takes 64). Commands
 * see a bkr_cf_t either way: bkr_cf_resolve binds a compact value to a
 * slot whose filter is a view of it; bkr_done(key) writes the view's
 * counts back, or, when the command grew the filter, makes the key's value
 * the full form (the view, which takes the buckets over). */

/* A new full CF value for c, made from the library memory taken since
 * `since` (a bkr_lib_bytes() reading); c gets MAX_BYTES as its size cap.
 * Never NULL (small, from RedisModule_Alloc). */
bkr_cf_t *bkr_cf_new(bk_cuckoo_t *c, uint64_t since);
/* Frees a CF value of either form (the type's free callback). */
void bkr_cf_free(void *value);
/* A compact CF value taking *c (set to NULL), or NULL (*c unchanged) when
 * *c cannot be compact (more than one sub-filter) or memory is short. */
void *bkr_cf_compact_of(bk_cuckoo_t **c);
/* A new CF value for *c (made since `since`, a bkr_lib_bytes() reading):
 * compact when it can be (*c is then taken: NULL), else the full form
 * (bkr_cf_new). Never NULL. */
void *bkr_cf_value(bk_cuckoo_t **c, uint64_t since);
/* A new compact CF value of `capacity` (bk_cuckoo_compact_create), or
 * NULL with *st: BK_EINVAL, BK_ENOMEM. */
void *bkr_cf_new_compact(uint64_t capacity, const bk_cuckoo_options_t *opts, bk_status_t *st);
/* The object to work on for a CF value: itself, or for a compact one a
 * slot bound to it until bkr_done(key) (key NULL: until bkr_cf_release).
 * NULL when no slot or no memory for a view is left. */
bkr_cf_t *bkr_cf_resolve(void *value, RedisModuleKey *key);
void bkr_cf_release(const bkr_cf_t *o);
/* Whether a CF value is compact; and for one: free (its slot unbound),
 * MEMORY USAGE, COPY (NULL without memory), defragmentation. */
bool bkr_cf_is_compact(const void *value);
void bkr_cf_compact_free(void *value);
size_t bkr_cf_compact_mem(const void *value);
void *bkr_cf_compact_copy(const void *value);
void bkr_cf_compact_defrag(RedisModuleDefragCtx *ctx, void **value);

/* The defaults of filters a family's commands create implicitly, from
 * its row of the family table (value.c). */
bkr_params_t bkr_defaults(bkr_family_t family);

#pragma GCC visibility pop

#endif /* BKR_VALUE_H */
