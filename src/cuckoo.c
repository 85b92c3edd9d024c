/*
 * Cuckoo filters (bloomkit.h, "Cuckoo filters"): fingerprints in buckets,
 * two candidate buckets per key, so keys can be removed and counted.
 *
 * The algorithm is RedisBloom's (facts from its src/cuckoo.c, spec in
 * docs/FORMAT.md, "RedisBloom cuckoo filters"), kept exact for the
 * RedisBloom flavour so CF.* answers and data match RedisBloom's:
 *  - a filter is a list of sub-filters; sub-filter i has buckets *
 *    expansion^i buckets (expansion a power of two), each bucket_size
 *    slots of one fingerprint, 0 meaning empty;
 *  - a key's hash h gives a fingerprint fp (never 0) and its first bucket;
 *    the other bucket is alt(bucket, fp);
 *  - an add puts fp in the first empty slot of the first or the other
 *    bucket, trying sub-filters from the newest to the oldest; with none
 *    empty it kicks in the newest sub-filter: swap fp with slot v of the
 *    current bucket, move to the evicted fingerprint's other bucket, take
 *    an empty slot there if there is one, else v = (v + 1) mod bucket_size
 *    and again, max_iterations times; on failure the kicks are undone in
 *    reverse, and the filter grows a sub-filter (or answers full when
 *    expansion is 0) and adds there;
 *  - a lookup finds fp in either bucket of any sub-filter; a count adds
 *    the matches in both buckets of every sub-filter; a removal clears the
 *    first match, newest sub-filter first, and when there is more than one
 *    sub-filter and removals exceed 10% of the items, compacts.
 *
 * Flavours differ only in hashing and addressing:
 *  - RedisBloom: h = MurmurHash64A(key, seed 0), fp = h mod 255 + 1 (8
 *    bits), first bucket h mod buckets, alt(b, fp) = (b XOR fp *
 *    0x5bd1e995) mod buckets (buckets a power of two, so the buckets of a
 *    sub-filter nest in those of a larger one and compaction can move a
 *    fingerprint down knowing only its bucket);
 *  - native: XXH3-128 of the key, fp = hi mod (2^bits - 1) + 1, first
 *    bucket reduce(lo, m) for any bucket count m, alt(b, fp) = (g - b) mod
 *    m with g = fp * 0x5bd1e995 mod m (an involution for any m, so m need
 *    not be a power of two and no memory is lost to rounding). Sub-filters
 *    do not nest: compaction leaves a native filter as it is.
 */
#include "cuckoo.h"
#include "keyhash.h"

#include <math.h>
#include <string.h>
/* Every x86-64 CPU has SSE2; -DBKI_CUCKOO_SCALAR builds the portable
 * code instead, as other CPUs get it (to test it on x86). */
#if defined(__SSE2__) && !defined(BKI_CUCKOO_SCALAR)
#include <emmintrin.h>
#define CUCKOO_SSE2 1
#endif

/* A native fingerprint from the hash's high half: 1 .. 2^bits - 1,
 * spread by multiply-shift (no division). */
static inline uint32_t native_fp(const bk_cuckoo_t *c, uint64_t hi)
{
    uint64_t span =
        c->fp_bytes == 4 ? UINT64_C(0xffffffff) : (UINT64_C(1) << (8 * c->fp_bytes)) - 1;
    return (uint32_t)bki_reduce(hi, span) + 1;
}

/* A key's fingerprint and hash for bucket addressing. */
typedef struct cuckoo_key {
    uint64_t h;  /* RedisBloom: the hash itself; native: XXH3's lo */
    uint32_t fp; /* never 0 */
} cuckoo_key_t;

/* ---- slots ---- */

static inline uint32_t slot_get(const bk_cuckoo_t *c, const uint8_t *p)
{
    switch (c->fp_bytes) {
    case 1: return p[0];
    case 2: return (uint32_t)p[0] | (uint32_t)p[1] << 8;
    default:
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
}

static inline void slot_set(const bk_cuckoo_t *c, uint8_t *p, uint32_t fp)
{
    for (uint32_t i = 0; i < c->fp_bytes; i++)
        p[i] = (uint8_t)(fp >> (8 * i));
}

static inline uint8_t *bucket_at(const bk_cuckoo_t *c, const cuckoo_sub_t *s, uint64_t b)
{
    return s->data + b * c->bucket_size * c->fp_bytes;
}

/* ---- hashing and addressing ---- */

static cuckoo_key_t key_of(const bk_cuckoo_t *c, const void *key, size_t len)
{
    cuckoo_key_t k;
    if (c->flavour == BK_CUCKOO_REDISBLOOM) {
        k.h = bki_murmur64a(key ? key : bki_empty_key, len, 0);
        k.fp = (uint32_t)(k.h % 255 + 1);
        return k;
    }
    XXH128_hash_t r = bki_xxh3_key(key, len, c->seed);
    k.h = r.low64;
    k.fp = native_fp(c, r.high64);
    return k;
}

static inline uint64_t first_bucket(const bk_cuckoo_t *c, const cuckoo_sub_t *s, uint64_t h)
{
    return c->flavour == BK_CUCKOO_REDISBLOOM ? h % s->buckets : bki_reduce(h, s->buckets);
}

static inline uint64_t other_bucket(const bk_cuckoo_t *c, const cuckoo_sub_t *s, uint64_t b,
                                    uint32_t fp)
{
    if (c->flavour == BK_CUCKOO_REDISBLOOM)
        return (b ^ ((uint64_t)fp * ALT_MULT)) % s->buckets;
    /* (g - b) mod m with g = reduce(fp * golden, m): no division. */
    uint64_t g = bki_reduce((uint64_t)fp * NATIVE_MULT, s->buckets);
    return g >= b ? g - b : g + s->buckets - b;
}

/* The planned geometry (native, 16-bit fingerprints, buckets of four)
 * reads a bucket as one 64-bit word, its slots as the word's four 16-bit
 * lanes (slot i in bits 16i..16i+15: the bytes' little-endian order). */
#define LANES16 UINT64_C(0x0001000100010001)
#define HIGHS16 UINT64_C(0x8000800080008000)

static inline bool is_4x16(const bk_cuckoo_t *c)
{
    return c->flavour == BK_CUCKOO_NATIVE && c->fp_bytes == 2 && c->bucket_size == 4;
}

/* Bit 15 of each lane of w that holds fp (fp 0: each empty slot), all
 * four compared at once. The lowest mark is exact; one above it may be
 * false (a borrow out of the matching lane below), so callers use the
 * mask as a whole ("any?") or its lowest bit ("which first?"). */
static inline uint64_t word4x16_match(uint64_t w, uint32_t fp)
{
    uint64_t x = w ^ ((uint64_t)fp * LANES16);
    return (x - LANES16) & ~x & HIGHS16;
}

static inline uint64_t load_word(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* The slot of the lowest mark of a nonzero word4x16_match mask. */
static inline uint8_t *lane_slot(uint8_t *bucket, uint64_t mask)
{
    return bucket + (__builtin_ctzll(mask) >> 4) * 2;
}

/* The two bucket words of a key (h, fp) among `buckets` 4x16 buckets at
 * data: other_bucket's native arithmetic, inline, as every one-key call of
 * this geometry needs it; words_4x16 for sub-filter s. */
static inline void words_4x16_in(uint8_t *data, uint64_t buckets, uint64_t h, uint32_t fp,
                                 uint8_t **p1, uint8_t **p2)
{
    uint64_t b1 = bki_reduce(h, buckets);
    uint64_t g = bki_reduce((uint64_t)fp * NATIVE_MULT, buckets);
    uint64_t b2 = g >= b1 ? g - b1 : g + buckets - b1;
    *p1 = data + b1 * 8;
    *p2 = data + b2 * 8;
}

static inline void words_4x16(const cuckoo_sub_t *s, uint64_t h, uint32_t fp, uint8_t **p1,
                              uint8_t **p2)
{
    words_4x16_in(s->data, s->buckets, h, fp, p1, p2);
}

/* The same in a filter's only sub-filter (c->one_data set). */
static inline void words_4x16_one(const bk_cuckoo_t *c, uint64_t h, uint32_t fp, uint8_t **p1,
                                  uint8_t **p2)
{
    words_4x16_in(c->one_data, c->one_buckets, h, fp, p1, p2);
}

#ifdef CUCKOO_SSE2
/* A key's two bucket words as one vector: the first bucket's four slots in
 * lanes 0-3, the second's in lanes 4-7. */
static inline __m128i pair_4x16(const uint8_t *p1, const uint8_t *p2)
{
    __m128i v = _mm_loadl_epi64((const __m128i *)(const void *)p1);
    return _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(v), (const double *)(const void *)p2));
}

/* All ones in the lowest lane marked in m, a _mm_movemask_epi8 of a 16-bit
 * lane compare of pair_4x16 (lane i's low bit there is bit 2i): the first
 * bucket's slots before the second's, as the scalar code picks them; all
 * zero when m is 0. */
