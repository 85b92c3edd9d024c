/*
 * bloomkit check: grep for set membership. Prints the input lines whose key
 * is (possibly) in the filter, or with --absent those that certainly are
 * not, and exits like grep: 0 if any line was printed (selected), 1 if none,
 * 2 on trouble. grep's habits hold: -q prints nothing and stops at the
 * first selected line, -l names the inputs that have one, -c counts, -m N
 * stops after N in each input, -v inverts, -x is accepted (a key is always
 * a whole line).
 */
#define _GNU_SOURCE
#include "remote.h"
#include "batch.h"
#include "commands.h"
#include "filterfile.h"
#include "keyform.h"
#include "lines.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "output.h"
#include "window_opt.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: bloomkit check FILE [INPUT...]\n"
    "\n"
    "Prints each line of the INPUTs (files, or - for standard input; default\n"
    "standard input) whose key may be in the filter FILE. A printed line may\n"
    "be a false positive (at the filter's FPR); a line not printed is\n"
    "certainly not in the set. A window filter answers for its window as of\n"
    "now (a time window: the wall clock).\n"
    "Exit status: 0 if any line was selected, 1 if none, 2 on error.\n"
    "FILE may be redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME, a filter in Redis\n"
    "(see dedup --redis; not with -q, -l, -m or --mmap).\n"
    "\n"
    "  -v, --absent       select the lines that are not in the filter\n"
    "                     (also --invert-match)\n"
    "  -c, --count        print only the number of selected lines\n"
    "  -q, --quiet        print nothing; exit 0 at the first selected line\n"
    "                     (also --silent; as grep -q)\n"
    "  -l, --files-with-matches\n"
    "                     print the name of each INPUT with a selected line,\n"
    "                     once, instead of its lines\n"
    "  -m, --max-count N  stop reading an INPUT after N selected lines\n"
    "  -x, --line-regexp  accepted for grep's sake: a key is always the whole\n"
    "                     line\n"
    "      --mmap         map FILE instead of reading it (no copy in memory;\n"
    "                     the payload's checksum is still verified first)\n"
    "      --no-verify    with --mmap: skip that check, for the fastest start\n"
    "                     on a file you trust (a damaged file could then\n"
    "                     answer \"absent\" for a key that was added)\n"
    "      --normalize M  url or email: canonicalize keys first (see bloomkit(1))\n"
    "      --no-progress  no progress or summary, even on a terminal\n"
    "      --progress     progress and a summary even when not on a terminal\n"
    "  -h, --help         this text\n";

/* Returned by the line callbacks to end the reading early (-q, -m): not an
 * error, so the run's exit status is its selections'. */
#define CHECK_STOP 100

typedef struct {
    const bk_filter_t *f;
    const char *path; /* the filter's file */
    bool absent;
    bool count_only;
    bool silent;         /* -q: nothing printed, stop at the first selected line */
    bool names_only;     /* -l */
    uint64_t max_count;  /* -m N, per input; 0: no limit */
    uint64_t in_input;   /* selected lines in the current input */
    bool input_done;     /* -l named it, or -m reached: skip the rest of it */
    int ninputs, ended;  /* inputs, and those read to their end */
    const char *input;   /* the current input's name (its reader's) */
    bool time_window; /* answered as of `now`, the wall clock at the start */
    uint64_t now;
    uint64_t selected;
    bkc_progress_t *prog;
    bkc_batch_t batch;
    int pending_rc; /* an error met while idle */
} check_ctx_t;

