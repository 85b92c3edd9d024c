/*
 * Window filters in the file format (docs/FORMAT.md, "window"): the
 * window-specific half of the codec, called by codec.c at the points where
 * a window differs from the other kinds.
 *
 * A window is two parts: part 0 holds the slots (the buckets of S lines,
 * exactly the bytes in memory), part 1 the window's state (span, clock,
 * add counts, and for a slotted time window each slot's last add), a small
 * payload of its own so that it is checksummed like any payload and the
 * header keeps its meaning. Part 1's k field says which state layout it
 * has: 0 for windows of G generations (count windows, and time windows
 * written before slotted ones: their bytes are unchanged), 1 for slotted
 * time windows (S = 2 G slots). The
 * geometry is stored, not re-planned: a later release may size windows
 * differently, and a file keeps the k and lines it was built with.
 */
#include "codec.h"
#include "wire.h"
#include "window.h"

#include <string.h>

/* Part 1, the state: offsets within its payload. */
enum {
    S_SPAN = 0, S_EPOCH = 8, S_NOW = 16, S_ADDS = 24,
    S_NEWEST = 32,   /* layout 1: u64, the newest slot; layout 0: zero */
    S_RESERVED = 40, /* .. 64, zero */
    S_COUNTS = 64    /* layout 0: S u64, adds held by slot s; layout 1: S pairs
                        of u64, adds held by slot s and the time of its last */
};

#define LAYOUT_GENERATIONS 0u
#define LAYOUT_SLOTTED 1u

static uint64_t state_len(uint32_t layout, uint64_t slots)
{
    return S_COUNTS + (layout == LAYOUT_SLOTTED ? 16 : 8) * slots;
}

/* Slot counts a layout allows: G, or 2 G for slotted windows. */
static bool valid_slots(uint32_t layout, uint64_t slots)
{
    if (layout == LAYOUT_SLOTTED)
        return slots % 2 == 0 && slots / 2 >= BKI_WINDOW_MIN_GENS &&
               slots / 2 <= BKI_WINDOW_MAX_GENS;
    return layout == LAYOUT_GENERATIONS && slots >= BKI_WINDOW_MIN_GENS &&
           slots <= BKI_WINDOW_MAX_GENS;
}

/* Part 1's layout, from the part table. */
static uint32_t layout_of(const bkf_meta_t *m)
{
    return bkf_get_u32(m->table + BKF_PART + P_K);
}

void bkf_window_obj(bkf_obj_t *o, const bk_filter_t *f)
{
    const bki_window_t *w = f->window;
    o->nparts = 2;
    o->items = bki_window_held(w);
    uint8_t *st = o->window_state;
    memset(st, 0, sizeof o->window_state);
    bkf_put_u64(st + S_SPAN, w->params.span);
    bkf_put_u64(st + S_EPOCH, w->epoch);
    bkf_put_u64(st + S_NOW, w->now);
    bkf_put_u64(st + S_ADDS, w->adds);
    for (uint32_t s = 0; s < w->geom.slots; s++) {
        if (w->geom.slotted) {
            bkf_put_u64(st + S_COUNTS + 16 * s, w->gen_adds[s]);
            bkf_put_u64(st + S_COUNTS + 16 * s + 8, w->last[s]);
        } else {
            bkf_put_u64(st + S_COUNTS + 8 * s, w->gen_adds[s]);
        }
    }
    if (w->geom.slotted)
        bkf_put_u64(st + S_NEWEST, w->newest);
}

void bkf_window_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p)
{
    const bki_window_t *w = o->f->window;
    p->kind = o->kind;
    p->seed = o->seed;
    if (i == 0) {
        p->k = w->geom.k;
        p->cells = w->geom.bytes * 8;
        p->capacity = o->capacity;
        p->fpr = o->fpr;
        p->items = o->items;
        p->data = w->data;
        p->length = w->geom.bytes;
    } else {
        uint32_t layout = w->geom.slotted ? LAYOUT_SLOTTED : LAYOUT_GENERATIONS;
        p->k = layout;
        p->cells = w->geom.slots;
        p->data = o->window_state;
        p->length = state_len(layout, w->geom.slots);
    }
}

