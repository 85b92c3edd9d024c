/*
 * The composite kinds, one row each: the scalable chain (scalable.c), the
 * window (window.c, window_codec.c), the cuckoo filter (cuckoo.c,
 * cuckoo_codec.c) and the static filters (fuse.c, fuse_codec.c). A row
 * gathers what the handle, the file format and paged files need of the
 * kind (registry.h says what each entry means), so that filter.c,
 * codec.c, loader.c, map.c, file.c and checkpoint.c never list kinds: a
 * new composite kind is its own files and one row here (and its facts in
 * kinds.c). The few adapters below fit a kind's own calls to a row's
 * shape.
 */
#include "registry.h"
#include "fuse.h"
#include "window.h"

/* ---- the chain ---- */

static bk_status_t chain_create(bk_filter_t **out, uint64_t capacity, double fpr,
                                const bk_options_t *o)
{
    return bki_scalable_create(out, capacity, fpr, o, o->hash, o->seed);
}

static const bki_class_t chain_row = {
    .create = chain_create,
    .add_hash = bki_scalable_add,
    .contains_hash = bki_scalable_contains,
    .clear = bki_scalable_clear,
    .union_into = bki_scalable_union,
    .clone = bki_scalable_clone,
    .free = bki_scalable_free,
    .info = bki_scalable_info,
    .shape = bki_scalable_shape,
    .defrag = bki_scalable_defrag,
};

/* ---- the window: its calls take the window itself ---- */

static bk_status_t window_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new)
{
    bool added = bki_window_add(f->window, h);
    if (was_new)
        *was_new = added;
    return BK_OK;
}

static bool window_contains_hash(const bk_filter_t *f, bk_hash_t h)
{
    return bki_window_contains(f->window, h);
}

static uint64_t window_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new)
{
    return bki_window_add_batch(f->window, keys, n, was_new);
}

static size_t window_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                    bool *out)
{
    return bki_window_contains_batch(f->window, keys, n, out);
}

static bk_status_t window_clear(bk_filter_t *f)
{
    bki_window_clear(f->window);
    return BK_OK;
}

static uint64_t window_items(const bk_filter_t *f)
{
    return bki_window_held(f->window);
}

static void window_advance(bk_filter_t *f, uint64_t now)
{
    bki_window_advance(f->window, now);
}

static bool window_contains_at(const bk_filter_t *f, bk_hash_t h, uint64_t now)
{
    return bki_window_contains_at(f->window, h, now);
}

static bk_status_t window_obj(bkf_obj_t *o, const bk_filter_t *f)
{
    if (!f->window)
        return BK_EINVAL;
    bkf_window_obj(o, f);
    return BK_OK;
}

/* A generation step clears a line of every bucket: every page is read
 * and checked first, and all of them are written back. */
static void window_attached(bk_filter_t *f, bool own_map, void (*every_page)(void *), void *arg)
{
    (void)own_map;
    bki_window_on_clear(f, every_page, arg);
}

static bool window_payload(const bk_filter_t *f, uint8_t **data, uint64_t *len)
{
    *data = f->window->data;
    *len = f->window->geom.bytes;
    return true;
}

/* Generations of different ages cannot be merged into one clock: no union. */
static const bki_class_t window_row = {
    .create = bki_window_filter_create,
    .add_hash = window_add_hash,
    .contains_hash = window_contains_hash,
    .add_batch = window_add_batch,
    .contains_batch = window_contains_batch,
    .clear = window_clear,
    .clone = bki_window_filter_clone,
    .free = bki_window_filter_free,
    .info = bki_window_filter_info,
    .info_estimated = bki_window_info_estimated,
    .shape = bki_window_filter_shape,
    .items = window_items,
    .defrag = bki_window_filter_defrag,
    .advance = window_advance,
    .contains_at = window_contains_at,
    .obj = window_obj,
    .part = bkf_window_part,
    .nparts = 2,
    .part_len = bkf_window_part_len,
    .check = bkf_window_check_part,
    .build = bkf_window_build,
    .adopt = bkf_window_adopt,
    .write_state = bkf_window_write_state,
    .paged_parts = 2, /* pages over its slots; its state keeps its own sum */
    .pages = {bki_window_reads, window_attached},
    .first_payload = window_payload,
};

/* ---- the cuckoo filter ---- */

static bk_status_t cuckoo_obj(bkf_obj_t *o, const bk_filter_t *f)
{
    if (!f->cuckoo)
        return BK_EINVAL;
    bkf_cuckoo_obj(o, f);
    return BK_OK;
}

/* In memory of its own it may grow: its later sub-filters are allocated
 * (and the next save writes it whole). */
static void cuckoo_attached(bk_filter_t *f, bool own_map, void (*every_page)(void *), void *arg)
{
    (void)every_page, (void)arg;
    if (own_map)
        bki_cuckoo_may_grow(f);
}

