/*
 * RedisBloom links: the sub-filters of a chain taken over from RedisBloom
 * (redisbloom.c builds the chains). A link is RedisBloom's bit array as it
 * wrote it, and sets and tests the bits RedisBloom does, so every key
 * answers as it did there, false positives included. New filters never
 * use this kind: it exists so that moving a RedisBloom deployment to
 * bloomkit changes no answer.
 *
 * The rules (facts from RedisBloom 2.x, its deps/bloom/bloom.c; the spec
 * is docs/FORMAT.md, "RedisBloom chains"):
 *  - a key's hash is a pair (a, b) (strhash.c: MurmurHash64A, or
 *    MurmurHash2 for chains without the FORCE64 option);
 *  - probe i (0 <= i < hashes) is bit x = (a + i * b) mod M, in 64-bit
 *    wrapping arithmetic, where M = 2^n2 when the link has n2 > 0 and the
 *    link's bit count otherwise; bit x is bit (x mod 8) of byte x / 8;
 *  - a link for `entries` keys at error e has bpe = -ln(e) / ln(2)^2 bits
 *    per entry and hashes = ceil(0.693147180559945 * bpe) (RedisBloom's
 *    rounded ln 2); with the NOROUND option its bits are
 *    floor(entries * bpe) (at least 1), else the next power of two above
 *    entries * bpe, whose spare bits RedisBloom counts as extra entries;
 *    either way rounded up to whole 64-bit words.
 * M is not a power of two for NOROUND links (every link RedisBloom 2.x
 * makes), so the probe divides: RedisBloom's cost, kept for its answers.
 */
#include "internal.h"

#include <math.h>

/* RedisBloom's constants, as it writes them: ln(2) rounded, and ln(2)^2. */
#define RB_LN2 0.693147180559945
#define RB_LN2_SQUARED 0.480453013918201

#define FOR_EACH_RB_PROBE(f, h, pos)                                               \
    for (uint64_t i_ = 0, mask_ = (f)->rb_n2 ? (UINT64_C(1) << (f)->rb_n2) - 1 : 0, \
                  pos;                                                             \
         i_ < (f)->k &&                                                            \
         ((pos = (f)->rb_n2 ? ((h).lo + i_ * (h).hi) & mask_                       \
                            : ((h).lo + i_ * (h).hi) % (f)->cells),                \
          1);                                                                      \
         i_++)

bool bki_rb_add(bk_filter_t *f, bk_hash_t h)
{
    uint8_t missing = 0;
    FOR_EACH_RB_PROBE(f, h, pos) {
        uint8_t bit = (uint8_t)(1u << (pos & 7));
        missing |= (uint8_t)(~f->data[pos >> 3] & bit);
        f->data[pos >> 3] |= bit;
    }
    return missing != 0;
}

bool bki_rb_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    uint8_t missing = 0;
    FOR_EACH_RB_PROBE(f, h, pos) {
        uint8_t bit = (uint8_t)(1u << (pos & 7));
        if (__atomic_load_n(&f->data[pos >> 3], __ATOMIC_RELAXED) & bit)
            continue;
        missing |= (uint8_t)(~__atomic_fetch_or(&f->data[pos >> 3], bit, __ATOMIC_RELAXED) & bit);
    }
    return missing != 0;
}

bool bki_rb_contains(const bk_filter_t *f, bk_hash_t h)
{
    FOR_EACH_RB_PROBE(f, h, pos) {
        if (!(f->data[pos >> 3] & (1u << (pos & 7))))
            return false;
    }
    return true;
}

void bki_rb_prefetch(const bk_filter_t *f, bk_hash_t h)
{
    FOR_EACH_RB_PROBE(f, h, pos) {
        __builtin_prefetch(&f->data[pos >> 3]);
    }
}

double bki_rb_bpe(double error)
{
    double bpe = -(log(error) / RB_LN2_SQUARED);
    return bpe < 0 ? -bpe : bpe;
}

bk_status_t bki_rb_geometry(uint64_t *entries, double error, uint32_t options, uint64_t *bits,
                            uint32_t *hashes, uint32_t *n2, double *bpe)
{
    /* Written so that NaN fails. */
    if (*entries == 0 || !(error > 0.0 && error < 1.0) ||
        (options & BK_REDISBLOOM_ENTS_IS_BITS))
        return BK_EFULL;
    double b = bki_rb_bpe(error);
    double want = (double)*entries * b;
    uint64_t nbits;
    uint32_t log2 = 0;
    if (options & BK_REDISBLOOM_NOROUND) {
        if (!(want < 0x1p63))
            return BK_EFULL;
        nbits = (uint64_t)want;
        if (nbits == 0)
            nbits = 1;
    } else {
        double e = logb(want);
        if (!(e <= 62.0)) /* RedisBloom allows 63; the payload limit is far below */
            return BK_EFULL;
        log2 = (uint32_t)e + 1;
        nbits = UINT64_C(1) << log2;
        /* The spare bits of the rounding, in RedisBloom's arithmetic:
         * truncated to an integer, then divided by bpe and truncated. */
        uint64_t spare_bits = (uint64_t)((double)nbits - want);
        uint64_t spare_entries = (uint64_t)((double)spare_bits / b);
        if (spare_entries > UINT64_MAX - *entries)
            return BK_EFULL;
        *entries += spare_entries;
    }
    uint64_t words = nbits / 64 + (nbits % 64 != 0);
    double k = ceil(RB_LN2 * b);
    if (words > BKI_MAX_PAYLOAD_BYTES / 8 || !(k >= 1.0 && k <= BK_REDISBLOOM_MAX_HASHES))
        return BK_EFULL;
    *bits = words * 64;
    *hashes = (uint32_t)k;
    *n2 = log2;
    *bpe = b;
    return BK_OK;
}

/* The kind table's row (kinds.c). */
const bki_kind_ops_t bki_redisbloom_ops = {
    .add = bki_rb_add,
    .contains = bki_rb_contains,
    .prefetch = bki_rb_prefetch,
    .add_atomic = bki_rb_add_atomic,
};
