/*
 * Tests for the tool's "\n" counters (cli/input/newlines.c): the portable
 * and the AVX2 counter against a byte-by-byte count, over every start
 * alignment and every length around their step sizes, on text of every
 * density of "\n" and on bytes one bit away from "\n" (0x0b, 0x08, 0x8a,
 * 0x0a ^ 0x80...), which a wrong byte test would count.
 */
#include "harness.h"
#include "newlines.h"

#include <stdio.h>
#include <string.h>

static uint64_t naive(const char *p, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += p[i] == '\n';
    return c;
}

/* Fills buf with len bytes: "\n" with probability 1/every, else a byte
 * near "\n" or a printable one. */
static void fill(uint64_t *state, char *buf, size_t len, unsigned every)
{
    static const unsigned char near[] = {0x0b, 0x08, 0x0e, 0x8a, 0x2a, 0x4a, 0xff, 0x00, 0x0d};
    for (size_t i = 0; i < len; i++) {
        uint64_t r = bkt_rand(state);
        if (r % every == 0)
            buf[i] = '\n';
        else if ((r >> 20) % 3 == 0)
            buf[i] = (char)near[(r >> 24) % sizeof near];
        else
            buf[i] = (char)(' ' + (r >> 32) % 95);
    }
}

static void check_counter(bkc_newline_counter_t count, const char *name)
{
    static char buf[4096 + 64];
    uint64_t state = 42, wrong = 0, cases = 0;
    static const unsigned every[] = {1, 2, 7, 60, 1000};
    for (size_t d = 0; d < sizeof every / sizeof every[0]; d++) {
        fill(&state, buf, sizeof buf, every[d]);
        for (size_t start = 0; start < 64; start++) {
            for (size_t len = 0; len <= 300; len++) {
                wrong += count(buf + start, len) != naive(buf + start, len);
                cases++;
            }
            wrong += count(buf + start, 4096) != naive(buf + start, 4096);
            cases++;
        }
    }
    CHECK_MSG(wrong == 0, "%s: %llu of %llu counts wrong", name, (unsigned long long)wrong,
              (unsigned long long)cases);
    /* all "\n", and none */
    memset(buf, '\n', sizeof buf);
    CHECK_EQ_U64(count(buf + 3, 4000), 4000);
    memset(buf, '\n' ^ 0x80, sizeof buf);
    CHECK_EQ_U64(count(buf + 3, 4000), 0);
    CHECK_EQ_U64(count(NULL, 0), 0);
}

static void test_generic(void)
{
    check_counter(bkc_count_newlines_generic, "generic");
}

static void test_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!bkc_count_newlines_avx2 || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("popcnt")) {
        printf("  (skipped: this CPU has no AVX2)\n");
        return;
    }
    check_counter(bkc_count_newlines_avx2, "avx2");
#else
    printf("  (skipped: not an x86-64 build)\n");
#endif
}

static void test_chosen(void)
{
    bkc_newline_counter_t c = bkc_newline_counter();
    CHECK(c != NULL);
    if (c)
        check_counter(c, "chosen");
}

int main(void)
{
    bkt_run("generic counter = byte by byte", test_generic);
    bkt_run("avx2 counter = byte by byte", test_avx2);
    bkt_run("the chosen counter = byte by byte", test_chosen);
    return bkt_finish();
}
