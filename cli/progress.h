/*
 * Progress on stderr for long work: a bar redrawn in place when stderr is a
 * terminal (bytes done of total when known, rate, ETA, items, new,
 * duplicates), or a summary line every few seconds when forced with
 * --progress onto a file or pipe; and the final summary line. Work calls
 * bkc_progress_tick() per line, which costs a counter increment and, every
 * few thousand lines, a clock read. The environment variable
 * BLOOMKIT_PROGRESS_INTERVAL (seconds) overrides the redraw interval, so
 * tests can see a bar or a periodic summary on a short input.
 */
#ifndef BKC_PROGRESS_H
#define BKC_PROGRESS_H

#include "bloomkit/bloomkit.h"
#include "input.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum bkc_progress_mode {
    BKC_PROGRESS_AUTO = 0, /* a bar when stderr is a terminal */
    BKC_PROGRESS_OFF,      /* --quiet */
    BKC_PROGRESS_ON        /* --progress */
} bkc_progress_mode_t;

typedef struct bkc_progress {
    bool enabled;
    bool tty;
    int64_t total;      /* bytes, or -1 if unknown */
    uint64_t done_base; /* bytes of inputs already finished */
    uint64_t done;      /* bytes consumed, all inputs */
    const bkc_reader_t *reader; /* the input being read, for its offset */
    uint64_t items;
    uint64_t fresh;     /* new keys */
    uint64_t dups;
    bool has_fresh;     /* items split into new / duplicates */
    const bk_filter_t *filter; /* for fill and FPR in summaries; may be NULL */
    uint32_t countdown;
    double start;
    double last;
    double interval;    /* seconds between redraws or summary lines */
    int drawn;          /* characters of the bar on screen, to erase it */
} bkc_progress_t;

void bkc_progress_init(bkc_progress_t *p, bkc_progress_mode_t mode, int64_t total);

/* Called once per line: cheap unless it is time to redraw. */
void bkc_progress_update(bkc_progress_t *p);
static inline void bkc_progress_tick(bkc_progress_t *p)
{
    if (p && p->enabled && --p->countdown == 0)
        bkc_progress_update(p);
}

/* As n calls of bkc_progress_tick, for work that goes a batch at a time. */
static inline void bkc_progress_ticks(bkc_progress_t *p, uint32_t n)
{
    if (p && p->enabled) {
        if (p->countdown <= n)
            bkc_progress_update(p);
        else
            p->countdown -= n;
    }
}

/* Erases the bar (before other messages, and at the end). */
void bkc_progress_clear(bkc_progress_t *p);

/* For work that cannot count bytes (common's join): shows text as the
 * status, redrawn in place on a terminal (fitted to its width), or as a
 * line "bloomkit CMD: text" when forced onto a file; call it about every
 * p->interval seconds. Nothing when progress is off. */
void bkc_progress_status(bkc_progress_t *p, const char *text);

/* One summary line on stderr: "N items, N new, N duplicates, fill F%,
 * expected FPR P, T s". */
void bkc_progress_summary(bkc_progress_t *p, const char *what);

/* At the end of a run: the summary line when summary is true, else just
 * erases the bar. */
void bkc_progress_finish(bkc_progress_t *p, bool summary, const char *what);

/* Counts a batch of n items of which n_new were new (the rest duplicates). */
static inline void bkc_progress_count(bkc_progress_t *p, uint64_t n, uint64_t n_new)
{
    p->items += n;
    p->fresh += n_new;
    p->dups += n - n_new;
}

double bkc_now(void);

#endif /* BKC_PROGRESS_H */
