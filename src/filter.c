/*
 * The public filter handle: creation, destruction and the bk_filter_* calls,
 * each sent to the single-array layer (array.c) or to a composite kind
 * through its row in the registry (registry.c: the chain, the window, the
 * cuckoo filter, the static filters), so a call dispatches once and no
 * kind is named here. The top of the ladder for in-memory filters:
 * nothing below calls back here (see internal.h).
 */
#define _GNU_SOURCE
#include "keyhash.h"
#include "registry.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The composite kind a filter is (its registry row), or NULL for a
 * single array. */
static const bki_class_t *composite_of(const bk_filter_t *f)
{
    return bki_class_of(f->kind);
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
    if (o->hash == BK_HASH_DEFAULT)
        o->hash = BK_HASH_XXH3_MIX8;
    if ((unsigned)o->hash < 1 || (unsigned)o->hash > BK_HASH_COUNT)
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
    const bki_class_t *c = bki_class_of(o.kind);
    if (c)
        return c->create ? c->create(out, capacity, fpr, &o) : BK_EINVAL;
    /* The default kind (0) depends on the error rate: bk_plan picks it. */
    if (o.kind && !bki_layout_is_filter(o.kind))
        return BK_EINVAL;
    bk_plan_t plan;
    st = bk_plan(o.kind, capacity, fpr, &plan);
    if (st != BK_OK)
        return st;
    if (o.max_bytes && plan.bytes > o.max_bytes)
        return BK_EFULL;
    bk_filter_t *f;
    st = bki_array_new(&f, plan.kind, plan.cells, plan.k, o.hash, o.seed, NULL);
    if (st != BK_OK)
        return st;
    f->capacity = capacity;
    f->fpr = fpr;
    f->max_bytes = o.max_bytes;
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
    kind = bki_kind_exact(kind);
    if (!bki_layout_is_filter(kind) || !bki_kind_is(kind, BKI_KIND_CREATE))
        return BK_EINVAL;
    uint64_t rounded = bki_layout_round_cells(kind, cells);
    if (rounded == 0)
        return cells == 0 ? BK_EINVAL : BK_ENOMEM;
    if (o.max_bytes && bki_layout_bytes(kind, rounded) > o.max_bytes)
        return BK_EFULL;
    st = bki_array_new(out, kind, rounded, k, o.hash, o.seed, NULL);
    if (st == BK_OK)
        (*out)->max_bytes = o.max_bytes;
    return st;
}

void bk_filter_free(bk_filter_t *f)
{
    if (!f)
        return;
    void *map = f->map_base;
    uint64_t map_len = f->map_len;
    int fd = f->map_fd;
    struct bki_pages *pages = f->pages;
    /* Payloads that borrow the mapping are left alone, then it goes. */
    const bki_class_t *c = composite_of(f);
    if (c)
        c->free(f);
    else
        bki_array_free(f);
    bki_pages_free(pages); /* a load's mapping, after the payload borrowing it */
    if (map)
        munmap(map, (size_t)map_len);
    if (fd >= 0)
        close(fd);
}

size_t bk_filter_defrag(bk_filter_t **fp, bk_move_fn move, void *arg)
{
    bk_filter_t *f = fp ? *fp : NULL;
    /* A filter on a file borrows its mapping, and its pages' checks hold
     * pointers to it: nothing there is the program's allocator's. */
    if (!f || !move || f->map_base || f->pages)
        return 0;
    bki_mover_t mv = {move, arg, 0};
    const bki_class_t *c = composite_of(f);
    if (c && !c->defrag)
        return 0;
    *fp = c ? c->defrag(f, &mv) : bki_array_defrag(f, &mv);
    return mv.moved;
}

bk_hash_t bk_filter_hash(const bk_filter_t *f, const void *key, size_t len)
{
    return bki_key_hash(f->hash, f->seed, key, len);
}

bk_status_t bk_filter_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new)
{
    if (BKI_UNLIKELY(f->readonly))
        return BK_EREADONLY;
    if (BKI_UNLIKELY(f->pages) && !bki_pages_key(f, h, true)) {
        if (was_new)
            *was_new = false;
        return BK_ECORRUPT;
    }
    const bki_class_t *c = composite_of(f);
    if (c)
        return c->add_hash(f, h, was_new);
    bool added = bki_array_add(f, h);
    if (was_new)
        *was_new = added;
    return BK_OK;
}