static int flush(check_ctx_t *c)
{
    bkc_batch_t *b = &c->batch;
    if (b->n == 0)
        return 0;
    bkc_batch_keys(b);
    size_t present = c->time_window
                         ? bkc_window_contains_batch(c->f, b->keys, b->n, b->flags, c->now)
                         : bk_filter_contains_batch(c->f, b->keys, b->n, b->flags);
    if (bkc_filter_damaged(c->f, c->path) != 0)
        return BKC_EXIT_ERROR;
    c->prog->items += b->n;
    c->prog->fresh += present; /* counted as "present" in the summary */
    int rc = 0;
    for (size_t i = 0; i < b->n && !c->input_done; i++) {
        if (b->flags[i] == c->absent)
            continue;
        c->selected++;
        c->in_input++;
        if (c->silent) {
            rc = CHECK_STOP; /* grep -q: the answer is known */
            break;
        }
        if (c->names_only) {
            if (bkc_out_line(c->input, strlen(c->input)) != 0)
                return BKC_EXIT_ERROR;
            c->input_done = true;
        } else if (!c->count_only &&
                   bkc_out_line(bkc_batch_line(b, i), b->line_len[i]) != 0) {
            return BKC_EXIT_ERROR; /* reported by bkc_stdout_finish */
        }
        if (c->max_count && c->in_input >= c->max_count)
            c->input_done = true;
    }
    bkc_out_sync();
    bkc_batch_reset(b);
    /* Nothing more to read in this input: if it is the last, stop. */
    if (rc == 0 && c->input_done && c->ended + 1 >= c->ninputs)
        rc = CHECK_STOP;
    return rc;
}

/* Set to end the reading when an input waits after the answer is known
 * (check -q on a stream that stays open, as grep -q exits at once). */
static volatile sig_atomic_t check_stop_flag;

/* The input is about to wait: print what the batch holds. */
static int check_idle(void *vctx)
{
    check_ctx_t *c = vctx;
    if (c->pending_rc == 0)
        c->pending_rc = flush(c);
    if (c->pending_rc == 0)
        (void)bkc_out_flush(); /* an error is reported by bkc_stdout_finish */
    if (c->pending_rc == CHECK_STOP)
        check_stop_flag = 1;
    return -1;
}

static int check_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                      const bkc_reader_t *r)
{
    check_ctx_t *c = vctx;
    if (c->pending_rc)
        return c->pending_rc;
    c->input = bkc_reader_name(r); /* "(standard input)" for -, as grep -l says */
    if (c->input_done)
        return 0; /* -l or -m: the rest of this input is not read for */
    if (bkc_batch_push(&c->batch, line, len, key, klen) != 0)
        return bkc_line_error(c->prog, r, "out of memory");
    return bkc_batch_full(&c->batch) ? flush(c) : 0;
}

static int check_end(void *vctx, const bkc_reader_t *r)
{
    (void)r;
    check_ctx_t *c = vctx;
    int rc = c->pending_rc ? c->pending_rc : flush(c);
    c->ended++;
    c->in_input = 0;
    c->input_done = false;
    return rc;
}


/* What the command line asks for. */
typedef struct {
    bkc_input_opts_t in;
    bool absent, count_only, use_mmap, verify, silent, names_only;
    uint64_t max_count;
} check_opts_t;

/* -1 when parsing went on to the operands, else the exit status. */
static int parse_options(int argc, char **argv, check_opts_t *o)
{
    enum { OPT_MMAP = BKC_OPT_OWN, OPT_NO_VERIFY, OPT_NO_PROGRESS };
    static const struct option opts[] = {{"absent", no_argument, 0, 'v'},
                                         {"invert-match", no_argument, 0, 'v'},
                                         {"count", no_argument, 0, 'c'},
                                         {"silent", no_argument, 0, 'q'},
                                         {"files-with-matches", no_argument, 0, 'l'},
                                         {"max-count", required_argument, 0, 'm'},
                                         {"line-regexp", no_argument, 0, 'x'},
                                         {"no-progress", no_argument, 0, OPT_NO_PROGRESS},
                                         {"mmap", no_argument, 0, OPT_MMAP},
                                         {"no-verify", no_argument, 0, OPT_NO_VERIFY},
                                         BKC_INPUT_LONG_OPTIONS,
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    bkc_input_opts_init(&o->in);
    o->verify = true;
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "vcqlm:xh", opts, NULL)) != -1) {
        switch (c) {
        case 'v': o->absent = true; break;
        case 'c': o->count_only = true; break;
        case 'q': /* grep's -q: nothing printed (no progress either) */
            o->silent = true;
            o->in.pmode = BKC_PROGRESS_OFF;
            break;
        case 'l': o->names_only = true; break;
        case 'm':
            if (bkc_parse_count(optarg, &o->max_count) != 0)
                return bkc_usage_error("bad --max-count '%s' (want a number of lines)", optarg);
            break;
        case 'x': break; /* a key is always the whole line */
        case OPT_NO_PROGRESS: o->in.pmode = BKC_PROGRESS_OFF; break;
        case OPT_MMAP: o->use_mmap = true; break;
        case OPT_NO_VERIFY: o->verify = false; break;
        default:
            if ((rc = bkc_shared_option(c, argv, usage, NULL, &o->in)) >= 0)
                return rc;
        }
    }
    return -1;
}

