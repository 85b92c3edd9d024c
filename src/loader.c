/*
 * Loading a serialized filter from pieces as they arrive (bk_filter_loader_*),
 * and reading any slice of a filter's serialized form (bk_filter_serialize_range).
 *
 * Why: a server that persists a filter (the Redis module's RDB save, AOF
 * rewrite, replication and SCANDUMP) must not need a second, serialized copy
 * of a multi-GB filter in memory, neither to write it nor to read it back.
 * Writing is bkf_obj_range: any slice, straight from the filter's memory.
 * Reading is this loader: the first bytes (header and part table) are
 * collected and validated exactly as bk_filter_deserialize validates them;
 * then the filter is built with its payloads allocated once, and every
 * later byte is copied straight to its place in them. Each payload's
 * checksum is verified as soon as its last byte arrives, and the filter is
 * handed out only once every byte has arrived and been checked, so what
 * loads is exactly what bk_filter_deserialize would accept from the same
 * bytes, at the cost of the filter itself plus the piece being fed.
 *
 * The serialized layout (docs/FORMAT.md) puts every part at an increasing
 * offset, each followed by zero padding to 64 bytes, so the pieces map to
 * places in one forward pass. A window's state part comes after its
 * payload, and the window is built from both only at the end
 * (bkf_window_adopt).
 */
#include "registry.h"

#include <string.h>

struct bk_filter_loader {
    uint64_t total;   /* bytes announced */
    uint64_t got;     /* bytes received */
    uint8_t head[BKF_HEADER];
    uint8_t *meta;    /* the whole metadata (mlen bytes), once nparts is known */
    uint64_t mlen;
    bool parsed;      /* meta validated, destinations ready */
    bkf_meta_t m;
    bk_filter_t *f;   /* built at parse time with zeroed payloads (not windows) */
    bkf_obj_t obj;    /* f as the writer sees it: where each payload lives */
    uint8_t *wdata;   /* a window's payload, until the window takes it over */
    bki_mem_t wmem;
    uint64_t wbytes;
    uint8_t wstate[BKF_WINDOW_STATE_MAX];
    bk_status_t failed; /* sticky: BK_OK until a piece is refused */
    const char *why;
};

bk_status_t bk_filter_loader_new(bk_filter_loader_t **out, uint64_t total)
{
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    bk_filter_loader_t *l = bki_calloc(1, sizeof *l);
    if (!l)
        return BK_ENOMEM;
    l->total = total;
    *out = l;
    return BK_OK;
}

void bk_filter_loader_free(bk_filter_loader_t *l)
{
    if (!l)
        return;
    bk_filter_free(l->f);
    bki_payload_free(l->wdata, l->wbytes, l->wmem);
    bki_free(l->meta);
    bki_free(l);
}

uint64_t bk_filter_loader_received(const bk_filter_loader_t *l)
{
    return l ? l->got : 0;
}

uint64_t bk_filter_loader_total(const bk_filter_loader_t *l)
{
    return l ? l->total : 0;
}

/* Records the first refusal; every later call returns it. */
static bk_status_t fail(bk_filter_loader_t *l, bk_status_t st, const char *why)
{
    l->failed = st;
    l->why = why;
    return st;
}

/* Whether the kind being loaded takes its parts from the loader's own
 * buffers (a window: its slots and its state) instead of being built
 * first and filled in place. */
static bool adopts(const bk_filter_loader_t *l)
{
    const bki_class_t *c = bki_class_of(l->m.kind);
    return c && c->adopt;
}

/* Part i of the object being loaded: its table entry, and where its
 * payload goes (NULL for none: never, once parsed). */
static uint8_t *part_dst(bk_filter_loader_t *l, uint32_t i, bkf_part_t *p)
{
    bkf_decode_part(&l->m, i, p);
    if (adopts(l))
        return i == 0 ? l->wdata : l->wstate;
    bkf_part_t w;
    bkf_obj_part(&l->obj, i, &w);
    return (uint8_t *)(uintptr_t)w.data; /* the loader's own filter */
}

/* The metadata is complete: validate it as deserialize does, then make
 * the places the payloads go. */
