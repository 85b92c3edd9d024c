/*
 * Key normalization for the bloomkit tool (--normalize url|email): makes
 * spellings of the same URL or address one key before it is hashed, so
 * `HTTP://Example.com:80/a/../b#x` and `http://example.com/b` count as one.
 *
 * url (RFC 3986 section 6.2.2, syntax-based): surrounding blanks trimmed;
 *   scheme and host lowercased; an empty port and the scheme's default port
 *   dropped (http/ws 80, https/wss 443, ftp 21); the fragment dropped;
 *   percent-escapes uppercased ("%2f" -> "%2F") and escaped unreserved
 *   characters decoded ("%7E" -> "~", "%41" -> "A"); "." and ".." segments
 *   resolved in a path that starts with "/"; an empty path after a host
 *   becomes "/". The path, query and userinfo keep their case. Input
 *   without a scheme keeps its case and only gets the escape, fragment and
 *   dot-segment rules (and host rules after a leading "//").
 *   Examples:
 *     HTTP://Example.COM:80/a/./b/../c?Q=%7e#top -> http://example.com/a/c?Q=~
 *     https://example.com:443                    -> https://example.com/
 *     http://example.com:8080/%7euser/%2f        -> http://example.com:8080/~user/%2F
 * email: surrounding blanks (space, tab, CR, LF, VT, FF) trimmed and ASCII
 *   letters lowercased.
 * Bytes outside ASCII pass through unchanged in both modes.
 */
#ifndef BKC_NORMALIZE_H
#define BKC_NORMALIZE_H

#include <stddef.h>

typedef enum bkc_norm { BKC_NORM_NONE = 0, BKC_NORM_URL, BKC_NORM_EMAIL } bkc_norm_t;

/* "none", "url" or "email" (case-insensitive): 0 and *out set; -1 if
 * unknown (*out unchanged). */
int bkc_norm_parse(const char *name, bkc_norm_t *out);

/* Normalizes in[0..len) into *buf (malloc'ed, grown with realloc as needed;
 * the caller owns and frees it; *buf may start NULL with *cap 0). Returns
 * the length written, or -1 if out of memory (*buf and *cap then still
 * describe a valid, possibly NULL, buffer). mode NONE copies. The result is
 * never longer than len + 1 and is followed by a NUL byte (not counted). */
ptrdiff_t bkc_normalize(bkc_norm_t mode, const char *in, size_t len, char **buf, size_t *cap);

#endif /* BKC_NORMALIZE_H */
