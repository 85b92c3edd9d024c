/*
 * Static filters (fuse8, fuse16, fuse32) in the file format (docs/FORMAT.md,
 * "Static filters"): the static-specific half of the codec, called by
 * codec.c where a static filter differs from the other kinds.
 *
 * A static filter is one part per hash range, in order; each payload is
 * the part's fingerprints (1, 2 or 4 bytes each, little-endian) as in
 * memory. The header holds the key hash's id and seed, the key count
 * (capacity and items) and the rate asked for; each entry its part's key
 * count, construction seed, cells and, in the entry's reserved bytes, the
 * segment length's log2 and the segment count.
 */
#include "codec.h"
#include "fuse.h"

#include <string.h>


bk_status_t bkf_fuse_obj(bkf_obj_t *o, const bk_filter_t *f)
{
    const struct bki_fuse *z = f->fuse;
    if (!z)
        return BK_EINVAL;
    for (uint32_t i = 0; i < z->nparts; i++)
        if (!z->parts[i].data)
            return BK_EINVAL; /* a part never built: nothing a load accepts */
    o->nparts = z->nparts;
    o->capacity = o->items = z->keys;
    return BK_OK;
}

void bkf_fuse_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p)
{
    const bki_fuse_part_t *z = &o->f->fuse->parts[i];
    p->kind = o->kind;
    p->k = 3;
    p->cells = z->cells;
    p->capacity = p->items = z->keys;
    p->fpr = o->fpr;
    p->seed = z->seed;
    p->fz_seg_log = z->seg_log;
    p->fz_seg_count = z->seg_count;
    p->data = z->data;
    p->length = z->nbytes;
}

uint64_t bkf_fuse_part_len(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p)
{
    (void)i;
    if (p->fz_seg_log < 2 || p->fz_seg_log > BKI_FUSE_MAX_SEG_LOG || p->fz_seg_count == 0 ||
        p->cells != ((uint64_t)p->fz_seg_count + 2) << p->fz_seg_log)
        return 0;
    return p->cells * (bki_kind_fp_bits((bk_kind_t)m->kind) / 8);
}

bk_status_t bkf_fuse_check(const bkf_meta_t *m, uint32_t at, const bkf_part_t *part,
                           const char **why)
{
    (void)part;
    if (at > 0)
        return BK_OK; /* every part is checked with the first */
    if (!bki_fuse_hash_ok(m->hash))
        FAIL(BK_ECORRUPT, "static filter with another hash than XXH3 or the default");
    double rate = bki_fuse_rate(m->kind);
    if (!(m->fpr >= rate && m->fpr < 1.0))
        FAIL(BK_ECORRUPT, "static filter's rate is below its fingerprints' or not below 1");
    if (m->sub_kind != 0 || m->flags != 0 || m->growth != 0.0 || m->tightening != 0.0 ||
        m->rb_options != 0)
        FAIL(BK_ECORRUPT, "chain fields set on a static filter");
    if (m->nparts == 0 || m->nparts > BKI_FUSE_MAX_PARTS)
        FAIL(BK_ECORRUPT, "static filter part count out of range");
    if (m->capacity != m->items)
        FAIL(BK_ECORRUPT, "static filter's capacity is not its key count");
    uint64_t keys = 0;
    for (uint32_t i = 0; i < m->nparts; i++) {
        bkf_part_t p;
        bkf_decode_part(m, i, &p);
        if (p.k != 3 || p.capacity != p.items || p.items > BKI_FUSE_PART_MAX_KEYS ||
            memcmp(&p.fpr, &m->fpr, sizeof p.fpr) != 0)
            FAIL(BK_ECORRUPT, "part fields disagree with the header");
        /* 1.125 cells a key at the least: fewer cannot have peeled */
        if (p.cells < p.items + p.items / 8)
            FAIL(BK_ECORRUPT, "static filter part with fewer cells than its keys need");
        keys += p.items;
    }
    if (keys != m->items)
        FAIL(BK_ECORRUPT, "static filter's key count is not its parts' sum");
    return BK_OK;
}

bk_status_t bkf_fuse_build(bk_filter_t **out, const bkf_meta_t *m, const bkf_source_t *s,
                           uint8_t *map, const char **why)
{
    struct bki_fuse *z = bki_fuse_shell(bki_kind_fp_bits((bk_kind_t)m->kind), m->nparts);
    if (!z)
        FAIL(BK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < m->nparts; i++) {
        bkf_part_t p;
        bkf_decode_part(m, i, &p);
        bki_fuse_part_t *q = &z->parts[i];
        q->seed = p.seed;
        q->keys = p.items;
        q->cells = p.cells;
        q->nbytes = p.length;
        q->seg_log = p.fz_seg_log;
        q->seg_count = p.fz_seg_count;
        bki_fuse_part_shape(q);
        if (map) {
            q->data = map + p.offset;
            q->mem = BKI_MEM_BORROWED;
        } else if (!(q->data = bki_payload_alloc(p.length, &q->mem))) {
            bki_fuse_free(z);
            FAIL(BK_ENOMEM, "out of memory");
        }
        bk_status_t st = bkf_part_payload(s, &p, map != NULL, q->data, why);
        if (st != BK_OK) {
            bki_fuse_free(z);
            return st;
        }
    }
    if (bki_fuse_wrap(out, z, (bk_hash_id_t)m->hash, m->seed, m->fpr) != BK_OK)
        FAIL(BK_ENOMEM, "out of memory"); /* z is freed */
    return BK_OK;
}
