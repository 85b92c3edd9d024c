/*
 * Checkpoints that write what changed (bk_checkpoint_*): after every
 * checkpoint the file is, byte for byte, what bk_filter_serialize gives
 * for the filter, for every kind; only the changed sectors are written
 * while few changed; an interrupted checkpoint leaves the previous one or
 * (its journal whole) this one, which the next load finishes; a process
 * killed at random instants always leaves a file that loads and holds
 * exactly one of the checkpoints it made.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern int bki_checkpoint_crash;
extern unsigned bki_test_reboots;
extern int bki_test_retire;

static char dir[256], path[300], journal[320];

static void paths(void)
{
    snprintf(path, sizeof path, "%s/f.bk", dir);
    snprintf(journal, sizeof journal, "%s-journal", path);
}

/* One filter of each shape; keys "k<i>" for i in [from, to) added. */
static bk_filter_t *make(int which)
{
    bk_options_t o = {.seed_set = true, .seed = 7 + (uint64_t)which};
    uint64_t cap = 20000;
    double p = 0.01;
    switch (which) {
    case 0: o.kind = BK_KIND_SPLIT; break;
    case 1: o.kind = BK_KIND_BLOCKED; break;
    case 2:
        o.kind = BK_KIND_BLOCKED2;
        p = 1e-6;
        break;
    case 3: o.kind = BK_KIND_CLASSIC; break;
    case 4: o.kind = BK_KIND_COUNTING; break;
    case 5:
        o.kind = BK_KIND_PRECISE;
        p = 1e-9;
        break;
    case 6:
        o.kind = BK_KIND_SCALABLE;
        cap = 2000;
        break;
    case 7:
        o.kind = BK_KIND_WINDOW;
        cap = 5000;
        break;
    default:
        o.kind = BK_KIND_WINDOW;
        o.window_span = 60;
        cap = 5000;
        break;
    }
    bk_filter_t *f = NULL;
    if (bk_filter_create(&f, cap, p, &o) != BK_OK)
        return NULL;
    return f;
}
#define NSHAPES 9

/* A filter large enough (2 MB) that a few hundred keys change few of its
 * sectors: checkpoints of it are written in place. */
static bk_filter_t *make_big(void)
{
    bk_options_t o = {.kind = BK_KIND_BLOCKED2, .seed_set = true, .seed = 11};
    bk_filter_t *f = NULL;
    if (bk_filter_create(&f, 500000, 1e-6, &o) != BK_OK)
        return NULL;
    return f;
}

static void add_keys(bk_filter_t *f, uint64_t from, uint64_t to)
{
    char key[32];
    for (uint64_t i = from; i < to; i++) {
        int len = snprintf(key, sizeof key, "k%llu", (unsigned long long)i);
        bk_filter_add(f, key, (size_t)len, NULL);
    }
}

/* The file holds exactly what a save of f writes (the serialized form,
 * or the paged file of a large single array). */
static bool file_is(const bk_filter_t *f)
{
    char ref[sizeof path + 8];
    snprintf(ref, sizeof ref, "%s.ref", path);
    if (bk_filter_save(f, ref) != BK_OK)
        return false;
    size_t nw = 0, ng = 0;
    uint8_t *want = bkt_slurp(ref, &nw), *got = bkt_slurp(path, &ng);
    unlink(ref);
    bool same = want && got && nw == ng && memcmp(want, got, nw) == 0;
    free(want);
    free(got);
    return same;
}

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void test_every_shape_matches_serialize(void)
{
    for (int w = 0; w < NSHAPES; w++) {
        bk_filter_t *f = make(w);
        CHECK(f != NULL);
        if (!f)
            continue;
        unlink(path);
        bk_checkpoint_t *cp = NULL;
        CHECK_OK(bk_checkpoint_new(&cp, f, path));
        bk_checkpoint_stats_t st;
        add_keys(f, 0, 100);
        CHECK_OK(bk_checkpoint_save(cp, f, &st));
        CHECK_MSG(st.whole, "shape %d: the first checkpoint of a new file is whole", w);
        CHECK_MSG(file_is(f), "shape %d: first checkpoint", w);
        for (int round = 1; round <= 4; round++) {
            if (w == 8)
                bk_filter_advance(f, 1000 + 20 * (uint64_t)round);
            add_keys(f, 100 * (uint64_t)round, 100 * (uint64_t)round + 100);
            CHECK_OK(bk_checkpoint_save(cp, f, &st));
            CHECK_MSG(file_is(f), "shape %d round %d: file differs from the filter", w, round);
            CHECK_MSG(!exists(journal), "shape %d: journal left behind", w);
        }
        /* No change: nothing to write. */
        CHECK_OK(bk_checkpoint_save(cp, f, &st));
        CHECK_MSG(st.sectors == 0 && st.bytes_written == 0 && !st.whole,
                  "shape %d: an unchanged filter wrote %llu bytes", w,
                  (unsigned long long)st.bytes_written);
        bk_filter_t *back = NULL;
        CHECK_OK(bk_filter_load(&back, path, NULL));
        CHECK(back && bk_filter_contains(back, "k333", 4));
        bk_filter_free(back);
        bk_checkpoint_free(cp);
        bk_filter_free(f);
    }
}

