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
#include "lines.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "output.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char distinct_usage[] =
    "usage: bloomkit distinct [--max N] [--print] [INPUT...]\n"
    "\n"
    "Counts the distinct integers in the INPUTs (files, or - for standard\n"
    "input; default standard input), one per line, exactly, with one bit per\n"
    "possible value. Prints the count, or with --print the distinct values in\n"
    "increasing order.\n"
    "\n"
    "  -m, --max N        values are below N (default 2^32; 11-digit phone\n"
    "                     numbers: --max 2e10, a 2.5 GB bitmap)\n"
    "  -P, --print        print the distinct values instead of their count\n"
    "  -q, --quiet        no progress\n"
    "      --progress     progress even when not on a terminal\n"
    "  -h, --help         this text\n";

static const char once_usage[] =
    "usage: bloomkit once [--max N] [--count] [INPUT...]\n"
    "\n"
    "Prints, in increasing order, the integers that appear exactly once in the\n"
    "INPUTs (files, or - for standard input; default standard input), one per\n"
    "line, exactly, with two bits per possible value.\n"
    "\n"
    "  -m, --max N        values are below N (default 2^32, a 1 GB bitmap)\n"
    "  -c, --count        print only how many there are\n"
    "  -q, --quiet        no progress\n"
    "      --progress     progress even when not on a terminal\n"
    "  -h, --help         this text\n";

typedef struct {
    bk_bitmap_t *b1;
    bk_bitmap2_t *b2;
    uint64_t max;
    bkc_progress_t *prog;
} bm_ctx_t;

/* Parses a line as a decimal integer below max; prints why not. */
static int parse_value(const char *s, size_t len, uint64_t max, const bkc_reader_t *r,
                       bkc_progress_t *prog, uint64_t *out)
{
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
        int show = len > 40 ? 40 : (int)len;
        char shown[41];
        for (int i = 0; i < show; i++)
            shown[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
        shown[show] = '\0';
        bkc_line_error(prog, r, "not a non-negative integer: '%s%s'", shown, len > 40 ? "..." : "");
        return BKC_EXIT_ERROR;
    }
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
    int rc = parse_value(line, len, c->max, r, c->prog, &v);
    if (rc)
        return rc;
    c->prog->items++;
    if (c->b1) {
        if (bk_bitmap_set(c->b1, v))
            c->prog->fresh++;
        else
            c->prog->dups++;
    } else {
        if (bk_bitmap2_add(c->b2, v) == 1)
            c->prog->fresh++;
        else
            c->prog->dups++;
    }
    return 0;
}

static bool print_value(uint64_t v, void *ctx)
{
    (void)ctx;
    printf("%llu\n", (unsigned long long)v);
    return !ferror(stdout);
}

static int run(int argc, char **argv, bool once)
{
    static const struct option opts[] = {{"max", required_argument, 0, 'm'},
                                         {"print", no_argument, 0, 'P'},
                                         {"count", no_argument, 0, 'c'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"progress", no_argument, 0, BKC_OPT_PROGRESS},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    uint64_t max = UINT64_C(1) << 32;
    bool print = false, count = false;
    const char *usage = once ? once_usage : distinct_usage;
    bkc_input_opts_t in; /* --normalize is not offered: values are integers */
    bkc_input_opts_init(&in);
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, once ? "m:cqh" : "m:Pqh", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (bkc_parse_count(optarg, &max) != 0 || max == 0 || max > (UINT64_C(1) << 48))
                return bkc_usage_error("bad --max '%s' (1 to 2^48)", optarg);
            break;
        case 'P':
            if (once)
                return bkc_bad_option(argv);
            print = true;
            break;
        case 'c':
            if (!once)
                return bkc_bad_option(argv);
            count = true;
            break;
        default:
            if ((rc = bkc_shared_option(c, argv, usage, NULL, &in)) >= 0)
                return rc;
        }
    }
    bm_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.max = max;
    bk_status_t st = once ? bk_bitmap2_create(&ctx.b2, max) : bk_bitmap_create(&ctx.b1, max);
    if (st != BK_OK) {
        bkc_error("cannot make a bitmap for --max %llu: %s", (unsigned long long)max,
                  bk_strerror(st));
        return BKC_EXIT_ERROR;
    }
    bkc_stdout_setup();
    bkc_progress_t prog;
    bkc_progress_init(&prog, in.pmode, bkc_inputs_size(argv + optind, argc - optind));
    prog.has_fresh = !once;
    ctx.prog = &prog;
    rc = bkc_for_each_line(argv + optind, argc - optind, BKC_NORM_NONE, &prog, bitmap_line, NULL,
                           &ctx);
    bkc_progress_clear(&prog);
    if (rc == 0) {
        if (once && count) {
            uint64_t counts[3];
            bk_bitmap2_counts(ctx.b2, counts);
            printf("%llu\n", (unsigned long long)counts[1]);
        } else if (once) {
            bk_bitmap2_foreach(ctx.b2, 1, print_value, NULL);
        } else if (print) {
            bk_bitmap_foreach(ctx.b1, print_value, NULL);
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

int bkc_cmd_distinct(int argc, char **argv)
{
    return run(argc, argv, false);
}

int bkc_cmd_once(int argc, char **argv)
{
    return run(argc, argv, true);
}
