/*
 * The tool's side of window filters (window_opt.h): parsing --window and the
 * wall clock. The library never reads a clock (its tests stay
 * deterministic); the tool gives it seconds since the epoch.
 */
#define _GNU_SOURCE
#include "window_opt.h"

#include "message.h"
#include "numbers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
    char unit;
    uint64_t seconds;
} time_units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};

/* "7d" -> 604800; 0 if spec does not end in a time unit or is bad. */
static uint64_t parse_span(const char *spec, bool *is_time)
{
    size_t len = strlen(spec);
    *is_time = false;
    if (len < 2)
        return 0;
    for (size_t i = 0; i < sizeof time_units / sizeof time_units[0]; i++) {
        if (spec[len - 1] != time_units[i].unit)
            continue;
        *is_time = true;
        char digits[32];
        uint64_t v;
        if (len > sizeof digits || strspn(spec, "0123456789") != len - 1)
            return 0;
        memcpy(digits, spec, len - 1);
        digits[len - 1] = '\0';
        if (bkc_parse_u64(digits, &v) != 0 || v == 0 || v > UINT64_MAX / time_units[i].seconds)
            return 0;
        return v * time_units[i].seconds;
    }
    return 0;
}

int bkc_window_option(const char *spec, bkc_sizing_opts_t *sz, bool *is_time)
{
    uint64_t span = parse_span(spec, is_time);
    sz->o.kind = BK_KIND_WINDOW;
    if (*is_time) {
        if (span == 0)
            return bkc_usage_error("bad window '%s' (want a whole number and s, m, h, d or w)",
                                   spec);
        sz->o.window_span = span;
        return -1;
    }
    uint64_t count;
    if (bkc_parse_count(spec, &count) != 0 || count == 0)
        return bkc_usage_error("bad window '%s' (want a count such as 100M, or a time such as 7d)",
                               spec);
    sz->o.window_span = 0;
    sz->n = count;
    return -1;
}

uint64_t bkc_window_now(void)
{
    /* BLOOMKIT_NOW (seconds since the epoch) stands for the wall clock:
     * tests drive time windows through it, and a user can replay a log
     * with its own times. Ignored unless it is a whole number. */
    static int fixed = -1; /* read once: dedup asks per line */
    static uint64_t fixed_now;
    if (fixed < 0) {
        const char *env = getenv("BLOOMKIT_NOW");
        fixed = env && *env && bkc_parse_u64(env, &fixed_now) == 0;
    }
    if (fixed)
        return fixed_now;
    time_t t = time(NULL);
    return t > 0 ? (uint64_t)t : 0;
}

bool bkc_is_time_window(const bk_filter_t *f)
{
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    return sh.window_span != 0;
}

void bkc_window_tick(bk_filter_t *f)
{
    if (bk_kind_caps(bk_filter_kind(f)) & BK_CAP_WINDOW)
        (void)bk_filter_advance(f, bkc_window_now()); /* count windows, read-only maps: no-op */
}

size_t bkc_window_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out,
                                 uint64_t now)
{
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = bk_filter_contains_at(f, keys[i].ptr, keys[i].len, now);
        hits += out[i];
    }
    return hits;
}

const char *bkc_window_span_text(uint64_t seconds, char *buf, size_t len)
{
    for (size_t i = sizeof time_units / sizeof time_units[0]; i-- > 0;) {
        if (seconds % time_units[i].seconds == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(seconds / time_units[i].seconds),
                     time_units[i].unit);
            return buf;
        }
    }
    return buf;
}
