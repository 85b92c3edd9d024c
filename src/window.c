/*
 * Window filter: "was this key added in the last N adds, or in the last T
 * units of the caller's clock?", for crawlers that re-crawl and gateways
 * that ask "seen in the last hour?". A plain filter only fills up; this one
 * forgets old keys on a schedule, in constant memory.
 *
 * Structure: G rotating generations of blocked filters, stored interleaved.
 * Generation e (the e-th block of g = ceil(N / (G - 1)) adds, or of
 * d = ceil(T / (G - 1)) time units) lives in slot e mod G. A key hashes to
 * one bucket of G adjacent 64-byte lines, one line per slot, and inside a
 * line to k bits laid out exactly as in a blocked filter (blocked.c: lanes,
 * strides, salts), so each slot is a blocked filter of `lines` lines. An add
 * sets the key's bits in the newest slot's line; a lookup tests the key's
 * line in every live slot; moving to a new generation clears the slot of
 * the generation G back, so the newest slot is always empty when it starts.
 *
 * Time windows rotate on fullness too ("slotted"). A time window is sized
 * for at most N adds per T, and a crawl delivers them in bursts: with one
 * generation per d = T / (G - 1) time units, a burst of N adds landed in
 * one generation sized for N / (G - 1), overfilling it (G - 1) times: at
 * p = 0.1% a burst measured 2% to 14% false positives. So a time window
 * has S = 2 G slots of g adds each, and its newest slot moves on when it
 * has g adds or when the clock enters a new generation (floor(now / d)),
 * whichever comes first; every slot remembers the time of its last add and
 * is cleared once that is T or more in the past. Why 2 G slots suffice for
 * any arrival within the promise (at most N adds in any T): a live slot
 * (last add within T) lies within one generation, and the live slots span
 * at most G generations, so at most G of them are not full; the full ones
 * hold the adds of the last T (at most N) plus those of the one slot
 * straddling now - T (at most g), so at most (N + g) / g <= G are full.
 * And the false-positive rate: the live slots hold at most N + g <= G g
 * adds, no slot more than g, and a blocked filter's rate per add grows
 * with its load (fpr(n) <= (n / g) fpr(g) for n <= g), so the rates of the
 * live slots sum to at most G fpr(g): each slot is planned at p / G. The
 * cost is memory: 2 G slots where a count window has G, about twice a
 * count window's bits (docs/FORMAT.md). More than N adds within T (the
 * promise broken) would hold more than G g adds: the oldest live slot is
 * then cleared early (those keys read as new: forgetting early, never a
 * rate above p), as it is when the ring has no expired slot to move to.
 * Time windows stored before slotted ones keep their G generations and
 * the rules they were made with.
 *
 * Guarantees (tests/unit/lib/test_window.c checks each against an exact model):
 *  - no false negatives within the window: a key added among the last N
 *    adds (count window), or at a time t with now - t <= T (time window),
 *    is present. Its generation is at most G - 1 behind the current one, and
 *    (G - 1) g >= N, (G - 1) d >= T. The tick past T is kept on purpose:
 *    with whole-second clocks a key added 1.1 s ago in a 2 s window can
 *    read now - t = 2, and must still be found. (A slotted window's live
 *    slots then span T + 1 ticks: the "N adds per T" promise is read over
 *    T + 1 ticks, and past it the oldest slot is cleared early, never a
 *    rate above p.)
 *  - forgotten after G generations: a key last added G * g adds ago (count)
 *    or G * d units ago (time) has no bits left and reads as new, up to p.
 *    Between N and G g (T and G d) a key may or may not still be present.
 *  - FPR <= p at any moment: a count window's slots hold at most g adds
 *    each and are planned at 1 - (1 - p)^(1/G) (aimed at 0.9 of that, as
 *    every plan), so even with every slot full the union of G independent
 *    filters stays under p; a time window's, for any arrival of at most N
 *    adds per T, as above.
 *  - time windows move with the caller's clock (bki_window_advance): a clock
 *    that goes back is ignored; an idle gap of G generations or more clears
 *    everything.
 *
 * Why this and not the age-partitioned Bloom filter (APBF: Shtul, Baquero,
 * Almeida 2020; k + l one-bit slices, insert into the k newest, present when
 * k consecutive slices hold the key). At p = 1%, modelled at the worst
 * moment (every slice and slot full), per item of the window:
 *   APBF k=10 l=7 (the usual setting)    25.9 bits, forgets after 2.43 N
 *   APBF best found (k=9, l=40)          19.7 bits, 1.23 N, 49 slices
 *   APBF as published (dcrd)             22.8 bits
 *   rotate 2 blocked filters             23.7 bits, 2.00 N, 2 lines/lookup
 *   this, G=4                            18.1 bits, 1.33 N, 4 lines/lookup
 *   this, G=8                            17.5 bits, 1.14 N, 8 lines/lookup
 * Measured side by side (bench/bench_window.c, docs/BENCHMARKS.md, a
 * loaded 2-core machine, ratios to one blocked filter's lookup): in cache,
 * G=4 1.0-1.2x, G=8 1.3-1.4x, APBF(10,7) 3-4x, APBF(9,40) 9-11x; at 250 MB
 * G=4 1.3-1.6x, G=8 2.0-2.2x, APBF 6-18x; every one under p at its worst
 * moment. An APBF lookup probes k slices at k independent
 * addresses: k cache misses in a large filter, and 9 to 10 is the k that
 * makes it compact. Here a key's G lines are adjacent (one bucket, one page,
 * one DRAM row) and each is tested with a few word operations; an add
 * writes one line. The price: a full slot is cleared per generation (a
 * strided pass over 1/G of the payload; a pause, not a per-key cost) and
 * the window boundary is fuzzy by one generation (N to G g), which the
 * APBF has too (l to l + k generations) and worse. G = 4 is the default:
 * within 4% of the fewest bits (G = 7: 17.5), half the lines per lookup of
 * G = 8; callers who want sharper forgetting choose up to 16.
 */
