/*
 * The composite kinds' rows (registry.c): what a chain, a window, a cuckoo
 * filter or a static filter does, for the layers that must not list kinds.
 * filter.c dispatches the handle through a row, codec.c and loader.c read
 * and write a kind's parts through it, file.c and map.c give pages.c the
 * kind's paging calls from it. A single-array kind has no row: array.c's
 * operations table and kinds.c's geometry describe it.
 */
#ifndef BLOOMKIT_REGISTRY_H
#define BLOOMKIT_REGISTRY_H

#include "pages.h"

/* How build.c makes a static kind: the key hashes split into parts by
 * their value (part_of), each part built once from its keys' hashes. */
typedef struct bki_static_maker {
    bool (*hash_ok)(bk_hash_id_t hash); /* the hashes its filters take */
    /* its plan for n keys at rate p (0: the kind's own rate); BK_EINVAL
     * where it does not reach p */
    bk_status_t (*plan)(bk_kind_t kind, uint64_t n, double p, bk_static_plan_t *out);
    /* a filter of nparts parts, none built yet */
    bk_status_t (*create)(bk_filter_t **out, bk_kind_t kind, uint32_t nparts, double fpr,
                          bk_hash_id_t hash, uint64_t seed);
    uint32_t (*parts)(const bk_filter_t *f);
    uint32_t (*part_of)(const bk_filter_t *f, uint64_t h);
    /* part `part` from n hashes (reordered and deduplicated in place) */
    bk_status_t (*build_part)(bk_filter_t *f, uint32_t part, uint64_t *h, size_t n);
    uint32_t max_parts;     /* parts a filter may have */
    uint64_t part_max_keys; /* keys a part may hold */
    uint32_t bytes_per_key; /* memory a key takes while its part is built */
} bki_static_maker_t;

typedef struct bki_class {
    /* ---- the handle (filter.c). NULL entries: add_batch and
     * contains_batch -> key by key through add_hash / contains_hash;
     * remove -> BK_EKIND; counter -> 1 if contained; union_into ->
     * BK_EKIND; items -> f->items; info_estimated -> info; set_max_bytes
     * -> the field only; advance, contains_at -> not a window. ---- */
    bk_status_t (*create)(bk_filter_t **out, uint64_t capacity, double fpr,
                          const bk_options_t *o); /* o resolved: hash and seed set */
    bk_status_t (*add_hash)(bk_filter_t *f, bk_hash_t h, bool *was_new);
    bool (*contains_hash)(const bk_filter_t *f, bk_hash_t h);
    uint64_t (*add_batch)(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new);
    size_t (*contains_batch)(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out);
    bk_status_t (*remove)(bk_filter_t *f, bk_hash_t h);
    unsigned (*counter)(const bk_filter_t *f, bk_hash_t h);
    bk_status_t (*clear)(bk_filter_t *f);
    bk_status_t (*union_into)(bk_filter_t *dst, const bk_filter_t *src);
    bk_status_t (*clone)(bk_filter_t **out, const bk_filter_t *f);
    void (*free)(bk_filter_t *f);
    void (*info)(const bk_filter_t *f, bk_filter_info_t *out);
    void (*info_estimated)(const bk_filter_t *f, bk_filter_info_t *out);
    void (*shape)(const bk_filter_t *f, bk_filter_shape_t *out);
    uint64_t (*items)(const bk_filter_t *f);
    /* bk_filter_defrag: where f is now (NULL: nothing is offered) */
    bk_filter_t *(*defrag)(bk_filter_t *f, bki_mover_t *mv);
    void (*set_max_bytes)(bk_filter_t *f, uint64_t max_bytes);
    void (*advance)(bk_filter_t *f, uint64_t now);
    bool (*contains_at)(const bk_filter_t *f, bk_hash_t h, uint64_t now);

    /* A chain (kinds.c: BKI_KIND_CHAIN) has its parts as single arrays of
     * its sub-kind (f->subs), each written, checked and built by codec.c
     * as a single array is: its file-format calls below are NULL. */

    /* ---- the file format (codec.c, loader.c, map.c) ---- */
    bk_status_t (*obj)(bkf_obj_t *o, const bk_filter_t *f); /* BK_EINVAL: cannot be written */
    void (*part)(const bkf_obj_t *o, uint32_t i, bkf_part_t *p);
    uint32_t nparts;  /* the part count its files have; 0: any */
    bool own_header;  /* header fields of its own, checked by check (the
                         chain fields need not be zero) */
    /* the header's kind-specific fields (NULL: the RedisBloom options
     * word, reserved bytes from H_RESERVED) */
    void (*put_header)(const bkf_obj_t *o, uint8_t *hdr);
    void (*get_header)(const uint8_t *hdr, bkf_meta_t *m);
    bool (*header_reserved_zero)(const uint8_t *hdr, uint32_t end);
    /* part i's prescribed payload length, 0 if its fields are not a
     * geometry of the kind */
    uint64_t (*part_len)(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p);
    bk_status_t (*check)(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p,
                         const char **why);
    bk_status_t (*build)(bk_filter_t **out, const bkf_meta_t *m, const bkf_source_t *s,
                         uint8_t *map, const char **why);
    /* A kind whose serialized parts are loaded into buffers of its own
     * (loader.c: part 0 into a payload, part 1, at most 4 KiB, into a
     * state) and then adopted; NULL: the loader builds the filter first
     * and fills its parts in place. */
    bk_status_t (*adopt)(bk_filter_t **out, const bkf_meta_t *m, const uint8_t *state,
                         uint8_t *data, bki_mem_t mem, const char **why);
    /* after a mapped file's metadata is written (map.c): state kept
     * outside the payloads */
    void (*write_state)(const bkf_obj_t *o, uint8_t *file);

    /* ---- paged files ---- */
    uint32_t paged_parts; /* the part count a paged file of it has; 0: none */
    bki_page_calls_t pages;
    /* the payload a paged file of it holds; false once the filter no
     * longer matches such a file (a cuckoo filter that grew) */
    bool (*first_payload)(const bk_filter_t *f, uint8_t **data, uint64_t *len);

    /* ---- static kinds: how build.c makes one (NULL for the others) ---- */
    const bki_static_maker_t *maker;
} bki_class_t;

