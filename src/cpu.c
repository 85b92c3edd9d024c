/*
 * The one place that decides which instruction set the probes use.
 *
 * The blocked and counting kinds each have an AVX2 path and a portable
 * scalar path that compute the same bits (tests hold them to each other).
 * Which one runs is decided here, once at load time from the CPU's feature
 * bits, and read by every probe as one global: a branch the CPU predicts
 * perfectly, cheaper than re-testing the CPU and as cheap as an indirect
 * call. Tests lower the level to compare the paths.
 */
#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#define BKI_HAVE_X86 1
#endif

/* Scalar until the load-time check has run, so a call from another
 * constructor is still answered. */
int bki_simd_level = BKI_SIMD_SCALAR;
static int simd_available = BKI_SIMD_SCALAR;

__attribute__((constructor)) static void detect_cpu(void)
{
#ifdef BKI_HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        simd_available = BKI_SIMD_AVX2;
#endif
    bki_simd_level = simd_available;
}

int bki_simd_available(void)
{
    return simd_available;
}

int bki_simd_set(int level)
{
    int was = bki_simd_level;
    if (level > simd_available)
        level = simd_available;
    bki_simd_level = level < BKI_SIMD_SCALAR ? BKI_SIMD_SCALAR : level;
    return was;
}

/* One loop per instruction set; each folds a nibble's bits into its low
 * bit first when counting 4-bit cells. */
#define DEFINE_POPCOUNT_WORDS(name, attr)                                         \
    attr static uint64_t name(const uint64_t *w, uint64_t n, bool nibbles)       \
    {                                                                             \
        uint64_t total = 0;                                                       \
        for (uint64_t i = 0; i < n; i++) {                                        \
            uint64_t x = w[i];                                                    \
            if (nibbles)                                                          \
                x = (x | x >> 1 | x >> 2 | x >> 3) & UINT64_C(0x1111111111111111); \
            total += (uint64_t)__builtin_popcountll(x);                           \
        }                                                                         \
        return total;                                                             \
    }
DEFINE_POPCOUNT_WORDS(popcount_generic, )
#ifdef BKI_HAVE_X86
DEFINE_POPCOUNT_WORDS(popcount_hw, __attribute__((target("popcnt"))))
#endif

/* Every CPU with AVX2 has POPCNT, so the level chosen above says whether
 * the instruction is there. */
uint64_t bki_popcount_words(const uint64_t *w, uint64_t n, bool nibbles)
{
#ifdef BKI_HAVE_X86
    if (bki_simd_level >= BKI_SIMD_AVX2)
        return popcount_hw(w, n, nibbles);
#endif
    return popcount_generic(w, n, nibbles);
}

bool bki_simd_force_scalar(bool force)
{
    bool was = bki_simd_level != BKI_SIMD_SCALAR;
    bki_simd_level = force ? BKI_SIMD_SCALAR : simd_available;
    return was;
}
