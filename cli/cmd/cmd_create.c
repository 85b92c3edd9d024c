/*
 * bloomkit create: makes an empty filter file sized for N items at rate P,
 * so later `add`, `check` and `dedup --state` runs share one filter; or,
 * with a static kind (fuse8, fuse16, fuse32), builds the filter of a key set given
 * whole by its INPUTs.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "filterfile.h"
#include "keyform.h"
#include "lines.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "window_opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: bloomkit create FILE -n N -p P [--kind KIND] [--hash HASH] [--seed S]\n"
    "       bloomkit create FILE --window COUNT -p P\n"
    "       bloomkit create FILE --window TIME -n N -p P\n"
    "       bloomkit create --kind fuse8|fuse16|fuse32 FILE [INPUT...] [-p P] [--memory SIZE]\n"
    "\n"
    "Makes an empty filter file for N items at false-positive rate P.\n"
    "A window filter remembers only the last COUNT lines added (100M), or the\n"
    "lines added in the last TIME of wall clock (7d, 12h, 90m, 3600s; N is then\n"
    "the most lines added within any TIME, in whatever bursts); a line added\n"
    "over 4/3 of the window ago (G/(G-1) with --generations G) is forgotten.\n"
    "A time window takes about twice the memory of a count window of the same\n"
    "N and P (it keeps 2G slots, so bursts cannot overfill one).\n"
    "A static filter (--kind fuse8, fuse16 or fuse32, or --static to pick one by P) is\n"
    "built from every line of the INPUTs (files, or - for standard input;\n"
    "default standard input), as add reads them: 9.0 or 18.0 bits a key at\n"
    "rates 2^-8 (0.39%) and 2^-16 (0.0015%), a quarter less than a Bloom\n"
    "filter; it is never added to: build it again when the set changes.\n"
    "An existing FILE is kept unless --force is given.\n"
    "\n"
    "  -n, --capacity N   items the filter must hold (10000000, 10M, 1e7)\n"
    "  -p, --fpr P        false-positive rate at N items (0.001, 1e-3, 0.1%)\n"
    "  -k, --kind KIND    split, blocked, blocked2, classic, precise, counting,\n"
    "                     cuckoo (deletes, a fifth of counting's bytes) or\n"
    "                     scalable, or fuse8 / fuse16 / fuse32 (static, from INPUTs);\n"
    "                     default by P, as plan says: split for\n"
    "                     0.004 <= P <= 0.02, blocked for other P >= 0.001,\n"
    "                     blocked2 below\n"
    "      --hash HASH    xxh3-mix8 (default: XXH3-128, but a line of exactly\n"
    "                     8 bytes gets a cheaper integer mixer), xxh3, or a\n"
    "                     classic string hash: bkdr, ap, djb, js, rs, sdbm,\n"
    "                     dek, elf, pjw, fnv1a\n"
    "      --seed S       hash seed (default: random, so nobody can predict\n"
    "                     which keys collide)\n"
    "      --growth G     scalable: capacity factor per added sub-filter (2)\n"
    "      --nonscaling   scalable: refuse adds past capacity instead of growing\n"
    "  -w, --window SPEC  a window filter: a count (100M) or a time (7d)\n"
    "      --generations G  window: generations kept, 2..16 (default 4; more\n"
    "                     forget more sharply, lookups read G lines)\n"
    "      --normalize M  url or email: the keys will be canonicalized this way\n"
    "                     (recorded in FILE, so add, check and dedup --state use\n"
    "                     it without being told; see bloomkit(1))\n"
    "      --static       a static filter of the INPUTs' lines: fuse8 for P >=\n"
    "                     0.0041, fuse16 for P >= 1.6e-5, else fuse32 (P >=\n"
    "                     2.4e-10); P defaults to fuse8's 2^-8\n"
    "  -m, --memory SIZE  static: cap on the build's memory (default: a quarter\n"
    "                     of RAM); larger sets are built in parts, their key\n"
    "                     hashes (8 bytes a line) kept in unlinked files\n"
    "      --tmpdir DIR   static: where those files go ($TMPDIR or /tmp)\n"
    "  -f, --force        replace an existing FILE; make a filter larger than the\n"
    "                     memory available or the free disk space (refused\n"
    "                     without it: most often a typo in -n or -p)\n"
    "  -h, --help         this text\n";

/* Applies --window and checks that the options make one filter: -1 when
 * they do, else the exit status after a usage message. */
