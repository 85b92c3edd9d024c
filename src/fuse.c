/*
 * Static filters: binary fuse filters with 8-, 16- or 32-bit fingerprints
 * (kinds fuse8 and fuse16), built once from the whole key set and never
 * added to. The construction follows Graf and Lemire, "Binary Fuse
 * Filters: Fast and Smaller Than Xor Filters" (ACM JEA 2022), arity 3:
 *
 *   - a key's 64-bit hash x (the filter's key hash, mixed with the part's
 *     seed unless that is 0) picks h0 in [0, seg_count * seg_len), h1 in the next segment
 *     and h2 in the one after (h0 + seg_len and h0 + 2 seg_len with their
 *     low bits replaced by x's: a segment length is a power of two);
 *   - the key is present when F[h0] ^ F[h1] ^ F[h2] equals its
 *     fingerprint, x ^ (x >> 32) truncated: 2^-8 or 2^-16 of absent keys
 *     pass;
 *   - building peels the 3-uniform hypergraph (a cell held by one key
 *     fixes that key's cell), then assigns fingerprints in reverse order.
 *     It succeeds with high probability at 1.125 cells per key for large
 *     sets; a failure reseeds (and removes duplicate hashes first, which
 *     never peel).
 *
 * Large sets are split into parts by the hash's top bits (bki_reduce), each
 * part a binary fuse filter of its own: a part's build memory is bounded
 * (build.c sizes parts to a memory cap) and the file keeps one part a
 * payload. Lookups read three cells of one part: three cache lines.
 */
#include "fuse.h"
#include "keyhash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- geometry ---- */

void bki_fuse_geometry(uint64_t n, uint32_t *seg_log, uint32_t *seg_count, uint64_t *cells)
{
    /* The paper's sizing for arity 3: segments of 2^floor(ln n / ln 3.33 +
     * 2.25) cells (at most 2^18) and max(1.125, 0.875 + 0.25 ln 1e6 / ln
     * n) cells per key; small sets need the larger factor to peel. */
    double dn = n < 2 ? 2.0 : (double)n;
    int lg = (int)floor(log(dn) / log(3.33) + 2.25);
    if (lg < 2)
        lg = 2;
    if (lg > (int)BKI_FUSE_MAX_SEG_LOG)
        lg = (int)BKI_FUSE_MAX_SEG_LOG;
    uint64_t seg = UINT64_C(1) << lg;
    double factor = fmax(1.125, 0.875 + 0.25 * log(1e6) / log(dn));
    uint64_t want = n < 2 ? 0 : (uint64_t)llround(dn * factor);
    uint64_t count = (want + seg - 1) / seg;
    count = count > 2 ? count - 2 : 1;
    *seg_log = (uint32_t)lg;
    *seg_count = (uint32_t)count;
    *cells = (count + 2) * seg;
}

/* ---- hashing a key to its cells ---- */

/* The part's mix of a key hash: one 64 x 64 -> 128-bit multiply, folded
 * (the high and low halves xor-ed). A reseed must give an unrelated
 * hypergraph, so the seed goes through a real mix, but one multiply: the
 * address of a lookup's three cells waits on this, and in a loop of
 * one-key calls larger than the caches every cycle before the loads
 * issue costs overlap between calls (splitmix64's two dependent
 * multiplies here measured 2x the lookup time of none). Seed 0 is no mix
 * at all: a one-part filter's first try, which peels almost always. The
 * fold is not
 * a bijection: two keys may meet in x (about n^2 / 2^65 pairs), which
 * fails the peel and is retried under another seed. */
static inline uint64_t part_mix(uint64_t h, uint64_t seed)
{
    if (BKI_LIKELY(seed == 0))
        return h;
    bki_u128 p = (bki_u128)(h ^ seed) * UINT64_C(0x9E3779B97F4A7C15);
    return (uint64_t)p ^ (uint64_t)(p >> 64);
}

typedef struct cells3 {
    uint64_t c[3];
} cells3_t;

static inline cells3_t cells_of(const bki_fuse_part_t *p, uint64_t x)
{
    uint64_t seg = p->seg, mask = seg - 1;
    cells3_t r;
    r.c[0] = bki_reduce(x, p->span);
    r.c[1] = (r.c[0] + seg) ^ ((x >> 18) & mask);
    r.c[2] = (r.c[0] + 2 * seg) ^ (x & mask);
    return r;
}

