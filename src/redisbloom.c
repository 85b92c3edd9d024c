/*
 * Chains taken over from RedisBloom (the public bk_redisbloom_* calls):
 * building one from RedisBloom's header and link fields, reading those
 * fields back, and the links' payloads as RedisBloom's SCANDUMP sees them,
 * one byte string, oldest link first. The kind itself (probes, sizing) is
 * rbloom.c; growth is scalable.c's, by RedisBloom's rule. The Redis module
 * does the encodings (RDB values, SCANDUMP chunks) on top of these calls.
 *
 * A chain built here is an ordinary scalable filter whose sub_kind is
 * RedisBloom's link (kinds.c: BKI_KIND_RB_LINK), hashed with RedisBloom's pair (BK_HASH_MURMUR64A or
 * BK_HASH_MURMUR2, seed 0), with tightening 0.5 and RedisBloom's integer
 * growth; its `fpr` is the error RedisBloom was asked for (the first
 * link's error, doubled when the chain scales, as RedisBloom halves it).
 */
#include "internal.h"

#include <math.h>
#include <string.h>

static const uint32_t known_options = BK_REDISBLOOM_NOROUND | BK_REDISBLOOM_ENTS_IS_BITS |
                                      BK_REDISBLOOM_FORCE64 | BK_REDISBLOOM_NO_SCALING;

/* What RedisBloom itself checks of a link (its bloom_validate_integrity),
 * plus the library's own limits. */
static bk_status_t check_link(const bk_redisbloom_link_t *l, const char **why)
{
    if (!(l->error > 0.0 && l->error < 1.0))
        BKI_FAIL(BK_ECORRUPT, "link error rate is not in (0, 1)");
    if (l->bits == 0 || l->bits % 64 || l->bits / 8 > BKI_MAX_PAYLOAD_BYTES)
        BKI_FAIL(BK_ECORRUPT, "link bit count is not a whole number of 64-bit words");
    if (l->n2 > 63 || (l->n2 && (UINT64_C(1) << l->n2) > l->bits))
        BKI_FAIL(BK_ECORRUPT, "link n2 does not fit its bits");
    if (l->hashes == 0 || l->hashes > BK_REDISBLOOM_MAX_HASHES)
        BKI_FAIL(BK_ECORRUPT, "link hash count out of range");
    if (!(l->bpe > 0.0) || isinf(l->bpe))
        BKI_FAIL(BK_ECORRUPT, "link bits per entry is not a positive number");
    if (l->entries == 0)
        BKI_FAIL(BK_ECORRUPT, "link capacity is zero");
    return BK_OK;
}

static bk_status_t check_chain(const bk_redisbloom_chain_t *c, const bk_redisbloom_link_t *links,
                               const char **why)
{
    if (c->links == 0 || c->links > BKI_SCALABLE_MAX_SUBS)
        BKI_FAIL(BK_ECORRUPT, "link count is zero or too large");
    if (c->options & ~known_options)
        BKI_FAIL(BK_ECORRUPT, "unknown RedisBloom options");
    if (c->growth == 0)
        BKI_FAIL(BK_ECORRUPT, "growth is zero");
    uint64_t total = 0;
    for (uint32_t i = 0; i < c->links; i++) {
        bk_status_t st = check_link(&links[i], why);
        if (st != BK_OK)
            return st;
        if (links[i].items > UINT64_MAX - total)
            BKI_FAIL(BK_ECORRUPT, "item counts overflow");
        total += links[i].items;
    }
    if (total != c->items)
        BKI_FAIL(BK_ECORRUPT, "chain item count is not the sum of its links'");
    return BK_OK;
}

bk_status_t bk_redisbloom_new(bk_filter_t **out, const bk_redisbloom_chain_t *chain,
                              const bk_redisbloom_link_t *links, const char **why)
{
    if (!out || !chain || (!links && chain->links))
        BKI_FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    bk_status_t st = check_chain(chain, links, why);
    if (st != BK_OK)
        return st;
    bool nonscaling = (chain->options & BK_REDISBLOOM_NO_SCALING) != 0;
    double fpr = nonscaling ? links[0].error : links[0].error * 2.0;
    if (!(fpr < 1.0))
        fpr = links[0].error;
    bk_hash_id_t hash =
        chain->options & BK_REDISBLOOM_FORCE64 ? BK_HASH_MURMUR64A : BK_HASH_MURMUR2;
    bk_kind_t link_kind = bki_kind_with(BKI_KIND_RB_LINK);
    bki_chain_t c = {hash,  0,     links[0].entries, fpr, chain->items, link_kind,
                     (double)chain->growth, 0.5, nonscaling, false, 0, chain->options};
    bk_filter_t *top;
    if (bki_scalable_shell(&top, &c, chain->links) != BK_OK)
        BKI_FAIL(BK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < chain->links; i++) {
        const bk_redisbloom_link_t *l = &links[i];
        bk_filter_t *s;
        st = bki_array_new(&s, link_kind, l->bits, l->hashes, hash, 0, NULL);
        if (st != BK_OK) {
            bki_scalable_free(top);
            BKI_FAIL(st == BK_ENOMEM ? BK_ENOMEM : BK_ECORRUPT,
                     st == BK_ENOMEM ? "out of memory" : "link geometry the library cannot build");
        }
        s->capacity = l->entries;
        s->fpr = l->error;
        s->rb_n2 = l->n2;
        s->rb_bpe = l->bpe;
        bki_set_items(s, l->items);
        bki_scalable_append(top, s);
    }
    *out = top;
    return BK_OK;
}

