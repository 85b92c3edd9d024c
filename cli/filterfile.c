/*
 * Loading and saving filter files for the subcommands (see filterfile.h):
 * the library does the work and returns a status; this file turns a
 * failure into one message that names the file.
 */
#define _GNU_SOURCE
#include "filterfile.h"
#include "numbers.h"
#include "mapguard.h"
#include "message.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Whether the file at path starts with text (as an input does): its
 * first bytes are printable, blanks or line ends, or UTF-8. */
static bool starts_with_text(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return false;
    unsigned char b[256];
    size_t n = fread(b, 1, sizeof b, fp);
    fclose(fp);
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (b[i] < 0x20 && b[i] != '\n' && b[i] != '\r' && b[i] != '\t')
            return false;
    return true;
}

/* A file that is not a filter but text was most likely an input given
 * where the filter goes (`bloomkit check urls.txt seen.bk`): say so. */
static bool explain_text_operand(const char *path, bk_status_t st, const char *why)
{
    if (st != BK_ECORRUPT || !why || !strstr(why, "bad magic") || !starts_with_text(path))
        return false;
    bkc_error("%s: not a bloomkit filter file: it holds text, like an input. The filter "
              "file comes first: bloomkit %s FILE [INPUT...]",
              path, bkc_cmd_name);
    return true;
}

static void status_message(const char *path, const char *doing, bk_status_t st, const char *why)
{
    if (explain_text_operand(path, st, why))
        return;
    /* An I/O error says errno's words, and the library's reason too when it
     * gave one: "Permission denied" alone does not tell a read-only user
     * that an interrupted checkpoint's journal must be finished first. */
    if ((st == BK_EIO || st == BK_ENOSPC) && why && *why && errno)
        bkc_error("%s: %s: %s: %s", path, doing, why, strerror(errno));
    else if (st == BK_EIO || st == BK_ENOSPC)
        bkc_error("%s: %s: %s", path, doing, errno ? strerror(errno) : bk_strerror(st));
    else if (why && *why)
        bkc_error("%s: %s: %s (%s)", path, doing, bk_strerror(st), why);
    else
        bkc_error("%s: %s: %s", path, doing, bk_strerror(st));
}

bk_filter_t *bkc_load_filter(const char *path)
{
    bk_filter_t *f = NULL;
    const char *why = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        bkc_error("%s: %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(sb.st_mode)) {
        bkc_error("%s: %s", path, strerror(EISDIR));
        return NULL;
    }
    errno = 0;
    bk_status_t st = bk_filter_load(&f, path, &why);
    if (st != BK_OK) {
        status_message(path, "cannot load filter", st, why);
        return NULL;
    }
    return f;
}

bk_filter_t *bkc_load_filter_locked(const char *path, bkc_lock_t *lock)
{
    int rc = bkc_lock_take(path, lock);
    if (rc == 1)
        bkc_error("%s: %s", path, strerror(ENOENT));
    if (rc != 0)
        return NULL;
    bk_filter_t *f = bkc_load_filter(path);
    /* Taken to be changed: a static filter never is (fuse8, fuse16, fuse32). */
    if (f && (bk_kind_caps(bk_filter_kind(f)) & BK_CAP_STATIC)) {
        const char *k = bk_kind_name(bk_filter_kind(f));
        bkc_error("%s: a static filter (%s) holds exactly the keys it was built from and is "
                  "never changed: build it again with the new keys (bloomkit create --kind %s "
                  "FILE INPUT...); file left unchanged",
                  path, k, k);
        bk_filter_free(f);
        f = NULL;
    }
    if (!f)
        bkc_lock_release(lock);
    return f;
}

bk_filter_t *bkc_filter_operand(int argc, char **argv, bool map, const char **path)
{
    if (optind >= argc) {
        bkc_usage_error("FILE is required");
        return NULL;
    }
    *path = argv[optind++];
    if (!map)
        return bkc_load_filter(*path);
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_open(&f, *path, BK_MAP_READONLY, &why);
    if (st != BK_OK) {
        if (explain_text_operand(*path, st, why))
            return NULL;
        if (why)
            bkc_error("%s: cannot open filter: %s (%s)", *path, bk_strerror(st), why);
        else
            bkc_error("%s: cannot open filter: %s", *path, bk_strerror(st));
        return NULL;
    }
    const void *addr;
    size_t len;
    /* A full guard table only loses the message. */
    if (bk_filter_mapping(f, &addr, &len) == BK_OK)
        (void)bkc_map_guard(addr, len, *path);
    return f;
}