static inline uint32_t fingerprint(uint64_t x)
{
    return (uint32_t)(x ^ (x >> 32));
}

/* A fingerprint of `bytes` bytes (1, 2 or 4), little-endian in the file
 * and on every host this library builds for. */
static inline uint32_t cell_get(const bki_fuse_part_t *p, uint32_t bytes, uint64_t i)
{
    if (bytes == 1)
        return p->data[i];
    if (bytes == 2) {
        uint16_t v;
        memcpy(&v, p->data + 2 * i, 2);
        return v;
    }
    uint32_t v;
    memcpy(&v, p->data + 4 * i, 4);
    return v;
}

static inline void cell_set(bki_fuse_part_t *p, uint32_t bytes, uint64_t i, uint32_t v)
{
    if (bytes == 1) {
        p->data[i] = (uint8_t)v;
    } else if (bytes == 2) {
        uint16_t w = (uint16_t)v;
        memcpy(p->data + 2 * i, &w, 2);
    } else {
        memcpy(p->data + 4 * i, &v, 4);
    }
}

/* The bits of a fingerprint of `bytes` bytes. */
static inline uint32_t fp_mask(uint32_t bytes)
{
    return bytes == 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1;
}

static inline const bki_fuse_part_t *part_of(const struct bki_fuse *z, uint64_t h)
{
    return &z->parts[z->nparts == 1 ? 0 : bki_reduce(h, z->nparts)];
}

/* The lookup, for a fingerprint width the compiler knows (bytes 1 or 2):
 * few instructions, no branch on the answer. In a loop of one-key calls
 * on a filter larger than the caches, each call's instructions hold
 * places in the CPU's reorder window while its three misses are served,
 * so the fewer a call spends, the more calls' misses overlap. */
static inline bool part_contains(const bki_fuse_part_t *p, uint32_t bytes, uint64_t h)
{
    uint64_t x = part_mix(h, p->seed);
    cells3_t c = cells_of(p, x);
    uint32_t mask = fp_mask(bytes);
    uint32_t v =
        cell_get(p, bytes, c.c[0]) ^ cell_get(p, bytes, c.c[1]) ^ cell_get(p, bytes, c.c[2]);
    /* An empty part answers "absent" for everything: no key reads it. */
    return (p->keys != 0) & (v == (fingerprint(x) & mask));
}

static bool contains8(const struct bki_fuse *z, uint64_t h)
{
    return part_contains(part_of(z, h), 1, h);
}

static bool contains16(const struct bki_fuse *z, uint64_t h)
{
    return part_contains(part_of(z, h), 2, h);
}

static bool contains32(const struct bki_fuse *z, uint64_t h)
{
    return part_contains(part_of(z, h), 4, h);
}

/* The lookup for the filter's width. */
static bool contains_any(const struct bki_fuse *z, uint64_t h)
{
    return z->fp_bits == 8 ? contains8(z, h) : z->fp_bits == 16 ? contains16(z, h)
                                                                : contains32(z, h);
}

/* One part holding keys: no part to choose, no empty part to answer for. */
static inline bool one_contains(const struct bki_fuse *z, uint32_t bytes, uint64_t h)
{
    const bki_fuse_part_t *p = &z->parts[0];
    uint64_t x = part_mix(h, p->seed);
    cells3_t c = cells_of(p, x);
    uint32_t mask = fp_mask(bytes);
    uint32_t v =
        cell_get(p, bytes, c.c[0]) ^ cell_get(p, bytes, c.c[1]) ^ cell_get(p, bytes, c.c[2]);
    return v == (fingerprint(x) & mask);
}

/* ---- building one part ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts h and drops repeats; returns the distinct count. */
static size_t dedupe(uint64_t *h, size_t n)
{
    if (n < 2)
        return n;
    qsort(h, n, sizeof *h, cmp_u64);
    size_t w = 1;
    for (size_t i = 1; i < n; i++)
        if (h[i] != h[w - 1])
            h[w++] = h[i];
    return w;
}

