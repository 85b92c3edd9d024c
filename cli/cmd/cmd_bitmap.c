/*
 * bloomkit distinct / once: exact jobs on integers too many for a hash set,
 * done with one bit (distinct) or two bits (once) per possible value, e.g.
 * every 11-digit phone number in 2.5 GB. The bitmap is an anonymous mapping,
 * so only the pages the values touch use memory. Each line must be one
 * non-negative integer below --max (surrounding blanks allowed); any other
 * line stops the run with a message naming the file and line.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "numscan.h"
#include "lines.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "output.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char distinct_usage[] =
    "usage: bloomkit distinct [--max N] [--print] [INPUT...]\n"
    "\n"
    "Counts the distinct integers in the INPUTs (files, or - for standard\n"
    "input; default standard input), one per line, exactly, with one bit per\n"
    "possible value. Prints the count, or with --print the distinct values in\n"
    "increasing order.\n"
    "\n"
    "      --max N        values are below N (default 2^32; 11-digit phone\n"
    "                     numbers: --max 2e10, a 2.5 GB bitmap)\n"
    "      --width W      numbers of exactly W digits, leading zeros counted\n"
    "                     and printed back (phone numbers: --width 8); --max\n"
    "                     defaults to 10^W. Without it a leading zero is an\n"
    "                     error, so 0123 and 123 are never merged\n"
    "  -P, --print        print the distinct values instead of their count\n"
    "  -t, --threads N    threads reading a regular file, each its own byte\n"
    "                     range (default: the online CPUs)\n"
    "  -m, --memory SIZE  stop with an error rather than hold more than SIZE\n"
    "                     (default: the memory available at the start)\n"
    "  -q, --quiet        no progress\n"
    "      --progress     progress even when not on a terminal\n"
    "  -h, --help         this text\n"
    "      --lines        count distinct lines of any text instead (exact:\n"
    "                     lines compared byte for byte, within --memory,\n"
    "                     partitions spilled to --tmpdir DIR, on every core,\n"
    "                     as common does); with --print, the distinct lines\n"
    "                     in first appearance per partition (not sorted).\n"
    "                     One INPUT (several: cat them into it)\n"
    "\n"
    "One meaning per letter in every command: -m is --memory (it was --max\n"
    "here before; a bare number after -m is refused) and -w is --window, so\n"
    "--max and --width have no letter.\n";

static const char once_usage[] =
    "usage: bloomkit once [--max N] [--count] [INPUT...]\n"
    "       bloomkit once --lines [--count] [--memory SIZE] [INPUT]\n"
    "\n"
    "Prints, in increasing order, the integers that appear exactly once in the\n"
    "INPUTs (files, or - for standard input; default standard input), one per\n"
    "line, exactly, with two bits per possible value.\n"
    "\n"
    "      --max N        values are below N (default 2^32, a 1 GB bitmap)\n"
    "      --width W      numbers of exactly W digits, leading zeros counted\n"
    "                     and printed back; --max defaults to 10^W. Without\n"
    "                     it a leading zero is an error (0123 is not 123)\n"
    "  -c, --count        print only how many there are\n"
    "  -t, --threads N    threads reading a regular file, each its own byte\n"
    "                     range (default: the online CPUs)\n"
    "  -m, --memory SIZE  stop with an error rather than hold more than SIZE\n"
    "                     (default: the memory available at the start)\n"
    "  -q, --quiet        no progress\n"
    "      --progress     progress even when not on a terminal\n"
    "  -h, --help         this text\n"
    "      --lines        the lines of any text that appear exactly once\n"
    "                     instead (sort | uniq -u, exact: lines compared byte\n"
    "                     for byte, within --memory, partitions spilled to\n"
    "                     --tmpdir DIR, on every core, as common does), in\n"
    "                     first appearance per partition (not sorted). One\n"
    "                     INPUT (several: cat them into it)\n"
    "\n"
    "One meaning per letter in every command: -m is --memory (it was --max\n"
    "here before; a bare number after -m is refused) and -w is --window, so\n"
    "--max and --width have no letter.\n";

/* Values are parsed into a buffer and set in batches: the library then
 * requests each value's word ahead of its update, so the cache misses of a
 * map larger than the caches overlap (bk_bitmap_set_batch). */
#define BM_BATCH 4096

