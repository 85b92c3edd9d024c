/*
 * Key normalization (bk_key_normalize): the canonical spellings of URLs and
 * e-mail addresses that a filter records as its key form, so that every
 * front end (the tool's --normalize, the Python package) spells a key the
 * same way before it is hashed. The rules, with examples, are in
 * bloomkit.h and bloomkit(1).
 *
 * Works in one pass into the caller's buffer: every rule keeps the output
 * at most one byte longer than the input (only an empty path growing to
 * "/" adds a byte), so no step needs to grow it. Dot-segment removal (RFC
 * 3986 section 5.2.4) then runs in place over the path just written, since
 * its output never overtakes its input.
 */
#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static int is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static int is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

/* RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
static int is_unreserved(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

enum { FOLD = 1, KEEP_ESCAPED = 2 };

/* Copies s[0..n) to out with percent-escapes normalized; with FOLD also
 * lowercases ASCII letters (scheme and host); with KEEP_ESCAPED only
 * uppercases escapes, decoding none. Returns bytes written. The bytes
 * between escapes in a path or query are copied a span at a time (memchr
 * finds the next '%'): they are mostly such spans, and the byte loop was a
 * quarter of `dedup --normalize url`'s time. A host is short and is
 * lowercased byte by byte anyway. */
static size_t copy_escaped(char *out, const char *s, size_t n, int flags)
{
    int fold = flags & FOLD;
    static const char hex[] = "0123456789ABCDEF";
    size_t w = 0;
    size_t bare_end = 0; /* 1 + where the last '%' that starts no escape went */
    size_t i = 0;
    while (i < n) {
        if (fold) {
            while (i < n && s[i] != '%')
                out[w++] = (char)lower((unsigned char)s[i++]);
            if (i == n)
                break;
        } else {
            const char *pct = memchr(s + i, '%', n - i);
            size_t span = (pct ? (size_t)(pct - s) : n) - i;
            if (span)
                memcpy(out + w, s + i, span);
            w += span;
            i += span;
            if (!pct)
                break;
        }
        /* s[i] is '%' */
        if (n - i >= 3) {
            int hi = bki_hexval((unsigned char)s[i + 1]);
            int lo = bki_hexval((unsigned char)s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                unsigned char v = (unsigned char)(hi << 4 | lo);
                /* Decoding a hex digit right after a stray '%' would make
                 * a new escape ("%%41a" -> "%Aa"), and normalizing twice
                 * would then differ: keep such a digit escaped. */
                int joins_stray = bare_end && w - bare_end < 2 && bki_hexval(v) >= 0;
                if (is_unreserved(v) && !joins_stray && !(flags & KEEP_ESCAPED)) {
                    out[w++] = (char)(fold ? lower(v) : v);
                } else {
                    out[w++] = '%';
                    out[w++] = hex[v >> 4];
                    out[w++] = hex[v & 15];
                }
                i += 3;
                continue;
            }
        }
        bare_end = w + 1;
        out[w++] = '%';
        i++;
    }
    return w;
}

/* Whether p[0..n) (p[0] == '/') has a segment "." or "..", the only ones
 * remove_dot_segments changes: with the path starting at '/', its read
 * index only ever stands on a '/' or the end, so rules A and D never
 * apply and E copies everything else as it is. Most paths have none; a
 * memchr for '.' and a look around each settles it. */
static bool has_dot_segment(const char *p, size_t n)
{
    const char *end = p + n, *at = p;
    while ((at = memchr(at, '.', (size_t)(end - at))) != NULL) {
        if (at > p && at[-1] == '/') {
            const char *next = at + 1;
            if (next < end && *next == '.')
                next++;
            if (next == end || *next == '/')
                return true;
        }
        at++;
    }
    return false;
}

/* RFC 3986 5.2.4 remove_dot_segments, in place over p[0..n) (n > 0 and
 * p[0] == '/'). Returns the new length. The write index w never passes the
 * read index i, so one buffer serves as input and output. */