typedef struct peel {
    uint8_t *count;  /* per cell: keys << 2 | xor of their slot numbers
                        (at most 63 keys: a try with more fails) */
    uint64_t *xors;  /* per cell: xor of its keys' x */
    uint32_t *queue; /* cells held by one key (cells < 2^32) */
    uint8_t *slot;   /* which of its 3 cells each peeled key owns */
    uint64_t *xs;    /* the keys' x, in order of their first cell's block;
                        then in peeling order */
    size_t *block;   /* counting sort's bucket starts */
} peel_t;

/* A block per segment or so (the first power of two at least the
 * segment count, at most 2^16): sorted by block, the counting pass walks
 * the tables front to back (h0 grows with x, and h1, h2 lie in the next
 * two segments) rather than missing the cache three times a key, and the
 * sort itself writes to few enough places at once for the caches to keep
 * them (blocks of 1,024 keys, up to 2^16 of them, took 113 ns a key to
 * build at 50M keys where these take 87). */
static unsigned block_bits(const bki_fuse_part_t *p)
{
    unsigned b = 0;
    while (b < 16 && ((uint64_t)1 << b) < p->seg_count)
        b++;
    return b;
}

/* w->xs = the keys' x under p->seed, ordered by their top bits (a
 * counting sort; x computed in both passes rather than stored twice). */
static void sort_x(const bki_fuse_part_t *p, const uint64_t *h, size_t n, peel_t *w)
{
    unsigned bits = block_bits(p);
    size_t nb = (size_t)1 << bits;
    memset(w->block, 0, (nb + 1) * sizeof *w->block);
    for (size_t i = 0; i < n; i++)
        w->block[bits ? (part_mix(h[i], p->seed) >> (64 - bits)) + 1 : 1]++;
    for (size_t b = 0; b < nb; b++)
        w->block[b + 1] += w->block[b];
    for (size_t i = 0; i < n; i++) {
        uint64_t x = part_mix(h[i], p->seed);
        w->xs[w->block[bits ? x >> (64 - bits) : 0]++] = x;
    }
}

/* One try at peeling n distinct hashes under p->seed; true when every key
 * peeled (the order is then in w->xs / w->slot). */
static bool peel_try(const bki_fuse_part_t *p, const uint64_t *h, size_t n, peel_t *w)
{
    sort_x(p, h, n, w);
    /* One byte a cell keeps the table small enough for the caches to
     * help; a cell would overflow past 63 keys (3 expected, and more than
     * 63 has a chance near 1e-60 a cell for hashed keys), and then the try
     * fails here rather than peel a wrong filter. */
    uint8_t full = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = w->xs[i];
        cells3_t c = cells_of(p, x);
        for (uint32_t j = 0; j < 3; j++) {
            uint8_t *k = &w->count[c.c[j]];
            full |= (uint8_t)(*k >= 252);
            *k = (uint8_t)((*k + 4) ^ j);
            w->xors[c.c[j]] ^= x;
        }
    }
    if (full)
        return false;
    size_t q = 0, done = 0;
    for (uint64_t i = 0; i < p->cells; i++) {
        w->queue[q] = (uint32_t)i;
        q += w->count[i] >> 2 == 1;
    }
    /* The order is written over xs, read no more after the count. A
     * peeled key's own cell is left as it is (nothing else reads it:
     * its one key is gone); its two others lose the key, and one that
     * is left with a single key is queued, without a branch. */
    uint64_t *order = w->xs;
    while (q > 0) {
        uint64_t cell = w->queue[--q];
        if (w->count[cell] >> 2 != 1)
            continue; /* emptied since it was queued */
        uint64_t x = w->xors[cell];
        uint32_t own = w->count[cell] & 3;
        order[done] = x;
        w->slot[done++] = (uint8_t)own;
        cells3_t c = cells_of(p, x);
        for (uint32_t j = 0; j < 3; j++) {
            uint64_t at = c.c[j];
            if (j == own)
                continue;
            w->queue[q] = (uint32_t)at;
            q += w->count[at] >> 2 == 2;
            w->count[at] = (uint8_t)((w->count[at] - 4) ^ j);
            w->xors[at] ^= x;
        }
    }
    return done == n;
}

/* Fills p (geometry, seed, fingerprints) from n key hashes; h is sorted
 * and deduplicated in place if a try fails. BK_ENOMEM without memory;
 * BK_EINVAL if no seed peels (duplicates removed, that happens with
 * vanishing probability). */
