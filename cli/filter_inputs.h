/* The shared command line of add and remove (filter_inputs.c). */
#ifndef BKC_FILTER_INPUTS_H
#define BKC_FILTER_INPUTS_H

#include "bloomkit/bloomkit.h"
#include "lock.h"
#include "options.h"

/* The whole command line of a subcommand of the form
 * "CMD [--normalize M] [-q] [--progress] [--no-wait] [-h] FILE [INPUT...]"
 * (add, remove): parses the options into *in and loads FILE, holding its
 * lock (lock.h) in *lock when lock is not NULL, its key form settled with
 * the inputs'. Returns -1 with *f (caller frees), *path set and optind at
 * the first INPUT; else the status the subcommand exits with (0 after the
 * usage text, 2 after a message). */
/* bkc_filter_inputs_command's second half, after the options: FILE
 * loaded (and locked). */
int bkc_filter_inputs_load(int argc, char **argv, bkc_input_opts_t *in, bk_filter_t **f,
                           const char **path, bkc_lock_t *lock);

int bkc_filter_inputs_command(int argc, char **argv, const char *usage, bkc_input_opts_t *in,
                              bk_filter_t **f, const char **path, bkc_lock_t *lock);

#endif /* BKC_FILTER_INPUTS_H */
