/*
 * Paged files (docs/FORMAT.md, "Paged files"): a large single array is
 * saved with a checksum per 4 KiB page; loading it reads the header and
 * the group checksums only, and each page the first time a key touches
 * it. Held by counting bytes (/proc/self/io) and pages, never by a clock:
 * a load reads kilobytes, a hundred lookups read a few hundred pages, a
 * checkpoint writes the pages its adds changed. A damaged page never
 * answers "absent" for a key that was added; one no key touches costs
 * nothing until the whole file is verified.
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

static uint32_t u32_at(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void add_range(bk_filter_t *f, int from, int to)
{
    char k[32];
    for (int i = from; i < to; i++)
        CHECK_OK(bk_filter_add(f, k, (size_t)snprintf(k, sizeof k, "k%d", i), NULL));
}

/* A blocked filter of about 6 MB (1,400 pages), seed fixed, holding keys
 * k0 .. k<keys - 1>. */
static bk_filter_t *make(int keys)
{
    bk_options_t o = {.kind = BK_KIND_BLOCKED, .seed_set = true, .seed = 44};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 5000000, 0.01, &o));
    if (f)
        add_range(f, 0, keys);
    return f;
}

/* make(keys), saved at path (a paged file). */
static bk_filter_t *saved(int keys)
{
    bk_filter_t *f = make(keys);
    if (f)
        CHECK_OK(bk_filter_save(f, path));
    return f;
}

static int found_range(const bk_filter_t *f, int from, int to)
{
    char k[32];
    int n = 0;
    for (int i = from; i < to; i++)
        n += bk_filter_contains(f, k, (size_t)snprintf(k, sizeof k, "k%d", i));
    return n;
}

/* The file holds exactly what a save of f writes. */
static bool file_is(const bk_filter_t *f)
{
    if (bk_filter_save(f, ref) != BK_OK)
        return false;
    size_t nw, ng;
    uint8_t *want = bkt_slurp(ref, &nw), *got = bkt_slurp(path, &ng);
    unlink(ref);
    bool same = want && got && nw == ng && memcmp(want, got, nw) == 0;
    free(want);
    free(got);
    return same;
}

/* The layout FORMAT.md gives: version 3, the page and group checksums
 * after the payload; small filters and the serialized form stay version
 * 1; the paged bytes deserialize (checked whole) to the same answers. */
static void test_layout(void)
{
    bk_filter_t *f = saved(1000), *small = NULL;
    if (!f)
        return;
    size_t n;
    uint8_t *b = bkt_slurp(path, &n);
    uint64_t body = bk_filter_serialized_size(f), pages = (body + 4095) / 4096;
    uint64_t groups_at = (body + 4095) / 4096 * 4096 + (pages * 8 + 4095) / 4096 * 4096;
    CHECK(b && u32_at(b + 8) == 3 && u32_at(b + 112) == 12);
    CHECK_EQ_U64(n, groups_at + ((pages + 511) / 512 * 8 + 63) / 64 * 64);
    uint8_t *ser = malloc(body);
    CHECK(ser && bk_filter_serialize(f, ser, body, NULL) == BK_OK && u32_at(ser + 8) == 1);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_deserialize(&g, b, n, NULL));
    CHECK(g && found_range(g, 0, 1000) == 1000);
    uint64_t checked = 1, total = 1;
    bk_filter_pages(g, &checked, &total);
    CHECK_MSG(checked == 0 && total == 0, "bytes read whole keep no pages");
    bk_filter_free(g);
    bk_options_t o = {.kind = BK_KIND_BLOCKED};
    CHECK_OK(bk_filter_create(&small, 100000, 0.01, &o)); /* 120 KB */
    CHECK_OK(bk_filter_save(small, ref));
    size_t sn;
    uint8_t *sb = bkt_slurp(ref, &sn);
    CHECK(sb && u32_at(sb + 8) == 1 && sn == bk_filter_serialized_size(small));
    unlink(ref);
    free(sb);
    free(ser);
    free(b);
    bk_filter_free(small);
    bk_filter_free(f);
}

/* A load reads the header and the group sums; each lookup at most its
 * group's sums and its page; answers as the filter gave them. */