static bk_status_t build_part(bki_fuse_part_t *p, uint32_t fp_bits, uint64_t *h, size_t n,
                              uint64_t seed, bool single)
{
    uint32_t bytes = fp_bits / 8;
    memset(p, 0, sizeof *p);
    bool deduped = false;
    /* A one-part filter tries seed 0 (no mix: the fastest lookups) first,
     * and again once repeats are removed if there were any (a list with a
     * key twice fails only for that); other seeds after that. */
    uint32_t seed_no = 0;
    for (uint32_t attempt = 0; attempt < 128; attempt++) {
        bki_fuse_geometry(n, &p->seg_log, &p->seg_count, &p->cells);
        bki_fuse_part_shape(p);
        p->seed = seed_no == 0 && single ? 0 : bki_mix64(seed + seed_no) | 1;
        p->keys = n;
        peel_t w = {0};
        /* zeroed by calloc: fresh pages of the kernel's for large tables,
         * not a pass of writes (huge pages, tried for these tables read
         * at random, were slower: 114 against 95 ns a key at 50M keys,
         * the kernel compacting memory to fault them in) */
        w.count = bki_calloc((size_t)p->cells, sizeof *w.count);
        w.xors = bki_calloc((size_t)p->cells, sizeof *w.xors);
        w.queue = bki_malloc((p->cells + 1) * sizeof *w.queue); /* +1: a write past the top */
        w.slot = bki_malloc(n ? n : 1);
        w.xs = bki_malloc((n ? n : 1) * sizeof *w.xs);
        w.block = bki_malloc((((size_t)1 << block_bits(p)) + 1) * sizeof *w.block);
        bool ok = false;
        bk_status_t st = BK_OK;
        if (!w.count || !w.xors || !w.queue || !w.slot || !w.xs || !w.block)
            st = BK_ENOMEM;
        else
            ok = peel_try(p, h, n, &w);
        if (ok) {
            p->nbytes = p->cells * bytes;
            p->data = bki_payload_alloc(p->nbytes, &p->mem);
            if (!p->data) {
                st = BK_ENOMEM;
            } else {
                /* Reverse peeling order: a key's own cell is the last of its
                 * three to be written, so the xor of all three ends equal
                 * to its fingerprint. */
                for (size_t i = n; i-- > 0;) {
                    uint64_t x = w.xs[i];
                    cells3_t c = cells_of(p, x);
                    uint32_t own = w.slot[i];
                    cell_set(p, bytes, c.c[own], 0);
                    uint32_t v = fingerprint(x) ^ cell_get(p, bytes, c.c[0]) ^
                                 cell_get(p, bytes, c.c[1]) ^ cell_get(p, bytes, c.c[2]);
                    cell_set(p, bytes, c.c[own], v);
                }
            }
        }
        bki_free(w.count);
        bki_free(w.xors);
        bki_free(w.queue);
        bki_free(w.slot);
        bki_free(w.xs);
        bki_free(w.block);
        if (st != BK_OK || ok)
            return st;
        /* Equal hashes (a key given twice) never peel: remove them once;
         * otherwise this seed was unlucky. */
        size_t before = n;
        if (!deduped) {
            n = dedupe(h, n);
            deduped = true;
        }
        if (n == before)
            seed_no++;
    }
    return BK_EINVAL;
}

/* ---- the static filter ---- */

static void bind_calls(bk_filter_t *f);

struct bki_fuse *bki_fuse_shell(uint32_t fp_bits, uint32_t nparts)
{
    if ((fp_bits != 8 && fp_bits != 16 && fp_bits != 32) || nparts == 0 ||
        nparts > BKI_FUSE_MAX_PARTS)
        return NULL;
    struct bki_fuse *z = bki_calloc(1, sizeof *z + nparts * sizeof z->parts[0]);
    if (!z)
        return NULL;
    z->fp_bits = fp_bits;
    z->nparts = nparts;
    return z;
}

void bki_fuse_free(struct bki_fuse *z)
{
    if (!z)
        return;
    for (uint32_t i = 0; i < z->nparts; i++)
        if (z->parts[i].data && z->parts[i].mem != BKI_MEM_BORROWED)
            bki_payload_free(z->parts[i].data, z->parts[i].nbytes, z->parts[i].mem);
    bki_free(z);
}

