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
#include "internal.h"

#include <math.h>

#define BKI_FPR_AIM 0.9

/* The default kind: blocked (one line per key) down to this error rate,
 * blocked2 (two lines) below it. Blocked stays within 1.11x of the classic
 * optimum's bits per key for p >= 1e-3 and is the faster kind (one memory
 * access per key); below 1e-3 its space grows fast (1.17x at 1e-4, 1.38x
 * at 1e-6) while blocked2 stays within 1.10x down to 1e-6. */
#define BKI_BLOCKED2_BELOW 1e-3

static double classic_fpr(uint64_t m, uint64_t n, uint32_t k)
{
    if (n == 0)
        return 0.0;
    if (m == 0 || k == 0)
        return 1.0;
    /* (1 - 1/m)^(kn) computed in log space: no underflow, no 1 - tiny. */
    double zero = exp((double)k * (double)n * log1p(-1.0 / (double)m));
    return pow(-expm1(log(zero)), (double)k);
}

/* Average over j ~ Poisson(lambda) of (1 - (1 - k/C)^j)^k. */
static double lined_fpr(double cells_per_line, uint64_t lines, uint64_t n, uint32_t k)
{
    if (n == 0)
        return 0.0;
    if (lines == 0 || k == 0)
        return 1.0;
    double lambda = (double)n / (double)lines;
    double keep = log1p(-(double)k / cells_per_line); /* ln(1 - k/C) */
    if (lambda > 1e7) /* absurdly overfull: the spread no longer matters */
        return pow(-expm1(lambda * keep), (double)k);
    double spread = 12.0 * sqrt(lambda) + 30.0;
    double lo = floor(lambda - spread), hi = ceil(lambda + spread);
    if (lo < 0)
        lo = 0;
    double sum = 0.0, mass = 0.0, loglam = log(lambda);
    for (double j = lo; j <= hi; j += 1.0) {
        double pmf = exp(j * loglam - lambda - lgamma(j + 1.0));
        if (pmf == 0.0)
            continue;
        mass += pmf;
        sum += pmf * pow(-expm1(j * keep), (double)k);
    }
    /* The truncated tails hold < 1e-20 of the mass; a mass short of 1 only
     * happens through rounding. Report the conservative side. */
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
    return kind == BK_KIND_DEFAULT || kind == BK_KIND_SCALABLE ? BK_KIND_BLOCKED : kind;
}

/* What BK_KIND_DEFAULT means at error rate p. */
static bk_kind_t default_kind(double p)
{
    return p >= BKI_BLOCKED2_BELOW ? BK_KIND_BLOCKED : BK_KIND_BLOCKED2;
}

double bk_fpr_expected(bk_kind_t kind, uint64_t m, uint64_t n, uint32_t k)
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
    return classic_fpr(m, n, k);
}

static bool valid_target(uint64_t n, double p)
{
    return n > 0 && p > 0.0 && p < 1.0 && !isnan(p);
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
    double kd = round((double)m / (double)n * ln2);
    uint32_t k = kd < 1 ? 1 : kd > BKI_CLASSIC_MAX_K ? BKI_CLASSIC_MAX_K : (uint32_t)kd;
    /* Rounding k (and capping it) can leave the FPR a hair above p: grow m
     * by 0.1% steps until the exact FPR is within the target. */
    while (classic_fpr(m, n, k) > p) {
        uint64_t step = m / 1000 < 64 ? 64 : m / 1000;
        if (m > max_bits - step)
            return BK_ENOMEM;
        m = bki_layout_round_cells(kind, m + step);
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

bk_status_t bk_plan(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out)
{
    if (!out || !valid_target(n, p))
        return BK_EINVAL;
    if (kind == BK_KIND_DEFAULT)
        kind = default_kind(p);
    bk_kind_t array = array_kind(kind);
    if (!bki_layout_is_filter(array))
        return BK_EINVAL;
    bk_plan_t plan = {0};
    double aim = p * BKI_FPR_AIM;
    /* The first link of the default chain: blocked, error p (1 - 1/2). */
    if (kind == BK_KIND_SCALABLE)
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
    *out = plan;
    return BK_OK;
}