static bk_status_t prepare(bk_filter_loader_t *l)
{
    const char *why = NULL;
    bk_status_t st = bkf_parse_meta(l->meta, l->mlen, l->total, &l->m, &why);
    if (st != BK_OK)
        return fail(l, st, why);
    if (!bki_kind_is((bk_kind_t)l->m.kind, BKI_KIND_FILTER))
        return fail(l, BK_EKIND, "the data holds a bitmap, not a filter");
    /* The serialized form is never paged: a paged file is read from its
     * file (bk_filter_load), where its pages can be checked as touched. */
    if (l->m.paged)
        return fail(l, BK_EVERSION, "a paged filter file, not a serialized filter");
    if (adopts(l)) {
        bkf_part_t gens, state;
        bkf_decode_part(&l->m, 0, &gens);
        bkf_decode_part(&l->m, 1, &state);
        if (state.length > sizeof l->wstate)
            return fail(l, BK_ECORRUPT, "state part too long");
        l->wdata = bki_payload_alloc(gens.length, &l->wmem);
        if (!l->wdata)
            return fail(l, BK_ENOMEM, "out of memory");
        l->wbytes = gens.length;
    } else {
        bkf_source_t s = {.buf = NULL, .deferred = true, .read = NULL, .fd = -1};
        st = bkf_build_filter(&l->f, &l->m, &s, NULL, &why);
        if (st != BK_OK)
            return fail(l, st, why);
        if (bkf_obj_from_filter(&l->obj, l->f) != BK_OK)
            return fail(l, BK_ECORRUPT, "geometry the library cannot build");
    }
    l->parsed = true;
    return BK_OK;
}

/* Takes metadata bytes (before the first payload); n of them are used. */
static bk_status_t feed_meta(bk_filter_loader_t *l, const uint8_t *b, uint64_t *n)
{
    if (l->got < BKF_HEADER) {
        uint64_t take = BKF_HEADER - l->got < *n ? BKF_HEADER - l->got : *n;
        memcpy(l->head + l->got, b, (size_t)take);
        l->got += take;
        *n = take;
        if (l->got < BKF_HEADER)
            return BK_OK;
        const char *why = NULL;
        bk_status_t st = bkf_check_prefix(l->head, BKF_HEADER, &why);
        if (st != BK_OK)
            return fail(l, st, why);
        uint32_t nparts = bkf_get_u32(l->head + H_NPARTS);
        if (nparts == 0 || nparts > BKF_MAX_PARTS)
            return fail(l, BK_ECORRUPT, "part count is zero or absurd");
        l->mlen = bkf_meta_len(nparts);
        if (l->mlen > l->total)
            return fail(l, BK_ECORRUPT, "truncated inside the header or part table");
        l->meta = bki_malloc((size_t)l->mlen);
        if (!l->meta)
            return fail(l, BK_ENOMEM, "out of memory");
        memcpy(l->meta, l->head, BKF_HEADER);
        return BK_OK;
    }
    uint64_t take = l->mlen - l->got < *n ? l->mlen - l->got : *n;
    memcpy(l->meta + l->got, b, (size_t)take);
    l->got += take;
    *n = take;
    return l->got == l->mlen ? prepare(l) : BK_OK;
}

/* Takes payload bytes: into the part they belong to, or checked as its
 * zero padding; a part's checksum once its last byte is in. n of them
 * are used. */
static bk_status_t feed_payload(bk_filter_loader_t *l, const uint8_t *b, uint64_t *n)
{
    /* The part holding offset got: parts are few (a chain's links), and a
     * piece usually lies within one. */
    uint64_t at = l->mlen;
    for (uint32_t i = 0; i < l->m.nparts; i++) {
        bkf_part_t p;
        uint8_t *dst = part_dst(l, i, &p);
        uint64_t end = at + bkf_align64(p.length);
        if (l->got >= end) {
            at = end;
            continue;
        }
        uint64_t take = end - l->got < *n ? end - l->got : *n;
        uint64_t pos = l->got - at; /* within this part's extent */
        uint64_t run = 0;           /* of the payload itself; the rest is padding */
        if (pos < p.length) {
            run = p.length - pos < take ? p.length - pos : take;
            memcpy(dst + pos, b, (size_t)run);
        }
        if (!bkf_all_zero(b + run, (size_t)(take - run)))
            return fail(l, BK_ECORRUPT, "padding after a payload is not zero");
        l->got += take;
        *n = take;
        if (run && pos + run == p.length && bkf_checksum(dst, p.length) != p.sum)
            return fail(l, BK_ECORRUPT, "payload checksum mismatch (data damaged)");
        return BK_OK;
    }
    return fail(l, BK_ECORRUPT, "trailing bytes after the end of the data");
}

