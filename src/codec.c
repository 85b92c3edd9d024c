/*
 * The file format as bytes: encoding objects, validating input, and
 * building filters from validated input. docs/FORMAT.md is the
 * specification; this file implements it, and makes no file I/O (file.c,
 * map.c and bitmap_file.c do that, on top of it).
 *
 * Why it is written this way:
 *  - Every field is encoded one at a time, little-endian, at a fixed offset
 *    (never a raw struct), so the same bytes load on any compiler or ABI.
 *  - Loading never trusts a field before checking it: the part count and
 *    every payload size are bounded by the real length of the input before
 *    anything is allocated or read, so a hostile header cannot make us
 *    allocate or read more than the bytes we were given justify.
 *  - The layout is canonical: offsets, padding and reserved bytes are fully
 *    determined by the fields, and checked, so any input we accept
 *    re-serializes to exactly the same bytes (the fuzzer relies on that).
 *  - Payloads start at 64-byte offsets, so a mapped payload is cache-line
 *    aligned exactly like an allocated one and the query paths need no
 *    special case for mapped filters.
 *  - Payload sizes come from the layout table (layout.c): a kind's size
 *    rule is written once for memory and file alike.
 */
#include "registry.h"

#include <math.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static const uint8_t bkf_magic[8] = {0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n'};


/* The payload length the format prescribes for a part, or 0 if cells is
 * not a valid size for the kind. Filters use every payload bit; bitmaps
 * round up to whole 64-byte lines. */
static uint64_t payload_len(uint32_t kind, uint64_t cells)
{
    return bki_layout_bytes((bk_kind_t)kind, cells);
}

/* Whether a chain whose sub-filters are of sub_kind may hold a part of
 * kind: any chain may hold precise parts (deep chains and packed ones,
 * docs/FORMAT.md), but not one of RedisBloom's links. */
static bool deep_part_ok(uint32_t sub_kind, uint32_t kind)
{
    return bki_kind_is((bk_kind_t)kind, BKI_KIND_DEEP) &&
           !bki_kind_is((bk_kind_t)sub_kind, BKI_KIND_RB_LINK);
}

/* ========================================================================
 * Writing
 * ======================================================================== */

static void part_of_filter(const bk_filter_t *s, bkf_part_t *p)
{
    p->kind = (uint32_t)s->kind;
    p->k = s->k;
    p->cells = s->cells;
    p->capacity = s->capacity;
    p->fpr = s->fpr;
    p->items = bki_items(s);
    p->seed = s->seed;
    p->rb_n2 = s->rb_n2;
    p->rb_bpe = s->rb_bpe;
    p->data = s->data;
    p->length = payload_len(p->kind, p->cells);
}

void bkf_obj_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p)
{
    memset(p, 0, sizeof *p);
    const bki_class_t *c = bki_class_of(o->kind);
    if (o->f && c && c->part) {
        c->part(o, i, p);
    } else if (o->f) {
        part_of_filter(bki_kind_is((bk_kind_t)o->kind, BKI_KIND_CHAIN) ? o->f->subs[i] : o->f, p);
    } else {
        p->kind = o->kind;
        p->cells = o->bm_n;
        p->capacity = o->bm_n;
        p->data = o->bm_data;
        p->length = payload_len(p->kind, p->cells);
    }
    if (o->paged && i == 0) { /* the page checksums cover the payload */
        p->sum = 0;
        p->sum_known = true;
    } else if (o->sums) {
        p->sum = o->sums[i];
        p->sum_known = true;
    }
}

/* Describes a filter for writing; BK_EINVAL if it cannot be written (a
 * geometry the format has no encoding for: a bug elsewhere, not a user
 * error, but reported rather than written wrongly). */
bk_status_t bkf_obj_from_filter(bkf_obj_t *o, const bk_filter_t *f)
{
    memset(o, 0, sizeof *o);
    if (!f)
        return BK_EINVAL;
    /* a bitmap read from a paged file: its shell (bitmap_file.c) */
    if (bki_kind_is(f->kind, BKI_KIND_BITMAP))
        return bkf_obj_from_bitmap(o, (uint32_t)f->kind, f->capacity,
                                   (const uint64_t *)(const void *)f->data, f->nbytes);
    o->f = f;
    o->kind = (uint32_t)f->kind;
    o->hash = (uint32_t)f->hash;
    o->seed = f->seed;
    o->capacity = f->capacity;
    o->fpr = f->fpr;
    o->items = bki_items(f);
    o->key_form = (uint32_t)f->key_form;
    const bki_class_t *c = bki_class_of(f->kind);
    bool chain = bki_kind_is(f->kind, BKI_KIND_CHAIN);
    if (chain) {
        if (f->nsubs == 0 || f->nsubs > BKF_MAX_PARTS || !f->subs)
            return BK_EINVAL;
        o->nparts = f->nsubs;
        o->sub_kind = (uint32_t)f->sub_kind;
        o->flags = (f->nonscaling ? BKF_FLAG_NONSCALING : 0) |
                   (f->first_error_as_given ? BKF_FLAG_FIRST_ERROR : 0);
        o->growth = f->growth;
        o->tightening = f->tightening;
        o->rb_options = f->rb_options;
    } else if (c) {
        return c->obj(o, f);
    } else if (bki_layout_is_filter(f->kind)) {
        o->nparts = 1;
    } else {
        return BK_EINVAL;
    }
    /* Refuse to write anything the loader would refuse: every file
     * bloomkit writes must load. */
    for (uint32_t i = 0; i < o->nparts; i++) {
        const bk_filter_t *s = chain ? f->subs[i] : f;
        if (!s)
            return BK_EINVAL;
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        if (p.length == 0 || !p.data || s->nbytes < p.length || s->hash != f->hash ||
            s->seed != f->seed)
            return BK_EINVAL;
        if (chain && s->kind != f->sub_kind && !deep_part_ok(f->sub_kind, s->kind))
            return BK_EINVAL;
    }
    return BK_OK;
}

