/*
 * libFuzzer target for every loader (docs/FORMAT.md, "Fuzzing").
 *
 * Properties checked on each input, beyond "no crash, no sanitizer report":
 *  - a refusal always comes with a reason;
 *  - an accepted input serializes back to exactly the same bytes (the
 *    format is canonical, so anything else means a field was lost or
 *    invented);
 *  - loading the same bytes from a file gives the same status as loading
 *    them from memory, and a mapped open accepts whatever those accept;
 *  - the incremental loader, fed the bytes in pieces, gives the same
 *    status as deserialize, and slices read back from what it loaded
 *    (bk_filter_serialize_range) are the input's bytes.
 * Each input is tried twice: as given, and "resealed" with every checksum
 * recomputed, as a hostile writer would, so that mutations reach the field
 * checks behind the checksums instead of stopping at them.
 * Built and run by tests/fuzz/run.sh (`make fuzz`).
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void must(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_load: property violated: %s\n", what);
        abort();
    }
}

static void same_bytes(const uint8_t *data, size_t size, uint64_t n,
                       bk_status_t (*ser)(const void *, void *, size_t, size_t *), const void *obj)
{
    must(n == size, "re-serialized size differs");
    uint8_t *buf = malloc(size);
    size_t w = 0;
    must(buf && ser(obj, buf, size, &w) == BK_OK && w == size, "re-serialize failed");
    must(memcmp(buf, data, size) == 0, "re-serialized bytes differ");
    free(buf);
}

static bk_status_t ser_filter(const void *o, void *b, size_t c, size_t *w)
{
    return bk_filter_serialize(o, b, c, w);
}
static bk_status_t ser_bitmap(const void *o, void *b, size_t c, size_t *w)
{
    return bk_bitmap_serialize(o, b, c, w);
}
static bk_status_t ser_bitmap2(const void *o, void *b, size_t c, size_t *w)
{
    return bk_bitmap2_serialize(o, b, c, w);
}

/* The bytes as a file: a memfd (the caller closes it; -1 if none could
 * be made) and its path. */
