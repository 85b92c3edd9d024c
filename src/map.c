/*
 * Mapped filter files (bk_filter_open, bk_filter_sync, bk_filter_verify):
 * a multi-GB filter answers queries without being read first. The
 * metadata is validated by the codec; the payloads are borrowed from the
 * mapping, so nothing is allocated or zeroed for them. Payloads start at
 * 64-byte offsets, so a mapped payload is aligned like an allocated one.
 */
#define _GNU_SOURCE
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

static void set_readonly(bk_filter_t *f, bool ro)
{
    f->readonly = ro;
    bki_array_bind(f);
    if (bki_kind_is(f->kind, BKI_KIND_CHAIN)) {
        for (uint32_t i = 0; i < f->nsubs; i++) {
            f->subs[i]->readonly = ro;
            bki_array_bind(f->subs[i]);
        }
    }
}

bk_status_t bk_filter_open(bk_filter_t **out, const char *path, bk_map_mode_t mode,
                           const char **why)
{
    if (!out || (mode != BK_MAP_READONLY && mode != BK_MAP_WRITABLE))
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    bool writable = mode == BK_MAP_WRITABLE;
    int fd;
    uint64_t size;
    /* No checkpoint writes in place until the metadata is validated. */
    bk_status_t st = bkf_open_settled(path, writable ? O_RDWR : O_RDONLY, &fd, &size, why);
    if (st != BK_OK)
        return st;
    if (size < BKF_HEADER || size > SIZE_MAX) {
        /* Read what is there for the precise message. */
        uint8_t *mb = NULL;
        bkf_meta_t m;
        st = bkf_read_file_meta(fd, size, &mb, &m, why);
        bki_free(mb);
        close(fd); /* drops the lock */
        if (st == BK_OK)
            FAIL(BK_ENOMEM, "file too large to map");
        return st;
    }
    void *map =
        mmap(NULL, (size_t)size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int saved = errno;
        close(fd);
        errno = saved;
        FAIL(saved == ENOMEM ? BK_ENOMEM : BK_EIO, "cannot map the file");
    }
    bkf_meta_t m;
    st = bkf_parse_meta(map, size, size, &m, why);
    if (st == BK_OK) {
        bkf_source_t s = {.buf = map, .read = NULL, .fd = -1};
        st = bkf_build_filter(out, &m, &s, map, why);
    }
    /* A paged file's pages are checked as keys touch them. */
    if (st == BK_OK && m.paged) {
        int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        st = dup < 0 ? BK_EIO : bki_pages_attach(*out, dup, &m, map, map, size, false,
                                                 bki_page_calls_of(m.kind), why);
        if (st != BK_OK) {
            if (dup < 0 && why)
                *why = "cannot duplicate the file descriptor";
            bk_filter_free(*out);
            *out = NULL;
        }
    }
    bkf_settle_end(fd);
    if (st != BK_OK) {
        munmap(map, (size_t)size);
        close(fd);
        return st;
    }
    /* Queries probe random lines: read-ahead around each would be waste. */
    (void)madvise(map, (size_t)size, MADV_RANDOM);
    bk_filter_t *f = *out;
    f->map_base = map;
    f->map_len = size;
    f->map_fd = fd;
    set_readonly(f, !writable);
    if (f->pages)
        bki_pages_bind(f); /* over the calls set_readonly bound */
    return BK_OK;
}

bk_status_t bk_filter_mapping(const bk_filter_t *f, const void **addr, size_t *len)
{
    bool mapped = f && f->map_base;
    if (addr)
        *addr = mapped ? f->map_base : NULL;
    if (len)
        *len = mapped ? (size_t)f->map_len : 0;
    return mapped ? BK_OK : BK_EINVAL;
}