bk_status_t bkf_obj_from_bitmap(bkf_obj_t *o, uint32_t kind, uint64_t n, const uint64_t *words,
                                   uint64_t nbytes)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->nparts = 1;
    o->capacity = n;
    o->bm_n = n;
    o->bm_data = (const uint8_t *)words;
    uint64_t len = payload_len(kind, n);
    if (len == 0 || !words || nbytes < len)
        return BK_EINVAL;
    return BK_OK;
}

bool bkf_kind_pageable(uint32_t kind, uint32_t nparts)
{
    const bki_class_t *c = bki_class_of(kind);
    if (c)
        return c->paged_parts != 0 && nparts == c->paged_parts;
    return nparts == 1 &&
           (bki_kind_ops((bk_kind_t)kind) || bki_kind_is((bk_kind_t)kind, BKI_KIND_BITMAP));
}

void bkf_obj_paging(const bkf_obj_t *o, bkf_paging_t *g)
{
    uint64_t body = bkf_meta_len(o->nparts), end0 = body, total = body;
    for (uint32_t i = 0; i < o->nparts; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        total += bkf_align64(p.length);
        if (i == 0)
            end0 = total;
    }
    bkf_paging_of(body, end0, total, g);
}

/* Total serialized size: a paged object's with its page checksums. */
uint64_t bkf_obj_size(const bkf_obj_t *o)
{
    uint64_t body = bkf_meta_len(o->nparts), total = body;
    for (uint32_t i = 0; i < o->nparts; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        total += bkf_align64(p.length);
    }
    if (o->paged) {
        bkf_paging_t g;
        bkf_obj_paging(o, &g);
        total = g.size;
    }
    return total;
}

bool bkf_obj_pageable(const bkf_obj_t *o)
{
    /* a single array (a bitmap's too), a cuckoo filter of one sub-filter,
     * or a window (its slots; the small state after them keeps a checksum
     * of its own): pages.c knows which bytes a key of each reads */
    if (!bkf_kind_pageable(o->kind, o->nparts))
        return false;
    bkf_part_t p;
    bkf_obj_part(o, 0, &p);
    return p.length >= BKF_PAGED_MIN;
}

/* Encodes the fixed 128-byte header. */
static void encode_header(const bkf_obj_t *o, uint64_t file_size, uint8_t out[BKF_HEADER])
{
    memset(out, 0, BKF_HEADER);
    memcpy(out + H_MAGIC, bkf_magic, 8);
    /* Version 2 only when there is a key form to record, so every other
     * file keeps the version 1 bytes that older releases read. */
    put_u32(out + H_VERSION, o->paged      ? BKF_VERSION_PAGED
                             : o->key_form ? BKF_VERSION_KEY_FORM
                                           : BKF_VERSION);
    put_u32(out + H_KEY_FORM, o->key_form);
    put_u32(out + H_KIND, o->kind);
    put_u32(out + H_HASH, o->hash);
    put_u32(out + H_NPARTS, o->nparts);
    put_u64(out + H_SEED, o->seed);
    put_u64(out + H_CAPACITY, o->capacity);
    put_f64(out + H_FPR, o->fpr);
    put_u64(out + H_ITEMS, o->items);
    put_u64(out + H_FILESIZE, file_size);
    put_u32(out + H_SUBKIND, o->sub_kind);
    put_u32(out + H_FLAGS, o->flags);
    put_f64(out + H_GROWTH, o->growth);
    put_f64(out + H_TIGHTENING, o->tightening);
    const bki_class_t *c = bki_class_of(o->kind);
    if (c && c->put_header)
        c->put_header(o, out);
    else
        put_u32(out + H_RB_OPTIONS, o->rb_options);
    if (o->paged) {
        put_u32(out + H_PAGE_SHIFT, BKF_PAGE_SHIFT);
        put_u64(out + H_GROUPS_SUM, o->groups_sum);
    }
}