static int check_sizing(bkc_sizing_opts_t *sz, const char *window)
{
    const bk_options_t *o = &sz->o;
    int rc;
    if (window) {
        bool time_window;
        uint64_t n = sz->n;
        if ((rc = bkc_window_option(window, sz, &time_window)) >= 0)
            return rc;
        if (!time_window && n != 0 && n != sz->n)
            return bkc_usage_error("--window COUNT is the capacity: leave out -n");
    } else if (o->window_generations) {
        return bkc_usage_error("--generations needs --window");
    }
    if (sz->n == 0 || sz->p == 0)
        return bkc_usage_error("-n and -p are required");
    /* the options of a chain that grows with tighter rates */
    unsigned caps = bk_kind_caps(o->kind);
    if ((o->growth != 0 || o->nonscaling) &&
        !((caps & BK_CAP_GROW) && (caps & BK_CAP_BOUNDED)))
        return bkc_usage_error("--growth and --nonscaling need --kind scalable");
    return -1;
}

/* Makes the filter sz describes and saves it at path (nothing there unless
 * force, and room for it unless force). 0, or 2 after a message. */
static int make_and_save(const char *path, const bkc_sizing_opts_t *sz, bkc_norm_t norm,
                         bool force)
{
    struct stat sb;
    if (!force && stat(path, &sb) == 0) {
        bkc_error("%s: file exists (use --force to replace it)", path);
        return BKC_EXIT_ERROR;
    }
    bk_filter_t *f = NULL;
    bk_status_t st = bk_filter_create(&f, sz->n, sz->p, &sz->o);
    if (st != BK_OK) {
        bkc_error("%s: cannot create a filter for n=%llu p=%g: %s", path,
                  (unsigned long long)sz->n, sz->p, bk_strerror(st));
        return BKC_EXIT_ERROR;
    }
    if (bkc_new_filter_fits(f, path, force, "--force makes it anyway") != 0) {
        bk_filter_free(f);
        return BKC_EXIT_ERROR;
    }
    /* Recorded even when none is asked for: "as given" lets a later
     * `check --normalize url` be refused instead of answering "absent". */
    bk_filter_set_key_form(f, bkc_form_of_norm(norm));
    int rc = bkc_save_filter(f, path) == 0 ? 0 : BKC_EXIT_ERROR;
    bk_filter_free(f);
    return rc;
}

/* ---- static filters ---- */

typedef struct {
    bk_builder_t *b;
    bkc_progress_t *prog;
} build_ctx_t;

static int build_line(void *ctx, const char *line, size_t len, const char *key, size_t klen,
                      const bkc_reader_t *r)
{
    (void)line, (void)len;
    build_ctx_t *c = ctx;
    bk_status_t st = bk_builder_add(c->b, key, klen);
    if (st == BK_EIO || st == BK_ENOSPC) /* the spill file, not the input */
        return bkc_line_error(c->prog, r,
                              "cannot write the key hashes to a temporary file in %s: %s",
                              bk_builder_tmpdir(c->b), strerror(errno));
    if (st != BK_OK)
        return bkc_line_error(c->prog, r, "%s", bk_strerror(st));
    bkc_progress_count(c->prog, 1, 0);
    return 0;
}

/* Builds a static filter of the lines of inputs[0..n) and saves it at
 * path. 0, or 2 after a message. */