static int as_file(const uint8_t *data, size_t size, char path[64])
{
    int fd = memfd_create("fuzz", 0);
    if (fd >= 0 && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        fd = -1;
    }
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

/* Whether the bytes are a paged file (version 3). */
static bool is_paged(const uint8_t *data, size_t size)
{
    return size >= 12 && data[8] == 3 && !data[9] && !data[10] && !data[11];
}

/* The same bytes as a file. */
static void file_loaders(const uint8_t *data, size_t size, bk_status_t mem_status)
{
    char path[64];
    int fd = as_file(data, size, path);
    if (fd < 0)
        return;
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_load(&f, path, &why);
    /* A paged file (version 3) is checked page by page as it is read: a
     * load may accept what deserialize, which checks every page, refuses;
     * then verifying it finds what deserialize found. */
    bool paged = is_paged(data, size);
    if (paged && st == BK_OK && mem_status != BK_OK)
        must(bk_filter_verify(f, &why) == mem_status, "paged load hid what deserialize found");
    else
        must(st == mem_status, "file load and deserialize disagree");
    must(st == BK_OK || (f == NULL && why), "file load refusal without reason");
    bk_filter_free(f);
    f = NULL;
    st = bk_filter_open(&f, path, BK_MAP_READONLY, &why);
    if (mem_status == BK_OK)
        must(st == BK_OK, "mapped open refused what deserialize accepted");
    if (st == BK_OK && paged && mem_status != BK_OK)
        must(bk_filter_verify(f, &why) == mem_status, "paged open hid what deserialize found");
    if (st == BK_OK) {
        (void)bk_filter_contains(f, "k", 1);
        (void)bk_filter_verify(f, &why);
        bk_filter_info_t info;
        bk_filter_info(f, &info);
    } else {
        must(f == NULL && why, "mapped open refusal without reason");
    }
    bk_filter_free(f);
    close(fd);
}

/* A bitmap file's loads (bk_bitmap_load, bk_bitmap2_load) of the same
 * bytes: the status deserialize gave, or, for a paged file (read page by
 * page as values touch it), acceptance with verify then finding what
 * deserialize found; a value tested and set on the way. */
static void bitmap_file_loaders(const uint8_t *data, size_t size, bk_status_t st1,
                                bk_status_t st2)
{
    char path[64];
    int fd = as_file(data, size, path);
    if (fd < 0)
        return;
    bool paged = is_paged(data, size);
    const char *why = NULL;
    bk_bitmap_t *b = NULL;
    bk_status_t st = bk_bitmap_load(&b, path, &why);
    if (paged && st == BK_OK && st1 != BK_OK)
        must(bk_bitmap_verify(b, &why) == st1, "paged bitmap load hid what deserialize found");
    else
        must(st == st1, "bitmap file load and deserialize disagree");
    must(st == BK_OK || (b == NULL && why), "bitmap file load refusal without reason");
    if (st == BK_OK) {
        (void)bk_bitmap_test(b, 7);
        (void)bk_bitmap_set(b, bk_bitmap_size(b) - 1);
        (void)bk_bitmap_count(b);
        (void)bk_bitmap_damage(b, &why);
    }
    bk_bitmap_free(b);
    bk_bitmap2_t *b2 = NULL;
    st = bk_bitmap2_load(&b2, path, &why);
    if (paged && st == BK_OK && st2 != BK_OK)
        must(bk_bitmap2_verify(b2, &why) == st2, "paged bitmap2 load hid what deserialize found");
    else
        must(st == st2, "bitmap2 file load and deserialize disagree");
    must(st == BK_OK || (b2 == NULL && why), "bitmap2 file load refusal without reason");
    if (st == BK_OK) {
        (void)bk_bitmap2_state(b2, 7);
        (void)bk_bitmap2_add(b2, bk_bitmap2_size(b2) - 1);
        uint64_t counts[3];
        bk_bitmap2_counts(b2, counts);
    }
    bk_bitmap2_free(b2);
    close(fd);
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the payload and header checksums where the layout allows
 * (docs/FORMAT.md). Returns 0 if the input is too short to have them. */
static int reseal(uint8_t *b, size_t size)
{
    if (size < 128)
        return 0;
    uint64_t nparts = (uint64_t)b[20] | (uint64_t)b[21] << 8 | (uint64_t)b[22] << 16 |
                      (uint64_t)b[23] << 24;
    uint64_t end = 128 + 96 * nparts;
    if (nparts == 0 || nparts > 65536 || end + 8 > size)
        return 0;
    for (uint64_t i = 0; i < nparts; i++) {
        uint8_t *e = b + 128 + 96 * i;
        uint64_t off = rd64(e + 48), len = rd64(e + 56);
        if (off <= size && len <= size - off)
            wr64(e + 64, XXH3_64bits(b + off, (size_t)len));
    }
    wr64(b + end, XXH3_64bits(b, (size_t)end));
    return 1;
}

/* The bytes fed to bk_filter_loader_* in pieces whose sizes come from
 * the input itself (1 .. 256 bytes), so mutations vary the cuts too. */
static void incremental(const uint8_t *data, size_t size, bk_status_t mem_status)
{
    bk_filter_loader_t *l = NULL;
    if (bk_filter_loader_new(&l, size) != BK_OK)
        return;
    const char *why = NULL;
    bk_status_t st = BK_OK;
    for (size_t off = 0, i = 0; st == BK_OK && off < size; i++) {
        size_t n = 1 + (size_t)data[i % size];
        if (n > size - off)
            n = size - off;
        st = bk_filter_loader_feed(l, data + off, n, &why);
        off += n;
    }
    bk_filter_t *f = NULL;
    if (st == BK_OK)
        st = bk_filter_loader_finish(l, &f, &why);
    bk_filter_loader_free(l);
    must(st == mem_status, "incremental load and deserialize disagree");
    must(st == BK_OK || (f == NULL && why), "incremental load refusal without reason");
    if (st != BK_OK)
        return;
    uint8_t *back = malloc(size);
    must(back != NULL, "out of memory");
    for (size_t off = 0; off < size; off += 4096) {
        size_t n = size - off < 4096 ? size - off : 4096;
        must(bk_filter_serialize_range(f, off, back + off, n) == BK_OK, "range read failed");
    }
    must(memcmp(back, data, size) == 0, "range bytes differ from the input");
    free(back);
    bk_filter_free(f);
}

static void one_input(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_input(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    if (reseal(copy, size) && memcmp(copy, data, size) != 0)
        one_input(copy, size);
    free(copy);
    return 0;
}

static void one_input(const uint8_t *data, size_t size)
{
    bk_kind_t kind;
    (void)bk_peek_kind(data, size, &kind);

    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_deserialize(&f, data, size, &why);
    /* a paged file serializes to the unpaged form: its file is what loads */
    if (st == BK_OK && !is_paged(data, size)) {
        same_bytes(data, size, bk_filter_serialized_size(f), ser_filter, f);
        (void)bk_filter_contains(f, data, size < 16 ? size : 16);
        bk_filter_info_t info;
        bk_filter_info(f, &info);
        bk_filter_free(f);
    } else if (st == BK_OK) {
        bk_filter_free(f);
    } else {
        must(f == NULL && why != NULL, "deserialize refusal without reason");
    }
    file_loaders(data, size, st);
    incremental(data, size, st);

    /* a paged bitmap file serializes to the unpaged form, as a filter's */
    bool paged = is_paged(data, size);
    bk_bitmap_t *b = NULL;
    bk_status_t st1 = bk_bitmap_deserialize(&b, data, size, &why);
    if (st1 == BK_OK) {
        if (!paged)
            same_bytes(data, size, bk_bitmap_serialized_size(b), ser_bitmap, b);
        (void)bk_bitmap_count(b);
        bk_bitmap_free(b);
    }
    bk_bitmap2_t *b2 = NULL;
    bk_status_t st2 = bk_bitmap2_deserialize(&b2, data, size, &why);
    if (st2 == BK_OK) {
        if (!paged)
            same_bytes(data, size, bk_bitmap2_serialized_size(b2), ser_bitmap2, b2);
        uint64_t counts[3];
        bk_bitmap2_counts(b2, counts);
        bk_bitmap2_free(b2);
    }
    bitmap_file_loaders(data, size, st1, st2);
}