static void test_load_reads_what_keys_touch(void)
{
    bk_filter_t *f = saved(20000);
    if (!f)
        return;
    uint64_t before = bkt_proc_io("rchar");
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    uint64_t loaded = bkt_proc_io("rchar") - before;
    CHECK_MSG(loaded <= 16384, "a load of a 6 MB paged file read %llu bytes",
              (unsigned long long)loaded);
    if (!g) {
        bk_filter_free(f);
        return;
    }
    uint64_t checked, total;
    bk_filter_pages(g, &checked, &total);
    CHECK(checked == 0 && total > 1000);
    before = bkt_proc_io("rchar");
    CHECK_EQ_U64(found_range(g, 0, 100), 100);
    uint64_t looked = bkt_proc_io("rchar") - before;
    bk_filter_pages(g, &checked, NULL);
    CHECK_MSG(checked >= 50 && checked <= 100, "100 lookups checked %llu pages",
              (unsigned long long)checked);
    CHECK_MSG(looked <= checked * 4096 + 4 * 4096, "%llu pages checked, %llu bytes read",
              (unsigned long long)checked, (unsigned long long)looked);
    /* every key, and the same answers as the filter saved for absent ones */
    CHECK_EQ_U64(found_range(g, 0, 20000), 20000);
    CHECK_EQ_U64(found_range(g, 100000, 120000), found_range(f, 100000, 120000));
    CHECK_OK(bk_filter_damage(g, NULL));
    bk_filter_free(g);
    bk_filter_free(f);
}

/* Byte b of the file flipped in place. */
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

/* The file offset of the first 4 KiB page whose payload bytes are zero
 * (no key set a bit there), or of the first that is not. */
static uint64_t page_where(bool zero)
{
    size_t n;
    uint8_t *b = bkt_slurp(path, &n);
    uint64_t found = 0;
    uint64_t body_end = n; /* where the sums start, at most */
    if (b)
        body_end = (uint64_t)(b[56] | b[57] << 8 | b[58] << 16 | (uint64_t)b[59] << 24);
    for (uint64_t p = 4096; b && p + 4096 <= body_end && !found; p += 4096) {
        bool z = true;
        for (uint64_t i = 0; i < 4096 && z; i++)
            z = b[p + i] == 0;
        if (z == zero)
            found = p;
    }
    free(b);
    return found;
}

/* Damages the file where its first key lies: in the first page with bits,
 * the first byte that is not zero loses its lowest set bit (a Bloom
 * filter's bit of the key) or, whole, all its bits (a fingerprint's byte).
 * Returns the page's file offset (0: none found). */
static uint64_t damage_first_key(bool whole)
{
    uint64_t page = page_where(false);
    CHECK(page != 0);
    size_t n;
    uint8_t *b = bkt_slurp(path, &n);
    uint64_t at = page;
    while (b && at < page + 4096 && b[at] == 0)
        at++;
    uint8_t bits = !(b && at < n) ? 1 : whole ? b[at] : (uint8_t)(b[at] & -b[at]);
    free(b);
    flip(at, bits); /* read as is, the key would be absent */
    return page;
}

/* Damage no key touches: every answer right, nothing reported, until the
 * whole file is verified (which names the page). */
static void test_damage_far_from_keys(void)
{
    bk_filter_t *f = saved(1000);
    if (!f)
        return;
    uint64_t page = page_where(true);
    CHECK(page != 0);
    flip(page + 100, 0x10);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g) {
        bk_filter_free(f);
        return;
    }
    CHECK_EQ_U64(found_range(g, 0, 1000), 1000);
    CHECK_OK(bk_filter_damage(g, NULL));
    const char *why = NULL;
    CHECK_STATUS(bk_filter_verify(g, &why), BK_ECORRUPT);
    char at[64];
    snprintf(at, sizeof at, "at byte %llu", (unsigned long long)page);
    CHECK_MSG(why && strstr(why, at), "verify said '%s', not %s", why ? why : "", at);
    CHECK_STATUS(bk_filter_save(g, ref), BK_ECORRUPT);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* Damage where a key lies: that key still answers "present" (a bit of it
 * cleared in the file), the damage is reported with the page's offset,
 * adds there and saves are refused. */
static void test_damage_under_a_key(void)
{
    bk_filter_t *f = saved(1); /* one key: its page is the one with bits */
    if (!f)
        return;
    uint64_t page = damage_first_key(false); /* k0's bit cleared */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g) {
        bk_filter_free(f);
        return;
    }
    CHECK_MSG(bk_filter_contains(g, "k0", 2), "a damaged page answered absent for a key added");
    const char *why = NULL;
    CHECK_STATUS(bk_filter_damage(g, &why), BK_ECORRUPT);
    char where[64];
    snprintf(where, sizeof where, "at byte %llu", (unsigned long long)page);
    CHECK_MSG(why && strstr(why, where), "damage said '%s', not %s", why ? why : "", where);
    CHECK_STATUS(bk_filter_add(g, "k0", 2, NULL), BK_ECORRUPT);
    bk_key_t key = {"k0", 2};
    CHECK_STATUS(bk_filter_add_batch(g, &key, 1, NULL, NULL), BK_ECORRUPT);
    bool out = false;
    CHECK(bk_filter_contains_batch(g, &key, 1, &out) == 1 && out);
    CHECK_STATUS(bk_filter_save(g, ref), BK_ECORRUPT);
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    CHECK_STATUS(bk_checkpoint_save(cp, g, NULL), BK_ECORRUPT);
    bk_checkpoint_free(cp);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* The page checksums and their groups are checked too: a damaged sum is
 * reported when its page is first read; damaged group sums refuse the
 * load. */