static size_t remove_dot_segments(char *p, size_t n)
{
    if (!has_dot_segment(p, n))
        return n;
    size_t i = 0, w = 0;
    while (i < n) {
        size_t rest = n - i;
        const char *s = p + i;
        if (rest >= 3 && s[0] == '.' && s[1] == '.' && s[2] == '/') {
            i += 3; /* A: "../" */
        } else if (rest >= 2 && s[0] == '.' && s[1] == '/') {
            i += 2; /* A: "./" */
        } else if (rest >= 3 && s[0] == '/' && s[1] == '.' && s[2] == '/') {
            i += 2; /* B: "/./" -> "/" */
        } else if (rest == 2 && s[0] == '/' && s[1] == '.') {
            p[w++] = '/'; /* B: "/." at the end -> "/" */
            i = n;
        } else if ((rest >= 4 && s[0] == '/' && s[1] == '.' && s[2] == '.' && s[3] == '/') ||
                   (rest == 3 && s[0] == '/' && s[1] == '.' && s[2] == '.')) {
            /* C: "/../" or a final "/..": drop the last output segment */
            while (w > 0 && p[w - 1] != '/')
                w--;
            if (w > 0)
                w--;
            if (rest == 3) {
                p[w++] = '/';
                i = n;
            } else {
                i += 3;
            }
        } else if ((rest == 1 && s[0] == '.') || (rest == 2 && s[0] == '.' && s[1] == '.')) {
            i = n; /* D */
        } else {
            /* E: move "/segment" (or a leading "segment") to the output */
            size_t j = i + (s[0] == '/' ? 1 : 0);
            while (j < n && p[j] != '/')
                j++;
            memmove(p + w, p + i, j - i);
            w += j - i;
            i = j;
        }
    }
    return w;
}

static unsigned default_port(const char *scheme, size_t n)
{
    static const struct {
        const char *name;
        unsigned port;
    } ports[] = {{"http", 80}, {"https", 443}, {"ws", 80}, {"wss", 443}, {"ftp", 21}};
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++)
        if (strlen(ports[i].name) == n && memcmp(ports[i].name, scheme, n) == 0)
            return ports[i].port;
    return 0;
}

/* Length of the scheme at the start of s[0..n) (without its ':'), or 0:
 * scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
static size_t scheme_length(const char *s, size_t n)
{
    if (n == 0 || !is_alpha((unsigned char)s[0]))
        return 0;
    size_t j = 1;
    while (j < n && (is_alpha((unsigned char)s[j]) || is_digit((unsigned char)s[j]) ||
                     s[j] == '+' || s[j] == '-' || s[j] == '.'))
        j++;
    return j < n && s[j] == ':' ? j : 0;
}

/* Writes ":port" unless the port is empty or the scheme's default. */
static size_t copy_port(char *out, const char *port, size_t plen, const char *scheme,
                        size_t scheme_len)
{
    if (plen == 0)
        return 0;
    unsigned def = scheme_len ? default_port(scheme, scheme_len) : 0;
    if (def) {
        unsigned long v = 0;
        size_t j = 0;
        while (j < plen && is_digit((unsigned char)port[j]) && v <= 65535)
            v = v * 10 + (unsigned long)(port[j++] - '0');
        if (j == plen && v == def)
            return 0;
    }
    out[0] = ':';
    return 1 + copy_escaped(out + 1, port, plen, 0);
}

/* Writes "//" and the authority s[i..a_end) (userinfo as is, host folded,
 * port normalized). Returns the bytes written. */
static size_t copy_authority(char *out, const char *s, size_t i, size_t a_end,
                             const char *scheme, size_t scheme_len)
{
    size_t w = 0;
    out[w++] = '/';
    out[w++] = '/';
    /* userinfo: up to the last '@' (most URLs have none) */
    size_t h = i;
    for (const char *at = s + i; (at = memchr(at, '@', (size_t)(s + a_end - at))) != NULL; at++)
        h = (size_t)(at - s) + 1;
    if (h > i)
        w += copy_escaped(out + w, s + i, h - i, 0);
    /* host: a bracketed IPv6 literal or up to ':' */
    size_t h_end = h;
    if (h_end < a_end && s[h_end] == '[') {
        while (h_end < a_end && s[h_end] != ']')
            h_end++;
        if (h_end < a_end)
            h_end++;
    }
    while (h_end < a_end && s[h_end] != ':')
        h_end++;
    w += copy_escaped(out + w, s + h, h_end - h, FOLD);
    if (h_end < a_end)
        w += copy_port(out + w, s + h_end + 1, a_end - h_end - 1, scheme, scheme_len);
    return w;
}

