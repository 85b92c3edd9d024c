/*
 * bloomkit dedup: passes each line through once, the crawler's "have I
 * fetched this URL?" set. Memory is the filter's size whatever the input
 * size; the price is that a new line is dropped with probability at most
 * the filter's false-positive rate. Output lines are those of the input
 * with their line end written as "\n".
 *
 * With --state the seen-set is a filter file, loaded at the start and
 * saved at checkpoints (bk_checkpoint_save: the sectors that changed, in
 * place through a journal, crash-safe): every --checkpoint seconds, at the end,
 * and on every ending that can be caught (SIGINT, SIGTERM, SIGHUP, a
 * closed output pipe). The file is locked for the whole run (lock.h). The
 * guarantee: the saved state never holds a line that was not written to
 * the output, so after any ending, even kill -9, a re-run may repeat the
 * lines since the last checkpoint but never skips one. To keep it, each
 * batch's new lines are written out before the batch is recorded in the
 * filter (a probe finds them; the add follows the write), so a write that
 * fails leaves the filter holding only lines already written.
 *
 * When the output is a pipe, "written" is not enough: a reader that goes
 * away (`| head`) leaves lines unread in the pipe, and they were never
 * delivered. So a new line is recorded only once its reader has taken it:
 * until then it is in flight (inflight.h), a duplicate of it is still
 * dropped, and at each batch the kernel's count of unread bytes
 * (FIONREAD) says which lines the reader has read since. When the reader
 * goes away, those it never read are not recorded, so the next run prints
 * them. At a normal end the lines still in the pipe are recorded: the
 * reader is there and will read them. A window seen-set (each printed
 * line moves the window for the next) records at once, as before.
 */
#define _GNU_SOURCE
#include "ahead.h"
#include "batch.h"
#include "commands.h"
#include "filterfile.h"
#include "inflight.h"
#include "keyform.h"
#include "lines.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "output.h"
#include "window_opt.h"
#include "progress.h"
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: bloomkit dedup [--state FILE | --redis URL] [-n N] [-p P] [INPUT...]\n"
    "\n"
    "Prints each line of the INPUTs (files, or - for standard input; default\n"
    "standard input) the first time it is seen, in constant memory. A new\n"
    "line is wrongly dropped with probability at most P (the filter's\n"
    "false-positive rate). Without --state the seen-set lives for one run.\n"
    "With a window (--window, or a --state file made by create --window) a\n"
    "line is printed again once its last printing has left the window: the\n"
    "crawler's \"re-fetch a URL not fetched in the last 7 days\".\n"
    "Exit status: 0; 3 when the seen-set ended far past its capacity (new\n"
    "lines were then dropped as seen at far more than P: a crawler would\n"
    "never fetch them; size -n for the distinct lines, or use --kind\n"
    "scalable or a --window); 2 on error; 130 and the like when interrupted.\n"
    "\n"
    "  -s, --state FILE   load the seen-set from FILE if it exists (its own\n"
    "                     size and kind are used) and save what changed back\n"
    "                     at checkpoints, at the end and when interrupted\n"
    "                     (SIGINT, SIGTERM, SIGHUP, a closed output pipe);\n"
    "                     FILE never records a line not yet printed (into a\n"
    "                     pipe: not yet read by its reader), so a\n"
    "                     re-run after any crash repeats lines, never skips\n"
    "      --redis URL    the seen-set is the filter NAME in Redis or a Redis\n"
    "                     Cluster, URL redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME\n"
    "                     (on a cluster, any node), shared with other runs and\n"
    "                     with Python's ShardedFilter; -n (and -p) create it\n"
    "                     when it does not exist. Each line is claimed: printed\n"
    "                     by exactly one run, also when a reply is lost and\n"
    "                     sent again (bloomkit.so's BF.CLAIM)\n"
    "      --shards N     shard keys of a new --redis filter (default 1 on a\n"
    "                     server, 8 per master on a cluster)\n"
    "      --run-id ID    --redis: claims a re-run can repeat: run again with\n"
    "                     the same ID on the same input within an hour (a\n"
    "                     worker killed mid-run), it prints what this run\n"
    "                     would have printed, and adds nothing twice (lines\n"
    "                     then go out in batches of 16,384, also from a pipe)\n"
    "      --checkpoint S save the state every S seconds (default 30; 0: only\n"
    "                     at the end and when interrupted)\n"
    "      --no-wait      if another process is writing FILE, fail (exit 2)\n"
    "                     instead of waiting for it\n"
    "  -n, --capacity N   size of a new seen-set (default 10M)\n"
    "  -p, --fpr P        false-positive rate of a new seen-set (default 1e-6)\n"
    "  -k, --kind KIND    kind of a new seen-set (default by -p, as create:\n"
    "                     blocked2 at the default 1e-6)\n"
    "  -w, --window SPEC  a new seen-set that forgets, over the last SPEC: a\n"
    "                     count of printed lines (100M) or a time (7d, 12h,\n"
    "                     90m; -n is then the most lines printed per SPEC). A\n"
    "                     line printed within the last SPEC is dropped; one\n"
    "                     last printed over 4/3 SPEC ago (G/(G-1) with\n"
    "                     create --generations G) is printed again; between\n"
    "                     the two it may be either (see bloomkit(1))\n"
    "      --seed S       hash seed of a new seen-set (default: random)\n"
    "      --normalize M  url or email: lines that normalize to the same key\n"
    "                     are duplicates (the first spelling is printed)\n"
    "  -t, --threads N    threads (default: every CPU): one probes the\n"
    "                     seen-set and prints in input order, the others\n"
    "                     read ahead, normalize and hash (1: all on one)\n"
    "  -q, --quiet        no progress and no summary\n"
    "      --progress     progress and summaries even when not on a terminal\n"
    "  -h, --help         this text\n";

