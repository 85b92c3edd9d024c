/*
 * Tests for key normalization (cli/input/normalize.c): worked examples for each
 * rule, dot-segment removal against a literal transcription of RFC 3986
 * section 5.2.4 on random paths, e-mail against a naive model, idempotence
 * on random URL-like input, and buffer growth from nothing.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "normalize.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void check_norm(bkc_norm_t mode, const char *in, const char *want, int line)
{
    char *buf = NULL;
    size_t cap = 0;
    ptrdiff_t n = bkc_normalize(mode, in, strlen(in), &buf, &cap);
    if (n < 0 || (size_t)n != strlen(want) || memcmp(buf, want, (size_t)n) != 0)
        bkt_fail(__FILE__, line, "normalize(%s) = %.*s, want %s", in, n < 0 ? 0 : (int)n,
                 buf ? buf : "", want);
    free(buf);
}
#define NORM(mode, in, want) check_norm(mode, in, want, __LINE__)

static void test_url_examples(void)
{
    bkc_norm_t u = BKC_NORM_URL;
    NORM(u, "HTTP://Example.com:80/a/../b#x", "http://example.com/b");
    NORM(u, "http://example.com/b", "http://example.com/b");
    NORM(u, "HTTP://Example.COM:80/a/./b/../c?Q=%7e#top", "http://example.com/a/c?Q=~");
    NORM(u, "https://example.com:443", "https://example.com/");
    NORM(u, "https://example.com:80/", "https://example.com:80/");
    NORM(u, "http://example.com:443/", "http://example.com:443/");
    NORM(u, "http://example.com:/x", "http://example.com/x");
    NORM(u, "http://example.com:8080/%7euser/%2f", "http://example.com:8080/~user/%2F");
    NORM(u, "http://example.com", "http://example.com/");
    NORM(u, "http://example.com?q", "http://example.com/?q");
    NORM(u, "http://example.com#frag", "http://example.com/");
    NORM(u, "  http://example.com/a \r", "http://example.com/a");
    NORM(u, "http://User:Pw@EXAMPLE.com/", "http://User:Pw@example.com/");
    NORM(u, "http://[2001:DB8::1]:80/x", "http://[2001:db8::1]/x");
    NORM(u, "http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/x");
    NORM(u, "http://ex%41mple.com/%41%2a%2A", "http://example.com/A%2A%2A");
    NORM(u, "http://example.com/a/%2E%2E/b", "http://example.com/b");
    NORM(u, "http://example.com/Path/File.HTML", "http://example.com/Path/File.HTML");
    NORM(u, "http://example.com/a?x=%2e%ZZ%4", "http://example.com/a?x=.%ZZ%4");
    NORM(u, "http://example.com/../../a", "http://example.com/a");
    NORM(u, "http://example.com/a/b/..", "http://example.com/a/");
    NORM(u, "http://example.com/a/b/.", "http://example.com/a/b/");
    NORM(u, "ftp://Files.example.com:21/pub", "ftp://files.example.com/pub");
    NORM(u, "wss://h:443", "wss://h/");
    NORM(u, "MAILTO:Joe@Example.COM", "mailto:Joe@Example.COM");
    NORM(u, "example.com/A/./b#f", "example.com/A/./b");
    NORM(u, "/a/./b/../c", "/a/c");
    NORM(u, "//Example.com/x", "//example.com/x");
    NORM(u, "", "");
    NORM(u, "http:", "http:");
    NORM(u, "http://", "http:///");
}

static void test_email_and_none(void)
{
    NORM(BKC_NORM_EMAIL, "  Joe.Bloggs@Example.COM\t", "joe.bloggs@example.com");
    NORM(BKC_NORM_EMAIL, "\r\n \v\f", "");
    NORM(BKC_NORM_EMAIL, "A B@C", "a b@c");
    NORM(BKC_NORM_NONE, "  HTTP://X:80/#y ", "  HTTP://X:80/#y ");

    /* e-mail against a naive model on random bytes */
    uint64_t st = 3;
    char in[64], want[64];
    char *buf = NULL;
    size_t cap = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = bkt_rand(&st) % sizeof in;
        for (size_t i = 0; i < len; i++) {
            uint64_t x = bkt_rand(&st);
            in[i] = (x & 3) == 0 ? " \t\r\nAZaz@.\xc3\x80"[(x >> 2) % 13] : (char)(x >> 8);
        }
        size_t a = 0, b = len;
        while (a < b && strchr(" \t\r\n\v\f", in[a]) && in[a])
            a++;
        while (b > a && strchr(" \t\r\n\v\f", in[b - 1]) && in[b - 1])
            b--;
        for (size_t i = a; i < b; i++) {
            unsigned char c = (unsigned char)in[i];
            want[i - a] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        ptrdiff_t n = bkc_normalize(BKC_NORM_EMAIL, in, len, &buf, &cap);
        CHECK(n == (ptrdiff_t)(b - a) && memcmp(buf, want, b - a) == 0);
        n = bkc_normalize(BKC_NORM_NONE, in, len, &buf, &cap);
        CHECK(n == (ptrdiff_t)len && memcmp(buf, in, len) == 0);
        if (bkt_failures_in_test)
            break;
    }
    free(buf);
}