static inline __m128i lowest_of_4x16(unsigned m)
{
    const __m128i lane_bits = _mm_setr_epi16(1, 4, 16, 64, 256, 1024, 4096, 16384);
    __m128i first = _mm_and_si128(_mm_set1_epi16((short)(m & (0u - m))), lane_bits);
    return _mm_cmpeq_epi16(first, lane_bits);
}
#endif

/* Whether any sub-filter holds fp in one of the key's buckets (4x16).
 * Both words are loaded before either is compared, so their cache misses
 * overlap, and the answer is or-ed, never branched on: a lookup costs the
 * same whatever share of the keys asked about are present (a branch on the
 * answer mispredicts half the time when half are).
 *
 * On x86 the comparison is one SSE2 compare of all eight slots: in a loop
 * of lookups on a filter larger than the caches, the instructions that wait
 * for a call's cache miss (everything after the loads) hold their places in
 * the integer scheduler until it is served, and the scalar compare's ten
 * such instructions per key bounded how many calls' misses were in flight;
 * the vector compare leaves three in the integer scheduler. Measured on 100M
 * keys (bench/fastfilter.sh, AMD EPYC): 52 -> 43 ns a lookup, the same
 * answers. */
static inline bool has_4x16(const bk_cuckoo_t *c, uint64_t h, uint32_t fp)
{
#ifdef CUCKOO_SSE2
    __m128i want = _mm_set1_epi16((short)fp), any = _mm_setzero_si128();
    for (const cuckoo_sub_t *s = c->subs, *end = s + c->nsubs; s < end; s++) {
        uint8_t *p1, *p2;
        words_4x16(s, h, fp, &p1, &p2);
        any = _mm_or_si128(any, _mm_cmpeq_epi16(pair_4x16(p1, p2), want));
    }
    return _mm_movemask_epi8(any) != 0;
#else
    uint64_t any = 0;
    for (const cuckoo_sub_t *s = c->subs, *end = s + c->nsubs; s < end; s++) {
        uint8_t *p1, *p2;
        words_4x16(s, h, fp, &p1, &p2);
        uint64_t w1 = load_word(p1), w2 = load_word(p2);
        any |= word4x16_match(w1, fp) | word4x16_match(w2, fp);
    }
    return any != 0;
#endif
}

/* has_4x16 of a filter with one sub-filter (c->one_data set): a lookup's
 * bucket addresses wait on one load from c fewer. */
static inline bool has_4x16_one(const bk_cuckoo_t *c, uint64_t h, uint32_t fp)
{
    uint8_t *p1, *p2;
    words_4x16_one(c, h, fp, &p1, &p2);
#ifdef CUCKOO_SSE2
    return _mm_movemask_epi8(_mm_cmpeq_epi16(pair_4x16(p1, p2), _mm_set1_epi16((short)fp))) != 0;
#else
    return (word4x16_match(load_word(p1), fp) | word4x16_match(load_word(p2), fp)) != 0;
#endif
}

/* ---- buckets ---- */

static uint8_t *bucket_find(const bk_cuckoo_t *c, uint8_t *bucket, uint32_t fp)
{
    if (is_4x16(c)) {
        uint64_t m = word4x16_match(load_word(bucket), fp);
        return m ? lane_slot(bucket, m) : NULL;
    }
    for (uint32_t i = 0; i < c->bucket_size; i++)
        if (slot_get(c, bucket + i * c->fp_bytes) == fp)
            return bucket + i * c->fp_bytes;
    return NULL;
}

static uint32_t bucket_count(const bk_cuckoo_t *c, const uint8_t *bucket, uint32_t fp)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->bucket_size; i++)
        n += slot_get(c, bucket + i * c->fp_bytes) == fp;
    return n;
}

/* A slot empty in bucket b1, else in b2, else NULL. */
static uint8_t *free_slot(const bk_cuckoo_t *c, const cuckoo_sub_t *s, uint64_t b1, uint64_t b2)
{
    uint8_t *slot = bucket_find(c, bucket_at(c, s, b1), 0);
    return slot ? slot : bucket_find(c, bucket_at(c, s, b2), 0);
}

/* ---- sub-filters ---- */

/* Sets c->one_data, one_buckets and one_key from what they summarize;
 * called wherever the sub-filters (their number, array or first one's
 * buckets), the geometry or the filter's hash is set, after the change.
 * One flag, not the tests it stands for: in a loop of one-key removes on a
 * filter larger than the caches every instruction a call spends holds back
 * the next calls' cache misses (bki_cuckoo_remove_key on 100M keys: 49 ns
 * with three tests, the hash, a geometry flag and the sub-filters, against
 * 44-47 with one). And the only sub-filter's buckets one load from c, not
 * two: a one-key call's bucket addresses wait on them (100M keys, builds
 * alternating: removes 41.3-42.7 -> 37.7-38.2 ns, lookups 41.0-41.4 ->
 * 35.7-36.0; docs/BENCHMARKS.md, "One load nearer"). */
static void note_shape(bk_cuckoo_t *c)
{
    bool one = is_4x16(c) && c->nsubs == 1;
    c->one_data = one ? c->subs[0].data : NULL;
    c->one_buckets = one ? c->subs[0].buckets : 0;
    c->one_key = one && c->key8_mix8;
}

static bk_status_t add_sub_at(bk_cuckoo_t *c, uint64_t buckets, uint8_t *borrow)
{
    if (c->nsubs >= (c->flavour == BK_CUCKOO_REDISBLOOM ? MAX_SUBS_REDISBLOOM : MAX_SUBS))
        return BK_EFULL;
    if (buckets == 0 || buckets > BKI_MAX_PAYLOAD_BYTES / c->bucket_size / c->fp_bytes)
        return BK_ENOMEM;
    if (c->nsubs == c->subs_cap) {
        /* one to start: most filters never grow, and in a server holding
         * many small ones (CF.RESERVE per user) room for a second costs
         * 32 bytes a key */
        uint32_t cap = c->subs_cap ? c->subs_cap * 2 : 1;
        cuckoo_sub_t *subs = bki_realloc(c->subs, c->subs_cap * sizeof *subs, cap * sizeof *subs);
        if (!subs)
            return BK_ENOMEM;
        c->subs = subs;
        c->subs_cap = cap;
    }
    cuckoo_sub_t *s = &c->subs[c->nsubs];
    s->buckets = buckets;
    s->nbytes = buckets * c->bucket_size * c->fp_bytes;
    if (borrow) {
        s->data = borrow;
        s->mem = BKI_MEM_BORROWED;
    } else {
        s->data = bki_payload_alloc(s->nbytes, &s->mem);
        if (!s->data)
            return BK_ENOMEM;
    }
    c->nsubs++;
    note_shape(c);
    return BK_OK;
}

static bk_status_t add_sub(bk_cuckoo_t *c, uint64_t buckets)
{
    return add_sub_at(c, buckets, NULL);
}

bk_status_t bki_cuckoo_add_sub(bk_cuckoo_t *c, uint64_t buckets, uint8_t *borrow)
{
    if (borrow)
        c->mapped = true;
    return add_sub_at(c, buckets, borrow);
}

/* Buckets of the sub-filter after the newest, or 0 if it does not fit. */
static uint64_t next_buckets(const bk_cuckoo_t *c)
{
    uint64_t last = c->subs[c->nsubs - 1].buckets;
    return last > UINT64_MAX / c->expansion ? 0 : last * c->expansion;
}

static void drop_newest(bk_cuckoo_t *c)
{
    cuckoo_sub_t *s = &c->subs[--c->nsubs];
    note_shape(c);
    if (s->mem != BKI_MEM_BORROWED)
        bki_payload_free(s->data, s->nbytes, s->mem);
}

/* ---- add ---- */

/* Whether the bucket b of sub-filter s may be read (and written): always,
 * but for a filter read from a paged file, whose pages are checked as they
 * are first touched (f->touch); false on a damaged page. */
static inline bool touch_bucket(const bk_filter_t *f, const bk_cuckoo_t *c, const cuckoo_sub_t *s,
                                uint64_t b)
{
    return !f || !f->touch ||
           f->touch(f, bucket_at(c, s, b), (uint64_t)c->bucket_size * c->fp_bytes, true);
}

typedef enum { KICK_PLACED, KICK_FULL, KICK_DAMAGED } kick_t;

/* A native filter's kick walk looks ahead: before it evicts from a full
 * bucket b, it reads the other bucket of every fingerprint in b (their
 * cache misses overlap); when one has an empty slot, that fingerprint
 * moves into it and fp takes its place, ending the walk (true). False,
 * with nothing changed, when none has room. RedisBloom's walk checks just
 * the victim's other bucket, one cache miss after another: native adds
 * into a filter between 85% and 95% full took about a microsecond each. A
 * native file records where fingerprints are, not how they got there, so
 * placement is free; a RedisBloom filter walks without looking ahead, so
 * its buckets stay byte for byte RedisBloom's. */