/* Encodes part p's table entry (its payload at offset off), reading the
 * payload once for its checksum. */
static void encode_entry(const bkf_part_t *p, uint64_t off, uint8_t e[BKF_PART])
{
    memset(e, 0, BKF_PART);
    put_u32(e + P_KIND, p->kind);
    put_u32(e + P_K, p->k);
    put_u64(e + P_CELLS, p->cells);
    put_u64(e + P_CAPACITY, p->capacity);
    put_f64(e + P_FPR, p->fpr);
    put_u64(e + P_ITEMS, p->items);
    put_u64(e + P_SEED, p->seed);
    put_u64(e + P_OFFSET, off);
    put_u64(e + P_LENGTH, p->length);
    put_u64(e + P_CHECKSUM, p->sum_known ? p->sum : bkf_checksum(p->data, p->length));
    if (bki_kind_is((bk_kind_t)p->kind, BKI_KIND_RB_LINK)) {
        put_u32(e + P_RB_N2, p->rb_n2);
        put_f64(e + P_RB_BPE, p->rb_bpe);
    }
    if (bki_kind_is((bk_kind_t)p->kind, BKI_KIND_SEGMENTS)) {
        put_u32(e + P_FZ_SEG_LOG, p->fz_seg_log);
        put_u32(e + P_FZ_SEG_COUNT, p->fz_seg_count);
    }
}

/* Encodes the metadata (header, part table with payload checksums, header
 * checksum, padding) into out, which holds bkf_meta_len(o->nparts) bytes.
 * Reads every payload once, for its checksum. */
void bkf_encode_meta(const bkf_obj_t *o, uint8_t *out)
{
    uint64_t mlen = bkf_meta_len(o->nparts);
    memset(out, 0, (size_t)mlen);
    encode_header(o, bkf_obj_size(o), out);
    uint64_t off = mlen;
    for (uint32_t i = 0; i < o->nparts; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        encode_entry(&p, off, out + BKF_HEADER + (uint64_t)BKF_PART * i);
        off += bkf_align64(p.length);
    }
    uint64_t table_end = BKF_HEADER + (uint64_t)BKF_PART * o->nparts;
    put_u64(out + table_end, bkf_checksum(out, table_end));
}

/* The metadata's bytes in [off, off + len) (within bkf_meta_len), encoded
 * entry by entry on the stack: no allocation, whatever the part count.
 * The header checksum covers every entry, so all of them are encoded (and
 * every payload read for its checksum) whatever the range. */
static void meta_range(const bkf_obj_t *o, uint64_t total, uint64_t off, uint8_t *dst,
                       uint64_t len)
{
    XXH3_state_t sum;
    XXH3_64bits_reset(&sum);
    uint8_t h[BKF_HEADER];
    encode_header(o, total, h);
    XXH3_64bits_update(&sum, h, BKF_HEADER);
    bkf_copy_overlap(dst, off, len, h, 0, BKF_HEADER);
    uint64_t at = BKF_HEADER, poff = bkf_meta_len(o->nparts);
    for (uint32_t i = 0; i < o->nparts; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        uint8_t e[BKF_PART];
        encode_entry(&p, poff, e);
        XXH3_64bits_update(&sum, e, BKF_PART);
        bkf_copy_overlap(dst, off, len, e, at, BKF_PART);
        at += BKF_PART;
        poff += bkf_align64(p.length);
    }
    uint8_t c[8];
    put_u64(c, XXH3_64bits_digest(&sum));
    bkf_copy_overlap(dst, off, len, c, at, 8);
    at += 8;
    bkf_copy_overlap(dst, off, len, NULL, at, bkf_meta_len(o->nparts) - at);
}

bk_status_t bkf_obj_range(const bkf_obj_t *o, uint64_t off, void *buf, uint64_t len)
{
    uint64_t total = bkf_obj_size(o);
    if ((!buf && len) || off > total || len > total - off || o->paged)
        return BK_EINVAL;
    uint8_t *dst = buf;
    uint64_t mlen = bkf_meta_len(o->nparts);
    if (off < mlen)
        meta_range(o, total, off, dst, len);
    uint64_t at = mlen;
    for (uint32_t i = 0; i < o->nparts && at < off + len; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        bkf_copy_overlap(dst, off, len, p.data, at, p.length);
        bkf_copy_overlap(dst, off, len, NULL, at + p.length, bkf_align64(p.length) - p.length);
        at += bkf_align64(p.length);
    }
    return BK_OK;
}

bk_status_t bkf_obj_serialize(const bkf_obj_t *o, void *buf, size_t cap, size_t *written)
{
    uint64_t total = bkf_obj_size(o);
    if (!buf || total > cap || o->paged) /* paged: files only (file.c) */
        return BK_EINVAL;
    uint8_t *out = buf;
    bkf_encode_meta(o, out);
    uint64_t off = bkf_meta_len(o->nparts);
    for (uint32_t i = 0; i < o->nparts; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        memcpy(out + off, p.data, (size_t)p.length);
        memset(out + off + p.length, 0, (size_t)(bkf_align64(p.length) - p.length));
        off += bkf_align64(p.length);
    }
    if (written)
        *written = (size_t)total;
    return BK_OK;
}

