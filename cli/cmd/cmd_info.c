/*
 * bloomkit info: what a filter file holds and how full it is: kind, sizes,
 * k, hash and seed, items added, bits set, the item count estimated from the
 * bits, and the false-positive rate to expect at the current fill. A file
 * read whole is verified whole, so a damaged payload is reported here too.
 * A paged file (a large single array, docs/FORMAT.md) is described from its
 * header at once, its fill expected from its item count; --verify reads
 * and checks every page and counts every bit.
 */
#define _GNU_SOURCE
#include "remote.h"
#include "commands.h"
#include "filterfile.h"
#include "message.h"
#include "numbers.h"
#include "options.h"
#include "output.h"
#include "window_opt.h"

#include <getopt.h>
#include <stdio.h>
#include <time.h>

static const char usage[] =
    "usage: bloomkit info FILE [--json] [--verify]\n"
    "\n"
    "Describes the filter FILE: kind, cells, k, bytes, hash and seed, items\n"
    "added, fill, estimated items and the expected false-positive rate at the\n"
    "current fill, and how keys are normalized before they are hashed. For a\n"
    "bitmap file (Python's Bitmap.save, the library's bk_bitmap_save): its\n"
    "range of values, bytes, and how many values it holds.\n"
    "\n"
    "A large file (1 MiB and more) has a checksum per 4 KiB page and is\n"
    "described without reading it: a filter's fill is the one its item count\n"
    "leads one to expect; a bitmap's values are not counted. --verify reads it\n"
    "whole, checks every page and counts the bits (a cuckoo filter's slots in\n"
    "use, a bitmap's values).\n"
    "\n"
    "FILE may be redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME, a filter in Redis\n"
    "(see dedup --redis): its layout, shards and nodes, items and bytes.\n"
    "\n"
    "  -j, --json         one JSON object instead of text\n"
    "      --verify       read and check every page of a large file, count its bits\n"
    "  -h, --help         this text\n";

/* A chain: a kind that grows with tighter rates (its sub-filters, growth
 * and tightening are worth a line). */
static bool is_chain(bk_kind_t kind)
{
    unsigned caps = bk_kind_caps(kind);
    return (caps & BK_CAP_GROW) && (caps & BK_CAP_BOUNDED);
}

static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static const char *utc_text(uint64_t seconds, char *buf, size_t len)
{
    time_t t = (time_t)seconds;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(buf, len, "%llu", (unsigned long long)seconds);
    return buf;
}

/* A window's coverage: its span, generations, clock, and the edges: keys
 * added since certain_from are present, keys last added before
 * forgotten_before are gone. */
static void window_text(const bk_filter_info_t *in)
{
    char span[32], gen[32];
    if (in->window_span) {
        printf("window          last %s of wall clock, %u generations of %s\n",
               bkc_window_span_text(in->window_span, span, sizeof span), in->filters,
               bkc_window_span_text(in->window_generation, gen, sizeof gen));
        char now[40], from[40], gone[40];
        if (in->window_now == 0)
            printf("clock           not started (no line added yet)\n");
        else
            printf("clock           %s\n", utc_text(in->window_now, now, sizeof now));
        /* Read together the two edges must not seem to contradict each
         * other: an empty window says so, and when nothing lies between
         * them (the older edge is not earlier) one line says it all. */
        utc_text(in->window_certain_from, from, sizeof from);
        utc_text(in->window_forgotten_before, gone, sizeof gone);
        if (in->items == 0)
            printf("contents        empty\n");
        else if (in->window_forgotten_before >= in->window_certain_from)
            printf("present         every line added since %s; older ones are forgotten\n",
                   from);
        else
            printf("present         every line added since %s\n"
                   "forgotten       every line last added before %s (between the two a line "
                   "may still be present)\n",
                   from, gone);
    } else {
        printf("window          last %llu adds, %u generations of %llu\n",
               (unsigned long long)in->capacity, in->filters,
               (unsigned long long)in->window_generation);
        printf("adds            %llu (certain from add %llu; forgotten before add %llu)\n",
               (unsigned long long)in->window_adds, (unsigned long long)in->window_certain_from,
               (unsigned long long)in->window_forgotten_before);
    }
}

static void window_json(const bk_filter_info_t *in)
{
    printf(",\"window\":{\"type\":\"%s\",\"span\":%llu,\"generations\":%u,"
           "\"generation\":%llu,\"now\":%llu,\"adds\":%llu,\"certain_from\":%llu,"
           "\"forgotten_before\":%llu}",
           in->window_span ? "time" : "count",
           (unsigned long long)(in->window_span ? in->window_span : in->capacity), in->filters,
           (unsigned long long)in->window_generation, (unsigned long long)in->window_now,
           (unsigned long long)in->window_adds, (unsigned long long)in->window_certain_from,
           (unsigned long long)in->window_forgotten_before);
}

