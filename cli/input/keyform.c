/*
 * Recorded key forms against --normalize (see keyform.h).
 */
#include "keyform.h"
#include "message.h"

bkc_norm_t bkc_norm_of_form(bk_key_form_t form)
{
    return form == BK_KEY_FORM_URL     ? BKC_NORM_URL
           : form == BK_KEY_FORM_EMAIL ? BKC_NORM_EMAIL
                                       : BKC_NORM_NONE;
}

bk_key_form_t bkc_form_of_norm(bkc_norm_t norm)
{
    return norm == BKC_NORM_URL     ? BK_KEY_FORM_URL
           : norm == BKC_NORM_EMAIL ? BK_KEY_FORM_EMAIL
                                    : BK_KEY_FORM_AS_GIVEN;
}

const char *bkc_form_words(bk_key_form_t form)
{
    switch (form) {
    case BK_KEY_FORM_URL:
        return "--normalize url";
    case BK_KEY_FORM_EMAIL:
        return "--normalize email";
    default:
        return "--normalize none (keys as given)";
    }
}

static int record(bk_filter_t *f, const char *path, bk_key_form_t form)
{
    bk_status_t st = bk_filter_set_key_form(f, form);
    if (st != BK_OK) {
        bkc_error("%s: cannot record the key form: %s", path, bk_strerror(st));
        return BKC_EXIT_ERROR;
    }
    return 0;
}

int bkc_key_form_settle(bk_filter_t *f, const char *path, bkc_input_opts_t *in, bool writes)
{
    bk_key_form_t have = bk_filter_key_form(f);
    bk_key_form_t asked = bkc_form_of_norm(in->norm);
    bool empty = bk_filter_items(f) == 0;
    if (have == BK_KEY_FORM_UNRECORDED) {
        if (!writes)
            return 0;
        if (!empty)
            bkc_error("%s: note: the file did not say how its keys were normalized (older "
                      "format); recorded %s, as this run uses",
                      path, bkc_form_words(asked));
        return record(f, path, asked);
    }
    if (!in->norm_given || asked == have) {
        in->norm = bkc_norm_of_form(have);
        return 0;
    }
    /* A plain `create` records "as given"; its first writer may still
     * choose, since no key was spelled either way yet. */
    if (writes && empty && have == BK_KEY_FORM_AS_GIVEN)
        return record(f, path, asked);
    bkc_error("%s: its keys were added with %s and this run uses %s, so they would not "
              "match; leave --normalize out to use the file's ('bloomkit info' shows it)",
              path, bkc_form_words(have), bkc_form_words(asked));
    return BKC_EXIT_ERROR;
}
