/*
 * Memory for the library: small objects from malloc, payloads 64-byte
 * aligned (one cache line per blocked/counting probe group), and large
 * payloads as anonymous mappings so they arrive zeroed without a memset
 * pass and can be backed by transparent huge pages (one TLB entry per 2 MB
 * instead of per 4 KB: random probes into a multi-GB filter otherwise miss
 * the TLB on almost every lookup).
 *
 * Every allocation goes through here so tests can make the n-th one fail
 * (bki_fail_countdown) and check that each caller cleans up and reports
 * BK_ENOMEM.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

long bki_fail_countdown = 0;

/* Payloads at least this large are mapped rather than malloc'ed. */
#define BKI_MAP_THRESHOLD (UINT64_C(2) << 20)

static bool injected_failure(void)
{
    if (bki_fail_countdown > 0 && --bki_fail_countdown == 0)
        return true;
    return false;
}

void *bki_malloc(size_t n)
{
    if (injected_failure())
        return NULL;
    return malloc(n ? n : 1);
}

void *bki_calloc(size_t count, size_t size)
{
    if (injected_failure())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *bki_realloc(void *p, size_t n)
{
    if (injected_failure())
        return NULL;
    return realloc(p, n ? n : 1);
}

void bki_free(void *p)
{
    free(p);
}

uint8_t *bki_payload_alloc(uint64_t nbytes, bki_mem_t *mem)
{
    *mem = BKI_MEM_NONE;
    if (nbytes == 0 || nbytes > BKI_MAX_PAYLOAD_BYTES || nbytes > SIZE_MAX - 64)
        return NULL;
    if (injected_failure())
        return NULL;
    if (nbytes >= BKI_MAP_THRESHOLD) {
        void *p = mmap(NULL, (size_t)nbytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
#ifdef MADV_HUGEPAGE
        (void)madvise(p, (size_t)nbytes, MADV_HUGEPAGE); /* a hint; may fail */
#endif
        *mem = BKI_MEM_ANON;
        return p;
    }
    size_t rounded = ((size_t)nbytes + 63) & ~(size_t)63;
    uint8_t *p = aligned_alloc(64, rounded);
    if (!p)
        return NULL;
    memset(p, 0, rounded);
    *mem = BKI_MEM_HEAP;
    return p;
}

void bki_payload_free(uint8_t *p, uint64_t nbytes, bki_mem_t mem)
{
    if (!p)
        return;
    if (mem == BKI_MEM_HEAP)
        free(p);
    else if (mem == BKI_MEM_ANON)
        munmap(p, (size_t)nbytes);
}