static bool look_ahead(bk_cuckoo_t *c, cuckoo_sub_t *s, uint64_t b, uint32_t fp,
                       const bk_filter_t *f)
{
    uint8_t *bucket = bucket_at(c, s, b);
    uint64_t alt[256]; /* bucket_size <= 255 */
    for (uint32_t v = 0; v < c->bucket_size; v++) {
        alt[v] = other_bucket(c, s, b, slot_get(c, bucket + v * c->fp_bytes));
        __builtin_prefetch(bucket_at(c, s, alt[v]));
    }
    for (uint32_t v = 0; v < c->bucket_size; v++) {
        /* a damaged bucket is passed over here; the walk meets it only
         * if it is the victim's */
        if (alt[v] == b || !touch_bucket(f, c, s, alt[v]))
            continue;
        uint8_t *empty = bucket_find(c, bucket_at(c, s, alt[v]), 0);
        if (empty) {
            uint8_t *from = bucket + v * c->fp_bytes;
            slot_set(c, empty, slot_get(c, from));
            slot_set(c, from, fp);
            return true;
        }
    }
    return false;
}

/* RedisBloom's kick loop in sub-filter s, undone on failure; with look
 * (native filters), each full bucket's look_ahead first. *spent grows by
 * the swaps made, undoing ones included. f (NULL for a bare
 * bk_cuckoo_t): a paged file's filter, each bucket the loop moves to
 * checked before it is read; on a damaged one the swaps made so far are
 * undone. The key's buckets were checked by the caller. */
static kick_t kick_in(bk_cuckoo_t *c, cuckoo_sub_t *s, const cuckoo_key_t *k, uint64_t *spent,
                      const bk_filter_t *f, bool look)
{
    uint32_t fp = k->fp, victim = 0, n;
    uint64_t b = first_bucket(c, s, k->h), b2 = other_bucket(c, s, b, fp);
    kick_t why = KICK_FULL;
    /* the key's second bucket first: its fingerprints may have room too */
    if (look && b2 != b && look_ahead(c, s, b2, fp, f)) {
        ++*spent;
        return KICK_PLACED;
    }
    for (n = 0; n < c->max_iterations; n++) {
        ++*spent;
        if (look && look_ahead(c, s, b, fp, f))
            return KICK_PLACED; /* b is full, and checked */
        uint8_t *slot = bucket_at(c, s, b) + victim * c->fp_bytes;
        uint32_t evicted = slot_get(c, slot);
        slot_set(c, slot, fp);
        fp = evicted;
        b = other_bucket(c, s, b, fp);
        if (!touch_bucket(f, c, s, b)) {
            victim = (victim + 1) % c->bucket_size;
            n++; /* this swap is undone too */
            why = KICK_DAMAGED;
            break;
        }
        /* with look, b (the victim's other bucket, or the one it left)
         * was found full above */
        uint8_t *empty = look ? NULL : bucket_find(c, bucket_at(c, s, b), 0);
        if (empty) {
            slot_set(c, empty, fp);
            return KICK_PLACED;
        }
        victim = (victim + 1) % c->bucket_size;
    }
    /* Undo, newest swap first, so the filter is as it was (only buckets
     * the loop read are written back). */
    *spent += n;
    for (uint32_t i = 0; i < n; i++) {
        victim = (victim + c->bucket_size - 1) % c->bucket_size;
        b = other_bucket(c, s, b, fp);
        uint8_t *slot = bucket_at(c, s, b) + victim * c->fp_bytes;
        uint32_t back = slot_get(c, slot);
        slot_set(c, slot, fp);
        fp = back;
    }
    return why;
}

/* budget NULL: unbounded (bk_cuckoo_add_within says the rest). */
static bk_status_t add_key(bk_cuckoo_t *c, const cuckoo_key_t *k, uint64_t *budget,
                           const bk_filter_t *f)
{
    for (;;) {
        for (uint32_t i = c->nsubs; i-- > 0;) {
            cuckoo_sub_t *s = &c->subs[i];
            uint64_t b1 = first_bucket(c, s, k->h);
            uint8_t *slot = free_slot(c, s, b1, other_bucket(c, s, b1, k->fp));
            if (slot) {
                slot_set(c, slot, k->fp);
                c->items++;
                return BK_OK;
            }
        }
        if (budget && *budget < 2 * (uint64_t)c->max_iterations)
            return BK_EBUDGET; /* nothing changed yet */
        uint64_t spent = 0;
        kick_t got = kick_in(c, &c->subs[c->nsubs - 1], k, &spent, f,
                             c->flavour == BK_CUCKOO_NATIVE);
        if (budget)
            *budget -= spent;
        if (got == KICK_PLACED) {
            c->items++;
            return BK_OK;
        }
        if (got == KICK_DAMAGED)
            return BK_ECORRUPT;
        /* A mapped filter borrows its file's bytes: no room to grow there. */
        if (c->expansion == 0 || c->mapped)
            return BK_EFULL;
        uint64_t nb = next_buckets(c);
        if (c->max_bytes && (nb > c->max_bytes / c->bucket_size / c->fp_bytes ||
                             bk_cuckoo_bytes(c) + nb * c->bucket_size * c->fp_bytes > c->max_bytes))
            return BK_EFULL;
        bk_status_t st = nb ? add_sub(c, nb) : BK_ENOMEM;
        if (st != BK_OK)
            return st;
    }
}

static bool contains_key(const bk_cuckoo_t *c, const cuckoo_key_t *k)
{
    if (is_4x16(c))
        return has_4x16(c, k->h, k->fp);
    for (uint32_t i = 0; i < c->nsubs; i++) {
        const cuckoo_sub_t *s = &c->subs[i];
        uint64_t b1 = first_bucket(c, s, k->h);
        if (bucket_find(c, bucket_at(c, s, b1), k->fp) ||
            bucket_find(c, bucket_at(c, s, other_bucket(c, s, b1, k->fp)), k->fp))
            return true;
    }
    return false;
}

bk_status_t bk_cuckoo_add(bk_cuckoo_t *c, const void *key, size_t len)
{
    if (!c || (!key && len))
        return BK_EINVAL;
    cuckoo_key_t k = key_of(c, key, len);
    return add_key(c, &k, NULL, NULL);
}

bk_status_t bk_cuckoo_add_unique(bk_cuckoo_t *c, const void *key, size_t len, bool *added)
{
    if (added)
        *added = false;
    if (!c || (!key && len))
        return BK_EINVAL;
    cuckoo_key_t k = key_of(c, key, len);
    if (contains_key(c, &k))
        return BK_OK;
    bk_status_t st = add_key(c, &k, NULL, NULL);
    if (st == BK_OK && added)
        *added = true;
    return st;
}

bk_status_t bk_cuckoo_add_within(bk_cuckoo_t *c, const void *key, size_t len, bool unique,
                                 bool *added, uint64_t *budget)
{
    if (added)
        *added = false;
    if (!c || (!key && len) || !budget)
        return BK_EINVAL;
    cuckoo_key_t k = key_of(c, key, len);
    if (unique && contains_key(c, &k))
        return BK_OK;
    bk_status_t st = add_key(c, &k, budget, NULL);
    if (st == BK_OK && added)
        *added = true;
    return st;
}

bool bk_cuckoo_contains(const bk_cuckoo_t *c, const void *key, size_t len)
{
    if (!c || (!key && len))
        return false;
    cuckoo_key_t k = key_of(c, key, len);
    return contains_key(c, &k);
}

uint64_t bk_cuckoo_count(const bk_cuckoo_t *c, const void *key, size_t len)
{
    if (!c || (!key && len))
        return 0;
    cuckoo_key_t k = key_of(c, key, len);
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->nsubs; i++) {
        const cuckoo_sub_t *s = &c->subs[i];
        uint64_t b1 = first_bucket(c, s, k.h);
        /* Both buckets, even when they are one bucket: RedisBloom's count. */
        n += bucket_count(c, bucket_at(c, s, b1), k.fp) +
             bucket_count(c, bucket_at(c, s, other_bucket(c, s, b1, k.fp)), k.fp);
    }
    return n;
}

/* ---- remove and compact ---- */

/* Moves fingerprints of sub-filter j into older ones (RedisBloom only:
 * its buckets nest); false if one did not fit. Frees j when it is the
 * newest and emptied. */
static bool compact_sub(bk_cuckoo_t *c, uint32_t j)
{
    cuckoo_sub_t *s = &c->subs[j];
    bool all = true;
    for (uint64_t b = 0; b < s->buckets; b++) {
        uint8_t *bucket = bucket_at(c, s, b);
        for (uint32_t v = 0; v < c->bucket_size; v++) {
            uint8_t *slot = bucket + v * c->fp_bytes;
            uint32_t fp = slot_get(c, slot);
            if (fp == 0)
                continue;
            uint64_t alt = b ^ ((uint64_t)fp * ALT_MULT);
            bool moved = false;
            for (uint32_t i = 0; i < j && !moved; i++) {
                cuckoo_sub_t *t = &c->subs[i];
                uint8_t *dst = free_slot(c, t, b % t->buckets, alt % t->buckets);
                if (dst) {
                    slot_set(c, dst, fp);
                    slot_set(c, slot, 0);
                    moved = true;
                }
            }
            all &= moved;
        }
    }
    if (all && j == c->nsubs - 1)
        drop_newest(c);
    return all;
}

static void compact(bk_cuckoo_t *c, bool keep_going)
{
    if (c->flavour == BK_CUCKOO_REDISBLOOM && !c->mapped)
        for (uint32_t j = c->nsubs; j-- > 1;)
            if (!compact_sub(c, j) && !keep_going)
                break;
    c->deletes = 0;
}

