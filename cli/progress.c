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
#include <sys/ioctl.h>
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

/* The terminal's width now (read at each redraw: a resize is followed
 * without a signal handler), or 80 when it cannot be told. */
static int term_cols(void)
{
    struct winsize ws;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    int c = env ? atoi(env) : 0;
    return c > 0 ? c : 80;
}

/* Erases the bar. It was drawn on one row, shorter than the terminal was
 * wide; a terminal narrowed since (tmux and most terminals re-wrap lines)
 * may now show it on several rows, with the cursor on the last: go up to
 * its first row, then clear to the end of the screen. */
static void erase_bar(bkc_progress_t *p, int cols)
{
    if (!p->drawn)
        return;
    int rows = cols > 0 && p->drawn > cols ? (p->drawn + cols - 1) / cols : 1;
    if (rows > 1)
        fprintf(stderr, "\r\033[%dA\033[J", rows - 1);
    else
        fputs("\r\033[K", stderr);
    p->drawn = 0;
}

/* The bar's text in at most max characters: the whole form, then without
 * the 20-character bar, then with only the item count, then cut. */
static int bar_text(const bkc_progress_t *p, double t, char *line, size_t len, int max)
{
    char counts[128], items[32], rate[32], done[32], bar[21] = "";
    double el = t - p->start;
    double bps = el > 0 ? (double)p->done / el : 0;
    counts_text(p, counts, sizeof counts);
    human_count(p->items, items, sizeof items);
    bkc_human_bytes(bps, rate, sizeof rate);
    int n = 0;
    for (int form = 0; form < 3; form++) {
        const char *c = form < 2 ? counts : items;
        const char *tail = form < 2 ? "" : " items";
        if (p->total > 0) {
            double frac = (double)p->done / (double)p->total;
            frac = frac > 1 ? 1 : frac;
            for (int i = 0; i < 20; i++)
                bar[i] = i < (int)(frac * 20) ? '#' : '-';
            double eta = bps > 0 ? ((double)p->total - (double)p->done) / bps : 0;
            eta = eta < 0 ? 0 : eta;
            n = snprintf(line, len, "%s%s%s%5.1f%%  %s/s  ETA %d:%02d  %s%s", form ? "" : "[",
                         form ? "" : bar, form ? "" : "] ", frac * 100, rate, (int)eta / 60,
                         (int)eta % 60, c, tail);
        } else {
            n = snprintf(line, len, "%s  %s/s  %s%s",
                         bkc_human_bytes((double)p->done, done, sizeof done), rate, c, tail);
        }
        if (n >= 0 && n <= max)
            return n;
    }
    n = n < 0 ? 0 : n;
    if (n > max)
        n = max;
    if ((size_t)n >= len)
        n = (int)len - 1;
    line[n] = '\0';
    return n;
}

/* Draws the bar on one row: never in the terminal's last column, where
 * the cursor would wrap and leave the row behind. */
static void draw_bar(bkc_progress_t *p, double t)
{
    int cols = term_cols();
    char line[256];
    int n = bar_text(p, t, line, sizeof line, cols - 1);
    erase_bar(p, cols);
    fputs(line, stderr);
    p->drawn = n;
    fflush(stderr);
}

static void filter_text(const bkc_progress_t *p, char *out, size_t len)
{
    out[0] = '\0';
    if (!p->filter)
        return;
    bk_filter_info_t in;
    /* a paged state's fill is the one its items lead one to expect: counting
     * it would read the whole file */
    bool counted = bk_filter_info_fast(p->filter, &in);
    snprintf(out, len, ", fill %s%.3g%%, expected FPR %.3g", counted ? "" : "~", in.fill * 100,
             in.expected_fpr);
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

void bkc_progress_status(bkc_progress_t *p, const char *text)
{
    if (!p->enabled)
        return;
    if (!p->tty) {
        fprintf(stderr, "bloomkit %s: %s\n", bkc_cmd_name, text);
        return;
    }
    int cols = term_cols();
    char line[256];
    int n = snprintf(line, sizeof line, "%s: %s", bkc_cmd_name, text);
    if (n < 0)
        return;
    if (n >= (int)sizeof line)
        n = (int)sizeof line - 1;
    if (n > cols - 1)
        n = cols > 1 ? cols - 1 : 0;
    erase_bar(p, cols);
    fprintf(stderr, "%.*s", n, line);
    p->drawn = n;
    fflush(stderr);
}

void bkc_progress_clear(bkc_progress_t *p)
{
    if (!p || !p->drawn)
        return;
    erase_bar(p, term_cols());
    fflush(stderr);
}

void bkc_progress_summary(bkc_progress_t *p, const char *what)
{
    bkc_progress_clear(p);
    char fil[96];
    filter_text(p, fil, sizeof fil);
    double el = bkc_now() - p->start;
    char head[256];
    if (p->has_fresh)
        snprintf(head, sizeof head, "bloomkit %s: %s%llu items, %llu new, %llu duplicate%s",
                 bkc_cmd_name, what ? what : "", (unsigned long long)p->items,
                 (unsigned long long)p->fresh, (unsigned long long)p->dups,
                 p->dups == 1 ? "" : "s");
    else
        snprintf(head, sizeof head, "bloomkit %s: %s%llu items", bkc_cmd_name,
                 what ? what : "", (unsigned long long)p->items);
    /* One line; on a terminal too narrow for it, the filter's figures go
     * on a second, indented, rather than the terminal cutting mid-word. */
    int len = (int)(strlen(head) + strlen(fil)) + 12;
    if (p->tty && fil[0] && len > term_cols() - 1)
        fprintf(stderr, "%s, %.2f s\n  %s\n", head, el, fil + 2);
    else
        fprintf(stderr, "%s%s, %.2f s\n", head, fil, el);
}

void bkc_progress_finish(bkc_progress_t *p, bool summary, const char *what)
{
    if (summary)
        bkc_progress_summary(p, what);
    else
        bkc_progress_clear(p);
}
