/*
 * The lines in flight of dedup --state (inflight.h): a FIFO ring and an
 * open-addressing set (linear probing, removal by backward shift, so no
 * tombstones pile up), both grown by doubling. A pipe holds at most a few
 * MiB, so this holds at most as many lines as that.
 */
#include "inflight.h"

#include <stdlib.h>
#include <string.h>

void bkc_inflight_init(bkc_inflight_t *q)
{
    memset(q, 0, sizeof *q);
}

void bkc_inflight_free(bkc_inflight_t *q)
{
    free(q->hash);
    free(q->end);
    free(q->set);
    free(q->used);
    memset(q, 0, sizeof *q);
}

size_t bkc_inflight_count(const bkc_inflight_t *q)
{
    return q->count;
}

static size_t slot_of(const bkc_inflight_t *q, bk_hash_t h)
{
    return (size_t)(h.lo ^ (h.hi >> 17)) & (q->set_cap - 1);
}

static bool same(bk_hash_t a, bk_hash_t b)
{
    return a.hi == b.hi && a.lo == b.lo;
}

bool bkc_inflight_has(const bkc_inflight_t *q, bk_hash_t h)
{
    if (q->count == 0)
        return false;
    for (size_t i = slot_of(q, h);; i = (i + 1) & (q->set_cap - 1)) {
        if (!q->used[i])
            return false;
        if (same(q->set[i], h))
            return true;
    }
}

static void set_insert(bkc_inflight_t *q, bk_hash_t h)
{
    size_t i = slot_of(q, h);
    while (q->used[i])
        i = (i + 1) & (q->set_cap - 1);
    q->set[i] = h;
    q->used[i] = true;
}

static void set_remove(bkc_inflight_t *q, bk_hash_t h)
{
    size_t mask = q->set_cap - 1, i = slot_of(q, h);
    while (q->used[i] && !same(q->set[i], h))
        i = (i + 1) & mask;
    if (!q->used[i])
        return;
    /* Backward shift: move later entries of the run into the hole when
     * their home slot is not between the hole and them. */
    for (size_t j = (i + 1) & mask; q->used[j]; j = (j + 1) & mask) {
        size_t home = slot_of(q, q->set[j]);
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            q->set[i] = q->set[j];
            i = j;
        }
    }
    q->used[i] = false;
}

/* Doubles the ring and the set (the set kept at most half full). */
static int grow(bkc_inflight_t *q)
{
    size_t cap = q->cap ? 2 * q->cap : 1024;
    bk_hash_t *hash = malloc(cap * sizeof *hash);
    uint64_t *end = malloc(cap * sizeof *end);
    bk_hash_t *set = malloc(2 * cap * sizeof *set);
    bool *used = calloc(2 * cap, sizeof *used);
    if (!hash || !end || !set || !used) {
        free(hash);
        free(end);
        free(set);
        free(used);
        return -1;
    }
    for (size_t k = 0; k < q->count; k++) {
        size_t from = (q->head + k) % q->cap;
        hash[k] = q->hash[from];
        end[k] = q->end[from];
    }
    free(q->hash);
    free(q->end);
    free(q->set);
    free(q->used);
    q->hash = hash;
    q->end = end;
    q->head = 0;
    q->cap = cap;
    q->set = set;
    q->used = used;
    q->set_cap = 2 * cap;
    for (size_t k = 0; k < q->count; k++)
        set_insert(q, q->hash[k]);
    return 0;
}

int bkc_inflight_push(bkc_inflight_t *q, bk_hash_t h, uint64_t end)
{
    if (q->count == q->cap && grow(q) != 0)
        return -1;
    size_t at = (q->head + q->count) % q->cap;
    q->hash[at] = h;
    q->end[at] = end;
    q->count++;
    set_insert(q, h);
    return 0;
}

size_t bkc_inflight_pop_upto(bkc_inflight_t *q, uint64_t consumed, bk_hash_t *out, size_t max)
{
    size_t n = 0;
    while (n < max && q->count > 0 && q->end[q->head] <= consumed) {
        out[n++] = q->hash[q->head];
        set_remove(q, q->hash[q->head]);
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
    return n;
}