uint64_t bkf_window_part_len(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p)
{
    uint64_t cells = p->cells;
    uint32_t layout = layout_of(m);
    if (i == 1)
        return valid_slots(layout, cells) ? state_len(layout, cells) : 0;
    /* The slots' bits: whole buckets of S lines, S from part 1. */
    uint64_t slots = bkf_get_u64(m->table + BKF_PART + P_CELLS);
    if (!valid_slots(layout, slots) || cells == 0 || cells % (slots * BKI_LINE_BITS) != 0)
        return 0;
    return cells / 8;
}

bk_status_t bkf_window_check_part(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p,
                                  const char **why)
{
    if (!(m->fpr > 0.0 && m->fpr < 1.0) || m->capacity == 0)
        FAIL(BK_ECORRUPT, "window with a capacity of 0 or a rate outside (0, 1)");
    if (p->seed != m->seed)
        FAIL(BK_ECORRUPT, "part seed disagrees with the header");
    if (i == 0) {
        if (p->k == 0 || p->k > BKI_BLOCKED_MAX_K)
            FAIL(BK_ECORRUPT, "probe count k is zero or too large for the kind");
        if (p->capacity != m->capacity || memcmp(&p->fpr, &m->fpr, sizeof p->fpr) != 0 ||
            p->items != m->items)
            FAIL(BK_ECORRUPT, "part fields disagree with the header");
    } else {
        double zero = 0.0; /* k is the state's layout, 0 or 1 (checked by its length) */
        if (p->capacity != 0 || p->items != 0 || memcmp(&p->fpr, &zero, sizeof zero) != 0)
            FAIL(BK_ECORRUPT, "window state part has filter fields set");
    }
    return BK_OK;
}

/* Reads and checks part 1 into st (state_len bytes). Mapped files are not
 * checksummed at open (as every payload), but the state is checked all
 * the same, below. */
static bk_status_t read_state(const bkf_source_t *s, const bkf_part_t *p, uint8_t *map,
                              uint8_t *st, const char **why)
{
    if (map) {
        memcpy(st, map + p->offset, (size_t)p->length);
        return bkf_check_payload(s, p, NULL, false, why);
    }
    if (bkf_source_read(s, p->offset, st, p->length) != BK_OK)
        FAIL(BK_EIO, "read error");
    return bkf_check_payload(s, p, st, !s->buf, why);
}

/* The generations' bytes: borrowed (padding checked) or read (and, from a
 * file, verified). */
static bk_status_t fill_payload(bki_window_t *w, const bkf_meta_t *m, const bkf_source_t *s,
                                const bkf_part_t *p, uint8_t *map, const char **why)
{
    if (map)
        return bkf_check_payload(s, p, NULL, false, why);
    if (bkf_source_read(s, p->offset, w->data, p->length) != BK_OK)
        FAIL(BK_EIO, "read error");
    if (s->buf)
        return BK_OK; /* verified in place before */
    if (m->paged) /* a paged file read whole: its slots checked page by page */
        return bkf_pages_verify(m, s, w->data, why);
    return bkf_check_payload(s, p, w->data, true, why);
}

/* The window's clock and counts from its state bytes; NULL or a reason. */
static const char *apply_state(bki_window_t *w, const uint8_t *st, uint64_t items)
{
    w->epoch = bkf_get_u64(st + S_EPOCH);
    w->now = bkf_get_u64(st + S_NOW);
    w->adds = bkf_get_u64(st + S_ADDS);
    for (uint32_t s = 0; s < w->geom.slots; s++) {
        if (w->geom.slotted) {
            w->gen_adds[s] = bkf_get_u64(st + S_COUNTS + 16 * s);
            w->last[s] = bkf_get_u64(st + S_COUNTS + 16 * s + 8);
        } else {
            w->gen_adds[s] = bkf_get_u64(st + S_COUNTS + 8 * s);
        }
    }
    uint64_t newest = bkf_get_u64(st + S_NEWEST);
    if (!w->geom.slotted && newest != 0)
        return "reserved window state bytes are not zero";
    w->newest = newest < w->geom.slots ? (uint32_t)newest : w->geom.slots;
    const char *bad = bki_window_check_state(w);
    if (!bad && bki_window_held(w) != items)
        bad = "window item count disagrees with its generations";
    return bad;
}

