/*
 * bloomkit dedup: passes each line through once, the crawler's "have I
 * fetched this URL?" set. Memory is the filter's size whatever the input
 * size; the price is that a new line is dropped with probability at most
 * the filter's false-positive rate. With --state the seen-set is loaded
 * from a filter file and saved back (atomically) at the end, so lines seen
 * in earlier runs are dropped too. Output lines are those of the input with
 * their line end written as "\n".
 */
#define _GNU_SOURCE
#include "batch.h"
#include "commands.h"
#include "filterfile.h"
#include "lines.h"
#include "message.h"
#include "options.h"
#include "output.h"
#include "window_opt.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: bloomkit dedup [--state FILE] [-n N] [-p P] [INPUT...]\n"
    "\n"
    "Prints each line of the INPUTs (files, or - for standard input; default\n"
    "standard input) the first time it is seen, in constant memory. A new\n"
    "line is wrongly dropped with probability at most P (the filter's\n"
    "false-positive rate). Without --state the seen-set lives for one run.\n"
    "With a window (--window, or a --state file made by create --window) a\n"
    "line is printed again once its last printing has left the window: the\n"
    "crawler's \"re-fetch a URL not fetched in the last 7 days\".\n"
    "\n"
    "  -s, --state FILE   load the seen-set from FILE if it exists (its own\n"
    "                     size and kind are used) and save it back atomically\n"
    "                     at the end, or on SIGINT/SIGTERM after the lines\n"
    "                     already printed\n"
    "  -n, --capacity N   size of a new seen-set (default 10M)\n"
    "  -p, --fpr P        false-positive rate of a new seen-set (default 1e-6)\n"
    "  -k, --kind KIND    kind of a new seen-set (default blocked)\n"
    "  -w, --window SPEC  a new seen-set that forgets: a line is dropped only if\n"
    "                     it was printed within the last SPEC, a count of\n"
    "                     printed lines (100M) or a time (7d, 12h, 90m); -n is\n"
    "                     then the most lines printed per window\n"
    "      --seed S       hash seed of a new seen-set (default: random)\n"
    "      --normalize M  url or email: lines that normalize to the same key\n"
    "                     are duplicates (the first spelling is printed)\n"
    "  -q, --quiet        no progress and no summary\n"
    "      --progress     progress and summaries even when not on a terminal\n"
    "  -h, --help         this text\n";

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

#define STOPPED 100

typedef struct {
    bk_filter_t *f;
    const char *state;
    bkc_progress_t *prog;
    bkc_batch_t batch;
    const bkc_reader_t *reader; /* the input being read */
    int pending_rc;             /* an error met while idle */
    bool window;                /* a window seen-set: only printed lines count */
} dedup_ctx_t;

/* A window seen-set records a line when it is printed, not when it is
 * dropped: a line seen often but printed a week ago is printed again once
 * the week is over (re-adding each sighting would keep it forever). Key by
 * key, so a line repeated within the batch is printed once. */
static uint64_t add_printed(bk_filter_t *f, bkc_batch_t *b)
{
    uint64_t fresh = 0;
    bkc_window_tick(f);
    for (size_t i = 0; i < b->n; i++) {
        bk_hash_t h = bk_filter_hash(f, b->keys[i].ptr, b->keys[i].len);
        b->flags[i] = !bk_filter_contains_hash(f, h);
        if (b->flags[i])
            (void)bk_filter_add_hash(f, h, NULL); /* a writable window cannot fail */
        fresh += b->flags[i];
    }
    return fresh;
}

/* Adds the batch and prints its new lines, in input order. */
static int flush(dedup_ctx_t *c, const bkc_reader_t *r)
{
    bkc_batch_t *b = &c->batch;
    if (b->n == 0)
        return 0;
    bkc_batch_keys(b);
    uint64_t n_new = 0;
    bk_status_t st = BK_OK;
    if (c->window)
        n_new = add_printed(c->f, b);
    else
        st = bk_filter_add_batch(c->f, b->keys, b->n, b->flags, &n_new);
    if (st != BK_OK) {
        bkc_progress_clear(c->prog);
        bkc_error("%s: cannot add %s line %llu or one shortly before: %s%s",
                  c->state ? c->state : "seen-set", bkc_reader_name(r),
                  (unsigned long long)b->last_lineno,
                  st == BK_EFULL ? "the filter is full (non-scaling)" : bk_strerror(st),
                  c->state ? "; state file left unchanged" : "");
        return BKC_EXIT_ERROR;
    }
    for (size_t i = 0; i < b->n; i++)
        if (b->flags[i] && bkc_out_line(bkc_batch_line(b, i), b->line_len[i]) != 0)
            return BKC_EXIT_ERROR; /* reported by bkc_stdout_finish */
    bkc_out_sync();
    bkc_progress_count(c->prog, b->n, n_new);
    bkc_batch_reset(b);
    return 0;
}

