/*
 * Line batches (see batch.h). Offsets, not pointers, are stored while the
 * batch fills, since the arena may move when it grows; keys are resolved to
 * pointers once, just before the batch call.
 */
#include "batch.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>

void bkc_batch_init(bkc_batch_t *b)
{
    b->arena = NULL;
    b->used = b->cap = 0;
    b->n = 0;
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
    b->raw_len[i] = len;
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

int bkc_batch_print_flagged(const bkc_batch_t *b)
{
    size_t i = 0;
    while (i < b->n) {
        if (!b->flags[i]) {
            i++;
            continue;
        }
        if (b->raw_len[i] != b->line_len[i] + 1) { /* no "\n" follows it here */
            if (bkc_out_line(bkc_batch_line(b, i), b->line_len[i]) != 0)
                return -1;
            i++;
            continue;
        }
        size_t start = b->line_off[i], end = start + b->raw_len[i];
        for (i++; i < b->n && b->flags[i] && b->line_off[i] == end &&
                  b->raw_len[i] == b->line_len[i] + 1;
             i++)
            end += b->raw_len[i];
        if (bkc_out_lines(b->arena + start, end - start) != 0)
            return -1;
    }
    return 0;
}

void bkc_batch_keys(bkc_batch_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        b->keys[i].ptr = b->arena + b->key_off[i];
}

void bkc_batch_hash(bkc_batch_t *b, const bk_filter_t *f)
{
    for (size_t i = 0; i < b->n; i++)
        b->hash[i] = bk_filter_hash(f, b->keys[i].ptr, b->keys[i].len);
}

/* Slots of the table that finds repeated keys in a batch: a power of two,
 * at least twice BKC_BATCH_KEYS so probe chains stay short. */
#define FIRST_SLOTS (2 * BKC_BATCH_KEYS)

void bkc_batch_first_fresh(const bkc_batch_t *b, const bool *seen, bool *fresh)
{
    uint16_t slot[FIRST_SLOTS]; /* index + 1 of a fresh key; 0 = empty */
    memset(slot, 0, sizeof slot);
    for (size_t i = 0; i < b->n; i++) {
        fresh[i] = false;
        if (seen[i])
            continue;
        const bk_key_t *k = &b->keys[i];
        uint64_t h = bk_hash_key(BK_HASH_XXH3, 0, k->ptr, k->len).lo;
        size_t s = (size_t)h & (FIRST_SLOTS - 1);
        bool repeat = false;
        while (slot[s] && !repeat) {
            const bk_key_t *o = &b->keys[slot[s] - 1];
            repeat = o->len == k->len && memcmp(o->ptr, k->ptr, k->len) == 0;
            s = (s + 1) & (FIRST_SLOTS - 1);
        }
        if (!repeat) {
            slot[s] = (uint16_t)(i + 1);
            fresh[i] = true;
        }
    }
}
