/*
 * Building static filters (bk_builder_*, bk_filter_build): keys are hashed
 * as they come (8 bytes each), held in memory up to a part's worth, and
 * past a memory cap spilled to an unlinked temporary file; at the end the
 * hashes are split into parts by their top bits and each part is built on
 * its own (by the kind's maker in its registry row: fuse.c), so a build of
 * any size needs one part's memory. Also the static kinds' public plan and
 * choice by rate, over every static kind the registry has.
 */
#define _GNU_SOURCE
#include "registry.h"
#include "keyhash.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIN_MEMORY (UINT64_C(1) << 20)

struct bk_builder {
    bk_kind_t kind;
    const bki_static_maker_t *maker; /* the kind's, from its registry row */
    bk_hash_id_t hash;
    uint64_t seed;
    double fpr;
    uint64_t memory; /* 0: no cap */
    char *tmpdir;
    uint64_t *h; /* hashes not yet spilled */
    size_t n, cap;
    int spill; /* -1: nothing spilled */
    uint64_t spilled;
    uint64_t count;
    bool finished;
    bool broken; /* a spill failed */
};

bk_status_t bk_builder_create(bk_builder_t **out, double fpr, const bk_options_t *opts)
{
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    static const bk_options_t defaults = {0};
    const bk_options_t *o = opts ? opts : &defaults;
    bk_hash_id_t hash = o->hash != BK_HASH_DEFAULT ? o->hash : BK_HASH_XXH3_MIX8;
    /* the kind (the default: by fpr) and its rate, as the plan has them */
    bk_static_plan_t sp;
    if (bk_static_plan(o->kind, 0, fpr, &sp) != BK_OK)
        return BK_EINVAL;
    bk_kind_t kind = sp.kind;
    const bki_static_maker_t *maker = bki_class_of(kind)->maker;
    if (!maker->hash_ok(hash))
        return BK_EINVAL;
    double rate = sp.expected_fpr;
    bk_builder_t *b = bki_calloc(1, sizeof *b);
    if (!b)
        return BK_ENOMEM;
    b->kind = kind;
    b->maker = maker;
    b->hash = hash;
    b->seed = o->seed_set ? o->seed : bk_random_seed();
    b->fpr = fpr != 0.0 ? fpr : rate;
    b->spill = -1;
    *out = b;
    return BK_OK;
}