#include "window.h"
#include "keyhash.h"

#include "batch.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BKI_HAVE_X86 1
#endif

/* ---- sizing ---- */

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* The error one slot may have so that G full slots stay within p:
 * 1 - (1 - slot)^G = p. */
static double slot_fpr(double p, uint32_t gens)
{
    return -expm1(log1p(-p) / (double)gens);
}

static double union_fpr(const double *each, uint32_t n)
{
    double none = 1.0;
    for (uint32_t i = 0; i < n; i++)
        none *= 1.0 - each[i];
    return 1.0 - none;
}

/* The error one slot is planned at: count windows, so that the union of G
 * full slots is p; slotted time windows, so that G full slots' rates sum
 * to p (the bound above). */
static double planned_slot_fpr(double p, uint32_t gens, bool slotted)
{
    return slotted ? p / (double)gens : slot_fpr(p, gens);
}

/* The single-array kind a generation is, for its sizing and rate: one
 * 64-byte line of bits a key (kinds.c finds it by that layout). */
static bk_kind_t line_kind(void)
{
    return bki_kind_of_layout(BKI_LINE_BITS, 1, 1);
}

/* The fields that follow from G, S, k, lines and the parameters. */
static void derive_geom(const bki_window_params_t *p, bki_window_geom_t *g)
{
    g->gen_capacity = ceil_div(p->capacity, g->generations - 1);
    g->gen_span = p->span ? ceil_div(p->span, g->generations - 1) : 0;
    g->bytes = g->lines * g->slots * BKI_LINE_BYTES;
    g->gen_fpr = bk_fpr_expected(line_kind(), g->lines * BKI_LINE_BITS, g->gen_capacity, g->k);
    double each[BKI_WINDOW_MAX_GENS];
    for (uint32_t i = 0; i < g->generations; i++)
        each[i] = g->gen_fpr;
    g->expected_fpr = union_fpr(each, g->generations);
}

bk_status_t bki_window_plan(const bki_window_params_t *p, bki_window_geom_t *out)
{
    uint32_t gens = p->generations ? p->generations : BKI_WINDOW_DEFAULT_GENS;
    if (p->capacity == 0 || !(p->fpr > 0.0 && p->fpr < 1.0) || gens < BKI_WINDOW_MIN_GENS ||
        gens > BKI_WINDOW_MAX_GENS)
        return BK_EINVAL;
    memset(out, 0, sizeof *out);
    out->generations = gens;
    out->slotted = p->span != 0;
    out->slots = out->slotted ? 2 * gens : gens;
    bk_plan_t plan;
    bk_status_t s = bk_plan(line_kind(), ceil_div(p->capacity, gens - 1),
                            planned_slot_fpr(p->fpr, gens, out->slotted), &plan);
    if (s != BK_OK)
        return s;
    out->k = plan.k;
    out->lines = plan.bytes / BKI_LINE_BYTES;
    if (out->lines > BKI_MAX_PAYLOAD_BYTES / BKI_LINE_BYTES / out->slots)
        return BK_ENOMEM;
    derive_geom(p, out);
    return BK_OK;
}

bk_status_t bk_plan_window(uint64_t capacity, double fpr, uint64_t span, uint32_t generations,
                           bk_window_plan_t *out)
{
    if (!out)
        return BK_EINVAL;
    bki_window_params_t p = {.capacity = capacity, .fpr = fpr, .span = span,
                             .generations = generations};
    bki_window_geom_t g;
    bk_status_t s = bki_window_plan(&p, &g);
    if (s != BK_OK)
        return s;
    memset(out, 0, sizeof *out);
    out->capacity = capacity;
    out->fpr_target = fpr;
    out->span = span;
    out->generations = g.generations;
    out->slots = g.slots;
    out->slot_capacity = g.gen_capacity;
    out->slot_span = g.gen_span;
    out->k = g.k;
    out->bytes = g.bytes;
    out->bits_per_key = (double)g.bytes * 8.0 / (double)capacity;
    /* the fullest moment: G full slots (count: their union; slotted: the
     * bound, G slots' rates summed) */
    out->expected_fpr = g.slotted ? (double)g.generations * g.gen_fpr : g.expected_fpr;
    out->forget_after = (double)g.generations / (double)(g.generations - 1);
    out->lines_per_lookup = g.slots;
    return BK_OK;
}

/* ---- life cycle ---- */

static inline uint32_t slot_of(const bki_window_t *w, uint64_t epoch)
{
    return (uint32_t)(epoch % w->geom.slots);
}


