/*
 * Sizing: from capacity n and target false-positive rate p to the number of
 * cells m and probes k, per kind, and back from (m, n, k) to the expected
 * false-positive rate.
 *
 * Classic filters use the textbook optimum, m = -n ln p / (ln 2)^2 and
 * k = (m/n) ln 2, with the exact FPR (1 - (1 - 1/m)^(kn))^k; after rounding k
 * we grow m until that FPR is <= p, so the promise "at most p at capacity"
 * holds exactly in the model rather than approximately.
 *
 * Blocked and counting filters put all of a key's probes in one 64-byte
 * line, so lines fill unevenly: the number of keys in a line is Poisson
 * with mean lambda = n / lines, and the FPR is the average of the per-line
 * FPR over that spread. Crowded lines dominate, which is why a blocked filter
 * needs a few percent more bits than a classic one for the same p (more at
 * very small p). Each key sets one cell in each of k distinct 32-bit lanes
 * out of 16, so a given cell is hit by one key with probability k / C,
 * C = cells per line (512 bits, or 128 counters), and a line holding j keys
 * answers a random absent key positive with probability
 * (1 - (1 - k/C)^j)^k. We search every k in 1..16 for the fewest lines that
 * keep the average <= p and keep the smallest.
 *
 * Every plan aims at BKI_FPR_AIM * p rather than p: a real filter's FPR
 * scatters around the model's by chance (and a user measures it on a
 * sample), and the promise is that what they measure at capacity is at most
 * p, not "p on average". The margin costs about 0.15 bits per key.
 */
#define _GNU_SOURCE /* lgamma_r */
#include "internal.h"

#include <math.h>
#include <string.h>

#define BKI_FPR_AIM 0.9

/* The textbook FPR of k independent probes over m bits holding n keys. */
static double independent_fpr(uint64_t m, uint64_t n, uint32_t k)
{
    if (n == 0)
        return 0.0;
    if (m == 0 || k == 0)
        return 1.0;
    /* (1 - 1/m)^(kn) computed in log space: no underflow, no 1 - tiny. */
    double zero = exp((double)k * (double)n * log1p(-1.0 / (double)m));
    return pow(-expm1(log(zero)), (double)k);
}

static uint32_t euler_phi(uint32_t d)
{
    uint32_t phi = d;
    for (uint32_t f = 2; f * f <= d; f++) {
        if (d % f)
            continue;
        while (d % f == 0)
            d /= f;
        phi -= phi / f;
    }
    return d > 1 ? phi - phi / d : phi;
}

/*
 * What double hashing adds to the independent model, times m. A classic
 * key's probes sit at a + i s (i < k) cells, with a and the stride s
 * uniform over [0, m): only about m strides exist, and those within 1/d
 * cell of a multiple of m/d (d < k, phi(d) such multiples) fold the k
 * probes onto d runs of neighbouring cells. Such a key tests far fewer
 * than k distinct cells, so it is a false positive far more often; the
 * chance of such a stride is ~1/m whatever n is, which is why a small
 * classic filter misses a low p by orders of magnitude under the
 * independent model (n = 1, p = 1e-4 measures 2.4e-3 in 64 bits).
 *
 * Within one of the d runs the stride is t = d (s - c m / d), |t| < 1,
 * and a run of L probes covers 1 + x cells on average, x = (L - 1)|t|:
 * the floor or the ceiling of that by a's fraction, so with each cell set
 * with chance q the run is all set with chance q^(1+floor x) (1 - frac x)
 * + q^(2+floor x) frac x. The term is the sum over d of
 * phi(d) / d * integral over t in (-1, 1) of the product over the d runs,
 * which holds for m well above k (the plan's sizes; it is the model of
 * the layout bloom.c probes, and the grid test in test_fpr_grid.c
 * measures it).
 */