/* ========================================================================
 * Reading and validation
 * ======================================================================== */

static bool same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

bk_status_t bkf_check_prefix(const uint8_t *b, uint64_t have, const char **why)
{
    uint64_t n = have < 8 ? have : 8;
    if (memcmp(b, bkf_magic, (size_t)n) != 0)
        FAIL(BK_ECORRUPT, "not a bloomkit file (bad magic)");
    if (have < BKF_HEADER)
        FAIL(BK_ECORRUPT, "truncated: shorter than the 128-byte header");
    uint32_t version = bkf_get_u32(b + H_VERSION);
    if (version != BKF_VERSION && version != BKF_VERSION_KEY_FORM && version != BKF_VERSION_PAGED)
        FAIL(BK_EVERSION, "unknown format version (this library reads versions 1 to 3)");
    return BK_OK;
}

/* The metadata as bytes: prefix, part count, lengths, header checksum,
 * padding and reserved bytes. */
static bk_status_t check_meta_bytes(const uint8_t *b, uint64_t have, uint64_t total,
                                    const char **why)
{
    bk_status_t st = bkf_check_prefix(b, have < total ? have : total, why);
    if (st != BK_OK)
        return st;
    uint32_t nparts = bkf_get_u32(b + H_NPARTS);
    if (nparts == 0 || nparts > BKF_MAX_PARTS)
        FAIL(BK_ECORRUPT, "part count is zero or absurd");
    uint64_t table_end = BKF_HEADER + (uint64_t)BKF_PART * nparts;
    uint64_t mlen = bkf_meta_len(nparts);
    if (total < mlen)
        FAIL(BK_ECORRUPT, "truncated inside the header or part table");
    if (have < mlen) /* caller error: it must give us the whole metadata */
        FAIL(BK_ECORRUPT, "truncated inside the header or part table");
    if (get_u64(b + table_end) != bkf_checksum(b, table_end))
        FAIL(BK_ECORRUPT, "header checksum mismatch (header damaged)");
    if (!all_zero(b + table_end + 8, (size_t)(mlen - table_end - 8)))
        FAIL(BK_ECORRUPT, "header padding is not zero");
    const bki_class_t *c = bki_class_of(bkf_get_u32(b + H_KIND));
    /* version 3: the page fields (checked with the header's other fields) */
    uint32_t reserved_end = bkf_get_u32(b + H_VERSION) == BKF_VERSION_PAGED ? H_PAGE_SHIFT
                                                                           : BKF_HEADER;
    if (reserved_end == H_PAGE_SHIFT && !all_zero(b + H_PAGE_SHIFT + 4, 4))
        FAIL(BK_ECORRUPT, "reserved header bytes are not zero");
    if (c && c->header_reserved_zero ? !c->header_reserved_zero(b, reserved_end)
                                     : !all_zero(b + H_RESERVED, reserved_end - H_RESERVED))
        FAIL(BK_ECORRUPT, "reserved header bytes are not zero");
    return BK_OK;
}

static void decode_header(const uint8_t *b, bkf_meta_t *m)
{
    memset(m, 0, sizeof *m);
    m->version = bkf_get_u32(b + H_VERSION);
    m->key_form = bkf_get_u32(b + H_KEY_FORM);
    m->nparts = bkf_get_u32(b + H_NPARTS);
    m->kind = bkf_get_u32(b + H_KIND);
    m->hash = bkf_get_u32(b + H_HASH);
    m->seed = get_u64(b + H_SEED);
    m->capacity = get_u64(b + H_CAPACITY);
    m->fpr = get_f64(b + H_FPR);
    m->items = get_u64(b + H_ITEMS);
    m->file_size = get_u64(b + H_FILESIZE);
    m->sub_kind = bkf_get_u32(b + H_SUBKIND);
    m->flags = bkf_get_u32(b + H_FLAGS);
    m->growth = get_f64(b + H_GROWTH);
    m->tightening = get_f64(b + H_TIGHTENING);
    const bki_class_t *c = bki_class_of(m->kind);
    if (c && c->get_header)
        c->get_header(b, m);
    else
        m->rb_options = bkf_get_u32(b + H_RB_OPTIONS);
    m->table = b + BKF_HEADER;
    m->paged = m->version == BKF_VERSION_PAGED;
    if (m->paged) {
        m->page_shift = bkf_get_u32(b + H_PAGE_SHIFT);
        m->groups_sum = get_u64(b + H_GROUPS_SUM);
    }
}

static bool is_filter_kind(uint32_t kind)
{
    return bki_kind_is((bk_kind_t)kind, BKI_KIND_FILTER);
}