void bkc_filter_operand_free(bk_filter_t *f)
{
    const void *addr;
    if (f && bk_filter_mapping(f, &addr, NULL) == BK_OK)
        bkc_map_unguard(addr);
    bk_filter_free(f);
}

int bkc_filter_damaged(const bk_filter_t *f, const char *path)
{
    const char *why = NULL;
    bk_status_t st = bk_filter_damage(f, &why);
    if (st == BK_OK)
        return 0;
    bkc_error("%s: damaged: %s%s%s; stopped before printing the answers that read it "
              "(bloomkit info --verify %s checks every page)",
              path, bk_strerror(st), why ? ": " : "", why ? why : "", path);
    return -1;
}

int bkc_verify_mapped(const bk_filter_t *f, const char *path)
{
    const char *why = NULL;
    bk_status_t st = bk_filter_verify(f, &why);
    if (st == BK_OK)
        return 0;
    bkc_error("%s: damaged: %s%s%s (without --mmap it is refused too; --no-verify skips this "
              "check)",
              path, bk_strerror(st), why ? ": " : "", why ? why : "");
    return -1;
}

/* 0 for a save that succeeded, else -1 after a message naming path and
 * the step that failed (why, from the library). */
static int save_status(const char *path, bk_status_t st, const char *why)
{
    if (st == BK_ENOTFILE) {
        /* the library refuses to replace anything but a regular file */
        bkc_error("%s: cannot save filter: not a regular file (%s); left unchanged", path,
                  errno == EISDIR ? "a directory" : "a device, FIFO or socket");
        return -1;
    }
    if ((st == BK_EIO || st == BK_ENOSPC) && why) {
        int err = errno;
        bkc_error("%s: cannot save filter: %s: %s", path, why,
                  err ? strerror(err) : bk_strerror(st));
        return -1;
    }
    if (st != BK_OK) {
        status_message(path, "cannot save filter", st, why);
        return -1;
    }
    return 0;
}

/* Saves f at path: replacing what is there, or (only_new) only where
 * nothing is yet. 0, or -1 after a message. */
static int save_filter(const bk_filter_t *f, const char *path, bool only_new)
{
    errno = 0;
    const char *why = NULL;
    bk_status_t st = bk_filter_save_why(f, path, only_new, &why);
    if (only_new && st == BK_EEXIST) {
        bkc_error("%s: not written: another process created it while this one worked (it "
                  "is left as that process wrote it)",
                  path);
        return -1;
    }
    return save_status(path, st, why);
}

int bkc_save_filter(const bk_filter_t *f, const char *path)
{
    return save_filter(f, path, false);
}

int bkc_save_loaded(const bk_filter_t *f, const char *path)
{
    uint64_t pages = 0;
    bk_filter_pages(f, NULL, &pages);
    if (pages == 0)
        return save_filter(f, path, false);
    /* A paged file: the pages the adds changed, in place through a journal
     * (crash-safe as a whole save is), not a new 2 GB file for ten lines. */
    bk_checkpoint_t *cp = bkc_checkpoint_start(f, path);
    int rc = cp ? bkc_checkpoint_save(cp, f, path) : -1;
    bk_checkpoint_free(cp);
    return rc;
}

int bkc_save_new_filter(const bk_filter_t *f, const char *path)
{
    return save_filter(f, path, true);
}

bk_checkpoint_t *bkc_checkpoint_start(const bk_filter_t *f, const char *path)
{
    bk_checkpoint_t *cp = NULL;
    bk_status_t st = bk_checkpoint_new(&cp, f, path);
    if (st != BK_OK)
        bkc_error("%s: cannot prepare checkpoints: %s", path, bk_strerror(st));
    return cp;
}

int bkc_checkpoint_save(bk_checkpoint_t *cp, const bk_filter_t *f, const char *path)
{
    errno = 0;
    return save_status(path, bk_checkpoint_save(cp, f, NULL), NULL);
}