void bk_cuckoo_compact(bk_cuckoo_t *c)
{
    if (c)
        compact(c, true);
}

#ifndef CUCKOO_SSE2 /* the portable code's own */
static inline void store_word(uint8_t *p, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, sizeof w);
}

/* The lane of the lowest mark of a word4x16_match mask, all ones; 0 for
 * no mark. */
static inline uint64_t lowest_lane(uint64_t m)
{
    return ((m & (0 - m)) >> 15) * 0xffff;
}
#endif

/* remove_key of a 4x16 filter that never grew, with no branch on what
 * the buckets hold: both words are read, the lane to clear is found by
 * arithmetic, and both are written back (unchanged where the key is not).
 * A branch on which bucket held the key mispredicts as often as keys sit
 * in their second bucket (many, in a filter near its 95% load), and each
 * mispredict discards the next calls' loads issued behind it, so removes
 * would pay their cache misses one after another. Both words are written
 * back, each at an address known before either is read: a store whose
 * address waited on the loads would hold up the loads of the calls after
 * it. The first bucket's word is written last, so when the two buckets are
 * one its cleared lane stands. On x86 the work after the loads is vector
 * work, as in has_4x16 (which says why): 70 -> 54 ns a remove on 100M keys
 * (bench/fastfilter.sh, AMD EPYC). */
static inline __attribute__((always_inline)) bool remove_4x16_one(bk_cuckoo_t *c,
                                                                  const cuckoo_key_t *k)
{
    uint8_t *p1, *p2;
    words_4x16_one(c, k->h, k->fp, &p1, &p2);
#ifdef CUCKOO_SSE2
    __m128i v = pair_4x16(p1, p2);
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi16(v, _mm_set1_epi16((short)k->fp)));
    v = _mm_andnot_si128(lowest_of_4x16(m), v);
    _mm_storeh_pd((double *)(void *)p2, _mm_castsi128_pd(v));
    _mm_storel_epi64((__m128i *)(void *)p1, v);
    bool found = m != 0;
    /* The counts under a branch predicted taken (a remove is of a key
     * that was added), so that they need not wait for the miss: 54 -> 52
     * ns a remove on 100M keys, in the runs above. */
    if (BKI_LIKELY(found)) {
        c->items--;
        c->deletes++;
    }
    return found;
#else
    uint64_t w1 = load_word(p1), w2 = load_word(p2);
    uint64_t m1 = word4x16_match(w1, k->fp), m2 = word4x16_match(w2, k->fp);
    uint64_t c1 = lowest_lane(m1);
    /* a mask, not `m1 ? 0 : ...`, which GCC compiles to the very branch
     * this function exists to avoid (a remove took twice a lookup's time) */
    uint64_t c2 = lowest_lane(m2) & ((uint64_t)(m1 != 0) - 1);
    store_word(p2, w2 & ~c2);
    store_word(p1, w1 & ~c1);
    bool found = (m1 | m2) != 0;
    c->items -= found;
    c->deletes += found;
    return found;
#endif
}

/* Clears the first slot holding k's fingerprint, newest sub-filter first
 * and first bucket before second (RedisBloom's order); false if none. */
static bool remove_key(bk_cuckoo_t *c, const cuckoo_key_t *k)
{
    if (c->one_data)
        return remove_4x16_one(c, k);
    for (uint32_t i = c->nsubs; i-- > 0;) {
        cuckoo_sub_t *s = &c->subs[i];
        uint64_t b1 = first_bucket(c, s, k->h);
        uint8_t *slot = bucket_find(c, bucket_at(c, s, b1), k->fp);
        if (!slot)
            slot = bucket_find(c, bucket_at(c, s, other_bucket(c, s, b1, k->fp)), k->fp);
        if (slot) {
            slot_set(c, slot, 0);
            c->items--;
            c->deletes++;
            return true;
        }
    }
    return false;
}

bool bk_cuckoo_remove(bk_cuckoo_t *c, const void *key, size_t len)
{
    if (!c || (!key && len))
        return false;
    cuckoo_key_t k = key_of(c, key, len);
    if (!remove_key(c, &k))
        return false;
    if (c->nsubs > 1 && (double)c->deletes > (double)c->items * 0.10)
        compact(c, false);
    return true;
}

/* ---- creation ---- */