/* RFC 3986 5.2.4, transcribed literally with an input and output string. */
static void ref_remove_dot_segments(const char *path, char *out)
{
    char in[512];
    strcpy(in, path);
    out[0] = '\0';
    while (in[0]) {
        if (strncmp(in, "../", 3) == 0)
            memmove(in, in + 3, strlen(in + 3) + 1);
        else if (strncmp(in, "./", 2) == 0)
            memmove(in, in + 2, strlen(in + 2) + 1);
        else if (strncmp(in, "/./", 3) == 0)
            memmove(in, in + 2, strlen(in + 2) + 1);
        else if (strcmp(in, "/.") == 0)
            strcpy(in, "/");
        else if (strncmp(in, "/../", 4) == 0 || strcmp(in, "/..") == 0) {
            if (strcmp(in, "/..") == 0)
                strcpy(in, "/");
            else
                memmove(in, in + 3, strlen(in + 3) + 1);
            char *last = strrchr(out, '/');
            if (last)
                *last = '\0';
            else
                out[0] = '\0';
        } else if (strcmp(in, ".") == 0 || strcmp(in, "..") == 0)
            in[0] = '\0';
        else {
            size_t seg = in[0] == '/' ? 1 : 0;
            while (in[seg] && in[seg] != '/')
                seg++;
            strncat(out, in, seg);
            memmove(in, in + seg, strlen(in + seg) + 1);
        }
    }
}

static void test_dot_segments_vs_rfc(void)
{
    static const char *parts[] = {"/", ".", "..", "a", "bc", "/", "/", "%2E", "%2e%2E"};
    uint64_t st = 11;
    char path[256], url[300], decoded[256], want[300], ref[256];
    char *buf = NULL;
    size_t cap = 0;
    for (int iter = 0; iter < 50000; iter++) {
        strcpy(path, "/");
        int n = (int)(bkt_rand(&st) % 12);
        for (int i = 0; i < n; i++)
            strcat(path, parts[bkt_rand(&st) % (sizeof parts / sizeof parts[0])]);
        /* the model decodes %2E first, as the normalizer must */
        size_t w = 0;
        for (size_t i = 0; path[i]; i++) {
            if (path[i] == '%') {
                decoded[w++] = '.';
                i += 2;
            } else {
                decoded[w++] = path[i];
            }
        }
        decoded[w] = '\0';
        ref_remove_dot_segments(decoded, ref);
        snprintf(url, sizeof url, "http://h%s", path);
        snprintf(want, sizeof want, "http://h%s", ref[0] ? ref : "/");
        ptrdiff_t got = bkc_normalize(BKC_NORM_URL, url, strlen(url), &buf, &cap);
        CHECK_MSG(got == (ptrdiff_t)strlen(want) && strcmp(buf, want) == 0, "%s -> %s, want %s",
                  url, buf, want);
        if (bkt_failures_in_test > 5)
            break;
    }
    free(buf);
}