/* The input is about to wait: print what the batch holds. */
static void dedup_idle(void *vctx)
{
    dedup_ctx_t *c = vctx;
    if (c->pending_rc == 0 && c->reader)
        c->pending_rc = flush(c, c->reader);
    if (c->pending_rc == 0)
        (void)bkc_out_flush(); /* an error is reported by bkc_stdout_finish */
}

static int dedup_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                      const bkc_reader_t *r)
{
    dedup_ctx_t *c = vctx;
    c->reader = r;
    if (c->pending_rc)
        return c->pending_rc;
    if (stop_requested) {
        int rc = flush(c, r);
        return rc ? rc : STOPPED;
    }
    if (bkc_batch_push(&c->batch, line, len, key, klen) != 0)
        return bkc_line_error(c->prog, r, "out of memory");
    c->batch.last_lineno = bkc_reader_lineno(r);
    return bkc_batch_full(&c->batch) ? flush(c, r) : 0;
}

static int dedup_end(void *vctx, const bkc_reader_t *r)
{
    dedup_ctx_t *c = vctx;
    c->reader = NULL;
    return c->pending_rc ? c->pending_rc : flush(c, r);
}

/* The seen-set: loaded from the state file if there is one, else new.
 * NULL after a message. */
static bk_filter_t *open_seen_set(const char *state, const bkc_sizing_opts_t *sz)
{
    struct stat sb;
    if (state && stat(state, &sb) == 0)
        return bkc_load_filter(state);
    if (state && errno != ENOENT) {
        bkc_error("%s: %s", state, strerror(errno));
        return NULL;
    }
    bk_filter_t *f = NULL;
    bk_status_t st = bk_filter_create(&f, sz->n, sz->p, &sz->o);
    if (st != BK_OK) {
        bkc_error("cannot create a seen-set for n=%llu p=%g: %s", (unsigned long long)sz->n,
                  sz->p, bk_strerror(st));
        return NULL;
    }
    return f;
}

/* SIGINT and SIGTERM end the run after the lines already printed, so the
 * state can be saved. No SA_RESTART: a read waiting on a pipe returns, and
 * the reader ends the input there. */
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    bkc_reader_set_stop_flag(&stop_requested);
}

int bkc_cmd_dedup(int argc, char **argv)
{
    static const struct option opts[] = {{"state", required_argument, 0, 's'},
                                         {"seed", required_argument, 0, BKC_OPT_SEED},
                                         {"capacity", required_argument, 0, 'n'},
                                         {"fpr", required_argument, 0, 'p'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"window", required_argument, 0, 'w'},
                                         BKC_INPUT_LONG_OPTIONS,
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *state = NULL, *window = NULL;
    bool time_window;
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 10000000, 1e-6);
    bkc_input_opts_t in;
    bkc_input_opts_init(&in);
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "s:n:p:k:w:qh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            state = optarg;
            break;
        case 'w':
            window = optarg;
            break;
        default:
            if ((rc = bkc_shared_option(c, argv, usage, &sz, &in)) >= 0)
                return rc;
        }
    }
    if (window && (rc = bkc_window_option(window, &sz, &time_window)) >= 0)
        return rc;

    bk_filter_t *f = open_seen_set(state, &sz);
    if (!f)
        return BKC_EXIT_ERROR;
    if (state)
        catch_stop_signals();
    bkc_stdout_setup();
    bkc_progress_t prog;
    bkc_progress_init(&prog, in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    prog.has_fresh = true;
    prog.filter = f;
    dedup_ctx_t ctx = {.f = f, .state = state, .prog = &prog,
                       .window = bk_filter_kind(f) == BK_KIND_WINDOW};
    bkc_batch_init(&ctx.batch);
    bkc_reader_set_idle_hook(dedup_idle, &ctx);
    rc = bkc_for_each_line(argv + optind, argc - optind, in.norm, &prog, dedup_line, dedup_end,
                           &ctx);
    bkc_reader_set_idle_hook(NULL, NULL);
    bkc_batch_free(&ctx.batch);
    bool stopped = rc == STOPPED || (rc == 0 && stop_requested);
    if (stopped)
        rc = 0;
    /* The state is saved only if every line it records reached stdout: a
     * line recorded but lost would never be printed by a later run. */
    if (bkc_stdout_finish() != 0)
        rc = BKC_EXIT_ERROR;
    if (rc == 0 && state && bkc_save_filter(f, state) != 0)
        rc = BKC_EXIT_ERROR;
    bool summary = rc == 0 && in.pmode != BKC_PROGRESS_OFF;
    bkc_progress_finish(&prog, summary, stopped ? "interrupted: " : "");
    if (summary)
        bkc_warn_over_capacity(f, state ? state : "the seen-set",
                               "new lines are dropped as seen with probability");
    bk_filter_free(f);
    return stopped && rc == 0 ? 130 : rc;
}