static void cuckoo_set_max_bytes(bk_filter_t *f, uint64_t max_bytes)
{
    bk_cuckoo_set_max_bytes(f->cuckoo, max_bytes);
}

/* Two cuckoo filters' union is not a cuckoo filter in general: no union. */
static const bki_class_t cuckoo_row = {
    .create = bki_cuckoo_filter_create,
    .add_hash = bki_cuckoo_add_hash,
    .contains_hash = bki_cuckoo_contains_hash,
    .contains_batch = bki_cuckoo_contains_batch,
    .remove = bki_cuckoo_remove_hash,
    .counter = bki_cuckoo_counter,
    .clear = bki_cuckoo_clear,
    .clone = bki_cuckoo_filter_clone,
    .free = bki_cuckoo_filter_free,
    .info = bki_cuckoo_filter_info,
    .info_estimated = bki_cuckoo_info_estimated,
    .shape = bki_cuckoo_filter_shape,
    .items = bki_cuckoo_items,
    .defrag = bki_cuckoo_filter_defrag,
    .set_max_bytes = cuckoo_set_max_bytes,
    .obj = cuckoo_obj,
    .part = bkf_cuckoo_part,
    .own_header = true,
    .put_header = bkf_cuckoo_put_header,
    .get_header = bkf_cuckoo_get_header,
    .header_reserved_zero = bkf_cuckoo_header_reserved_zero,
    .part_len = bkf_cuckoo_part_len,
    .check = bkf_cuckoo_check,
    .build = bkf_cuckoo_build,
    .paged_parts = 1, /* one sub-filter */
    .pages = {bki_cuckoo_reads, cuckoo_attached},
    .first_payload = bki_cuckoo_first_payload,
};

/* ---- the static filters: they hold exactly the keys they were built
 * from ---- */

static bk_status_t fuse_clear(bk_filter_t *f)
{
    (void)f;
    return BK_ESTATIC;
}

static bk_status_t fuse_remove(bk_filter_t *f, bk_hash_t h)
{
    (void)f, (void)h;
    return BK_ESTATIC;
}

/* A part's peeling tables take about 48 bytes a key while it is built. */
static const bki_static_maker_t fuse_maker = {
    .hash_ok = bki_fuse_hash_ok,
    .plan = bki_fuse_plan,
    .create = bki_fuse_filter_new,
    .parts = bki_fuse_parts,
    .part_of = bki_fuse_part_of,
    .build_part = bki_fuse_build_part,
    .max_parts = BKI_FUSE_MAX_PARTS,
    .part_max_keys = BKI_FUSE_PART_MAX_KEYS,
    .bytes_per_key = 48,
};

/* bk_filter_build makes them, never bk_filter_create (create NULL). */
static const bki_class_t fuse_row = {
    .add_hash = bki_fuse_add_hash,
    .contains_hash = bki_fuse_contains_hash,
    .contains_batch = bki_fuse_contains_batch,
    .remove = fuse_remove,
    .clear = fuse_clear,
    .clone = bki_fuse_filter_clone,
    .free = bki_fuse_filter_free,
    .info = bki_fuse_filter_info,
    .shape = bki_fuse_filter_shape,
    .items = bki_fuse_items,
    .obj = bkf_fuse_obj,
    .part = bkf_fuse_part,
    .own_header = true,
    .part_len = bkf_fuse_part_len,
    .check = bkf_fuse_check,
    .build = bkf_fuse_build,
    .maker = &fuse_maker,
};

const bki_remove_key_fn bki_remove_keys[BKI_CLASS_SLOTS] = {
    [BK_KIND_CUCKOO] = bki_cuckoo_remove_key,
};

const bki_remove_u64_fn bki_remove_u64s[BKI_CLASS_SLOTS] = {
    [BK_KIND_CUCKOO] = bki_cuckoo_remove_u64,
};

const bki_class_t *const bki_classes[BKI_CLASS_SLOTS] = {
    [BK_KIND_SCALABLE] = &chain_row,
    [BK_KIND_WINDOW] = &window_row,
    [BK_KIND_CUCKOO] = &cuckoo_row,
    [BK_KIND_FUSE8] = &fuse_row,
    [BK_KIND_FUSE16] = &fuse_row,
    [BK_KIND_FUSE32] = &fuse_row,
};

const bki_page_calls_t *bki_page_calls_of(uint32_t kind)
{
    const bki_class_t *c = bki_class_of(kind);
    return c ? &c->pages : NULL;
}

bool bki_paged_payload(const bk_filter_t *f, uint8_t **data, uint64_t *len)
{
    const bki_class_t *c = bki_class_of(f->kind);
    if (c)
        return c->first_payload && c->first_payload(f, data, len);
    *data = f->data;
    *len = f->nbytes;
    return true;
}