uint32_t bki_fuse_part_of(const bk_filter_t *f, uint64_t h)
{
    const struct bki_fuse *z = f->fuse;
    return z->nparts == 1 ? 0 : (uint32_t)bki_reduce(h, z->nparts);
}

bk_status_t bki_fuse_build_part(bk_filter_t *f, uint32_t part, uint64_t *h, size_t n)
{
    struct bki_fuse *z = f->fuse;
    if (part >= z->nparts || z->parts[part].data || n > BKI_FUSE_PART_MAX_KEYS)
        return BK_EINVAL;
    bk_status_t st = build_part(&z->parts[part], z->fp_bits, h, n, f->seed ^ part, z->nparts == 1);
    if (st == BK_OK) {
        z->keys += z->parts[part].keys;
        f->items = f->capacity = z->keys;
        f->nbytes += z->parts[part].nbytes;
        bind_calls(f);
    }
    return st;
}

static bk_status_t fuse_add_key(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    (void)f, (void)key, (void)len;
    if (was_new)
        *was_new = false;
    return BK_ESTATIC;
}

bk_status_t bki_fuse_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new)
{
    (void)f, (void)h;
    if (was_new)
        *was_new = false;
    return BK_ESTATIC;
}

bool bki_fuse_contains_hash(const bk_filter_t *f, bk_hash_t h)
{
    const struct bki_fuse *z = f->fuse;
    return contains_any(z, h.lo);
}

/* The one-key calls, bound by width, parts and hash when the filter is
 * made and as its parts are built (bind_calls): an 8-byte key under the
 * default hash is mixed inline with the seed's part computed once
 * (key8_secret), as the Bloom kinds' one-key calls do (onekey.h). The
 * other keys' path is a call of its own (noinline), so the 8-byte path
 * saves no register: it is the whole function. NAME_u64 is the lookup of
 * bk_filter_contains_u64 (the key in a register; the key's bytes where
 * the bound call is not NAME_mix8, a paged file's), paired for f->u64
 * with an add that passes the bytes to the bound add, which refuses. */
