/*
 * Tests for the tool's shared option parsing (cli/options.c) and the
 * helpers the subcommands build on (cli/message.c, cli/filterfile.c, cli/input/lines.c): each shared option parsed
 * through getopt_long as a subcommand drives it, every bad value refused
 * with its exact message and status 2, -h printing the usage text, an
 * option the subcommand does not take reported as unknown, the FILE operand
 * (missing, unreadable, mapped), and per-line messages, including one that
 * quotes a line far longer than any fixed buffer. Standard output and
 * standard error are captured into temporary files and compared byte for
 * byte.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "filterfile.h"
#include "lines.h"
#include "message.h"
#include "filter_inputs.h"
#include "options.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- capturing stdout and stderr ---- */

static char cap_out[1 << 16], cap_err[1 << 16];
static int saved_out = -1, saved_err = -1;
static FILE *tmp_out, *tmp_err;

static void capture_begin(void)
{
    fflush(stdout);
    fflush(stderr);
    tmp_out = tmpfile();
    tmp_err = tmpfile();
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(fileno(tmp_out), 1);
    dup2(fileno(tmp_err), 2);
}

static void read_all(FILE *f, char *buf, size_t cap)
{
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void capture_end(void)
{
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    read_all(tmp_out, cap_out, sizeof cap_out);
    read_all(tmp_err, cap_err, sizeof cap_err);
}

/* ---- a subcommand's option loop ---- */

static const char usage[] = "usage: bloomkit test [OPTIONS]\n";

enum { OPT_OWN_FLAG = BKC_OPT_OWN };

/* Options as a subcommand taking all shared ones plus -x and --own. */
static const struct option all_opts[] = {
    {"capacity", required_argument, 0, 'n'},      {"fpr", required_argument, 0, 'p'},
    {"kind", required_argument, 0, 'k'},          {"hash", required_argument, 0, BKC_OPT_HASH},
    {"seed", required_argument, 0, BKC_OPT_SEED}, {"own", no_argument, 0, OPT_OWN_FLAG},
    BKC_INPUT_LONG_OPTIONS,                       {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

typedef struct {
    int status; /* -1 when parsing ran to the end */
    int own;    /* times -x or --own was seen */
    int first_operand;
} parse_result_t;

/* Parses the NULL-terminated words (after the subcommand name) with
 * getopt_long, the subcommand handling -x and --own itself and handing every
 * other code to bkc_shared_option(sz, in), capturing what is printed. */
static parse_result_t parse(bkc_sizing_opts_t *sz, bkc_input_opts_t *in, const char *const *words)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "test";
    for (; *words; words++)
        argv[argc++] = (char *)*words;
    argv[argc] = NULL;
    parse_result_t res = {-1, 0, 0};
    optind = 0; /* glibc: start afresh */
    opterr = 0;
    capture_begin();
    int c;
    while ((c = getopt_long(argc, argv, "n:p:k:qxh", all_opts, NULL)) != -1) {
        if (c == 'x' || c == OPT_OWN_FLAG) {
            res.own++;
            continue;
        }
        int rc = bkc_shared_option(c, argv, usage, sz, in);
        if (rc >= 0) {
            res.status = rc;
            break;
        }
    }
    capture_end();
    res.first_operand = optind;
    return res;
}

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_defaults(void)
{
    bkc_sizing_opts_t sz;
    memset(&sz, 0xa5, sizeof sz);
    bkc_sizing_opts_init(&sz, 10000000, 1e-6);
    CHECK_EQ_U64(sz.n, 10000000);
    CHECK(sz.p == 1e-6);
    CHECK(sz.o.kind == BK_KIND_DEFAULT); /* the library picks blocked or blocked2 by p */
    CHECK(!sz.o.seed_set);
    CHECK_EQ_U64(sz.o.seed, 0);
    CHECK(sz.o.growth == 0 && !sz.o.nonscaling);
    bk_options_t zero;
    memset(&zero, 0, sizeof zero);
    CHECK(sz.o.hash == zero.hash);
    bkc_input_opts_t in;
    memset(&in, 0xa5, sizeof in);
    bkc_input_opts_init(&in);
    CHECK(in.norm == BKC_NORM_NONE);
    CHECK(in.pmode == BKC_PROGRESS_AUTO);
}

static void test_sizing_values(void)
{
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 0, 0);
    bkc_input_opts_t in;
    bkc_input_opts_init(&in);
    parse_result_t r = parse(&sz, &in,
                             WORDS("-n", "10M", "--fpr=0.1%", "-k", "classic", "--hash", "fnv1a",
                                   "--seed", "0x2a", "-x", "--own", "operand"));
    CHECK_MSG(r.status == -1, "status %d, stderr %s", r.status, cap_err);
    CHECK_EQ_U64(sz.n, 10000000);
    CHECK(sz.p > 0.000999999 && sz.p < 0.001000001);
    bk_kind_t classic;
    CHECK_OK(bk_kind_parse("classic", &classic));
    CHECK(sz.o.kind == classic);
    bk_hash_id_t fnv;
    CHECK_OK(bk_hash_parse("fnv1a", &fnv));
    CHECK(sz.o.hash == fnv);
    CHECK(sz.o.seed_set);
    CHECK_EQ_U64(sz.o.seed, 42);
    CHECK(r.own == 2);
    CHECK(r.first_operand == 12);
    CHECK(cap_out[0] == '\0' && cap_err[0] == '\0');

    /* A later value replaces an earlier one; a decimal seed of 0 is set. */
    bkc_sizing_opts_init(&sz, 0, 0);
    r = parse(&sz, NULL, WORDS("-n", "5", "-n", "1e3", "--kind", "counting", "--seed", "0"));
    CHECK(r.status == -1);
    CHECK_EQ_U64(sz.n, 1000);
    bk_kind_t counting;
    CHECK_OK(bk_kind_parse("counting", &counting));
    CHECK(sz.o.kind == counting);
    CHECK(sz.o.seed_set && sz.o.seed == 0);
}

/* Runs words with all shared options accepted and checks a usage error. */
static void expect_usage_error(const char *const *words, const char *message, int line)
{
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 0, 0);
    bkc_input_opts_t in;
    bkc_input_opts_init(&in);
    parse_result_t r = parse(&sz, &in, words);
    char want[512];
    snprintf(want, sizeof want, "bloomkit test: %s (see 'bloomkit test --help')\n", message);
    if (r.status != BKC_EXIT_ERROR || strcmp(cap_err, want) != 0 || cap_out[0])
        bkt_fail(__FILE__, line, "status %d, stderr '%s', want '%s'", r.status, cap_err, want);
}
#define USAGE_ERROR(message, ...) expect_usage_error(WORDS(__VA_ARGS__), message, __LINE__)