/* The directory given, else $TMPDIR, else /tmp. */
static const char *spill_dir(const char *given)
{
    const char *dir = given && *given ? given : getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

const char *bk_builder_tmpdir(const bk_builder_t *b)
{
    return spill_dir(b->tmpdir);
}

bk_status_t bk_builder_set_memory(bk_builder_t *b, uint64_t bytes, const char *tmpdir)
{
    if (!b || b->count || b->finished || (bytes && bytes < MIN_MEMORY))
        return BK_EINVAL;
    /* Where the hashes would spill is checked now, not once the cap is
     * reached with most of the input read. */
    const char *use = spill_dir(tmpdir);
    struct stat sb;
    if (bytes && stat(use, &sb) != 0)
        return BK_EIO; /* errno says why */
    if (bytes && !S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return BK_EIO;
    }
    if (bytes && access(use, W_OK | X_OK) != 0)
        return BK_EIO;
    char *dir = NULL;
    if (tmpdir) {
        size_t len = strlen(tmpdir) + 1;
        dir = bki_malloc(len);
        if (!dir)
            return BK_ENOMEM;
        memcpy(dir, tmpdir, len);
    }
    bki_free(b->tmpdir);
    b->tmpdir = dir;
    b->memory = bytes;
    return BK_OK;
}

uint64_t bk_builder_count(const bk_builder_t *b)
{
    return b->count;
}

/* Keys a part may hold under the cap (a power of two of them is no gain:
 * the count is what it is). */
static uint64_t part_keys(const bk_builder_t *b)
{
    uint64_t most = b->maker->part_max_keys;
    if (!b->memory)
        return most;
    uint64_t k = b->memory / b->maker->bytes_per_key;
    return k < most ? k : most;
}

/* An unlinked file in the builder's directory, or -1 (errno set). */
static int temp_file(const bk_builder_t *b)
{
    const char *dir = spill_dir(b->tmpdir);
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    size_t len = strlen(dir) + 32;
    char *path = bki_malloc(len);
    if (!path) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(path, dir, strlen(dir));
    memcpy(path + strlen(dir), "/bloomkit-build-XXXXXX", sizeof "/bloomkit-build-XXXXXX");
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    bki_free(path);
    return fd;
}

/* Appends the held hashes to the spill file. */
static bk_status_t spill(bk_builder_t *b)
{
    if (b->spill < 0) {
        b->spill = temp_file(b);
        if (b->spill < 0)
            return bkf_errno_status();
    }
    bk_status_t st = bkf_pwrite_all(b->spill, b->h, b->n * sizeof *b->h, b->spilled * 8);
    if (st != BK_OK)
        return st;
    b->spilled += b->n;
    b->n = 0;
    return BK_OK;
}

static bk_status_t push(bk_builder_t *b, uint64_t h)
{
    if (b->n == b->cap) {
        uint64_t limit = part_keys(b);
        if (b->memory && b->n >= limit) {
            bk_status_t st = spill(b);
            if (st != BK_OK) {
                b->broken = true;
                return st;
            }
        } else {
            size_t cap = b->cap ? b->cap * 2 : 4096;
            if (b->memory && cap > limit)
                cap = (size_t)limit;
            uint64_t *h2 = bki_realloc(b->h, b->cap * sizeof *h2, cap * sizeof *h2);
            if (!h2)
                return BK_ENOMEM;
            b->h = h2;
            b->cap = cap;
        }
    }
    b->h[b->n++] = h;
    b->count++;
    return BK_OK;
}

bk_status_t bk_builder_add(bk_builder_t *b, const void *key, size_t len)
{
    if (!b || b->finished || b->broken || (!key && len))
        return BK_EINVAL;
    return push(b, bki_key_hash(b->hash, b->seed, key, len).lo);
}

bk_status_t bk_builder_add_batch(bk_builder_t *b, const bk_key_t *keys, size_t n)
{
    if (!b || (!keys && n))
        return BK_EINVAL;
    for (size_t i = 0; i < n; i++) {
        bk_status_t st = bk_builder_add(b, keys[i].ptr, keys[i].len);
        if (st != BK_OK)
            return st;
    }
    return BK_OK;
}

/* Builds every part of f from hashes in memory: one part straight from h,
 * more by a counting sort of h on their part into a second array. */
static bk_status_t build_in_memory(bk_filter_t *f, uint64_t *h, size_t n)
{
    const bki_static_maker_t *m = bki_class_of(f->kind)->maker;
    uint32_t parts = m->parts(f);
    if (parts == 1)
        return m->build_part(f, 0, h, n);
    size_t *at = bki_calloc(parts + 1u, sizeof *at);
    uint64_t *sorted = bki_malloc((n ? n : 1) * sizeof *sorted);
    bk_status_t st = at && sorted ? BK_OK : BK_ENOMEM;
    if (st == BK_OK) {
        for (size_t i = 0; i < n; i++)
            at[m->part_of(f, h[i]) + 1]++;
        for (uint32_t p = 0; p < parts; p++)
            at[p + 1] += at[p];
        for (size_t i = 0; i < n; i++)
            sorted[at[m->part_of(f, h[i])]++] = h[i];
        size_t from = 0;
        for (uint32_t p = 0; p < parts && st == BK_OK; p++) {
            st = m->build_part(f, p, sorted + from, at[p] - from);
            from = at[p];
        }
    }
    bki_free(at);
    bki_free(sorted);
    return st;
}

/* Splits the spill file into one file per part, then builds each part
 * from its file: one part's hashes in memory at a time. */
static bk_status_t build_from_spill(bk_builder_t *b, bk_filter_t *f)
{
    const bki_static_maker_t *mk = b->maker;
    uint32_t parts = mk->parts(f);
    enum { CHUNK = 8192 }; /* hashes read at a time */
    int *fd = bki_malloc(parts * sizeof *fd);
    uint64_t *len = bki_calloc(parts, sizeof *len);
    /* A write buffer per part, small enough that all of them fit in a
     * tenth of the cap. */
    uint64_t per = b->memory / 10 / parts / 8;
    size_t bufn = per < 64 ? 64 : per > 8192 ? 8192 : (size_t)per;
    uint64_t *buf = bki_malloc((size_t)parts * bufn * sizeof *buf);
    size_t *used = bki_calloc(parts, sizeof *used);
    uint64_t *chunk = bki_malloc(CHUNK * sizeof *chunk);
    bk_status_t st = fd && len && buf && used && chunk ? BK_OK : BK_ENOMEM;
    uint32_t opened = 0;
    for (; st == BK_OK && opened < parts; opened++) {
        fd[opened] = temp_file(b);
        if (fd[opened] < 0)
            st = bkf_errno_status();
    }
    if (st != BK_OK && opened > 0)
        opened--; /* the last one failed to open */
    for (uint64_t off = 0; st == BK_OK && off < b->spilled; off += CHUNK) {
        size_t m = b->spilled - off < CHUNK ? (size_t)(b->spilled - off) : CHUNK;
        st = bkf_pread_all(b->spill, chunk, m * 8, off * 8);
        for (size_t i = 0; st == BK_OK && i < m; i++) {
            uint32_t p = mk->part_of(f, chunk[i]);
            uint64_t *pb = buf + (size_t)p * bufn;
            pb[used[p]++] = chunk[i];
            if (used[p] == bufn) {
                st = bkf_pwrite_all(fd[p], pb, bufn * 8, len[p] * 8);
                len[p] += bufn;
                used[p] = 0;
            }
        }
    }
    for (uint32_t p = 0; st == BK_OK && p < parts; p++) {
        st = bkf_pwrite_all(fd[p], buf + (size_t)p * bufn, used[p] * 8, len[p] * 8);
        len[p] += used[p];
    }
    bki_free(buf);
    bki_free(used);
    bki_free(chunk);
    buf = NULL;
    /* The spill is no longer needed: give its blocks back before the
     * parts are built. */
    if (st == BK_OK && b->spill >= 0) {
        close(b->spill);
        b->spill = -1;
    }
    for (uint32_t p = 0; st == BK_OK && p < parts; p++) {
        uint64_t *h = bki_malloc((size_t)(len[p] ? len[p] : 1) * sizeof *h);
        if (!h) {
            st = BK_ENOMEM;
            break;
        }
        st = bkf_pread_all(fd[p], h, len[p] * 8, 0);
        if (st == BK_OK)
            st = mk->build_part(f, p, h, (size_t)len[p]);
        bki_free(h);
        close(fd[p]);
        fd[p] = -1;
    }
    for (uint32_t p = 0; fd && p < opened; p++)
        if (fd[p] >= 0)
            close(fd[p]);
    bki_free(fd);
    bki_free(len);
    return st;
}

bk_status_t bk_builder_finish(bk_builder_t *b, bk_filter_t **out)
{
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    if (!b || b->finished || b->broken)
        return BK_EINVAL;
    b->finished = true;
    uint64_t total = b->spilled + b->n;
    uint64_t per = part_keys(b);
    uint64_t parts = total / per + (total % per != 0);
    if (parts == 0)
        parts = 1;
    if (parts > b->maker->max_parts)
        return BK_ENOMEM; /* more than 4096 parts' worth under this cap */
    bk_filter_t *f;
    bk_status_t st = b->maker->create(&f, b->kind, (uint32_t)parts, b->fpr, b->hash, b->seed);
    if (st != BK_OK)
        return st;
    if (b->spill < 0) {
        st = build_in_memory(f, b->h, b->n);
    } else {
        st = spill(b);
        bki_free(b->h);
        b->h = NULL;
        b->n = b->cap = 0;
        if (st == BK_OK)
            st = build_from_spill(b, f);
    }
    if (st != BK_OK) {
        bk_filter_free(f);
        return st;
    }
    *out = f;
    return BK_OK;
}

void bk_builder_free(bk_builder_t *b)
{
    if (!b)
        return;
    if (b->spill >= 0)
        close(b->spill);
    bki_free(b->h);
    bki_free(b->tmpdir);
    bki_free(b);
}

bk_status_t bk_filter_build(bk_filter_t **out, const bk_key_t *keys, size_t n, double fpr,
                            const bk_options_t *opts)
{
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    bk_builder_t *b;
    bk_status_t st = bk_builder_create(&b, fpr, opts);
    if (st != BK_OK)
        return st;
    /* n hashes at once: no growing (and copying) the buffer as they come */
    b->h = bki_malloc((n ? n : 1) * sizeof *b->h);
    b->cap = b->h ? (n ? n : 1) : 0;
    st = bk_builder_add_batch(b, keys, n);
    if (st == BK_OK)
        st = bk_builder_finish(b, out);
    bk_builder_free(b);
    return st;
}

/* The maker of a static kind; NULL for any other. */
static const bki_static_maker_t *maker_of(bk_kind_t kind)
{
    const bki_class_t *c = bki_class_of(kind);
    return c ? c->maker : NULL;
}

bk_kind_t bk_static_kind_for(double fpr)
{
    /* Of the static kinds whose rate, with a 5% margin (so that a measured
     * rate stays below fpr), is within fpr: the one of the fewest bits a
     * key. */
    bk_kind_t best = 0;
    double best_bits = 0.0;
    for (unsigned k = 1; k < 64 && fpr < 1.0; k++) {
        const bki_static_maker_t *m = maker_of((bk_kind_t)k);
        bk_static_plan_t sp;
        if (!m || m->plan((bk_kind_t)k, 1000000, 0.0, &sp) != BK_OK ||
            !(fpr >= 1.05 * sp.expected_fpr))
            continue;
        if (!best || sp.bits_per_key < best_bits) {
            best = (bk_kind_t)k;
            best_bits = sp.bits_per_key;
        }
    }
    return best; /* 0, the default, where no static kind reaches fpr */
}

bk_status_t bk_static_plan(bk_kind_t kind, uint64_t n, double p, bk_static_plan_t *out)
{
    if (!out || !(p >= 0.0 && p < 1.0))
        return BK_EINVAL;
    if (!kind) /* the default: by the rate */
        kind = bk_static_kind_for(p);
    const bki_static_maker_t *m = maker_of(kind);
    return m ? m->plan(kind, n, p, out) : BK_EINVAL;
}