/* How the figures were obtained: counted from a file read whole, or, for
 * a paged file not read yet, expected from the item count. */
typedef struct info_how {
    bool counted;
    uint64_t pages; /* a paged file's pages; 0 for one read whole */
} info_how_t;

static void print_json(const char *path, const bk_filter_info_t *inp, const char *kind,
                       const char *hash, bk_key_form_t form, info_how_t how)
{
    const bk_filter_info_t in = *inp;
    printf("{\"file\":");
    json_string(path);
    printf(",\"kind\":\"%s\",\"hash\":\"%s\",\"seed\":\"0x%016llx\","
           "\"capacity\":%llu,\"fpr_target\":%.17g,\"cells\":%llu,\"k\":%u,"
           "\"bytes\":%llu,\"items\":%llu,\"cells_set\":%llu,\"fill\":%.17g,"
           "\"estimated_items\":%.17g,\"expected_fpr\":%.17g,\"filters\":%u",
           kind, hash, (unsigned long long)in.seed, (unsigned long long)in.capacity,
           in.fpr_target, (unsigned long long)in.cells, in.k, (unsigned long long)in.bytes,
           (unsigned long long)in.items, (unsigned long long)in.cells_set, in.fill,
           in.estimated_items, in.expected_fpr, in.filters);
    printf(",\"key_form\":\"%s\",\"verified\":%s,\"fill_estimated\":%s,\"pages\":%llu",
           bk_key_form_name(form), how.counted ? "true" : "false",
           how.counted ? "false" : "true", (unsigned long long)how.pages);
    if (is_chain(in.kind)) {
        const char *sk = bk_kind_name(in.sub_kind);
        printf(",\"sub_kind\":\"%s\",\"growth\":%.17g,\"tightening\":%.17g,"
               "\"nonscaling\":%s,\"precise_filters\":%u",
               sk ? sk : "?", in.growth, in.tightening, in.nonscaling ? "true" : "false",
               in.precise_filters);
    }
    if (bk_kind_caps(in.kind) & BK_CAP_WINDOW)
        window_json(&in);
    printf("}\n");
}

/* The lines of a static filter (fuse8, fuse16, fuse32) after its capacity: every
 * cell holds a fingerprint by construction, so there is no fill to count;
 * its rate is the fingerprint's. */
static void print_static_text(const bk_filter_info_t *in, bool counted)
{
    char hb[32];
    printf("fingerprints    %llu of %d bits, in %u part%s (static: built from its keys, "
           "never added to)\n",
           (unsigned long long)in->cells, (int)(8 * in->bytes / (in->cells ? in->cells : 1)),
           in->filters, in->filters == 1 ? "" : "s");
    printf("bytes           %llu (%s), %.2f bits a key\n", (unsigned long long)in->bytes,
           bkc_human_bytes((double)in->bytes, hb, sizeof hb),
           in->items ? 8.0 * (double)in->bytes / (double)in->items : 0.0);
    printf("items           %llu\n", (unsigned long long)in->items);
    printf("expected FPR    %.4g\n", in->expected_fpr);
    printf("checksums       %s\n", counted ? "verified (the whole file was read)" : "not read yet");
}