#define FUSE_CALLS(NAME, LOOKUP)                                                                   \
    static __attribute__((noinline)) bool NAME##_key(const bk_filter_t *f, const void *key,      \
                                                     size_t len)                                   \
    {                                                                                              \
        return LOOKUP(f->fuse, bki_key_hash(f->hash, f->seed, key, len).lo);                       \
    }                                                                                              \
    static bool NAME##_mix8(const bk_filter_t *f, const void *key, size_t len)                     \
    {                                                                                              \
        if (BKI_UNLIKELY(len != 8))                                                                \
            return NAME##_key(f, key, len);                                                        \
        return LOOKUP(f->fuse, bki_mix8(bki_key8_le(key), f->key8_secret).low64);                  \
    }                                                                                              \
    static bool NAME##_u64(const bk_filter_t *f, uint64_t key)                                     \
    {                                                                                              \
        if (BKI_UNLIKELY(f->contains_key != NAME##_mix8))                                          \
            return bki_u64_contains_bytes(f, key);                                                 \
        return LOOKUP(f->fuse, bki_mix8(key, f->key8_secret).low64);                               \
    }                                                                                              \
    static const bki_u64_calls_t NAME##_u64s = {bki_u64_add_bytes, NAME##_u64};

static bool one8(const struct bki_fuse *z, uint64_t h)
{
    return one_contains(z, 1, h);
}

static bool one16(const struct bki_fuse *z, uint64_t h)
{
    return one_contains(z, 2, h);
}

static bool one32(const struct bki_fuse *z, uint64_t h)
{
    return one_contains(z, 4, h);
}

FUSE_CALLS(fuse8, contains8)
FUSE_CALLS(fuse16, contains16)
FUSE_CALLS(fuse32, contains32)
FUSE_CALLS(fuse8_one, one8)
FUSE_CALLS(fuse16_one, one16)
FUSE_CALLS(fuse32_one, one32)

static bool fuse_contains_none(const bk_filter_t *f, const void *key, size_t len)
{
    (void)f, (void)key, (void)len;
    return false;
}

static void bind_calls(bk_filter_t *f)
{
    const struct bki_fuse *z = f->fuse;
    /* [width 8, 16, 32][one part][mix8] */
    static const bki_contains_key_fn calls[3][2][2] = {
        {{fuse8_key, fuse8_mix8}, {fuse8_one_key, fuse8_one_mix8}},
        {{fuse16_key, fuse16_mix8}, {fuse16_one_key, fuse16_one_mix8}},
        {{fuse32_key, fuse32_mix8}, {fuse32_one_key, fuse32_one_mix8}}};
    static const bki_u64_calls_t *const u64s[3][2] = {{&fuse8_u64s, &fuse8_one_u64s},
                                                      {&fuse16_u64s, &fuse16_one_u64s},
                                                      {&fuse32_u64s, &fuse32_one_u64s}};
    bool mix8 = f->hash == BK_HASH_XXH3_MIX8;
    unsigned width = z->fp_bits == 8 ? 0 : z->fp_bits == 16 ? 1 : 2;
    f->u64 = NULL;
    if (z->nparts == 1 && z->parts[0].keys == 0) {
        f->contains_key = fuse_contains_none;
    } else {
        f->contains_key = calls[width][z->nparts == 1][mix8];
        if (mix8)
            f->u64 = u64s[width][z->nparts == 1];
    }
}

size_t bki_fuse_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out)
{
    enum { GROUP = 16 };
    const struct bki_fuse *z = f->fuse;
    uint32_t bytes = z->fp_bits / 8;
    uint64_t h[GROUP];
    size_t hits = 0;
    for (size_t at = 0; at < n; at += GROUP) {
        size_t m = n - at < GROUP ? n - at : GROUP;
        /* Hash the group and ask for its cells' lines, then answer: the
         * misses of 16 keys overlap instead of following each other. */
        for (size_t j = 0; j < m; j++) {
            h[j] = bki_key_hash(f->hash, f->seed, keys[at + j].ptr, keys[at + j].len).lo;
            const bki_fuse_part_t *p = part_of(z, h[j]);
            cells3_t c = cells_of(p, part_mix(h[j], p->seed));
            for (uint32_t i = 0; i < 3; i++)
                __builtin_prefetch(p->data + c.c[i] * bytes);
        }
        for (size_t j = 0; j < m; j++) {
            out[at + j] = bytes == 1   ? contains8(z, h[j])
                          : bytes == 2 ? contains16(z, h[j])
                                       : contains32(z, h[j]);
            hits += out[at + j];
        }
    }
    return hits;
}

bool bki_fuse_hash_ok(bk_hash_id_t hash)
{
    return hash == BK_HASH_XXH3_MIX8 || hash == BK_HASH_XXH3;
}

bk_status_t bki_fuse_wrap(bk_filter_t **out, struct bki_fuse *z, bk_hash_id_t hash, uint64_t seed,
                          double fpr)
{
    bk_filter_t *f = bki_calloc(1, sizeof *f);
    if (!f) {
        bki_fuse_free(z);
        return BK_ENOMEM;
    }
    f->kind = bki_kind_with_fp_bits(BKI_KIND_STATIC, z->fp_bits);
    f->add_key = fuse_add_key;
    f->contains_hash = bki_fuse_contains_hash;
    f->hash = hash;
    f->seed = seed;
    f->key8_secret = bki_key8_secret(hash, seed);
    f->fpr = fpr;
    f->map_fd = -1;
    f->fuse = z;
    for (uint32_t i = 0; i < z->nparts; i++) {
        f->nbytes += z->parts[i].nbytes;
        z->keys += z->parts[i].keys;
    }
    f->items = f->capacity = z->keys;
    bind_calls(f);
    *out = f;
    return BK_OK;
}

/* The fingerprint bits of a static kind (kinds.c), 0 for any other. */
static unsigned static_bits(bk_kind_t kind)
{
    return bki_kind_is(kind, BKI_KIND_STATIC) ? bki_kind_fp_bits(kind) : 0;
}

double bki_fuse_rate(bk_kind_t kind)
{
    unsigned bits = static_bits(kind);
    return bits ? ldexp(1.0, -(int)bits) : 0.0;
}

bk_status_t bki_fuse_filter_new(bk_filter_t **out, bk_kind_t kind, uint32_t nparts, double fpr,
                                bk_hash_id_t hash, uint64_t seed)
{
    *out = NULL;
    unsigned bits = static_bits(kind);
    if (!bits || !bki_fuse_hash_ok(hash))
        return BK_EINVAL;
    struct bki_fuse *z = bki_fuse_shell(bits, nparts);
    if (!z)
        return nparts == 0 || nparts > BKI_FUSE_MAX_PARTS ? BK_EINVAL : BK_ENOMEM;
    return bki_fuse_wrap(out, z, hash, seed, fpr);
}

bk_status_t bki_fuse_filter_clone(bk_filter_t **out, const bk_filter_t *f)
{
    const struct bki_fuse *z = f->fuse;
    *out = NULL;
    struct bki_fuse *d = bki_fuse_shell(z->fp_bits, z->nparts);
    if (!d)
        return BK_ENOMEM;
    for (uint32_t i = 0; i < z->nparts; i++) {
        d->parts[i] = z->parts[i];
        d->parts[i].data = bki_payload_alloc(z->parts[i].nbytes, &d->parts[i].mem);
        if (!d->parts[i].data) {
            bki_fuse_free(d);
            return BK_ENOMEM;
        }
        memcpy(d->parts[i].data, z->parts[i].data, (size_t)z->parts[i].nbytes);
    }
    return bki_fuse_wrap(out, d, f->hash, f->seed, f->fpr);
}

void bki_fuse_filter_free(bk_filter_t *f)
{
    bki_fuse_free(f->fuse);
    bki_free(f);
}

uint64_t bki_fuse_items(const bk_filter_t *f)
{
    return f->fuse->keys;
}

void bki_fuse_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out)
{
    memset(out, 0, sizeof *out);
    out->kind = out->sub_kind = f->kind;
    out->hash = f->hash;
    out->seed = f->seed;
    out->capacity = f->fuse->keys;
    out->fpr_target = f->fpr;
    out->k = 3;
    out->bytes = f->nbytes;
    out->items = f->fuse->keys;
    out->filters = f->fuse->nparts;
    out->nonscaling = true;
    out->newest_capacity = f->fuse->keys;
    out->newest_items = f->fuse->keys;
}