typedef struct {
    bk_bitmap_t *b1;
    bk_bitmap2_t *b2;
    uint64_t max;
    unsigned width; /* --width: digits per value, 0 for plain numbers */
    unsigned threads; /* --threads (0: the online CPUs) */
    bkc_progress_t *prog;
    uint64_t memory; /* --memory: the most this process may hold */
    size_t nvals;
    uint64_t vals[BM_BATCH];
} bm_ctx_t;

/* The memory this process holds of its own now (resident pages that are
 * not file pages: /proc/self/statm's resident less shared), or 0 if
 * unknown. Not the whole resident set: an input read through a mapping
 * shows there too, as page cache the kernel may drop. One pread of a file
 * kept open, cheap enough for every batch. The bitmap is mapped lazily: it
 * grows with the pages the values touch. */
static uint64_t own_bytes(void)
{
    static int fd = -2;
    if (fd == -2)
        fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    char buf[128];
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    unsigned long long size, resident, shared;
    long page = sysconf(_SC_PAGESIZE);
    if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3 || page <= 0 ||
        resident < shared)
        return 0;
    return (resident - shared) * (uint64_t)page;
}

/* Sets the buffered values; counts first sightings and repeats. Then,
 * since values far apart each make the kernel back a page of the map,
 * checks that the process still fits in --memory: stopping with a message
 * beats being killed by the kernel with nothing said. 0 or 2. */
static int bm_flush(bm_ctx_t *c, const bkc_reader_t *r)
{
    uint64_t fresh = c->b1 ? bk_bitmap_set_batch(c->b1, c->vals, c->nvals)
                           : bk_bitmap2_add_batch(c->b2, c->vals, c->nvals);
    c->prog->fresh += fresh;
    c->prog->dups += c->nvals - fresh;
    c->nvals = 0;
    uint64_t held = c->memory ? own_bytes() : 0;
    if (held > c->memory) {
        char h[32], m[32];
        return bkc_line_error(c->prog, r,
                              "the values so far make this run hold %s, more than the %s of "
                              "--memory: give a --max just above the largest value, or split "
                              "the input by value range",
                              bkc_human_bytes((double)held, h, sizeof h),
                              bkc_human_bytes((double)c->memory, m, sizeof m));
    }
    return 0;
}

/* The common line: 1 to 19 digits and nothing else, which cannot overflow
 * 64 bits, so no per-digit overflow test. False for anything else (blanks,
 * CR, signs, longer numbers, empty lines), which parse_value then takes
 * the careful way. */
static inline bool parse_plain_digits(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 19)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Says why a line's digits do not fit (see bkc_digits_fit). */
static int width_error(const char *s, size_t n, unsigned width, const bkc_reader_t *r,
                       bkc_progress_t *prog)
{
    if (width)
        bkc_line_error(prog, r, "%.*s has %zu digits, not the %u of --width", (int)n, s, n,
                       width);
    else
        bkc_line_error(prog, r,
                       "%.*s has a leading zero: for fixed-width numbers (phone numbers) "
                       "give --width %zu, so that it is not counted as %.*s",
                       (int)n, s, n, (int)(n > 1 ? n - 1 : 1), n > 1 ? s + 1 : s);
    return BKC_EXIT_ERROR;
}

