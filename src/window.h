/*
 * Sliding-window membership (window.c): the internal interface of the
 * window filter, "was this key added in the last N adds / the last T time
 * units?". Not installed; the public handle wraps it.
 */
#ifndef BLOOMKIT_WINDOW_H
#define BLOOMKIT_WINDOW_H

#include "internal.h"

/* Generations a window keeps: the current one plus (generations - 1) full
 * ones. More generations cost fewer bits per item and forget more sharply,
 * but each lookup tests one 64-byte line per generation (see window.c). */
#define BKI_WINDOW_MIN_GENS 2u
#define BKI_WINDOW_MAX_GENS 16u
#define BKI_WINDOW_DEFAULT_GENS 4u
/* Slots a window may have: G for count windows (and time windows stored
 * before slotted ones), 2 G for time windows (see window.c). */
#define BKI_WINDOW_MAX_SLOTS (2u * BKI_WINDOW_MAX_GENS)

/* What a window is asked to be. span == 0: a count window of the last
 * `capacity` adds. span > 0: a time window of `span` units of the caller's
 * clock, sized for at most `capacity` adds per span. */
typedef struct bki_window_params {
    uint64_t capacity;
    double fpr;
    uint64_t span;
    uint32_t generations; /* 0: BKI_WINDOW_DEFAULT_GENS */
} bki_window_params_t;

/* The geometry derived from the parameters (bki_window_plan). */
typedef struct bki_window_geom {
    uint32_t generations;  /* G */
    uint32_t slots;        /* S: lines per bucket, the ring's size (G or 2 G) */
    bool slotted;          /* a time window whose slots rotate when full too */
    uint32_t k;            /* probes per key, in one line per generation */
    uint64_t lines;        /* lines per generation: also the bucket count */
    uint64_t gen_capacity; /* g: adds one slot is sized for (and, slotted,
                              takes at most) */
    uint64_t gen_span;     /* time windows: units per generation, else 0 */
    uint64_t bytes;        /* payload: lines * S * 64 */
    double gen_fpr;        /* the model's FPR of one full slot */
    double expected_fpr;   /* of G full slots: the worst moment */
} bki_window_geom_t;

typedef struct bki_window {
    bki_window_params_t params;
    bki_window_geom_t geom;
    bk_hash_id_t hash;
    uint64_t seed;
    uint64_t epoch;   /* number of the current (newest) generation; slotted:
                         the generation (time / d) of the newest slot's adds */
    uint32_t newest;  /* its slot: epoch mod G, or (slotted) where the ring is */
    uint64_t now;     /* time windows: the latest time seen (starts at 0) */
    uint64_t adds;    /* add calls over the filter's life */
    uint64_t gen_adds[BKI_WINDOW_MAX_SLOTS]; /* add calls per slot */
    uint64_t last[BKI_WINDOW_MAX_SLOTS];     /* slotted: time of a slot's last add */
    uint64_t held;    /* adds the slots hold (sum of gen_adds), kept current */
    uint64_t cleared_early; /* slotted: live slots cleared to make room (more
                               than N adds within T); not stored */
    uint16_t lanes[128]; /* the k lanes a key probes, by hash bits 32..38 */
    uint8_t *data;    /* buckets of S lines, one per slot */
    bki_mem_t mem;
    /* Called before a clear writes lines of every bucket (a slot cleared,
     * or all of them), with before_clear_arg: a window read from a paged
     * file has every page read and checked first (pages.c). NULL: none. */
    void (*before_clear)(void *arg);
    void *before_clear_arg;
} bki_window_t;

/* Sizes a window; BK_EINVAL for capacity 0, fpr outside (0, 1), or
 * generations outside [MIN, MAX]; BK_ENOMEM if it cannot be addressed. */
BKI_HIDDEN bk_status_t bki_window_plan(const bki_window_params_t *p, bki_window_geom_t *out);

/* Creates an empty window; *out is owned by the caller (bki_window_free). */
BKI_HIDDEN bk_status_t bki_window_create(bki_window_t **out, const bki_window_params_t *p,
                                         bk_hash_id_t hash, uint64_t seed);
BKI_HIDDEN void bki_window_free(bki_window_t *w);
/* A deep copy (payload owned by the copy). */
BKI_HIDDEN bk_status_t bki_window_clone(bki_window_t **out, const bki_window_t *w);

/* A stored window, rebuilt with the k, lines and slots it was built with
 * (p gives capacity, fpr, span and generations; slotted as stored):
 * BK_ECORRUPT if they are out of range. Its payload borrows `borrow` (a
 * mapping) or, when NULL, is allocated zeroed for the caller to fill. The
 * caller then sets epoch, newest, now, adds, gen_adds and last and calls
 * check_state. */
