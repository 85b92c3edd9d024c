/*
 * Tests for the tool's line reader (cli/input/input.c): every input is also split
 * by a naive in-memory model, and the reader must return exactly the same
 * lines, line numbers and offsets, through files, standard input from a
 * file, and a pipe, with buffers small enough to force every refill and
 * growth path.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "input.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

static char *write_temp(const char *name, const void *data, size_t len)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    if (len)
        fwrite(data, 1, len, f);
    fclose(f);
    return path;
}

/* Model: the lines of data[0..len) per the rules in input.h. */
typedef struct {
    size_t off, len, consumed;
} mline_t;

static size_t model_split(const char *d, size_t len, mline_t *out, size_t max)
{
    size_t n = 0, i = 0;
    while (i < len && n < max) {
        size_t j = i;
        while (j < len && d[j] != '\n')
            j++;
        size_t l = j - i;
        size_t consumed = l;
        if (j < len) {
            consumed++;
            if (l > 0 && d[j - 1] == '\r')
                l--;
        }
        out[n].off = i;
        out[n].len = l;
        out[n].consumed = consumed;
        n++;
        i += consumed;
    }
    return n;
}

/* Reads everything from r and compares with the model. */
static void compare_with_model(bkc_reader_t *r, const char *d, size_t len)
{
    static mline_t ml[200000];
    size_t n = model_split(d, len, ml, sizeof ml / sizeof ml[0]);
    uint64_t off = 0;
    size_t k = 0;
    const char *line;
    size_t ll;
    int rc;
    while ((rc = bkc_reader_next(r, &line, &ll)) == 1) {
        if (k >= n) {
            CHECK_MSG(0, "reader returned more lines than the model (%zu)", n);
            return;
        }
        CHECK_EQ_U64(ll, ml[k].len);
        CHECK_MSG(ll == ml[k].len && memcmp(line, d + ml[k].off, ll) == 0,
                  "line %zu differs", k + 1);
        off += ml[k].consumed;
        CHECK_EQ_U64(bkc_reader_lineno(r), k + 1);
        CHECK_EQ_U64(bkc_reader_offset(r), off);
        k++;
        if (bkt_failures_in_test > 5)
            return;
    }
    CHECK_MSG(rc == 0, "end: rc %d (%s)", rc, bkc_reader_error(r));
    CHECK_EQ_U64(k, n);
    CHECK_EQ_U64(bkc_reader_offset(r), len);
    CHECK(bkc_reader_next(r, &line, &ll) == 0); /* end stays end */
}

/* Random bytes biased towards line ends, CR, NUL and high bytes, with
 * occasional long lines. */
static size_t random_input(uint64_t *st, char *d, size_t max)
{
    size_t len = 0;
    while (len < max) {
        uint64_t x = bkt_rand(st);
        size_t linelen = (x & 0xff) == 0 ? (size_t)(bkt_rand(st) % 5000) : (size_t)(x >> 8) % 40;
        for (size_t i = 0; i < linelen && len < max; i++) {
            uint64_t y = bkt_rand(st) % 16;
            d[len++] = y == 0 ? '\r' : y == 1 ? '\0' : y == 2 ? (char)0xff
                                                          : (char)('a' + (y % 26));
        }
        if (len < max) {
            uint64_t e = bkt_rand(st) % 4;
            if (e == 0 && len + 1 < max) {
                d[len++] = '\r';
                d[len++] = '\n';
            } else {
                d[len++] = '\n';
            }
        }
    }
    return len;
}

static void test_random_files(void)
{
    uint64_t st = 42;
    size_t max = (size_t)bkt_scaled(400000);
    char *d = malloc(max + 1);
    static const size_t bufs[] = {1, 7, 64, 4096, 0};
    for (int round = 0; round < 6; round++) {
        size_t len = random_input(&st, d, (size_t)(bkt_rand(&st) % max));
        /* sometimes cut the last newline off */
        if (round % 2 && len > 0 && d[len - 1] == '\n')
            len--;
        char *p = write_temp("rand", d, len);
        for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) {
            bkc_reader_set_limits(0, bufs[b]);
            char err[256];
            bkc_reader_t *r = bkc_reader_open(p, err, sizeof err);
            CHECK_MSG(r != NULL, "open: %s", err);
            if (!r)
                continue;
            CHECK(bkc_reader_size(r) == (int64_t)len);
            CHECK(strcmp(bkc_reader_name(r), p) == 0);
            compare_with_model(r, d, len);
            bkc_reader_close(r);
        }
    }
    bkc_reader_set_limits(0, 0);
    free(d);
}