bk_status_t bk_filter_loader_feed(bk_filter_loader_t *l, const void *bytes, size_t len,
                                  const char **why)
{
    if (!l || (!bytes && len))
        FAIL(BK_EINVAL, "invalid argument");
    if (l->failed == BK_OK && len > l->total - l->got)
        fail(l, BK_ECORRUPT, "more bytes than the dump announced");
    const uint8_t *b = bytes;
    uint64_t left = len;
    while (l->failed == BK_OK && left > 0) {
        uint64_t n = left;
        if (!l->parsed)
            feed_meta(l, b, &n);
        else
            feed_payload(l, b, &n);
        b += n;
        left -= n;
    }
    if (l->failed != BK_OK)
        FAIL(l->failed, l->why);
    return BK_OK;
}

bk_status_t bk_filter_loader_finish(bk_filter_loader_t *l, bk_filter_t **out, const char **why)
{
    if (!l || !out)
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    if (l->failed != BK_OK)
        FAIL(l->failed, l->why);
    if (l->total == 0)
        FAIL(BK_ECORRUPT, "empty input");
    if (l->got < l->total || !l->parsed) {
        if (l->got < BKF_HEADER)
            FAIL(BK_ECORRUPT, "truncated: shorter than the 128-byte header");
        FAIL(BK_ECORRUPT, "truncated: shorter than the size in its header");
    }
    if (adopts(l)) {
        uint8_t *data = l->wdata;
        l->wdata = NULL; /* taken over, or freed, by the filter */
        const char *bad = NULL;
        bk_status_t st = bki_class_of(l->m.kind)->adopt(out, &l->m, l->wstate, data, l->wmem,
                                                         &bad);
        if (st != BK_OK) {
            fail(l, st, bad);
            FAIL(st, bad);
        }
        l->f = *out; /* handed out below, as every kind's */
    }
    l->f->key_form = (bk_key_form_t)l->m.key_form;
    *out = l->f;
    l->f = NULL;
    l->failed = BK_EINVAL; /* a second finish has nothing to give */
    l->why = "the loader was finished";
    return BK_OK;
}

bk_status_t bk_filter_loader_read(const bk_filter_loader_t *l, uint64_t off, void *buf,
                                  size_t len)
{
    if (!l || (!buf && len) || off > l->got || len > l->got - off)
        return BK_EINVAL;
    uint8_t *dst = buf;
    uint64_t mhave = l->mlen ? (l->got < l->mlen ? l->got : l->mlen) : l->got;
    bkf_copy_overlap(dst, off, len, l->mlen ? l->meta : l->head, 0, mhave);
    if (!l->parsed)
        return BK_OK;
    uint64_t at = l->mlen;
    for (uint32_t i = 0; i < l->m.nparts && at < off + len; i++) {
        bkf_part_t p;
        /* part_dst needs a mutable loader only for its own filter's data */
        const uint8_t *src = part_dst((bk_filter_loader_t *)(uintptr_t)l, i, &p);
        bkf_copy_overlap(dst, off, len, src, at, p.length);
        bkf_copy_overlap(dst, off, len, NULL, at + p.length, bkf_align64(p.length) - p.length);
        at += bkf_align64(p.length);
    }
    return BK_OK;
}

bk_status_t bk_filter_serialize_range(const bk_filter_t *f, uint64_t offset, void *buf,
                                      size_t len)
{
    if (f && bki_pages_all(f, NULL) != BK_OK) /* a paged file's pages, checked first */
        return BK_ECORRUPT;
    bkf_obj_t o;
    bk_status_t st = bkf_obj_from_filter(&o, f);
    if (st != BK_OK)
        return st;
    return bkf_obj_range(&o, offset, buf, len);
}