/* Writes the path s[i..p_end) with dot segments removed, at out + w (the
 * URL written so far); returns the new w. */
static size_t copy_path(char *out, size_t w, const char *s, size_t i, size_t p_end,
                        bool relative, bool has_authority)
{
    size_t path_at = w;
    if (relative) {
        /* "%41:x" must not decode into "A:x", which would then read as a
         * scheme: a first segment holding ':' keeps its escapes. */
        size_t seg = i;
        while (seg < p_end && s[seg] != '/')
            seg++;
        if (memchr(s + i, ':', seg - i)) {
            w += copy_escaped(out + w, s + i, seg - i, KEEP_ESCAPED);
            i = seg;
        }
    }
    w += copy_escaped(out + w, s + i, p_end - i, 0);
    if (w > path_at && out[path_at] == '/') {
        w = path_at + remove_dot_segments(out + path_at, w - path_at);
        /* Without an authority a path must not start with "//" or it would
         * read as one next time (RFC 3986 5.3): "/..//x" -> "/.//x". Only a
         * removed ".." can produce it, so the 2 bytes fit. */
        if (!has_authority && w - path_at >= 2 && out[path_at + 1] == '/') {
            memmove(out + path_at + 2, out + path_at, w - path_at);
            out[path_at + 1] = '.';
            w += 2;
        }
    } else if (w == path_at && has_authority)
        out[w++] = '/';
    return w;
}

static size_t normalize_url(char *out, const char *s, size_t n)
{
    size_t w = 0, i = 0;
    const char *hash = memchr(s, '#', n);
    if (hash)
        n = (size_t)(hash - s);
    while (n > 0 && is_blank((unsigned char)s[n - 1]))
        n--; /* blanks before the fragment */

    size_t scheme_len = scheme_length(s, n);
    const char *scheme = out;
    if (scheme_len) {
        for (size_t j = 0; j < scheme_len; j++)
            out[w++] = (char)lower((unsigned char)s[j]);
        out[w++] = ':';
        i = scheme_len + 1;
    }
    bool has_authority = n - i >= 2 && s[i] == '/' && s[i + 1] == '/';
    if (has_authority) {
        i += 2;
        size_t a_end = i;
        while (a_end < n && s[a_end] != '/' && s[a_end] != '?')
            a_end++;
        w += copy_authority(out + w, s, i, a_end, scheme, scheme_len);
        i = a_end;
    }
    const char *query = memchr(s + i, '?', n - i);
    size_t p_end = query ? (size_t)(query - s) : n;
    w = copy_path(out, w, s, i, p_end, !scheme_len && !has_authority, has_authority);
    if (p_end < n)
        w += copy_escaped(out + w, s + p_end, n - p_end, 0); /* '?' and query */
    return w;
}

bk_status_t bk_key_normalize(bk_key_form_t form, const void *key, size_t len, void *out,
                             size_t cap, size_t *out_len)
{
    if ((!key && len) || !out || !out_len || len > SIZE_MAX - 1 || cap < len + 1 ||
        (unsigned)form > BK_KEY_FORM_EMAIL)
        return BK_EINVAL;
    const char *in = key;
    char *o = out;
    size_t w = 0;
    if (form != BK_KEY_FORM_URL && form != BK_KEY_FORM_EMAIL) {
        if (len)
            memcpy(o, in, len);
        w = len;
    } else {
        size_t a = 0, b = len;
        while (a < b && is_blank((unsigned char)in[a]))
            a++;
        while (b > a && is_blank((unsigned char)in[b - 1]))
            b--;
        if (form == BK_KEY_FORM_EMAIL) {
            for (size_t i = a; i < b; i++)
                o[w++] = (char)lower((unsigned char)in[i]);
        } else {
            w = normalize_url(o, in + a, b - a);
        }
    }
    *out_len = w;
    return BK_OK;
}