/* Whether f is far past its capacity, with its figures in *in. */
static bool far_over(const bk_filter_t *f, bk_filter_info_t *in)
{
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    /* the shape is O(1); the info (its expected FPR) reads the payload,
     * so only for a filter already past its capacity */
    if ((bk_kind_caps(sh.kind) & BK_CAP_BOUNDED) || sh.items <= sh.capacity)
        return false;
    (void)bk_filter_info_fast(f, in); /* a paged file: its items say enough */
    return in->items > in->capacity && in->expected_fpr > 2 * in->fpr_target;
}

void bkc_warn_far_over_capacity(const bk_filter_t *f, const char *name)
{
    bk_filter_info_t in;
    if (far_over(f, &in))
        bkc_error("%s: warning: far over capacity (%llu items in a filter sized for %llu): "
                  "absent keys are found with probability %.3g (sized for %g)",
                  name, (unsigned long long)in.items, (unsigned long long)in.capacity,
                  in.expected_fpr, in.fpr_target);
}

bool bkc_far_over_capacity(const bk_filter_t *f, const char *name, const char *advice)
{
    bk_filter_info_t in;
    if (!far_over(f, &in))
        return false;
    bkc_error("%s: far over capacity: %llu items in a filter sized for %llu, so absent keys "
              "are found with probability %.3g (sized for %g). %s",
              name, (unsigned long long)in.items, (unsigned long long)in.capacity,
              in.expected_fpr, in.fpr_target, advice);
    return true;
}

void bkc_warn_over_capacity(const bk_filter_t *f, const char *name, const char *what)
{
    unsigned caps = bk_kind_caps(bk_filter_kind(f));
    if ((caps & BK_CAP_BOUNDED) && !(caps & BK_CAP_WINDOW))
        return; /* a chain: grows instead, or refuses when non-scaling */
    /* The shape is O(1); the info counts the payload's set bits (0.15 s at
     * the end of every run over the README's 1.9 GB seen-set, on 2 cores),
     * so only for a window or a filter past its capacity, the two cases
     * with something to say. */
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    if (!(caps & BK_CAP_WINDOW) && sh.items <= sh.capacity)
        return;
    bk_filter_info_t in;
    (void)bk_filter_info_fast(f, &in);
    /* A window holds up to G / (G - 1) of its capacity by design. A time
     * window is over it only when more lines than its capacity came within
     * one span: it then forgets its oldest early (slotted windows), or its
     * false-positive rate rises (windows made before slots). */
    if (caps & BK_CAP_WINDOW) {
        if (in.window_cleared_early)
            bkc_error("%s: warning: more than %llu lines within one window; the oldest were "
                      "forgotten early and may be printed again (use a larger -n)",
                      name, (unsigned long long)in.capacity);
        else if (in.expected_fpr > in.fpr_target)
            bkc_error("%s: warning: more lines per window than the %llu it was sized for; %s "
                      "%.3g (sized for %g; use a larger -n)",
                      name, (unsigned long long)in.capacity, what, in.expected_fpr, in.fpr_target);
        return;
    }
    if (in.items > in.capacity)
        bkc_error("%s: warning: %llu items exceed the capacity %llu; %s %.3g (sized for %g; "
                  "use a larger -n)",
                  name, (unsigned long long)in.items, (unsigned long long)in.capacity, what,
                  in.expected_fpr, in.fpr_target);
}

int bkc_new_filter_fits(const bk_filter_t *f, const char *path, bool force, const char *override)
{
    if (force)
        return 0;
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    uint64_t have = 0;
    bk_status_t st = bk_room_for(sh.bytes, path, &have); /* path NULL: in memory only */
    if (st == BK_OK)
        return 0;
    char a[32], b[32];
    bkc_human_bytes((double)sh.bytes, a, sizeof a);
    bkc_human_bytes((double)have, b, sizeof b);
    bkc_error("%s: a filter for %llu keys at an error rate of %g takes %s, more than the %s %s "
              "(check -n and -p for a typo; %s)",
              path ? path : "the seen-set", (unsigned long long)sh.capacity, sh.fpr_target, a, b,
              st == BK_ENOMEM ? "of memory this machine has available" : "free on its file system",
              override);
    return -1;
}