static volatile sig_atomic_t stop_signal;

#define STOPPED 100

/* Most --threads: one probing, the others cutting and hashing lines. */
#define MAX_THREADS 256
#define DEFAULT_CHECKPOINT 30.0

typedef struct {
    bk_filter_t *f;
    const char *state;
    bk_checkpoint_t *cp;        /* the state's checkpoints (what changed) */
    bkc_progress_t *prog;
    bkc_batch_t batch;
    const bkc_reader_t *reader; /* the input being read */
    int pending_rc;             /* an error met while idle */
    double every;               /* seconds between checkpoints; 0: none */
    double last_save;
    bool out_closed;            /* EPIPE: the reader of our output is gone */
    bool dirty;                 /* lines recorded since the last save */
    bool recorded_ahead;        /* the filter holds lines a failed write lost */
    bool window;                /* a window seen-set: only printed lines count */
    bool track;                 /* --state into a pipe: record lines once read */
    bkc_inflight_t inflight;    /* printed lines the reader has not read yet */
    uint64_t out_end;           /* output offset after the last printed line */
    unsigned threads;           /* --threads, for a prefault */
    uint64_t prefault_after;    /* lines recorded before the prefault; 0: none due */
    uint64_t recorded;          /* lines recorded so far */
} dedup_ctx_t;

static void prefault(bk_filter_t *f, unsigned threads);

/* Records the lines in flight that the reader has read (all of them when
 * `all`: the reader is there and will read the rest). 0, or 2 after a
 * message. */
static int settle(dedup_ctx_t *c, bool all)
{
    if (!c->track)
        return 0;
    uint64_t consumed = UINT64_MAX, unread;
    if (!all && bkc_out_unread(&unread) == 0) {
        uint64_t written = bkc_out_written();
        consumed = written > unread ? written - unread : 0;
    }
    bk_hash_t hs[256];
    size_t n;
    while ((n = bkc_inflight_pop_upto(&c->inflight, consumed, hs, 256)) > 0) {
        bk_status_t st = bk_filter_add_hash_batch(c->f, hs, n, NULL, NULL);
        if (st != BK_OK) {
            bkc_progress_clear(c->prog);
            bkc_error("%s: cannot record printed lines: %s; state file left at its last "
                      "checkpoint",
                      c->state, bk_strerror(st));
            return BKC_EXIT_ERROR;
        }
    }
    return 0;
}

/* Key `at` of batch b (as bk_filter_add_hash_batch_done says) from input
 * `input` failed. */
static int add_failed(dedup_ctx_t *c, const bkc_batch_t *b, const char *input, bk_status_t st,
                      size_t at)
{
    bkc_progress_clear(c->prog);
    char why[200] = "";
    if (st == BK_EFULL) /* the library says why: non-scaling, its size cap, ... */
        (void)bk_filter_full_reason(c->f, why, sizeof why);
    bkc_error("%s: cannot add %s line %llu: %s%s%s%s", c->state ? c->state : "seen-set", input,
              (unsigned long long)b->lineno[at < b->n ? at : b->n - 1],
              bk_strerror(st), why[0] ? " (" : "", why, why[0] ? ")" : "");
    if (c->state)
        bkc_error("%s: state file left at its last checkpoint", c->state);
    return BKC_EXIT_ERROR;
}

