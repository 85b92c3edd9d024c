/*
 * Large bitmap files (bloomkit.h, "Large bitmap files"; docs/FORMAT.md,
 * "Paged files"): a bitmap of 1 MiB or more is saved with a checksum per
 * 4 KiB page; loading it reads the header and group checksums only, each
 * page the first time a value touches it; a save to the same file writes
 * the pages that changed. Held by bytes read and written (/proc/self/io)
 * and pages counted, never by a clock. A damaged page never reads "unset"
 * for a value that was set.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern int bki_checkpoint_crash;

static char dir[256], path[300], ref[300];

/* N = 2^26 values: an 8 MiB bitmap (a 16 MiB bitmap2), after 256 bytes
 * of header: PAGES1 (PAGES2) pages. */
#define N (UINT64_C(1) << 26)
#define PAGES1 ((256 + N / 8 + 4095) / 4096)
#define PAGES2 ((256 + N / 4 + 4095) / 4096)
/* the values set: every STEP-th from OFF (one page of 32768 values in 8) */
#define STEP UINT64_C(262147)
#define OFF UINT64_C(12345)

static uint32_t u32_at(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static bool same_files(const char *a, const char *b)
{
    size_t na, nb;
    uint8_t *x = bkt_slurp(a, &na), *y = bkt_slurp(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* A bitmap holding the values OFF + i * STEP below N (256 of them). */
static bk_bitmap_t *make(void)
{
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, N));
    for (uint64_t v = OFF; b && v < N; v += STEP)
        bk_bitmap_set(b, v);
    return b;
}

/* Of the values OFF + i * STEP + d below N, how many test set. */
static uint64_t found(const bk_bitmap_t *b, uint64_t d)
{
    uint64_t n = 0;
    for (uint64_t v = OFF + d; v < N; v += STEP)
        n += bk_bitmap_test(b, v);
    return n;
}

/* The file offset of value v's byte in a one-part file (the header and
 * the part record take the first 256 bytes). */
static uint64_t byte_of(uint64_t v)
{
    return 256 + v / 8;
}

static void flip(uint64_t at, uint8_t mask)
{
    size_t n;
    uint8_t *b = bkt_slurp(path, &n);
    CHECK(b && at < n);
    if (b && at < n) {
        b[at] ^= mask;
        CHECK(bkt_spill(path, b, n));
    }
    free(b);
}

/* A large bitmap is saved paged (version 3); loading it reads kilobytes,
 * a hundred tests read about a hundred pages, and every answer is the
 * saved bitmap's. */
static void test_load_reads_what_values_touch(void)
{
    bk_bitmap_t *b = make();
    if (!b)
        return;
    CHECK_OK(bk_bitmap_save(b, path));
    size_t n;
    uint8_t *head = bkt_slurp(path, &n);
    CHECK(head && n > N / 8 && u32_at(head + 8) == 3 && u32_at(head + 12) == 5);
    free(head);
    uint64_t before = bkt_proc_io("rchar");
    bk_bitmap_t *g = NULL;
    CHECK_OK(bk_bitmap_load(&g, path, NULL));
    uint64_t loaded = bkt_proc_io("rchar") - before;
    CHECK_MSG(loaded <= 16384, "a load of an 8 MiB paged bitmap read %llu bytes",
              (unsigned long long)loaded);
    if (!g) {
        bk_bitmap_free(b);
        return;
    }
    uint64_t checked = 1, total = 0;
    bk_bitmap_pages(g, &checked, &total);
    CHECK(checked == 0 && total == PAGES1);
    before = bkt_proc_io("rchar");
    uint64_t hits = 0, tested = 0;
    for (uint64_t v = OFF; v < N && tested < 100; v += STEP, tested++)
        hits += bk_bitmap_test(g, v);
    uint64_t looked = bkt_proc_io("rchar") - before;
    CHECK_EQ_U64(hits, 100);
    bk_bitmap_pages(g, &checked, NULL);
    CHECK_MSG(checked == 100, "100 tests on 100 pages checked %llu", (unsigned long long)checked);
    CHECK_MSG(looked <= (checked + 1) * 4096 + 4096, "%llu pages checked, %llu bytes read",
              (unsigned long long)checked, (unsigned long long)looked);
    /* neighbours of set values are unset; the whole map counts alike */
    CHECK_EQ_U64(found(g, 1), 0);
    CHECK_EQ_U64(found(g, 0), found(b, 0));
    CHECK_EQ_U64(bk_bitmap_count(g), bk_bitmap_count(b));
    bk_bitmap_pages(g, &checked, NULL);
    CHECK_EQ_U64(checked, PAGES1);
    CHECK_OK(bk_bitmap_damage(g, NULL));
    CHECK_OK(bk_bitmap_verify(g, NULL));
    /* the serialized form is version 1 and the same bitmap */
    uint64_t sz = bk_bitmap_serialized_size(g);
    uint8_t *ser = malloc(sz);
    CHECK(ser && bk_bitmap_serialize(g, ser, sz, NULL) == BK_OK && u32_at(ser + 8) == 1);
    bk_bitmap_t *h = NULL;
    CHECK_OK(bk_bitmap_deserialize(&h, ser, sz, NULL));
    CHECK(h && bk_bitmap_count(h) == bk_bitmap_count(b) && found(h, 0) == found(b, 0));
    bk_bitmap_free(h);
    free(ser);
    bk_bitmap_free(g);
    bk_bitmap_free(b);
}

/* A save to the file it was loaded from writes the pages that changed,
 * in place; the file is then byte for byte what a whole save writes. */
static void test_save_writes_changed_pages(void)
{
    bk_bitmap_t *b = make();
    if (!b)
        return;
    CHECK_OK(bk_bitmap_save(b, path));
    bk_bitmap_t *g = NULL;
    CHECK_OK(bk_bitmap_load(&g, path, NULL));
    if (!g) {
        bk_bitmap_free(b);
        return;
    }
    struct stat was, now;
    CHECK(stat(path, &was) == 0);
    for (uint64_t i = 0; i < 50; i++) { /* 50 values on 50 pages */
        bk_bitmap_set(g, OFF + i * STEP + 7);
        bk_bitmap_set(b, OFF + i * STEP + 7);
    }
    uint64_t before = bkt_proc_io("wchar");
    CHECK_OK(bk_bitmap_save(g, path));
    uint64_t wrote = bkt_proc_io("wchar") - before;
    CHECK(stat(path, &now) == 0);
    CHECK_MSG(was.st_ino == now.st_ino, "written whole (a new inode)");
    /* 50 pages, each with a sector of page sums and the journal's copy,
     * a group sum and the header: well under 1 MiB of an 8 MiB file */
    CHECK_MSG(wrote <= 3 * 50 * 4096 + 64 * 1024, "a save of 50 changed pages wrote %llu bytes",
              (unsigned long long)wrote);
    uint64_t checked;
    bk_bitmap_pages(g, &checked, NULL);
    CHECK_MSG(checked <= 51, "50 sets checked %llu pages", (unsigned long long)checked);
    CHECK_OK(bk_bitmap_save(b, ref));
    CHECK_MSG(same_files(path, ref), "the saved file differs from a whole save");
    /* a second save, and a set on a page read only now */
    bk_bitmap_set(g, N - 1);
    bk_bitmap_set(b, N - 1);
    CHECK_OK(bk_bitmap_save(g, path));
    CHECK_OK(bk_bitmap_save(b, ref));
    CHECK(same_files(path, ref));
    bk_bitmap_t *h = NULL;
    CHECK_OK(bk_bitmap_load(&h, path, NULL));
    CHECK(h && bk_bitmap_verify(h, NULL) == BK_OK);
    CHECK(h && found(h, 7) == 50 && bk_bitmap_test(h, N - 1) && found(h, 0) == found(b, 0));
    /* to another path: the whole bitmap, a file of its own */
    CHECK_OK(bk_bitmap_save(g, ref));
    CHECK(same_files(path, ref));
    bk_bitmap_free(h);
    bk_bitmap_free(g);
    bk_bitmap_free(b);
    unlink(ref);
}

/* Damage no value touches: answers right, nothing reported until the
 * whole map is verified (which names the page); damage under a set value:
 * that value still reads set, the damage is reported with the offset, and
 * saves refuse to write. */
static void test_damage(void)
{
    bk_bitmap_t *b = make();
    if (!b)
        return;
    CHECK_OK(bk_bitmap_save(b, path));
    uint64_t far = byte_of(OFF + STEP / 2) / 4096 * 4096; /* a page with no value */
    flip(far + 100, 0x10);
    bk_bitmap_t *g = NULL;
    CHECK_OK(bk_bitmap_load(&g, path, NULL));
    if (g) {
        CHECK_EQ_U64(found(g, 0), found(b, 0));
        CHECK_OK(bk_bitmap_damage(g, NULL));
        const char *why = NULL;
        CHECK_STATUS(bk_bitmap_verify(g, &why), BK_ECORRUPT);
        char at[64];
        snprintf(at, sizeof at, "at byte %llu", (unsigned long long)far);
        CHECK_MSG(why && strstr(why, at), "verify said '%s', not %s", why ? why : "", at);
        CHECK_STATUS(bk_bitmap_save(g, ref), BK_ECORRUPT);
        CHECK_MSG(access(ref, F_OK) != 0, "a damaged bitmap was written");
        CHECK_STATUS(bk_bitmap_save(g, path), BK_ECORRUPT);
    }
    bk_bitmap_free(g);
    flip(far + 100, 0x10); /* repaired */
    uint64_t v = OFF + 3 * STEP, at = byte_of(v);
    flip(at, (uint8_t)(1u << (v & 7))); /* v's bit cleared in the file */
    g = NULL;
    CHECK_OK(bk_bitmap_load(&g, path, NULL));
    if (g) {
        CHECK_MSG(bk_bitmap_test(g, v), "a damaged page read unset for a value that was set");
        const char *why = NULL;
        CHECK_STATUS(bk_bitmap_damage(g, &why), BK_ECORRUPT);
        char where[64];
        snprintf(where, sizeof where, "at byte %llu", (unsigned long long)(at / 4096 * 4096));
        CHECK_MSG(why && strstr(why, where), "damage said '%s', not %s", why ? why : "", where);
        CHECK(!bk_bitmap_set(g, v + 1)); /* reads set already: not new */
        uint64_t sz = bk_bitmap_serialized_size(g);
        uint8_t *ser = malloc(sz);
        CHECK(ser && bk_bitmap_serialize(g, ser, sz, NULL) == BK_ECORRUPT);
        free(ser);
        CHECK_STATUS(bk_bitmap_save(g, path), BK_ECORRUPT);
    }
    bk_bitmap_free(g);
    bk_bitmap_free(b);
}

/* A 2-bit map: the same, states kept, a damaged page reads "more than
 * once" (never "never seen"). */
static void test_bitmap2(void)
{
    bk_bitmap2_t *b = NULL;
    CHECK_OK(bk_bitmap2_create(&b, N));
    if (!b)
        return;
    for (uint64_t v = OFF; v < N; v += STEP) {
        bk_bitmap2_add(b, v);
        bk_bitmap2_add(b, v + 1);
        bk_bitmap2_add(b, v + 1);
    }
    CHECK_OK(bk_bitmap2_save(b, path));
    bk_bitmap2_t *g = NULL;
    uint64_t before = bkt_proc_io("rchar");
    CHECK_OK(bk_bitmap2_load(&g, path, NULL));
    CHECK(bkt_proc_io("rchar") - before <= 16384);
    if (!g) {
        bk_bitmap2_free(b);
        return;
    }
    CHECK(bk_bitmap2_state(g, OFF) == 1 && bk_bitmap2_state(g, OFF + 1) == 2 &&
          bk_bitmap2_state(g, OFF + 2) == 0);
    uint64_t checked, total;
    bk_bitmap2_pages(g, &checked, &total);
    CHECK(checked == 1 && total == PAGES2);
    CHECK_EQ_U64(bk_bitmap2_add(g, OFF), 2);
    CHECK_EQ_U64(bk_bitmap2_add(g, OFF + 2), 1);
    bk_bitmap2_add(b, OFF);
    bk_bitmap2_add(b, OFF + 2);
    struct stat was, now;
    CHECK(stat(path, &was) == 0);
    CHECK_OK(bk_bitmap2_save(g, path));
    CHECK(stat(path, &now) == 0 && was.st_ino == now.st_ino);
    CHECK_OK(bk_bitmap2_save(b, ref));
    CHECK(same_files(path, ref));
    uint64_t cg[3], cb[3];
    bk_bitmap2_counts(g, cg);
    bk_bitmap2_counts(b, cb);
    CHECK(cg[0] == cb[0] && cg[1] == cb[1] && cg[2] == cb[2]);
    bk_bitmap2_free(g);
    /* OFF + STEP's cell (state 1) cleared in the file */
    uint64_t v = OFF + STEP, at = 256 + v / 4;
    flip(at, (uint8_t)(1u << (v % 4 * 2)));
    g = NULL;
    CHECK_OK(bk_bitmap2_load(&g, path, NULL));
    if (g) {
        CHECK_EQ_U64(bk_bitmap2_state(g, v), 2);
        CHECK_STATUS(bk_bitmap2_damage(g, NULL), BK_ECORRUPT);
        CHECK_EQ_U64(bk_bitmap2_add(g, v), 2);
        CHECK_STATUS(bk_bitmap2_save(g, ref), BK_ECORRUPT);
    }
    bk_bitmap2_free(g);
    bk_bitmap2_free(b);
    unlink(ref);
}

/* A save killed mid-journal leaves the old file, or (journal whole) the
 * new one once the next load finishes it; the writer's next save writes
 * what it holds. */
static void test_crash_mid_save(void)
{
    for (int point = 1; point <= 2; point++) {
        bk_bitmap_t *b = make();
        if (!b)
            return;
        unlink(path);
        CHECK_OK(bk_bitmap_save(b, path));
        bk_bitmap_t *g = NULL;
        CHECK_OK(bk_bitmap_load(&g, path, NULL));
        if (!g) {
            bk_bitmap_free(b);
            return;
        }
        for (uint64_t i = 0; i < 20; i++) {
            bk_bitmap_set(g, OFF + i * STEP + 9);
            bk_bitmap_set(b, OFF + i * STEP + 9);
        }
        bki_checkpoint_crash = point;
        CHECK_STATUS(bk_bitmap_save(g, path), BK_EIO);
        bk_bitmap_t *h = NULL;
        CHECK_OK(bk_bitmap_load(&h, path, NULL));
        CHECK(h && bk_bitmap_verify(h, NULL) == BK_OK);
        CHECK_EQ_U64(h ? found(h, 0) : 0, found(b, 0));
        CHECK_EQ_U64(h ? found(h, 9) : 99, point == 2 ? 20 : 0);
        bk_bitmap_free(h);
        CHECK_OK(bk_bitmap_save(g, path));
        CHECK_OK(bk_bitmap_save(b, ref));
        CHECK(same_files(path, ref));
        bk_bitmap_free(g);
        bk_bitmap_free(b);
    }
    unlink(ref);
}

/* An older bitmap file (version 1) loads whole and is written paged by
 * its next save. */
static void test_old_file_converted(void)
{
    bk_bitmap_t *b = make();
    if (!b)
        return;
    uint64_t n = bk_bitmap_serialized_size(b);
    uint8_t *ser = malloc(n);
    CHECK(ser && bk_bitmap_serialize(b, ser, n, NULL) == BK_OK && bkt_spill(path, ser, n));
    free(ser);
    bk_bitmap_t *g = NULL;
    CHECK_OK(bk_bitmap_load(&g, path, NULL));
    uint64_t total = 1;
    bk_bitmap_pages(g, NULL, &total);
    CHECK_EQ_U64(total, 0);
    CHECK(g && found(g, 0) == found(b, 0));
    CHECK_OK(bk_bitmap_save(g, path));
    size_t len;
    uint8_t *now = bkt_slurp(path, &len);
    CHECK(now && u32_at(now + 8) == 3);
    free(now);
    bk_bitmap_t *h = NULL;
    CHECK_OK(bk_bitmap_load(&h, path, NULL));
    bk_bitmap_pages(h, NULL, &total);
    CHECK(h && total == PAGES1 && found(h, 0) == found(b, 0));
    bk_bitmap_free(h);
    bk_bitmap_free(g);
    bk_bitmap_free(b);
}

/* Passes over the whole map and set algebra on a loaded bitmap see every
 * page, and a cleared bitmap saves as cleared. */
static void test_whole_passes(void)
{
    bk_bitmap_t *b = make();
    if (!b)
        return;
    CHECK_OK(bk_bitmap_save(b, path));
    bk_bitmap_t *g = NULL, *other = NULL;
    CHECK_OK(bk_bitmap_load(&g, path, NULL));
    CHECK_OK(bk_bitmap_create(&other, N));
    if (g && other) {
        uint64_t first = 0, v = 0;
        CHECK(bk_bitmap_next(g, 0, &first) && first == OFF);
        CHECK(bk_bitmap_next(g, OFF + 1, &v) && v == OFF + STEP);
        bk_bitmap_set(other, 5);
        CHECK_OK(bk_bitmap_or(other, g)); /* a paged source */
        CHECK_EQ_U64(bk_bitmap_count(other), bk_bitmap_count(b) + 1);
        CHECK_OK(bk_bitmap_and(g, other)); /* a paged destination */
        CHECK_EQ_U64(bk_bitmap_count(g), bk_bitmap_count(b));
        bk_bitmap_clear(g);
        CHECK_EQ_U64(bk_bitmap_count(g), 0);
        CHECK_OK(bk_bitmap_save(g, path));
        bk_bitmap_t *h = NULL;
        CHECK_OK(bk_bitmap_load(&h, path, NULL));
        CHECK(h && bk_bitmap_count(h) == 0 && bk_bitmap_verify(h, NULL) == BK_OK);
        bk_bitmap_free(h);
    }
    bk_bitmap_free(other);
    bk_bitmap_free(g);
    bk_bitmap_free(b);
}

int main(void)
{
    if (!bkt_tmpdir(dir, sizeof dir, "bk-bmpages"))
        return 1;
    snprintf(path, sizeof path, "%s/b.bk", dir);
    snprintf(ref, sizeof ref, "%s/ref.bk", dir);
    bkt_run("load_reads_what_values_touch", test_load_reads_what_values_touch);
    bkt_run("save_writes_changed_pages", test_save_writes_changed_pages);
    bkt_run("damage", test_damage);
    bkt_run("bitmap2", test_bitmap2);
    bkt_run("crash_mid_save", test_crash_mid_save);
    bkt_run("old_file_converted", test_old_file_converted);
    bkt_run("whole_passes", test_whole_passes);
    bkt_tmpdir_remove(dir);
    return bkt_finish();
}