/* The lane table of the AVX2 probe (one load instead of k steps). */
static void fill_lanes(bki_window_t *w)
{
    for (uint32_t b = 0; b < 128; b++) {
        bki_lanes_t l = bki_lanes_of((uint64_t)b << 32);
        uint32_t m = 0;
        for (uint32_t i = 0; i < w->geom.k; i++)
            m |= UINT32_C(1) << bki_lane(l, i);
        w->lanes[b] = (uint16_t)m;
    }
}

/* A window of the given shape; its payload is `borrow` (a file mapping,
 * not freed here) or, when NULL, a fresh zeroed allocation. */
static bk_status_t window_new(bki_window_t **out, const bki_window_params_t *p,
                              const bki_window_geom_t *geom, bk_hash_id_t hash, uint64_t seed,
                              uint8_t *borrow)
{
    if (geom->bytes > (uint64_t)SIZE_MAX)
        return BK_ENOMEM;
    bki_window_t *w = bki_calloc(1, sizeof *w);
    if (!w)
        return BK_ENOMEM;
    w->params = *p;
    w->params.generations = geom->generations;
    w->geom = *geom;
    w->hash = hash;
    w->seed = seed;
    fill_lanes(w);
    if (borrow) {
        w->data = borrow;
        w->mem = BKI_MEM_BORROWED;
    } else {
        w->data = bki_payload_alloc(geom->bytes, &w->mem);
        if (!w->data) {
            bki_free(w);
            return BK_ENOMEM;
        }
    }
    *out = w;
    return BK_OK;
}

bk_status_t bki_window_create(bki_window_t **out, const bki_window_params_t *p,
                              bk_hash_id_t hash, uint64_t seed)
{
    *out = NULL;
    bki_window_geom_t geom;
    bk_status_t s = bki_window_plan(p, &geom);
    if (s != BK_OK)
        return s;
    return window_new(out, p, &geom, hash, seed, NULL);
}

/* The geometry a stored window had: its own k and lines (a later release
 * may plan differently; the file keeps what this one was built with). */
static bk_status_t stored_geom(const bki_window_params_t *p, uint32_t k, uint64_t lines,
                               bool slotted, bki_window_geom_t *g)
{
    const uint32_t gens = p->generations;
    if (p->capacity == 0 || !(p->fpr > 0.0 && p->fpr < 1.0) || gens < BKI_WINDOW_MIN_GENS ||
        gens > BKI_WINDOW_MAX_GENS || k == 0 || k > BKI_BLOCKED_MAX_K || lines == 0 ||
        (slotted && p->span == 0))
        return BK_ECORRUPT;
    memset(g, 0, sizeof *g);
    g->generations = gens;
    g->slotted = slotted;
    g->slots = slotted ? 2 * gens : gens;
    if (lines > BKI_MAX_PAYLOAD_BYTES / BKI_LINE_BYTES / g->slots)
        return BK_ECORRUPT;
    g->k = k;
    g->lines = lines;
    derive_geom(p, g);
    return BK_OK;
}

bk_status_t bki_window_restore(bki_window_t **out, const bki_window_params_t *p, uint32_t k,
                               uint64_t lines, bool slotted, bk_hash_id_t hash, uint64_t seed,
                               uint8_t *borrow)
{
    *out = NULL;
    bki_window_geom_t geom;
    bk_status_t s = stored_geom(p, k, lines, slotted, &geom);
    if (s != BK_OK)
        return s;
    return window_new(out, p, &geom, hash, seed, borrow);
}

/* A slotted window's state: every slot within its size, live (a slot
 * whose last add is T in the past is cleared when the clock gets there),
 * its last add no later than the clock, in one generation with the newest
 * slot's generation the current one. */
static const char *check_slotted(const bki_window_t *w)
{
    const bki_window_geom_t *g = &w->geom;
    if (w->newest >= g->slots)
        return "window newest slot out of range";
    for (uint32_t s = 0; s < g->slots; s++) {
        if (w->gen_adds[s] == 0) {
            if (w->last[s] != 0)
                return "empty window slot with a time";
            continue;
        }
        if (w->gen_adds[s] > g->gen_capacity)
            return "window generation over its size";
        if (w->last[s] > w->now || w->now - w->last[s] > w->params.span)
            return "window slot time outside the window";
    }
    if (w->gen_adds[w->newest] && w->last[w->newest] / g->gen_span != w->epoch)
        return "window generation does not match its clock";
    if (w->epoch > w->now / g->gen_span)
        return "window generation does not match its clock";
    return NULL;
}