/* The header's own fields: size, kind, hash and rate, or a bitmap's zeros. */
static bk_status_t check_header_fields(const bkf_meta_t *m, uint64_t total, const char **why)
{
    if (m->file_size > total)
        FAIL(BK_ECORRUPT, "truncated: shorter than the size in its header");
    if (m->file_size < total)
        FAIL(BK_ECORRUPT, "trailing bytes after the end of the data");
    if (!bki_kind_is((bk_kind_t)m->kind, BKI_KIND_TOP))
        FAIL(BK_ECORRUPT, bki_kind_is((bk_kind_t)m->kind, BKI_KIND_FILTER)
                              ? "a kind that exists only inside a chain, on its own"
                              : "unknown kind");
    if (is_filter_kind(m->kind)) {
        if (m->hash < 1 || m->hash > BK_HASH_COUNT)
            FAIL(BK_ECORRUPT, "unknown hash id");
        if (!(m->fpr >= 0.0 && m->fpr <= 1.0))
            FAIL(BK_ECORRUPT, "false-positive rate is not in [0, 1]");
    } else if (m->hash != 0 || m->seed != 0 || m->items != 0 || !same_f64(m->fpr, 0.0) ||
               (m->version != BKF_VERSION && m->version != BKF_VERSION_PAGED) ||
               m->key_form != 0) {
        FAIL(BK_ECORRUPT, "bitmap header has filter fields set");
    }
    /* Paged files: a single array's, a one-part cuckoo filter's or a
     * window's, pages of 4 KiB (the only size). */
    if (m->paged && !bkf_kind_pageable(m->kind, m->nparts))
        FAIL(BK_ECORRUPT, "page checksums on a kind that has none");
    if (m->paged && m->page_shift != BKF_PAGE_SHIFT)
        FAIL(BK_ECORRUPT, "page size is not 4 KiB");
    if (m->paged && m->key_form > BK_KEY_FORM_EMAIL)
        FAIL(BK_ECORRUPT, "unknown key form");
    /* One encoding per object: version 1 has no key form (its bytes are
     * reserved, zero), version 2 always has one. */
    if (m->version == BKF_VERSION && m->key_form != 0)
        FAIL(BK_ECORRUPT, "reserved header bytes are not zero");
    if (m->version == BKF_VERSION_KEY_FORM &&
        (m->key_form == BK_KEY_FORM_UNRECORDED || m->key_form > BK_KEY_FORM_EMAIL))
        FAIL(BK_ECORRUPT, "unknown key form");
    return BK_OK;
}

/* A RedisBloom chain's own rules (docs/FORMAT.md, "RedisBloom chains"):
 * RedisBloom's options, the hash they imply, its fixed tightening and an
 * integer growth. */
static bk_status_t check_redisbloom_chain(const bkf_meta_t *m, const char **why)
{
    const uint32_t known = BK_REDISBLOOM_NOROUND | BK_REDISBLOOM_ENTS_IS_BITS |
                           BK_REDISBLOOM_FORCE64 | BK_REDISBLOOM_NO_SCALING;
    if (m->rb_options & ~known)
        FAIL(BK_ECORRUPT, "unknown RedisBloom options");
    uint32_t want_hash = m->rb_options & BK_REDISBLOOM_FORCE64 ? BK_HASH_MURMUR64A
                                                                : BK_HASH_MURMUR2;
    if (m->hash != want_hash || m->seed != 0)
        FAIL(BK_ECORRUPT, "RedisBloom chain with another hash");
    bool nonscaling = (m->rb_options & BK_REDISBLOOM_NO_SCALING) != 0;
    if ((m->flags & BKF_FLAG_FIRST_ERROR) || ((m->flags & BKF_FLAG_NONSCALING) != 0) != nonscaling)
        FAIL(BK_ECORRUPT, "RedisBloom chain flags disagree with its options");
    if (!same_f64(m->tightening, 0.5) || !(m->growth >= 1.0 && m->growth <= 4294967295.0) ||
        m->growth != floor(m->growth))
        FAIL(BK_ECORRUPT, "RedisBloom chain with a growth or tightening it cannot have");
    return BK_OK;
}