/* A window seen-set records a line when it is printed, not when it is
 * dropped: a line seen often but printed a week ago is printed again once
 * the week is over (re-adding each sighting would keep it forever). Key by
 * key, so a line repeated within the batch is printed once. */
static uint64_t add_printed(bk_filter_t *f, bkc_batch_t *b)
{
    uint64_t fresh = 0;
    bkc_window_tick(f);
    for (size_t i = 0; i < b->n; i++) {
        b->flags[i] = !bk_filter_contains_hash(f, b->hash[i]);
        if (b->flags[i])
            (void)bk_filter_add_hash(f, b->hash[i], NULL); /* a writable window cannot fail */
        fresh += b->flags[i];
    }
    return fresh;
}

/* Without a state file: add, then print the new lines (buffered). */
static int flush_fast(dedup_ctx_t *c, bkc_batch_t *b, const char *input, uint64_t *n_new)
{
    bk_status_t st = BK_OK;
    size_t done = b->n;
    if (c->window)
        *n_new = add_printed(c->f, b);
    else
        st = bk_filter_add_hash_batch_done(c->f, b->hash, b->n, b->flags, n_new, &done);
    if (st != BK_OK)
        return add_failed(c, b, input, st, done);
    if (bkc_batch_print_flagged(b) != 0)
        return BKC_EXIT_ERROR; /* reported by bkc_stdout_finish */
    bkc_out_sync();
    return 0;
}

/* Writes out the batch's new lines (tracking, each goes in flight with
 * the offset its line ends at); on failure notes a closed pipe. */
static int write_new_lines(dedup_ctx_t *c, const bkc_batch_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        if (!b->flags[i])
            continue;
        c->out_end += b->line_len[i] + 1;
        if (c->track && bkc_inflight_push(&c->inflight, b->hash[i], c->out_end) != 0) {
            bkc_error("out of memory");
            return BKC_EXIT_ERROR;
        }
        if (bkc_out_line(bkc_batch_line(b, i), b->line_len[i]) != 0)
            break;
    }
    if (bkc_out_flush() != 0) {
        c->out_closed = bkc_out_error() == EPIPE;
        return BKC_EXIT_ERROR; /* reported by bkc_stdout_finish */
    }
    return 0;
}

/* With a state file: probe, print and write out the new lines, and only
 * then record the batch, so the filter never holds an unwritten line.
 * A window cannot be probed ahead (each printed line moves the window for
 * the next), so it records key by key and, if the write then fails, the
 * run ends without saving: the file keeps its last checkpoint. */
static int flush_safe(dedup_ctx_t *c, bkc_batch_t *b, const char *input, uint64_t *n_new)
{
    if (c->window) {
        *n_new = add_printed(c->f, b);
        int rc = write_new_lines(c, b);
        c->recorded_ahead = rc != 0;
        return rc;
    }
    /* Each key was hashed once: for the probe, the lines in flight and the
     * record. */
    bool seen[BKC_BATCH_KEYS];
    (void)bk_filter_contains_hash_batch(c->f, b->hash, b->n, seen);
    /* A damaged page of a paged state answers "seen": stop before a line
     * is printed or recorded on its word. */
    if (bkc_filter_damaged(c->f, c->state) != 0) {
        bkc_error("%s: state file left at its last checkpoint", c->state);
        return BKC_EXIT_ERROR;
    }
    if (c->track)
        for (size_t i = 0; i < b->n; i++) /* a line in flight is seen, not yet recorded */
            seen[i] = seen[i] || bkc_inflight_has(&c->inflight, b->hash[i]);
    bkc_batch_first_fresh(b, seen, b->flags);
    *n_new = 0;
    for (size_t i = 0; i < b->n; i++)
        *n_new += b->flags[i];
    int rc = write_new_lines(c, b);
    if (rc)
        return rc;
    if (c->track)
        return settle(c, false);
    size_t done;
    bk_status_t st = bk_filter_add_hash_batch_done(c->f, b->hash, b->n, NULL, NULL, &done);
    return st == BK_OK ? 0 : add_failed(c, b, input, st, done);
}

