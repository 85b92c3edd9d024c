/*
 * bloomkit create: makes an empty filter file sized for N items at rate P,
 * so later `add`, `check` and `dedup --state` runs share one filter.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "filterfile.h"
#include "keyform.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "window_opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: bloomkit create FILE -n N -p P [--kind KIND] [--hash HASH] [--seed S]\n"
    "       bloomkit create FILE --window COUNT -p P\n"
    "       bloomkit create FILE --window TIME -n N -p P\n"
    "\n"
    "Makes an empty filter file for N items at false-positive rate P.\n"
    "A window filter remembers only the last COUNT lines added (100M), or the\n"
    "lines added in the last TIME of wall clock (7d, 12h, 90m, 3600s; N is then\n"
    "the most lines added within any TIME, in whatever bursts); a line added\n"
    "over 4/3 of the window ago (G/(G-1) with --generations G) is forgotten.\n"
    "A time window takes about twice the memory of a count window of the same\n"
    "N and P (it keeps 2G slots, so bursts cannot overfill one).\n"
    "An existing FILE is kept unless --force is given.\n"
    "\n"
    "  -n, --capacity N   items the filter must hold (10000000, 10M, 1e7)\n"
    "  -p, --fpr P        false-positive rate at N items (0.001, 1e-3, 0.1%)\n"
    "  -k, --kind KIND    split, blocked, blocked2, classic, precise, counting,\n"
    "                     cuckoo (deletes, a fifth of counting's bytes) or\n"
    "                     scalable; default by P, as plan says: split for\n"
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
    if ((o->growth != 0 || o->nonscaling) && o->kind != BK_KIND_SCALABLE)
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

int bkc_cmd_create(int argc, char **argv)
{
    enum { OPT_GROWTH = BKC_OPT_OWN, OPT_NONSCALING, OPT_GENERATIONS };
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
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "n:p:k:w:fh", opts, NULL)) != -1) {
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
            if ((rc = bkc_shared_option(c, argv, usage, &sz, &in)) >= 0)
                return rc;
        }
    }
    if (optind + 1 != argc)
        return bkc_usage_error(optind >= argc ? "FILE is required" : "one FILE only");
    const char *path = argv[optind];
    if ((rc = check_sizing(&sz, window)) >= 0)
        return rc;
    return make_and_save(path, &sz, in.norm, force);
}