/* The chain fields: set (and in range) for scalable filters, zero else. */
static bk_status_t check_chain_fields(const bkf_meta_t *m, const char **why)
{
    const bki_class_t *c = bki_class_of(m->kind);
    if (c && c->nparts && m->nparts != c->nparts)
        FAIL(BK_ECORRUPT, "part count is not the one the kind has");
    if (c && c->own_header)
        return BK_OK; /* checked by the kind's check, once the parts are known */
    if (!bki_kind_is((bk_kind_t)m->kind, BKI_KIND_CHAIN)) {
        if (m->nparts != 1 && !c)
            FAIL(BK_ECORRUPT, "part count is not 1 for a single-array kind");
        if (m->sub_kind != 0 || m->flags != 0 || !same_f64(m->growth, 0.0) ||
            !same_f64(m->tightening, 0.0) || m->rb_options != 0)
            FAIL(BK_ECORRUPT, "scalable-only fields set on another kind");
        return BK_OK;
    }
    if (!bki_kind_is((bk_kind_t)m->sub_kind, BKI_KIND_SUB_FILE))
        FAIL(BK_ECORRUPT, "scalable filter with an invalid sub-filter kind");
    if (bki_kind_is((bk_kind_t)m->sub_kind, BKI_KIND_RB_LINK)) {
        bk_status_t st = check_redisbloom_chain(m, why);
        if (st != BK_OK)
            return st;
    } else if (m->rb_options != 0) {
        FAIL(BK_ECORRUPT, "reserved header bytes are not zero");
    }
    if (m->flags & ~BKF_FLAGS_KNOWN)
        FAIL(BK_ECORRUPT, "unknown flags set");
    /* The same bounds bk_filter_create puts on these. */
    if (!(m->growth >= 1.0) || isinf(m->growth))
        FAIL(BK_ECORRUPT, "scalable growth factor is not a finite number >= 1");
    if (!(m->tightening > 0.0 && m->tightening < 1.0))
        FAIL(BK_ECORRUPT, "scalable tightening ratio is not in (0, 1)");
    if (!(m->fpr > 0.0 && m->fpr < 1.0))
        FAIL(BK_ECORRUPT, "false-positive rate is not in (0, 1)");
    if (m->nparts > BKI_SCALABLE_MAX_SUBS)
        FAIL(BK_ECORRUPT, "scalable chain longer than the library allows");
    return BK_OK;
}

/* Part i's size and place: it must start at off and fit in total bytes. */
static bk_status_t check_part_extent(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p,
                                     uint64_t off, uint64_t total, const char **why)
{
    const uint8_t *e = m->table + (uint64_t)BKF_PART * i;
    bool reserved_zero = bki_kind_is((bk_kind_t)p->kind, BKI_KIND_RB_LINK)
                             ? all_zero(e + P_RB_N2 + 4, 4) && all_zero(e + P_RB_END, BKF_PART - P_RB_END)
                         : bki_kind_is((bk_kind_t)p->kind, BKI_KIND_SEGMENTS)
                             ? all_zero(e + P_FZ_END, BKF_PART - P_FZ_END)
                             : all_zero(e + P_RESERVED, BKF_PART - P_RESERVED);
    if (!reserved_zero)
        FAIL(BK_ECORRUPT, "reserved part-table bytes are not zero");
    const bki_class_t *c = bki_class_of(m->kind);
    bool chain = bki_kind_is((bk_kind_t)m->kind, BKI_KIND_CHAIN);
    uint32_t want_kind = chain ? m->sub_kind : m->kind;
    if (p->kind != want_kind && !(chain && deep_part_ok(m->sub_kind, p->kind)))
        FAIL(BK_ECORRUPT, "part kind disagrees with the header");
    uint64_t len = c && c->part_len ? c->part_len(m, i, p) : payload_len(p->kind, p->cells);
    if (len == 0)
        FAIL(BK_ECORRUPT, "cell count is zero or not a whole number of units");
    if (len > BKI_MAX_PAYLOAD_BYTES)
        FAIL(BK_ECORRUPT, "payload larger than the 64 TiB limit");
    if (p->length != len)
        FAIL(BK_ECORRUPT, "payload length disagrees with the cell count");
    if (p->offset != off)
        FAIL(BK_ECORRUPT, "payload offset is not where the layout puts it");
    /* off <= total here and len <= 2^46, so this cannot overflow */
    if (bkf_align64(len) > total - off)
        FAIL(BK_ECORRUPT, "payload extends past the end of the data");
    return BK_OK;
}

/* Part fields: a filter part's k, rate and seed; a bitmap part's zeros. */
static bk_status_t check_part_fields(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p,
                                     const char **why)
{
    const bki_class_t *c = bki_class_of(m->kind);
    if (c && c->check)
        return c->check(m, i, p, why);
    if (!is_filter_kind(m->kind)) {
        if (p->k != 0 || p->items != 0 || p->seed != 0 || !same_f64(p->fpr, 0.0) ||
            p->capacity != p->cells || m->capacity != p->cells)
            FAIL(BK_ECORRUPT, "bitmap part fields are inconsistent");
        return BK_OK;
    }
    if (!bki_layout_k_ok((bk_kind_t)p->kind, p->k))
        FAIL(BK_ECORRUPT, "probe count k is not one the kind allows");
    if (!(p->fpr >= 0.0 && p->fpr <= 1.0))
        FAIL(BK_ECORRUPT, "false-positive rate is not in [0, 1]");
    if (bki_kind_is((bk_kind_t)p->kind, BKI_KIND_RB_LINK) &&
        (p->rb_n2 > 63 || (p->rb_n2 && (UINT64_C(1) << p->rb_n2) > p->cells) ||
         !(p->rb_bpe > 0.0) || isinf(p->rb_bpe) || !(p->fpr > 0.0 && p->fpr < 1.0) ||
         p->capacity == 0))
        FAIL(BK_ECORRUPT, "RedisBloom link fields RedisBloom would refuse");
    /* A chain hashes a key once, with the parent's seed, for all its
     * sub-filters: a sub-filter with another seed would give false
     * negatives. */
    if (p->seed != m->seed)
        FAIL(BK_ECORRUPT, "part seed disagrees with the header");
    if (!bki_kind_is((bk_kind_t)m->kind, BKI_KIND_CHAIN) &&
        (p->capacity != m->capacity || !same_f64(p->fpr, m->fpr) || p->items != m->items))
        FAIL(BK_ECORRUPT, "part fields disagree with the header");
    return BK_OK;
}