/* One indirect jump and nothing else: even a test of the pointer for NULL
 * before it measured 1.2x the time of an in-cache lookup (a load, a
 * compare and a branch on a call that is a dozen instructions in all). */
bool bk_filter_contains_hash(const bk_filter_t *f, bk_hash_t h)
{
    return f->contains_hash(f, h);
}

/* The default kinds take their own one-key paths (onekey.h says why): hash
 * and probe in one call, no dispatch per key. Like bk_filter_contains_hash,
 * one indirect jump: every filter has both calls bound when it is made, and
 * a test for NULL before the jump was two instructions of a one-key add's
 * fifty (measured with the 8-byte hash's seed part: adds 1.12-1.27x a
 * split-block filter's with the test, see docs/BENCHMARKS.md). */
bk_status_t bk_filter_add(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    return f->add_key(f, key, len, was_new);
}

bool bk_filter_contains(const bk_filter_t *f, const void *key, size_t len)
{
    return f->contains_key(f, key, len);
}

/* The calls for a 64-bit key: a filter with its kind's own (f->u64, bound
 * with its byte calls) takes the key in a register through one indirect
 * jump, as the byte calls are reached, and no call here needs a stack
 * frame; the others get its 8 little-endian bytes through the byte calls
 * (keyhash.h). The remove goes as bk_filter_remove does, through the
 * registry's table. */
bk_status_t bk_filter_add_u64(bk_filter_t *f, uint64_t key, bool *was_new)
{
    const bki_u64_calls_t *own = f->u64;
    if (BKI_LIKELY(own != NULL))
        return own->add(f, key, was_new);
    return bki_u64_add_bytes(f, key, was_new);
}

bool bk_filter_contains_u64(const bk_filter_t *f, uint64_t key)
{
    const bki_u64_calls_t *own = f->u64;
    if (BKI_LIKELY(own != NULL))
        return own->contains(f, key);
    return bki_u64_contains_bytes(f, key);
}

bk_status_t bk_filter_add_atomic(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    if (f->readonly)
        return BK_EREADONLY;
    if (composite_of(f))
        return bki_kind_is(f->kind, BKI_KIND_STATIC) ? BK_ESTATIC : BK_EKIND;
    bk_hash_t h = bk_filter_hash(f, key, len);
    if (f->pages && !bki_pages_key(f, h, true))
        return BK_ECORRUPT;
    return bki_array_add_atomic(f, h, was_new);
}

/* A composite's batch add without a batch call of its own: key by key,
 * each possibly growing it. Stops at the first error; the keys before it
 * are in. */
static bk_status_t one_by_one_add_batch(bk_filter_t *f, const bki_class_t *c,
                                        const bk_key_t *keys, size_t n, bool *was_new,
                                        uint64_t *fresh, size_t *done)
{
    for (size_t i = 0; i < n; i++) {
        bool added;
        bk_status_t st = c->add_hash(f, bk_filter_hash(f, keys[i].ptr, keys[i].len), &added);
        if (st != BK_OK) {
            if (was_new) /* the failing key and those after it: not added */
                memset(was_new + i, 0, (n - i) * sizeof *was_new);
            *done = i;
            return st;
        }
        *fresh += added;
        if (was_new)
            was_new[i] = added;
    }
    return BK_OK;
}

/* A batch with a key on a damaged page of a paged file: none added (a
 * batch is checked whole before its adds). */
static bk_status_t damaged_batch(bool *was_new, size_t n, size_t *at)
{
    if (was_new)
        memset(was_new, 0, n * sizeof *was_new);
    *at = 0;
    return BK_ECORRUPT;
}

bk_status_t bk_filter_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new,
                                uint64_t *n_new)
{
    return bk_filter_add_batch_done(f, keys, n, was_new, n_new, NULL);
}

bk_status_t bk_filter_add_batch_done(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                     bool *was_new, uint64_t *n_new, size_t *done)
{
    uint64_t fresh = 0;
    bk_status_t st = BK_OK;
    size_t ignored, *at = done ? done : &ignored;
    *at = 0;
    if (n_new)
        *n_new = 0;
    if (f->readonly)
        return BK_EREADONLY;
    if (n && !keys)
        return BK_EINVAL;
    *at = n; /* every key, unless one stops the batch */
    const bki_class_t *c = composite_of(f);
    if (c && f->pages && !bki_pages_keys(f, keys, n, true)) /* a paged cuckoo or window */
        st = damaged_batch(was_new, n, at);
    else if (c && c->add_batch)
        fresh = c->add_batch(f, keys, n, was_new);
    else if (c)
        st = one_by_one_add_batch(f, c, keys, n, was_new, &fresh, at);
    else if (f->pages && !bki_pages_keys(f, keys, n, true))
        st = damaged_batch(was_new, n, at);
    else
        fresh = bki_array_add_batch(f, keys, n, was_new);
    if (n_new)
        *n_new = fresh;
    return st;
}

