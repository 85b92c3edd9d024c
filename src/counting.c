/*
 * Counting Bloom filter: a Bloom filter that can forget.
 *
 * A plain filter cannot delete: clearing a key's bits could clear bits other
 * keys share. Here every cell is a 4-bit counter; add increments the key's k
 * counters, remove decrements them, and a key is present while all of its
 * counters are non-zero. Four bits are enough in practice (a counter reaches
 * 16 only with probability ~1e-15 per counter in a filter sized by the usual
 * rules), and a counter that does saturate at 15 stays there forever: after
 * an overflow we no longer know its true value, and decrementing it could
 * bring it to zero while a key still needs it, a false negative.
 *
 * Layout: the blocked filter's, with a counter where it has a bit, so a key
 * still costs one 64-byte line (one memory access) per operation. A line is
 * 16 lanes of 32 bits; a lane holds 8 counters, counter c in bits 4c..4c+3.
 *   line  = reduce(h.hi, lines)
 *   x     = low 32 bits of h.lo,  r = bits 32..35 of h.lo,
 *   s     = 2 * (bits 36..38 of h.lo) + 1
 *   probe i (0 <= i < k <= 16) uses lane (r + i*s) mod 16 and, in it,
 *   counter (x * SALT[lane]) >> 29, with the blocked filter's lane
 *   multipliers (see blocked.c for why the stride is random and odd).
 * An odd stride visits 16 distinct lanes, so a key's k counters are
 * distinct and one operation never touches a counter twice. This mapping is
 * a stable promise: it decides which counters a key uses, so it is part of
 * the file format's meaning.
 *
 * remove first checks that all k counters are non-zero and only then
 * decrements, so removing a key that was never added (and is not a false
 * positive) is reported as BK_ENOTFOUND and changes nothing.
 */
#include "internal.h"

#include <string.h>

/* The key's line, as 16 lanes. */
static inline uint32_t *line_of(const bk_filter_t *f, bk_hash_t h)
{
    return (uint32_t *)(void *)(f->data + bki_reduce(h.hi, f->lines) * BKI_LINE_BYTES);
}

/* A key's probes: lane and the shift of its counter within the lane. */
typedef struct probes {
    uint8_t lane[BKI_BLOCKED_MAX_K];
    uint8_t shift[BKI_BLOCKED_MAX_K];
} probes_t;

static inline void key_probes(const bk_filter_t *f, bk_hash_t h, probes_t *p)
{
    const uint32_t *salt = bki_blocked_salts();
    bki_lanes_t l = bki_lanes_of(h);
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        p->lane[i] = (uint8_t)lane;
        p->shift[i] = (uint8_t)(((l.x * salt[lane]) >> 29) * 4u);
    }
}

bool bki_counting_add(bk_filter_t *f, bk_hash_t h)
{
    probes_t p;
    uint32_t *w = line_of(f, h);
    bool was_new = false;
    key_probes(f, h, &p);
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t *lane = &w[p.lane[i]];
        uint32_t c = (*lane >> p.shift[i]) & 15u;
        was_new |= c == 0;
        if (c < 15u) /* saturated counters stay at 15 */
            *lane += UINT32_C(1) << p.shift[i];
    }
    return was_new;
}

bool bki_counting_contains(const bk_filter_t *f, bk_hash_t h)
{
    probes_t p;
    const uint32_t *w = line_of(f, h);
    key_probes(f, h, &p);
    for (uint32_t i = 0; i < f->k; i++)
        if (!((w[p.lane[i]] >> p.shift[i]) & 15u))
            return false;
    return true;
}

unsigned bki_counting_count(const bk_filter_t *f, bk_hash_t h)
{
    probes_t p;
    const uint32_t *w = line_of(f, h);
    unsigned min = 15;
    key_probes(f, h, &p);
    for (uint32_t i = 0; i < f->k; i++) {
        unsigned c = (w[p.lane[i]] >> p.shift[i]) & 15u;
        if (c < min)
            min = c;
    }
    return min;
}

bk_status_t bki_counting_remove(bk_filter_t *f, bk_hash_t h)
{
    probes_t p;
    uint32_t *w = line_of(f, h);
    key_probes(f, h, &p);
    /* All-or-nothing: check every counter before changing any. */
    for (uint32_t i = 0; i < f->k; i++)
        if (!((w[p.lane[i]] >> p.shift[i]) & 15u))
            return BK_ENOTFOUND;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t *lane = &w[p.lane[i]];
        if (((*lane >> p.shift[i]) & 15u) != 15u)
            *lane -= UINT32_C(1) << p.shift[i];
    }
    return BK_OK;
}

/* Sixteen 4-bit counters at once: a + b per nibble, saturating at 15.
 * The low three bits of each nibble are added without carrying into the
 * next nibble, the top bit is put back with XOR, and a nibble whose sum
 * carried out of its top bit (majority of a's, b's and the incoming carry's
 * top bits) is forced to 15. */
static inline uint64_t add_sat4(uint64_t a, uint64_t b)
{
    const uint64_t high = UINT64_C(0x8888888888888888);
    uint64_t sum = ((a & ~high) + (b & ~high)) ^ ((a ^ b) & high);
    uint64_t carry = ((a & b) | ((a | b) & ~sum)) & high;
    return sum | ((carry >> 3) * 15u);
}

void bki_counting_union(bk_filter_t *dst, const bk_filter_t *src)
{
    /* Payloads are whole 64-byte lines, so a whole number of words. */
    for (uint64_t off = 0; off < dst->nbytes; off += 8) {
        uint64_t a, b;
        memcpy(&a, dst->data + off, 8);
        memcpy(&b, src->data + off, 8);
        a = add_sat4(a, b);
        memcpy(dst->data + off, &a, 8);
    }
}