bk_status_t bkf_parse_meta(const uint8_t *b, uint64_t have, uint64_t total, bkf_meta_t *m,
                           const char **why)
{
    bk_status_t st = check_meta_bytes(b, have, total, why);
    if (st != BK_OK)
        return st;
    decode_header(b, m);
    st = check_header_fields(m, total, why);
    if (st == BK_OK)
        st = check_chain_fields(m, why);
    uint64_t off = bkf_meta_len(m->nparts);
    for (uint32_t i = 0; i < m->nparts && st == BK_OK; i++) {
        bkf_part_t p;
        bkf_decode_part(m, i, &p);
        st = check_part_extent(m, i, &p, off, total, why);
        if (st == BK_OK)
            st = check_part_fields(m, i, &p, why);
        off += bkf_align64(p.length);
    }
    m->body_end = off;
    if (st == BK_OK && m->paged) {
        bkf_paging_t g;
        bkf_meta_paging(m, &g); /* m->body_end is off */
        bkf_part_t p;
        bkf_decode_part(m, 0, &p);
        if (p.sum != 0)
            FAIL(BK_ECORRUPT, "a paged file's payload checksum is not zero");
        if (p.length < BKF_PAGED_MIN)
            FAIL(BK_ECORRUPT, "page checksums on a payload too small to have them");
        off = g.size;
    }
    if (st == BK_OK && off != m->file_size)
        FAIL(BK_ECORRUPT, "file size disagrees with the payload sizes");
    return st;
}

bk_status_t bkf_verify_payloads(const bkf_meta_t *m, const bkf_source_t *s, const char **why)
{
    for (uint32_t i = 0; i < m->nparts; i++) {
        bkf_part_t p;
        bkf_decode_part(m, i, &p);
        /* a paged file's part 0 is checked by its pages, below */
        bk_status_t st = bkf_check_payload(s, &p, s->buf + p.offset, !(m->paged && i == 0), why);
        if (st != BK_OK)
            return st;
    }
    return m->paged ? bkf_pages_verify(m, s, NULL, why) : BK_OK;
}

/* ========================================================================
 * Building filters from validated metadata
 * ======================================================================== */

/* A single-array filter of part p's geometry: its payload borrowed from
 * the mapping at map + p->offset, or allocated zeroed when map is NULL. */
static bk_status_t new_part_filter(bk_filter_t **out, const bkf_meta_t *m, const bkf_part_t *p,
                                   uint8_t *map, const char **why)
{
    bk_filter_t *f = NULL;
    bk_status_t st = bki_array_new(&f, (bk_kind_t)p->kind, p->cells, p->k,
                                   (bk_hash_id_t)m->hash, p->seed, map ? map + p->offset : NULL);
    if (st != BK_OK)
        FAIL(st == BK_EINVAL ? BK_ECORRUPT : st,
             st == BK_ENOMEM ? "out of memory" : "geometry the library cannot build");
    if (f->nbytes != p->length) {
        bki_array_free(f);
        FAIL(BK_ECORRUPT, "geometry the library cannot build");
    }
    f->capacity = p->capacity;
    f->fpr = p->fpr;
    f->rb_n2 = p->rb_n2;
    f->rb_bpe = p->rb_bpe;
    bki_set_items(f, p->items);
    *out = f;
    return BK_OK;
}

/* Part i as a filter, its payload in place: borrowed (padding checked),
 * or read from s (and verified, for readers; buffers were verified in
 * place before). */
static bk_status_t load_part(bk_filter_t **out, const bkf_meta_t *m, uint32_t i,
                             const bkf_source_t *s, uint8_t *map, const char **why)
{
    bkf_part_t p;
    bkf_decode_part(m, i, &p);
    bk_filter_t *f;
    bk_status_t st = new_part_filter(&f, m, &p, map, why);
    if (st != BK_OK)
        return st;
    if (map) {
        st = bkf_check_payload(s, &p, NULL, false, why);
    } else if (s->deferred) {
        st = BK_OK; /* the loader fills and verifies it */
    } else {
        st = bkf_source_read(s, p.offset, f->data, p.length);
        if (st != BK_OK && why)
            *why = "read error";
        if (st == BK_OK && !s->buf)
            st = bkf_check_payload(s, &p, f->data, !m->paged, why);
        if (st == BK_OK && !s->buf && m->paged)
            st = bkf_pages_verify(m, s, f->data, why);
    }
    if (st != BK_OK) {
        bki_array_free(f);
        return st;
    }
    *out = f;
    return BK_OK;
}