const char *bki_window_check_state(bki_window_t *w)
{
    const bki_window_geom_t *g = &w->geom;
    uint64_t held = 0;
    for (uint32_t s = 0; s < BKI_WINDOW_MAX_SLOTS; s++) {
        if (s >= g->slots && (w->gen_adds[s] || w->last[s]))
            return "window generation count out of range";
        if (held > UINT64_MAX - w->gen_adds[s])
            return "window generation counts overflow";
        held += w->gen_adds[s];
    }
    if (held > w->adds)
        return "window holds more adds than were made";
    w->held = held;
    if (g->slotted)
        return check_slotted(w);
    for (uint32_t s = 0; s < g->slots; s++)
        if (w->last[s])
            return "window slot time in a generation window";
    w->newest = slot_of(w, w->epoch);
    if (w->params.span == 0) {
        /* Every generation before the current one took exactly g adds. */
        if (w->now != 0)
            return "count window with a clock";
        for (uint32_t s = 0; s < g->generations; s++)
            if (w->gen_adds[s] > g->gen_capacity)
                return "window generation over its size";
        if (w->epoch > w->adds / g->gen_capacity ||
            w->epoch * g->gen_capacity + w->gen_adds[w->newest] != w->adds)
            return "window generation does not match its add count";
    } else if (w->now / g->gen_span != w->epoch) {
        return "window generation does not match its clock";
    }
    return NULL;
}

bk_status_t bki_window_clone(bki_window_t **out, const bki_window_t *w)
{
    bk_status_t s = window_new(out, &w->params, &w->geom, w->hash, w->seed, NULL);
    if (s != BK_OK)
        return s;
    bki_window_t *c = *out;
    uint8_t *data = c->data;
    bki_mem_t mem = c->mem;
    *c = *w;
    c->data = data;
    c->mem = mem;
    c->before_clear = NULL; /* the copy's bytes are its own */
    c->before_clear_arg = NULL;
    memcpy(c->data, w->data, (size_t)w->geom.bytes);
    return BK_OK;
}

void bki_window_free(bki_window_t *w)
{
    if (!w)
        return;
    bki_payload_free(w->data, w->geom.bytes, w->mem);
    bki_free(w);
}

void bki_window_clear(bki_window_t *w)
{
    if (w->before_clear)
        w->before_clear(w->before_clear_arg);
    memset(w->data, 0, (size_t)w->geom.bytes);
    memset(w->gen_adds, 0, sizeof w->gen_adds);
    memset(w->last, 0, sizeof w->last);
    w->held = 0;
    if (w->params.span == 0) {
        w->epoch = 0;
        w->newest = 0;
        w->adds = 0;
    }
}

/* ---- generations ---- */

static inline uint8_t *bucket_of(const bki_window_t *w, uint64_t hi)
{
    uint64_t b = bki_reduce(hi, w->geom.lines);
    return w->data + b * w->geom.slots * BKI_LINE_BYTES;
}

/* Zeroes one slot: line `slot` of every bucket. Only adds set bits, and
 * each counts in its slot, so a slot without adds is already zero. */
static void clear_slot(bki_window_t *w, uint32_t slot)
{
    w->last[slot] = 0;
    if (w->gen_adds[slot] == 0)
        return;
    if (w->before_clear)
        w->before_clear(w->before_clear_arg);
    const uint64_t stride = (uint64_t)w->geom.slots * BKI_LINE_BYTES;
    uint8_t *line = w->data + (uint64_t)slot * BKI_LINE_BYTES;
    for (uint64_t b = 0; b < w->geom.lines; b++, line += stride)
        memset(line, 0, BKI_LINE_BYTES);
    w->held -= w->gen_adds[slot];
    w->gen_adds[slot] = 0;
}

/* Makes generation `epoch` (> the current one) the newest: every slot whose
 * generation falls out of the last G is cleared, all of them after a gap of
 * G generations or more. */
static void move_to(bki_window_t *w, uint64_t epoch)
{
    const uint32_t gens = w->geom.slots; /* S = G here: never slotted */
    if (epoch - w->epoch >= gens) {
        uint64_t held = 0;
        for (uint32_t s = 0; s < gens; s++)
            held += w->gen_adds[s];
        if (held && w->before_clear)
            w->before_clear(w->before_clear_arg);
        if (held) /* a fresh filter's first time skips the pass */
            memset(w->data, 0, (size_t)w->geom.bytes);
        memset(w->gen_adds, 0, sizeof w->gen_adds);
        w->held = 0;
    } else {
        for (uint64_t e = w->epoch + 1; e <= epoch; e++)
            clear_slot(w, slot_of(w, e));
    }
    w->epoch = epoch;
    w->newest = slot_of(w, epoch);
}

/* Slotted: clears every slot whose last add is more than T before now.
 * Not "T or more": a clock counts whole ticks, so a key added at tick t
 * less than T ago in real time may read now = t + T (added at 10.9 s, now
 * 12.05 s, T 2 s: now - t = 2). Keeping one tick more means a key is
 * found for as long as it is younger than T, whatever the tick. */
static void expire_slots(bki_window_t *w, uint64_t now)
{
    for (uint32_t s = 0; s < w->geom.slots; s++)
        if (w->gen_adds[s] && now - w->last[s] > w->params.span)
            clear_slot(w, s);
}

void bki_window_advance(bki_window_t *w, uint64_t now)
{
    if (w->params.span == 0)
        return;
    if (now <= w->now)
        return;
    w->now = now;
    if (w->geom.slotted) {
        expire_slots(w, now);
        return;
    }
    uint64_t epoch = now / w->geom.gen_span;
    if (epoch > w->epoch)
        move_to(w, epoch);
}

/* Slotted: the newest slot moves on (to the next in the ring, which is
 * expired unless more than N adds came within T, and is then cleared
 * early) when it is full or its generation has passed. */