/* The header and first link of a new chain as RedisBloom's BF.RESERVE
 * makes them (bk_redisbloom_create). */
static bk_status_t new_chain(uint64_t capacity, double error, uint32_t growth, bool nonscaling,
                             bk_redisbloom_chain_t *c, bk_redisbloom_link_t *l)
{
    if (capacity == 0 || !(error > 0.0 && error < 1.0) || growth == 0)
        return BK_EINVAL;
    *c = (bk_redisbloom_chain_t){0, 1, BK_REDISBLOOM_FORCE64 | BK_REDISBLOOM_NOROUND, growth};
    if (nonscaling)
        c->options |= BK_REDISBLOOM_NO_SCALING;
    /* RedisBloom's SB_NewChain: the first link at the error times its
     * tightening ratio, 1/2, unless the chain never grows. */
    *l = (bk_redisbloom_link_t){.entries = capacity, .error = nonscaling ? error : error * 0.5};
    if (bki_rb_geometry(&l->entries, l->error, c->options, &l->bits, &l->hashes, &l->n2,
                        &l->bpe) != BK_OK)
        return BK_ENOMEM;
    return BK_OK;
}

bk_status_t bk_redisbloom_plan(uint64_t capacity, double error, bool nonscaling, uint64_t *bytes)
{
    bk_redisbloom_chain_t c;
    bk_redisbloom_link_t l;
    bk_status_t st = new_chain(capacity, error, 1, nonscaling, &c, &l);
    if (bytes)
        *bytes = st == BK_OK ? l.bits / 8 : 0;
    return st;
}

bk_status_t bk_redisbloom_create(bk_filter_t **out, uint64_t capacity, double error,
                                 uint32_t growth, bool nonscaling)
{
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    bk_redisbloom_chain_t c;
    bk_redisbloom_link_t l;
    bk_status_t st = new_chain(capacity, error, growth, nonscaling, &c, &l);
    return st != BK_OK ? st : bk_redisbloom_new(out, &c, &l, NULL);
}

bool bk_redisbloom_is(const bk_filter_t *f)
{
    return f && bki_kind_is(f->kind, BKI_KIND_CHAIN) && bki_kind_is(f->sub_kind, BKI_KIND_RB_LINK);
}

bk_status_t bk_redisbloom_chain(const bk_filter_t *f, bk_redisbloom_chain_t *out)
{
    if (!bk_redisbloom_is(f))
        return BK_EKIND;
    if (!out)
        return BK_EINVAL;
    out->items = bki_items(f);
    out->links = f->nsubs;
    out->options = f->rb_options;
    out->growth = (uint32_t)f->growth;
    return BK_OK;
}

bk_status_t bk_redisbloom_link(const bk_filter_t *f, uint32_t i, bk_redisbloom_link_t *out)
{
    if (!bk_redisbloom_is(f))
        return BK_EKIND;
    if (!out || i >= f->nsubs)
        return BK_EINVAL;
    const bk_filter_t *s = f->subs[i];
    out->entries = s->capacity;
    out->error = s->fpr;
    out->bpe = s->rb_bpe;
    out->hashes = s->k;
    out->bits = s->cells;
    out->n2 = s->rb_n2;
    out->items = bki_items(s);
    return BK_OK;
}

uint64_t bk_redisbloom_bytes(const bk_filter_t *f)
{
    return bk_redisbloom_is(f) ? f->subs_bytes : 0;
}

/* The link holding byte `offset` of the links' string, and the offset
 * inside it; NULL past the end. */
static bk_filter_t *link_at(const bk_filter_t *f, uint64_t offset, uint64_t *inside)
{
    for (uint32_t i = 0; i < f->nsubs; i++) {
        bk_filter_t *s = f->subs[i];
        if (offset < s->nbytes) {
            *inside = offset;
            return s;
        }
        offset -= s->nbytes;
    }
    return NULL;
}

bk_status_t bk_redisbloom_read(const bk_filter_t *f, uint64_t offset, uint64_t max,
                               const void **bytes, uint64_t *len)
{
    if (!bk_redisbloom_is(f))
        return BK_EKIND;
    if (!bytes || !len)
        return BK_EINVAL;
    uint64_t inside;
    const bk_filter_t *s = link_at(f, offset, &inside);
    *bytes = NULL;
    *len = 0;
    if (!s)
        return BK_OK;
    uint64_t left = s->nbytes - inside;
    *bytes = s->data + inside;
    *len = left < max ? left : max;
    return BK_OK;
}

bk_status_t bk_redisbloom_write(bk_filter_t *f, uint64_t offset, const void *bytes, uint64_t len,
                                const char **why)
{
    if (!bk_redisbloom_is(f))
        BKI_FAIL(BK_EKIND, "not a RedisBloom chain");
    if (!bytes && len)
        BKI_FAIL(BK_EINVAL, "invalid argument");
    if (f->readonly)
        BKI_FAIL(BK_EREADONLY, "read-only filter");
    uint64_t inside;
    bk_filter_t *s = link_at(f, offset, &inside);
    if (!s)
        BKI_FAIL(BK_EINVAL, "offset past the end of the links");
    if (len > s->nbytes - inside)
        BKI_FAIL(BK_EINVAL, "bytes run past the end of their link");
    if (len)
        memcpy(s->data + inside, bytes, (size_t)len);
    return BK_OK;
}
