/*
 * The key form a filter file records (format version 2) against the
 * --normalize a command is given. A file remembers how its keys were
 * spelled, so a later `check` without --normalize still finds keys that
 * `add --normalize url` put in, and a command that would spell them
 * another way is refused instead of silently answering "absent".
 */
#ifndef BKC_KEYFORM_H
#define BKC_KEYFORM_H

#include "bloomkit/bloomkit.h"
#include "options.h"

#include <stdbool.h>

/* The normalization a key form stands for, and back. */
bkc_norm_t bkc_norm_of_form(bk_key_form_t form);
bk_key_form_t bkc_form_of_norm(bkc_norm_t norm);

/* "--normalize url", "--normalize email" or "--normalize none (keys as
 * given)". */
const char *bkc_form_words(bk_key_form_t form);

/* Settles the normalization a command uses on filter f, read from path,
 * and sets in->norm to it:
 *  - the file records a form: that form, or in->norm when it was given and
 *    agrees. A different --normalize is an error, except that a writer
 *    (writes true: add, remove, dedup --state) may give an empty filter
 *    recorded "as given" (a plain `create`) its first form;
 *  - the file records none (written before version 2, or by a program):
 *    in->norm as given, and a writer records it in f, with a note on
 *    stderr when keys were already in the file (their form is assumed).
 * 0, or BKC_EXIT_ERROR after a message naming the file. */
int bkc_key_form_settle(bk_filter_t *f, const char *path, bkc_input_opts_t *in, bool writes);

#endif /* BKC_KEYFORM_H */
