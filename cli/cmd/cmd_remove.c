/*
 * bloomkit remove: takes keys out of a counting or cuckoo filter. Only these
 * filters can forget a key; on any other kind the command refuses before
 * reading input, with the file untouched. A key whose counters show it was
 * never added is reported with its file and line (it cannot be removed
 * without creating false negatives) and makes the exit status 1.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "filterfile.h"
#include "lines.h"
#include "message.h"
#include "filter_inputs.h"
#include "lineset.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: bloomkit remove FILE [INPUT...]\n"
    "\n"
    "Removes one occurrence of each line of the INPUTs (files, or - for\n"
    "standard input; default standard input) from the counting or cuckoo filter FILE,\n"
    "then saves it atomically. Lines whose key is not in the filter are\n"
    "reported and left alone. Remove only keys that were added: a key never\n"
    "added that the filter finds anyway (a false positive) takes out another\n"
    "key's fingerprint or counts, and that key may then read as absent.\n"
    "Exit status: 0 if every key was removed, 1 if some were not in the\n"
    "filter, 2 on error (FILE is then unchanged; other kinds than counting\n"
    "cannot remove keys).\n"
    "\n"
    "      --added LIST   remove only the lines also in the file LIST (the keys\n"
    "                     you added, one a line): a line never added that the\n"
    "                     filter finds anyway (a false positive) would take out\n"
    "                     another key's fingerprint or counts, and that key\n"
    "                     could then read as absent; with LIST it is reported\n"
    "                     and left alone instead\n"
    "      --normalize M  url or email: canonicalize keys first (see bloomkit(1))\n"
    "      --no-wait      if another process is writing FILE, fail (exit 2)\n"
    "                     instead of waiting for it\n"
    "  -q, --quiet        no progress, summary or per-key reports\n"
    "      --progress     progress and summaries even when not on a terminal\n"
    "  -h, --help         this text\n";

#define MAX_REPORTS 10

typedef struct {
    bk_filter_t *f;
    const char *path;
    bkc_progress_t *prog;
    uint64_t missing;
    bool quiet;
    bkc_lineset_t *added; /* --added: the keys the caller vouches were added */
    const char *added_path;
} remove_ctx_t;

/* The set's hash of a key: any fixed 64-bit hash (equal keys, equal hashes). */
static uint64_t key_hash(const char *key, size_t klen)
{
    return bk_hash_raw(BK_HASH_XXH3, 0, key, klen);
}

static int added_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                      const bkc_reader_t *r)
{
    (void)line;
    (void)len;
    bkc_lineset_t *set = vctx;
    int st = bkc_lineset_insert(set, key_hash(key, klen), key, klen);
    if (st == BKC_SET_FULL || st == BKC_SET_NOMEM)
        return bkc_line_error(NULL, r, "the --added list does not fit in memory");
    return 0;
}

/* Takes --added LIST (or --added=LIST) out of argv, which the shared
 * option parser then reads as before. *list: LIST, or NULL. Returns the
 * new argc. */
static int take_added(int argc, char **argv, const char **list)
{
    *list = NULL;
    int out = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc)
                argv[out++] = argv[i++];
            break;
        }
        if (strncmp(argv[i], "--added=", 8) == 0) {
            *list = argv[i] + 8;
            continue;
        }
        if (strcmp(argv[i], "--added") == 0 && i + 1 < argc) {
            *list = argv[++i];
            continue;
        }
        argv[out++] = argv[i];
    }
    argv[out] = NULL;
    return out;
}