/* Saves the state if a checkpoint is due. 0, or 2 after a message. */
static int maybe_checkpoint(dedup_ctx_t *c)
{
    if (!c->state || c->every <= 0 || !c->dirty || bkc_now() - c->last_save < c->every)
        return 0;
    if (settle(c, false) != 0) /* what the reader took since: the rest waits */
        return BKC_EXIT_ERROR;
    c->last_save = bkc_now();
    c->dirty = false;
    return bkc_checkpoint_save(c->cp, c->f, c->state) == 0 ? 0 : BKC_EXIT_ERROR;
}

/* Records batch b (keys and hashes filled) from input `input` and prints
 * its new lines, in input order. */
static int record(dedup_ctx_t *c, bkc_batch_t *b, const char *input)
{
    uint64_t n_new = 0;
    int rc = c->state ? flush_safe(c, b, input, &n_new) : flush_fast(c, b, input, &n_new);
    if (rc)
        return rc;
    bkc_progress_count(c->prog, b->n, n_new);
    c->dirty |= n_new > 0;
    c->recorded += b->n;
    if (c->prefault_after && c->recorded >= c->prefault_after) {
        c->prefault_after = 0;
        prefault(c->f, c->threads);
    }
    return maybe_checkpoint(c);
}

/* Records the lines collected in c->batch, read from r. */
static int flush(dedup_ctx_t *c, const bkc_reader_t *r)
{
    bkc_batch_t *b = &c->batch;
    if (b->n == 0)
        return maybe_checkpoint(c);
    bkc_batch_keys(b);
    bkc_batch_hash(b, c->f);
    int rc = record(c, b, bkc_reader_name(r));
    bkc_batch_reset(b);
    return rc;
}

/* The input is about to wait: print what the batch holds, and save the
 * state when a checkpoint falls due while the producer is quiet (else a
 * kill during a long pause would lose lines printed before it). Returns
 * the milliseconds until that checkpoint, or -1 for none. */
static int dedup_idle(void *vctx)
{
    dedup_ctx_t *c = vctx;
    if (c->pending_rc == 0 && c->reader)
        c->pending_rc = flush(c, c->reader);
    if (c->pending_rc == 0)
        (void)bkc_out_flush(); /* an error is reported by bkc_stdout_finish */
    if (c->pending_rc != 0 || !c->state || c->every <= 0 || !c->dirty)
        return -1;
    double left = c->every - (bkc_now() - c->last_save);
    return left <= 0 ? 0 : (int)(left * 1000.0) + 1;
}

static int dedup_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                      const bkc_reader_t *r)
{
    dedup_ctx_t *c = vctx;
    c->reader = r;
    if (c->pending_rc)
        return c->pending_rc;
    if (stop_signal) {
        int rc = flush(c, r);
        return rc ? rc : STOPPED;
    }
    if (bkc_batch_push(&c->batch, line, len, key, klen) != 0)
        return bkc_line_error(c->prog, r, "out of memory");
    bkc_batch_set_line(&c->batch, bkc_reader_lineno(r));
    return bkc_batch_full(&c->batch) ? flush(c, r) : 0;
}

static int dedup_end(void *vctx, const bkc_reader_t *r)
{
    dedup_ctx_t *c = vctx;
    c->reader = NULL;
    return c->pending_rc ? c->pending_rc : flush(c, r);
}

/* How long the read-ahead loop waits for lines before it looks at the
 * signals and the checkpoint clock again. */
#define AHEAD_WAIT_MS 100

/* The input is slow: the output goes out now (a slow producer's lines
 * still flow through a pipeline at once), and a checkpoint that fell due
 * is taken. Returns how long to wait for the next lines (ms), or -1 after
 * a message (*rc set). */
static int ahead_idle(dedup_ctx_t *c, int *rc)
{
    (void)bkc_out_flush(); /* an error is reported by bkc_stdout_finish */
    if ((*rc = maybe_checkpoint(c)) != 0)
        return -1;
    if (!c->state || c->every <= 0 || !c->dirty)
        return AHEAD_WAIT_MS;
    double left_ms = (c->every - (bkc_now() - c->last_save)) * 1000.0;
    return left_ms < 1 ? 1 : left_ms < AHEAD_WAIT_MS ? (int)left_ms : AHEAD_WAIT_MS;
}