static void next_slot(bki_window_t *w, uint64_t epoch)
{
    uint32_t next = w->newest + 1 == w->geom.slots ? 0 : w->newest + 1;
    w->cleared_early += w->gen_adds[next] != 0; /* live: expired ones are empty */
    clear_slot(w, next);
    w->newest = next;
    w->epoch = epoch;
}

/* Slotted: the live slots may hold G g adds at most (what each slot's
 * p / G is planned for). Within the promise they never reach it (at most
 * N - 1 + g before an add); past it, the oldest live slot is cleared early
 * rather than let the rate rise. */
static void hold_at_most(bki_window_t *w, uint64_t most)
{
    uint32_t slot = w->newest;
    while (w->held >= most) {
        slot = slot + 1 == w->geom.slots ? 0 : slot + 1; /* oldest first */
        if (slot == w->newest)
            return; /* the newest alone holds at most g < G g */
        if (w->gen_adds[slot]) {
            w->cleared_early++;
            clear_slot(w, slot);
        }
    }
}

/* Count windows start a new generation when the current one has g adds;
 * slotted ones as next_slot says. */
static inline void before_add(bki_window_t *w)
{
    if (w->params.span == 0) {
        if (w->gen_adds[w->newest] >= w->geom.gen_capacity)
            move_to(w, w->epoch + 1);
        return;
    }
    if (!w->geom.slotted)
        return;
    uint64_t epoch = w->now / w->geom.gen_span;
    if (w->gen_adds[w->newest] == 0)
        w->epoch = epoch; /* an empty slot takes the adds of now */
    else if (w->gen_adds[w->newest] >= w->geom.gen_capacity || epoch != w->epoch)
        next_slot(w, epoch);
    if (BKI_UNLIKELY(w->held >= (uint64_t)w->geom.generations * w->geom.gen_capacity))
        hold_at_most(w, (uint64_t)w->geom.generations * w->geom.gen_capacity);
}

/* ---- probes ---- */

/* A key's k bits within a line, as 8 words: the blocked filter's scheme
 * (lane i of the line is bits 32 (i & 1).. of word i >> 1). */
typedef struct line_mask {
    uint64_t w[8];
} line_mask_t;

static inline line_mask_t mask_of(uint32_t k, uint64_t lo)
{
    const uint32_t *salt = bki_lane_salt;
    bki_lanes_t l = bki_lanes_of(lo);
    line_mask_t m = {{0}};
    for (uint32_t i = 0; i < k; i++) {
        uint32_t lane = bki_lane(l, i);
        uint64_t bit = UINT64_C(1) << ((l.x * salt[lane]) >> 27);
        m.w[lane >> 1] |= bit << (32 * (lane & 1));
    }
    return m;
}

static inline const uint8_t *slot_line(const uint8_t *bucket, uint32_t slot)
{
    return bucket + (uint64_t)slot * BKI_LINE_BYTES;
}

static inline bool line_holds(const uint8_t *line, const line_mask_t *m)
{
    const uint64_t *w = (const uint64_t *)(const void *)line;
    uint64_t missing = 0;
    for (int i = 0; i < 8; i++)
        missing |= m->w[i] & ~w[i];
    return missing == 0;
}

/* Tests the `live` newest slots of a bucket. Every slot, without an early
 * exit: which slot holds a key is random, so a branch on it mispredicts
 * (in-cache lookups of present keys took 30 ns with the exit, about as long
 * as absent ones without it). */
static bool holds_scalar(const bki_window_t *w, const uint8_t *bucket, uint64_t lo, uint32_t live)
{
    line_mask_t m = mask_of(w->geom.k, lo);
    uint32_t slot = w->newest;
    bool found = false;
    for (uint32_t j = 0; j < live; j++) {
        found |= line_holds(slot_line(bucket, slot), &m);
        slot = slot ? slot - 1 : w->geom.slots - 1;
    }
    return found;
}

/* Sets the key's bits in the newest slot; true if it was in no slot. */
static bool put_scalar(bki_window_t *w, uint8_t *bucket, uint64_t lo)
{
    bool present = holds_scalar(w, bucket, lo, w->geom.slots);
    line_mask_t m = mask_of(w->geom.k, lo);
    uint64_t *line = (uint64_t *)(void *)(bucket + (uint64_t)w->newest * BKI_LINE_BYTES);
    for (int i = 0; i < 8; i++)
        line[i] |= m.w[i];
    return !present;
}

#ifdef BKI_HAVE_X86
/* The same bits with AVX2: the 16 lanes' candidate bits in two registers,
 * masked to the key's k lanes, then one vptest pair per slot. */