static void test_bad_values(void)
{
    bkc_cmd_name = "test";
    USAGE_ERROR("bad capacity '0'", "-n", "0");
    USAGE_ERROR("bad capacity '1.5'", "-n", "1.5");
    USAGE_ERROR("bad capacity '-5'", "--capacity", "-5");
    USAGE_ERROR("bad capacity '12x'", "-n", "12x");
    USAGE_ERROR("bad false-positive rate '0' (want 0 < P < 1)", "-p", "0");
    USAGE_ERROR("bad false-positive rate '100%' (want 0 < P < 1)", "-p", "100%");
    USAGE_ERROR("bad false-positive rate '1.5' (want 0 < P < 1)", "--fpr", "1.5");
    USAGE_ERROR("unknown filter kind 'nosuch'", "-k", "nosuch");
    USAGE_ERROR("unknown filter kind 'bitmap'", "--kind", "bitmap");
    USAGE_ERROR("unknown hash 'md5'", "--hash", "md5");
    USAGE_ERROR("bad seed '-1'", "--seed", "-1");
    USAGE_ERROR("bad seed 'zz'", "--seed", "zz");
    USAGE_ERROR("unknown normalization 'html' (url, email)", "--normalize", "html");
    USAGE_ERROR("unknown option or missing value: '--no-such'", "--no-such");
    USAGE_ERROR("unknown option or missing value: '-Z'", "-Z");
    USAGE_ERROR("unknown option or missing value: '-n'", "-n");
    /* Parsing stops at the first bad option: nothing after it is read. */
    USAGE_ERROR("bad capacity '0'", "-n", "0", "-k", "nosuch");
}

static void test_input_values(void)
{
    bkc_input_opts_t in;
    bkc_input_opts_init(&in);
    parse_result_t r = parse(NULL, &in, WORDS("--normalize", "url", "-q", "a"));
    CHECK(r.status == -1 && cap_err[0] == '\0');
    CHECK(in.norm == BKC_NORM_URL);
    CHECK(in.pmode == BKC_PROGRESS_OFF);
    CHECK(r.first_operand == 4);
    r = parse(NULL, &in, WORDS("--normalize=email", "--progress"));
    CHECK(r.status == -1);
    CHECK(in.norm == BKC_NORM_EMAIL);
    CHECK(in.pmode == BKC_PROGRESS_ON);
    r = parse(NULL, &in, WORDS("--progress", "--quiet"));
    CHECK(in.pmode == BKC_PROGRESS_OFF);
}

