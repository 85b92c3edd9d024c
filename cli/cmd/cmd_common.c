/*
 * `bloomkit common`: the lines present in every one of several files,
 * exactly, within a memory cap, at any input size. The join itself lives
 * in join*.c (see join.h for the method and its layering); this file reads
 * the command line with the tool's shared options, runs the join, and
 * reports in the tool's words.
 *
 * Errors: every input is opened before any work, so a missing file fails
 * at once. In the spilling case every input has been read completely
 * before the first line is printed; an error after printing began (a full
 * disk while re-partitioning, a write error) ends with exit 2 and a
 * message that says the output is incomplete.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "input.h"
#include "join.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "output.h"
#include "progress.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MIN_MEMORY ((uint64_t)64 << 10)

static const char usage[] =
    "usage: bloomkit common [options] FILE FILE [FILE...]\n"
    "Prints each line present in every FILE, once. Exact: lines are compared\n"
    "byte for byte, whatever the input sizes, within --memory; inputs that do\n"
    "not fit are hash-partitioned into temporary files under --tmpdir.\n"
    "FILE may be - (standard input, once). Lines end at \\n; a \\r before it is\n"
    "dropped. Output order: first appearance in the smallest input within\n"
    "each partition (not sorted).\n"
    "\n"
    "  -m, --memory SIZE     memory cap, e.g. 512M, 4G (default: 1/4 of RAM)\n"
    "  -T, --tmpdir DIR      where to spill (default: $TMPDIR or /tmp)\n"
    "  -t, --threads N       threads for the exact join, each with 1/N of --memory\n"
    "                        (default: the online CPUs, at most 64; one when an\n"
    "                        input is - or a pipe)\n"
    "  -c, --count           print only how many lines are common\n"
    "  -i, --ignore-case     compare ASCII letters case-insensitively (prints\n"
    "                        lines lowercased)\n"
    "      --normalize MODE  url or email: compare canonical forms (prints them)\n"
    "      --approx          answer from Bloom filters alone: faster, never misses\n"
    "                        a common line except as stated, but may print lines\n"
    "                        that are not common (the rate goes to stderr)\n"
    "  -p, --fpr P           --approx: false-positive rate per filter (0.001,\n"
    "                        or 0.1%)\n"
    "      --verbose         statistics on stderr (-v, check's --absent, is\n"
    "                        no longer accepted for it)\n"
    "  -q, --quiet           no progress and no summary\n"
    "      --progress        progress and the summary even when not on a\n"
    "                        terminal (the time so far and the common lines\n"
    "                        found; a line every 5 s)\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 if some line is common, 1 if none, 2 on error.\n";

enum { OPT_APPROX = BKC_OPT_OWN, OPT_VERBOSE };

/* More threads than this only split the memory finer. */
#define MAX_THREADS 64

typedef struct common_opts {
    uint64_t memory;
    uint64_t threads; /* 0: the online CPUs */
    const char *tmpdir;
    bool count_only, verbose, approx;
    bkc_sizing_opts_t sz; /* --fpr */
    bkc_input_opts_t in;  /* --normalize */
    bool icase;
} common_opts_t;

static uint64_t default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || pg <= 0)
        return (uint64_t)1 << 30;
    return (uint64_t)pages * (uint64_t)pg / 4;
}

/* The kernel's limit on open files does not matter much here (one spill
 * file per input per level), but many inputs may be given. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* -1 when parsing went well (optind at the first FILE), else the exit
 * status. */