/* Reads the lines of d[0..len) as the ranges between sorted cut points
 * (0 and len included): together they must give the model's lines, each
 * once, in order, with their file offsets. */
static void compare_ranges(const char *path, const char *d, size_t len, const uint64_t *cut,
                           size_t ncut)
{
    static mline_t ml[200000];
    size_t n = model_split(d, len, ml, sizeof ml / sizeof ml[0]);
    size_t k = 0;
    for (size_t c = 0; c + 1 < ncut; c++) {
        char err[256];
        bkc_reader_t *r = bkc_reader_open_range(path, cut[c], cut[c + 1], err, sizeof err);
        CHECK_MSG(r != NULL, "open range [%llu, %llu): %s", (unsigned long long)cut[c],
                  (unsigned long long)cut[c + 1], err);
        if (!r)
            return;
        const char *line;
        size_t ll;
        int rc;
        uint64_t lines = 0;
        while ((rc = bkc_reader_next(r, &line, &ll)) == 1) {
            lines++;
            if (k >= n) {
                CHECK_MSG(0, "ranges gave more lines than the model (%zu)", n);
                break;
            }
            /* The line starts in this range. */
            CHECK_MSG(ml[k].off >= cut[c] && ml[k].off < cut[c + 1],
                      "line at %zu read by range [%llu, %llu)", ml[k].off,
                      (unsigned long long)cut[c], (unsigned long long)cut[c + 1]);
            CHECK_MSG(ll == ml[k].len && memcmp(line, d + ml[k].off, ll) == 0,
                      "line %zu differs", k + 1);
            CHECK_EQ_U64(bkc_reader_line_offset(r), ml[k].off);
            /* Line numbers only where the range starts the file. */
            CHECK_EQ_U64(bkc_reader_lineno(r), cut[c] == 0 ? lines : 0);
            k++;
            if (bkt_failures_in_test > 5) {
                bkc_reader_close(r);
                return;
            }
        }
        CHECK_MSG(rc == 0, "range end: rc %d (%s)", rc, bkc_reader_error(r));
        CHECK(bkc_reader_next(r, &line, &ll) == 0);
        bkc_reader_close(r);
    }
    CHECK_EQ_U64(k, n);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_ranges(void)
{
    uint64_t st = 7;
    size_t max = (size_t)bkt_scaled(200000);
    char *d = malloc(max + 1);
    for (int round = 0; round < 8; round++) {
        size_t len = random_input(&st, d, (size_t)(bkt_rand(&st) % max) + 1);
        if (round % 2 && len > 0 && d[len - 1] == '\n')
            len--;
        char *p = write_temp("ranges", d, len);
        bkc_reader_set_limits(0, round % 3 == 0 ? 64 : 0);
        /* Cuts at random bytes, and at the bytes around line ends (a cut
         * right at a line start, on its "\n", inside a "\r\n"). */
        uint64_t cut[40];
        size_t ncut = 0;
        cut[ncut++] = 0;
        cut[ncut++] = len;
        while (ncut < 2 + (size_t)(round + 1) * 3) {
            uint64_t at = len ? bkt_rand(&st) % (len + 1) : 0;
            if (bkt_rand(&st) % 2) {
                const char *nl = len ? memchr(d + at, '\n', len - at) : NULL;
                if (nl)
                    at = (uint64_t)(nl - d) + bkt_rand(&st) % 3 - (nl > d);
            }
            cut[ncut++] = at > len ? len : at;
        }
        qsort(cut, ncut, sizeof cut[0], cmp_u64);
        compare_ranges(p, d, len, cut, ncut);
        /* Two ranges and one: the plain split and the whole file. */
        uint64_t halves[3] = {0, len / 2, len}, whole[2] = {0, len};
        compare_ranges(p, d, len, halves, 3);
        compare_ranges(p, d, len, whole, 2);
    }
    bkc_reader_set_limits(0, 0);

    /* Errors: not a regular file; a too-long line in a range that starts
     * inside the file is named by its byte offset. */
    char err[256];
    CHECK(bkc_reader_open_range("-", 0, 10, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "not a regular file") != NULL, "got '%s'", err);
    memset(d, 'x', 300);
    memcpy(d, "ab\ncd\n", 6);
    d[300] = '\n';
    char *p = write_temp("long", d, 301);
    bkc_reader_set_limits(100, 16);
    bkc_reader_t *r = bkc_reader_open_range(p, 4, 301, err, sizeof err);
    CHECK_MSG(r != NULL, "%s", err);
    if (r) {
        const char *line;
        size_t ll;
        CHECK(bkc_reader_next(r, &line, &ll) == -1);
        CHECK_MSG(strstr(bkc_reader_error(r), "the line at byte 6: longer than 100") != NULL,
                  "got '%s'", bkc_reader_error(r));
        bkc_reader_close(r);
    }
    bkc_reader_set_limits(0, 0);
    free(d);
}

static void test_edge_cases(void)
{
    static const struct {
        const char *data;
        size_t len;
        int nlines;
        const char *lines[5];
        size_t lens[5];
    } cases[] = {
        {"", 0, 0, {0}, {0}},
        {"\n", 1, 1, {""}, {0}},
        {"\r\n", 2, 1, {""}, {0}},
        {"a", 1, 1, {"a"}, {1}},
        {"a\r\n\r\nb\r", 7, 3, {"a", "", "b\r"}, {1, 0, 2}},
        {"\n\n\n", 3, 3, {"", "", ""}, {0, 0, 0}},
        {"x\0y\nz", 5, 2, {"x\0y", "z"}, {3, 1}},
        {"a\rb\n", 4, 1, {"a\rb"}, {3}},
        {"\xff\xfe\xc3\n\xe2\x82", 6, 2, {"\xff\xfe\xc3", "\xe2\x82"}, {3, 2}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t buf = 1; buf <= 8; buf *= 2) {
            bkc_reader_set_limits(0, buf);
            char err[256];
            char *p = write_temp("edge", cases[c].data, cases[c].len);
            bkc_reader_t *r = bkc_reader_open(p, err, sizeof err);
            CHECK_MSG(r != NULL, "open: %s", err);
            if (!r)
                continue;
            const char *line;
            size_t len;
            int i = 0, rc;
            while ((rc = bkc_reader_next(r, &line, &len)) == 1) {
                CHECK_MSG(i < cases[c].nlines, "case %zu: extra line", c);
                if (i >= cases[c].nlines)
                    break;
                CHECK_MSG(len == cases[c].lens[i] && memcmp(line, cases[c].lines[i], len) == 0,
                          "case %zu line %d: got %zu bytes", c, i + 1, len);
                i++;
            }
            CHECK_MSG(rc == 0 && i == cases[c].nlines, "case %zu: rc %d after %d lines", c, rc,
                      i);
            bkc_reader_close(r);
        }
    }
    bkc_reader_set_limits(0, 0);
}

static void test_megabyte_lines(void)
{
    size_t big = (size_t)bkt_scaled(3 << 20);
    char *d = malloc(2 * big + 10);
    for (size_t i = 0; i < big; i++)
        d[i] = (char)('a' + i % 26);
    d[big] = '\n';
    memcpy(d + big + 1, "short\n", 6);
    for (size_t i = 0; i < big; i++)
        d[big + 7 + i] = (char)('A' + i % 26);
    size_t len = 2 * big + 7; /* the second big line has no newline */
    char *p = write_temp("big", d, len);
    char err[256];
    bkc_reader_t *r = bkc_reader_open(p, err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        compare_with_model(r, d, len);
        bkc_reader_close(r);
    }
    free(d);
}

static void test_line_limit(void)
{
    char d[400];
    memset(d, 'x', sizeof d);
    /* line 1: exactly 100 bytes + CRLF; line 2: 101 bytes */
    d[100] = '\r';
    d[101] = '\n';
    d[203] = '\n';
    for (size_t buf = 8; buf <= 1024; buf *= 4) {
        bkc_reader_set_limits(100, buf);
        char err[256];
        char *p = write_temp("limit", d, 204);
        bkc_reader_t *r = bkc_reader_open(p, err, sizeof err);
        CHECK(r != NULL);
        if (!r)
            continue;
        const char *line;
        size_t len;
        CHECK(bkc_reader_next(r, &line, &len) == 1 && len == 100);
        CHECK(bkc_reader_next(r, &line, &len) == -1);
        const char *e = bkc_reader_error(r);
        CHECK_MSG(strstr(e, p) == e && strstr(e, "line 2") != NULL, "error: %s", e);
        CHECK(bkc_reader_next(r, &line, &len) == -1);
        bkc_reader_close(r);
    }
    bkc_reader_set_limits(0, 0);
}

static void test_open_errors(void)
{
    char err[256];
    char path[300];
    snprintf(path, sizeof path, "%s/no-such-file", tmpdir);
    CHECK(bkc_reader_open(path, err, sizeof err) == NULL);
    CHECK_MSG(strncmp(err, path, strlen(path)) == 0 && strstr(err, ": No such file") != NULL,
              "err: %s", err);
    CHECK(bkc_reader_open(tmpdir, err, sizeof err) == NULL);
    CHECK_MSG(strncmp(err, tmpdir, strlen(tmpdir)) == 0 && strstr(err, "directory") != NULL,
              "err: %s", err);
    /* a tiny err buffer is still terminated */
    char small[4] = {'z', 'z', 'z', 'z'};
    CHECK(bkc_reader_open(path, small, sizeof small) == NULL);
    CHECK(small[3] == '\0');
    bkc_reader_close(NULL);
}

/* Standard input: redirected from a file (size known), then from a pipe
 * fed in small writes by a child (size unknown). */
static void test_stdin(void)
{
    uint64_t st = 7;
    size_t max = (size_t)bkt_scaled(200000);
    char *d = malloc(max);
    size_t len = random_input(&st, d, max);
    char *p = write_temp("stdin", d, len);
    int saved = dup(0);

    FILE *f = freopen(p, "rb", stdin);
    CHECK(f != NULL);
    char err[256];
    bkc_reader_t *r = bkc_reader_open("-", err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        CHECK(strcmp(bkc_reader_name(r), "(standard input)") == 0);
        CHECK(bkc_reader_size(r) == (int64_t)len);
        compare_with_model(r, d, len);
        bkc_reader_close(r);
    }

    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        for (size_t i = 0; i < len; i += 1000) {
            size_t n = len - i < 1000 ? len - i : 1000;
            if (write(fds[1], d + i, n) != (ssize_t)n)
                _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    dup2(fds[0], 0);
    close(fds[0]);
    bkc_reader_set_limits(0, 300);
    r = bkc_reader_open("-", err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        CHECK(bkc_reader_size(r) == -1);
        compare_with_model(r, d, len);
        bkc_reader_close(r);
    }
    bkc_reader_set_limits(0, 0);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    dup2(saved, 0);
    close(saved);
    free(d);
}

/* A 16 MB line arriving through a pipe a few KB at a time: the peek calls
 * search each byte once (they searched the line from its start on every
 * read: 256 MB through a pipe took a minute, 2 GB never ended). */
static void test_long_line_through_a_pipe(void)
{
    size_t big = (size_t)bkt_scaled(16 << 20);
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        static char chunk[4096];
        memset(chunk, 'q', sizeof chunk);
        for (size_t i = 0; i < big; i += sizeof chunk) {
            size_t n = big - i < sizeof chunk ? big - i : sizeof chunk;
            if (write(fds[1], chunk, n) != (ssize_t)n)
                _exit(1);
        }
        _exit(write(fds[1], "\nshort\n", 7) == 7 ? 0 : 1);
    }
    close(fds[1]);
    int saved = dup(0);
    dup2(fds[0], 0);
    close(fds[0]);
    char err[256];
    bkc_reader_t *r = bkc_reader_open("-", err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        const char *block;
        size_t len, total = 0, lines = 0;
        while (bkc_reader_peek_lines(r, &block, &len) == 1) {
            for (size_t i = 0; i < len; i++)
                lines += block[i] == '\n';
            total += len;
            bkc_reader_consume(r, len, 0);
        }
        CHECK_EQ_U64(total, big + 7);
        CHECK_EQ_U64(lines, 2);
        CHECK_MSG(bkc_reader_searched(r) <= 2 * (uint64_t)(big + 7),
                  "searched %llu bytes for line ends in %zu bytes of input",
                  (unsigned long long)bkc_reader_searched(r), big + 7);
        bkc_reader_close(r);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    dup2(saved, 0);
    close(saved);
}

int main(void)
{
    if (!bkt_tmpdir(tmpdir, sizeof tmpdir, "bkc-input"))
        return 1;
    bkt_run("random files vs model", test_random_files);
    bkt_run("byte ranges vs model", test_ranges);
    bkt_run("edge cases", test_edge_cases);
    bkt_run("megabyte lines", test_megabyte_lines);
    bkt_run("line limit", test_line_limit);
    bkt_run("open errors", test_open_errors);
    bkt_run("a long line through a pipe is searched once", test_long_line_through_a_pipe);
    bkt_run("stdin and pipes", test_stdin);
    bkt_tmpdir_remove(tmpdir);
    return bkt_finish();
}