/* The lines come cut, normalized and hashed by other threads (ahead.h);
 * this thread only probes, records and prints, in input order. Returns as
 * bkc_for_each_line would with dedup_line. */
static int dedup_ahead(dedup_ctx_t *c, bkc_ahead_t *a)
{
    int wait_ms = 0, rc = 0;
    for (;;) {
        if (stop_signal)
            return STOPPED;
        bkc_batch_t *b;
        const char *input;
        int got = bkc_ahead_next(a, &b, &input, wait_ms);
        if (got == BKC_AHEAD_WAIT) {
            if ((wait_ms = ahead_idle(c, &rc)) < 0)
                return rc;
            continue;
        }
        wait_ms = 0;
        if (got == BKC_AHEAD_END)
            return 0;
        if (got == BKC_AHEAD_ERROR) {
            bkc_progress_clear(c->prog);
            bkc_error("%s", bkc_ahead_error(a));
            return BKC_EXIT_ERROR;
        }
        if ((rc = record(c, b, input)) != 0)
            return rc;
        c->prog->done_base = bkc_ahead_bytes(a);
        bkc_progress_ticks(c->prog, (uint32_t)b->n);
    }
}

/* A new in-memory seen-set from this size on has its memory provided by
 * the kernel on all threads (bk_filter_prefault) once the run is big
 * enough to touch most of it: the adds would otherwise zero-fill each page
 * on the probing thread, one at a time, and twice over (an add reads its
 * cache line first, which maps the kernel's shared zero page, then writes
 * it, which copies that page). On a 2-core virtual machine whose host had
 * reclaimed the memory, 200,000 URLs into -n 1e9 -p 0.001 (1.9 GB) took
 * 4.8-6 s on one thread without it. A small run must not pay for it: one
 * line into the same set took 0.1-2.3 s and 1.9 GB of memory when the
 * prefault came first, and takes a few pages without it. */
#define PREFAULT_BYTES ((uint64_t)256 << 20)
/* The prefault is worth it once the lines may touch a quarter of the
 * set's 4 KiB pages (each line touches about one page). Regular files
 * are judged by their size, at this many bytes a line (URLs run 50-100,
 * so a file of shorter lines holds more than judged, and is caught by
 * the count); other inputs, and files judged small, by the lines recorded. */
#define PREFAULT_SHARE 4
#define PREFAULT_LINE_BYTES 64

/* When to prefault a new seen-set f for these inputs: 0 (now, or never),
 * or after how many recorded lines. */
static uint64_t prefault_plan(bk_filter_t *f, char **paths, int n, bool *now)
{
    bk_filter_shape_t shape;
    bk_filter_shape(f, &shape);
    *now = false;
    if (shape.items > 0 || shape.bytes < PREFAULT_BYTES)
        return 0;
    uint64_t lines = shape.bytes / 4096 / PREFAULT_SHARE;
    uint64_t bytes = 0;
    bool all_files = n > 0;
    for (int i = 0; i < n && all_files; i++) {
        struct stat sb;
        all_files = strcmp(paths[i], "-") != 0 && stat(paths[i], &sb) == 0 &&
                    S_ISREG(sb.st_mode);
        if (all_files)
            bytes += (uint64_t)sb.st_size;
    }
    if (all_files && bytes / PREFAULT_LINE_BYTES >= lines) {
        *now = true;
        return 0;
    }
    return lines;
}

typedef struct prefault_job {
    bk_filter_t *f;
    unsigned share, shares;
} prefault_job_t;

static void *prefault_share(void *vj)
{
    prefault_job_t *j = vj;
    (void)bk_filter_prefault(j->f, j->share, j->shares);
    return NULL;
}

/* Prefaults the seen-set on `threads` threads (this one among them); a
 * thread that does not start leaves its share to the adds. */
