/*
 * bloomkit check: grep for set membership. Prints the input lines whose key
 * is (possibly) in the filter, or with --absent those that certainly are
 * not, and exits like grep: 0 if any line was printed (selected), 1 if none,
 * 2 on trouble.
 */
#define _GNU_SOURCE
#include "batch.h"
#include "commands.h"
#include "filterfile.h"
#include "keyform.h"
#include "lines.h"
#include "message.h"
#include "options.h"
#include "output.h"
#include "window_opt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "usage: bloomkit check FILE [INPUT...]\n"
    "\n"
    "Prints each line of the INPUTs (files, or - for standard input; default\n"
    "standard input) whose key may be in the filter FILE. A printed line may\n"
    "be a false positive (at the filter's FPR); a line not printed is\n"
    "certainly not in the set. A window filter answers for its window as of\n"
    "now (a time window: the wall clock).\n"
    "Exit status: 0 if any line was selected, 1 if none, 2 on error.\n"
    "\n"
    "  -v, --absent       select the lines that are not in the filter\n"
    "  -c, --count        print only the number of selected lines\n"
    "      --mmap         map FILE instead of reading it (no copy in memory;\n"
    "                     the payload's checksum is still verified first)\n"
    "      --no-verify    with --mmap: skip that check, for the fastest start\n"
    "                     on a file you trust (a damaged file could then\n"
    "                     answer \"absent\" for a key that was added)\n"
    "      --normalize M  url or email: canonicalize keys first (see bloomkit(1))\n"
    "  -q, --quiet        no progress\n"
    "      --progress     progress and a summary even when not on a terminal\n"
    "  -h, --help         this text\n";

typedef struct {
    const bk_filter_t *f;
    bool absent;
    bool count_only;
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
    c->prog->items += b->n;
    c->prog->fresh += present; /* counted as "present" in the summary */
    for (size_t i = 0; i < b->n; i++) {
        if (b->flags[i] == c->absent)
            continue;
        c->selected++;
        if (!c->count_only && bkc_out_line(bkc_batch_line(b, i), b->line_len[i]) != 0)
            return BKC_EXIT_ERROR; /* reported by bkc_stdout_finish */
    }
    bkc_out_sync();
    bkc_batch_reset(b);
    return 0;
}

/* The input is about to wait: print what the batch holds. */
static int check_idle(void *vctx)
{
    check_ctx_t *c = vctx;
    if (c->pending_rc == 0)
        c->pending_rc = flush(c);
    if (c->pending_rc == 0)
        (void)bkc_out_flush(); /* an error is reported by bkc_stdout_finish */
    return -1;
}

static int check_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                      const bkc_reader_t *r)
{
    check_ctx_t *c = vctx;
    if (c->pending_rc)
        return c->pending_rc;
    if (bkc_batch_push(&c->batch, line, len, key, klen) != 0)
        return bkc_line_error(c->prog, r, "out of memory");
    return bkc_batch_full(&c->batch) ? flush(c) : 0;
}

static int check_end(void *vctx, const bkc_reader_t *r)
{
    (void)r;
    check_ctx_t *c = vctx;
    return c->pending_rc ? c->pending_rc : flush(c);
}

int bkc_cmd_check(int argc, char **argv)
{
    enum { OPT_MMAP = BKC_OPT_OWN, OPT_NO_VERIFY };
    static const struct option opts[] = {{"absent", no_argument, 0, 'v'},
                                         {"count", no_argument, 0, 'c'},
                                         {"mmap", no_argument, 0, OPT_MMAP},
                                         {"no-verify", no_argument, 0, OPT_NO_VERIFY},
                                         BKC_INPUT_LONG_OPTIONS,
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bkc_input_opts_t in;
    bkc_input_opts_init(&in);
    bool absent = false, count_only = false, use_mmap = false, verify = true;
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "vcqh", opts, NULL)) != -1) {
        switch (c) {
        case 'v':
            absent = true;
            break;
        case 'c':
            count_only = true;
            break;
        case OPT_MMAP:
            use_mmap = true;
            break;
        case OPT_NO_VERIFY:
            verify = false;
            break;
        default:
            if ((rc = bkc_shared_option(c, argv, usage, NULL, &in)) >= 0)
                return rc;
        }
    }
    const char *path;
    bk_filter_t *f = bkc_filter_operand(argc, argv, use_mmap, &path);
    if (!f)
        return BKC_EXIT_ERROR;
    /* A loaded file was verified as it was read; a mapped one is checked
     * here unless asked not to, since a damaged payload would answer "no"
     * for keys that were added, which a filter must never do. */
    if ((use_mmap && verify && bkc_verify_mapped(f, path) != 0) ||
        bkc_key_form_settle(f, path, &in, false) != 0) {
        bkc_filter_operand_free(f);
        return BKC_EXIT_ERROR;
    }
    /* A filter far past its capacity answers "present" for many absent
     * keys: said on every check (stderr), never silently. */
    bkc_warn_far_over_capacity(f, path);
    bkc_stdout_setup();
    bkc_progress_t prog;
    bkc_progress_init(&prog, in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    check_ctx_t ctx = {.f = f, .absent = absent, .count_only = count_only, .prog = &prog,
                       .time_window = bkc_is_time_window(f), .now = bkc_window_now()};
    bkc_batch_init(&ctx.batch);
    bkc_reader_set_idle_hook(check_idle, &ctx);
    rc = bkc_for_each_line(argv + optind, argc - optind, in.norm, &prog, check_line, check_end,
                           &ctx);
    bkc_reader_set_idle_hook(NULL, NULL);
    bkc_batch_free(&ctx.batch);
    if (rc == 0 && count_only)
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