/* Normalizing twice changes nothing, and the length bound holds. */
static void test_idempotent(void)
{
    static const char *atoms[] = {"http", "HTTPS", "://", ":", "//", "/", ".", "..", "@",
                                  "?", "#", "%41", "%2f", "%7E", "%", "Ex", "a", "80",
                                  "443", "[", "]", " ", "%zz", "\xc3\xa9"};
    uint64_t st = 5;
    char in[256];
    char *b1 = NULL, *b2 = NULL;
    size_t c1 = 0, c2 = 0;
    for (int iter = 0; iter < 100000; iter++) {
        in[0] = '\0';
        int n = (int)(bkt_rand(&st) % 14);
        for (int i = 0; i < n; i++)
            strcat(in, atoms[bkt_rand(&st) % (sizeof atoms / sizeof atoms[0])]);
        size_t len = strlen(in);
        ptrdiff_t n1 = bkc_normalize(BKC_NORM_URL, in, len, &b1, &c1);
        CHECK(n1 >= 0 && (size_t)n1 <= len + 1);
        if (n1 < 0)
            break;
        ptrdiff_t n2 = bkc_normalize(BKC_NORM_URL, b1, (size_t)n1, &b2, &c2);
        CHECK_MSG(n2 == n1 && memcmp(b1, b2, (size_t)n1) == 0, "'%s' -> '%s' -> '%s'", in, b1,
                  b2);
        if (bkt_failures_in_test > 5)
            break;
    }
    free(b1);
    free(b2);
}

/* The outputs on 200,000 random URL-like inputs (the atoms above and
 * longer runs of plain text, where the normalizer copies spans whole),
 * folded into one FNV-1a digest pinned from the byte-at-a-time
 * normalizer: a faster one must give every byte the same. */
static void test_outputs_pinned(void)
{
    static const char *atoms[] = {"http", "HTTPS", "://", ":", "//", "/", ".", "..", "@",
                                  "?", "#", "%41", "%2f", "%7E", "%", "Ex", "a", "80",
                                  "443", "[", "]", " ", "%zz", "\xc3\xa9", "/dir12/page-3.html",
                                  "WWW.Example.COM", "/a/./b/../c", "?id=77&x=%2E%2e", "%%41a",
                                  "/.", "/..", "./", "../"};
    uint64_t st = 23, digest = UINT64_C(0xcbf29ce484222325);
    char in[512];
    char *buf = NULL;
    size_t cap = 0;
    for (int iter = 0; iter < 200000; iter++) {
        in[0] = '\0';
        int n = (int)(bkt_rand(&st) % 16);
        for (int i = 0; i < n; i++)
            strcat(in, atoms[bkt_rand(&st) % (sizeof atoms / sizeof atoms[0])]);
        ptrdiff_t got = bkc_normalize(BKC_NORM_URL, in, strlen(in), &buf, &cap);
        CHECK(got >= 0);
        if (got < 0)
            break;
        for (ptrdiff_t i = 0; i <= got; i++) { /* the NUL too: it marks the length */
            digest ^= (unsigned char)buf[i];
            digest *= UINT64_C(0x100000001b3);
        }
    }
    free(buf);
    CHECK_EQ_U64(digest, UINT64_C(0x3ad4d5a51530f8a7));
}

static void test_growth_and_parse(void)
{
    char *buf = NULL;
    size_t cap = 0;
    size_t big = 100000;
    char *in = malloc(big);
    memset(in, 'A', big);
    CHECK(bkc_normalize(BKC_NORM_EMAIL, in, big, &buf, &cap) == (ptrdiff_t)big);
    CHECK(cap >= big + 1 && buf[0] == 'a' && buf[big - 1] == 'a' && buf[big] == '\0');
    CHECK(bkc_normalize(BKC_NORM_NONE, "", 0, &buf, &cap) == 0 && buf[0] == '\0');
    free(buf);
    buf = NULL;
    cap = 0;
    CHECK(bkc_normalize(BKC_NORM_URL, "", 0, &buf, &cap) == 0 && buf != NULL);
    free(buf);
    free(in);

    bkc_norm_t m = BKC_NORM_NONE;
    CHECK(bkc_norm_parse("url", &m) == 0 && m == BKC_NORM_URL);
    CHECK(bkc_norm_parse("EMAIL", &m) == 0 && m == BKC_NORM_EMAIL);
    CHECK(bkc_norm_parse("none", &m) == 0 && m == BKC_NORM_NONE);
    m = BKC_NORM_URL;
    CHECK(bkc_norm_parse("uri", &m) == -1 && m == BKC_NORM_URL);
    CHECK(bkc_norm_parse("", &m) == -1);
}

int main(void)
{
    bkt_run("url examples", test_url_examples);
    bkt_run("email and none", test_email_and_none);
    bkt_run("dot segments vs RFC 3986 5.2.4", test_dot_segments_vs_rfc);
    bkt_run("idempotent", test_idempotent);
    bkt_run("outputs pinned", test_outputs_pinned);
    bkt_run("growth and parse", test_growth_and_parse);
    return bkt_finish();
}