static int parse_options(int argc, char **argv, common_opts_t *o, int min_inputs)
{
    static const struct option opts[] = {
        {"memory", required_argument, 0, 'm'}, {"tmpdir", required_argument, 0, 'T'},
        {"count", no_argument, 0, 'c'},        {"ignore-case", no_argument, 0, 'i'},
        {"normalize", required_argument, 0, BKC_OPT_NORMALIZE},
        {"approx", no_argument, 0, OPT_APPROX}, {"fpr", required_argument, 0, 'p'},
        {"verbose", no_argument, 0, OPT_VERBOSE}, {"help", no_argument, 0, 'h'},
        {"threads", required_argument, 0, 't'},
        {"quiet", no_argument, 0, 'q'},        {"progress", no_argument, 0, BKC_OPT_PROGRESS},
        {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    bkc_sizing_opts_init(&o->sz, 1, 0.001);
    bkc_input_opts_init(&o->in);
    o->tmpdir = getenv("TMPDIR");
    if (!o->tmpdir || !*o->tmpdir)
        o->tmpdir = "/tmp";
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "m:T:t:cip:vqh", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (bkc_parse_size(optarg, &o->memory) != 0 || o->memory < MIN_MEMORY)
                return bkc_usage_error("bad --memory '%s' (a size of at least 64K, e.g. 512M)",
                                       optarg);
            break;
        case 'T': o->tmpdir = optarg; break;
        case 't':
            if (bkc_parse_u64(optarg, &o->threads) != 0 || o->threads < 1 ||
                o->threads > MAX_THREADS)
                return bkc_usage_error("bad --threads '%s' (1 to %d)", optarg, MAX_THREADS);
            break;
        case 'c': o->count_only = true; break;
        case 'i': o->icase = true; break;
        case OPT_APPROX: o->approx = true; break;
        case OPT_VERBOSE: o->verbose = true; break;
        case 'v':
            /* one meaning per letter across the tool: -v is check's --absent */
            return bkc_usage_error("-v is no longer --verbose here (-v means --absent, as in "
                                   "check); write --verbose");
        default:
            if ((rc = bkc_shared_option(c, argv, usage, &o->sz, &o->in)) >= 0)
                return rc;
        }
    }
    if (argc - optind < min_inputs)
        return bkc_usage_error("needs at least two files");
    return -1;
}

static int print_line(void *ctx, const char *line, size_t len)
{
    const common_opts_t *o = ctx;
    return o->count_only ? 0 : bkc_out_line(line, len);
}

static int print_lines(void *ctx, const char *bytes, size_t len)
{
    (void)ctx;
    return bkc_out_lines(bytes, len);
}

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

/* The join's settings from the options: the budget is --memory less a
 * reserve for the process, each thread's reader, batch and output
 * buffers, and the copies of one line being read (input buffer, batch,
 * spill read-back), which bound the line length that stays within
 * --memory. */
static void join_setup(bkc_join_t *join, common_opts_t *o)
{
    memset(join, 0, sizeof *join);
    uint64_t memory = o->memory ? o->memory : default_memory();
    join->threads = o->threads ? (unsigned)o->threads : online_cpus();
    /* At small budgets the reserve takes up to 11/16 of it: at --memory 8M
     * with two threads, half (4 MiB) left the process's peak 0-0.2% over
     * the budget, its fixed part (code, stacks, buffers) being about that,
     * and 5/8 0.3% over once the library had grown (cuckoo filters). */
    uint64_t reserve = ((uint64_t)2 << 20) * (1 + join->threads) + memory / 64;
    if (reserve > memory / 16 * 11)
        reserve = memory / 16 * 11;
    /* What is left of the reserve beside the process itself (about
     * 1.5 MiB) and each thread's buffers (1.25 MiB) holds a long line's
     * copies: every thread's input buffer and batch may hold it (each
     * thread reads every line), and one set, spill read-back buffer and
     * reader of a partition. */
    /* Below 32 MiB each reader reads in chunks of 1/32 of the budget (at
     * least 64 KiB) rather than 1 MiB: at --memory 8M two threads peaked
     * at 7.8-8.3 MB with 1 MiB readers (over the budget one run in five),
     * 5.4-5.8 MB with 256 KiB ones. A longer line still grows its buffer. */
    if (memory < ((uint64_t)32 << 20))
        bkc_reader_set_limits(0, memory / 32 > (64 << 10) ? (size_t)(memory / 32) : 64 << 10);
    uint64_t fixed = ((uint64_t)3 << 19) + ((uint64_t)5 << 18) * join->threads;
    uint64_t spare = reserve > fixed ? reserve - fixed : 0;
    join->line_allowance = (size_t)(spare / (2 * join->threads + 3));
    if (join->line_allowance < 4096)
        join->line_allowance = 4096;
    join->mem = (size_t)(memory - reserve);
    join->tmpdir = o->tmpdir;
    join->seed = bk_random_seed();
    join->norm = o->in.norm;
    join->icase = o->icase;
    join->emit = print_line;
    join->emit_lines = print_lines;
    join->count_only = o->count_only;
    join->emit_ctx = o;
}