static double folded_strides_times_m(double q, uint32_t k)
{
    enum { STEPS = 32 };
    double qpow[BKI_CLASSIC_MAX_K + 2];
    qpow[0] = 1.0;
    for (uint32_t j = 1; j <= k + 1; j++)
        qpow[j] = qpow[j - 1] * q;
    double total = 0.0;
    for (uint32_t d = 1; d < k; d++) {
        if (qpow[d] < 1e-4 * total)
            break; /* d runs are all set with chance <= q^d */
        double integral = 0.0;
        for (int s = 0; s < STEPS; s++) {
            double t = (s + 0.5) / STEPS, all = 1.0;
            for (uint32_t r = 0; r < d; r++) {
                uint32_t run = k / d + (r < k % d);
                double x = (double)(run - 1) * t;
                uint32_t whole = (uint32_t)x;
                double frac = x - whole;
                all *= qpow[1 + whole] * (1 - frac) + (whole + 2 <= k + 1 ? qpow[2 + whole] : 0) * frac;
            }
            integral += all;
        }
        total += euler_phi(d) / (double)d * 2.0 * integral / STEPS;
    }
    return total;
}

/*
 * The second thing double hashing adds, times m^2 / n: a query whose start
 * and stride are both within about a cell of an added key's (or of a shift
 * of it by j probes) repeats that key's cells, which are set. There are
 * about m^2 (start, stride) pairs, so the chance grows as n / m^2; it is
 * what is left over at n = 1 once folded strides are rare. For a shift j,
 * start offset u and stride offset v (in cells), query probe i meets the
 * key's probe i + j with chance max(0, 1 - |u + i v|) (the cells' fractions
 * are uniform), else its cell is set with chance q; |j| probes have no
 * partner. Integrated over u in (-1, 1) and v in (-4/k, 4/k), beyond which
 * at most a few probes meet and the term is below the independent one.
 */
static double repeated_keys_times_m2(double q, uint32_t k)
{
    enum { USTEPS = 8, VSTEPS = 16 };
    double total = 0.0;
    double width = 4.0 / k;
    for (int32_t j = -(int32_t)k + 1; j < (int32_t)k; j++) {
        double unmatched = pow(q, j < 0 ? -j : j);
        if (unmatched < 1e-3 * total)
            continue;
        int32_t first = j < 0 ? -j : 0, last = j < 0 ? (int32_t)k : (int32_t)k - j;
        double sum = 0.0;
        for (int a = 0; a < USTEPS; a++) {
            double u = -1.0 + 2.0 * (a + 0.5) / USTEPS;
            for (int b = 0; b < VSTEPS; b++) {
                double v = width * (2.0 * (b + 0.5) / VSTEPS - 1.0), all = unmatched;
                for (int32_t i = first; i < last; i++) {
                    double meet = 1.0 - fabs(u + i * v);
                    all *= meet > 0 ? q + (1 - q) * meet : q;
                }
                sum += all;
            }
        }
        total += sum * (2.0 / USTEPS) * (2.0 * width / VSTEPS);
    }
    return total;
}

/* What double hashing adds at fill q with k probes: terms / m + terms2 * n / m^2. */
typedef struct {
    uint32_t k;
    double fill, per_m, per_m2;
} hashing_terms_t;

static hashing_terms_t hashing_terms(double q, uint32_t k)
{
    return (hashing_terms_t){k, q, folded_strides_times_m(q, k), repeated_keys_times_m2(q, k)};
}

static double fill_of(uint64_t m, uint64_t n, uint32_t k)
{
    return -expm1((double)k * (double)n * log1p(-1.0 / (double)m));
}

static double classic_fpr_with(uint64_t m, uint64_t n, const hashing_terms_t *t)
{
    double independent = independent_fpr(m, n, t->k);
    if (n == 0 || m == 0 || t->k < 2)
        return independent;
    double md = (double)m;
    double fpr = independent + t->per_m / md + t->per_m2 * (double)n / (md * md);
    return fpr < 1.0 ? fpr : 1.0;
}

/* The classic layout's FPR: the independent model plus what double
 * hashing (bloom.c) adds, folded strides and repeated keys. Precise
 * filters hash each probe on their own and follow the independent model
 * alone. */