static void print_text(const char *path, const bk_filter_info_t *inp, const char *kind,
                       const char *hash, bk_key_form_t form, info_how_t how)
{
    const bk_filter_info_t in = *inp;
    char hb[32];
    printf("file            %s\n", path);
    printf("kind            %s\n", kind);
    unsigned caps = bk_kind_caps(in.kind);
    if (is_chain(in.kind)) {
        const char *sk = bk_kind_name(in.sub_kind);
        /* deep chains hold precise sub-filters after the first (FORMAT.md) */
        printf("sub-filters     %u: %u %s", in.filters, in.filters - in.precise_filters,
               sk ? sk : "?");
        if (in.precise_filters)
            printf(", %u precise", in.precise_filters);
        printf("; growth %g, tightening %g%s\n", in.growth, in.tightening,
               in.nonscaling ? ", non-scaling" : "");
    }
    if (caps & BK_CAP_WINDOW)
        window_text(&in);
    printf("hash            %s, seed 0x%016llx\n", hash, (unsigned long long)in.seed);
    if (form == BK_KEY_FORM_UNRECORDED)
        printf("keys            form not recorded (older format: the next add records it)\n");
    else if (form == BK_KEY_FORM_AS_GIVEN)
        printf("keys            as given (no --normalize)\n");
    else
        printf("keys            --normalize %s (add, check and dedup --state apply it)\n",
               bk_key_form_name(form));
    printf("capacity        %llu\n", (unsigned long long)in.capacity);
    printf("target FPR      %g\n", in.fpr_target);
    if (caps & BK_CAP_STATIC) {
        print_static_text(&in, how.counted);
        return;
    }
    const bk_kind_text_t *text = bk_kind_text(in.kind);
    printf("%-16s%llu\n", text->cells, (unsigned long long)in.cells);
    printf("%-16s%u\n", text->k, in.k);
    /* a kind that grows without a chain's lines: how far it has grown */
    bool grows_alone = (caps & BK_CAP_GROW) && !is_chain(in.kind);
    if (grows_alone)
        printf("%-16s%u\n", "sub-filters", in.filters);
    printf("bytes           %llu (%s)\n", (unsigned long long)in.bytes,
           bkc_human_bytes((double)in.bytes, hb, sizeof hb));
    printf("items           %llu%s\n", (unsigned long long)in.items,
           !(caps & BK_CAP_BOUNDED) && !(grows_alone && in.growth > 0) && in.items > in.capacity
               ? " (over capacity)"
               : "");
    if (!how.counted) {
        /* nothing read past the header: the fill its items should leave */
        printf("fill            %.2f%% expected from the items (--verify counts the %s)\n",
               in.fill * 100, grows_alone ? text->cells_set : text->cells);
        printf("expected FPR    %.4g\n", in.expected_fpr);
        printf("checksums       a checksum per 4 KiB page, %llu pages, each checked when a key "
               "first reads it (--verify checks them all)\n",
               (unsigned long long)how.pages);
        return;
    }
    printf("%-16s%llu\n", text->cells_set, (unsigned long long)in.cells_set);
    printf("fill            %.2f%%\n", in.fill * 100);
    printf("estimated items %.0f\n", in.estimated_items);
    printf("expected FPR    %.4g\n", in.expected_fpr);
    if (how.pages)
        printf("checksums       verified: all %llu pages (the whole file was read)\n",
               (unsigned long long)how.pages);
    else
        printf("checksums       verified (the whole file was read)\n");
}

/* What info says of a bitmap file. */
typedef struct bitmap_facts {
    bool one_bit;        /* else 2 bits a value: never, once, more */
    uint64_t n, bytes;   /* values, serialized bytes */
    uint64_t pages;      /* a paged file's pages; 0 for one read whole */
    bool counted;        /* counts[] filled: read whole, or --verify */
    uint64_t counts[3];  /* values never seen (unset), once (set), more */
} bitmap_facts_t;

/* Loads the bitmap file at path into *x: a file read whole is verified
 * whole and counted; a paged one is described from its header, and
 * counted (every page read and checked) only with verify. The load's or
 * the verification's status, *why saying why. */
static bk_status_t read_bitmap(const char *path, bool verify, bitmap_facts_t *x,
                               const char **why)
{
    bk_status_t st;
    if (x->one_bit) {
        bk_bitmap_t *b = NULL;
        st = bk_bitmap_load(&b, path, why);
        if (st == BK_OK) {
            x->n = bk_bitmap_size(b);
            x->bytes = bk_bitmap_serialized_size(b);
            bk_bitmap_pages(b, NULL, &x->pages);
            if (x->pages && verify)
                st = bk_bitmap_verify(b, why);
            if (st == BK_OK && (x->counted = !x->pages || verify)) {
                x->counts[1] = bk_bitmap_count(b);
                x->counts[0] = x->n - x->counts[1];
            }
        }
        bk_bitmap_free(b);
        return st;
    }
    bk_bitmap2_t *b = NULL;
    st = bk_bitmap2_load(&b, path, why);
    if (st == BK_OK) {
        x->n = bk_bitmap2_size(b);
        x->bytes = bk_bitmap2_serialized_size(b);
        bk_bitmap2_pages(b, NULL, &x->pages);
        if (x->pages && verify)
            st = bk_bitmap2_verify(b, why);
        if (st == BK_OK && (x->counted = !x->pages || verify))
            bk_bitmap2_counts(b, x->counts);
    }
    bk_bitmap2_free(b);
    return st;
}

static void print_bitmap_json(const char *path, bk_kind_t kind, const bitmap_facts_t *x)
{
    printf("{\"file\":");
    json_string(path);
    printf(",\"kind\":\"%s\",\"values\":%llu,\"bytes\":%llu", bk_kind_name(kind),
           (unsigned long long)x->n, (unsigned long long)x->bytes);
    if (x->pages)
        printf(",\"pages\":%llu,\"counted\":%s", (unsigned long long)x->pages,
               x->counted ? "true" : "false");
    if (x->counted && x->one_bit)
        printf(",\"set\":%llu", (unsigned long long)x->counts[1]);
    else if (x->counted)
        printf(",\"once\":%llu,\"more\":%llu", (unsigned long long)x->counts[1],
               (unsigned long long)x->counts[2]);
    printf("}\n");
}