bool bkf_maps_file(const bk_filter_t *f, const char *path)
{
    struct stat a, b;
    return f && f->map_base && f->map_fd >= 0 && path && fstat(f->map_fd, &a) == 0 &&
           stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bk_status_t bk_filter_sync(bk_filter_t *f)
{
    return bkf_sync_map(f);
}

/* A paged file's page sums of the pages written since the last sync,
 * and their groups, recomputed into the mapping (and the filter's copy);
 * the header's checksum of the groups. */
static uint64_t sync_pages(const bk_filter_t *f)
{
    struct bki_pages *pg = f->pages;
    uint8_t *map = f->map_base;
    uint8_t *data;
    uint64_t len;
    (void)bki_paged_payload(f, &data, &len); /* a mapping never grows */
    const uint8_t *groups = pg->trailer + (pg->g.groups_at - pg->g.trailer);
    uint64_t group = UINT64_MAX; /* pages come in order: a group's sum once */
    for (uint64_t w = 0; w < (pg->g.npages + 63) / 64; w++) {
        uint64_t bits = __atomic_exchange_n(&pg->written[w], 0, __ATOMIC_ACQ_REL);
        for (; bits; bits &= bits - 1) {
            uint64_t j = w * 64 + (uint64_t)__builtin_ctzll(bits);
            bkf_put_u64(pg->trailer + j * 8, bkf_page_sum(&pg->g, data, len, j));
            if (group != UINT64_MAX && group != j / BKF_GROUP)
                bki_pages_regroup(pg, group);
            group = j / BKF_GROUP;
        }
    }
    if (group != UINT64_MAX)
        bki_pages_regroup(pg, group);
    /* the sums this filter has read are its own; the rest are the file's */
    for (uint64_t i = 0; i < pg->g.ngroups; i++) {
        if (!((pg->gok[i >> 6] >> (i & 63)) & 1))
            continue;
        uint64_t first = i * BKF_GROUP;
        uint64_t n = pg->g.npages - first < BKF_GROUP ? pg->g.npages - first : BKF_GROUP;
        memcpy(map + pg->g.trailer + first * 8, pg->trailer + first * 8, (size_t)(n * 8));
    }
    memcpy(map + pg->g.groups_at, groups, (size_t)(pg->g.ngroups * 8));
    return bki_pages_groups_sum(pg);
}

/* Only the mapping's bytes change (through map_base), never *f. */
bk_status_t bkf_sync_map(const bk_filter_t *f)
{
    if (!f || !f->map_base)
        return BK_EINVAL;
    if (f->readonly)
        return BK_EREADONLY;
    bkf_obj_t o;
    bk_status_t st = bkf_obj_from_filter(&o, f);
    if (st != BK_OK)
        return st;
    if (f->pages) {
        if (f->pages->damage != BK_OK)
            return f->pages->damage;
        o.paged = true;
        o.groups_sum = sync_pages(f);
    }
    /* The chain cannot have grown (mapped scalable filters do not), so the
     * layout is the one on disk; refuse rather than write past it. */
    if (bkf_obj_size(&o) != f->map_len ||
        bkf_get_u32((const uint8_t *)f->map_base + H_NPARTS) != o.nparts)
        return BK_EINVAL;
    bkf_encode_meta(&o, f->map_base);
    const bki_class_t *c = bki_class_of(f->kind);
    if (c && c->write_state)
        c->write_state(&o, f->map_base);
    if (msync(f->map_base, (size_t)f->map_len, MS_SYNC) != 0)
        return BK_EIO;
    return BK_OK;
}

bk_status_t bk_filter_verify(const bk_filter_t *f, const char **why)
{
    if (!f)
        FAIL(BK_EINVAL, "invalid argument");
    if (f->pages)
        return bki_pages_all(f, why);
    if (!f->map_base)
        return BK_OK;
    bkf_meta_t m;
    bk_status_t st = bkf_parse_meta(f->map_base, f->map_len, f->map_len, &m, why);
    if (st != BK_OK)
        return st;
    for (uint32_t i = 0; i < m.nparts; i++) {
        bkf_part_t p;
        bkf_decode_part(&m, i, &p);
        if (bkf_checksum((const uint8_t *)f->map_base + p.offset, p.length) != p.sum)
            FAIL(BK_ECORRUPT, "payload checksum mismatch (data damaged or not synced)");
    }
    return BK_OK;
}