/* Reads every input through the filter, printing or counting; 0, or the
 * exit status of an error. */
static int check_inputs(check_ctx_t *ctx, char **paths, int n, bkc_norm_t norm)
{
    bkc_batch_init(&ctx->batch);
    bkc_reader_set_idle_hook(check_idle, ctx);
    bkc_reader_set_stop_flag(&check_stop_flag);
    int rc = bkc_for_each_line(paths, n, norm, ctx->prog, check_line, check_end, ctx);
    bkc_reader_set_stop_flag(NULL);
    bkc_reader_set_idle_hook(NULL, NULL);
    bkc_batch_free(&ctx->batch);
    return rc == CHECK_STOP ? 0 : rc; /* -q or -m ended the reading early: not an error */
}

int bkc_cmd_check(int argc, char **argv)
{
    check_opts_t o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (optind < argc && bkc_is_remote(argv[optind])) {
        if (o.silent || o.names_only || o.max_count || o.use_mmap)
            return bkc_usage_error("-q, -l, -m and --mmap are for files");
        bkc_remote_opts_t ro = {.url = argv[optind]};
        return bkc_remote_check(&ro, argv + optind + 1, argc - optind - 1, &o.in, o.absent,
                                o.count_only);
    }
    const char *path;
    bk_filter_t *f = bkc_filter_operand(argc, argv, o.use_mmap, &path);
    if (!f)
        return BKC_EXIT_ERROR;
    /* A loaded file was verified as it was read; a mapped one is checked
     * here unless asked not to, since a damaged payload would answer "no"
     * for keys that were added, which a filter must never do. A paged file
     * (loaded or mapped) checks each page as a key first reads it. */
    uint64_t pages = 0;
    bk_filter_pages(f, NULL, &pages);
    if ((o.use_mmap && o.verify && pages == 0 && bkc_verify_mapped(f, path) != 0) ||
        bkc_key_form_settle(f, path, &o.in, false) != 0) {
        bkc_filter_operand_free(f);
        return BKC_EXIT_ERROR;
    }
    /* A filter far past its capacity answers "present" for many absent
     * keys: said on every check (stderr), never silently. */
    bkc_warn_far_over_capacity(f, path);
    bkc_stdout_setup();
    bkc_progress_t prog;
    bkc_progress_init(&prog, o.in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    check_ctx_t ctx = {.f = f, .path = path, .absent = o.absent, .count_only = o.count_only,
                       .silent = o.silent, .names_only = o.names_only,
                       .max_count = o.max_count,
                       .ninputs = argc - optind > 0 ? argc - optind : 1, .prog = &prog,
                       .time_window = bkc_is_time_window(f), .now = bkc_window_now()};
    rc = check_inputs(&ctx, argv + optind, argc - optind, o.in.norm);
    if (rc == 0 && o.count_only && !o.silent)
        printf("%llu\n", (unsigned long long)ctx.selected);
    if (bkc_stdout_finish() != 0)
        rc = BKC_EXIT_ERROR;
    char what[64];
    snprintf(what, sizeof what, "%llu present of ", (unsigned long long)prog.fresh);
    bkc_progress_finish(&prog, rc == 0 && prog.enabled, what);
    bkc_filter_operand_free(f);
    if (rc)
        return BKC_EXIT_ERROR;
    return ctx.selected ? BKC_EXIT_YES : BKC_EXIT_NO;
}