/* Parses a line as a decimal integer below max; prints why not. */
static int parse_value(const char *s, size_t len, uint64_t max, unsigned width,
                       const bkc_reader_t *r, bkc_progress_t *prog, uint64_t *out)
{
    if (__builtin_expect(parse_plain_digits(s, len, out), 1) && *out < max &&
        __builtin_expect(bkc_digits_fit(s, len, width), 1))
        return 0;
    size_t a = 0, b = len;
    while (a < b && (s[a] == ' ' || s[a] == '\t'))
        a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r'))
        b--;
    uint64_t v = 0;
    bool ok = a < b, overflow = false;
    for (size_t i = a; i < b && ok; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9) {
            ok = false;
            break;
        }
        if (v > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (!ok) {
        char shown[BKC_SHOWN_MAX];
        bkc_line_error(prog, r, "not a non-negative integer: '%s'", bkc_shown(s, len, shown));
        return BKC_EXIT_ERROR;
    }
    if (!bkc_digits_fit(s + a, b - a, width))
        return width_error(s + a, b - a, width, r, prog);
    if (overflow || v >= max) {
        bkc_line_error(prog, r, "%.*s is not below --max %llu", (int)(b - a), s + a,
                       (unsigned long long)max);
        return BKC_EXIT_ERROR;
    }
    *out = v;
    return 0;
}

static int bitmap_line(void *vctx, const char *line, size_t len, const char *key, size_t klen,
                       const bkc_reader_t *r)
{
    (void)key;
    (void)klen;
    bm_ctx_t *c = vctx;
    uint64_t v;
    int rc = parse_value(line, len, c->max, c->width, r, c->prog, &v);
    if (rc)
        return rc;
    c->prog->items++;
    c->vals[c->nvals++] = v;
    return c->nvals == BM_BATCH ? bm_flush(c, r) : 0;
}

/* The one line at the reader's position the careful way (bitmap_line:
 * blanks, CR, errors named by line). 0 or the exit status. */
static int careful_line(bm_ctx_t *c, bkc_reader_t *r)
{
    const char *line;
    size_t len;
    int got = bkc_reader_next(r, &line, &len);
    if (got == 1)
        return bitmap_line(c, line, len, NULL, 0, r);
    return got < 0 ? bkc_input_failed(c->prog, r) : 0;
}

/* The plain lines at the start of block (which ends with "\n"), parsed
 * in one loop with no call per line (bkc_scan_plain), which was most of
 * the time on a file of 8-digit numbers; the values go to the batch.
 * Consumes what it took from r and stops at the first other line (*more
 * set) or at the end of the block. 0 or the exit status of a flush. */
static int plain_lines(bm_ctx_t *c, bkc_reader_t *r, const char *block, size_t len, bool *more)
{
    const char *p = block, *end = block + len;
    *more = false;
    while (p < end) {
        size_t n;
        const char *q = bkc_scan_plain(p, end, c->max, c->width, c->vals + c->nvals,
                                       BM_BATCH - c->nvals, &n);
        /* consumed first, so a message from a flush names the right line */
        bkc_reader_consume(r, (size_t)(q - p), n);
        c->prog->items += n;
        c->nvals += n;
        p = q;
        if (c->nvals == BM_BATCH) {
            int rc = bm_flush(c, r);
            if (rc)
                return rc;
        } else if (p < end) {
            *more = true; /* a line the careful parser must see */
            break;
        }
    }
    return 0;
}

/* Every value of one input (a bkc_input_fn). 0 or the exit status. */
static int read_values(void *vctx, bkc_reader_t *r)
{
    bm_ctx_t *c = vctx;
    const char *block;
    size_t len;
    int got, rc = 0;
    while (rc == 0 && (got = bkc_reader_peek_lines(r, &block, &len)) == 1) {
        bool more = true;
        if (block[len - 1] == '\n')
            rc = plain_lines(c, r, block, len, &more);
        if (rc == 0 && more)
            rc = careful_line(c, r);
        if (c->prog->enabled)
            bkc_progress_update(c->prog);
    }
    return rc == 0 && got < 0 ? bkc_input_failed(c->prog, r) : rc;
}

/* A first input that is a regular file of at least a megabyte, read by
 * every CPU at once (numscan.h). True if it was read so; false if it is
 * to be read the usual way (a line that is not plain: the map is cleared
 * first, since it holds some of the values). */
static bool read_in_parallel(bm_ctx_t *c, const char *path)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = c->threads ? c->threads : cpus > 1 ? (unsigned)cpus : 1;
    bkc_numscan_t s = {.b1 = c->b1, .b2 = c->b2, .max = c->max, .width = c->width,
                       .threads = threads, .path = path};
    struct stat sb;
    /* stat before open: opening a FIFO would wait for its writer, and
     * take the data the usual reader is to read */
    if (!strcmp(path, "-") || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        sb.st_size < (1 << 20) || !bkc_numscan_usable(&s))
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    bool done = false;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        done = bkc_numscan_file(&s, fd, (uint64_t)sb.st_size) == 1;
        if (done) {
            c->prog->items += s.lines;
            c->prog->fresh += s.fresh;
            c->prog->dups += s.lines - s.fresh;
            c->prog->done_base += (uint64_t)sb.st_size;
        } else if (c->b1) {
            bk_bitmap_clear(c->b1);
        } else {
            bk_bitmap2_clear(c->b2);
        }
    }
    if (fd >= 0)
        close(fd);
    return done;
}