static bk_status_t build_chain(bk_filter_t **out, const bkf_meta_t *m, const bkf_source_t *s,
                               uint8_t *map, const char **why)
{
    bki_chain_t c = {(bk_hash_id_t)m->hash,
                     m->seed,
                     m->capacity,
                     m->fpr,
                     m->items,
                     (bk_kind_t)m->sub_kind,
                     m->growth,
                     m->tightening,
                     (m->flags & BKF_FLAG_NONSCALING) != 0,
                     (m->flags & BKF_FLAG_FIRST_ERROR) != 0,
                     0,
                     m->rb_options};
    bk_filter_t *top;
    if (bki_scalable_shell(&top, &c, m->nparts) != BK_OK)
        FAIL(BK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < m->nparts; i++) {
        bk_filter_t *f;
        bk_status_t st = load_part(&f, m, i, s, map, why);
        if (st != BK_OK) {
            bki_scalable_free(top);
            return st;
        }
        bki_scalable_append(top, f);
    }
    *out = top;
    return BK_OK;
}

bk_status_t bkf_build_filter(bk_filter_t **out, const bkf_meta_t *m, const bkf_source_t *s,
                             uint8_t *map, const char **why)
{
    if (!is_filter_kind(m->kind))
        FAIL(BK_EKIND, "the data holds a bitmap, not a filter");
    bk_status_t st;
    const bki_class_t *c = bki_class_of(m->kind);
    if (bki_kind_is((bk_kind_t)m->kind, BKI_KIND_CHAIN))
        st = build_chain(out, m, s, map, why);
    else if (c)
        st = c->build(out, m, s, map, why);
    else
        st = load_part(out, m, 0, s, map, why);
    if (st == BK_OK)
        (*out)->key_form = (bk_key_form_t)m->key_form;
    return st;
}

/* ========================================================================
 * Public API: filters in memory
 * ======================================================================== */

uint64_t bk_filter_serialized_size(const bk_filter_t *f)
{
    bkf_obj_t o;
    if (bkf_obj_from_filter(&o, f) != BK_OK)
        return 0;
    return bkf_obj_size(&o);
}

bk_status_t bk_filter_serialize(const bk_filter_t *f, void *buf, size_t cap, size_t *written)
{
    if (f && bki_pages_all(f, NULL) != BK_OK) /* a paged file's pages, checked first */
        return BK_ECORRUPT;
    bkf_obj_t o;
    bk_status_t st = bkf_obj_from_filter(&o, f);
    if (st != BK_OK)
        return st;
    return bkf_obj_serialize(&o, buf, cap, written);
}

bk_status_t bk_filter_deserialize(bk_filter_t **out, const void *buf, size_t len,
                                  const char **why)
{
    if (!out || (!buf && len))
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    if (len == 0)
        FAIL(BK_ECORRUPT, "empty input");
    bkf_meta_t m;
    bk_status_t st = bkf_parse_meta(buf, len, len, &m, why);
    if (st != BK_OK)
        return st;
    if (!is_filter_kind(m.kind))
        FAIL(BK_EKIND, "the data holds a bitmap, not a filter");
    bkf_source_t s = {.buf = buf, .read = NULL, .fd = -1};
    st = bkf_verify_payloads(&m, &s, why);
    if (st != BK_OK)
        return st;
    return bkf_build_filter(out, &m, &s, NULL, why);
}

bk_status_t bk_peek_kind(const void *buf, size_t len, bk_kind_t *out)
{
    if (!buf || !out)
        return BK_EINVAL;
    const char *why;
    const uint8_t *b = buf;
    bk_status_t st = bkf_check_prefix(b, len, &why);
    if (st != BK_OK)
        return st;
    uint32_t kind = bkf_get_u32(b + H_KIND);
    if (!bki_kind_is((bk_kind_t)kind, BKI_KIND_TOP))
        return BK_ECORRUPT;
    /* With the whole metadata at hand, make sure the kind is not a
     * damaged byte. */
    uint32_t nparts = bkf_get_u32(b + H_NPARTS);
    if (nparts == 0 || nparts > BKF_MAX_PARTS)
        return BK_ECORRUPT;
    uint64_t table_end = BKF_HEADER + (uint64_t)BKF_PART * nparts;
    if (len >= table_end + 8 && get_u64(b + table_end) != bkf_checksum(b, table_end))
        return BK_ECORRUPT;
    *out = (bk_kind_t)kind;
    return BK_OK;
}