static double classic_fpr(uint64_t m, uint64_t n, uint32_t k)
{
    if (n == 0 || m == 0 || k < 2)
        return independent_fpr(m, n, k);
    hashing_terms_t t = hashing_terms(fill_of(m, n, k), k);
    return classic_fpr_with(m, n, &t);
}

/* x^k for a small whole k, by squaring (pow's cost, for k <= 16, is
 * most of a plan's). */
static inline double pow_k(double x, uint32_t k)
{
    double r = 1.0;
    while (k) {
        if (k & 1)
            r *= x;
        x *= x;
        k >>= 1;
    }
    return r;
}

/* Average over j ~ Poisson(lambda) of (1 - (1 - k/C)^j)^k.
 *
 * Over j in [lambda - spread, lambda + spread] (the tails hold < 1e-20 of
 * the mass), with no libm call per term: the Poisson mass by its ratio
 * pmf(j + 1) = pmf(j) lambda / (j + 1) from the first j, and a line's
 * positive rate y(j) = 1 - (1 - q)^j (q = k/C) by y(j + 1) = y(j) +
 * q (1 - y(j)), which keeps y's relative precision where it is small.
 * Both recurrences run a few hundred steps at most and lose ~1e-13
 * relatively: a plan (the fewest lines under p) is the one the term-by-term
 * lgamma/pow sum gives over the whole grid tests/unit/lib/test_plan.c
 * compares, and this is 20-50x faster, which is what a server making a
 * key per request needs. */
static double lined_fpr(double cells_per_line, uint64_t lines, uint64_t n, uint32_t k)
{
    if (n == 0)
        return 0.0;
    if (lines == 0 || k == 0)
        return 1.0;
    double lambda = (double)n / (double)lines;
    double q = (double)k / cells_per_line;
    double keep = log1p(-q); /* ln(1 - k/C) */
    if (lambda > 1e7) /* absurdly overfull: the spread no longer matters */
        return pow(-expm1(lambda * keep), (double)k);
    double spread = 12.0 * sqrt(lambda) + 30.0;
    double lo = floor(lambda - spread), hi = ceil(lambda + spread);
    if (lo < 0)
        lo = 0;
    int sign; /* lgamma_r, not lgamma: lgamma writes the global signgam, a
                 data race when threads size filters at once */
    double pmf = exp(lo * log(lambda) - lambda - lgamma_r(lo + 1.0, &sign));
    double y = -expm1(lo * keep);
    double sum = 0.0, mass = 0.0;
    for (double j = lo; j <= hi; j += 1.0) {
        mass += pmf;
        sum += pmf * pow_k(y, k);
        pmf *= lambda / (j + 1.0);
        y += q * (1.0 - y);
    }
    /* A mass short of 1 only happens through rounding. Report the
     * conservative side. */
    return mass > 0 ? sum / (mass < 1.0 ? 1.0 : mass) : 1.0;
}

/* Kinds whose keys make k probes in each of two independently chosen lines
 * (layout key_lines == 2): every line receives Poisson(2n / lines) sets of
 * k probes, and an absent key is a false positive when both its lines
 * answer yes: the one-line FPR at 2n keys, squared. */
static double two_line_fpr(double cells_per_line, uint64_t lines, uint64_t n, uint32_t k)
{
    if (n > UINT64_MAX / 2)
        return 1.0;
    double one = lined_fpr(cells_per_line, lines, 2 * n, k);
    return one * one;
}

/* Sizing follows the layout (layout.c): a kind with lines uses the line
 * model, one without the classic model; a new kind needs no case here
 * unless its FPR follows neither. Scalable plans its first sub-filter,
 * blocked. */
static bk_kind_t array_kind(bk_kind_t kind)
{
    return bki_kind_plan_as(kind);
}

