/*
 * Command-line options that several subcommands share, parsed in one place
 * so each means the same thing, with the same messages, wherever it is
 * accepted:
 *   - sizing a new filter: -n/--capacity, -p/--fpr, -k/--kind, --hash and
 *     --seed (create, plan, dedup);
 *   - reading lines: --normalize, -q/--quiet and --progress (add, check,
 *     remove, dedup; distinct and once take the last two).
 * -h/--help prints the subcommand's usage text. A subcommand still lists in
 * its own getopt_long table the options it accepts (BKC_INPUT_LONG_OPTIONS
 * spells the three input ones), handles its own options in its switch, and
 * hands every other code to bkc_shared_option().
 */
#ifndef BKC_OPTIONS_H
#define BKC_OPTIONS_H

#include "bloomkit/bloomkit.h"
#include "lock.h"
#include "normalize.h"
#include "progress.h"

#include <stdbool.h>
#include <stdint.h>

/* getopt_long codes of the shared long-only options. A subcommand numbers
 * its own long-only options from BKC_OPT_OWN. */
enum {
    BKC_OPT_NORMALIZE = 256,
    BKC_OPT_PROGRESS,
    BKC_OPT_HASH,
    BKC_OPT_SEED,
    BKC_OPT_NO_WAIT,
    BKC_OPT_OWN
};

/* The getopt_long table entry of --no-wait, for the subcommands that
 * write a filter file (see lock.h). */
#define BKC_LOCK_LONG_OPTION {"no-wait", no_argument, 0, BKC_OPT_NO_WAIT}

/* The getopt_long table entries of --normalize, --quiet and --progress. */
#define BKC_INPUT_LONG_OPTIONS                                                                    \
    {"normalize", required_argument, 0, BKC_OPT_NORMALIZE}, {"quiet", no_argument, 0, 'q'},      \
        {"progress", no_argument, 0, BKC_OPT_PROGRESS}

/* How lines are read: the key normalization and the progress mode. */
typedef struct bkc_input_opts {
    bkc_norm_t norm;
    bool norm_given; /* --normalize was on the command line */
    bkc_progress_mode_t pmode;
} bkc_input_opts_t;

/* The size and options of a filter to create. */
typedef struct bkc_sizing_opts {
    uint64_t n; /* capacity; 0 until given when there is no default */
    double p;   /* false-positive rate; 0 likewise */
    bk_options_t o;
} bkc_sizing_opts_t;

/* Defaults: no normalization, progress when stderr is a terminal. */
void bkc_input_opts_init(bkc_input_opts_t *in);

/* Defaults: capacity n and rate p (0 for "required"), a blocked filter with
 * the default hash and a random seed. */
void bkc_sizing_opts_init(bkc_sizing_opts_t *sz, uint64_t n, double p);
/* The static kinds and the lowest rate each reaches, in words ("fuse8
 * reaches 0.0041, fuse16 1.6e-5 and fuse32 2.4e-10"), from the library's
 * registry, into buf; returns buf. */
const char *bkc_static_reach(char *buf, size_t len);

/* Handles getopt_long's code c (argument optarg) when it is not one of the
 * subcommand's own options: 'h' prints usage on standard output, a sizing
 * option is parsed into *sz, an input option into *in (either may be NULL
 * for a subcommand that takes none of them), and anything else is an
 * unknown option. argv is the subcommand's, for messages. Returns -1 when
 * parsing goes on, else the status the subcommand exits with: 0 after the
 * usage text, 2 after a usage error (a bad value or an unknown option). */
int bkc_shared_option(int c, char **argv, const char *usage, bkc_sizing_opts_t *sz,
                      bkc_input_opts_t *in);

/* The options of a subcommand of the form
 * "CMD [--normalize M] [-q] [--progress] [--no-wait] [-h] FILE [INPUT...]"
 * (add, remove) into *in; optind is left at FILE. Returns -1 when the
 * command goes on, else the status it exits with (0 after the usage text,
 * 2 after a message). Loading FILE is filter_inputs.c's. */
int bkc_filter_inputs_options(int argc, char **argv, const char *usage, bkc_input_opts_t *in);

#endif /* BKC_OPTIONS_H */