static void test_damaged_sums(void)
{
    bk_filter_t *f = saved(1);
    if (!f)
        return;
    size_t n;
    uint8_t *b = bkt_slurp(path, &n);
    uint64_t body = bk_filter_serialized_size(f), pages = (body + 4095) / 4096;
    uint64_t t = (body + 4095) / 4096 * 4096, g_at = t + (pages * 8 + 4095) / 4096 * 4096;
    free(b);
    flip(t + 8 * 1, 1); /* page 1's sum */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (g) {
        (void)found_range(g, 0, 1); /* page of k0: page 1 only by chance */
        CHECK_STATUS(bk_filter_verify(g, NULL), BK_ECORRUPT);
        CHECK_STATUS(bk_filter_damage(g, NULL), BK_ECORRUPT);
        CHECK(bk_filter_contains(g, "k0", 2));
    }
    bk_filter_free(g);
    flip(t + 8 * 1, 1); /* restored */
    flip(g_at, 1);      /* group 0's sum */
    g = NULL;
    const char *why = NULL;
    CHECK_STATUS(bk_filter_load(&g, path, &why), BK_ECORRUPT);
    CHECK_MSG(why && strstr(why, "group"), "load said '%s'", why ? why : "");
    bk_filter_free(g);
    bk_filter_free(f);
}

/* A checkpoint of a loaded paged file writes the pages its adds changed,
 * in place; the file is then what a save writes, and every key loads. */
static void test_checkpoint_writes_touched_pages(void)
{
    bk_filter_t *f = saved(20000);
    if (!f)
        return;
    bk_filter_free(f);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g)
        return;
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    struct stat before, after;
    CHECK(stat(path, &before) == 0);
    add_range(g, 20000, 20050);
    bk_checkpoint_stats_t st;
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK(stat(path, &after) == 0);
    CHECK_MSG(!st.whole && before.st_ino == after.st_ino, "written whole");
    /* 50 keys: 50 pages at most, their sums' sectors, a group's, the header */
    CHECK_MSG(st.pages <= 50 + 50 + 2 + 1, "pages %llu", (unsigned long long)st.pages);
    CHECK_MSG(st.sectors <= 3 * 50 + 3, "sectors %llu", (unsigned long long)st.sectors);
    uint64_t checked;
    bk_filter_pages(g, &checked, NULL);
    CHECK_MSG(checked <= 50, "50 adds checked %llu pages", (unsigned long long)checked);
    /* twice: the second checkpoint starts from the first's file */
    add_range(g, 20050, 20100);
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK(!st.whole);
    CHECK(file_is(g));
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    CHECK(h && found_range(h, 0, 20100) == 20100);
    CHECK(h && bk_filter_verify(h, NULL) == BK_OK);
    CHECK(h && bk_filter_items(h) == bk_filter_items(g));
    bk_filter_free(h);
    bk_checkpoint_free(cp);
    bk_filter_free(g);
}

/* A checkpoint killed with its journal torn leaves the file as it was; one
 * killed after its journal was whole is finished by the next load. */
static void test_crash_mid_checkpoint(void)
{
    for (int point = 1; point <= 2; point++) {
        unlink(path); /* each round starts from a new file */
        bk_filter_t *f = saved(1000);
        if (!f)
            return;
        bk_filter_free(f);
        bk_filter_t *g = NULL;
        CHECK_OK(bk_filter_load(&g, path, NULL));
        if (!g)
            return;
        bk_checkpoint_t *cp = NULL;
        CHECK_OK(bk_checkpoint_new(&cp, g, path));
        add_range(g, 1000, 1300);
        bki_checkpoint_crash = point;
        CHECK_STATUS(bk_checkpoint_save(cp, g, NULL), BK_EIO);
        bk_filter_t *h = NULL;
        CHECK_OK(bk_filter_load(&h, path, NULL));
        CHECK(h && bk_filter_verify(h, NULL) == BK_OK);
        CHECK_EQ_U64(h ? found_range(h, 0, 1000) : 0, 1000);
        if (point == 2)
            CHECK_EQ_U64(h ? found_range(h, 1000, 1300) : 0, 300);
        else
            CHECK(h && bk_filter_items(h) == 1000);
        bk_filter_free(h);
        /* the writer goes on: its next checkpoint writes what it holds */
        CHECK_OK(bk_checkpoint_save(cp, g, NULL));
        CHECK(file_is(g));
        bk_checkpoint_free(cp);
        bk_filter_free(g);
    }
}

/* An older file (version 1, read whole) is written paged at its next
 * checkpoint, and then loads page by page. */