size_t bk_plan_kinds(bk_kind_t *out, size_t cap)
{
    size_t n = 0;
    for (unsigned k = 1; k < 64; k++) { /* past the last kind nothing qualifies */
        bk_kind_t kind = (bk_kind_t)k;
        bool one_array = bki_kind_is(kind, BKI_KIND_FILTER | BKI_KIND_CREATE) &&
                         bki_layout_of(kind) != NULL;
        if (!one_array && !bki_kind_is(kind, BKI_KIND_BUCKETS))
            continue;
        if (n < cap)
            out[n] = kind;
        n++;
    }
    return n;
}

static double fpr_uncached(bk_kind_t kind, uint64_t m, uint64_t n, uint32_t k);

/* The last answers of bk_fpr_expected per thread, as plan_memo below: a
 * classic filter's model integrates what double hashing adds (tens of
 * microseconds), and a Redis key is made in a block sized by comparing a
 * few k at once (packed.c), the same ones for every key of a size. */
#define MEMO_SETS 32 /* of two entries each */
typedef struct fpr_memo {
    bool used;
    bk_kind_t kind;
    uint32_t k;
    uint64_t m, n;
    double fpr;
} fpr_memo_t;
static _Thread_local fpr_memo_t fpr_memo[MEMO_SETS][2];

/* splitmix64's finalizer: every input bit moves the set picked. */
static uint64_t memo_mix(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a * 0x9e3779b97f4a7c15u ^ b;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9u ^ c;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
    return h ^ (h >> 31);
}

double bk_fpr_expected(bk_kind_t kind, uint64_t m, uint64_t n, uint32_t k)
{
    fpr_memo_t *set = fpr_memo[memo_mix(m, n, (uint64_t)k << 8 | (uint64_t)kind) % MEMO_SETS];
    for (int w = 0; w < 2; w++)
        if (set[w].used && set[w].kind == kind && set[w].m == m && set[w].n == n && set[w].k == k)
            return set[w].fpr;
    double fpr = fpr_uncached(kind, m, n, k);
    set[1] = set[0]; /* the older entry of the two goes */
    set[0] = (fpr_memo_t){.used = true, .kind = kind, .k = k, .m = m, .n = n, .fpr = fpr};
    return fpr;
}

static double fpr_uncached(bk_kind_t kind, uint64_t m, uint64_t n, uint32_t k)
{
    kind = array_kind(kind);
    if (!bki_layout_is_filter(kind))
        return 1.0;
    const bki_layout_t *l = bki_layout_of(kind);
    uint32_t per_line = l->line_cells;
    if (per_line && l->key_lines == 2)
        return two_line_fpr(per_line, m / per_line, n, k);
    if (per_line)
        return lined_fpr(per_line, m / per_line, n, k);
    return bki_kind_is(kind, BKI_KIND_DOUBLE_HASH) ? classic_fpr(m, n, k)
                                                   : independent_fpr(m, n, k);
}

static bool valid_target(uint64_t n, double p)
{
    return n > 0 && p > 0.0 && p < 1.0 && !isnan(p);
}

/* k = round((m/n) ln 2) at the textbook size m, between 1 and the classic
 * maximum; for the classic layout also at most m / 64 of the size it gets,
 * so that one key's probes are sparse in the array: denser, as at a few
 * keys (n = 1 would get k = 44 in 64 bits), double hashing's strides fold
 * the probes onto each other beyond what classic_fpr models. */
static uint32_t classic_k(bk_kind_t kind, double textbook_k, uint64_t m)
{
    double kd = textbook_k;
    if (bki_kind_is(kind, BKI_KIND_DOUBLE_HASH) && kd > (double)(m / 64))
        kd = (double)(m / 64);
    return kd < 1 ? 1 : kd > BKI_CLASSIC_MAX_K ? BKI_CLASSIC_MAX_K : (uint32_t)kd;
}