/* A subcommand that takes no sizing options (sz NULL) reports them as
 * unknown even when getopt_long returns their code; likewise input ones. */
static void test_options_not_taken(void)
{
    bkc_cmd_name = "test";
    bkc_input_opts_t in;
    bkc_input_opts_init(&in);
    parse_result_t r = parse(NULL, &in, WORDS("-k", "classic"));
    CHECK(r.status == BKC_EXIT_ERROR);
    CHECK_MSG(strstr(cap_err, "unknown option or missing value") != NULL, "stderr %s", cap_err);
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 7, 0.5);
    r = parse(&sz, NULL, WORDS("-q"));
    CHECK(r.status == BKC_EXIT_ERROR);
    CHECK(strcmp(cap_err, "bloomkit test: unknown option or missing value: '-q' (see "
                          "'bloomkit test --help')\n") == 0);
    r = parse(NULL, NULL, WORDS("--seed", "1"));
    CHECK(r.status == BKC_EXIT_ERROR);
    CHECK(strstr(cap_err, "unknown option or missing value: '1'") != NULL);
    CHECK_EQ_U64(sz.n, 7); /* untouched */
}

static void test_help(void)
{
    bkc_sizing_opts_t sz;
    bkc_sizing_opts_init(&sz, 0, 0);
    parse_result_t r = parse(&sz, NULL, WORDS("-n", "10", "--help", "-n", "0"));
    CHECK(r.status == 0);
    CHECK(strcmp(cap_out, usage) == 0);
    CHECK(cap_err[0] == '\0');
    CHECK_EQ_U64(sz.n, 10); /* stopped at --help */
    r = parse(NULL, NULL, WORDS("-h"));
    CHECK(r.status == 0 && strcmp(cap_out, usage) == 0);
}

/* ---- the FILE operand and line messages ---- */

static char tmpdir[256];