static void test_old_file_converted(void)
{
    bk_filter_t *f = make(1000);
    if (!f)
        return;
    uint64_t n = bk_filter_serialized_size(f);
    uint8_t *b = malloc(n);
    CHECK(b && bk_filter_serialize(f, b, n, NULL) == BK_OK && bkt_spill(path, b, n));
    free(b);
    bk_filter_free(f);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g)
        return;
    uint64_t total = 1;
    bk_filter_pages(g, NULL, &total);
    CHECK_EQ_U64(total, 0);
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    add_range(g, 1000, 1010);
    CHECK_OK(bk_checkpoint_save(cp, g, NULL));
    size_t len;
    uint8_t *now = bkt_slurp(path, &len);
    CHECK(now && u32_at(now + 8) == 3);
    free(now);
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    bk_filter_pages(h, NULL, &total);
    CHECK(h && total > 0 && found_range(h, 0, 1010) == 1010);
    bk_filter_free(h);
    bk_checkpoint_free(cp);
    bk_filter_free(g);
}

/* A writable mapping of a paged file: adds go to the file, sync writes
 * their page sums; the file then loads, verified whole. */
static void test_mapped_sync(void)
{
    bk_filter_t *f = saved(1000);
    if (!f)
        return;
    bk_filter_free(f);
    bk_filter_t *m = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_WRITABLE, NULL));
    if (!m)
        return;
    CHECK_EQ_U64(found_range(m, 0, 1000), 1000);
    add_range(m, 1000, 2000);
    CHECK_OK(bk_filter_sync(m));
    bk_filter_free(m);
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    CHECK(h && bk_filter_verify(h, NULL) == BK_OK && found_range(h, 0, 2000) == 2000);
    CHECK(h && bk_filter_items(h) == 2000);
    bk_filter_free(h);
}

/* The operations that read every bit read every page first, and give what
 * the filter saved gives. */
static void test_whole_operations(void)
{
    bk_filter_t *f = saved(5000);
    if (!f)
        return;
    bk_filter_t *g = NULL, *c = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g) {
        bk_filter_free(f);
        return;
    }
    bk_filter_info_t fast, exact, want;
    CHECK(!bk_filter_info_fast(g, &fast));
    CHECK_EQ_U64(fast.items, 5000);
    bk_filter_info(f, &want);
    bk_filter_info(g, &exact);
    CHECK_EQ_U64(exact.cells_set, want.cells_set);
    /* the expectation from the items is close to the count */
    CHECK_MSG(fast.cells_set > want.cells_set * 0.97 && fast.cells_set < want.cells_set * 1.03,
              "expected %llu set cells, counted %llu", (unsigned long long)fast.cells_set,
              (unsigned long long)want.cells_set);
    CHECK(bk_filter_info_fast(g, &fast)); /* now every page is read */
    CHECK_OK(bk_filter_clone(&c, g));
    CHECK(c && found_range(c, 0, 5000) == 5000);
    bk_filter_free(c);
    CHECK_OK(bk_filter_clear(g));
    CHECK_EQ_U64(found_range(g, 0, 5000), 0);
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    CHECK_OK(bk_checkpoint_save(cp, g, NULL));
    CHECK(file_is(g));
    bk_checkpoint_free(cp);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* The metadata's last sector holds the payload's first bytes (offset 256
 * to 511): a checkpoint writes that sector whole, and must write those
 * bytes as the file holds them even when no key of the run read page 0
 * (a long-lived seen-set's first lines are set, and a run of a few keys
 * rarely touches page 0). */
static void test_checkpoint_keeps_page_zero(void)
{
    bk_filter_t *f = make(20000);
    if (!f)
        return;
    char k[32];
    bool set = false;
    for (int i = 0; i < 2000000 && !set; i++) {
        CHECK_OK(bk_filter_add(f, k, (size_t)snprintf(k, sizeof k, "z%d", i), NULL));
        for (int j = 0; j < 256 && !set; j++)
            set = f->data[j] != 0;
    }
    CHECK_MSG(set, "no key set a bit in the payload's first 256 bytes");
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g) {
        bk_filter_free(f);
        return;
    }
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    add_range(g, 30000000, 30000001);
    CHECK_OK(bk_checkpoint_save(cp, g, NULL));
    bk_filter_t *h = NULL;
    const char *why = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    CHECK_MSG(h && bk_filter_verify(h, &why) == BK_OK, "after the checkpoint: %s",
              why ? why : "");
    CHECK(file_is(g));
    bk_filter_free(h);
    bk_checkpoint_free(cp);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* f saved at path: the file is version 3 (paged), and a load of it
 * reads at most max_read bytes (the header, the group sums, a window's
 * state). The loaded filter, or NULL. */
