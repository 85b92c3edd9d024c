/*
 * Per-kind layout facts, from each kind's row in kinds.c: how many cells a
 * kind's payload may have, how many bits a cell takes, how cells group into
 * 64-byte lines, and how many probes a key may make. Everything above this
 * file (the kinds, sizing, dispatch, the file format, bitmaps) asks here
 * instead of writing the numbers again.
 *
 * Also the constants of the in-line probe scheme that blocked and counting
 * filters share (lane salts; line addressing is inline in internal.h).
 */
#include "internal.h"


/* 16 odd multipliers, one per lane: the low 32 bits of splitmix64(i) for
 * i = 0..15, forced odd. Independent-looking constants matter: multiples of
 * one constant would make a collision in one lane predict one in the next.
 * Aligned for the AVX2 paths' aligned loads. */
const uint32_t bki_lane_salt[BKI_LINE_LANES] __attribute__((aligned(64))) = {
    0x7b1dcdafu, 0x89025cc1u, 0x1c9756cfu, 0xdb018fedu, 0xe2338acbu, 0xa389c35bu,
    0xadefe001u, 0x59320dd7u, 0xef953637u, 0xbe706065u, 0x8a582fcbu, 0x2380309du,
    0x99de8f03u, 0xf8ad8affu, 0x35dbe63fu, 0xabf55005u,
};


bool bki_layout_is_filter(bk_kind_t kind)
{
    const bki_layout_t *l = bki_layout_of(kind);
    return l && l->max_k > 0;
}

bool bki_layout_k_ok(bk_kind_t kind, uint32_t k)
{
    const bki_layout_t *l = bki_layout_of(kind);
    if (!l || k == 0 || k > l->max_k)
        return false;
    return l->fixed_k == 0 || k == l->fixed_k;
}

uint64_t bki_layout_bytes(bk_kind_t kind, uint64_t cells)
{
    const bki_layout_t *l = bki_layout_of(kind);
    if (!l || cells == 0 || cells % l->unit)
        return 0;
    if (l->max_cells) { /* bitmaps: whole 64-byte lines */
        if (cells > l->max_cells)
            return 0;
        return (cells * l->cell_bits + BKI_LINE_BITS - 1) / BKI_LINE_BITS * BKI_LINE_BYTES;
    }
    /* Filter cells fill whole bytes (the units are multiples of 8 / bits);
     * no limit here: callers compare with BKI_MAX_PAYLOAD_BYTES. */
    return cells / (8 / l->cell_bits);
}

uint64_t bki_layout_round_cells(bk_kind_t kind, uint64_t cells)
{
    const bki_layout_t *l = bki_layout_of(kind);
    if (!l || cells == 0 || cells > UINT64_MAX - l->unit)
        return 0;
    cells = (cells + l->unit - 1) / l->unit * l->unit;
    uint64_t bytes = bki_layout_bytes(kind, cells);
    return bytes == 0 || bytes > BKI_MAX_PAYLOAD_BYTES ? 0 : cells;
}

uint64_t bki_layout_lines(bk_kind_t kind, uint64_t cells)
{
    const bki_layout_t *l = bki_layout_of(kind);
    return l && l->line_cells ? cells / l->line_cells : 0;
}