#define BKI_CLASS_SLOTS 64u /* kind numbers the table has room for */
/* registry.c's rows by kind number; NULL where no composite kind is */
extern BKI_HIDDEN const bki_class_t *const bki_classes[BKI_CLASS_SLOTS];

typedef bk_status_t (*bki_remove_key_fn)(bk_filter_t *f, const void *key, size_t len);
/* The kinds' own one-key removes (the cuckoo filter's), by kind number;
 * NULL: bk_filter_remove hashes the key, then calls the row's remove. A
 * table of its own, not an entry of the rows: bk_filter_remove reaches it
 * with one load where a row's entry takes two (filter.c says what that
 * measured). */
extern BKI_HIDDEN const bki_remove_key_fn bki_remove_keys[BKI_CLASS_SLOTS];

static inline bki_remove_key_fn bki_remove_key_of(uint32_t kind)
{
    return kind < BKI_CLASS_SLOTS ? bki_remove_keys[kind] : NULL;
}

/* The kinds' own removes of a key given as a 64-bit integer
 * (bk_filter_remove_u64: the cuckoo filter's), by kind number, for the
 * reason bki_remove_keys is a table; NULL: filter.c passes the key's 8
 * little-endian bytes to the general remove. (Adds and lookups of such
 * keys go through the filter's own f->u64, bound with its calls.) */
extern BKI_HIDDEN const bki_remove_u64_fn bki_remove_u64s[BKI_CLASS_SLOTS];

static inline bki_remove_u64_fn bki_remove_u64_of(uint32_t kind)
{
    return kind < BKI_CLASS_SLOTS ? bki_remove_u64s[kind] : NULL;
}

/* The row of a composite kind, NULL for a single array, a bitmap or a
 * number that is no kind. Inline: the handle asks it on every pre-hashed
 * add (a join's filter, a window's dedup), where a call into registry.c
 * would cost more than the switch it replaced. */
static inline const bki_class_t *bki_class_of(uint32_t kind)
{
    return kind < BKI_CLASS_SLOTS ? bki_classes[kind] : NULL;
}

/* The paging calls for files of kind: a composite's row, or NULL for a
 * single array (pages.c asks the kind's operations). */
BKI_HIDDEN const bki_page_calls_t *bki_page_calls_of(uint32_t kind);

/* The payload a paged file of f's kind holds (bki_class_t.first_payload,
 * or a single array's own); false as there. */
BKI_HIDDEN bool bki_paged_payload(const bk_filter_t *f, uint8_t **data, uint64_t *len);

#endif /* BLOOMKIT_REGISTRY_H */