static uint64_t next_pow2(uint64_t n)
{
    if (n <= 1)
        return n;
    if (n > (UINT64_C(1) << 63))
        return 0;
    uint64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* The false-positive rate of a native filter at capacity: 2 buckets of b
 * slots, each matching a random fingerprint with probability
 * 1 / (2^bits - 1). */
static double native_fpr(uint32_t bucket_size, uint32_t bits)
{
    double span = bits == 32 ? 4294967295.0 : (double)((UINT64_C(1) << bits) - 1);
    return 2.0 * bucket_size / span;
}

bk_status_t bk_cuckoo_plan(uint64_t n, double p, bk_cuckoo_plan_t *out)
{
    if (!out || n == 0 || !(p > 2e-9 && p < 1.0))
        return BK_EINVAL;
    memset(out, 0, sizeof *out);
    out->bucket_size = 4;
    static const uint32_t widths[] = {8, 16, 32};
    for (size_t i = 0; i < 3 && !out->fingerprint_bits; i++)
        if (native_fpr(4, widths[i]) <= 0.9 * p)
            out->fingerprint_bits = widths[i];
    if (!out->fingerprint_bits)
        return BK_EINVAL;
    /* Buckets at most 95% full at n keys. */
    double buckets = ceil((double)n / (4 * 0.95));
    if (!(buckets < 1e18))
        return BK_ENOMEM;
    out->buckets = (uint64_t)buckets;
    out->bytes = out->buckets * 4 * (out->fingerprint_bits / 8);
    out->bits_per_key = (double)out->bytes * 8 / (double)n;
    out->expected_fpr = native_fpr(4, out->fingerprint_bits);
    return BK_OK;
}

static bk_cuckoo_t *new_shell(bk_cuckoo_flavour_t flavour)
{
    bk_cuckoo_t *c = bki_calloc(1, sizeof *c);
    if (c)
        c->flavour = flavour;
    return c;
}

bk_cuckoo_t *bki_cuckoo_shell(uint32_t bucket_size, uint32_t fp_bits, uint32_t max_iterations,
                              uint32_t expansion, uint64_t seed)
{
    bk_cuckoo_t *c = new_shell(BK_CUCKOO_NATIVE);
    if (!c)
        return NULL;
    c->bucket_size = bucket_size;
    c->fp_bytes = fp_bits / 8;
    c->max_iterations = max_iterations;
    c->expansion = expansion;
    c->seed = seed;
    return c;
}

bk_status_t bk_cuckoo_create(bk_cuckoo_t **out, uint64_t capacity, double p,
                             const bk_cuckoo_options_t *opts)
{
    static const bk_cuckoo_options_t defaults = {0};
    const bk_cuckoo_options_t *o = opts ? opts : &defaults;
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    bool rb = o->flavour == BK_CUCKOO_REDISBLOOM;
    if (capacity == 0 || (o->flavour != BK_CUCKOO_NATIVE && !rb) || o->bucket_size > 255 ||
        o->max_iterations > 65535 || o->expansion > 32768)
        return BK_EINVAL;
    uint32_t bucket_size = o->bucket_size ? o->bucket_size : rb ? 2 : 4;
    uint32_t iterations = o->max_iterations ? o->max_iterations : rb ? 20 : 500;
    uint32_t expansion = o->expansion_set ? o->expansion : rb ? 1 : 2;
    uint64_t buckets;
    uint32_t bits = 8;
    if (rb) {
        /* RedisBloom's: capacity / bucket size rounded up to a power of
         * two, at least 1 (past 2^63 there is no such power: too large) */
        uint64_t want = capacity / bucket_size;
        buckets = want == 0 ? 1 : next_pow2(want);
        if (buckets == 0)
            return BK_ENOMEM;
    } else {
        bk_cuckoo_plan_t plan;
        bk_status_t st = bk_cuckoo_plan(capacity, p, &plan);
        if (st != BK_OK && !o->fingerprint_bits)
            return st;
        bits = o->fingerprint_bits ? o->fingerprint_bits : plan.fingerprint_bits;
        if (bits != 8 && bits != 16 && bits != 32)
            return BK_EINVAL;
        double want = ceil((double)capacity / (bucket_size * 0.95));
        if (!(want < 1e18)) /* far past any payload the library holds */
            return BK_ENOMEM;
        buckets = (uint64_t)want;
    }
    bk_cuckoo_t *c = new_shell(rb ? BK_CUCKOO_REDISBLOOM : BK_CUCKOO_NATIVE);
    if (!c)
        return BK_ENOMEM;
    c->bucket_size = bucket_size;
    c->max_iterations = iterations;
    c->expansion = (uint32_t)next_pow2(expansion);
    c->fp_bytes = bits / 8;
    c->seed = o->seed;
    c->capacity = capacity;
    c->fpr = rb ? native_fpr(bucket_size, 8) : p;
    c->buckets = buckets;
    bk_status_t st = add_sub(c, buckets);
    if (st != BK_OK) {
        bk_cuckoo_free(c);
        return st;
    }
    *out = c;
    return BK_OK;
}

static bk_cuckoo_t *cuckoo_defrag(bk_cuckoo_t *c, bki_mover_t *mv)
{
    c = bki_move_block(c, mv);
    c->subs = bki_move_block(c->subs, mv);
    for (uint32_t i = 0; i < c->nsubs; i++)
        c->subs[i].data = bki_move_payload(c->subs[i].data, c->subs[i].nbytes, c->subs[i].mem, mv);
    note_shape(c);
    return c;
}

size_t bk_cuckoo_defrag(bk_cuckoo_t **c, bk_move_fn move, void *arg)
{
    if (!c || !*c || !move || (*c)->mapped)
        return 0;
    bki_mover_t mv = {move, arg, 0};
    *c = cuckoo_defrag(*c, &mv);
    return mv.moved;
}

void bk_cuckoo_free(bk_cuckoo_t *c)
{
    if (!c)
        return;
    while (c->nsubs)
        drop_newest(c);
    bki_free(c->subs);
    bki_free(c);
}

/* ---- shape, RedisBloom's fields, bytes ---- */

void bk_cuckoo_shape(const bk_cuckoo_t *c, bk_cuckoo_shape_t *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    out->flavour = c->flavour;
    out->buckets = c->buckets;
    out->bucket_size = c->bucket_size;
    out->fingerprint_bits = c->fp_bytes * 8;
    out->max_iterations = c->max_iterations;
    out->expansion = c->expansion;
    out->filters = c->nsubs;
    out->items = c->items;
    out->deletes = c->deletes;
    out->capacity = c->capacity;
    out->fpr = c->fpr;
    out->bytes = bk_cuckoo_bytes(c);
}

uint64_t bk_cuckoo_bytes(const bk_cuckoo_t *c)
{
    uint64_t n = 0;
    for (uint32_t i = 0; c && i < c->nsubs; i++)
        n += c->subs[i].nbytes;
    return n;
}

void bk_cuckoo_set_max_bytes(bk_cuckoo_t *c, uint64_t max_bytes)
{
    if (c)
        c->max_bytes = max_bytes;
}

/* A RedisBloom-flavour filter's fields from its header's (f->filters
 * aside: the sub-filters are added after): one-byte fingerprints, and the
 * capacity and rate the flavour gives that geometry. */
static void set_rb_fields(bk_cuckoo_t *c, const bk_cuckoo_fields_t *f)
{
    c->flavour = BK_CUCKOO_REDISBLOOM;
    c->bucket_size = f->bucket_size;
    c->max_iterations = f->max_iterations;
    c->expansion = f->expansion;
    c->fp_bytes = 1;
    c->buckets = f->buckets;
    c->items = f->items;
    c->deletes = f->deletes;
    c->capacity = f->buckets * f->bucket_size;
    c->fpr = native_fpr(f->bucket_size, 8);
    note_shape(c);
}

/* ---- compact filters ---- */

_Static_assert(sizeof(bk_cuckoo_compact_t) == 48, "a compact filter fits a 48-byte size class");

bk_status_t bk_cuckoo_compact_take(bk_cuckoo_t **cp, bk_cuckoo_compact_t *out)
{
    bk_cuckoo_t *c = cp ? *cp : NULL;
    if (!c || !out)
        return BK_EINVAL;
    if (c->flavour != BK_CUCKOO_REDISBLOOM || c->nsubs != 1 || c->mapped || c->fp_bytes != 1 ||
        c->bucket_size > UINT16_MAX || c->max_iterations > UINT16_MAX ||
        c->expansion > UINT16_MAX || c->subs[0].mem == BKI_MEM_BORROWED)
        return BK_EKIND;
    out->items = c->items;
    out->deletes = c->deletes;
    out->buckets = c->subs[0].buckets;
    out->data = c->subs[0].data;
    out->bucket_size = (uint16_t)c->bucket_size;
    out->max_iterations = (uint16_t)c->max_iterations;
    out->expansion = (uint16_t)c->expansion;
    out->mem = (uint8_t)c->subs[0].mem;
    out->reserved = 0;
    c->nsubs = 0; /* the buckets are out's now */
    bk_cuckoo_free(c);
    *cp = NULL;
    return BK_OK;
}

bk_status_t bk_cuckoo_compact_create(bk_cuckoo_compact_t *out, uint64_t capacity,
                                     const bk_cuckoo_options_t *opts)
{
    if (!out || !opts || opts->flavour != BK_CUCKOO_REDISBLOOM || capacity == 0 ||
        opts->bucket_size > 255 || opts->max_iterations > 65535 || opts->expansion > 32768)
        return BK_EINVAL;
    /* bk_cuckoo_create's RedisBloom geometry and defaults */
    uint32_t bucket_size = opts->bucket_size ? opts->bucket_size : 2;
    uint64_t want = capacity / bucket_size;
    uint64_t buckets = want == 0 ? 1 : next_pow2(want);
    if (buckets == 0 || buckets > BKI_MAX_PAYLOAD_BYTES / bucket_size)
        return BK_ENOMEM;
    bki_mem_t mem;
    uint8_t *data = bki_payload_alloc(buckets * bucket_size, &mem);
    if (!data)
        return BK_ENOMEM;
    out->items = out->deletes = 0;
    out->buckets = buckets;
    out->data = data;
    out->bucket_size = (uint16_t)bucket_size;
    out->max_iterations = (uint16_t)(opts->max_iterations ? opts->max_iterations : 20);
    out->expansion = (uint16_t)next_pow2(opts->expansion_set ? opts->expansion : 1);
    out->mem = (uint8_t)mem;
    out->reserved = 0;
    return BK_OK;
}

uint64_t bk_cuckoo_compact_bytes(const bk_cuckoo_compact_t *p)
{
    return p ? p->buckets * p->bucket_size : 0;
}

/* Whether view is bound to p: one sub-filter (or more, grown) whose
 * oldest borrows p's buckets. */
static bool bound_to(const bk_cuckoo_t *view, const bk_cuckoo_compact_t *p)
{
    return view && p && view->nsubs >= 1 && view->subs[0].mem == BKI_MEM_BORROWED &&
           view->subs[0].data == p->data && !view->mapped;
}

bk_status_t bk_cuckoo_bind(bk_cuckoo_t **view, const bk_cuckoo_compact_t *p)
{
    if (!view || !p || !p->data || p->bucket_size == 0 || p->buckets == 0)
        return BK_EINVAL;
    bk_cuckoo_t *c = *view;
    /* A view that grew holds sub-filters of its own: start afresh. */
    if (c && (c->nsubs > 1 || c->subs_cap < 1 || c->mapped ||
              (c->nsubs == 1 && c->subs[0].mem != BKI_MEM_BORROWED))) {
        bk_cuckoo_free(c);
        c = NULL;
    }
    if (!c) {
        *view = NULL;
        c = new_shell(BK_CUCKOO_REDISBLOOM);
        if (!c)
            return BK_ENOMEM;
        c->subs = bki_calloc(1, sizeof *c->subs);
        if (!c->subs) {
            bki_free(c);
            return BK_ENOMEM;
        }
        c->subs_cap = 1;
    }
    bk_cuckoo_fields_t f = {p->buckets,     p->items,          p->deletes, 1,
                            p->bucket_size, p->max_iterations, p->expansion};
    set_rb_fields(c, &f);
    c->seed = 0;
    c->max_bytes = 0;
    c->mapped = false;
    c->nsubs = 1;
    c->subs[0].buckets = p->buckets;
    c->subs[0].data = p->data;
    c->subs[0].nbytes = p->buckets * p->bucket_size;
    c->subs[0].mem = BKI_MEM_BORROWED;
    note_shape(c);
    *view = c;
    return BK_OK;
}

bk_status_t bk_cuckoo_store(const bk_cuckoo_t *view, bk_cuckoo_compact_t *p)
{
    if (!bound_to(view, p) || view->nsubs != 1)
        return BK_EINVAL;
    p->items = view->items;
    p->deletes = view->deletes;
    return BK_OK;
}

bk_status_t bk_cuckoo_detach(bk_cuckoo_t **view, bk_cuckoo_compact_t *p, bk_cuckoo_t **out)
{
    if (!view || !out || !bound_to(*view, p))
        return BK_EINVAL;
    bk_cuckoo_t *c = *view;
    c->subs[0].mem = (bki_mem_t)p->mem; /* the buckets are the filter's now */
    c->max_bytes = 0;
    p->data = NULL;
    *out = c;
    *view = NULL;
    return BK_OK;
}

bk_status_t bk_cuckoo_compact_copy(const bk_cuckoo_compact_t *p, bk_cuckoo_compact_t *out)
{
    if (!p || !out || !p->data)
        return BK_EINVAL;
    uint64_t n = bk_cuckoo_compact_bytes(p);
    bki_mem_t mem;
    uint8_t *data = bki_payload_alloc(n, &mem);
    *out = *p;
    out->data = data;
    if (!data)
        return BK_ENOMEM;
    memcpy(data, p->data, (size_t)n);
    out->mem = (uint8_t)mem;
    return BK_OK;
}

void bk_cuckoo_compact_free(bk_cuckoo_compact_t *p)
{
    if (p && p->data) {
        bki_payload_free(p->data, bk_cuckoo_compact_bytes(p), (bki_mem_t)p->mem);
        p->data = NULL;
    }
}

size_t bk_cuckoo_compact_defrag(bk_cuckoo_compact_t *p, bk_move_fn move, void *arg)
{
    if (!p || !p->data || !move)
        return 0;
    bki_mover_t mv = {move, arg, 0};
    p->data = bki_move_payload(p->data, bk_cuckoo_compact_bytes(p), (bki_mem_t)p->mem, &mv);
    return mv.moved;
}

uint64_t bk_cuckoo_sub_buckets(const bk_cuckoo_t *c, uint32_t i)
{
    return c && i < c->nsubs ? c->subs[i].buckets : 0;
}

void bk_cuckoo_fields(const bk_cuckoo_t *c, bk_cuckoo_fields_t *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    out->buckets = c->buckets;
    out->items = c->items;
    out->deletes = c->deletes;
    out->filters = c->nsubs;
    out->bucket_size = c->bucket_size;
    out->max_iterations = c->max_iterations;
    out->expansion = c->expansion;
}

bk_status_t bk_cuckoo_restore(bk_cuckoo_t **out, const bk_cuckoo_fields_t *f,
                              const uint64_t *sub_buckets, const char **why)
{
    if (!out || !f)
        BKI_FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    if (f->filters == 0 || f->filters > MAX_SUBS_REDISBLOOM)
        BKI_FAIL(BK_ECORRUPT, "sub-filter count is zero or too large");
    if (f->bucket_size == 0 || f->bucket_size > 255 || f->max_iterations == 0 ||
        f->max_iterations > 65535)
        BKI_FAIL(BK_ECORRUPT, "bucket size or max iterations out of range");
    if (f->buckets == 0 || f->buckets != next_pow2(f->buckets) || f->buckets > (UINT64_C(1) << 32))
        BKI_FAIL(BK_ECORRUPT, "bucket count is not a power of two");
    if (f->expansion != next_pow2(f->expansion) || f->expansion > 32768)
        BKI_FAIL(BK_ECORRUPT, "expansion is not a power of two");
    bk_cuckoo_t *c = new_shell(BK_CUCKOO_REDISBLOOM);
    if (!c)
        BKI_FAIL(BK_ENOMEM, "out of memory");
    set_rb_fields(c, f);
    uint64_t nb = f->buckets;
    for (uint32_t i = 0; i < f->filters; i++) {
        uint64_t want = sub_buckets ? sub_buckets[i] : nb;
        /* Sub-filters nest: each a power of two, none smaller than the first. */
        bk_status_t st = want < f->buckets || want != next_pow2(want) || want > (UINT64_C(1) << 32)
                             ? BK_ECORRUPT
                             : add_sub(c, want);
        if (st != BK_OK) {
            bk_cuckoo_free(c);
            BKI_FAIL(st, st == BK_ECORRUPT ? "sub-filter bucket count out of place"
                         : st == BK_ENOMEM ? "out of memory"
                                           : "too many sub-filters");
        }
        if (f->expansion && nb <= UINT64_MAX / f->expansion)
            nb *= f->expansion;
    }
    *out = c;
    return BK_OK;
}

/* The sub-filter holding byte `offset` of the bytes string, and where. */
static cuckoo_sub_t *sub_at(const bk_cuckoo_t *c, uint64_t offset, uint64_t *inside)
{
    for (uint32_t i = 0; i < c->nsubs; i++) {
        if (offset < c->subs[i].nbytes) {
            *inside = offset;
            return &c->subs[i];
        }
        offset -= c->subs[i].nbytes;
    }
    return NULL;
}

bk_status_t bk_cuckoo_read(const bk_cuckoo_t *c, uint64_t offset, uint64_t max, const void **bytes,
                           uint64_t *len)
{
    if (!c || !bytes || !len)
        return BK_EINVAL;
    uint64_t inside;
    const cuckoo_sub_t *s = sub_at(c, offset, &inside);
    *bytes = NULL;
    *len = 0;
    if (!s)
        return BK_OK;
    uint64_t left = s->nbytes - inside;
    *bytes = s->data + inside;
    *len = left < max ? left : max;
    return BK_OK;
}

bk_status_t bk_cuckoo_write(bk_cuckoo_t *c, uint64_t offset, const void *bytes, uint64_t len)
{
    if (!c || (!bytes && len))
        return BK_EINVAL;
    uint64_t inside;
    cuckoo_sub_t *s = sub_at(c, offset, &inside);
    if (!s || len > s->nbytes - inside)
        return BK_EINVAL;
    if (len)
        memcpy(s->data + inside, bytes, (size_t)len);
    return BK_OK;
}

/* ---- as a bk_filter_t (the cuckoo kind; native flavour only: its key
 * hash is the filter's XXH3 hash, so bk_filter_hash serves it) ---- */

static cuckoo_key_t key_of_hash(const bk_cuckoo_t *c, bk_hash_t h)
{
    cuckoo_key_t k = {h.lo, native_fp(c, h.hi)};
    return k;
}

bk_status_t bki_cuckoo_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new)
{
    cuckoo_key_t k = key_of_hash(f->cuckoo, h);
    bool present = was_new && contains_key(f->cuckoo, &k);
    bk_status_t st = add_key(f->cuckoo, &k, NULL, f);
    if (was_new)
        *was_new = st == BK_OK && !present;
    return st;
}