/* A large filter receiving a few keys writes a few pages, in place. */
static void test_few_keys_write_few_pages(void)
{
    bk_options_t o = {.kind = BK_KIND_BLOCKED2, .seed_set = true, .seed = 3};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 2000000, 0.001, &o));
    if (!f)
        return;
    add_keys(f, 0, 50000);
    unlink(path);
    CHECK_OK(bk_filter_save(f, path));
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, f, path));
    struct stat before, after;
    CHECK(stat(path, &before) == 0);
    add_keys(f, 50000, 50100);
    bk_checkpoint_stats_t st;
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK(stat(path, &after) == 0);
    CHECK_MSG(!st.whole, "100 keys rewrote the whole file");
    CHECK_MSG(before.st_ino == after.st_ino, "written in place, not replaced");
    /* Each key touches at most 2 blocks; the header sector changes too. */
    CHECK_MSG(st.pages >= 50 && st.pages <= 201, "pages %llu", (unsigned long long)st.pages);
    CHECK_MSG(st.bytes_written < st.pages * 4096 + st.sectors * 600 + 4096,
              "bytes %llu for %llu pages", (unsigned long long)st.bytes_written,
              (unsigned long long)st.pages);
    CHECK(file_is(f));
    /* Most of it changed: a whole save writes less than the journal. */
    add_keys(f, 100000, 1500000);
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK_MSG(st.whole, "most sectors changed, yet written in place");
    CHECK(file_is(f));
    add_keys(f, 2000000, 2000010);
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK(!st.whole && file_is(f));
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

/* A file changed by someone else since the last checkpoint is not patched:
 * it is written whole, so the result is the filter, not a mix. */
static void test_replaced_file_written_whole(void)
{
    bk_filter_t *f = make(0), *other = make(1);
    if (!f || !other) {
        CHECK(false);
        return;
    }
    unlink(path);
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, f, path));
    bk_checkpoint_stats_t st;
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK_OK(bk_filter_save(other, path)); /* another writer */
    add_keys(f, 0, 10);
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK(st.whole && file_is(f));
    /* The same size, changed in place (a writable mapping's sync). */
    add_keys(f, 10, 20);
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    bk_filter_t *m = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_WRITABLE, NULL));
    if (m) {
        add_keys(m, 5000, 5100);
        CHECK_OK(bk_filter_sync(m));
        bk_filter_free(m);
    }
    add_keys(f, 20, 30);
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK(st.whole && file_is(f));
    /* A checkpointer started on a file that is not f's bytes. */
    bk_checkpoint_free(cp);
    CHECK_OK(bk_filter_save(other, path));
    CHECK_OK(bk_checkpoint_new(&cp, f, path));
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK(st.whole && file_is(f));
    bk_checkpoint_free(cp);
    bk_filter_free(f);
    bk_filter_free(other);
}

/* Interrupted checkpoints: a torn journal leaves the previous checkpoint,
 * a whole one is finished by the next load, the next open, or the next
 * checkpoint. */
static void test_interrupted(void)
{
    for (int point = 1; point <= 2; point++) {
        for (int reader = 0; reader < 3; reader++) {
            bk_filter_t *f = make_big();
            if (!f) {
                CHECK(false);
                return;
            }
            add_keys(f, 0, 1000);
            unlink(path);
            CHECK_OK(bk_filter_save(f, path));
            bk_filter_t *old = NULL;
            CHECK_OK(bk_filter_load(&old, path, NULL));
            bk_checkpoint_t *cp = NULL;
            CHECK_OK(bk_checkpoint_new(&cp, f, path));
            add_keys(f, 1000, 1300);
            bki_checkpoint_crash = point;
            CHECK_STATUS(bk_checkpoint_save(cp, f, NULL), BK_EIO);
            CHECK_MSG(exists(journal), "point %d: the journal stays", point);
            const bk_filter_t *want = point == 1 ? old : f;
            if (reader == 0) {
                bk_filter_t *g = NULL;
                CHECK_OK(bk_filter_load(&g, path, NULL));
                bk_filter_free(g);
            } else if (reader == 1) {
                bk_filter_t *g = NULL;
                CHECK_OK(bk_filter_open(&g, path, BK_MAP_READONLY, NULL));
                CHECK(g && bk_filter_verify(g, NULL) == BK_OK);
                bk_filter_free(g);
            } else {
                /* the writer itself goes on: its next checkpoint */
                CHECK_OK(bk_checkpoint_save(cp, f, NULL));
                want = f;
            }
            CHECK_MSG(file_is(want), "point %d reader %d: file is not %s", point, reader,
                      point == 1 ? "the previous checkpoint" : "this checkpoint");
            CHECK_MSG(!exists(journal), "point %d reader %d: journal not removed", point, reader);
            bk_checkpoint_free(cp);
            bk_filter_free(old);
            bk_filter_free(f);
        }
    }
}

