/*
 * bloomkit plan: sizes a filter before it is made, so a user can see what
 * 100 million keys at 0.1% cost (bits, k, bytes) and how the false-positive
 * rate climbs if the filter is filled past what it was sized for; then what
 * the other kinds would cost in memory and in time per lookup, to choose.
 */
#define _GNU_SOURCE
#include "commands.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "window_opt.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: bloomkit plan -n N -p P [--kind KIND] [--static] [--no-speed]\n"
    "       bloomkit plan --window COUNT -p P [--generations G]\n"
    "       bloomkit plan --window TIME -n N -p P [--generations G]\n"
    "\n"
    "Sizes a filter for N items at false-positive rate P: bits, probes (k),\n"
    "bytes, bits per key, the expected FPR at N items, and a table of the\n"
    "expected FPR as the filter fills from 10% to 200% of N. Then the other\n"
    "kinds for the same N and P: their memory, the time of one lookup on this\n"
    "machine in a filter that fits the CPU caches (measured as plan runs, a\n"
    "few milliseconds), and how many memory accesses one lookup costs in a\n"
    "filter larger than the caches, where those accesses are the time.\n"
    "\n"
    "  -n, --capacity N   items the filter must hold (10000000, 10M, 1e7)\n"
    "  -p, --fpr P        false-positive rate at N items (0.001, 1e-3, 0.1%)\n"
    "  -k, --kind KIND    split, blocked, blocked2, classic, precise, counting,\n"
    "                     cuckoo (deletes, a fifth of counting's bytes) or\n"
    "                     scalable; default: split for 0.004 <= P <= 0.02,\n"
    "                     blocked for other P >= 0.001, blocked2 below\n"
    "      --static       the set is given whole and never added to (a list\n"
    "                     rebuilt when it changes): plan a static filter, fuse8,\n"
    "                     fuse16 or fuse32 by P (also --kind fuse8 ...), a\n"
    "                     fifth to a quarter less memory than a Bloom filter; make it with\n"
    "                     create --static FILE INPUT...\n"
    "      --no-speed     leave out the measured times (the output is then the\n"
    "                     same on every run and machine)\n"
    "  -w, --window SPEC  a window filter (as create --window): a count (100M)\n"
    "                     or a time (7d; N is the most lines within any TIME);\n"
    "                     --kind window without it plans a count window of N.\n"
    "                     Prints its memory, generations and slots, the FPR at\n"
    "                     its fullest, when it forgets, and the same for other\n"
    "                     generation counts and for the other type of window\n"
    "      --generations G  window: generations, 2..16 (default 4)\n"
    "  -h, --help         this text\n";

enum { OPT_NO_SPEED = 1000, OPT_GENERATIONS, OPT_STATIC };

/* One window plan as lines of the report; false after an error message. */
static bool print_window(uint64_t n, double p, uint64_t span, uint32_t gens)
{
    bk_window_plan_t w;
    bk_status_t st = bk_plan_window(n, p, span, gens, &w);
    if (st != BK_OK) {
        bkc_error("cannot size a window for n=%llu p=%g: %s", (unsigned long long)n, p,
                  st == BK_ENOMEM ? "it would need more than the 64 TiB a filter may hold"
                                  : bk_strerror(st));
        return false;
    }
    char hb[32];
    printf("kind            window\n");
    if (span)
        printf("window          the last %llu s of clock, at most %llu adds within any of them\n",
               (unsigned long long)span, (unsigned long long)n);
    else
        printf("window          the last %llu adds\n", (unsigned long long)n);
    printf("target FPR      %g\n", p);
    printf("generations     %u, of %llu %s\n", w.generations,
           (unsigned long long)(span ? w.slot_span : w.slot_capacity), span ? "s" : "adds");
    printf("slots           %u of %llu adds each%s\n", w.slots,
           (unsigned long long)w.slot_capacity,
           span ? " (2 per generation: a burst cannot overfill one)" : "");
    printf("k               %u\n", w.k);
    printf("bytes           %llu (%s)\n", (unsigned long long)w.bytes,
           bkc_human_bytes((double)w.bytes, hb, sizeof hb));
    printf("bits per key    %.2f\n", w.bits_per_key);
    printf("expected FPR    %.4g (at its fullest)\n", w.expected_fpr);
    printf("forgets         a key not added for %.3g windows; present within 1\n",
           w.forget_after);
    printf("lines/lookup    %u (adjacent)\n", w.lines_per_lookup);
    return true;
}

