/*
 * Cuckoo filters in the file format (docs/FORMAT.md, "Cuckoo filters"):
 * the cuckoo-specific half of the codec, called by codec.c where a cuckoo
 * filter differs from the other kinds.
 *
 * A cuckoo filter (native flavour: the only one a bk_filter_t holds) is
 * one part per sub-filter, oldest first, each payload its slots as in
 * memory. The header keeps the filter's own fields: capacity, fpr, items
 * (fingerprints held), growth (the expansion), and in its reserved bytes
 * the fingerprint width, the kick limit and the removals since the last
 * compaction. Sub-filter i has part 0's buckets times expansion^i.
 */
#include "cuckoo.h"
#include "wire.h"

#include <math.h>
#include <string.h>

void bkf_cuckoo_obj(bkf_obj_t *o, const bk_filter_t *f)
{
    const bk_cuckoo_t *c = f->cuckoo;
    o->nparts = c->nsubs;
    o->items = c->items;
    o->growth = c->expansion;
    o->ck_fp_bits = c->fp_bytes * 8;
    o->ck_iterations = c->max_iterations;
    o->ck_deletes = c->deletes;
}

void bkf_cuckoo_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p)
{
    const bk_cuckoo_t *c = o->f->cuckoo;
    p->kind = o->kind;
    p->k = c->bucket_size;
    p->cells = c->subs[i].buckets * c->bucket_size;
    p->capacity = o->capacity;
    p->fpr = o->fpr;
    p->seed = o->seed;
    p->data = c->subs[i].data;
    p->length = c->subs[i].nbytes;
}

void bkf_cuckoo_put_header(const bkf_obj_t *o, uint8_t *hdr)
{
    put_u32(hdr + H_CK_FP_BITS, o->ck_fp_bits);
    put_u32(hdr + H_CK_ITERATIONS, o->ck_iterations);
    bkf_put_u64(hdr + H_CK_DELETES, o->ck_deletes);
}

void bkf_cuckoo_get_header(const uint8_t *hdr, bkf_meta_t *m)
{
    m->ck_fp_bits = bkf_get_u32(hdr + H_CK_FP_BITS);
    m->ck_iterations = bkf_get_u32(hdr + H_CK_ITERATIONS);
    m->ck_deletes = bkf_get_u64(hdr + H_CK_DELETES);
}

bool bkf_cuckoo_header_reserved_zero(const uint8_t *hdr, uint32_t end)
{
    /* the kick limit is a 32-bit field in an 8-byte slot */
    return bkf_all_zero(hdr + H_CK_ITERATIONS + 4, 4) &&
           bkf_all_zero(hdr + H_CK_RESERVED, end - H_CK_RESERVED);
}

uint64_t bkf_cuckoo_part_len(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p)
{
    (void)i;
    uint32_t bytes = m->ck_fp_bits / 8;
    if (p->k == 0 || p->k > 255 || p->cells == 0 || p->cells % p->k ||
        (bytes != 1 && bytes != 2 && bytes != 4) || p->cells > BKI_MAX_PAYLOAD_BYTES / bytes)
        return 0;
    return p->cells * bytes;
}

bk_status_t bkf_cuckoo_check(const bkf_meta_t *m, uint32_t at, const bkf_part_t *part,
                             const char **why)
{
    (void)part;
    if (at > 0)
        return BK_OK; /* every part is checked with the first */
    double e = m->growth;
    if (!bki_cuckoo_hash_ok(m->hash))
        FAIL(BK_ECORRUPT, "cuckoo filter with another hash than XXH3 or the default");
    if (m->capacity == 0 || !(m->fpr > 0.0 && m->fpr < 1.0))
        FAIL(BK_ECORRUPT, "cuckoo filter with a capacity of 0 or a rate outside (0, 1)");
    if (m->ck_fp_bits != 8 && m->ck_fp_bits != 16 && m->ck_fp_bits != 32)
        FAIL(BK_ECORRUPT, "cuckoo fingerprint width is not 8, 16 or 32 bits");
    if (m->ck_iterations == 0 || m->ck_iterations > 65535)
        FAIL(BK_ECORRUPT, "cuckoo kick limit out of range");
    if (!(e >= 0.0 && e <= 32768.0) || e != floor(e) || ((uint64_t)e & ((uint64_t)e - 1)))
        FAIL(BK_ECORRUPT, "cuckoo expansion is not 0 or a power of two");
    if (m->sub_kind != 0 || m->flags != 0 || m->tightening != 0.0 || m->rb_options != 0)
        FAIL(BK_ECORRUPT, "chain fields set on a cuckoo filter");
    if (m->nparts > 4096 || (e == 0.0 && m->nparts != 1))
        FAIL(BK_ECORRUPT, "cuckoo sub-filter count out of range");
    bkf_part_t first;
    bkf_decode_part(m, 0, &first);
    uint64_t want = first.cells;
    for (uint32_t i = 0; i < m->nparts; i++) {
        bkf_part_t p;
        bkf_decode_part(m, i, &p);
        if (p.k != first.k || p.cells != want)
            FAIL(BK_ECORRUPT, "cuckoo sub-filter sizes do not follow the expansion");
        if (p.capacity != m->capacity || memcmp(&p.fpr, &m->fpr, sizeof p.fpr) != 0 ||
            p.items != 0 || p.seed != m->seed)
            FAIL(BK_ECORRUPT, "part fields disagree with the header");
        if (i + 1 < m->nparts && want > UINT64_MAX / (uint64_t)e)
            FAIL(BK_ECORRUPT, "cuckoo sub-filter sizes do not follow the expansion");
        want *= (uint64_t)e;
    }
    return BK_OK;
}

bk_status_t bkf_cuckoo_build(bk_filter_t **out, const bkf_meta_t *m, const bkf_source_t *s,
                             uint8_t *map, const char **why)
{
    bkf_part_t first;
    bkf_decode_part(m, 0, &first);
    bk_cuckoo_t *c = bki_cuckoo_shell(first.k, m->ck_fp_bits, m->ck_iterations,
                                      (uint32_t)m->growth, m->seed);
    if (!c)
        FAIL(BK_ENOMEM, "out of memory");
    c->capacity = m->capacity;
    c->fpr = m->fpr;
    c->items = m->items;
    c->deletes = m->ck_deletes;
    c->buckets = first.cells / first.k;
    for (uint32_t i = 0; i < m->nparts; i++) {
        bkf_part_t p;
        bkf_decode_part(m, i, &p);
        bk_status_t st = bki_cuckoo_add_sub(c, p.cells / p.k, map ? map + p.offset : NULL);
        if (st == BK_OK)
            st = bkf_part_payload(s, &p, map != NULL, c->subs[i].data, why);
        else if (why)
            *why = "out of memory";
        if (st != BK_OK) {
            bk_cuckoo_free(c);
            return st;
        }
    }
    if (bki_cuckoo_wrap(out, c, (bk_kind_t)m->kind, m->hash) != BK_OK) /* c is freed */
        FAIL(BK_ENOMEM, "out of memory");
    return BK_OK;
}