static bk_filter_t *save_and_load_paged(const bk_filter_t *f, uint64_t max_read, const char *what)
{
    CHECK_OK(bk_filter_save(f, path));
    size_t n;
    uint8_t *b = bkt_slurp(path, &n);
    CHECK_MSG(b && n > 8 && u32_at(b + 8) == 3, "a %s saved as version %u", what,
              b && n > 8 ? u32_at(b + 8) : 0);
    free(b);
    uint64_t before = bkt_proc_io("rchar");
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK_MSG(bkt_proc_io("rchar") - before <= max_read, "a load of a paged %s read %llu bytes", what,
              (unsigned long long)(bkt_proc_io("rchar") - before));
    return g;
}

/* ---- cuckoo filters: one sub-filter of a megabyte or more is paged ---- */

/* A cuckoo filter of about 2 MB (an 8-byte bucket of four 16-bit slots,
 * 513 pages), seed fixed, holding k0 .. k<keys - 1>; capacity sets how
 * full that is (and so how often an add kicks). */
static bk_filter_t *make_cuckoo(uint64_t capacity, int keys)
{
    bk_options_t o = {.kind = BK_KIND_CUCKOO, .seed_set = true, .seed = 45};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, capacity, 0.001, &o));
    if (f)
        add_range(f, 0, keys);
    return f;
}

/* Keys [from, to) that f and g answer differently. */
static int disagree(const bk_filter_t *f, const bk_filter_t *g, int from, int to)
{
    char k[32];
    int n = 0;
    for (int i = from; i < to; i++) {
        size_t len = (size_t)snprintf(k, sizeof k, "k%d", i);
        n += bk_filter_contains(f, k, len) != bk_filter_contains(g, k, len);
    }
    return n;
}

/* Saved paged; a load reads kilobytes; a lookup checks the pages of its
 * two buckets only; lookups one by one and in batches answer as the
 * filter did; removes and adds then checkpoint the pages they changed,
 * and the file is what a save of the filter writes. */