static void print_bitmap_text(const char *path, bk_kind_t kind, const bitmap_facts_t *x)
{
    char hb[32];
    printf("file            %s\n", path);
    printf("kind            %s (%s)\n", bk_kind_name(kind), bk_kind_text(kind)->about);
    printf("values          0 .. %llu (%llu)\n", (unsigned long long)(x->n ? x->n - 1 : 0),
           (unsigned long long)x->n);
    printf("bytes           %llu (%s)\n", (unsigned long long)x->bytes,
           bkc_human_bytes((double)x->bytes, hb, sizeof hb));
    if (!x->counted) {
        printf("%-16snot counted: --verify reads the whole file and counts them\n",
               x->one_bit ? "set" : "seen");
        printf("checksums       one per 4 KiB page (%llu); a page is checked when first "
               "read (--verify checks them all)\n",
               (unsigned long long)x->pages);
        return;
    }
    if (x->one_bit) {
        printf("set             %llu\n", (unsigned long long)x->counts[1]);
    } else {
        printf("seen once       %llu\n", (unsigned long long)x->counts[1]);
        printf("seen more       %llu\n", (unsigned long long)x->counts[2]);
    }
    if (x->pages)
        printf("checksums       verified: all %llu pages (the whole file was read)\n",
               (unsigned long long)x->pages);
    else
        printf("checksums       verified (the whole file was read)\n");
}

/* A bitmap file (1-bit or 2-bit): its range and counts (read_bitmap).
 * 0, or 2 after a message. */
static int info_bitmap(const char *path, bk_kind_t kind, bool json, bool verify)
{
    bitmap_facts_t x = {.one_bit = bk_kind_text(kind)->value_bits == 1};
    const char *why = NULL;
    bk_status_t st = read_bitmap(path, verify, &x, &why);
    if (st != BK_OK) {
        /* pages known: it loaded, and --verify found a damaged page */
        bkc_error("%s: %s: %s%s%s", path, x.pages ? "damaged" : "cannot load bitmap",
                  bk_strerror(st), why ? ": " : "", why ? why : "");
        return BKC_EXIT_ERROR;
    }
    if (json)
        print_bitmap_json(path, kind, &x);
    else
        print_bitmap_text(path, kind, &x);
    return 0;
}

/* The kind a file holds, from its first bytes; false if it cannot tell
 * (the filter loader then says why). */
static bool file_kind(const char *path, bk_kind_t *kind)
{
    unsigned char head[4096];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return false;
    size_t got = fread(head, 1, sizeof head, fp);
    fclose(fp);
    return bk_peek_kind(head, got, kind) == BK_OK;
}

int bkc_cmd_info(int argc, char **argv)
{
    enum { OPT_VERIFY = 256 };
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"verify", no_argument, 0, OPT_VERIFY},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool json = false, verify = false;
    int c, rc;
    opterr = 0; /* bkc_bad_option() says it once, in our words */
    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case OPT_VERIFY:
            verify = true;
            break;
        default:
            if ((rc = bkc_shared_option(c, argv, usage, NULL, NULL)) >= 0)
                return rc;
        }
    }
    if (optind + 1 != argc)
        return bkc_usage_error(optind >= argc ? "FILE is required" : "one FILE only");
    const char *path = argv[optind];
    if (bkc_is_remote(path)) {
        if (verify)
            return bkc_usage_error("--verify is for files");
        bkc_remote_opts_t ro = {.url = path};
        return bkc_remote_info(&ro, json);
    }
    bk_kind_t file_holds;
    if (file_kind(path, &file_holds) && bk_kind_text(file_holds)->value_bits) { /* a bitmap */
        rc = info_bitmap(path, file_holds, json, verify);
        return rc == 0 && bkc_stdout_finish() != 0 ? BKC_EXIT_ERROR : rc;
    }
    bk_filter_t *f = bkc_load_filter(path);
    if (!f)
        return BKC_EXIT_ERROR;
    info_how_t how = {true, 0};
    bk_filter_pages(f, NULL, &how.pages);
    const char *why = NULL;
    bk_status_t vst = verify ? bk_filter_verify(f, &why) : BK_OK;
    if (vst != BK_OK) {
        bkc_error("%s: damaged: %s%s%s", path, bk_strerror(vst), why ? ": " : "", why ? why : "");
        bk_filter_free(f);
        return BKC_EXIT_ERROR;
    }
    bk_filter_info_t in;
    how.counted = bk_filter_info_fast(f, &in);
    const char *kind = bk_kind_name(in.kind);
    const char *hash = bk_hash_name(in.hash);
    kind = kind ? kind : "?";
    hash = hash ? hash : "?";
    if (json)
        print_json(path, &in, kind, hash, bk_filter_key_form(f), how);
    else
        print_text(path, &in, kind, hash, bk_filter_key_form(f), how);
    bk_filter_free(f);
    if (bkc_stdout_finish() != 0)
        return BKC_EXIT_ERROR;
    return 0;
}