/* Prints the count, flushes, and says what went wrong if anything did.
 * Returns the exit status. */
static int finish(const bkc_join_t *join, const common_opts_t *o, int rc)
{
    if (rc == 0 && o->count_only) {
        char num[32];
        int len = snprintf(num, sizeof num, "%" PRIu64, join->found);
        rc = bkc_out_line(num, (size_t)len);
    }
    if (bkc_out_flush() != 0 || join->emit_failed || rc != 0) {
        const char *incomplete = join->found && !o->count_only ? "; the output is incomplete" : "";
        if (bkc_out_error())
            bkc_error("write error: %s%s", strerror(bkc_out_error()), incomplete);
        else
            bkc_error("%s%s", join->err, incomplete);
        return BKC_EXIT_ERROR;
    }
    if (join->long_line) {
        char at[64];
        if (join->long_lineno)
            snprintf(at, sizeof at, "line %" PRIu64, join->long_lineno);
        else
            snprintf(at, sizeof at, "the line at byte %" PRIu64, join->long_offset);
        bkc_error("%s: %s is %" PRIu64 " bytes long: holding it took memory beyond "
                  "--memory (lines up to %zu bytes fit; give a larger --memory to stay within it)",
                  join->long_path, at, join->long_line, join->line_allowance);
    }
    if (o->approx)
        bkc_error("approximate: a printed line is not common with probability <= %.3g; "
                  "a common line is left out with probability <= %.3g (duplicate filter)",
                  join->approx_false_rate, join->approx_miss_rate);
    if (o->verbose && !o->approx)
        bkc_error("%" PRIu64 " common; %u threads; %s%s%s; %" PRIu64 " partitions, %u levels, %" PRIu64
                  " bytes spilled, %" PRIu64 " lines kept off disk by the filter",
                  join->found, join->workers,
                  join->partitions ? "partitioned"
                  : join->mapped   ? "in memory (the smallest input mapped)"
                                   : "in memory",
                  join->split ? " (each input read in byte ranges, one per thread)" : "",
                  join->restarts ? " (the input outgrew its estimate and was read again)" : "",
                  join->partitions, join->max_level, join->spilled_bytes, join->filtered_lines);
    if (o->verbose && join->timing[0])
        bkc_error("%s", join->timing);
    if (o->verbose && o->approx)
        bkc_error("%" PRIu64 " common", join->found);
    return join->found ? BKC_EXIT_YES : BKC_EXIT_NO;
}

/* The progress display: the join runs on its own threads and counts no
 * bytes, so a ticker thread shows the time so far and the common lines
 * found, every progress interval (on a terminal, in place; with
 * --progress, a line), and the summary at the end. */
typedef struct {
    bkc_progress_t prog;
    const bkc_join_t *join;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool running, stop;
} ticker_t;