static void test_cuckoo_paged(void)
{
    bk_filter_t *f = make_cuckoo(1000000, 20000);
    bk_filter_t *g = f ? save_and_load_paged(f, 16384, "cuckoo filter") : NULL;
    if (!g) {
        bk_filter_free(f);
        return;
    }
    uint64_t checked, total;
    bk_filter_pages(g, &checked, &total);
    CHECK(checked == 0 && total > 500);
    uint64_t before = bkt_proc_io("rchar");
    CHECK_EQ_U64(found_range(g, 0, 50), 50);
    bk_filter_pages(g, &checked, NULL);
    CHECK_MSG(checked >= 50 && checked <= 100, "50 lookups checked %llu pages",
              (unsigned long long)checked);
    CHECK_MSG(bkt_proc_io("rchar") - before <= checked * 4096 + 4 * 4096, "%llu pages checked, %llu read",
              (unsigned long long)checked, (unsigned long long)(bkt_proc_io("rchar") - before));
    /* batches and single keys, present and absent: the filter's answers */
    bk_key_t keys[64];
    char kb[64][32];
    bool out[64];
    for (int i = 0; i < 64; i++) {
        keys[i].ptr = kb[i];
        keys[i].len = (size_t)snprintf(kb[i], sizeof kb[i], "k%d", 19968 + i);
    }
    CHECK_EQ_U64(bk_filter_contains_batch(g, keys, 64, out),
                 bk_filter_contains_batch(f, keys, 64, out));
    CHECK_EQ_U64(disagree(f, g, 0, 40000), 0);
    /* removes and adds, then a checkpoint of the pages they changed */
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    char k[32];
    for (int i = 0; i < 100; i++) {
        size_t len = (size_t)snprintf(k, sizeof k, "k%d", i);
        CHECK_OK(bk_filter_remove(g, k, len));
        CHECK_OK(bk_filter_remove(f, k, len));
    }
    add_range(g, 20000, 20100);
    add_range(f, 20000, 20100);
    bk_checkpoint_stats_t st;
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK_MSG(!st.whole && st.pages <= 2 * 200 + 10, "written whole %d, %llu pages", st.whole,
              (unsigned long long)st.pages);
    CHECK(file_is(g));
    bk_checkpoint_free(cp);
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    CHECK(h && disagree(f, h, 0, 40000) == 0);
    CHECK(h && found_range(h, 100, 20100) == 20000);
    CHECK(h && bk_filter_items(h) == bk_filter_items(f));
    CHECK(h && bk_filter_verify(h, NULL) == BK_OK);
    bk_filter_free(h);
    /* mapped: the same answers, the pages checked as they are read */
    CHECK_OK(bk_filter_open(&h, path, BK_MAP_READONLY, NULL));
    CHECK(h && found_range(h, 100, 200) == 100);
    CHECK(h && disagree(f, h, 0, 40000) == 0);
    bk_filter_free(h);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* A nearly full cuckoo filter: adds kick fingerprints to buckets no key
 * named, each read and checked first and written back by the checkpoint;
 * one that still finds no room grows it (in memory), and the checkpoint
 * then writes the file whole. Every key stays present. */
static void test_cuckoo_paged_kicks_and_growth(void)
{
    /* 262,144 buckets of four: capacity 1M at 0.001 */
    bk_filter_t *f = make_cuckoo(1000000, 960000);
    if (!f)
        return;
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g) {
        bk_filter_free(f);
        return;
    }
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    add_range(g, 960000, 980000);
    add_range(f, 960000, 980000);
    bk_filter_shape_t sh;
    bk_filter_shape(g, &sh);
    CHECK_EQ_U64(sh.filters, 1);
    uint64_t checked, total;
    bk_filter_pages(g, &checked, &total);
    bk_checkpoint_stats_t st;
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK(!st.whole);
    CHECK(file_is(g));
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    CHECK(h && found_range(h, 0, 980000) == 980000);
    CHECK(h && disagree(f, h, 980000, 1000000) == 0);
    bk_filter_free(h);
    /* past the room it has: a second sub-filter, the file written whole */
    add_range(g, 980000, 1200000);
    bk_filter_shape(g, &sh);
    CHECK_MSG(sh.filters == 2, "%u sub-filters", (unsigned)sh.filters);
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK(st.whole);
    CHECK(file_is(g));
    CHECK_OK(bk_filter_load(&h, path, NULL));
    CHECK(h && found_range(h, 0, 1200000) == 1200000);
    bk_filter_free(h);
    bk_checkpoint_free(cp);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* The bucket of a cuckoo filter's only key damaged in the file: the key
 * still answers "present" (by one key and in a batch), the damage is
 * reported, adds and removes there and saves are refused. */
static void test_cuckoo_damage_under_a_key(void)
{
    bk_filter_t *f = make_cuckoo(1000000, 1);
    if (!f)
        return;
    CHECK_OK(bk_filter_save(f, path));
    uint64_t page = damage_first_key(true); /* k0's fingerprint changed */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g) {
        bk_filter_free(f);
        return;
    }
    CHECK_MSG(bk_filter_contains(g, "k0", 2), "a damaged page answered absent for a key added");
    bk_key_t key = {"k0", 2};
    bool out = false;
    CHECK(bk_filter_contains_batch(g, &key, 1, &out) == 1 && out);
    CHECK(bk_filter_count(g, "k0", 2) >= 1);
    const char *why = NULL;
    CHECK_STATUS(bk_filter_damage(g, &why), BK_ECORRUPT);
    char where[64];
    snprintf(where, sizeof where, "at byte %llu", (unsigned long long)page);
    CHECK_MSG(why && strstr(why, where), "damage said '%s', not %s", why ? why : "", where);
    CHECK_STATUS(bk_filter_add(g, "k0", 2, NULL), BK_ECORRUPT);
    CHECK_STATUS(bk_filter_remove(g, "k0", 2), BK_ECORRUPT);
    CHECK_STATUS(bk_filter_save(g, ref), BK_ECORRUPT);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* ---- windows: the slots paged, the small state with its own checksum ---- */

/* A count window of 600,000 adds at 1% (about 1.4 MB of slots, G = 4:
 * a generation every 200,000 adds), seed
 * fixed, holding k0 .. k<keys - 1>; span > 0: a time window of that span
 * instead, its clock at 1000. */
static bk_filter_t *make_window(uint64_t span, int keys)
{
    bk_options_t o = {.kind = BK_KIND_WINDOW, .seed_set = true, .seed = 46, .window_span = span};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 600000, 0.01, &o));
    if (f && span)
        CHECK_OK(bk_filter_advance(f, 1000));
    if (f)
        add_range(f, 0, keys);
    return f;
}

/* Saved paged; a load reads kilobytes (the header, the group sums, the
 * state); lookups check their buckets' pages; adds then checkpoint the
 * pages they changed; a generation step (which clears a line of every
 * bucket) reads and checks every page and the checkpoint writes what
 * changed; the state moves with the checkpoints; the file is always what
 * a save of the window writes. */