static int build_and_save(const char *path, char **inputs, int n, const bkc_sizing_opts_t *sz,
                          const bkc_input_opts_t *in, uint64_t memory, const char *tmpdir,
                          bool force)
{
    struct stat sb;
    if (!force && stat(path, &sb) == 0) {
        bkc_error("%s: file exists (use --force to replace it)", path);
        return BKC_EXIT_ERROR;
    }
    bk_builder_t *b = NULL;
    bk_status_t st = bk_builder_create(&b, sz->p, &sz->o);
    if (st == BK_OK)
        st = bk_builder_set_memory(b, memory, tmpdir);
    if (st == BK_EIO) { /* the spill directory (the library checks it) */
        bkc_error("%s: temporary directory %s: %s", path,
                  tmpdir ? tmpdir : bk_builder_tmpdir(b), strerror(errno));
        bk_builder_free(b);
        return BKC_EXIT_ERROR;
    }
    if (st != BK_OK) {
        bk_builder_free(b);
        char reach[160];
        if (st == BK_EINVAL)
            bkc_error("%s: cannot build a static filter at p=%g: %s at the lowest (use a Bloom "
                      "kind below that)",
                      path, sz->p, bkc_static_reach(reach, sizeof reach));
        else
            bkc_error("%s: cannot build a static filter at p=%g: %s", path, sz->p,
                      bk_strerror(st));
        return BKC_EXIT_ERROR;
    }
    bkc_progress_t prog;
    bkc_progress_init(&prog, in->pmode, bkc_inputs_size(inputs, n));
    build_ctx_t ctx = {.b = b, .prog = &prog};
    int rc = bkc_for_each_line(inputs, n, in->norm, &prog, build_line, NULL, &ctx);
    bk_filter_t *f = NULL;
    if (rc == 0) {
        bkc_progress_status(&prog, "building");
        st = bk_builder_finish(b, &f);
        if (st != BK_OK) {
            bkc_progress_clear(&prog);
            bkc_error("%s: cannot build the filter of %llu lines: %s%s", path,
                      (unsigned long long)bk_builder_count(b), bk_strerror(st),
                      st == BK_ENOSPC || st == BK_EIO ? " (in --tmpdir)" : "");
            rc = BKC_EXIT_ERROR;
        }
    }
    uint64_t lines = bk_builder_count(b);
    bk_builder_free(b);
    if (rc == 0) {
        bk_filter_set_key_form(f, bkc_form_of_norm(in->norm));
        rc = bkc_save_filter(f, path) == 0 ? 0 : BKC_EXIT_ERROR;
    }
    bkc_progress_clear(&prog);
    if (rc == 0 && prog.enabled) {
        bk_filter_shape_t sh;
        bk_filter_shape(f, &sh);
        bkc_error("%s: %s of %llu keys (%llu lines), %.2f bits a key", path, bk_kind_name(sh.kind),
                  (unsigned long long)sh.items, (unsigned long long)lines,
                  sh.items ? 8.0 * (double)sh.bytes / (double)sh.items : 0.0);
    }
    bkc_progress_finish(&prog, false, "");
    bk_filter_free(f);
    return rc;
}

enum { OPT_GROWTH = BKC_OPT_OWN, OPT_NONSCALING, OPT_GENERATIONS, OPT_STATIC, OPT_TMPDIR };

/* The static form's own options: --static, --memory, --tmpdir. */
typedef struct static_opts {
    bool asked; /* --static */
    uint64_t memory;
    const char *tmpdir;
} static_opts_t;

/* Whether getopt's code c is one of the static form's options; if so, it
 * is parsed into *so and *rc is -1 to go on, or the exit status after a
 * usage message (as bkc_shared_option answers). */
static bool static_option(int c, static_opts_t *so, int *rc)
{
    *rc = -1;
    switch (c) {
    case OPT_STATIC:
        so->asked = true;
        return true;
    case 'm':
        if (bkc_parse_size(optarg, &so->memory) != 0 || so->memory < (1u << 20))
            *rc = bkc_usage_error("bad --memory '%s' (a size of at least 1M, e.g. 512M)", optarg);
        return true;
    case OPT_TMPDIR:
        so->tmpdir = optarg;
        return true;
    default:
        return false;
    }
}

/* create's static form (--static, or --kind of a static kind): the filter
 * of inputs[0..n) built and saved at path. -1 when the options ask for an
 * empty filter instead, else the exit status. */