/* Keys hashed a group at a time, both buckets of each prefetched in every
 * sub-filter, then probed: the group's cache misses overlap. */
/* The planned geometry's batch, single sub-filter: both bucket words of a
 * group of keys prefetched, then read and compared four at a time. */
static size_t contains_batch_4x16(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out)
{
    const bk_cuckoo_t *c = f->cuckoo;
    enum { GROUP = 16 };
    const cuckoo_sub_t *s = &c->subs[0];
    uint8_t *b1[GROUP], *b2[GROUP];
    uint32_t fp[GROUP];
    size_t hits = 0;
    for (size_t at = 0; at < n; at += GROUP) {
        size_t m = n - at < GROUP ? n - at : GROUP;
        for (size_t j = 0; j < m; j++) {
            bk_hash_t r = bki_key_hash(f->hash, f->seed, keys[at + j].ptr, keys[at + j].len);
            fp[j] = bki_cuckoo_fp16(r.hi);
            words_4x16(s, r.lo, fp[j], &b1[j], &b2[j]);
            __builtin_prefetch(b1[j]);
            __builtin_prefetch(b2[j]);
        }
        for (size_t j = 0; j < m; j++) {
#ifdef CUCKOO_SSE2
            bool in = _mm_movemask_epi8(_mm_cmpeq_epi16(pair_4x16(b1[j], b2[j]),
                                                        _mm_set1_epi16((short)fp[j]))) != 0;
#else
            bool in = (word4x16_match(load_word(b1[j]), fp[j]) |
                       word4x16_match(load_word(b2[j]), fp[j])) != 0;
#endif
            out[at + j] = in;
            hits += in;
        }
    }
    return hits;
}

size_t bki_cuckoo_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out)
{
    enum { GROUP = 16 };
    const bk_cuckoo_t *c = f->cuckoo;
    if (is_4x16(c) && c->nsubs == 1)
        return contains_batch_4x16(f, keys, n, out);
    cuckoo_key_t k[GROUP];
    size_t hits = 0;
    for (size_t at = 0; at < n; at += GROUP) {
        size_t m = n - at < GROUP ? n - at : GROUP;
        for (size_t j = 0; j < m; j++) {
            k[j] =
                key_of_hash(c, bki_key_hash(f->hash, f->seed, keys[at + j].ptr, keys[at + j].len));
            for (uint32_t i = 0; i < c->nsubs; i++) {
                const cuckoo_sub_t *s = &c->subs[i];
                uint64_t b1 = first_bucket(c, s, k[j].h);
                __builtin_prefetch(bucket_at(c, s, b1));
                __builtin_prefetch(bucket_at(c, s, other_bucket(c, s, b1, k[j].fp)));
            }
        }
        for (size_t j = 0; j < m; j++) {
            out[at + j] = contains_key(c, &k[j]);
            hits += out[at + j];
        }
    }
    return hits;
}

bool bki_cuckoo_contains_hash(const bk_filter_t *f, bk_hash_t h)
{
    cuckoo_key_t k = key_of_hash(f->cuckoo, h);
    return contains_key(f->cuckoo, &k);
}

bk_status_t bki_cuckoo_remove_hash(bk_filter_t *f, bk_hash_t h)
{
    cuckoo_key_t k = key_of_hash(f->cuckoo, h);
    return remove_key(f->cuckoo, &k) ? BK_OK : BK_ENOTFOUND;
}

/* Whether a one-key add or remove takes the planned geometry's own code:
 * an 8-byte key under the default hash into a 4x16 filter that never
 * grew (the common call). */
static inline bool one_key_4x16(const bk_filter_t *f, size_t len)
{
    return len == 8 && f->cuckoo->one_key;
}