static bk_status_t plan_classic(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out)
{
    const double ln2 = 0.69314718055994530942;
    const uint64_t max_bits = BKI_MAX_PAYLOAD_BYTES * 8;
    double want = -(double)n * log(p) / (ln2 * ln2);
    if (!(want < (double)max_bits))
        return BK_ENOMEM;
    uint64_t m = bki_layout_round_cells(kind, (uint64_t)ceil(want));
    if (m == 0)
        return BK_ENOMEM;
    double textbook_k = round((double)m / (double)n * ln2);
    uint32_t k = classic_k(kind, textbook_k, m);
    /* Rounding k (and capping it) can leave the FPR a hair above p, and
     * at small sizes double hashing's folded strides (classic_fpr) far
     * above it: grow m until the model's FPR is within the target, by
     * 0.1% steps near it, and by up to the excess (up to 2x per step)
     * where double hashing's terms, which fall as 1/m or faster, dominate.
     * k stays at the textbook size's: growing m then thins the array,
     * which cuts those terms faster than more probes would. */
    /* The hashing terms grow with the fill, so those of a smaller size
     * bound them at a larger one: computed again only for a new k or once
     * the fill has fallen by a fifth. */
    hashing_terms_t terms = {0, 0.0, 0.0, 0.0};
    for (;;) {
        double fill = fill_of(m, n, k);
        if (!bki_kind_is(kind, BKI_KIND_DOUBLE_HASH)) /* precise: independent probes */
            terms = (hashing_terms_t){k, fill, 0.0, 0.0};
        else if (terms.k != k || fill < 0.8 * terms.fill)
            terms = hashing_terms(fill, k);
        double fpr = classic_fpr_with(m, n, &terms);
        if (fpr <= p)
            break;
        bool folded = fpr > 2 * independent_fpr(m, n, k);
        double grow = !folded ? 1.0 : fpr / p > 2.0 ? 2.0 : fpr / p;
        uint64_t step = (uint64_t)((double)m * (grow - 1.0));
        if (step < m / 1000)
            step = m / 1000;
        if (step < 64)
            step = 64;
        if (m > max_bits - step)
            return BK_ENOMEM;
        m = bki_layout_round_cells(kind, m + step);
        if (m == 0)
            return BK_ENOMEM;
        k = classic_k(kind, textbook_k, m);
    }
    out->cells = m;
    out->bits = m * bki_layout_of(kind)->cell_bits;
    out->k = k;
    return BK_OK;
}

static bk_status_t plan_lined(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out)
{
    const double c = (double)bki_layout_of(kind)->line_cells;
    const uint64_t max_lines = BKI_MAX_PAYLOAD_BYTES / BKI_LINE_BYTES;
    uint64_t best_lines = 0;
    uint32_t best_k = 0;
    for (uint32_t k = 1; k <= bki_layout_of(kind)->max_k; k++) {
        if (!bki_layout_k_ok(kind, k))
            continue;
        /* A k that cannot meet p in fewer lines than the best so far cannot
         * win (ties go to the smaller k): one evaluation instead of a
         * bisection, for most k. The FPR falls as lines grow. */
        if (best_lines > 1 && lined_fpr(c, best_lines - 1, n, k) > p)
            continue;
        /* Find an upper bound that meets p, then bisect to the fewest lines. */
        uint64_t hi = n / 64 + 1;
        if (hi > max_lines)
            hi = max_lines;
        while (lined_fpr(c, hi, n, k) > p) {
            if (hi >= max_lines) {
                hi = 0;
                break;
            }
            hi = hi > max_lines / 2 ? max_lines : hi * 2;
        }
        if (hi == 0)
            continue; /* this k cannot reach p within the size limit */
        uint64_t lo = hi / 2; /* lo fails (or is 0), hi meets p */
        if (lo && lined_fpr(c, lo, n, k) <= p)
            lo = 0;
        while (hi - lo > 1) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (lined_fpr(c, mid, n, k) <= p)
                hi = mid;
            else
                lo = mid;
        }
        if (best_lines == 0 || hi < best_lines) {
            best_lines = hi;
            best_k = k;
        }
    }
    if (best_lines == 0)
        return BK_ENOMEM;
    out->cells = best_lines * (uint64_t)c;
    out->bits = out->cells * bki_layout_of(kind)->cell_bits;
    out->k = best_k;
    return BK_OK;
}