static void test_window_paged(void)
{
    bk_filter_t *f = make_window(0, 50000);
    bk_filter_t *g = f ? save_and_load_paged(f, 20480, "window") : NULL;
    if (!g) {
        bk_filter_free(f);
        return;
    }
    uint64_t checked, total;
    bk_filter_pages(g, &checked, &total);
    CHECK(checked == 0 && total > 300);
    /* described from its counts, nothing read */
    bk_filter_info_t fast, whole;
    CHECK(!bk_filter_info_fast(g, &fast));
    bk_filter_info(f, &whole);
    CHECK_MSG(fast.items == whole.items && fast.fill > 0.8 * whole.fill &&
                  fast.fill < 1.2 * whole.fill,
              "estimated fill %g, counted %g", fast.fill, whole.fill);
    CHECK_EQ_U64(found_range(g, 0, 50), 50);
    bk_filter_pages(g, &checked, NULL);
    CHECK_MSG(checked >= 25 && checked <= 100, "50 lookups checked %llu pages",
              (unsigned long long)checked);
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    add_range(g, 50000, 50100);
    add_range(f, 50000, 50100);
    bk_checkpoint_stats_t st;
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK_MSG(!st.whole && st.pages <= 2 * 100 + 10, "written whole %d, %llu pages", st.whole,
              (unsigned long long)st.pages);
    bk_filter_pages(g, &checked, NULL);
    CHECK_MSG(checked < total, "150 keys checked %llu pages of %llu", (unsigned long long)checked,
              (unsigned long long)total);
    CHECK(file_is(g));
    CHECK_EQ_U64(disagree(f, g, 0, 100000), 0);
    /* past a generation: every page read, the cleared slot written */
    add_range(g, 50100, 260000);
    add_range(f, 50100, 260000);
    bk_filter_pages(g, &checked, NULL);
    CHECK_EQ_U64(checked, total);
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK(!st.whole);
    CHECK(file_is(g));
    bk_checkpoint_free(cp);
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    CHECK(h && disagree(f, h, 0, 300000) == 0);
    CHECK(h && bk_filter_items(h) == bk_filter_items(f));
    CHECK(h && bk_filter_verify(h, NULL) == BK_OK);
    bk_filter_free(h);
    CHECK_OK(bk_filter_open(&h, path, BK_MAP_READONLY, NULL));
    CHECK(h && disagree(f, h, 0, 300000) == 0);
    bk_filter_free(h);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* A time window's clock moved with no add: only the state changes, and a
 * checkpoint writes it; a step past its generations clears every slot. */
static void test_window_paged_clock(void)
{
    bk_filter_t *f = make_window(3600, 20000);
    if (!f)
        return;
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (!g) {
        bk_filter_free(f);
        return;
    }
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, g, path));
    CHECK_OK(bk_filter_advance(g, 1100));
    CHECK_OK(bk_filter_advance(f, 1100));
    bk_checkpoint_stats_t st;
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK(!st.whole && st.sectors >= 1);
    CHECK(file_is(g));
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, NULL));
    bk_filter_info_t a, c;
    if (h) {
        bk_filter_info(h, &a);
        CHECK_EQ_U64(a.window_now, 1100);
        CHECK(disagree(f, h, 0, 40000) == 0);
    }
    bk_filter_free(h);
    /* hours later: every key forgotten, the slots cleared in the file */
    CHECK_OK(bk_filter_advance(g, 1000000));
    CHECK_OK(bk_filter_advance(f, 1000000));
    CHECK_OK(bk_checkpoint_save(cp, g, &st));
    CHECK(file_is(g));
    CHECK_OK(bk_filter_load(&h, path, NULL));
    if (h) {
        bk_filter_info(h, &c);
        CHECK_EQ_U64(c.cells_set, 0);
        CHECK_EQ_U64(found_range(h, 0, 20000), 0);
    }
    bk_filter_free(h);
    bk_checkpoint_free(cp);
    bk_filter_free(g);
    bk_filter_free(f);
}

/* The state part damaged: the load is refused, whatever it holds. */
static void test_window_damaged_state(void)
{
    bk_filter_t *f = make_window(0, 1000);
    if (!f)
        return;
    CHECK_OK(bk_filter_save(f, path));
    size_t n;
    uint8_t *b = bkt_slurp(path, &n);
    /* part 1's offset: the second part-table entry's offset field (a
     * 128-byte header, 96-byte entries, the offset at 48) */
    uint64_t off = 0;
    for (int i = 0; b && i < 8; i++)
        off |= (uint64_t)b[128 + 96 + 48 + i] << (8 * i);
    free(b);
    CHECK(off > 0 && off < n);
    flip(off + 24, 0x01); /* its add count */
    bk_filter_t *g = NULL;
    const char *why = NULL;
    CHECK_STATUS(bk_filter_load(&g, path, &why), BK_ECORRUPT);
    CHECK_MSG(why && strstr(why, "checksum"), "refused with '%s'", why ? why : "");
    bk_filter_free(g);
    bk_filter_free(f);
}

/* A writable mapping of a paged cuckoo filter and of a paged window: adds
 * (kicks, and a window's generation step) through the mapping, a sync,
 * then the file loads, verifies and answers as a filter given the same
 * adds in memory. */
