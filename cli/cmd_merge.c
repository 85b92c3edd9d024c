/*
 * bloomkit merge: the union of compatible filters (same kind, size, k,
 * hash and seed), e.g. the seen-sets of several crawler workers. OUT is
 * written atomically, only after every input was loaded and merged.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "filterfile.h"
#include "message.h"
#include "options.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: bloomkit merge OUT IN...\n"
    "\n"
    "Writes the union of the filters IN... to OUT (which may be one of them).\n"
    "The filters must have the same kind, size, k, hash and seed: make them\n"
    "with the same 'create' options and an explicit --seed.\n"
    "\n"
    "  -h, --help         this text\n";

int bkc_cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
        if ((rc = bkc_shared_option(c, argv, usage, NULL, NULL)) >= 0)
            return rc;
    if (argc - optind < 2)
        return bkc_usage_error("OUT and at least one IN are required");
    const char *out = argv[optind];
    bk_filter_t *acc = bkc_load_filter(argv[optind + 1]);
    if (!acc)
        return BKC_EXIT_ERROR;
    for (int i = optind + 2; i < argc; i++) {
        bk_filter_t *f = bkc_load_filter(argv[i]);
        if (!f) {
            bk_filter_free(acc);
            return BKC_EXIT_ERROR;
        }
        bk_status_t st = bk_filter_union(acc, f);
        bk_filter_free(f);
        if (st != BK_OK) {
            if (st == BK_EINCOMPAT)
                bkc_error("%s: cannot merge with %s: the filters differ in kind, size, k, "
                          "hash or seed; %s not written",
                          argv[i], argv[optind + 1], out);
            else
                bkc_error("%s: cannot merge: %s; %s not written", argv[i], bk_strerror(st), out);
            bk_filter_free(acc);
            return BKC_EXIT_ERROR;
        }
    }
    rc = bkc_save_filter(acc, out) == 0 ? 0 : BKC_EXIT_ERROR;
    bk_filter_free(acc);
    return rc;
}