static void path_in_tmp(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void make_filter_file(const char *path)
{
    bk_filter_t *f = NULL;
    bk_options_t o;
    memset(&o, 0, sizeof o);
    o.seed_set = true;
    o.seed = 1;
    CHECK_OK(bk_filter_create(&f, 100, 0.01, &o));
    CHECK_OK(bk_filter_add(f, "key", 3, NULL));
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_free(f);
}

static int run_filter_inputs(const char *const *words, bkc_input_opts_t *in, bk_filter_t **f,
                             const char **path)
{
    static char *argv[32];
    int argc = 0;
    argv[argc++] = "test";
    for (; *words; words++)
        argv[argc++] = (char *)*words;
    argv[argc] = NULL;
    optind = 0;
    *f = NULL;
    capture_begin();
    int rc = bkc_filter_inputs_command(argc, argv, usage, in, f, path, NULL);
    capture_end();
    return rc;
}

static void test_filter_inputs_command(void)
{
    bkc_cmd_name = "test";
    char good[300], missing[300], garbage[300];
    path_in_tmp(good, sizeof good, "f.bk");
    path_in_tmp(missing, sizeof missing, "missing.bk");
    path_in_tmp(garbage, sizeof garbage, "garbage.bk");
    make_filter_file(good);
    /* Binary garbage: "cannot load"; text garbage is told apart below. */
    FILE *g = fopen(garbage, "wb");
    if (g) {
        fputs("\x01\x02not a filter\n", g);
        fclose(g);
    }

    bkc_input_opts_t in;
    bk_filter_t *f;
    const char *path = NULL;
    int rc = run_filter_inputs(WORDS("-q", good, "in1", "--normalize", "email", "in2"), &in, &f,
                               &path);
    CHECK_MSG(rc == -1, "rc %d, stderr %s", rc, cap_err);
    CHECK(f != NULL && bk_filter_contains(f, "key", 3));
    CHECK(path && strcmp(path, good) == 0);
    CHECK(in.pmode == BKC_PROGRESS_OFF && in.norm == BKC_NORM_EMAIL);
    /* getopt_long moved the options first: the INPUTs follow FILE. */
    CHECK(optind == 5);
    CHECK(cap_err[0] == '\0' && cap_out[0] == '\0');
    bk_filter_free(f);

    rc = run_filter_inputs(WORDS("-q"), &in, &f, &path);
    CHECK(rc == BKC_EXIT_ERROR && f == NULL);
    CHECK(strcmp(cap_err, "bloomkit test: FILE is required (see 'bloomkit test --help')\n") == 0);

    rc = run_filter_inputs(WORDS(missing, "in"), &in, &f, &path);
    CHECK(rc == BKC_EXIT_ERROR && f == NULL);
    char want[700];
    snprintf(want, sizeof want, "bloomkit test: %s: No such file or directory\n", missing);
    CHECK_MSG(strcmp(cap_err, want) == 0, "stderr %s", cap_err);

    rc = run_filter_inputs(WORDS("--help", missing), &in, &f, &path);
    CHECK(rc == 0 && f == NULL && strcmp(cap_out, usage) == 0 && cap_err[0] == '\0');

    rc = run_filter_inputs(WORDS("--normalize", "x", good), &in, &f, &path);
    CHECK(rc == BKC_EXIT_ERROR && f == NULL);
    CHECK(strstr(cap_err, "unknown normalization 'x'") != NULL);

    /* Loaded and mapped, a file that is not a filter is refused with a
     * message naming it; mapped, the message says "open". */
    for (int map = 0; map <= 1; map++) {
        char *argv[] = {"test", garbage, NULL};
        optind = 1;
        capture_begin();
        f = bkc_filter_operand(2, argv, map, &path);
        capture_end();
        CHECK(f == NULL);
        snprintf(want, sizeof want, "bloomkit test: %s: cannot %s filter: ", garbage,
                 map ? "open" : "load");
        CHECK_MSG(strncmp(cap_err, want, strlen(want)) == 0, "stderr %s", cap_err);
        CHECK(strchr(cap_err, '\n') == cap_err + strlen(cap_err) - 1);
    }
    /* Text where the filter goes: named as an input given first. */
    char text[300];
    path_in_tmp(text, sizeof text, "lines.txt");
    g = fopen(text, "w");
    if (g) {
        fputs("https://a.example/\nhttps://b.example/\n", g);
        fclose(g);
    }
    for (int map = 0; map <= 1; map++) {
        char *argv[] = {"test", text, NULL};
        optind = 1;
        capture_begin();
        f = bkc_filter_operand(2, argv, map, &path);
        capture_end();
        CHECK(f == NULL);
        CHECK_MSG(strstr(cap_err, "lines.txt: not a bloomkit filter file: it holds text, like an "
                                  "input. The filter file comes first") != NULL,
                  "stderr %s", cap_err);
    }
    unlink(text);
    char *argv[] = {"test", good, "in", NULL};
    optind = 1;
    f = bkc_filter_operand(3, argv, true, &path);
    CHECK(f != NULL && bk_filter_contains(f, "key", 3));
    CHECK(optind == 2 && path == argv[1]);
    bk_filter_free(f);
    unlink(good);
    unlink(garbage);
}

static void test_line_error(void)
{
    bkc_cmd_name = "test";
    char input[300];
    path_in_tmp(input, sizeof input, "lines");
    FILE *w = fopen(input, "w");
    CHECK(w != NULL);
    if (!w)
        return;
    fputs("first\nsecond\n", w);
    fclose(w);
    char err[600];
    bkc_reader_t *r = bkc_reader_open(input, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    const char *line;
    size_t len;
    CHECK(bkc_reader_next(r, &line, &len) == 1);
    CHECK(bkc_reader_next(r, &line, &len) == 1);
    /* A message quoting 40000 bytes: no fixed buffer may cut it. */
    size_t big = 40000;
    char *quote = malloc(big + 1);
    CHECK(quote != NULL);
    if (quote) {
        memset(quote, '7', big);
        quote[big] = '\0';
        capture_begin();
        int rc = bkc_line_error(NULL, r, "%s is not below --max %d", quote, 5);
        capture_end();
        CHECK(rc == BKC_EXIT_ERROR);
        char head[400];
        snprintf(head, sizeof head, "bloomkit test: %s: line 2: ", input);
        size_t hl = strlen(head);
        const char *tail = " is not below --max 5\n";
        CHECK(strlen(cap_err) == hl + big + strlen(tail));
        CHECK(strncmp(cap_err, head, hl) == 0);
        CHECK(strspn(cap_err + hl, "7") == big);
        CHECK(strcmp(cap_err + hl + big, tail) == 0);
        free(quote);
    }
    bkc_reader_close(r);
    unlink(input);
}

int main(void)
{
    if (!bkt_tmpdir(tmpdir, sizeof tmpdir, "bk-test-options"))
        return 1;
    bkt_run("defaults", test_defaults);
    bkt_run("sizing values", test_sizing_values);
    bkt_run("bad values", test_bad_values);
    bkt_run("input values", test_input_values);
    bkt_run("options not taken", test_options_not_taken);
    bkt_run("help", test_help);
    bkt_run("filter and inputs command", test_filter_inputs_command);
    bkt_run("line error", test_line_error);
    bkt_tmpdir_remove(tmpdir);
    return bkt_finish();
}
