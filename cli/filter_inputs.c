/*
 * The command line add and remove share, "CMD [options] FILE [INPUT...]",
 * taken in its three steps: the options (options.c, which only parses),
 * then FILE loaded under its lock (filterfile.c, lock.c), then the key
 * form the inputs are read in settled against the one FILE records
 * (keyform.c). Kept out of options.c so that parsing calls nothing that
 * opens, locks or loads.
 */
#define _GNU_SOURCE
#include "filter_inputs.h"

#include "filterfile.h"
#include "keyform.h"
#include "message.h"

#include <getopt.h>

int bkc_filter_inputs_command(int argc, char **argv, const char *usage, bkc_input_opts_t *in,
                              bk_filter_t **f, const char **path, bkc_lock_t *lock)
{
    int rc = bkc_filter_inputs_options(argc, argv, usage, in);
    if (rc >= 0)
        return rc;
    return bkc_filter_inputs_load(argc, argv, in, f, path, lock);
}

int bkc_filter_inputs_load(int argc, char **argv, bkc_input_opts_t *in, bk_filter_t **f,
                           const char **path, bkc_lock_t *lock)
{
    if (!lock) {
        *f = bkc_filter_operand(argc, argv, false, path);
        return *f ? -1 : BKC_EXIT_ERROR;
    }
    if (optind >= argc)
        return bkc_usage_error("FILE is required");
    *path = argv[optind++];
    *f = bkc_load_filter_locked(*path, lock);
    if (*f && bkc_key_form_settle(*f, *path, in, true) != 0) {
        bk_filter_free(*f);
        *f = NULL;
        bkc_lock_release(lock);
    }
    return *f ? -1 : BKC_EXIT_ERROR;
}