static int remove_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                       const bkc_reader_t *r)
{
    (void)line;
    (void)len;
    remove_ctx_t *c = vctx;
    if (c->added && !bkc_lineset_stamp(c->added, key_hash(key, klen), key, klen)) {
        /* not vouched for: never removed, whatever the filter says */
        c->prog->items++;
        c->missing++;
        char shown[BKC_SHOWN_MAX];
        if (!c->quiet && c->missing <= MAX_REPORTS)
            bkc_line_error(c->prog, r, "'%s' is not in %s (--added); not removed",
                           bkc_shown(key, klen, shown), c->added_path);
        return 0;
    }
    bk_status_t st = bk_filter_remove(c->f, key, klen);
    c->prog->items++;
    if (st == BK_OK) {
        c->prog->fresh++;
        return 0;
    }
    if (st == BK_ENOTFOUND) {
        c->missing++;
        char shown[BKC_SHOWN_MAX];
        if (!c->quiet && c->missing <= MAX_REPORTS)
            bkc_line_error(c->prog, r, "'%s' is not in %s; not removed",
                           bkc_shown(key, klen, shown), c->path);
        if (!c->quiet && c->missing == MAX_REPORTS + 1) {
            bkc_progress_clear(c->prog);
            bkc_error("%s: more keys are not in it; they are counted in the summary, not "
                      "listed (the first %d were)",
                      c->path, MAX_REPORTS);
        }
        return 0;
    }
    bkc_progress_clear(c->prog);
    bkc_error("%s: cannot remove %s line %llu: %s; file left unchanged", c->path,
              bkc_reader_name(r), (unsigned long long)bkc_reader_lineno(r), bk_strerror(st));
    return BKC_EXIT_ERROR;
}

int bkc_cmd_remove(int argc, char **argv)
{
    bkc_input_opts_t in;
    bkc_lock_t lock = BKC_LOCK_NONE;
    bk_filter_t *f;
    const char *path, *added_path;
    argc = take_added(argc, argv, &added_path);
    int rc = bkc_filter_inputs_command(argc, argv, usage, &in, &f, &path, &lock);
    if (rc >= 0)
        return rc;
    if (!(bk_kind_caps(bk_filter_kind(f)) & BK_CAP_REMOVE)) {
        const char *k = bk_kind_name(bk_filter_kind(f));
        bkc_error("%s: remove needs a counting or cuckoo filter, this one is %s (create one "
                  "with --kind cuckoo or --kind counting); file left unchanged",
                  path, k ? k : "of an unknown kind");
        bkc_lock_release(&lock);
        bk_filter_free(f);
        return BKC_EXIT_ERROR;
    }
    bkc_progress_t prog;
    bkc_progress_init(&prog, in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    remove_ctx_t ctx = {f, path, &prog, 0, in.pmode == BKC_PROGRESS_OFF, NULL, added_path};
    if (added_path) {
        /* the list in memory, its keys spelled as the inputs' are */
        uint64_t mem = bk_memory_available();
        ctx.added = bkc_lineset_new(mem ? (size_t)(mem / 2) : (size_t)1 << 30);
        char *one[] = {(char *)added_path};
        rc = ctx.added ? bkc_for_each_line(one, 1, in.norm, NULL, added_line, NULL, ctx.added)
                       : BKC_EXIT_ERROR;
        if (rc != 0) {
            if (!ctx.added)
                bkc_error("out of memory for the --added list");
            bkc_lineset_free(ctx.added);
            bkc_lock_release(&lock);
            bk_filter_free(f);
            return BKC_EXIT_ERROR;
        }
    }
    rc = bkc_for_each_line(argv + optind, argc - optind, in.norm, &prog, remove_line, NULL, &ctx);
    bkc_lineset_free(ctx.added);
    if (rc == 0 && bkc_save_loaded(f, path) != 0)
        rc = BKC_EXIT_ERROR;
    bkc_lock_release(&lock);
    char what[96];
    snprintf(what, sizeof what, "%llu removed, %llu not in the filter, of ",
             (unsigned long long)prog.fresh, (unsigned long long)ctx.missing);
    bkc_progress_finish(&prog, rc == 0 && prog.enabled, what); /* terminal or --progress */
    bk_filter_free(f);
    if (rc)
        return BKC_EXIT_ERROR;
    return ctx.missing ? BKC_EXIT_NO : BKC_EXIT_YES;
}
