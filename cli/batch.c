/*
 * Line batches (see batch.h). Offsets, not pointers, are stored while the
 * batch fills, since the arena may move when it grows; keys are resolved to
 * pointers once, just before the batch call.
 */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

void bkc_batch_init(bkc_batch_t *b)
{
    b->arena = NULL;
    b->used = b->cap = 0;
    b->n = 0;
    b->last_lineno = 0;
}

void bkc_batch_free(bkc_batch_t *b)
{
    free(b->arena);
    b->arena = NULL;
    b->cap = b->used = b->n = 0;
}

static int reserve(bkc_batch_t *b, size_t more)
{
    if (b->cap - b->used >= more)
        return 0;
    size_t ncap = b->cap ? b->cap : 64 * 1024;
    while (ncap - b->used < more) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    char *na = realloc(b->arena, ncap);
    if (!na)
        return -1;
    b->arena = na;
    b->cap = ncap;
    return 0;
}

int bkc_batch_push(bkc_batch_t *b, const char *line, size_t len, const char *key, size_t klen)
{
    bool same = key == line && klen == len;
    size_t need = len + (same ? 0 : klen);
    if (need < len || reserve(b, need) != 0)
        return -1;
    size_t i = b->n;
    b->line_off[i] = b->used;
    b->line_len[i] = len;
    if (len)
        memcpy(b->arena + b->used, line, len);
    b->used += len;
    if (same) {
        b->key_off[i] = b->line_off[i];
    } else {
        b->key_off[i] = b->used;
        if (klen)
            memcpy(b->arena + b->used, key, klen);
        b->used += klen;
    }
    b->keys[i].len = klen;
    b->n++;
    return 0;
}

void bkc_batch_keys(bkc_batch_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        b->keys[i].ptr = b->arena + b->key_off[i];
}
