/*
 * bloomkit merge: the union of compatible filters (same kind, size, k,
 * hash and seed), e.g. the seen-sets of several crawler workers. OUT is
 * written atomically, only after every input was loaded and merged. When
 * OUT exists it is locked for the whole run (lock.h), so a merge into one
 * of its own inputs does not lose another writer's keys; an existing OUT
 * that is not an input is replaced only with --force, as with create.
 *
 * A union holds the keys of all its inputs, so it can hold more than one
 * of them was sized for: a non-scaling result over capacity is written
 * with a warning that gives its expected false-positive rate; a scalable
 * result whose rate would exceed what its chains promise is refused (its
 * sub-filters cannot grow after the fact).
 */
#define _GNU_SOURCE
#include "commands.h"
#include "filterfile.h"
#include "keyform.h"
#include "message.h"
#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: bloomkit merge [--force] OUT IN...\n"
    "\n"
    "Writes the union of the filters IN... to OUT (which may be one of them).\n"
    "The filters must have the same kind, size, k, hash and seed: make them\n"
    "with the same 'create' options and an explicit --seed.\n"
    "\n"
    "  -f, --force        replace an existing OUT that is not one of the INs\n"
    "      --no-wait      if another process is writing OUT, fail (exit 2)\n"
    "                     instead of waiting for it\n"
    "  -h, --help         this text\n";

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* "kind", "size", "k", "hash", "seed": the first way a and b differ, in
 * words for the message, or NULL. */
static const char *difference(const bk_filter_t *a, const bk_filter_t *b, char *buf, size_t len)
{
    bk_filter_info_t x, y;
    bk_filter_info(a, &x);
    bk_filter_info(b, &y);
    if (x.kind != y.kind || x.sub_kind != y.sub_kind)
        snprintf(buf, len, "kind (%s vs %s)", bk_kind_name(x.kind), bk_kind_name(y.kind));
    else if (x.cells != y.cells || x.filters != y.filters)
        snprintf(buf, len, "size (%llu vs %llu cells in %u vs %u filters)",
                 (unsigned long long)x.cells, (unsigned long long)y.cells, x.filters, y.filters);
    else if (x.k != y.k)
        snprintf(buf, len, "k (%u vs %u)", x.k, y.k);
    else if (x.hash != y.hash)
        snprintf(buf, len, "hash (%s vs %s)", bk_hash_name(x.hash), bk_hash_name(y.hash));
    else if (x.seed != y.seed)
        snprintf(buf, len, "seed (0x%016llx vs 0x%016llx)", (unsigned long long)x.seed,
                 (unsigned long long)y.seed);
    else
        return NULL;
    return buf;
}

static void incompatible(const bk_filter_t *acc, const bk_filter_t *f, const char *first,
                         const char *path, const char *out)
{
    char d[160];
    bk_key_form_t fa = bk_filter_key_form(acc), fb = bk_filter_key_form(f);
    if (fa && fb && fa != fb)
        bkc_error("%s: cannot merge with %s: its keys were added with %s, theirs with %s, so "
                  "the union would answer neither way; %s not written",
                  path, first, bkc_form_words(fb), bkc_form_words(fa), out);
    else if (difference(acc, f, d, sizeof d))
        bkc_error("%s: cannot merge with %s: they differ in %s; %s not written. Filters merge "
                  "only when made by 'create' with the same -n, -p, --kind and --hash and "
                  "the same explicit --seed",
                  path, first, d, out);
    else
        bkc_error("%s: cannot merge with %s: the filters differ in kind, size, k, hash, seed "
                  "or key form; "
                  "%s not written",
                  path, first, out);
}

/* The union of the filters ins[0..n), or NULL after a message. */
static bk_filter_t *merge_inputs(char **ins, int n, const char *out)
{
    bk_filter_t *acc = bkc_load_filter(ins[0]);
    for (int i = 1; acc && i < n; i++) {
        bk_filter_t *f = bkc_load_filter(ins[i]);
        if (!f) {
            bk_filter_free(acc);
            return NULL;
        }
        bk_status_t st = bk_filter_union(acc, f);
        if (st == BK_EINCOMPAT)
            incompatible(acc, f, ins[0], ins[i], out);
        else if (st == BK_EKIND && !(bk_kind_caps(bk_filter_kind(acc)) & BK_CAP_MERGE))
            bkc_error("%s: cannot merge: the union of two %s filters is not a %s filter; %s "
                      "not written. Add the keys of both to one filter instead",
                      ins[i], bk_kind_name(bk_filter_kind(acc)), bk_kind_name(bk_filter_kind(acc)),
                      out);
        else if (st != BK_OK)
            bkc_error("%s: cannot merge: %s; %s not written", ins[i], bk_strerror(st), out);
        bk_filter_free(f);
        if (st != BK_OK) {
            bk_filter_free(acc);
            return NULL;
        }
    }
    return acc;
}

/* A scalable union must keep the rate its chains promise. 0 or 2. */
static int check_promise(const bk_filter_t *acc, const char *out)
{
    bk_filter_info_t in;
    bk_filter_info(acc, &in);
    if (!(bk_kind_caps(in.kind) & BK_CAP_GROW) || !(in.expected_fpr > in.fpr_target))
        return 0;
    bkc_error("%s: not written: the union of these scalable filters would answer with a "
              "false-positive rate of %.3g, over the %g their chains promise (a scalable "
              "filter grows only while keys are added). Add the keys of all inputs to one "
              "filter with 'bloomkit add' instead",
              out, in.expected_fpr, in.fpr_target);
    return BKC_EXIT_ERROR;
}

/* OUT may be replaced: it is an input, or new, or --force was given.
 * 0 or 2 after a message. */
static int may_write(const char *out, char **ins, int n, bool force)
{
    struct stat sb;
    if (force || stat(out, &sb) != 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (same_file(out, ins[i]))
            return 0;
    bkc_error("%s: file exists and is not one of the inputs (use --force to replace it)", out);
    return BKC_EXIT_ERROR;
}

int bkc_cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {{"force", no_argument, 0, 'f'},
                                         BKC_LOCK_LONG_OPTION,
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool force = false;
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
        if (c == 'f')
            force = true;
        else if ((rc = bkc_shared_option(c, argv, usage, NULL, NULL)) >= 0)
            return rc;
    }
    if (argc - optind < 2)
        return bkc_usage_error("OUT and at least one IN are required");
    const char *out = argv[optind];
    char **ins = argv + optind + 1;
    int n = argc - optind - 1;
    if ((rc = may_write(out, ins, n, force)) != 0)
        return rc;
    bkc_lock_t lock = BKC_LOCK_NONE;
    rc = bkc_lock_take(out, &lock);
    if (rc == BKC_EXIT_ERROR)
        return rc;
    bk_filter_t *acc = merge_inputs(ins, n, out);
    bool out_is_new = rc == 1 && !force; /* bkc_lock_take: nothing there to lock */
    rc = acc ? check_promise(acc, out) : BKC_EXIT_ERROR;
    if (rc == 0 &&
        (out_is_new ? bkc_save_new_filter(acc, out) : bkc_save_filter(acc, out)) != 0)
        rc = BKC_EXIT_ERROR;
    bkc_lock_release(&lock);
    if (rc == 0)
        bkc_warn_over_capacity(acc, out, "absent keys are found with probability");
    bk_filter_free(acc);
    return rc;
}