static void test_mapped_sync_cuckoo_and_window(void)
{
    for (int kind = 0; kind < 2; kind++) {
        bk_filter_t *f = kind ? make_window(0, 150000) : make_cuckoo(1000000, 900000);
        if (!f)
            return;
        CHECK_OK(bk_filter_save(f, path));
        bk_filter_t *m = NULL;
        CHECK_OK(bk_filter_open(&m, path, BK_MAP_WRITABLE, NULL));
        if (!m) {
            bk_filter_free(f);
            return;
        }
        int to = kind ? 260000 : 990000; /* past a generation; the cuckoo near full */
        add_range(m, kind ? 150000 : 900000, to);
        add_range(f, kind ? 150000 : 900000, to);
        CHECK_OK(bk_filter_sync(m));
        bk_filter_free(m);
        bk_filter_t *h = NULL;
        const char *why = NULL;
        CHECK_OK(bk_filter_load(&h, path, NULL));
        CHECK_MSG(h && bk_filter_verify(h, &why) == BK_OK, "%s after the sync: %s",
                  kind ? "window" : "cuckoo", why ? why : "");
        CHECK(h && disagree(f, h, 0, to + 20000) == 0);
        CHECK(h && bk_filter_items(h) == bk_filter_items(f));
        bk_filter_free(h);
        bk_filter_free(f);
    }
}

/* The calls for 64-bit keys go through the pages as the byte calls do: on
 * a paged file of each kind that has its own (split, blocked, cuckoo), one
 * key's page damaged under it, the key still answers present and adds and
 * removes there are refused; on the undamaged file the key is found and
 * its lookup checked a page. */
static void test_u64_calls_check_pages(void)
{
    static const bk_kind_t kinds[] = {BK_KIND_SPLIT, BK_KIND_BLOCKED, BK_KIND_CUCKOO};
    const uint64_t key = UINT64_C(0x0123456789abcdef);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        bk_options_t o = {.kind = kinds[i], .seed_set = true, .seed = 47};
        bk_filter_t *f = NULL, *g = NULL;
        CHECK_OK(bk_filter_create(&f, 3000000, 0.01, &o)); /* 3.5-6 MB */
        if (!f)
            continue;
        CHECK_OK(bk_filter_add_u64(f, key, NULL));
        CHECK_OK(bk_filter_save(f, path));
        CHECK_OK(bk_filter_load(&g, path, NULL));
        uint64_t checked = 0, total = 0;
        if (g) {
            bk_filter_pages(g, &checked, &total);
            CHECK_MSG(total > 500, "%s: not paged (%llu pages)", bk_kind_name(kinds[i]),
                      (unsigned long long)total);
            CHECK(bk_filter_contains_u64(g, key));
            bk_filter_pages(g, &checked, NULL);
            CHECK_MSG(checked >= 1, "%s: a lookup checked no page", bk_kind_name(kinds[i]));
        }
        bk_filter_free(g);
        g = NULL;
        damage_first_key(kinds[i] == BK_KIND_CUCKOO);
        CHECK_OK(bk_filter_load(&g, path, NULL));
        if (g) {
            CHECK_MSG(bk_filter_contains_u64(g, key), "%s: a damaged page answered absent",
                      bk_kind_name(kinds[i]));
            CHECK_STATUS(bk_filter_add_u64(g, key, NULL), BK_ECORRUPT);
            if (kinds[i] == BK_KIND_CUCKOO)
                CHECK_STATUS(bk_filter_remove_u64(g, key), BK_ECORRUPT);
            CHECK_STATUS(bk_filter_damage(g, NULL), BK_ECORRUPT);
        }
        bk_filter_free(g);
        bk_filter_free(f);
    }
}

int main(void)
{
    if (!bkt_tmpdir(dir, sizeof dir, "bk-pages"))
        return 1;
    snprintf(path, sizeof path, "%s/f.bk", dir);
    snprintf(ref, sizeof ref, "%s/ref.bk", dir);
    bkt_run("layout", test_layout);
    bkt_run("load_reads_what_keys_touch", test_load_reads_what_keys_touch);
    bkt_run("damage_far_from_keys", test_damage_far_from_keys);
    bkt_run("damage_under_a_key", test_damage_under_a_key);
    bkt_run("damaged_sums", test_damaged_sums);
    bkt_run("checkpoint_writes_touched_pages", test_checkpoint_writes_touched_pages);
    bkt_run("crash_mid_checkpoint", test_crash_mid_checkpoint);
    bkt_run("old_file_converted", test_old_file_converted);
    bkt_run("mapped_sync", test_mapped_sync);
    bkt_run("whole_operations", test_whole_operations);
    bkt_run("checkpoint_keeps_page_zero", test_checkpoint_keeps_page_zero);
    bkt_run("cuckoo_paged", test_cuckoo_paged);
    bkt_run("cuckoo_paged_kicks_and_growth", test_cuckoo_paged_kicks_and_growth);
    bkt_run("cuckoo_damage_under_a_key", test_cuckoo_damage_under_a_key);
    bkt_run("window_paged", test_window_paged);
    bkt_run("window_paged_clock", test_window_paged_clock);
    bkt_run("window_damaged_state", test_window_damaged_state);
    bkt_run("mapped_sync_cuckoo_and_window", test_mapped_sync_cuckoo_and_window);
    bkt_run("u64_calls_check_pages", test_u64_calls_check_pages);
    bkt_tmpdir_remove(dir);
    return bkt_finish();
}