/* A big filter saved at path, then a checkpoint of 50 more keys stopped
 * with its journal whole and half its runs written (*before, when asked:
 * the file as it was first saved). NULL if the filter cannot be made. */
static bk_filter_t *interrupted_checkpoint(bk_checkpoint_t **cp, bk_filter_t **before)
{
    bk_filter_t *f = make_big();
    if (!f)
        return NULL;
    unlink(path);
    CHECK_OK(bk_filter_save(f, path));
    CHECK_OK(bk_checkpoint_new(cp, f, path));
    if (before) {
        /* A copy of the file as it is: a loaded paged file reads its pages
         * as keys touch them, so its untouched pages would follow the
         * in-place writes below. */
        bk_filter_t *loaded = NULL;
        CHECK_OK(bk_filter_load(&loaded, path, NULL));
        CHECK_OK(bk_filter_clone(before, loaded));
        bk_filter_free(loaded);
    }
    add_keys(f, 0, 50);
    bki_checkpoint_crash = 2;
    CHECK_STATUS(bk_checkpoint_save(*cp, f, NULL), BK_EIO);
    CHECK(exists(journal));
    return f;
}

/* Loads path in a child that runs as nobody (when root): its exit status
 * is 0 when the load failed with BK_EIO and a reason naming the journal. */