__attribute__((target("avx2"))) static inline void masks_avx2(const bki_window_t *w, uint64_t lo,
                                                             __m256i *mlo, __m256i *mhi)
{
    const uint32_t *salt = bki_lane_salt;
    const __m256i x = _mm256_set1_epi32((int)(uint32_t)lo), one = _mm256_set1_epi32(1);
    const __m256i act = _mm256_set1_epi32((int)w->lanes[(lo >> 32) & 127u]);
    const __m256i sel_lo = _mm256_setr_epi32(1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5,
                                             1 << 6, 1 << 7);
    const __m256i sel_hi = _mm256_slli_epi32(sel_lo, 8);
    __m256i s_lo = _mm256_loadu_si256((const __m256i *)(const void *)salt);
    __m256i s_hi = _mm256_loadu_si256((const __m256i *)(const void *)(salt + 8));
    __m256i b_lo = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, s_lo), 27));
    __m256i b_hi = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, s_hi), 27));
    *mlo = _mm256_and_si256(b_lo, _mm256_cmpeq_epi32(_mm256_and_si256(act, sel_lo), sel_lo));
    *mhi = _mm256_and_si256(b_hi, _mm256_cmpeq_epi32(_mm256_and_si256(act, sel_hi), sel_hi));
}

__attribute__((target("avx2"))) static inline bool slots_hold_avx2(const bki_window_t *w,
                                                                  const uint8_t *bucket,
                                                                  __m256i mlo, __m256i mhi,
                                                                  uint32_t live)
{
    uint32_t slot = w->newest;
    int found = 0;
    for (uint32_t j = 0; j < live; j++) {
        const __m256i *line = (const __m256i *)(const void *)slot_line(bucket, slot);
        found |= _mm256_testc_si256(_mm256_load_si256(line), mlo) &
                 _mm256_testc_si256(_mm256_load_si256(line + 1), mhi);
        slot = slot ? slot - 1 : w->geom.slots - 1;
    }
    return found;
}

__attribute__((target("avx2"))) static bool holds_avx2(const bki_window_t *w,
                                                      const uint8_t *bucket, uint64_t lo,
                                                      uint32_t live)
{
    __m256i mlo, mhi;
    masks_avx2(w, lo, &mlo, &mhi);
    return slots_hold_avx2(w, bucket, mlo, mhi, live);
}

__attribute__((target("avx2"))) static bool put_avx2(bki_window_t *w, uint8_t *bucket,
                                                    uint64_t lo)
{
    __m256i mlo, mhi;
    masks_avx2(w, lo, &mlo, &mhi);
    bool present = slots_hold_avx2(w, bucket, mlo, mhi, w->geom.slots);
    __m256i *line = (__m256i *)(void *)(bucket + (uint64_t)w->newest * BKI_LINE_BYTES);
    _mm256_store_si256(line, _mm256_or_si256(_mm256_load_si256(line), mlo));
    _mm256_store_si256(line + 1, _mm256_or_si256(_mm256_load_si256(line + 1), mhi));
    return !present;
}
#endif

/* The probe in use: the level cpu.c chose (tests lower it to compare the
 * paths). */
static inline bool holds(const bki_window_t *w, const uint8_t *bucket, uint64_t lo, uint32_t live)
{
#ifdef BKI_HAVE_X86
    if (BKI_LIKELY(bki_simd_level == BKI_SIMD_AVX2))
        return holds_avx2(w, bucket, lo, live);
#endif
    return holds_scalar(w, bucket, lo, live);
}

/* Adds a key to the newest generation and counts it there. */
static inline bool put(bki_window_t *w, uint8_t *bucket, uint64_t lo)
{
    bool fresh;
#ifdef BKI_HAVE_X86
    if (BKI_LIKELY(bki_simd_level == BKI_SIMD_AVX2))
        fresh = put_avx2(w, bucket, lo);
    else
#endif
        fresh = put_scalar(w, bucket, lo);
    w->gen_adds[w->newest]++;
    w->held++;
    w->last[w->newest] = w->now; /* read only by slotted windows; 0 elsewhere */
    w->adds++;
    return fresh;
}

/* Slots still inside the window if the clock stood at `now`. */
static uint32_t live_slots(const bki_window_t *w, uint64_t now)
{
    const uint32_t gens = w->geom.slots;
    if (w->geom.slotted) {
        /* Slots were filled in ring order, so their last adds grow towards
         * the newest: the live ones are the newest few (those still
         * holding adds, whose last add is within T of now). */
        if (now < w->now)
            now = w->now;
        uint32_t live = 0, slot = w->newest;
        while (live < gens && w->gen_adds[slot] && now - w->last[slot] <= w->params.span) {
            live++;
            slot = slot ? slot - 1 : gens - 1;
        }
        return live;
    }
    if (w->params.span == 0 || now <= w->now)
        return gens;
    uint64_t ahead = now / w->geom.gen_span - w->epoch;
    return ahead >= gens ? 0 : gens - (uint32_t)ahead;
}

bool bki_window_add(bki_window_t *w, bk_hash_t h)
{
    before_add(w);
    return put(w, bucket_of(w, h.hi), h.lo);
}

bool bki_window_contains(const bki_window_t *w, bk_hash_t h)
{
    return holds(w, bucket_of(w, h.hi), h.lo, w->geom.slots);
}

bool bki_window_contains_at(const bki_window_t *w, bk_hash_t h, uint64_t now)
{
    uint32_t live = live_slots(w, now);
    if (live == 0)
        return false;
    return holds(w, bucket_of(w, h.hi), h.lo, live);
}

uint32_t bki_window_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    const bki_window_t *w = f->window;
    uint64_t at = (uint64_t)(bucket_of(w, h.hi) - w->data);
    /* the bucket's S lines, adjacent: its first and last byte */
    off[0] = at;
    off[1] = at + (uint64_t)w->geom.slots * BKI_LINE_BYTES - 1;
    return 2;
}