BKI_HIDDEN bk_status_t bki_window_restore(bki_window_t **out, const bki_window_params_t *p,
                                          uint32_t k, uint64_t lines, bool slotted,
                                          bk_hash_id_t hash, uint64_t seed, uint8_t *borrow);
/* Checks that a restored window's clock and counts agree (NULL) or says
 * how they do not; sets the derived fields. */
BKI_HIDDEN const char *bki_window_check_state(bki_window_t *w);
/* Forgets every key; the clock (time windows) is kept. */
BKI_HIDDEN void bki_window_clear(bki_window_t *w);

/* Moves a time window's clock to `now` (earlier times are ignored):
 * generations that ended are recycled. A no-op for count windows. */
BKI_HIDDEN void bki_window_advance(bki_window_t *w, uint64_t now);

/* Adds a key as of the window's current clock; count windows move on by one
 * add. Returns true if the key was not (possibly falsely) in the window. */
BKI_HIDDEN bool bki_window_add(bki_window_t *w, bk_hash_t h);
/* True if the key may have been added within the window. */
BKI_HIDDEN bool bki_window_contains(const bki_window_t *w, bk_hash_t h);
/* As contains, as if the clock were at `now` (time windows), without moving
 * it: what a read-only user asks. Count windows ignore now. */
BKI_HIDDEN bool bki_window_contains_at(const bki_window_t *w, bk_hash_t h, uint64_t now);

/* Batches: results equal the single calls in array order. keys and out
 * non-NULL when n > 0; was_new may be NULL. */
BKI_HIDDEN uint64_t bki_window_add_batch(bki_window_t *w, const bk_key_t *keys, size_t n,
                                         bool *was_new);
BKI_HIDDEN size_t bki_window_contains_batch(const bki_window_t *w, const bk_key_t *keys,
                                            size_t n, bool *out);

/* The state a user may ask about (bk_filter_info). */
typedef struct bki_window_usage {
    uint64_t items;      /* adds held by the live generations */
    uint64_t bits_set;
    double fill;         /* bits_set / all bits */
    double expected_fpr; /* at the generations' current loads */
    uint64_t certain_from;   /* adds (count) or time: added at or after -> present */
    uint64_t forgotten_before; /* added before -> forgotten (reads new up to p) */
} bki_window_usage_t;

BKI_HIDDEN void bki_window_usage(const bki_window_t *w, bki_window_usage_t *out);

/* ---- the handle (filter.c, codec.c): a bk_filter_t of kind WINDOW that
 * owns f->window ---- */

/* Wraps w in a new handle of the window kind `kind` (the registry's
 * number, from the caller's options, file or source filter), which owns
 * it; on BK_ENOMEM w is freed, so the caller has nothing left to release
 * either way. */
BKI_HIDDEN bk_status_t bki_window_wrap(bk_filter_t **out, bki_window_t *w, bk_kind_t kind);
/* bk_filter_create for a window: o is resolved (hash, seed set). */
BKI_HIDDEN bk_status_t bki_window_filter_create(bk_filter_t **out, uint64_t capacity,
                                                double fpr, const bk_options_t *o);
BKI_HIDDEN bk_status_t bki_window_filter_clone(bk_filter_t **out, const bk_filter_t *f);
BKI_HIDDEN void bki_window_filter_free(bk_filter_t *f);
BKI_HIDDEN bk_filter_t *bki_window_filter_defrag(bk_filter_t *f, bki_mover_t *mv);
BKI_HIDDEN void bki_window_filter_info(const bk_filter_t *f, bk_filter_info_t *out);
BKI_HIDDEN void bki_window_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out);
/* The payload offsets of the first and last byte of h's bucket (its S
 * lines): what a lookup or an add reads (pages.c). */
BKI_HIDDEN uint32_t bki_window_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off);
/* bki_window_filter_info without reading the lines: the bits each slot's
 * adds should have set (a paged file not read yet). */
BKI_HIDDEN void bki_window_info_estimated(const bk_filter_t *f, bk_filter_info_t *out);
/* Sets the window's before_clear call (fn NULL: none). */
BKI_HIDDEN void bki_window_on_clear(bk_filter_t *f, void (*fn)(void *arg), void *arg);
/* Adds the live generations hold. */
BKI_HIDDEN uint64_t bki_window_held(const bki_window_t *w);

#endif /* BLOOMKIT_WINDOW_H */