static int load_as_nobody(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(10);
        bk_filter_t *g = NULL;
        const char *why = NULL;
        bk_status_t st = bk_filter_load(&g, path, &why);
        _exit(st == BK_EIO && why && strstr(why, "journal") ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    return status;
}

/* A whole journal left for a file that then lost write permission: the
 * load says why instead of reading a half-written file. */
static void test_unfinished_needs_write_access(void)
{
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *f = interrupted_checkpoint(&cp, NULL);
    if (!f)
        return;
    /* A reader without write access: root reads as nobody, in a child. */
    chmod(dir, 0755);
    chmod(path, 0444);
    int status = load_as_nobody();
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a reader without write access loaded a half-written file (status %d)", status);
    CHECK(exists(journal));
    chmod(path, 0644);
    chmod(dir, 0700);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK(file_is(f));
    bk_filter_free(g);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

/* A pending journal the reader cannot open (no read permission): the load
 * says the journal must be finished, never reads the half-written file as
 * if no checkpoint had been cut short. Needs root to read as nobody. */
static void test_unreadable_journal_is_an_error(void)
{
    if (geteuid() != 0) {
        printf("  (skipped: reading as another user needs root)\n");
        return;
    }
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *f = interrupted_checkpoint(&cp, NULL);
    if (!f)
        return;
    chmod(dir, 0777);
    chmod(path, 0666); /* the reader may write the file, not read the journal */
    chmod(journal, 0600);
    int status = load_as_nobody();
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a load that could not read a pending journal did not say so (status %d)", status);
    chmod(path, 0644);
    chmod(dir, 0700);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL)); /* root finishes it */
    CHECK(file_is(f));
    bk_filter_free(g);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

/* A journal for another file (a stale one, or one whose file was replaced
 * since) is ignored and removed. */
static void test_stale_journal_ignored(void)
{
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *before = NULL;
    bk_filter_t *f = interrupted_checkpoint(&cp, &before);
    if (!f || !before) {
        bk_checkpoint_free(cp);
        bk_filter_free(f);
        bk_filter_free(before);
        return;
    }
    CHECK_OK(bk_filter_save(before, path)); /* a new inode: the journal is not its */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK(file_is(before));
    CHECK(!exists(journal));
    bk_filter_free(g);
    bk_filter_free(before);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

/* Writes buf over the file at p in place (the same inode, as cp does). */
static bool overwrite(const char *p, const uint8_t *buf, size_t n, mode_t mode)
{
    FILE *fp = fopen(p, "wb");
    if (!fp)
        return false;
    bool ok = fwrite(buf, 1, n, fp) == n;
    ok = fclose(fp) == 0 && ok;
    return ok && chmod(p, mode) == 0;
}

/* A symbolic link planted at the journal's name (to a file the checkpoint
 * must never write) is not followed: the link goes, the file it names is
 * untouched, and the checkpoint is written in place all the same. */
static void test_journal_link_not_followed(void)
{
    bk_filter_t *f = make_big();
    if (!f)
        return;
    char victim[340];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *vp = fopen(victim, "wb");
    CHECK(vp && fputs("precious\n", vp) >= 0);
    if (vp)
        fclose(vp);
    unlink(path);
    unlink(journal);
    CHECK_OK(bk_filter_save(f, path));
    bk_checkpoint_t *cp = NULL;
    CHECK_OK(bk_checkpoint_new(&cp, f, path));
    CHECK(symlink(victim, journal) == 0);
    /* a load meets the link first: it is no journal to replay */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    bk_filter_free(g);
    /* and the checkpoint meets it (a load may have removed it) */
    unlink(journal);
    CHECK(symlink(victim, journal) == 0);
    add_keys(f, 0, 50);
    bk_checkpoint_stats_t stats;
    CHECK_OK(bk_checkpoint_save(cp, f, &stats));
    CHECK(!stats.whole);
    CHECK(file_is(f));
    size_t n = 0;
    uint8_t *v = bkt_slurp(victim, &n);
    CHECK_MSG(v && n == 9 && memcmp(v, "precious\n", 9) == 0,
              "the file the planted link named was written (%zu bytes now)", n);
    free(v);
    /* the name holds the checkpoint's own journal now, settled */
    struct stat sb;
    CHECK(lstat(journal, &sb) == 0 && S_ISREG(sb.st_mode));
    /* A dangling link: a checkpoint that followed it would create the file
     * it names (a cron job, a shell profile) with the journal's bytes. */
    char absent[340];
    snprintf(absent, sizeof absent, "%s/planted", dir);
    unlink(journal);
    CHECK(symlink(absent, journal) == 0);
    add_keys(f, 50, 100);
    CHECK_OK(bk_checkpoint_save(cp, f, &stats));
    CHECK(!stats.whole);
    CHECK(file_is(f));
    CHECK_MSG(lstat(absent, &sb) != 0, "the checkpoint created the file a dangling link named");
    CHECK(lstat(journal, &sb) == 0 && S_ISREG(sb.st_mode));
    unlink(absent);
    unlink(victim);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

/* A FIFO at the journal's name neither hangs a load (nobody ever writes to
 * it) nor stops a checkpoint. Run in a child under an alarm, so a hang
 * fails the test instead of the suite. */
static void test_journal_fifo_does_not_hang(void)
{
    bk_filter_t *f = make_big();
    if (!f)
        return;
    unlink(path);
    unlink(journal);
    CHECK_OK(bk_filter_save(f, path));
    CHECK(mkfifo(journal, 0600) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        bk_filter_t *g = NULL;
        if (bk_filter_load(&g, path, NULL) != BK_OK)
            _exit(2);
        bk_filter_t *m = NULL;
        if (bk_filter_open(&m, path, BK_MAP_READONLY, NULL) != BK_OK)
            _exit(3);
        bk_filter_free(m);
        bk_checkpoint_t *cp = NULL;
        if (bk_checkpoint_new(&cp, g, path) != BK_OK)
            _exit(4);
        add_keys(g, 0, 50);
        if (bk_checkpoint_save(cp, g, NULL) != BK_OK)
            _exit(5);
        bk_checkpoint_free(cp);
        bk_filter_free(g);
        _exit(0);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "with a FIFO as the journal: status %d (SIGALRM %d: it hung)", status, SIGALRM);
    add_keys(f, 0, 50);
    CHECK(file_is(f));
    struct stat sb; /* the FIFO replaced by the checkpoint's own journal */
    CHECK(lstat(journal, &sb) == 0 && S_ISREG(sb.st_mode));
    bk_filter_free(f);
}

/* A backup copied over a file with a pending journal (cp keeps the inode
 * and the size) is the file now: the journal no longer applies, and the
 * backup is read as it is, not overwritten by the replay. */
static void test_backup_over_pending_journal(void)
{
    bk_filter_t *backup = make_big();
    if (!backup)
        return;
    add_keys(backup, 1000000, 1000400);
    char bpath[340];
    snprintf(bpath, sizeof bpath, "%s/backup.bk", dir);
    CHECK_OK(bk_filter_save(backup, bpath));
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *f = interrupted_checkpoint(&cp, NULL);
    size_t n = 0;
    uint8_t *bytes = bkt_slurp(bpath, &n);
    CHECK(bytes && overwrite(path, bytes, n, 0644));
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK(file_is(backup));
    CHECK(!exists(journal));
    CHECK(g && bk_filter_contains(g, "k1000007", 8));
    free(bytes);
    unlink(bpath);
    bk_filter_free(g);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
    bk_filter_free(backup);
}

/* A whole, applicable journal owned by somebody who could not write the
 * file (planted in a directory they can write) is never replayed; the
 * same journal owned by root is. Needs root to give a file away. */
static void test_strangers_journal_not_replayed(void)
{
    if (geteuid() != 0) {
        printf("  (skipped: giving the journal to another user needs root)\n");
        return;
    }
    bk_filter_t *before = NULL;
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *f = interrupted_checkpoint(&cp, &before);
    size_t jn = 0, bn = 0;
    uint8_t *jbytes = bkt_slurp(journal, &jn);
    char bpath[340];
    snprintf(bpath, sizeof bpath, "%s/before.bk", dir);
    CHECK_OK(bk_filter_save(before, bpath));
    uint8_t *bbytes = bkt_slurp(bpath, &bn);
    CHECK(jbytes && bbytes);
    /* the file as it was before the checkpoint (same inode), the journal
     * as the killed writer left it, both root's, the file 0644 */
    CHECK(bbytes && overwrite(path, bbytes, bn, 0644));
    CHECK(jbytes && overwrite(journal, jbytes, jn, 0644));
    CHECK(chown(journal, 65534, 65534) == 0);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK_MSG(file_is(before), "a stranger's journal was replayed into the file");
    bk_filter_free(g);
    /* root's own journal (the same bytes) is a killed writer's: replayed */
    CHECK(jbytes && overwrite(journal, jbytes, jn, 0644));
    CHECK(chown(journal, 0, 0) == 0);
    g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK(file_is(f));
    CHECK(!exists(journal));
    free(jbytes);
    free(bbytes);
    unlink(bpath);
    bk_filter_free(g);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
    bk_filter_free(before);
}

/* Loads path in a child that runs as nobody (when root), with the file
 * read-only to it: exit status 0 when the load succeeded and the filter
 * holds key. */
static int load_as_nobody_holds(const char *key)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(10);
        bk_filter_t *g = NULL;
        if (bk_filter_load(&g, path, NULL) != BK_OK)
            _exit(1);
        _exit(bk_filter_contains(g, key, strlen(key)) ? 0 : 2);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    return status;
}

/* The journal's size; 0 if there is none. */
static uint64_t journal_size(void)
{
    struct stat sb;
    return stat(journal, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* The first 4 KiB page after page 0 where two copies of the file differ:
 * a payload page some of the later keys set bits in. */
static size_t first_changed_page(const uint8_t *a, const uint8_t *b, size_t n)
{
    for (size_t at = 4096; at + 4096 <= n; at += 4096)
        if (memcmp(a + at, b + at, 4096) != 0)
            return at;
    return 0;
}

/* A big filter with 1,000 keys saved at path (no journal) and its
 * checkpointer, which keeps appending to a settled journal as if the
 * file's pages were still being written back. NULL if it cannot be made. */
static bk_filter_t *settled_start(bk_checkpoint_t **cp)
{
    bk_filter_t *f = make_big();
    if (!f)
        return NULL;
    add_keys(f, 0, 1000);
    unlink(path);
    unlink(journal);
    CHECK_OK(bk_filter_save(f, path));
    CHECK_OK(bk_checkpoint_new(cp, f, path));
    bki_test_retire = -1;
    return f;
}

/* A checkpoint leaves its journal settled: the file holds every run as
 * this boot's kernel has it, and the journal guards them until the file
 * is on disk. Loads read the file as it is (a reader without write
 * access too, replaying nothing); later checkpoints append to the
 * journal while the file is being written back. After a restart
 * (another boot id), or over a copy of the file as it was, every segment
 * is replayed in order; a page whose writeback was lost while the header
 * reached the disk is refused by its page checksum, never trusted. */
static void test_settled_journal(void)
{
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *f = settled_start(&cp);
    if (!f)
        return;
    size_t n0 = 0, n1 = 0, n2 = 0, jn = 0;
    uint8_t *v0 = bkt_slurp(path, &n0);
    bk_checkpoint_stats_t st;
    add_keys(f, 1000, 1300);
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK(!st.whole);
    uint64_t j1 = journal_size();
    CHECK_MSG(j1 > 0, "a checkpoint in place left no journal");
    uint8_t *v1 = bkt_slurp(path, &n1);
    add_keys(f, 1300, 1600);
    CHECK_OK(bk_checkpoint_save(cp, f, &st));
    CHECK(!st.whole);
    CHECK_MSG(journal_size() > j1, "the second checkpoint did not append (%llu -> %llu bytes)",
              (unsigned long long)j1, (unsigned long long)journal_size());
    CHECK(file_is(f));
    uint8_t *v2 = bkt_slurp(path, &n2), *jb = bkt_slurp(journal, &jn);
    CHECK(v0 && v1 && v2 && jb && n0 == n2 && n1 == n2);
    if (!v0 || !v1 || !v2 || !jb || n0 != n2 || n1 != n2)
        goto out;

    /* a reader without write access: reads it, replays nothing */
    chmod(dir, 0755);
    chmod(path, 0444);
    int status = load_as_nobody_holds("k1599");
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a reader without write access could not read a settled file (status %d)", status);
    chmod(path, 0644);
    chmod(dir, 0700);
    CHECK(journal_size() == jn);
    /* a load and a lookup read the journal's last record, not the
     * journal: bytes read, counted by the kernel */
    uint64_t before = bkt_proc_io("rchar");
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK(g && bk_filter_contains(g, "k1599", 5));
    uint64_t read = bkt_proc_io("rchar") - before;
    CHECK_MSG(read < jn / 2, "a load read %llu bytes beside a %zu-byte settled journal",
              (unsigned long long)read, jn);
    CHECK(g && bk_filter_verify(g, NULL) == BK_OK);
    bk_filter_free(g);
    CHECK_MSG(journal_size() == jn, "a load retired a settled journal");

    /* the file's writeback lost, all of it or the second checkpoint's,
     * in this boot or after a restart; or all of it on disk, then a
     * restart: the load replays both segments */
    for (int lost = 0; lost < 3; lost++) {
        for (unsigned reboot = 0; reboot < 2; reboot++) {
            if (lost == 2 && reboot == 0)
                continue; /* nothing lost, same boot: read as it is (above) */
            const uint8_t *was = lost == 0 ? v0 : lost == 1 ? v1 : v2;
            CHECK(overwrite(path, was, n2, 0644) && overwrite(journal, jb, jn, 0644));
            bki_test_reboots = reboot;
            g = NULL;
            CHECK_OK(bk_filter_load(&g, path, NULL));
            CHECK_MSG(file_is(f), "lost %d reboot %u: the segments were not replayed", lost,
                      reboot);
            CHECK_MSG(!exists(journal), "lost %d reboot %u: journal not removed", lost, reboot);
            CHECK(g && bk_filter_contains(g, "k1599", 5) && bk_filter_contains(g, "k1000", 5));
            bk_filter_free(g);
            bki_test_reboots = 0;
        }
    }

    /* One page's writeback lost, the header's not: in this boot the file
     * is read as it is and that page refused when touched; after a
     * restart the journal puts it back. */
    size_t at = first_changed_page(v1, v2, n2);
    CHECK(at > 0);
    uint8_t *torn = malloc(n2);
    if (torn && at > 0) {
        memcpy(torn, v2, n2);
        memcpy(torn + at, v1 + at, 4096);
        CHECK(overwrite(path, torn, n2, 0644) && overwrite(journal, jb, jn, 0644));
        g = NULL;
        CHECK_OK(bk_filter_load(&g, path, NULL));
        CHECK_MSG(g && bk_filter_verify(g, NULL) != BK_OK,
                  "a page that lost its writeback was trusted");
        char key[32];
        bool all = true; /* a damaged page answers "seen", never "absent" */
        for (int i = 0; i < 1600 && g; i++) {
            int len = snprintf(key, sizeof key, "k%d", i);
            all &= bk_filter_contains(g, key, (size_t)len);
        }
        CHECK_MSG(all, "a key added before the lost page answered absent");
        bk_filter_free(g);
        CHECK(exists(journal));
        bki_test_reboots = 1;
        g = NULL;
        CHECK_OK(bk_filter_load(&g, path, NULL));
        CHECK(file_is(f) && !exists(journal));
        CHECK(g && bk_filter_verify(g, NULL) == BK_OK);
        bk_filter_free(g);
        bki_test_reboots = 0;
    }
    free(torn);
out:
    bki_test_retire = 0;
    bki_test_reboots = 0;
    free(v0);
    free(v1);
    free(v2);
    free(jb);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

/* A journal of two settled segments, damaged at random (a byte changed,
 * cut short, bytes added after it), next to the file as it was before,
 * between or after them, in this boot or after a restart: every load
 * ends with the file one of those three states, whole, or fails with a
 * reason; never anything else (and never a sanitizer report, under
 * unit-san). */
static void test_damaged_journals(void)
{
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *f = settled_start(&cp);
    if (!f)
        return;
    size_t n0 = 0, n1 = 0, n2 = 0, jn = 0;
    uint8_t *v[3] = {bkt_slurp(path, &n0), NULL, NULL};
    add_keys(f, 1000, 1300);
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    v[1] = bkt_slurp(path, &n1);
    add_keys(f, 1300, 1600);
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    v[2] = bkt_slurp(path, &n2);
    uint8_t *jb = bkt_slurp(journal, &jn);
    bki_test_retire = 0;
    uint8_t *bad = jb ? malloc(jn + 64) : NULL;
    CHECK(v[0] && v[1] && v[2] && bad && n0 == n2 && n1 == n2);
    uint64_t seed = 4242;
    int ok = 0, refused = 0, wrong = 0;
    for (int round = 0; bad && v[0] && v[1] && v[2] && n0 == n2 && n1 == n2 && round < 300;
         round++) {
        size_t bn = jn;
        memcpy(bad, jb, jn);
        switch (bkt_rand(&seed) % 3) {
        case 0:
            bad[bkt_rand(&seed) % jn] ^= (uint8_t)(1 + bkt_rand(&seed) % 255);
            break;
        case 1:
            bn = (size_t)(bkt_rand(&seed) % jn);
            break;
        default:
            for (int i = 0; i < 64; i++)
                bad[jn + (size_t)i] = (uint8_t)bkt_rand(&seed);
            bn = jn + 1 + (size_t)(bkt_rand(&seed) % 64);
        }
        int was = (int)(bkt_rand(&seed) % 3);
        bki_test_reboots = (unsigned)(bkt_rand(&seed) % 2);
        if (!overwrite(path, v[was], n2, 0644) || !overwrite(journal, bad, bn, 0644)) {
            CHECK(false);
            break;
        }
        bk_filter_t *g = NULL;
        const char *why = NULL;
        bk_status_t st = bk_filter_load(&g, path, &why);
        if (st != BK_OK) {
            refused++;
            CHECK_MSG(why != NULL, "round %d: a refusal without a reason", round);
        } else {
            size_t gn = 0;
            uint8_t *now = bkt_slurp(path, &gn);
            bool legit = false;
            for (int k = 0; k < 3 && now; k++)
                legit |= gn == n2 && memcmp(now, v[k], n2) == 0;
            free(now);
            if (legit && bk_filter_verify(g, NULL) == BK_OK)
                ok++;
            else
                wrong++;
        }
        bk_filter_free(g);
        unlink(journal);
    }
    bki_test_reboots = 0;
    CHECK_MSG(wrong == 0, "%d of 300 damaged journals left a file that is none of its states",
              wrong);
    CHECK(ok > 0);
    printf("  (%d loaded, %d refused with a reason)\n", ok, refused);
    free(bad);
    free(jb);
    for (int k = 0; k < 3; k++)
        free(v[k]);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

/* How many journal segments the journal holds (their magic, counted). */
static int journal_segments(void)
{
    static const uint8_t magic[8] = {0x89, 'B', 'K', 'J', '\r', '\n', 0x1a, '\n'};
    size_t n = 0;
    uint8_t *b = bkt_slurp(journal, &n);
    int count = 0;
    for (size_t i = 0; b && i + 8 <= n; i++)
        count += memcmp(b + i, magic, 8) == 0;
    free(b);
    return count;
}

/* A writer killed while appending a segment to a settled journal leaves
 * the file as the settled segments have it: read as it is in this boot,
 * the torn segment never replayed after a restart, and cut off by the
 * next checkpoint. A settled journal whose file is written back is
 * retired by the next checkpoint, which starts a journal of its own. */
static void test_torn_append_and_retire(void)
{
    bk_checkpoint_t *cp = NULL;
    bk_filter_t *f = settled_start(&cp);
    if (!f)
        return;
    add_keys(f, 1000, 1300);
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    bk_filter_t *after1 = NULL;
    CHECK_OK(bk_filter_clone(&after1, f));
    uint64_t j1 = journal_size();
    add_keys(f, 1300, 1600);
    bki_checkpoint_crash = 1; /* the appended segment torn */
    CHECK_STATUS(bk_checkpoint_save(cp, f, NULL), BK_EIO);
    CHECK(journal_size() > j1);
    for (unsigned reboot = 0; reboot < 2; reboot++) {
        bki_test_reboots = reboot;
        bk_filter_t *g = NULL;
        CHECK_OK(bk_filter_load(&g, path, NULL));
        CHECK_MSG(after1 && file_is(after1), "reboot %u: the file is not the settled checkpoint",
                  reboot);
        CHECK(g && bk_filter_contains(g, "k1299", 5) && bk_filter_verify(g, NULL) == BK_OK);
        bk_filter_free(g);
        CHECK(reboot == 0 ? journal_size() > j1 : !exists(journal));
    }
    bki_test_reboots = 0;
    /* the writer goes on: a whole save (it trusts nothing of a failed
     * checkpoint), then checkpoints in place again */
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    CHECK(file_is(f));
    add_keys(f, 1600, 1700);
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    add_keys(f, 1700, 1800);
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    CHECK_MSG(journal_segments() == 2, "appending: %d segments", journal_segments());
    /* As decided for real: a young, small journal is appended to; one
     * older than the kernel's writeback delay (its file is on disk by
     * then) is retired first, the checkpoint starting a journal anew. */
    bki_test_retire = 0;
    add_keys(f, 1800, 1850);
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    CHECK_MSG(journal_segments() == 3, "a young journal: %d segments", journal_segments());
    struct timespec hour_ago[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    CHECK(utimensat(AT_FDCWD, journal, hour_ago, 0) == 0);
    add_keys(f, 1850, 1900);
    CHECK_OK(bk_checkpoint_save(cp, f, NULL));
    CHECK_MSG(journal_segments() == 1, "retired: %d segments", journal_segments());
    CHECK(file_is(f));
    bki_test_reboots = 1; /* and a restart replays only what that one holds */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    CHECK(file_is(f) && !exists(journal));
    bk_filter_free(g);
    bki_test_reboots = 0;
    /* Checkpoints in quick succession: the journal never grows past the
     * file's size (here its 1 MiB floor), retired or not kept when it
     * would; and each leaves the file a save would write (its page sums
     * too: a key's bits in the payload's first or last sector, which the
     * metadata or the padding share, once left its page's sum stale). */
    struct stat fsb;
    CHECK(stat(path, &fsb) == 0);
    uint64_t limit = (uint64_t)fsb.st_size < (1u << 20) ? (1u << 20) : (uint64_t)fsb.st_size;
    uint64_t biggest = 0;
    int differs = -1;
    for (int r = 0; r < 30; r++) {
        add_keys(f, 2000 + 300 * (uint64_t)r, 2300 + 300 * (uint64_t)r);
        CHECK_OK(bk_checkpoint_save(cp, f, NULL));
        biggest = journal_size() > biggest ? journal_size() : biggest;
        if (differs < 0 && !file_is(f))
            differs = r;
    }
    CHECK_MSG(biggest > 0 && biggest <= limit, "the journal reached %llu bytes (file %llu)",
              (unsigned long long)biggest, (unsigned long long)fsb.st_size);
    CHECK_MSG(differs < 0, "round %d's checkpoint is not the filter", differs);
    bki_test_retire = 0;
    bk_filter_free(after1);
    bk_checkpoint_free(cp);
    bk_filter_free(f);
}

static uint64_t keys_after(uint32_t round)
{
    return (uint64_t)round * 2000 + (uint64_t)(round / 5) * 100000;
}

/* A child adds keys in rounds and checkpoints after each, telling the
 * parent through a pipe which round is durable; the parent kills it at a
 * random instant. The file must then load and be, byte for byte, the
 * filter after the last round reported or the one after it. */
static void test_sigkill_at_random(void)
{
    /* Most rounds are written in place; every fifth fills much of the
     * filter and is written whole. */
    uint64_t seed = 12345;
    int rounds_seen_mid = 0;
    for (int trial = 0; trial < 16; trial++) {
        unlink(path);
        unlink(journal);
        int fds[2];
        if (pipe(fds) != 0) {
            CHECK(false);
            return;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            bk_filter_t *f = make_big();
            bk_checkpoint_t *cp = NULL;
            if (!f || bk_checkpoint_new(&cp, f, path) != BK_OK)
                _exit(1);
            for (uint32_t r = 1;; r++) {
                add_keys(f, keys_after(r - 1), keys_after(r));
                if (bk_checkpoint_save(cp, f, NULL) != BK_OK)
                    _exit(2);
                if (write(fds[1], &r, sizeof r) != sizeof r)
                    _exit(3);
            }
        }
        close(fds[1]);
        uint32_t r = 0, last = 0;
        /* let some rounds pass, then kill within the next */
        struct timespec ts = {0, (long)(bkt_rand(&seed) % 30000000)};
        while (read(fds[0], &r, sizeof r) == sizeof r) {
            last = r;
            if (r >= 2)
                break;
        }
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        while (read(fds[0], &r, sizeof r) == sizeof r)
            last = r;
        close(fds[0]);
        if (exists(journal))
            rounds_seen_mid++;
        bk_filter_t *g = NULL;
        CHECK_OK(bk_filter_load(&g, path, NULL));
        bool match = false;
        for (uint32_t k = last; k <= last + 1 && !match; k++) {
            bk_filter_t *want = make_big();
            add_keys(want, 0, keys_after(k));
            match = file_is(want);
            bk_filter_free(want);
        }
        CHECK_MSG(match, "trial %d: the file is not round %u or %u", trial, last, last + 1);
        bk_filter_free(g);
    }
    /* Not a check: how often a kill fell between journal and file. */
    printf("  (%d of 16 kills left a journal to finish)\n", rounds_seen_mid);
}

int main(void)
{
    if (!bkt_tmpdir(dir, sizeof dir, "bk-ckpt"))
        return 1;
    paths();
    bkt_run("every_shape_matches_serialize", test_every_shape_matches_serialize);
    bkt_run("few_keys_write_few_pages", test_few_keys_write_few_pages);
    bkt_run("replaced_file_written_whole", test_replaced_file_written_whole);
    bkt_run("interrupted", test_interrupted);
    bkt_run("unfinished_needs_write_access", test_unfinished_needs_write_access);
    bkt_run("unreadable_journal_is_an_error", test_unreadable_journal_is_an_error);
    bkt_run("stale_journal_ignored", test_stale_journal_ignored);
    bkt_run("journal_link_not_followed", test_journal_link_not_followed);
    bkt_run("journal_fifo_does_not_hang", test_journal_fifo_does_not_hang);
    bkt_run("backup_over_pending_journal", test_backup_over_pending_journal);
    bkt_run("strangers_journal_not_replayed", test_strangers_journal_not_replayed);
    bkt_run("settled_journal", test_settled_journal);
    bkt_run("torn_append_and_retire", test_torn_append_and_retire);
    bkt_run("damaged_journals", test_damaged_journals);
    bkt_run("sigkill_at_random", test_sigkill_at_random);
    bkt_tmpdir_remove(dir); /* with the temporary files killed children left */
    return bkt_finish();
}