size_t bk_filter_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out)
{
    if (n && (!keys || !out))
        return 0;
    const bki_class_t *c = composite_of(f);
    /* damaged pages answer "present": a single array's read as ones; a
     * cuckoo filter's keys are asked one by one, through the check */
    if (f->pages && !bki_pages_keys(f, keys, n, false) && c) {
        size_t hits = 0;
        for (size_t i = 0; i < n; i++)
            hits += out[i] = bk_filter_contains(f, keys[i].ptr, keys[i].len);
        return hits;
    }
    if (!c)
        return bki_array_contains_batch(f, keys, n, out);
    if (c->contains_batch)
        return c->contains_batch(f, keys, n, out);
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = c->contains_hash(f, bk_filter_hash(f, keys[i].ptr, keys[i].len));
        hits += out[i];
    }
    return hits;
}

/* A composite's pre-hashed batch add: hash by hash, as the one-key calls
 * do (a chain or a cuckoo filter may grow at any key and stops at the
 * first error, the hashes before it in). */
/* Stops at the first key that fails: *at is its index (n when none did). */
static bk_status_t hash_add_one_by_one(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                       bool *was_new, uint64_t *fresh, size_t *at)
{
    for (size_t i = 0; i < n; i++) {
        bool added;
        bk_status_t st = bk_filter_add_hash(f, hashes[i], &added);
        if (st != BK_OK) {
            if (was_new)
                memset(was_new + i, 0, (n - i) * sizeof *was_new);
            *at = i;
            return st;
        }
        *fresh += added;
        if (was_new)
            was_new[i] = added;
    }
    *at = n;
    return BK_OK;
}

bk_status_t bk_filter_add_hash_batch_done(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                          bool *was_new, uint64_t *n_new, size_t *done)
{
    uint64_t fresh = 0;
    bk_status_t st = BK_OK;
    size_t ignored, *at = done ? done : &ignored;
    *at = 0;
    if (n_new)
        *n_new = 0;
    if (f->readonly)
        return BK_EREADONLY;
    if (n && !hashes)
        return BK_EINVAL;
    if (composite_of(f)) {
        st = hash_add_one_by_one(f, hashes, n, was_new, &fresh, at);
    } else if (f->pages && !bki_pages_hashes(f, hashes, n, true)) {
        st = damaged_batch(was_new, n, at);
    } else {
        fresh = bki_array_add_hash_batch(f, hashes, n, was_new);
        *at = n;
    }
    if (n_new)
        *n_new = fresh;
    return st;
}

bk_status_t bk_filter_add_hash_batch(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                     bool *was_new, uint64_t *n_new)
{
    return bk_filter_add_hash_batch_done(f, hashes, n, was_new, n_new, NULL);
}

size_t bk_filter_contains_hash_batch(const bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                     bool *out)
{
    if (n && (!hashes || !out))
        return 0;
    if (!composite_of(f) && f->pages)
        (void)bki_pages_hashes(f, hashes, n, false);
    if (!composite_of(f))
        return bki_array_contains_hash_batch(f, hashes, n, out);
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = bk_filter_contains_hash(f, hashes[i]);
        hits += out[i];
    }
    return hits;
}

bk_status_t bk_filter_prefault(bk_filter_t *f, unsigned share, unsigned shares)
{
    if (share >= shares)
        return BK_EINVAL;
    if (f->readonly)
        return BK_EREADONLY;
    if (composite_of(f) || (f->mem != BKI_MEM_ANON && f->mem != BKI_MEM_HEAP))
        return BK_OK;
    const uint64_t page = 4096;
    uint64_t pages = (f->nbytes + page - 1) / page;
    uint64_t lo = pages / shares * share;
    uint64_t hi = share + 1 == shares ? pages : pages / shares * (share + 1);
    /* An atomic or of zero: a write as far as the page tables go, and
     * safe next to other threads touching the same page. */
    for (uint64_t p = lo; p < hi; p++)
        (void)__atomic_fetch_or(f->data + p * page, 0, __ATOMIC_RELAXED);
    return BK_OK;
}