/* Any key of any cuckoo filter: hashed by the general call. */
__attribute__((noinline)) static bk_status_t cuckoo_remove_other(bk_filter_t *f, const void *key,
                                                                 size_t len)
{
    cuckoo_key_t k = key_of_hash(f->cuckoo, bki_key_hash(f->hash, f->seed, key, len));
    return remove_key(f->cuckoo, &k) ? BK_OK : BK_ENOTFOUND;
}

/* bk_filter_remove of one key, in two calls as the one-key lookups: an
 * 8-byte key under the default hash into the planned geometry, never grown
 * (the common call), is mixed with its seed's part precomputed
 * (f->key8_secret) and cleared here with no stack frame; any other goes on
 * to the general call. In a loop of removes on a filter larger than the
 * caches the fewer instructions a call spends, the more calls' cache
 * misses overlap: the general call with its frame took twice a lookup's
 * time per remove at 10 million keys. */
bk_status_t bki_cuckoo_remove_key(bk_filter_t *f, const void *key, size_t len)
{
    bk_cuckoo_t *c = f->cuckoo;
    if (BKI_UNLIKELY(!one_key_4x16(f, len)))
        return cuckoo_remove_other(f, key, len);
    XXH128_hash_t r = bki_mix8(bki_key8_le(key), f->key8_secret);
    cuckoo_key_t k = {r.low64, bki_cuckoo_fp16(r.high64)};
    return remove_4x16_one(c, &k) ? BK_OK : BK_ENOTFOUND;
}

/* bki_cuckoo_remove_key for a key given as a 64-bit integer: the same
 * path with the key in a register; other geometries and hashes take its
 * 8 little-endian bytes. */
__attribute__((noinline)) static bk_status_t cuckoo_remove_u64_other(bk_filter_t *f, uint64_t key)
{
    uint8_t b[8];
    bki_key8_put_le(b, key);
    return cuckoo_remove_other(f, b, sizeof b);
}

bk_status_t bki_cuckoo_remove_u64(bk_filter_t *f, uint64_t key)
{
    bk_cuckoo_t *c = f->cuckoo;
    if (BKI_UNLIKELY(!c->one_key))
        return cuckoo_remove_u64_other(f, key);
    XXH128_hash_t r = bki_mix8(key, f->key8_secret);
    cuckoo_key_t k = {r.low64, bki_cuckoo_fp16(r.high64)};
    return remove_4x16_one(c, &k) ? BK_OK : BK_ENOTFOUND;
}

unsigned bki_cuckoo_counter(const bk_filter_t *f, bk_hash_t h)
{
    const bk_cuckoo_t *c = f->cuckoo;
    cuckoo_key_t k = key_of_hash(c, h);
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->nsubs; i++) {
        const cuckoo_sub_t *s = &c->subs[i];
        uint64_t b1 = first_bucket(c, s, k.h), b2 = other_bucket(c, s, b1, k.fp);
        n += bucket_count(c, bucket_at(c, s, b1), k.fp);
        if (b2 != b1) /* a fingerprint is in one of its buckets, once */
            n += bucket_count(c, bucket_at(c, s, b2), k.fp);
    }
    return n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
}

bk_status_t bki_cuckoo_clear(bk_filter_t *f)
{
    bk_cuckoo_t *c = f->cuckoo;
    /* A mapped filter keeps its sub-filters (its file's layout), emptied. */
    while (c->nsubs > 1 && !c->mapped)
        drop_newest(c);
    for (uint32_t i = 0; i < c->nsubs; i++)
        bki_payload_zero(c->subs[i].data, c->subs[i].nbytes, c->subs[i].mem);
    c->items = c->deletes = 0;
    return BK_OK;
}

/* The planned geometry's add when one of the key's buckets has room (all
 * but the adds that kick): both bucket words are read at once, so their
 * cache misses overlap (the general call reads the second only after the
 * first proved full, one miss after the other), and the fingerprint goes
 * into the first empty slot of the first bucket, else of the second, as
 * add_key puts it. False, with nothing changed, when both are full. */
static inline bool add_4x16_one(bk_cuckoo_t *c, uint64_t h, uint32_t fp, bool *was_new)
{
    uint8_t *p1, *p2;
    words_4x16_one(c, h, fp, &p1, &p2);
#ifdef CUCKOO_SSE2
    /* As remove_4x16_one: compares in vectors, and both words written back
     * at addresses known before the loads (the scalar code's one store went
     * to an address chosen by what the first word held). */
    __m128i v = pair_4x16(p1, p2), want = _mm_set1_epi16((short)fp);
    unsigned e = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi16(v, _mm_setzero_si128()));
    if (!e)
        return false;
    if (was_new)
        *was_new = _mm_movemask_epi8(_mm_cmpeq_epi16(v, want)) == 0;
    v = _mm_or_si128(v, _mm_and_si128(lowest_of_4x16(e), want));
    _mm_storeh_pd((double *)(void *)p2, _mm_castsi128_pd(v));
    _mm_storel_epi64((__m128i *)(void *)p1, v);
#else
    uint64_t w1 = load_word(p1), w2 = load_word(p2);
    uint64_t e1 = word4x16_match(w1, 0), e2 = word4x16_match(w2, 0);
    if (!(e1 | e2))
        return false;
    if (was_new)
        *was_new = !(word4x16_match(w1, fp) | word4x16_match(w2, fp));
    uint8_t *p = e1 ? p1 : p2;
    uint64_t w = e1 ? w1 : w2, e = e1 ? e1 : e2;
    store_word(p, w | (uint64_t)fp << (__builtin_ctzll(e) & ~15u));
#endif
    c->items++;
    return true;
}

/* The planned geometry's add of an 8-byte key (its bki_key8_le): into a
 * free slot of its two buckets here, else by the general path's kicks. */
static inline bk_status_t add_key8_4x16(bk_filter_t *f, uint64_t key, bool *was_new)
{
    XXH128_hash_t r = bki_mix8(key, f->key8_secret);
    if (add_4x16_one(f->cuckoo, r.low64, bki_cuckoo_fp16(r.high64), was_new))
        return BK_OK;
    bk_hash_t h = {r.low64, r.high64};
    return bki_cuckoo_add_hash(f, h, was_new);
}

static bk_status_t cuckoo_add_key(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    if (BKI_UNLIKELY(f->readonly)) {
        if (was_new)
            *was_new = false;
        return BK_EREADONLY;
    }
    if (one_key_4x16(f, len))
        return add_key8_4x16(f, bki_key8_le(key), was_new);
    return bki_cuckoo_add_hash(f, bki_key_hash(f->hash, f->seed, key, len), was_new);
}

/* bk_filter_add_u64 and bk_filter_contains_u64 of a cuckoo filter (its
 * f->u64): the calls above with the key in a register where the filter's
 * bound call is this file's own (a paged file's are pages.c's, bound over
 * these) and its geometry the planned one; else the key's 8 little-endian
 * bytes through the bound call. */
static bk_status_t cuckoo_add_u64(bk_filter_t *f, uint64_t key, bool *was_new)
{
    if (BKI_UNLIKELY(f->add_key != cuckoo_add_key || f->readonly || !f->cuckoo->one_key))
        return bki_u64_add_bytes(f, key, was_new);
    return add_key8_4x16(f, key, was_new);
}

static bool cuckoo_contains_key(const bk_filter_t *f, const void *key, size_t len)
{
    cuckoo_key_t k = key_of_hash(f->cuckoo, bki_key_hash(f->hash, f->seed, key, len));
    return contains_key(f->cuckoo, &k);
}

/* The planned geometry's one-key lookup, in two calls as the Bloom kinds'
 * (onekey.h says why): an 8-byte key into a filter that never grew (the
 * common call) is hashed with its seed's part precomputed in
 * f->key8_secret and probed here, in a function that needs no stack
 * frame; any other key or a grown filter goes on to the general call. One
 * entry per 8-byte hash: the default's mix (about 10 instructions) or
 * XXH3's (about 26; files made before the default reached this kind). In
 * a loop of lookups on a filter larger than the caches the fewer a call
 * spends, the more calls' two cache misses overlap: the mix measured
 * 0.78x XXH3's time per lookup at 10 million keys. */
__attribute__((noinline)) static bool cuckoo_contains_other_4x16(const bk_filter_t *f,
                                                                 const void *key, size_t len)
{
    bk_hash_t h = bki_key_hash(f->hash, f->seed, key, len);
    return has_4x16(f->cuckoo, h.lo, bki_cuckoo_fp16(h.hi));
}

#define DEFINE_CONTAINS_4X16(hname, hash8)                                                         \
    static bool cuckoo_contains_4x16_##hname(const bk_filter_t *f, const void *key, size_t len)    \
    {                                                                                              \
        const bk_cuckoo_t *c = f->cuckoo;                                                          \
        if (BKI_UNLIKELY(len != 8 || !c->one_data))                                                \
            return cuckoo_contains_other_4x16(f, key, len);                                        \
        XXH128_hash_t r = hash8(bki_key8_le(key), f->key8_secret);                                 \
        return has_4x16_one(c, r.low64, bki_cuckoo_fp16(r.high64));                                \
    }