/* The other generation counts and the other type, to choose. */
static void print_window_alternatives(uint64_t n, double p, uint64_t span)
{
    printf("\n%-12s  %11s  %11s  %13s  %8s\n", "generations", "count bytes", "time bytes",
           "lines/lookup", "forgets");
    static const uint32_t gens[] = {2, 3, 4, 6, 8, 16};
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
        bk_window_plan_t c, t;
        if (bk_plan_window(n, p, 0, gens[i], &c) != BK_OK ||
            bk_plan_window(n, p, span ? span : 86400, gens[i], &t) != BK_OK)
            continue;
        char cb[32], tb[32], lines[32];
        bkc_human_bytes((double)c.bytes, cb, sizeof cb);
        bkc_human_bytes((double)t.bytes, tb, sizeof tb);
        snprintf(lines, sizeof lines, "%u / %u", c.lines_per_lookup, t.lines_per_lookup);
        printf("%-12u  %11s  %11s  %13s  %7.3gx\n", gens[i], cb, tb, lines, c.forget_after);
    }
    printf("(count: the last N adds; time: at most N adds within any window, however\n"
           "they arrive; lines/lookup count / time; forgets: in windows)\n");
}

/* Keys of the speed measurement: distinct 64-bit values (splitmix64's
 * finalizer is a bijection). */
