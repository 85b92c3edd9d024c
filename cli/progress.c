/*
 * Progress bar and summaries (see progress.h). Drawing is throttled twice:
 * the clock is read only every 4096 lines, and the bar is redrawn at most
 * five times a second (a summary line every 5 s when stderr is not a
 * terminal), so progress costs nothing measurable on a 10-million-line run.
 */
#define _GNU_SOURCE
#include "progress.h"
#include "message.h"
#include "numbers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TICK_LINES 4096u

double bkc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bkc_progress_init(bkc_progress_t *p, bkc_progress_mode_t mode, int64_t total)
{
    memset(p, 0, sizeof *p);
    p->tty = isatty(2) == 1;
    p->enabled = mode == BKC_PROGRESS_ON || (mode == BKC_PROGRESS_AUTO && p->tty);
    p->total = total;
    p->countdown = TICK_LINES;
    p->start = p->last = bkc_now();
    p->interval = p->tty ? 0.2 : 5.0;
    const char *env = getenv("BLOOMKIT_PROGRESS_INTERVAL");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && v >= 0)
            p->interval = v;
    }
}

static void refresh_done(bkc_progress_t *p)
{
    p->done = p->done_base + (p->reader ? bkc_reader_offset(p->reader) : 0);
}

static const char *human_count(uint64_t n, char *buf, size_t len)
{
    if (n >= 10000000000ull)
        snprintf(buf, len, "%.1fG", (double)n / 1e9);
    else if (n >= 10000000)
        snprintf(buf, len, "%.1fM", (double)n / 1e6);
    else if (n >= 100000)
        snprintf(buf, len, "%.0fk", (double)n / 1e3);
    else
        snprintf(buf, len, "%llu", (unsigned long long)n);
    return buf;
}

/* " 1.2M items, 1.0M new, 200k duplicates" */
static void counts_text(const bkc_progress_t *p, char *out, size_t len)
{
    char a[32], b[32], c[32];
    if (p->has_fresh)
        snprintf(out, len, "%s items, %s new, %s duplicates", human_count(p->items, a, sizeof a),
                 human_count(p->fresh, b, sizeof b), human_count(p->dups, c, sizeof c));
    else
        snprintf(out, len, "%s items", human_count(p->items, a, sizeof a));
}

static void draw_bar(bkc_progress_t *p, double t)
{
    char line[256], counts[128], rate[32];
    double el = t - p->start;
    double bps = el > 0 ? (double)p->done / el : 0;
    counts_text(p, counts, sizeof counts);
    bkc_human_bytes(bps, rate, sizeof rate);
    int n;
    if (p->total > 0) {
        double frac = (double)p->done / (double)p->total;
        if (frac > 1)
            frac = 1;
        char bar[21];
        int fill = (int)(frac * 20);
        for (int i = 0; i < 20; i++)
            bar[i] = i < fill ? '#' : '-';
        bar[20] = '\0';
        double eta = bps > 0 ? ((double)p->total - (double)p->done) / bps : 0;
        if (eta < 0)
            eta = 0;
        n = snprintf(line, sizeof line, "[%s] %5.1f%%  %s/s  ETA %d:%02d  %s", bar, frac * 100,
                     rate, (int)eta / 60, (int)eta % 60, counts);
    } else {
        char done[32];
        n = snprintf(line, sizeof line, "%s  %s/s  %s",
                     bkc_human_bytes((double)p->done, done, sizeof done), rate, counts);
    }
    if (n < 0)
        return;
    if (n >= (int)sizeof line)
        n = (int)sizeof line - 1;
    fprintf(stderr, "\r%s", line);
    for (int i = n; i < p->drawn; i++)
        fputc(' ', stderr);
    p->drawn = n;
    fflush(stderr);
}

static void filter_text(const bkc_progress_t *p, char *out, size_t len)
{
    out[0] = '\0';
    if (!p->filter)
        return;
    bk_filter_info_t in;
    bk_filter_info(p->filter, &in);
    snprintf(out, len, ", fill %.3g%%, expected FPR %.3g", in.fill * 100, in.expected_fpr);
}

void bkc_progress_update(bkc_progress_t *p)
{
    p->countdown = TICK_LINES;
    double t = bkc_now();
    if (t - p->last < p->interval)
        return;
    p->last = t;
    refresh_done(p);
    if (p->tty) {
        draw_bar(p, t);
        return;
    }
    char counts[128], fil[96] = "";
    counts_text(p, counts, sizeof counts);
    /* Fill needs a popcount of the whole payload: fine every 5 s up to a
     * few hundred MB, too slow for a multi-GB filter (final summary only). */
    if (!p->filter || bk_filter_serialized_size(p->filter) <= (UINT64_C(512) << 20))
        filter_text(p, fil, sizeof fil);
    if (p->total > 0)
        fprintf(stderr, "bloomkit %s: %.0f s: %s%s, %.1f%% of input\n", bkc_cmd_name,
                t - p->start, counts, fil, 100.0 * (double)p->done / (double)p->total);
    else
        fprintf(stderr, "bloomkit %s: %.0f s: %s%s\n", bkc_cmd_name, t - p->start, counts, fil);
}

void bkc_progress_clear(bkc_progress_t *p)
{
    if (!p || !p->drawn)
        return;
    fprintf(stderr, "\r%*s\r", p->drawn, "");
    fflush(stderr);
    p->drawn = 0;
}

void bkc_progress_summary(bkc_progress_t *p, const char *what)
{
    bkc_progress_clear(p);
    char fil[96];
    filter_text(p, fil, sizeof fil);
    double el = bkc_now() - p->start;
    if (p->has_fresh)
        fprintf(stderr, "bloomkit %s: %s%llu items, %llu new, %llu duplicate%s%s, %.2f s\n",
                bkc_cmd_name, what ? what : "", (unsigned long long)p->items,
                (unsigned long long)p->fresh, (unsigned long long)p->dups,
                p->dups == 1 ? "" : "s", fil, el);
    else
        fprintf(stderr, "bloomkit %s: %s%llu items%s, %.2f s\n", bkc_cmd_name, what ? what : "",
                (unsigned long long)p->items, fil, el);
}

void bkc_progress_finish(bkc_progress_t *p, bool summary, const char *what)
{
    if (summary)
        bkc_progress_summary(p, what);
    else
        bkc_progress_clear(p);
}
