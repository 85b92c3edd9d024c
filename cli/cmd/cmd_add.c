/*
 * bloomkit add: adds the lines of the inputs to a filter file and reports
 * how many were new. The filter is loaded, updated in memory and saved
 * atomically, so an error part-way (a bad input) leaves the file exactly as
 * it was; a full non-scaling filter keeps the lines that fit, as
 * RedisBloom's BF.MADD does.
 */
#define _GNU_SOURCE
#include "remote.h"
#include "batch.h"
#include "commands.h"
#include "filterfile.h"
#include "lines.h"
#include "message.h"
#include "filter_inputs.h"
#include "options.h"
#include "window_opt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: bloomkit add FILE [INPUT...]\n"
    "\n"
    "Adds each line of the INPUTs (files, or - for standard input; default\n"
    "standard input) to the filter FILE, then saves it atomically. Reports\n"
    "how many lines were new on standard error. On an error FILE is left\n"
    "unchanged, but for a full non-scaling filter: the lines before the one\n"
    "that did not fit are kept (exit 2). A filter left far past its capacity\n"
    "(expected false-positive rate over twice the one it was sized for) is\n"
    "saved, said so, and the exit status is 3. A window filter records each\n"
    "line as added now (a time window: at the wall clock), and forgets it once\n"
    "it leaves the window.\n"
    "FILE may be redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME, a filter in Redis\n"
    "(see dedup --redis): the lines are claimed there as dedup claims them.\n"
    "\n"
    "      --normalize M  url or email: canonicalize keys first (see bloomkit(1))\n"
    "      --no-wait      if another process is writing FILE, fail (exit 2)\n"
    "                     instead of waiting for it\n"
    "  -q, --quiet        no progress, summary or warnings\n"
    "      --progress     progress and the summary even when not on a terminal\n"
    "  -h, --help         this text\n";

/* Ctrl-C, SIGTERM and SIGHUP end the run after the lines read so far:
 * they are added and saved, and the run says so (exit 128 + the signal),
 * rather than die with nothing kept (bkc_catch_endings). */
static volatile sig_atomic_t stop_signal;

#define STOPPED 100

typedef struct {
    bk_filter_t *f;
    const char *path;
    bkc_progress_t *prog;
    bkc_batch_t batch;
    bool full; /* a non-scaling filter filled up: save what fit, exit 2 */
} add_ctx_t;

static int flush(add_ctx_t *c, const bkc_reader_t *r)
{
    bkc_batch_t *b = &c->batch;
    if (b->n == 0)
        return 0;
    bkc_batch_keys(b);
    uint64_t n_new = 0;
    bkc_window_tick(c->f); /* a time window's lines are added as of now */
    size_t at;
    bk_status_t st = bk_filter_add_batch_done(c->f, b->keys, b->n, NULL, &n_new, &at);
    if (st != BK_OK) {
        bkc_progress_clear(c->prog);
        /* the keys before the failing one (at) are in the filter */
        uint64_t line = b->lineno[at < b->n ? at : b->n - 1];
        if (st == BK_EFULL) {
            /* As BF.MADD does: what fit is kept. */
            c->full = true;
            char why[200] = "";
            (void)bk_filter_full_reason(c->f, why, sizeof why);
            bkc_error("%s: the filter is full (%s) at %s line %llu: the %llu lines before it "
                      "were added and saved, that line and the rest were not",
                      c->path, why[0] ? why : "non-scaling", bkc_reader_name(r),
                      (unsigned long long)line, (unsigned long long)(c->prog->items + at));
        } else if (bkc_filter_damaged(c->f, c->path) == 0) {
            bkc_error("%s: cannot add %s line %llu: %s; file left unchanged", c->path,
                      bkc_reader_name(r), (unsigned long long)line, bk_strerror(st));
        } else {
            bkc_error("%s: file left unchanged", c->path);
        }
        return BKC_EXIT_ERROR;
    }
    bkc_progress_count(c->prog, b->n, n_new);
    bkc_batch_reset(b);
    return 0;
}

static int add_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                    const bkc_reader_t *r)
{
    (void)line;
    (void)len;
    add_ctx_t *c = vctx;
    /* Only the key is kept: `add` prints nothing per line. */
    if (bkc_batch_push(&c->batch, key, klen, key, klen) != 0)
        return bkc_line_error(c->prog, r, "out of memory");
    bkc_batch_set_line(&c->batch, bkc_reader_lineno(r));
    int rc = bkc_batch_full(&c->batch) ? flush(c, r) : 0;
    if (rc == 0 && stop_signal)
        rc = flush(c, r) ? BKC_EXIT_ERROR : STOPPED;
    return rc;
}

static int add_end(void *vctx, const bkc_reader_t *r)
{
    return flush(vctx, r);
}

int bkc_cmd_add(int argc, char **argv)
{
    bkc_input_opts_t in;
    bkc_lock_t lock = BKC_LOCK_NONE;
    bk_filter_t *f;
    const char *path;
    int rc = bkc_filter_inputs_options(argc, argv, usage, &in);
    if (rc >= 0)
        return rc;
    if (optind < argc && bkc_is_remote(argv[optind])) {
        bkc_remote_opts_t ro = {.url = argv[optind]};
        return bkc_remote_add(&ro, argv + optind + 1, argc - optind - 1, &in);
    }
    rc = bkc_filter_inputs_load(argc, argv, &in, &f, &path, &lock);
    if (rc >= 0)
        return rc;
    bkc_progress_t prog;
    bkc_progress_init(&prog, in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    prog.has_fresh = true;
    prog.filter = f;
    add_ctx_t ctx = {.f = f, .path = path, .prog = &prog};
    bkc_batch_init(&ctx.batch);
    bkc_catch_endings(&stop_signal);
    rc = bkc_for_each_line(argv + optind, argc - optind, in.norm, &prog, add_line, add_end, &ctx);
    bkc_batch_free(&ctx.batch);
    bool stopped = rc == STOPPED || (rc == 0 && stop_signal);
    if (stopped)
        rc = 0;
    if ((rc == 0 || ctx.full) && bkc_save_loaded(f, path) != 0)
        rc = BKC_EXIT_ERROR;
    bkc_lock_release(&lock);
    if (stopped) {
        bkc_progress_clear(&prog);
        if (rc == 0)
            bkc_error("%s: interrupted: the %llu lines read before it were added and saved",
                      path, (unsigned long long)prog.items);
        else
            bkc_error("%s: interrupted, and the lines read before it could not be saved; "
                      "the file is as it was",
                      path);
        rc = 128 + stop_signal;
    }
    /* The summary is for a person watching (a terminal, or --progress): a
     * cron job's mail stays empty when all went well. Warnings are not
     * summaries: they go out unless -q. */
    bkc_progress_finish(&prog, rc == 0 && prog.enabled, "");
    if (rc == 0 && bkc_far_over_capacity(f, path,
                                         "The lines were added, but its answers are "
                                         "unreliable: make a filter whose -n is the number of "
                                         "distinct lines it must hold (or --kind scalable) and "
                                         "add them to it"))
        rc = BKC_EXIT_OVER; /* said even with -q: the exit status changes */
    else if (rc == 0 && in.pmode != BKC_PROGRESS_OFF)
        bkc_warn_over_capacity(f, path, "absent keys are now found with probability");
    bk_filter_free(f);
    return rc;
}