static void prefault(bk_filter_t *f, unsigned threads)
{
    pthread_t tid[MAX_THREADS];
    prefault_job_t jobs[MAX_THREADS];
    bool started[MAX_THREADS];
    threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    for (unsigned i = 0; i < threads; i++) {
        jobs[i] = (prefault_job_t){f, i, threads};
        started[i] = i > 0 && pthread_create(&tid[i], NULL, prefault_share, &jobs[i]) == 0;
    }
    prefault_share(&jobs[0]);
    for (unsigned i = 1; i < threads; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
}

/* Reads the inputs with the read-ahead when threads > 1 and it starts,
 * else line by line on this thread (after the prefault, on all threads). */
static int dedup_inputs(dedup_ctx_t *c, char **paths, int n, const bkc_input_opts_t *in,
                        unsigned threads)
{
    bool now;
    c->threads = threads;
    c->prefault_after = prefault_plan(c->f, paths, n, &now);
    if (now)
        prefault(c->f, threads);
    if (threads > 1) {
        bk_filter_shape_t shape; /* O(1), unlike bk_filter_info's count of set bits */
        bk_filter_shape(c->f, &shape);
        bkc_ahead_config_t cfg = {.paths = paths, .npaths = n, .norm = in->norm,
                                  .hash = shape.hash, .seed = shape.seed,
                                  .workers = threads - 1};
        bkc_ahead_t *a = bkc_ahead_start(&cfg);
        if (a) {
            int rc = dedup_ahead(c, a);
            bkc_ahead_stop(a);
            return rc;
        }
    }
    bkc_reader_set_idle_hook(dedup_idle, c);
    int rc = bkc_for_each_line(paths, n, in->norm, c->prog, dedup_line, dedup_end, c);
    bkc_reader_set_idle_hook(NULL, NULL);
    return rc;
}

/* A new, empty seen-set. NULL after a message. */
static bk_filter_t *new_seen_set(const bkc_sizing_opts_t *sz)
{
    bk_filter_t *f = NULL;
    bk_status_t st = bk_filter_create(&f, sz->n, sz->p, &sz->o);
    if (st != BK_OK) {
        bkc_error("cannot create a seen-set for n=%llu p=%g: %s", (unsigned long long)sz->n,
                  sz->p, bk_strerror(st));
        return NULL;
    }
    return f;
}

/* Creates the state file with an empty seen-set unless it exists
 * (bk_filter_save_new never replaces a file, so of two runs starting at
 * once one creates it and both then lock and load the same file; a
 * dangling symbolic link gets its file where it points, as create and
 * merge do). Doing it up front also finds a state path that cannot be
 * written before any line is printed. 0 or 2 after a message. */
static int publish_new_state(const char *state, const bkc_sizing_opts_t *sz)
{
    bk_filter_t *f = new_seen_set(sz);
    if (!f)
        return BKC_EXIT_ERROR;
    if (bkc_new_filter_fits(f, state, false,
                            "to make it anyway, create it first with bloomkit create --force") != 0) {
        bk_filter_free(f);
        return BKC_EXIT_ERROR;
    }
    errno = 0;
    bk_status_t st = bk_filter_save_new(f, state);
    int rc = 0;
    if (st != BK_OK && st != BK_EEXIST) {
        bkc_error("%s: cannot create the state file: %s", state,
                  st == BK_EIO || st == BK_ENOSPC ? strerror(errno) : bk_strerror(st));
        rc = BKC_EXIT_ERROR;
    }
    bk_filter_free(f);
    return rc;
}

/* The directory the state file is saved into must be writable: checked
 * before any line is printed, not found out at the end. */
static int check_state_dir(const char *state)
{
    char *real = realpath(state, NULL);
    char *copy = strdup(real ? real : state);
    int rc = 0;
    if (copy && access(dirname(copy), W_OK | X_OK) != 0) {
        bkc_error("%s: cannot save the state here: %s", state, strerror(errno));
        rc = BKC_EXIT_ERROR;
    }
    free(copy);
    free(real);
    return rc;
}

/* The seen-set of --state FILE, locked for the run (*lock). NULL after a
 * message. */
static bk_filter_t *open_state(const char *state, const bkc_sizing_opts_t *sz, bkc_lock_t *lock)
{
    struct stat sb;
    if (stat(state, &sb) != 0) {
        if (errno != ENOENT) {
            bkc_error("%s: %s", state, strerror(errno));
            return NULL;
        }
        if (publish_new_state(state, sz) != 0)
            return NULL;
    }
    if (check_state_dir(state) != 0)
        return NULL;
    return bkc_load_filter_locked(state, lock);
}

/* Every ending that can be caught ends the run after the lines already
 * printed, so the state can be saved (bkc_catch_endings). A closed output
 * pipe shows as EPIPE from write rather than a fatal SIGPIPE. */
static void catch_endings(void)
{
    bkc_catch_endings(&stop_signal);
    signal(SIGPIPE, SIG_IGN);
}

typedef struct dedup_opts {
    unsigned threads; /* --threads; 0: every online CPU */
    const char *state;
    bkc_remote_opts_t remote; /* --redis URL: url set */
    const char *window; /* --window SPEC, or NULL */
    double every;
    bkc_sizing_opts_t sz;
    bkc_input_opts_t in;
} dedup_opts_t;

/* --threads N, or every online CPU. */
static unsigned dedup_threads(unsigned asked)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = asked ? asked : cpus > 1 ? (unsigned)cpus : 1;
    return n > MAX_THREADS ? MAX_THREADS : n;
}