/* The last plans each thread made, by (kind, n, p). A plan is a pure
 * function of them, and a server making a key per request (a Redis BF.ADD
 * of a new key sizes three kinds, then the one it makes) asks the same
 * question again and again: from here it costs a hash and a compare.
 * Per thread, so no lock and no sharing. */
typedef struct plan_memo {
    bool used;
    bk_kind_t kind;
    uint64_t n;
    double p;
    bk_status_t st;
    bk_plan_t plan;
} plan_memo_t;
static _Thread_local plan_memo_t plan_memo[MEMO_SETS][2];

static bk_status_t plan_uncached(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out);

bk_status_t bk_plan(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out)
{
    if (!out || !valid_target(n, p))
        return BK_EINVAL;
    uint64_t pbits;
    memcpy(&pbits, &p, sizeof pbits);
    plan_memo_t *set = plan_memo[memo_mix(n, pbits, (uint64_t)kind) % MEMO_SETS];
    for (int w = 0; w < 2; w++) {
        if (set[w].used && set[w].kind == kind && set[w].n == n && set[w].p == p) {
            if (set[w].st == BK_OK)
                *out = set[w].plan;
            return set[w].st;
        }
    }
    bk_plan_t plan = {0};
    bk_status_t st = plan_uncached(kind, n, p, &plan);
    set[1] = set[0]; /* the older entry of the two goes */
    set[0] = (plan_memo_t){.used = true, .kind = kind, .n = n, .p = p, .st = st, .plan = plan};
    if (st == BK_OK)
        *out = plan;
    return st;
}

static bk_status_t plan_uncached(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out)
{
    if (bki_kind_is(kind, BKI_KIND_BUCKETS)) { /* fingerprints in buckets: its own rule */
        bk_cuckoo_plan_t cp;
        bk_status_t st = bk_cuckoo_plan(n, p, &cp);
        if (st != BK_OK)
            return st;
        bk_plan_t plan = {kind, n, p, cp.bytes * 8, cp.buckets * cp.bucket_size,
                          cp.bucket_size, cp.bytes, cp.bits_per_key, cp.expected_fpr,
                          2, false}; /* its two buckets */
        *out = plan;
        return BK_OK;
    }
    if (!kind) /* the default: by the rate (kinds.c) */
        kind = bki_kind_default(p);
    bk_kind_t array = array_kind(kind);
    /* Kinds not made on their own (RedisBloom's links, sized by its rule
     * for the chains taken over from it) have no plan. */
    if (!bki_layout_is_filter(array) || !bki_kind_is(array, BKI_KIND_CREATE))
        return BK_EINVAL;
    bk_plan_t plan = {0};
    double aim = p * BKI_FPR_AIM;
    /* The first link of the default chain: blocked, error p (1 - 1/2). */
    if (bki_kind_is(kind, BKI_KIND_CHAIN))
        aim *= 0.5;
    const bki_layout_t *l = bki_layout_of(array);
    bk_status_t st;
    if (l->line_cells && l->key_lines == 2) {
        /* The fewest lines whose one-line FPR at 2n keys is sqrt(aim). */
        if (n > UINT64_MAX / 2)
            return BK_ENOMEM;
        st = plan_lined(array, 2 * n, sqrt(aim), &plan);
    } else if (l->line_cells) {
        st = plan_lined(array, n, aim, &plan);
    } else {
        st = plan_classic(array, n, aim, &plan);
    }
    if (st != BK_OK)
        return st;
    plan.kind = kind;
    plan.capacity = n;
    plan.fpr_target = p;
    plan.bytes = bki_layout_bytes(array, plan.cells);
    plan.bits_per_key = (double)plan.bits / (double)n;
    plan.expected_fpr = bk_fpr_expected(kind, plan.cells, n, plan.k);
    plan.per_probe = l->line_cells == 0;
    plan.lines = plan.per_probe ? plan.k : l->key_lines;
    *out = plan;
    return BK_OK;
}