/* bk_filter_remove but for a kind's own one-key remove. */
__attribute__((noinline)) static bk_status_t filter_remove_hashed(bk_filter_t *f, const void *key,
                                                                  size_t len)
{
    const bki_class_t *c = composite_of(f);
    if (c ? !c->remove : !(bk_kind_caps(f->kind) & BK_CAP_REMOVE))
        return BK_EKIND;
    if (f->readonly)
        return BK_EREADONLY;
    bk_hash_t h = bk_filter_hash(f, key, len);
    if (f->pages && !bki_pages_key(f, h, true))
        return BK_ECORRUPT;
    return c ? c->remove(f, h) : bki_array_remove(f, h);
}

/* A kind with a one-key remove of its own (the cuckoo filter's) is reached
 * with no stack frame, through the registry's table of such removes: in a
 * loop of removes on a large filter every instruction a call spends holds
 * back the next calls' cache misses. Through the kind's row (the row, then
 * its entry: two dependent loads and two tests) a remove on 100M keys took
 * 50-51 ns even with the cuckoo side testing only the key's length;
 * through the table, with its one flag, 44-48 (median 45; Cuckoo16 40-42
 * in the same runs, bench/fastfilter_peer.cc with its cuckoo entries). */
bk_status_t bk_filter_remove(bk_filter_t *f, const void *key, size_t len)
{
    bki_remove_key_fn own = bki_remove_key_of(f->kind);
    if (own && !f->readonly && !f->pages)
        return own(f, key, len);
    return filter_remove_hashed(f, key, len);
}

__attribute__((noinline)) static bk_status_t remove_u64_bytes(bk_filter_t *f, uint64_t key)
{
    uint8_t b[8];
    bki_key8_put_le(b, key);
    return filter_remove_hashed(f, b, sizeof b);
}

bk_status_t bk_filter_remove_u64(bk_filter_t *f, uint64_t key)
{
    bki_remove_u64_fn own = bki_remove_u64_of(f->kind);
    if (own && !f->readonly && !f->pages)
        return own(f, key);
    return remove_u64_bytes(f, key);
}

unsigned bk_filter_counter(const bk_filter_t *f, const void *key, size_t len)
{
    bk_hash_t h = bk_filter_hash(f, key, len);
    const bki_class_t *c = composite_of(f);
    /* a key on a damaged page: present, at least once (a single array's
     * page reads as its largest counts) */
    bool fine = !f->pages || bki_pages_key(f, h, false);
    if (c && c->counter) {
        unsigned n = c->counter(f, h);
        return n || fine ? n : 1u;
    }
    if (c)
        return bk_filter_contains_hash(f, h) ? 1u : 0u;
    return bki_array_counter(f, h);
}

unsigned bk_filter_count(const bk_filter_t *f, const void *key, size_t len)
{
    return bk_filter_counter(f, key, len);
}

bk_status_t bk_filter_clear(bk_filter_t *f)
{
    if (f->readonly)
        return BK_EREADONLY;
    const bki_class_t *c = composite_of(f);
    if (f->pages)
        bki_pages_mark_all_written(f);
    if (c)
        return c->clear(f);
    bki_array_clear(f);
    return BK_OK;
}

bk_status_t bk_filter_union(bk_filter_t *dst, const bk_filter_t *src)
{
    if (dst->readonly)
        return BK_EREADONLY;
    const bki_class_t *c = composite_of(dst);
    if (dst->kind != src->kind && (c || composite_of(src)))
        return BK_EINCOMPAT;
    if (c && !c->union_into)
        return BK_EKIND;
    /* Keys canonicalized two ways are different keys: their union would
     * answer neither way's lookups correctly. */
    if (dst->key_form && src->key_form && dst->key_form != src->key_form)
        return BK_EINCOMPAT;
    /* Every page of both is read: checked first. */
    if (bki_pages_all(dst, NULL) != BK_OK || bki_pages_all(src, NULL) != BK_OK)
        return BK_ECORRUPT;
    if (dst->pages)
        bki_pages_mark_all_written(dst);
    bk_status_t st = c ? c->union_into(dst, src) : bki_array_union(dst, src);
    if (st == BK_OK && !dst->key_form)
        dst->key_form = src->key_form;
    return st;
}