DEFINE_CONTAINS_4X16(mix8, bki_mix8)
DEFINE_CONTAINS_4X16(xxh3, bki_xxh3_key8)

static bool cuckoo_contains_u64(const bk_filter_t *f, uint64_t key)
{
    const bk_cuckoo_t *c = f->cuckoo;
    if (BKI_LIKELY(f->contains_key == cuckoo_contains_4x16_mix8 && c->one_data)) {
        XXH128_hash_t r = bki_mix8(key, f->key8_secret);
        return has_4x16_one(c, r.low64, bki_cuckoo_fp16(r.high64));
    }
    return bki_u64_contains_bytes(f, key);
}

static const bki_u64_calls_t cuckoo_u64 = {cuckoo_add_u64, cuckoo_contains_u64};

bool bki_cuckoo_hash_ok(bk_hash_id_t hash)
{
    return hash == BK_HASH_XXH3_MIX8 || hash == BK_HASH_XXH3;
}

bk_status_t bki_cuckoo_wrap(bk_filter_t **out, bk_cuckoo_t *c, bk_kind_t kind, bk_hash_id_t hash)
{
    bk_filter_t *f = bki_calloc(1, sizeof *f);
    if (!f) {
        bk_cuckoo_free(c);
        return BK_ENOMEM;
    }
    f->kind = kind;
    /* Straight to its own calls: no dispatch per key. */
    f->add_key = cuckoo_add_key;
    f->contains_hash = bki_cuckoo_contains_hash;
    f->contains_key = !is_4x16(c)                 ? cuckoo_contains_key
                      : hash == BK_HASH_XXH3_MIX8 ? cuckoo_contains_4x16_mix8
                                                  : cuckoo_contains_4x16_xxh3;
    f->u64 = hash == BK_HASH_XXH3_MIX8 ? &cuckoo_u64 : NULL;
    f->hash = hash;
    c->key8_mix8 = hash == BK_HASH_XXH3_MIX8;
    note_shape(c);
    f->seed = c->seed;
    f->key8_secret = bki_key8_secret(hash, c->seed);
    f->capacity = c->capacity;
    f->fpr = c->fpr;
    f->k = c->bucket_size;
    f->map_fd = -1;
    f->cuckoo = c;
    *out = f;
    return BK_OK;
}

bk_status_t bki_cuckoo_filter_create(bk_filter_t **out, uint64_t capacity, double fpr,
                                     const bk_options_t *o)
{
    bk_cuckoo_options_t co = {.flavour = BK_CUCKOO_NATIVE, .seed = o->seed};
    if (!bki_cuckoo_hash_ok(o->hash))
        return BK_EINVAL; /* its fingerprints take the 128-bit hash's high half */
    bk_cuckoo_t *c;
    bk_status_t st = bk_cuckoo_create(&c, capacity, fpr, &co);
    if (st != BK_OK)
        return st;
    c->max_bytes = o->max_bytes;
    return bki_cuckoo_wrap(out, c, o->kind, o->hash);
}

bk_status_t bki_cuckoo_filter_clone(bk_filter_t **out, const bk_filter_t *f)
{
    const bk_cuckoo_t *c = f->cuckoo;
    *out = NULL;
    bk_cuckoo_t *d = new_shell(c->flavour);
    if (!d)
        return BK_ENOMEM;
    cuckoo_sub_t *keep = d->subs;
    *d = *c;
    d->subs = keep;
    d->nsubs = d->subs_cap = 0;
    for (uint32_t i = 0; i < c->nsubs; i++) {
        bk_status_t st = add_sub(d, c->subs[i].buckets);
        if (st != BK_OK) {
            bk_cuckoo_free(d);
            return st;
        }
        memcpy(d->subs[i].data, c->subs[i].data, (size_t)c->subs[i].nbytes);
    }
    return bki_cuckoo_wrap(out, d, f->kind, f->hash);
}

uint64_t bki_cuckoo_items(const bk_filter_t *f)
{
    return f->cuckoo->items;
}

bk_filter_t *bki_cuckoo_filter_defrag(bk_filter_t *f, bki_mover_t *mv)
{
    f = bki_move_block(f, mv);
    f->cuckoo = cuckoo_defrag(f->cuckoo, mv);
    return f;
}

void bki_cuckoo_filter_free(bk_filter_t *f)
{
    bk_cuckoo_free(f->cuckoo);
    bki_free(f);
}

static uint64_t sub_slots_used(const bk_cuckoo_t *c, const cuckoo_sub_t *s)
{
    uint64_t used = 0, slots = s->buckets * c->bucket_size;
    for (uint64_t j = 0; j < slots; j++)
        used += slot_get(c, s->data + j * c->fp_bytes) != 0;
    return used;
}

void bki_cuckoo_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out)
{
    const bk_cuckoo_t *c = f->cuckoo;
    memset(out, 0, sizeof *out);
    out->kind = out->sub_kind = f->kind;
    out->hash = f->hash;
    out->seed = f->seed;
    out->capacity = c->capacity;
    out->fpr_target = c->fpr;
    out->k = c->bucket_size;
    out->bytes = bk_cuckoo_bytes(c);
    out->items = c->items;
    out->filters = c->nsubs;
    out->growth = c->expansion;
    out->nonscaling = c->expansion == 0;
    out->newest_capacity = c->subs[c->nsubs - 1].buckets * c->bucket_size;
    out->max_bytes = c->max_bytes;
}

/* bk_filter_info of the kind: the slots in use counted (estimate false),
 * or taken from the item count (a fingerprint a slot). */
static void cuckoo_info(const bk_filter_t *f, bk_filter_info_t *out, bool estimate)
{
    const bk_cuckoo_t *c = f->cuckoo;
    /* The fields the shape has too, from it. */
    bk_filter_shape_t sh;
    bki_cuckoo_filter_shape(f, &sh);
    memset(out, 0, sizeof *out);
    out->kind = out->sub_kind = f->kind;
    out->hash = sh.hash;
    out->seed = sh.seed;
    out->capacity = sh.capacity;
    out->fpr_target = sh.fpr_target;
    out->k = sh.k;
    out->bytes = sh.bytes;
    out->items = sh.items;
    out->filters = sh.filters;
    out->growth = sh.growth;
    out->nonscaling = sh.nonscaling;
    uint64_t slots = 0;
    for (uint32_t i = 0; i < c->nsubs; i++)
        slots += c->subs[i].buckets * c->bucket_size;
    out->cells = slots;
    /* A lookup tests two buckets in every sub-filter: each occupied slot
     * there matches a random fingerprint with probability 1 / (2^bits - 1),
     * so sub-filter i answers falsely with 2 b fill_i / span, and the
     * filter when any does. (One fill over all slots, as before, gave a
     * grown filter's rate about once instead of once per sub-filter:
     * 7.5e-5 shown where 5.1e-4 was measured.) An estimate puts the items
     * in the sub-filters in turn, each filled before the next. */
    double span =
        c->fp_bytes == 4 ? 4294967295.0 : (double)((UINT64_C(1) << (8 * c->fp_bytes)) - 1);
    double none = 1.0;
    uint64_t used = 0, left = c->items;
    for (uint32_t i = 0; i < c->nsubs; i++) {
        const cuckoo_sub_t *s = &c->subs[i];
        uint64_t n = s->buckets * c->bucket_size, u;
        if (estimate) {
            u = left < n ? left : n;
            left -= u;
        } else {
            u = sub_slots_used(c, s);
        }
        used += u;
        double p = n ? 2.0 * c->bucket_size * ((double)u / (double)n) / span : 0.0;
        none *= 1.0 - (p < 1.0 ? p : 1.0);
    }
    out->cells_set = used;
    out->fill = slots ? (double)used / (double)slots : 0.0;
    out->estimated_items = (double)used;
    out->expected_fpr = 1.0 - none;
}

void bki_cuckoo_filter_info(const bk_filter_t *f, bk_filter_info_t *out)
{
    cuckoo_info(f, out, false);
}

void bki_cuckoo_info_estimated(const bk_filter_t *f, bk_filter_info_t *out)
{
    cuckoo_info(f, out, true);
}

uint32_t bki_cuckoo_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    const bk_cuckoo_t *c = f->cuckoo;
    const cuckoo_sub_t *s = &c->subs[0];
    cuckoo_key_t k = key_of_hash(c, h);
    uint64_t bb = (uint64_t)c->bucket_size * c->fp_bytes;
    uint64_t b1 = first_bucket(c, s, k.h), b2 = other_bucket(c, s, b1, k.fp);
    /* a bucket may straddle two pages: its first and last byte */
    off[0] = b1 * bb;
    off[1] = b1 * bb + bb - 1;
    off[2] = b2 * bb;
    off[3] = b2 * bb + bb - 1;
    return 4;
}

bool bki_cuckoo_first_payload(const bk_filter_t *f, uint8_t **data, uint64_t *len)
{
    const bk_cuckoo_t *c = f->cuckoo;
    *data = c->subs[0].data;
    *len = c->subs[0].nbytes;
    return c->nsubs == 1;
}

void bki_cuckoo_may_grow(bk_filter_t *f)
{
    f->cuckoo->mapped = false;
}
