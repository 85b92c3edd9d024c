/*
 * The pieces of reading a filter file that both the codec (codec.c) and
 * the window kind's codec (window_codec.c) use: a source's bytes, a
 * part-table entry, a payload's padding, checksum and invariants. Below
 * both, so that the codec can call the window codec for what a window
 * stores differently without the two calling each other.
 */
#include "wire.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <string.h>

uint64_t bkf_checksum(const void *p, uint64_t n)
{
    return XXH3_64bits(p, (size_t)n);
}

bk_status_t bkf_source_read(const bkf_source_t *s, uint64_t off, void *dst, uint64_t n)
{
    if (s->buf) {
        memcpy(dst, s->buf + off, (size_t)n);
        return BK_OK;
    }
    return s->read(s, off, dst, n);
}

void bkf_decode_part(const bkf_meta_t *m, uint32_t i, bkf_part_t *p)
{
    const uint8_t *e = m->table + (uint64_t)BKF_PART * i;
    memset(p, 0, sizeof *p);
    p->kind = bkf_get_u32(e + P_KIND);
    p->k = bkf_get_u32(e + P_K);
    p->cells = get_u64(e + P_CELLS);
    p->capacity = get_u64(e + P_CAPACITY);
    p->fpr = get_f64(e + P_FPR);
    p->items = get_u64(e + P_ITEMS);
    p->seed = get_u64(e + P_SEED);
    p->offset = get_u64(e + P_OFFSET);
    p->length = get_u64(e + P_LENGTH);
    p->sum = get_u64(e + P_CHECKSUM);
    if (bki_kind_is((bk_kind_t)p->kind, BKI_KIND_RB_LINK)) {
        p->rb_n2 = bkf_get_u32(e + P_RB_N2);
        p->rb_bpe = get_f64(e + P_RB_BPE);
    }
    if (bki_kind_is((bk_kind_t)p->kind, BKI_KIND_SEGMENTS)) {
        p->fz_seg_log = bkf_get_u32(e + P_FZ_SEG_LOG);
        p->fz_seg_count = bkf_get_u32(e + P_FZ_SEG_COUNT);
    }
}

void bkf_meta_paging(const bkf_meta_t *m, bkf_paging_t *g)
{
    bkf_part_t p;
    bkf_decode_part(m, 0, &p);
    uint64_t body = bkf_meta_len(m->nparts);
    bkf_paging_of(body, body + bkf_align64(p.length), m->body_end, g);
}

/* A bitmap payload's invariants: values >= n clear, and 2-bit cells never
 * 3. A checksum-valid file that breaks these would give wrong counts. */
static bk_status_t check_bitmap_bits(const bkf_part_t *p, const uint8_t *dst, const char **why)
{
    unsigned bits = bki_layout_of((bk_kind_t)p->kind)->cell_bits; /* 1 or 2 */
    unsigned per_byte = 8 / bits;
    uint64_t used = p->cells / per_byte;
    unsigned rem = (unsigned)(p->cells % per_byte);
    if (rem) {
        uint8_t mask = (uint8_t)(0xffu << (rem * (8 / per_byte)));
        if (dst[used] & mask)
            FAIL(BK_ECORRUPT, "bits set past the end of the bitmap");
        used++;
    }
    if (!all_zero(dst + used, (size_t)(p->length - used)))
        FAIL(BK_ECORRUPT, "bits set past the end of the bitmap");
    if (bits == 2) {
        for (uint64_t i = 0; i < p->length; i++) {
            uint8_t b = dst[i];
            if (b & (b >> 1) & 0x55)
                FAIL(BK_ECORRUPT, "2-bit bitmap cell holds the invalid state 3");
        }
    }
    return BK_OK;
}

bk_status_t bkf_check_payload(const bkf_source_t *s, const bkf_part_t *p, const uint8_t *dst,
                              bool verify_sum, const char **why)
{
    uint8_t pad[64];
    uint64_t padn = bkf_align64(p->length) - p->length;
    if (padn) {
        if (bkf_source_read(s, p->offset + p->length, pad, padn) != BK_OK)
            FAIL(BK_EIO, "read error");
        if (!all_zero(pad, (size_t)padn))
            FAIL(BK_ECORRUPT, "padding after a payload is not zero");
    }
    if (!verify_sum)
        return BK_OK;
    if (bkf_checksum(dst, p->length) != p->sum)
        FAIL(BK_ECORRUPT, "payload checksum mismatch (data damaged)");
    if (bki_kind_is((bk_kind_t)p->kind, BKI_KIND_BITMAP))
        return check_bitmap_bits(p, dst, why);
    return BK_OK;
}

bk_status_t bkf_part_payload(const bkf_source_t *s, const bkf_part_t *p, bool mapped, uint8_t *dst,
                             const char **why)
{
    if (mapped)
        return bkf_check_payload(s, p, NULL, false, why);
    if (s->deferred)
        return BK_OK;
    bk_status_t st = bkf_source_read(s, p->offset, dst, p->length);
    if (st != BK_OK) {
        if (why)
            *why = "read error";
        return st;
    }
    return s->buf ? BK_OK : bkf_check_payload(s, p, dst, true, why);
}