/* The options taken together once parsed: --redis takes none of a
 * seen-set file's, and --shards and --run-id need it. -1 to go on to the
 * inputs, else the exit status. */
static int settle_options(dedup_opts_t *o, bool kind_or_seed)
{
    if (o->remote.url) {
        if (o->state || o->window || kind_or_seed)
            return bkc_usage_error("--redis takes none of --state, --window, --kind, --seed");
        o->remote.n = o->sz.n;
        o->remote.p = o->sz.p;
        return -1;
    }
    if (o->remote.shards || o->remote.run_id)
        return bkc_usage_error("--shards and --run-id are for --redis");
    bool time_window;
    int rc;
    if (o->window && (rc = bkc_window_option(o->window, &o->sz, &time_window)) >= 0)
        return rc;
    return -1;
}

/* -1 when parsing went on to the inputs, else the exit status. */
static int parse_options(int argc, char **argv, dedup_opts_t *o)
{
    enum { OPT_CHECKPOINT = BKC_OPT_OWN, OPT_REDIS, OPT_SHARDS, OPT_RUN_ID };
    static const struct option opts[] = {{"state", required_argument, 0, 's'},
                                         {"redis", required_argument, 0, OPT_REDIS},
                                         {"shards", required_argument, 0, OPT_SHARDS},
                                         {"run-id", required_argument, 0, OPT_RUN_ID},
                                         {"checkpoint", required_argument, 0, OPT_CHECKPOINT},
                                         {"seed", required_argument, 0, BKC_OPT_SEED},
                                         {"capacity", required_argument, 0, 'n'},
                                         {"fpr", required_argument, 0, 'p'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"window", required_argument, 0, 'w'},
                                         {"threads", required_argument, 0, 't'},
                                         BKC_INPUT_LONG_OPTIONS,
                                         BKC_LOCK_LONG_OPTION,
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    o->threads = 0;
    o->state = NULL;
    o->remote = (bkc_remote_opts_t){0};
    bool kind_or_seed = false;
    o->window = NULL;
    o->every = DEFAULT_CHECKPOINT;
    bkc_sizing_opts_init(&o->sz, 10000000, 1e-6);
    bkc_input_opts_init(&o->in);
    int c, rc;
    char *end;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    uint64_t w;
    while ((c = getopt_long(argc, argv, "s:n:p:k:w:t:qh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            o->state = optarg;
            break;
        case OPT_CHECKPOINT:
            o->every = strtod(optarg, &end);
            if (end == optarg || *end || !(o->every >= 0))
                return bkc_usage_error("bad --checkpoint '%s' (seconds, 0 for none)", optarg);
            break;
        case 'w':
            o->window = optarg;
            break;
        case OPT_REDIS:
            o->remote.url = optarg;
            break;
        case OPT_RUN_ID:
            if (!optarg[0] || strlen(optarg) > 128)
                return bkc_usage_error("bad --run-id (1 to 128 bytes)");
            o->remote.run_id = optarg;
            break;
        case OPT_SHARDS:
            if (bkc_parse_u64(optarg, &w) != 0 || w < 1 || w > 16384)
                return bkc_usage_error("bad --shards '%s' (1 to 16384)", optarg);
            o->remote.shards = (unsigned)w;
            break;
        case 't':
            if (bkc_parse_u64(optarg, &w) != 0 || w < 1 || w > MAX_THREADS)
                return bkc_usage_error("bad --threads '%s' (1 to %d)", optarg, MAX_THREADS);
            o->threads = (unsigned)w;
            break;
        default:
            o->remote.create |= c == 'n';
            kind_or_seed |= c == 'k' || c == BKC_OPT_SEED;
            if ((rc = bkc_shared_option(c, argv, usage, &o->sz, &o->in)) >= 0)
                return rc;
        }
    }
    return settle_options(o, kind_or_seed);
}

/* After the last line or an ending: output written, then the state saved
 * when every line it records reached the output. Returns the exit status. */
static int finish_run(dedup_ctx_t *c, int rc)
{
    bool stopped = rc == STOPPED || (rc == 0 && stop_signal);
    if (stopped)
        rc = 0;
    if (c->out_closed) /* `dedup --state s | head`: not an error worth a word */
        rc = 128 + SIGPIPE;
    else if (bkc_stdout_finish() != 0)
        rc = BKC_EXIT_ERROR;
    /* Lines the reader took are recorded; with the reader gone, the rest
     * never reached it and stay unrecorded; else they will be read. */
    if ((rc == 0 || c->out_closed) && settle(c, !c->out_closed) != 0)
        rc = BKC_EXIT_ERROR;
    bool save = c->state && (rc == 0 || (c->out_closed && !c->recorded_ahead));
    if (save && bkc_checkpoint_save(c->cp, c->f, c->state) != 0)
        rc = BKC_EXIT_ERROR;
    if (rc == 0 && stopped)
        rc = 128 + stop_signal;
    return rc;
}

int bkc_cmd_dedup(int argc, char **argv)
{
    dedup_opts_t o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.remote.url)
        return bkc_remote_dedup(&o.remote, argv + optind, argc - optind, &o.in);
    bkc_lock_t lock = BKC_LOCK_NONE;
    bk_filter_t *f = o.state ? open_state(o.state, &o.sz, &lock) : new_seen_set(&o.sz);
    if (f && !o.state &&
        bkc_new_filter_fits(f, NULL, false, "a seen-set kept in memory must fit in it") != 0) {
        bk_filter_free(f);
        f = NULL;
    }
    if (!f)
        return BKC_EXIT_ERROR;
    if (o.state && bkc_key_form_settle(f, o.state, &o.in, true) != 0) {
        bkc_lock_release(&lock);
        bk_filter_free(f);
        return BKC_EXIT_ERROR;
    }
    bk_checkpoint_t *cp = o.state ? bkc_checkpoint_start(f, o.state) : NULL;
    if (o.state && !cp) {
        bkc_lock_release(&lock);
        bk_filter_free(f);
        return BKC_EXIT_ERROR;
    }
    if (o.state)
        catch_endings();
    bkc_stdout_setup();
    bkc_progress_t prog;
    bkc_progress_init(&prog, o.in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    prog.has_fresh = true;
    prog.filter = f;
    dedup_ctx_t ctx = {.f = f, .state = o.state, .cp = cp, .prog = &prog, .every = o.every,
                       .window = (bk_kind_caps(bk_filter_kind(f)) & BK_CAP_WINDOW) != 0};
    uint64_t unread;
    ctx.track = o.state && !ctx.window && bkc_out_unread(&unread) == 0;
    bkc_inflight_init(&ctx.inflight);
    ctx.last_save = bkc_now();
    bkc_batch_init(&ctx.batch);
    rc = dedup_inputs(&ctx, argv + optind, argc - optind, &o.in, dedup_threads(o.threads));
    bkc_batch_free(&ctx.batch);
    rc = finish_run(&ctx, rc);
    bkc_inflight_free(&ctx.inflight);
    bkc_lock_release(&lock);
    /* The summary on a terminal or with --progress (not in a cron job's
     * mail); warnings unless -q. */
    bool ended = rc == 0 || rc > 128;
    bkc_progress_finish(&prog, ended && prog.enabled, rc > 128 ? "interrupted: " : "");
    /* Far past its capacity, a seen-set drops new lines as seen at far more
     * than P: said even with -q and in the exit status (3, as add's), since
     * a crawler would silently never fetch them. */
    if (rc == 0 && bkc_far_over_capacity(f, o.state ? o.state : "the seen-set",
                                         "New lines were dropped as seen that often and "
                                         "never printed: size -n for the distinct lines "
                                         "the seen-set must hold (or use --kind scalable, "
                                         "or a --window)"))
        rc = BKC_EXIT_OVER;
    else if (ended && o.in.pmode != BKC_PROGRESS_OFF)
        bkc_warn_over_capacity(f, o.state ? o.state : "the seen-set",
                               "new lines are dropped as seen with probability");
    bk_checkpoint_free(cp);
    bk_filter_free(f);
    return rc;
}