static void *ticker_main(void *arg)
{
    ticker_t *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double at = (double)until.tv_sec + (double)until.tv_nsec * 1e-9 + t->prog.interval;
        until.tv_sec = (time_t)at;
        until.tv_nsec = (long)((at - (double)until.tv_sec) * 1e9);
        if (pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0 || t->stop)
            continue;
        char text[160];
        uint64_t found = __atomic_load_n(&t->join->found, __ATOMIC_RELAXED);
        snprintf(text, sizeof text, "%.1f s, %" PRIu64 " common lines so far",
                 bkc_now() - t->prog.start, found);
        bkc_progress_status(&t->prog, text);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void ticker_start(ticker_t *t, const bkc_join_t *join, bkc_progress_mode_t mode)
{
    memset(t, 0, sizeof *t);
    bkc_progress_init(&t->prog, mode, 0); /* no byte count: a status line */
    t->join = join;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (t->prog.enabled && t->prog.interval > 0)
        t->running = pthread_create(&t->thread, NULL, ticker_main, t) == 0;
}

static void ticker_stop(ticker_t *t, bool summary)
{
    if (t->running) {
        pthread_mutex_lock(&t->mu);
        t->stop = true;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->thread, NULL);
    }
    bkc_progress_clear(&t->prog);
    if (summary && t->prog.enabled)
        fprintf(stderr, "bloomkit common: %" PRIu64 " common lines, %.2f s\n", t->join->found,
                bkc_now() - t->prog.start);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

/* What common_main runs: common (every input's common lines), or the
 * join of one input: its distinct lines, or those it holds exactly once. */
typedef enum { JOIN_COMMON, JOIN_DISTINCT, JOIN_ONCE } join_what_t;

static int common_main(int argc, char **argv, join_what_t what);

int bkc_cmd_common(int argc, char **argv)
{
    return common_main(argc, argv, JOIN_COMMON);
}

/* distinct --lines: the exact join of one input (its distinct lines), so
 * text lines are counted as common counts: within --memory, spilling
 * partitions to --tmpdir, on every core. argv is common's (cmd_bitmap.c
 * rewrote distinct's); no input is standard input. */
int bkc_cmd_distinct_lines(int argc, char **argv)
{
    return common_main(argc, argv, JOIN_DISTINCT);
}

/* once --lines: the same join, a line met twice marked as it is loaded
 * (bkc_join_t.once), so the lines left are those held exactly once. */
int bkc_cmd_once_lines(int argc, char **argv)
{
    return common_main(argc, argv, JOIN_ONCE);
}

static int common_main(int argc, char **argv, join_what_t what)
{
    common_opts_t o;
    int rc = parse_options(argc, argv, &o, what == JOIN_COMMON ? 2 : 0);
    if (rc >= 0)
        return rc;
    const char *cmd = what == JOIN_ONCE ? "once" : "distinct";
    /* One input: the join of several is what they share, not what they
     * hold together. */
    if (what != JOIN_COMMON && argc - optind > 1)
        return bkc_usage_error("%s --lines reads one input (for several, as one: cat them "
                               "into it, `cat a b | bloomkit %s --lines`)",
                               cmd, cmd);
    if (what == JOIN_ONCE && o.approx)
        return bkc_usage_error("once --lines is exact: --approx is for common");
    static char stdin_path[] = "-";
    static char *only_stdin[] = {stdin_path, NULL};
    if (argc == optind) { /* distinct --lines with no INPUT */
        argv = only_stdin;
        argc = 1;
        optind = 0;
    }
    uint32_t n = (uint32_t)(argc - optind);
    bkc_join_t join;
    join_setup(&join, &o);
    join.once = what == JOIN_ONCE;
    raise_nofile();
    bkc_join_src_t *srcs = NULL;
    if (bkc_join_sources_open(&join, argv + optind, n, &srcs) != 0) {
        bkc_error("%s", join.err);
        return BKC_EXIT_ERROR;
    }
    ticker_t tick;
    ticker_start(&tick, &join, o.in.pmode);
    rc = o.approx ? bkc_join_approx(&join, srcs, n, o.sz.p) : bkc_join_exact(&join, srcs, n);
    ticker_stop(&tick, rc == 0 && !join.emit_failed);
    rc = finish(&join, &o, rc);
    bkc_join_sources_free(srcs, n);
    bkc_join_release(&join);
    return rc;
}