static int static_create(const char *path, char **inputs, int n, const bkc_sizing_opts_t *sz,
                         const bkc_input_opts_t *in, const char *window, const static_opts_t *so,
                         bool force)
{
    const bk_options_t *o = &sz->o;
    bool static_kind = (bk_kind_caps(o->kind) & BK_CAP_STATIC) != 0;
    if (!so->asked && !static_kind) {
        if (so->memory || so->tmpdir)
            return bkc_usage_error("--memory and --tmpdir are for static filters (--static)");
        return -1;
    }
    if (!static_kind && o->kind) /* a kind given */
        return bkc_usage_error("--static builds a static kind (fuse8, fuse16, fuse32): leave out --kind %s",
                               bk_kind_name(o->kind));
    if (sz->n || window || o->growth != 0 || o->nonscaling || o->window_generations)
        return bkc_usage_error("a static filter holds exactly its INPUTs' lines: leave "
                               "out -n, --window, --growth and --nonscaling");
    uint64_t memory = so->memory;
    if (!memory) /* a quarter of what is available, 1 MiB at the least */
        memory = bk_memory_available() / 4 > (1u << 20) ? bk_memory_available() / 4 : (1u << 20);
    return build_and_save(path, inputs, n, sz, in, memory, so->tmpdir, force);
}

int bkc_cmd_create(int argc, char **argv)
{
    static const struct option opts[] = {{"capacity", required_argument, 0, 'n'},
                                         {"fpr", required_argument, 0, 'p'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"hash", required_argument, 0, BKC_OPT_HASH},
                                         {"seed", required_argument, 0, BKC_OPT_SEED},
                                         {"growth", required_argument, 0, OPT_GROWTH},
                                         {"nonscaling", no_argument, 0, OPT_NONSCALING},
                                         {"window", required_argument, 0, 'w'},
                                         {"generations", required_argument, 0, OPT_GENERATIONS},
                                         {"normalize", required_argument, 0, BKC_OPT_NORMALIZE},
                                         {"static", no_argument, 0, OPT_STATIC},
                                         {"memory", required_argument, 0, 'm'},
                                         {"tmpdir", required_argument, 0, OPT_TMPDIR},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"progress", no_argument, 0, BKC_OPT_PROGRESS},
                                         {"force", no_argument, 0, 'f'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 0, 0);
    bkc_input_opts_t in; /* only --normalize is offered */
    bkc_input_opts_init(&in);
    bk_options_t *o = &sz.o;
    bool force = false;
    const char *window = NULL;
    static_opts_t so = {0};
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "n:p:k:w:m:qfh", opts, NULL)) != -1) {
        switch (c) {
        case OPT_GROWTH: {
            char *end;
            o->growth = strtod(optarg, &end);
            if (*end || !(o->growth >= 1))
                return bkc_usage_error("bad growth '%s' (want >= 1)", optarg);
            break;
        }
        case OPT_NONSCALING:
            o->nonscaling = true;
            break;
        case 'w':
            window = optarg;
            break;
        case OPT_GENERATIONS: {
            uint64_t g;
            if (bkc_parse_u64(optarg, &g) != 0 || g < 2 || g > 16)
                return bkc_usage_error("bad generations '%s' (want 2..16)", optarg);
            o->window_generations = (uint32_t)g;
            break;
        }
        case 'f':
            force = true;
            break;
        default:
            if (!static_option(c, &so, &rc))
                rc = bkc_shared_option(c, argv, usage, &sz, &in);
            if (rc >= 0)
                return rc;
        }
    }
    if (optind >= argc)
        return bkc_usage_error("FILE is required");
    const char *path = argv[optind];
    if ((rc = static_create(path, argv + optind + 1, argc - optind - 1, &sz, &in, window, &so,
                            force)) >= 0)
        return rc;
    if (optind + 1 != argc)
        return bkc_usage_error("one FILE only (INPUTs are for static filters: --static)");
    if ((rc = check_sizing(&sz, window)) >= 0)
        return rc;
    return make_and_save(path, &sz, in.norm, force);
}