bk_status_t bk_filter_clone(bk_filter_t **out, const bk_filter_t *f)
{
    const bki_class_t *c = composite_of(f);
    if (bki_pages_all(f, NULL) != BK_OK)
        return BK_ECORRUPT;
    bk_status_t st = c ? c->clone(out, f) : bki_array_clone(out, f);
    if (st == BK_OK)
        (*out)->key_form = f->key_form;
    return st;
}

bk_status_t bk_filter_set_key_form(bk_filter_t *f, bk_key_form_t form)
{
    if (!f || (unsigned)form > BK_KEY_FORM_EMAIL)
        return BK_EINVAL;
    if (f->readonly)
        return BK_EREADONLY;
    f->key_form = form;
    return BK_OK;
}

bk_key_form_t bk_filter_key_form(const bk_filter_t *f)
{
    return f->key_form;
}

const char *bk_key_form_name(bk_key_form_t form)
{
    switch (form) {
    case BK_KEY_FORM_UNRECORDED:
        return "unrecorded";
    case BK_KEY_FORM_AS_GIVEN:
        return "as-given";
    case BK_KEY_FORM_URL:
        return "url";
    case BK_KEY_FORM_EMAIL:
        return "email";
    }
    return NULL;
}

void bk_filter_info(const bk_filter_t *f, bk_filter_info_t *out)
{
    const bki_class_t *c = composite_of(f);
    /* The fill counts every bit: a paged file's pages are checked first
     * (the whole file read; bk_filter_shape describes one without). */
    (void)bki_pages_all(f, NULL);
    if (c)
        c->info(f, out);
    else
        bki_array_info(f, out);
    out->mapped = f->map_base != NULL;
    out->readonly = f->readonly;
}

bool bk_filter_info_fast(const bk_filter_t *f, bk_filter_info_t *out)
{
    uint64_t checked, total;
    bk_filter_pages(f, &checked, &total);
    if (checked >= total) {
        bk_filter_info(f, out);
        return true;
    }
    const bki_class_t *c = composite_of(f);
    if (c)
        (c->info_estimated ? c->info_estimated : c->info)(f, out);
    else
        bki_array_info_estimated(f, out);
    out->mapped = f->map_base != NULL;
    out->readonly = f->readonly;
    return false;
}

bk_status_t bk_filter_sub_shape(const bk_filter_t *f, uint32_t i, bk_filter_shape_t *out)
{
    if (!f || !out)
        return BK_EINVAL;
    const bki_class_t *c = composite_of(f);
    if (!c || !bki_kind_is(f->kind, BKI_KIND_CHAIN))
        return BK_EKIND;
    if (i >= f->nsubs)
        return BK_EINVAL;
    bk_filter_shape(f->subs[i], out);
    return BK_OK;
}

void bk_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out)
{
    const bki_class_t *c = composite_of(f);
    if (c)
        c->shape(f, out);
    else
        bki_array_shape(f, out);
    out->mapped = f->map_base != NULL;
    out->readonly = f->readonly;
}

void bk_filter_set_max_bytes(bk_filter_t *f, uint64_t max_bytes)
{
    f->max_bytes = max_bytes;
    const bki_class_t *c = composite_of(f);
    if (c && c->set_max_bytes)
        c->set_max_bytes(f, max_bytes);
}

uint64_t bk_filter_items(const bk_filter_t *f)
{
    const bki_class_t *c = composite_of(f);
    return c && c->items ? c->items(f) : bki_items(f);
}

bk_status_t bk_filter_advance(bk_filter_t *f, uint64_t now)
{
    const bki_class_t *c = composite_of(f);
    if (!c || !c->advance)
        return BK_EKIND;
    if (f->readonly)
        return BK_EREADONLY;
    c->advance(f, now);
    return BK_OK;
}

bool bk_filter_contains_at(const bk_filter_t *f, const void *key, size_t len, uint64_t now)
{
    bk_hash_t h = bk_filter_hash(f, key, len);
    const bki_class_t *c = composite_of(f);
    if (!c || !c->contains_at)
        return bk_filter_contains_hash(f, h);
    if (f->pages && !bki_pages_key(f, h, false))
        return true; /* a damaged page: "present" */
    return c->contains_at(f, h, now);
}

bk_kind_t bk_filter_kind(const bk_filter_t *f)
{
    return f->kind;
}