static uint64_t speed_key(uint64_t i)
{
    uint64_t x = i + UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Nanoseconds per one-key lookup (bk_filter_contains, 8-byte keys, half of
 * them present) in a filter of this kind at rate p that fits the CPU
 * caches: SPEED_KEYS keys, fewer where a key takes so many bits that the
 * filter would pass SPEED_BYTES. The fastest of three rounds, since other
 * work on the machine only slows a round. The time includes hashing the
 * key. Negative if the filter cannot be made. */
#define SPEED_KEYS 16384u
#define SPEED_BYTES (1u << 20)
#define SPEED_LOOKUPS 65536u
static double lookup_ns(bk_kind_t kind, double p, double bits_per_key)
{
    uint64_t keys = SPEED_KEYS;
    if ((double)keys * bits_per_key > 8.0 * SPEED_BYTES)
        keys = (uint64_t)(8.0 * SPEED_BYTES / bits_per_key);
    if (keys < 64)
        return -1;
    bk_options_t o = {0};
    o.kind = kind;
    bk_filter_t *f;
    if (bk_kind_caps(kind) & BK_CAP_STATIC) {
        /* built whole from the keys rather than added to */
        uint64_t *v = malloc(keys * sizeof *v);
        bk_key_t *k = malloc(keys * sizeof *k);
        bk_status_t st = v && k ? BK_OK : BK_ENOMEM;
        for (uint64_t i = 0; st == BK_OK && i < keys; i++) {
            v[i] = speed_key(i);
            k[i].ptr = &v[i];
            k[i].len = sizeof v[i];
        }
        if (st == BK_OK)
            st = bk_filter_build(&f, k, keys, p, &o);
        free(v);
        free(k);
        if (st != BK_OK)
            return -1;
    } else if (bk_filter_create(&f, keys, p, &o) != BK_OK) {
        return -1;
    }
    /* A small filter can need more bits per key than the large one's plan
     * (classic at tiny p): past the caches the time would mislead. */
    bk_filter_info_t info;
    bk_filter_info(f, &info);
    if (info.bytes > 2 * SPEED_BYTES) {
        bk_filter_free(f);
        return -1;
    }
    for (uint64_t i = 0; !(bk_kind_caps(kind) & BK_CAP_STATIC) && i < keys; i++) {
        uint64_t key = speed_key(i);
        if (bk_filter_add(f, &key, sizeof key, NULL) != BK_OK) {
            bk_filter_free(f);
            return -1;
        }
    }
    double best = -1;
    uint64_t hits = 0;
    for (int round = 0; round < 3; round++) {
        double t0 = now_ns();
        for (uint64_t i = 0; i < SPEED_LOOKUPS; i++) {
            /* even i: a key added; odd i: one never added */
            uint64_t key = speed_key(i & 1 ? keys + i : (i / 2) % keys);
            hits += bk_filter_contains(f, &key, sizeof key);
        }
        double ns = (now_ns() - t0) / SPEED_LOOKUPS;
        if (best < 0 || ns < best)
            best = ns;
    }
    bk_filter_free(f);
    /* Every present key must be found: a check that the loop did its work
     * (and keeps the compiler from dropping it). */
    return hits >= 3 * (uint64_t)(SPEED_LOOKUPS / 2) ? best : -1;
}

/* One alternative: a kind's memory next to the classic optimum, its
 * measured in-cache lookup time (speed), and the cache lines one lookup
 * touches in a filter far larger than the caches (what a lookup's speed
 * there comes down to). */
static void print_alternative(bk_kind_t kind, uint64_t n, double p, double optimum, bool speed)
{
    bk_plan_t pl;
    char hb[32], ns[16];
    bk_static_plan_t sp;
    bool fixed = (bk_kind_caps(kind) & BK_CAP_STATIC) != 0;
    bk_status_t st = fixed ? bk_static_plan(kind, n, p, &sp) : bk_plan(kind, n, p, &pl);
    if (st != BK_OK) {
        if (!fixed) /* a static kind out of its reach is left out */
            printf("  %-9s  (cannot be sized for this n and p)\n", bk_kind_name(kind));
        return;
    }
    if (fixed) { /* the columns a Bloom plan fills */
        memset(&pl, 0, sizeof pl);
        pl.bits_per_key = sp.bits_per_key;
        pl.bytes = sp.bytes;
        pl.lines = sp.lines;
    }
    const char *about = bk_kind_text(kind)->about;
    printf("  %-9s  %9.2f  %9.3fx  %10s", bk_kind_name(kind), pl.bits_per_key,
           pl.bits_per_key / optimum, bkc_human_bytes((double)pl.bytes, hb, sizeof hb));
    if (speed) {
        double t = lookup_ns(kind, p, pl.bits_per_key);
        if (t < 0)
            snprintf(ns, sizeof ns, "-");
        else
            snprintf(ns, sizeof ns, "%.1f", t);
        printf("  %9s", ns);
    }
    printf("  %u%s%s%s\n", pl.lines, pl.per_probe ? " (k; absent keys stop early)" : *about ? " (" : "",
           pl.per_probe ? "" : about, !pl.per_probe && *about ? ")" : "");
}

/* The kinds a user could pick instead, and which one stays near the
 * optimum where the default kind does not. */
static void print_alternatives(uint64_t n, double p, bk_kind_t chosen, bool speed)
{
    bk_kind_t kinds[32];
    size_t nkinds = bk_plan_kinds(kinds, sizeof kinds / sizeof kinds[0]);
    if (nkinds > sizeof kinds / sizeof kinds[0])
        nkinds = sizeof kinds / sizeof kinds[0];
    const double ln2 = 0.69314718055994530942;
    double optimum = -log(p) / (ln2 * ln2);
    printf("\nalternatives (optimum: %.2f bits per key, -ln p / ln(2)^2)\n", optimum);
    printf("  %-9s  %9s  %10s  %10s", "kind", "bits/key", "vs optimum", "bytes");
    if (speed)
        printf("  %9s", "ns/lookup");
    printf("  %s\n", "lines per lookup");
    for (size_t i = 0; i < nkinds; i++)
        print_alternative(kinds[i], n, p, optimum, speed);
    for (unsigned k = 1; k < 64; k++) /* the static kinds, where they reach p */
        if (bk_kind_caps((bk_kind_t)k) & BK_CAP_STATIC)
            print_alternative((bk_kind_t)k, n, p, optimum, speed);
    if (speed)
        printf("ns/lookup: one key per call, measured now in a filter of at most %u keys\n"
               "and %u KB (in the CPU caches); in a filter larger than the caches each\n"
               "line per lookup is a memory access, 50-100 ns unless consecutive lookups\n"
               "overlap\n",
               SPEED_KEYS, SPEED_BYTES / 1024);
    /* Where the lined Bloom kinds (a key's probes in one or two lines: those
     * that merge and are not per probe) are far from the optimum, name the
     * one-bit-per-probe kind that needs the fewest bits: classic, or
     * precise for small filters, where classic's double hashing needs more
     * (plan.c). */
    bk_plan_t chosen_plan, lined = {0}, best = {0};
    if (bk_plan(chosen, n, p, &chosen_plan) == BK_OK && chosen_plan.per_probe)
        return;
    for (size_t i = 0; i < nkinds; i++) {
        bk_plan_t pl;
        if (bk_plan(kinds[i], n, p, &pl) != BK_OK)
            continue;
        bk_plan_t *slot = pl.per_probe                                ? &best
                          : bk_kind_caps(kinds[i]) & BK_CAP_MERGE ? &lined
                                                                      : NULL;
        if (slot && (slot->bits_per_key == 0 || pl.bits_per_key < slot->bits_per_key))
            *slot = pl;
    }
    if (lined.bits_per_key == 0 || lined.bits_per_key <= 1.15 * optimum || best.bits_per_key == 0)
        return;
    const char *name = bk_kind_name(best.kind);
    if (best.bits_per_key <= 1.15 * optimum)
        printf("at this rate the lined kinds need over 1.15x the optimum; %s stays\n"
               "near it (%.2fx), at one memory access per probe\n",
               name, best.bits_per_key / optimum);
    else
        printf("at this size and rate every kind needs over 1.15x the optimum; %s needs\n"
               "the fewest bits (%.2fx)\n",
               name, best.bits_per_key / optimum);
}

/* The plan of a filter of one kind, its fill table and the other kinds. 0,
 * or 2 after a message. */
/* A cuckoo filter's plan (bk_cuckoo_plan): its buckets and fingerprints,
 * its rate at each fill (2 buckets of b slots, each matching a random
 * fingerprint with probability 1 / (2^bits - 1)), and the other kinds. */
static int print_cuckoo_plan(bk_kind_t kind, uint64_t n, double p, bool speed)
{
    bk_cuckoo_plan_t cp;
    if (bk_cuckoo_plan(n, p, &cp) != BK_OK) {
        bkc_error("cannot size a cuckoo filter for n=%llu p=%g: its fingerprints reach "
                  "p >= 2.2e-9 at most",
                  (unsigned long long)n, p);
        return BKC_EXIT_ERROR;
    }
    char hb[32];
    printf("kind            cuckoo\n");
    printf("capacity        %llu\n", (unsigned long long)n);
    printf("target FPR      %g\n", p);
    printf("buckets         %llu\n", (unsigned long long)cp.buckets);
    printf("bucket size     %u\n", cp.bucket_size);
    printf("fingerprint     %u bits\n", cp.fingerprint_bits);
    printf("bytes           %llu (%s)\n", (unsigned long long)cp.bytes,
           bkc_human_bytes((double)cp.bytes, hb, sizeof hb));
    printf("bits per key    %.2f\n", cp.bits_per_key);
    printf("expected FPR    %.4g (at any fill up to capacity; it grows a sub-filter past it)\n",
           cp.expected_fpr);
    print_alternatives(n, p, kind, speed);
    return 0;
}

/* A static filter's plan (bk_static_plan): fingerprints, bytes, its rate
 * (the fingerprint's, at any fill: it holds exactly its set), and the
 * other kinds. */
static int print_static_plan(bk_kind_t kind, uint64_t n, double p, bool speed)
{
    bk_static_plan_t sp;
    if (bk_static_plan(kind, n, p, &sp) != BK_OK) {
        char reach[160];
        bkc_error("cannot size a static filter for p=%g: %s at the lowest (use a Bloom kind "
                  "below that)",
                  p, bkc_static_reach(reach, sizeof reach));
        return BKC_EXIT_ERROR;
    }
    char hb[32];
    printf("kind            %s (static: built whole from the set, never added to)\n",
           bk_kind_name(sp.kind));
    printf("capacity        %llu (exactly the set's keys)\n", (unsigned long long)n);
    printf("target FPR      %g\n", p);
    printf("fingerprints    %llu\n", (unsigned long long)sp.cells);
    printf("bytes           %llu (%s)\n", (unsigned long long)sp.bytes,
           bkc_human_bytes((double)sp.bytes, hb, sizeof hb));
    printf("bits per key    %.2f\n", sp.bits_per_key);
    printf("expected FPR    %.4g (at any fill: a new set is a new build)\n", sp.expected_fpr);
    printf("make it with    bloomkit create --kind %s FILE INPUT...\n", bk_kind_name(sp.kind));
    print_alternatives(n, p, sp.kind, speed);
    return 0;
}

/* A kind of fingerprints in buckets (the cuckoo filter): it removes keys
 * but two of them do not merge, unlike counting's counters. */
static bool fingerprints(bk_kind_t kind)
{
    unsigned caps = bk_kind_caps(kind);
    return (caps & BK_CAP_REMOVE) && !(caps & BK_CAP_MERGE);
}

static int print_filter_plan(bk_kind_t kind, uint64_t n, double p, bool speed)
{
    if (bk_kind_caps(kind) & BK_CAP_STATIC)
        return print_static_plan(kind, n, p, speed);
    if (fingerprints(kind))
        return print_cuckoo_plan(kind, n, p, speed);
    bk_plan_t pl;
    bk_status_t st = bk_plan(kind, n, p, &pl);
    if (st != BK_OK) {
        const char *name = bk_kind_name(kind);
        /* bk_plan's BK_ENOMEM here is its size limit, not this machine's
         * memory: a filter's payload is at most 2^46 bytes (64 TiB). */
        bkc_error("cannot size a %s filter for n=%llu p=%g: %s", name ? name : "default",
                  (unsigned long long)n, p,
                  st == BK_ENOMEM ? "it would need more than the 64 TiB a filter may hold"
                                  : bk_strerror(st));
        return BKC_EXIT_ERROR;
    }
    char hb[32];
    printf("kind            %s\n", bk_kind_name(pl.kind));
    printf("capacity        %llu\n", (unsigned long long)pl.capacity);
    printf("target FPR      %g\n", pl.fpr_target);
    printf("bits            %llu\n", (unsigned long long)pl.bits);
    if (pl.cells != pl.bits)
        printf("cells           %llu\n", (unsigned long long)pl.cells);
    printf("k               %u\n", pl.k);
    printf("bytes           %llu (%s)\n", (unsigned long long)pl.bytes,
           bkc_human_bytes((double)pl.bytes, hb, sizeof hb));
    printf("bits per key    %.2f\n", pl.bits_per_key);
    printf("expected FPR    %.4g\n", pl.expected_fpr);
    unsigned caps = bk_kind_caps(kind);
    if ((caps & BK_CAP_GROW) && (caps & BK_CAP_BOUNDED)) /* a chain */
        printf("(scalable: the first sub-filter; each further one is larger and tighter)\n");
    printf("\n%8s  %14s  %s\n", "fill", "items", "expected FPR");
    static const int pct[] = {10, 25, 50, 75, 100, 125, 150, 200};
    bk_kind_t model = pl.kind; /* a chain's: its first sub-filter's model */
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++) {
        uint64_t items = (uint64_t)((double)n * pct[i] / 100.0);
        printf("%7d%%  %14llu  %.4g\n", pct[i], (unsigned long long)items,
               bk_fpr_expected(model, pl.cells, items, pl.k));
    }
    print_alternatives(n, p, pl.kind, speed);
    return 0;
}