void bki_fuse_filter_info(const bk_filter_t *f, bk_filter_info_t *out)
{
    bk_filter_shape_t sh;
    bki_fuse_filter_shape(f, &sh);
    memset(out, 0, sizeof *out);
    out->kind = out->sub_kind = sh.kind;
    out->hash = sh.hash;
    out->seed = sh.seed;
    out->capacity = sh.capacity;
    out->fpr_target = sh.fpr_target;
    out->k = 3;
    out->bytes = sh.bytes;
    out->items = sh.items;
    out->filters = sh.filters;
    out->nonscaling = true;
    uint64_t cells = 0;
    for (uint32_t i = 0; i < f->fuse->nparts; i++)
        cells += f->fuse->parts[i].cells;
    /* Every cell is used by construction (a fingerprint or the xor that
     * completes one); its rate is the fingerprint's, whatever the fill. */
    out->cells = out->cells_set = cells;
    out->fill = cells ? 1.0 : 0.0;
    out->estimated_items = (double)sh.items;
    out->expected_fpr = bki_fuse_rate(sh.kind);
    out->mapped = f->map_base != NULL;
    out->readonly = true;
}

uint32_t bki_fuse_parts(const bk_filter_t *f)
{
    return f->fuse->nparts;
}

bk_status_t bki_fuse_plan(bk_kind_t kind, uint64_t n, double p, bk_static_plan_t *out)
{
    double rate = bki_fuse_rate(kind);
    if (rate == 0.0 || (p != 0.0 && p < rate))
        return BK_EINVAL;
    uint32_t seg_log, seg_count;
    uint64_t cells;
    bki_fuse_geometry(n, &seg_log, &seg_count, &cells);
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->cells = cells;
    out->bytes = cells * (static_bits(kind) / 8);
    out->bits_per_key = n ? 8.0 * (double)out->bytes / (double)n : 0.0;
    out->expected_fpr = rate;
    out->lines = 3; /* one a segment of the key's three */
    return BK_OK;
}