/* Every value of every input (standard input when there are none). */
static int read_inputs(bm_ctx_t *c, char **paths, int n)
{
    if (n > 0 && read_in_parallel(c, paths[0])) {
        if (n == 1)
            return 0;
        paths++;
        n--;
    }
    return bkc_for_each_input(paths, n, c->prog, read_values, c);
}

/* Prints a value as it was given: zero-padded to --width digits. */
static bool print_value(uint64_t v, void *ctx)
{
    const bm_ctx_t *c = ctx;
    printf("%0*llu\n", (int)c->width, (unsigned long long)v);
    return !ferror(stdout);
}

typedef struct bm_opts {
    uint64_t max, memory;
    unsigned width, threads; /* threads: 0 for the online CPUs */
    bool print, count;
    bkc_input_opts_t in; /* --normalize is not offered: values are integers */
} bm_opts_t;

/* -1 when parsing went on to the inputs, else the exit status. */
static int parse_options(int argc, char **argv, bool once, bm_opts_t *o)
{
    enum { OPT_MEMORY = BKC_OPT_OWN, OPT_MAX, OPT_WIDTH };
    static const struct option opts[] = {{"max", required_argument, 0, OPT_MAX},
                                         {"threads", required_argument, 0, 't'},
                                         {"memory", required_argument, 0, OPT_MEMORY},
                                         {"width", required_argument, 0, OPT_WIDTH},
                                         {"print", no_argument, 0, 'P'},
                                         {"count", no_argument, 0, 'c'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"progress", no_argument, 0, BKC_OPT_PROGRESS},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    bkc_input_opts_init(&o->in);
    const char *usage = once ? once_usage : distinct_usage;
    int c, rc;
    uint64_t w;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, once ? "m:w:t:cqh" : "m:w:t:Pqh", opts, NULL)) != -1) {
        switch (c) {
        case OPT_MAX:
            if (bkc_parse_count(optarg, &o->max) != 0 || o->max == 0 ||
                o->max > (UINT64_C(1) << 48))
                return bkc_usage_error("bad --max '%s' (1 to 2^48)", optarg);
            break;
        case 'm':
            /* One meaning per letter across the tool: -m is --memory, as
             * in common. It was --max here: a bare number is refused
             * rather than read as bytes. */
            if (optarg[0] && optarg[strspn(optarg, "0123456789")] == '\0')
                return bkc_usage_error("-m is --memory (a size with a unit, e.g. 512M), as in "
                                       "common; for the largest value write --max %s",
                                       optarg);
            if (bkc_parse_size(optarg, &o->memory) != 0 || o->memory == 0)
                return bkc_usage_error("bad --memory '%s' (a size, e.g. 512M, 4G)", optarg);
            break;
        case 'w':
            return bkc_usage_error("-w is --window in every command; write --width %s", optarg);
        case OPT_WIDTH:
            /* 10^14 is the largest power of ten within --max's 2^48 */
            if (bkc_parse_count(optarg, &w) != 0 || w == 0 || w > 14)
                return bkc_usage_error("bad --width '%s' (1 to 14 digits)", optarg);
            o->width = (unsigned)w;
            break;
        case OPT_MEMORY:
            if (bkc_parse_size(optarg, &o->memory) != 0 || o->memory == 0)
                return bkc_usage_error("bad --memory '%s' (a size, e.g. 512M, 4G)", optarg);
            break;
        case 't':
            if (bkc_parse_u64(optarg, &w) != 0 || w < 1 || w > BKC_NUMSCAN_MAX_THREADS)
                return bkc_usage_error("bad --threads '%s' (1 to %d)", optarg,
                                       BKC_NUMSCAN_MAX_THREADS);
            o->threads = (unsigned)w;
            break;
        case 'P':
        case 'c':
            if (once != (c == 'c'))
                return bkc_bad_option(argv, usage);
            *(c == 'c' ? &o->count : &o->print) = true;
            break;
        default:
            if ((rc = bkc_shared_option(c, argv, usage, NULL, &o->in)) >= 0)
                return rc;
        }
    }
    if (o->max == 0) {
        o->max = UINT64_C(1) << 32;
        if (o->width)
            for (o->max = 1, w = 0; w < o->width; w++)
                o->max *= 10;
    }
    return -1;
}