int bkc_cmd_plan(int argc, char **argv)
{
    static const struct option opts[] = {{"capacity", required_argument, 0, 'n'},
                                         {"fpr", required_argument, 0, 'p'},
                                         {"kind", required_argument, 0, 'k'},
                                         {"no-speed", no_argument, 0, OPT_NO_SPEED},
                                         {"static", no_argument, 0, OPT_STATIC},
                                         {"window", required_argument, 0, 'w'},
                                         {"generations", required_argument, 0, OPT_GENERATIONS},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 0, 0);
    int c, rc;
    bool speed = true, fixed = false;
    const char *window = NULL;
    uint64_t gens = 0;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "n:p:k:w:h", opts, NULL)) != -1) {
        if (c == OPT_NO_SPEED)
            speed = false;
        else if (c == OPT_STATIC)
            fixed = true;
        else if (c == 'w')
            window = optarg;
        else if (c == OPT_GENERATIONS) {
            if (bkc_parse_u64(optarg, &gens) != 0 || gens < 2 || gens > 16)
                return bkc_usage_error("bad generations '%s' (want 2..16)", optarg);
        } else if ((rc = bkc_shared_option(c, argv, usage, &sz, NULL)) >= 0)
            return rc;
    }
    if (window) {
        uint64_t given_n = sz.n;
        bool time_window;
        if ((rc = bkc_window_option(window, &sz, &time_window)) >= 0)
            return rc;
        if (!time_window && given_n != 0 && given_n != sz.n)
            return bkc_usage_error("--window COUNT is the capacity: leave out -n");
    } else if (gens) {
        if (!(bk_kind_caps(sz.o.kind) & BK_CAP_WINDOW))
            return bkc_usage_error("--generations needs --window or --kind window");
    }
    if (optind < argc)
        return bkc_usage_error("unexpected argument '%s'", argv[optind]);
    if (sz.n == 0 || sz.p == 0)
        return bkc_usage_error("-n and -p are required");
    bk_kind_t kind = sz.o.kind;
    uint64_t n = sz.n;
    double p = sz.p;
    if (fixed) {
        if (window || (kind && !(bk_kind_caps(kind) & BK_CAP_STATIC))) /* another kind given */
            return bkc_usage_error("--static plans a static kind: leave out --window and "
                                   "--kind %s", window ? "window" : bk_kind_name(kind));
        return print_static_plan(kind, n, p, speed);
    }
    if (bk_kind_caps(kind) & BK_CAP_WINDOW) {
        if (!print_window(n, p, sz.o.window_span, (uint32_t)gens))
            return BKC_EXIT_ERROR;
        print_window_alternatives(n, p, sz.o.window_span);
        return 0;
    }

    return print_filter_plan(kind, n, p, speed);
}
