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

static double cells_per_line(bk_kind_t kind)
{
    return (double)bki_layout_of(kind)->line_cells;
}

double bk_fpr_expected(bk_kind_t kind, uint64_t m, uint64_t n, uint32_t k)
{
    switch (kind) {
    case BK_KIND_CLASSIC:
        return classic_fpr(m, n, k);
    case BK_KIND_COUNTING:
        return lined_fpr(BKI_LINE_COUNTERS, m / BKI_LINE_COUNTERS, n, k);
    case BK_KIND_DEFAULT:
    case BK_KIND_BLOCKED:
    case BK_KIND_SCALABLE:
        return lined_fpr(BKI_LINE_BITS, m / BKI_LINE_BITS, n, k);
    default:
        return 1.0;
    }
}

static bool valid_target(uint64_t n, double p)
{
    return n > 0 && p > 0.0 && p < 1.0 && !isnan(p);
}

static bk_status_t plan_classic(uint64_t n, double p, bk_plan_t *out)
{
    const double ln2 = 0.69314718055994530942;
    const uint64_t max_bits = BKI_MAX_PAYLOAD_BYTES * 8;
    double want = -(double)n * log(p) / (ln2 * ln2);
    if (!(want < (double)max_bits))
        return BK_ENOMEM;
    uint64_t m = bki_layout_round_cells(BK_KIND_CLASSIC, (uint64_t)ceil(want));
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
        m = bki_layout_round_cells(BK_KIND_CLASSIC, m + step);
    }
    out->cells = m;
    out->bits = m;
    out->k = k;
    return BK_OK;
}

static bk_status_t plan_lined(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out)
{
    const double c = cells_per_line(kind);
    const uint64_t max_lines = BKI_MAX_PAYLOAD_BYTES / BKI_LINE_BYTES;
    uint64_t best_lines = 0;
    uint32_t best_k = 0;
    for (uint32_t k = 1; k <= BKI_BLOCKED_MAX_K; k++) {
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
    out->bits = kind == BK_KIND_COUNTING ? out->cells * 4 : out->cells;
    out->k = best_k;
    return BK_OK;
}

bk_status_t bk_plan(bk_kind_t kind, uint64_t n, double p, bk_plan_t *out)
{
    if (!out || !valid_target(n, p))
        return BK_EINVAL;
    bk_plan_t plan = {0};
    bk_status_t st;
    double sub_p = p;
    double aim = p * BKI_FPR_AIM;
    switch (kind) {
    case BK_KIND_CLASSIC:
        st = plan_classic(n, aim, &plan);
        break;
    case BK_KIND_DEFAULT:
    case BK_KIND_BLOCKED:
        kind = BK_KIND_BLOCKED;
        st = plan_lined(kind, n, aim, &plan);
        break;
    case BK_KIND_COUNTING:
        st = plan_lined(kind, n, aim, &plan);
        break;
    case BK_KIND_SCALABLE:
        /* The first link of the default chain: blocked, error p (1 - 1/2). */
        sub_p = aim * 0.5;
        st = plan_lined(BK_KIND_BLOCKED, n, sub_p, &plan);
        break;
    default:
        return BK_EINVAL;
    }
    if (st != BK_OK)
        return st;
    plan.kind = kind;
    plan.capacity = n;
    plan.fpr_target = p;
    plan.bytes = bki_layout_bytes(kind == BK_KIND_SCALABLE ? BK_KIND_BLOCKED : kind, plan.cells);
    plan.bits_per_key = (double)plan.bits / (double)n;
    plan.expected_fpr = bk_fpr_expected(kind, plan.cells, n, plan.k);
    *out = plan;
    return BK_OK;
}