static int run(int argc, char **argv, bool once)
{
    bm_opts_t o;
    int rc = parse_options(argc, argv, once, &o);
    if (rc >= 0)
        return rc;
    uint64_t max = o.max;
    bool print = o.print, count = o.count;
    bkc_input_opts_t in = o.in;
    static bm_ctx_t ctx; /* 32 KB of buffer: not on the stack */
    memset(&ctx, 0, sizeof ctx);
    ctx.max = max;
    ctx.width = o.width;
    ctx.threads = o.threads;
    ctx.memory = o.memory ? o.memory : bk_memory_available();
    bk_status_t st = once ? bk_bitmap2_create(&ctx.b2, max) : bk_bitmap_create(&ctx.b1, max);
    if (st != BK_OK) {
        /* Only the address space is taken here (pages come as values
         * touch them), so this fails when even that is refused. */
        char h[32];
        bkc_error("cannot map a %s bitmap for --max %llu: %s; give a --max just above the "
                  "largest value",
                  bkc_human_bytes(once ? (double)max / 4 : (double)max / 8, h, sizeof h),
                  (unsigned long long)max, bk_strerror(st));
        return BKC_EXIT_ERROR;
    }
    bkc_stdout_setup();
    bkc_progress_t prog;
    bkc_progress_init(&prog, in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    prog.has_fresh = !once;
    ctx.prog = &prog;
    rc = read_inputs(&ctx, argv + optind, argc - optind);
    if (rc == 0)
        rc = bm_flush(&ctx, NULL);
    bkc_progress_clear(&prog);
    if (rc == 0) {
        if (once && count) {
            uint64_t counts[3];
            bk_bitmap2_counts(ctx.b2, counts);
            printf("%llu\n", (unsigned long long)counts[1]);
        } else if (once) {
            bk_bitmap2_foreach(ctx.b2, 1, print_value, &ctx);
        } else if (print) {
            bk_bitmap_foreach(ctx.b1, print_value, &ctx);
        } else {
            printf("%llu\n", (unsigned long long)bk_bitmap_count(ctx.b1));
        }
        if (bkc_stdout_finish() != 0)
            rc = BKC_EXIT_ERROR;
    }
    if (rc == 0 && prog.enabled)
        bkc_progress_summary(&prog, "");
    bk_bitmap_free(ctx.b1);
    bk_bitmap2_free(ctx.b2);
    return rc;
}

/* distinct --lines and once --lines: their words turned into common's
 * (distinct counts unless --print, once prints unless --count, as they do
 * for integers; --max and --width are for integers), then the join of one
 * input (join: bkc_cmd_distinct_lines or bkc_cmd_once_lines). */
static int lines_join(int argc, char **argv, int (*join)(int, char **), bool count_default)
{
    char **av = calloc((size_t)argc + 2, sizeof *av);
    if (!av) {
        bkc_error("out of memory");
        return BKC_EXIT_ERROR;
    }
    static char count_opt[] = "--count";
    int n = 0;
    bool print = false;
    av[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc)
                av[n++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--lines") == 0)
            continue;
        if (strcmp(argv[i], "--print") == 0 || strcmp(argv[i], "-P") == 0) {
            print = true;
            continue;
        }
        if (strncmp(argv[i], "--max", 5) == 0 || strncmp(argv[i], "--width", 7) == 0) {
            free(av);
            return bkc_usage_error("--lines counts lines of text: --max and --width are for "
                                   "integers");
        }
        av[n++] = argv[i];
    }
    if (count_default && !print) { /* before the operands: getopt stops at "--" */
        memmove(av + 2, av + 1, (size_t)(n - 1) * sizeof *av);
        av[1] = count_opt;
        n++;
    }
    av[n] = NULL;
    int rc = join(n, av);
    free(av);
    return rc;
}

int bkc_cmd_distinct(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--lines") == 0)
            return lines_join(argc, argv, bkc_cmd_distinct_lines, true);
    return run(argc, argv, false);
}

int bkc_cmd_once(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--lines") == 0)
            return lines_join(argc, argv, bkc_cmd_once_lines, false);
    return run(argc, argv, true);
}
