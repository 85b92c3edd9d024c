/*
 * The touched-page summary of large bitmaps (internal.h: bki_touched_t).
 *
 * A bitmap over 2^48 values has 32 TiB of address space; the values of one
 * file touch a few pages of it. Without a record of which, counting or
 * listing the values reads every page: hours for a one-line input. l1 has
 * one bit per 4 KiB payload page, l2 one bit per 64 l1 words (4096 pages,
 * 16 MiB of payload), so a pass reads l2 whole (2^21 bits at the largest
 * n), then only the l1 words and payload pages behind set bits. Both live
 * in the same lazily backed anonymous memory as large payloads.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>

static uint64_t *summary_alloc(uint64_t bits, uint64_t *bytes, bki_mem_t *mem)
{
    uint64_t words = (bits + 63) / 64;
    *bytes = (words * 8 + 63) & ~(uint64_t)63;
    return (uint64_t *)bki_payload_alloc(*bytes, mem);
}

bk_status_t bki_touched_init(bki_touched_t *t, uint64_t nbytes)
{
    memset(t, 0, sizeof *t);
    if (nbytes < BKI_TOUCHED_MIN)
        return BK_OK;
    t->pages = (nbytes + BKI_PAGE_WORDS * 8 - 1) / (BKI_PAGE_WORDS * 8);
    t->l1 = summary_alloc(t->pages, &t->l1_bytes, &t->l1_mem);
    t->l2 = summary_alloc((t->pages + 4095) >> 12, &t->l2_bytes, &t->l2_mem);
    if (!t->l1 || !t->l2) {
        bki_touched_free(t);
        return BK_ENOMEM;
    }
    return BK_OK;
}

void bki_touched_free(bki_touched_t *t)
{
    bki_payload_free((uint8_t *)t->l1, t->l1_bytes, t->l1_mem);
    bki_payload_free((uint8_t *)t->l2, t->l2_bytes, t->l2_mem);
    memset(t, 0, sizeof *t);
}

void bki_touched_none(bki_touched_t *t)
{
    if (!t->l1)
        return;
    bki_payload_zero((uint8_t *)t->l1, t->l1_bytes, t->l1_mem);
    bki_payload_zero((uint8_t *)t->l2, t->l2_bytes, t->l2_mem);
    t->marked = 0;
}

void bki_touched_all(bki_touched_t *t)
{
    if (!t->l1)
        return;
    /* Bits past the last page are set too: harmless, since every pass
     * stops at t->pages. */
    memset(t->l1, 0xff, (size_t)t->l1_bytes);
    memset(t->l2, 0xff, (size_t)t->l2_bytes);
    t->marked = t->pages;
}

void bki_touched_merge(bki_touched_t *dst, const bki_touched_t *src)
{
    if (!dst->l1)
        return;
    if (!src->l1) {
        bki_touched_all(dst);
        return;
    }
    /* Only where src has pages: its l2 says which l1 words to read. */
    for (uint64_t page = bki_touched_next(src, 0); page < src->pages;
         page = bki_touched_next(src, page + 1))
        bki_touched_mark(dst, page * BKI_PAGE_WORDS);
}

uint64_t bki_touched_next(const bki_touched_t *t, uint64_t page)
{
    if (!t->l1)
        return page;
    uint64_t l1_words = (t->pages + 63) / 64;
    while (page < t->pages) {
        uint64_t group = page >> 12;
        uint64_t gw = t->l2[group >> 6] & (~UINT64_C(0) << (group & 63));
        if (!gw) { /* no page in the rest of these 64 groups */
            page = ((group >> 6) + 1) << 18;
            continue;
        }
        uint64_t g = ((group >> 6) << 6) | (uint64_t)__builtin_ctzll(gw);
        if (g != group) /* the next group with a page */
            page = g << 12;
        uint64_t wi = page >> 6, wend = (g + 1) << 6;
        if (wend > l1_words)
            wend = l1_words;
        uint64_t w = t->l1[wi] & (~UINT64_C(0) << (page & 63));
        for (;;) {
            if (w) {
                uint64_t found = (wi << 6) | (uint64_t)__builtin_ctzll(w);
                return found < t->pages ? found : t->pages;
            }
            if (++wi >= wend)
                break;
            w = t->l1[wi];
        }
        page = (g + 1) << 12;
    }
    return t->pages;
}