void bki_window_on_clear(bk_filter_t *f, void (*fn)(void *arg), void *arg)
{
    f->window->before_clear = fn;
    f->window->before_clear_arg = arg;
}

/* ---- batches ---- */

/* A key of the pipeline (batch.h): its bucket and the hash half that picks
 * its bits. */
typedef struct pending {
    uint8_t *bucket;
    uint64_t lo;
} pending_t;

static inline pending_t locate(const bki_window_t *w, bk_hash_t h)
{
    pending_t p = {bucket_of(w, h.hi), h.lo};
    return p;
}

/* Requests a bucket's G lines: adjacent, so one page and one DRAM row. */
static inline void prefetch(const bki_window_t *w, pending_t p)
{
    for (uint32_t s = 0; s < w->geom.slots; s++)
        __builtin_prefetch(slot_line(p.bucket, s));
}

/* An add (with the count window's generation step first, so a batch
 * crosses generations exactly as single adds would) or a lookup. */
static inline bool batch_one(bki_window_t *w, pending_t p, bool add)
{
    if (!add)
        return holds(w, p.bucket, p.lo, w->geom.slots);
    before_add(w);
    return put(w, p.bucket, p.lo);
}

/* batch.h's pipeline over the window's buckets; small payloads stay in the
 * caches and are probed directly. */
static uint64_t run_batch(bki_window_t *w, const bk_key_t *keys, size_t n, bool *flags, bool add)
{
    uint64_t count = 0;
    if (w->geom.bytes < BKI_BATCH_PIPELINE_MIN_BYTES) {
        for (size_t i = 0; i < n; i++) {
            bool flag = batch_one(w, locate(w, BKI_KEY_HASH(w, keys, i)), add);
            if (flags)
                flags[i] = flag;
            count += flag;
        }
        return count;
    }
    pending_t ring[BKI_BATCH_AHEAD];
    BKI_BATCH_PRIME(BKI_KEY_HASH, locate, prefetch, w, keys, n, ring);
    for (size_t i = 0; i < n; i++) {
        pending_t p;
        BKI_BATCH_STEP(pending_t, BKI_KEY_HASH, BKI_KEY_FETCH, locate, prefetch, w, keys, n, ring,
                       i, p);
        bool flag = batch_one(w, p, add);
        if (flags)
            flags[i] = flag;
        count += flag;
    }
    return count;
}

uint64_t bki_window_add_batch(bki_window_t *w, const bk_key_t *keys, size_t n, bool *was_new)
{
    return run_batch(w, keys, n, was_new, true);
}

size_t bki_window_contains_batch(const bki_window_t *w, const bk_key_t *keys, size_t n, bool *out)
{
    /* The lookup path of run_batch writes nothing to the window. */
    return (size_t)run_batch((bki_window_t *)(uintptr_t)w, keys, n, out, false);
}

/* ---- usage ---- */

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* usage, the bits set counted, or (estimate) what each slot's adds
 * should have set: a slot of m bits with n adds of k probes, m (1 -
 * e^(-k n / m)). */
static void usage(const bki_window_t *w, bki_window_usage_t *out, bool estimate)
{
    const bki_window_geom_t *g = &w->geom;
    memset(out, 0, sizeof *out);
    if (estimate) {
        double m = (double)g->lines * BKI_LINE_BITS, set = 0;
        for (uint32_t s = 0; s < g->slots; s++)
            set += m > 0 ? -m * expm1(-(double)g->k * (double)w->gen_adds[s] / m) : 0;
        out->bits_set = (uint64_t)llround(set);
    } else {
        const uint64_t *words = (const uint64_t *)(const void *)w->data;
        out->bits_set = bki_popcount_words(words, g->bytes / 8, false);
    }
    out->fill = (double)out->bits_set / ((double)g->bytes * 8.0);
    double each[BKI_WINDOW_MAX_SLOTS];
    for (uint32_t s = 0; s < g->slots; s++) {
        out->items += w->gen_adds[s];
        each[s] = bk_fpr_expected(line_kind(), g->lines * BKI_LINE_BITS, w->gen_adds[s], g->k);
    }
    out->expected_fpr = union_fpr(each, g->slots);
    uint64_t oldest = sub_sat(w->epoch, g->generations - 1);
    if (g->slotted) {
        /* The oldest live slot's adds all lie in its last add's generation. */
        uint32_t live = live_slots(w, w->now), slot = w->newest;
        for (uint32_t j = 1; j < live; j++)
            slot = slot ? slot - 1 : g->slots - 1;
        out->certain_from = sub_sat(w->now, w->params.span);
        out->forgotten_before =
            live ? w->last[slot] / g->gen_span * g->gen_span : w->now + 1;
    } else if (w->params.span == 0) {
        out->certain_from = sub_sat(w->adds, w->params.capacity);
        out->forgotten_before = oldest * g->gen_capacity;
    } else {
        /* a key's generation is at most G - 1 behind while now - t <= T
         * ((G - 1) d >= T): the same extra tick as slotted windows */
        out->certain_from = sub_sat(w->now, w->params.span);
        out->forgotten_before = oldest * g->gen_span;
    }
}

