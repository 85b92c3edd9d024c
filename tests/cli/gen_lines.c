/*
 * Test-input generator for tests/cli/test_common.sh and bench/common.sh:
 * writes N lines drawn at random from a universe of keys, so files drawn
 * from overlapping universes share a known kind of overlap.
 *
 *   gen_lines SEED N LO HI STYLE
 *
 * Each line is key number v, uniform in [LO, HI); a key's bytes depend only
 * on v, so the same key is the same line in every file. STYLE letters:
 *   t  text: printable ASCII, 0..40 bytes
 *   u  URL-like: "https://hostNNN.example/path/..." (about 64 bytes)
 *   b  binary: any byte but '\n' (NUL, '\r', bytes >= 0x80), 0..40 bytes
 *   c  end about half the lines with "\r\n" instead of "\n"
 *   n  no newline after the last line
 *   U  mix upper and lower case letters (varies per occurrence)
 *   p  line i is key LO + (i * 2654435761 mod (HI - LO)) instead of a random
 *      one: with N = HI - LO not divisible by that prime, each key exactly
 *      once, in scrambled order (known overlaps for benchmarks)
 * Output goes to stdout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state += 1;
    return mix(rng_state);
}

static size_t key_bytes(uint64_t v, const char *style, unsigned char *out)
{
    uint64_t h = mix(v ^ UINT64_C(0x5EED));
    if (strchr(style, 'u')) {
        static const char *paths[] = {"a", "news", "item", "search?q=", "img/p", "user"};
        int n = sprintf((char *)out, "https://host%u.example/%s/%llu/%016llx",
                        (unsigned)(h % 997), paths[(h >> 10) % 6],
                        (unsigned long long)v, (unsigned long long)mix(h));
        return (size_t)n;
    }
    size_t len = (size_t)(h % 41);
    for (size_t i = 0; i < len; i++) {
        uint64_t r = mix(h + i + 1);
        unsigned char ch;
        if (strchr(style, 'b')) {
            ch = (unsigned char)(r & 0xff);
            if (ch == '\n')
                ch = 0;
        } else {
            ch = (unsigned char)(' ' + r % 95);
        }
        out[i] = ch;
    }
    /* The key is v, not just its bytes: append v so distinct keys stay
     * distinct even when short. */
    int n = sprintf((char *)out + len, "%llu", (unsigned long long)v);
    return len + (size_t)n;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: gen_lines SEED N LO HI STYLE\n");
        return 2;
    }
    rng_state = strtoull(argv[1], NULL, 10) * UINT64_C(0x100000001B3);
    uint64_t n = strtoull(argv[2], NULL, 10);
    uint64_t lo = strtoull(argv[3], NULL, 10), hi = strtoull(argv[4], NULL, 10);
    const char *style = argv[5];
    if (hi <= lo)
        return 2;
    static unsigned char buf[256];
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof out);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = strchr(style, 'p') ? lo + (i * UINT64_C(2654435761)) % (hi - lo)
                                        : lo + rnd() % (hi - lo);
        size_t len = key_bytes(v, style, buf);
        if (strchr(style, 'U'))
            for (size_t j = 0; j < len; j++)
                if (buf[j] >= 'a' && buf[j] <= 'z' && (rnd() & 1))
                    buf[j] = (unsigned char)(buf[j] - 'a' + 'A');
        fwrite(buf, 1, len, stdout);
        int last = i + 1 == n;
        if (last && strchr(style, 'n'))
            break;
        if (strchr(style, 'c') && (rnd() & 1))
            fputs("\r\n", stdout);
        else
            putchar('\n');
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
