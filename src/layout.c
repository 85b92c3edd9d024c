/*
 * Per-kind layout facts, in one table: how many cells a kind's payload may
 * have, how many bits a cell takes, how cells group into 64-byte lines,
 * and how many probes a key may make. Everything above this file (the
 * kinds, sizing, dispatch, the file format, bitmaps) asks here instead of
 * writing the numbers again, so a new kind's geometry is one row below.
 *
 * Also the constants of the in-line probe scheme that blocked and counting
 * filters share (lane salts; line addressing is inline in internal.h).
 */
#include "internal.h"

/* Indexed by bk_kind_t; a zero row is a kind without a single payload. */
static const bki_layout_t layouts[] = {
    [BK_KIND_BLOCKED] = {BKI_LINE_BITS, 1, BKI_LINE_BITS, BKI_BLOCKED_MAX_K, 0, 1},
    [BK_KIND_CLASSIC] = {64, 1, 0, BKI_CLASSIC_MAX_K, 0, 1},
    [BK_KIND_COUNTING] = {BKI_LINE_COUNTERS, 4, BKI_LINE_COUNTERS, BKI_BLOCKED_MAX_K, 0, 1},
    [BK_KIND_BITMAP] = {1, 1, 0, 0, BKI_BITMAP_MAX_N, 0},
    [BK_KIND_BITMAP2] = {1, 2, 0, 0, BKI_BITMAP_MAX_N, 0},
    [BK_KIND_BLOCKED2] = {BKI_LINE_BITS, 1, BKI_LINE_BITS, BKI_BLOCKED_MAX_K, 0, 2},
    [BK_KIND_PRECISE] = {64, 1, 0, BKI_CLASSIC_MAX_K, 0, 1},
    [BK_KIND_SPLIT] = {BKI_SPLIT_BLOCK_BITS, 1, BKI_SPLIT_BLOCK_BITS, BKI_SPLIT_K, 0, 1, BKI_SPLIT_K},
    /* RedisBloom keeps whole 64-bit words; its k has no cap of its own. */
    [BK_KIND_REDISBLOOM] = {64, 1, 0, BK_REDISBLOOM_MAX_HASHES, 0, 1},
};

/* 16 odd multipliers, one per lane: the low 32 bits of splitmix64(i) for
 * i = 0..15, forced odd. Independent-looking constants matter: multiples of
 * one constant would make a collision in one lane predict one in the next.
 * Aligned for the AVX2 paths' aligned loads. */
const uint32_t bki_lane_salt[BKI_LINE_LANES] __attribute__((aligned(64))) = {
    0x7b1dcdafu, 0x89025cc1u, 0x1c9756cfu, 0xdb018fedu, 0xe2338acbu, 0xa389c35bu,
    0xadefe001u, 0x59320dd7u, 0xef953637u, 0xbe706065u, 0x8a582fcbu, 0x2380309du,
    0x99de8f03u, 0xf8ad8affu, 0x35dbe63fu, 0xabf55005u,
};

const bki_layout_t *bki_layout_of(bk_kind_t kind)
{
    if ((unsigned)kind >= sizeof layouts / sizeof layouts[0] || layouts[kind].unit == 0)
        return NULL;
    return &layouts[kind];
}

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