void bki_window_usage(const bki_window_t *w, bki_window_usage_t *out)
{
    usage(w, out, false);
}

/* ---- the handle: a bk_filter_t of the window kind ---- */

static bk_status_t window_add_key(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    if (BKI_UNLIKELY(f->readonly)) {
        if (was_new)
            *was_new = false;
        return BK_EREADONLY;
    }
    bool added = bki_window_add(f->window, bki_key_hash(f->hash, f->seed, key, len));
    if (was_new)
        *was_new = added;
    return BK_OK;
}

static bool window_contains_hash(const bk_filter_t *f, bk_hash_t h)
{
    return bki_window_contains(f->window, h);
}

static bool window_contains_key(const bk_filter_t *f, const void *key, size_t len)
{
    return bki_window_contains(f->window, bki_key_hash(f->hash, f->seed, key, len));
}

bk_status_t bki_window_wrap(bk_filter_t **out, bki_window_t *w, bk_kind_t kind)
{
    bk_filter_t *f = bki_calloc(1, sizeof *f);
    if (!f) {
        bki_window_free(w);
        return BK_ENOMEM;
    }
    f->kind = kind;
    f->add_key = window_add_key;
    f->contains_key = window_contains_key;
    f->u64 = NULL; /* 64-bit keys as their bytes */
    f->contains_hash = window_contains_hash;
    f->hash = w->hash;
    f->seed = w->seed;
    f->capacity = w->params.capacity;
    f->fpr = w->params.fpr;
    f->k = w->geom.k;
    f->map_fd = -1;
    bki_set_items(f, 0);
    f->window = w;
    *out = f;
    return BK_OK;
}

bk_status_t bki_window_filter_create(bk_filter_t **out, uint64_t capacity, double fpr,
                                     const bk_options_t *o)
{
    bki_window_params_t p = {.capacity = capacity, .fpr = fpr, .span = o->window_span,
                             .generations = o->window_generations};
    bki_window_t *w;
    bk_status_t s = bki_window_create(&w, &p, o->hash, o->seed);
    return s == BK_OK ? bki_window_wrap(out, w, o->kind) : s;
}

bk_status_t bki_window_filter_clone(bk_filter_t **out, const bk_filter_t *f)
{
    bki_window_t *w;
    *out = NULL;
    bk_status_t s = bki_window_clone(&w, f->window);
    return s == BK_OK ? bki_window_wrap(out, w, f->kind) : s;
}

bk_filter_t *bki_window_filter_defrag(bk_filter_t *f, bki_mover_t *mv)
{
    f = bki_move_block(f, mv);
    bki_window_t *w = f->window = bki_move_block(f->window, mv);
    w->data = bki_move_payload(w->data, w->geom.bytes, w->mem, mv);
    return f;
}

void bki_window_filter_free(bk_filter_t *f)
{
    bki_window_free(f->window);
    bki_free(f);
}

uint64_t bki_window_held(const bki_window_t *w)
{
    uint64_t held = 0;
    for (uint32_t s = 0; s < w->geom.slots; s++)
        held += w->gen_adds[s];
    return held;
}

void bki_window_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out)
{
    const bki_window_t *w = f->window;
    memset(out, 0, sizeof *out);
    out->kind = f->kind;
    out->sub_kind = line_kind();
    out->hash = f->hash;
    out->seed = f->seed;
    out->capacity = w->params.capacity;
    out->fpr_target = w->params.fpr;
    out->k = w->geom.k;
    out->bytes = w->geom.bytes;
    out->items = bki_window_held(w);
    out->filters = w->geom.generations;
    out->nonscaling = true;
    out->window_span = w->params.span;
}

static void window_info(const bk_filter_t *f, bk_filter_info_t *out, bool estimate)
{
    const bki_window_t *w = f->window;
    bki_window_usage_t u;
    usage(w, &u, estimate);
    memset(out, 0, sizeof *out);
    out->kind = f->kind;
    out->sub_kind = line_kind(); /* each generation is a blocked filter */
    out->hash = f->hash;
    out->seed = f->seed;
    out->capacity = w->params.capacity;
    out->fpr_target = w->params.fpr;
    out->cells = w->geom.bytes * 8;
    out->k = w->geom.k;
    out->bytes = w->geom.bytes;
    out->items = u.items;
    out->cells_set = u.bits_set;
    out->fill = u.fill;
    out->estimated_items = (double)u.items;
    out->expected_fpr = u.expected_fpr;
    out->filters = w->geom.generations;
    out->nonscaling = true;
    out->window_span = w->params.span;
    out->window_generation = w->params.span ? w->geom.gen_span : w->geom.gen_capacity;
    out->window_now = w->now;
    out->window_adds = w->adds;
    out->window_certain_from = u.certain_from;
    out->window_forgotten_before = u.forgotten_before;
    out->window_slots = w->geom.slots;
    out->window_cleared_early = w->cleared_early;
}

void bki_window_filter_info(const bk_filter_t *f, bk_filter_info_t *out)
{
    window_info(f, out, false);
}

void bki_window_info_estimated(const bk_filter_t *f, bk_filter_info_t *out)
{
    window_info(f, out, true);
}