/* The window m describes, from its state part's bytes: its payload
 * borrowed from data, or allocated zeroed when data is NULL. */
static bk_status_t window_from_state(bki_window_t **out, const bkf_meta_t *m,
                                     const uint8_t *st, uint8_t *data, const char **why)
{
    bkf_part_t gens, state;
    bkf_decode_part(m, 0, &gens);
    bkf_decode_part(m, 1, &state);
    if (!bkf_all_zero(st + S_RESERVED, S_COUNTS - S_RESERVED))
        FAIL(BK_ECORRUPT, "reserved window state bytes are not zero");
    bool slotted = state.k == LAYOUT_SLOTTED;
    bki_window_params_t p = {.capacity = m->capacity, .fpr = m->fpr,
                             .span = bkf_get_u64(st + S_SPAN),
                             .generations = (uint32_t)(slotted ? state.cells / 2 : state.cells)};
    uint64_t lines = gens.cells / (state.cells * BKI_LINE_BITS);
    bki_window_t *w;
    bk_status_t rc = bki_window_restore(&w, &p, gens.k, lines, slotted, (bk_hash_id_t)m->hash,
                                        m->seed, data);
    if (rc != BK_OK)
        FAIL(rc, rc == BK_ENOMEM ? "out of memory" : "window geometry out of range");
    const char *bad = apply_state(w, st, m->items);
    if (bad) {
        bki_window_free(w);
        FAIL(BK_ECORRUPT, bad);
    }
    *out = w;
    return BK_OK;
}

bk_status_t bkf_window_build(bk_filter_t **out, const bkf_meta_t *m, const bkf_source_t *s,
                             uint8_t *map, const char **why)
{
    bkf_part_t gens, state;
    bkf_decode_part(m, 0, &gens);
    bkf_decode_part(m, 1, &state);
    uint8_t st[BKF_WINDOW_STATE_MAX];
    bk_status_t rc = read_state(s, &state, map, st, why);
    if (rc != BK_OK)
        return rc;
    bki_window_t *w;
    rc = window_from_state(&w, m, st, map ? map + gens.offset : NULL, why);
    if (rc != BK_OK)
        return rc;
    rc = fill_payload(w, m, s, &gens, map, why);
    if (rc != BK_OK) {
        bki_window_free(w);
        return rc;
    }
    if (bki_window_wrap(out, w, (bk_kind_t)m->kind) != BK_OK) /* w is freed */
        FAIL(BK_ENOMEM, "out of memory");
    return BK_OK;
}

bk_status_t bkf_window_adopt(bk_filter_t **out, const bkf_meta_t *m, const uint8_t *state,
                             uint8_t *data, bki_mem_t mem, const char **why)
{
    bkf_part_t gens;
    bkf_decode_part(m, 0, &gens);
    bki_window_t *w;
    bk_status_t rc = window_from_state(&w, m, state, data, why);
    if (rc != BK_OK) {
        bki_payload_free(data, gens.length, mem);
        return rc;
    }
    w->mem = mem; /* borrowed until now: the window owns it from here */
    if (bki_window_wrap(out, w, (bk_kind_t)m->kind) != BK_OK) /* w is freed, and data with it */
        FAIL(BK_ENOMEM, "out of memory");
    return BK_OK;
}

void bkf_window_write_state(const bkf_obj_t *o, uint8_t *file)
{
    bkf_part_t gens = {0}, state = {0};
    bkf_window_part(o, 0, &gens);
    bkf_window_part(o, 1, &state);
    memcpy(file + bkf_meta_len(2) + bkf_align64(gens.length), state.data, (size_t)state.length);
}
