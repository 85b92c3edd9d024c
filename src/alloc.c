/*
 * Memory for the library: small objects from malloc, payloads 64-byte
 * aligned (one cache line per blocked/counting probe group), and large
 * payloads as anonymous mappings so they arrive zeroed without a memset
 * pass and can be backed by transparent huge pages (one TLB entry per 2 MB
 * instead of per 4 KB: random probes into a multi-GB filter otherwise miss
 * the TLB on almost every lookup).
 *
 * A program may replace all of that with its own allocator
 * (bk_allocator_set), so that its memory accounting sees the library's
 * memory: Redis counts only what comes from its allocator in used_memory
 * and maxmemory. Through such an allocator:
 *  - a small block is the allocator's block as it is: the allocator has no
 *    realloc of its own, so growing one (a chain's list of sub-filters)
 *    takes the old size from the caller (bki_realloc), and no block carries
 *    a header (16 bytes on each was a size class up for a filter's struct);
 *  - a payload is asked for at its size (a multiple of 64) first: an
 *    allocator with size classes (Redis' jemalloc) returns such blocks
 *    64-byte aligned, and then the block is the payload (BKI_MEM_HOOK);
 *    otherwise it is over-allocated by 64 bytes and aligned here, the
 *    pointer the allocator returned in the 8 bytes just below the aligned
 *    start (there are always at least 8: the allocator aligns to 8 or
 *    more) (BKI_MEM_HEAP).
 * Both then mean "from the current allocator". That is sound
 * because the allocator can be changed only while no block is live (the
 * `live` count): a block is always released to the allocator it came from.
 *
 * Every allocation goes through here so tests can make the n-th one fail
 * (bki_fail_countdown) and check that each caller cleans up and reports
 * BK_ENOMEM.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

long bki_fail_countdown = 0;

/* Payloads at least this large are mapped rather than malloc'ed. */
#define BKI_MAP_THRESHOLD (UINT64_C(2) << 20)

static bk_allocator_t hook;   /* alloc == NULL: the default allocator */
static _Atomic long live = 0; /* blocks and payloads not yet released */

static bool injected_failure(void)
{
    if (bki_fail_countdown > 0 && --bki_fail_countdown == 0)
        return true;
    return false;
}

static void *counted(void *p)
{
    if (p)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return p;
}

bk_status_t bk_allocator_set(const bk_allocator_t *a)
{
    if (a && (a->alloc == NULL || a->free == NULL))
        return BK_EINVAL;
    if (atomic_load_explicit(&live, memory_order_relaxed) != 0)
        return BK_EINVAL;
    if (a)
        hook = *a;
    else
        memset(&hook, 0, sizeof hook);
    return BK_OK;
}

/* ---- small blocks ---- */

static void *hook_block(size_t n)
{
    return hook.alloc(n);
}

void *bki_malloc(size_t n)
{
    if (injected_failure())
        return NULL;
    if (n == 0)
        n = 1;
    return counted(hook.alloc ? hook_block(n) : malloc(n));
}

void *bki_calloc(size_t count, size_t size)
{
    if (injected_failure())
        return NULL;
    if (count == 0)
        count = 1;
    if (size == 0)
        size = 1;
    if (!hook.alloc)
        return counted(calloc(count, size));
    if (size > SIZE_MAX / count)
        return NULL;
    void *p = hook_block(count * size);
    if (p)
        memset(p, 0, count * size);
    return counted(p);
}

void *bki_realloc(void *p, size_t old, size_t n)
{
    if (injected_failure())
        return NULL;
    if (n == 0)
        n = 1;
    if (!hook.alloc) {
        void *q = realloc(p, n);
        return p ? q : counted(q);
    }
    void *q = hook_block(n);
    if (!q || !p)
        return p ? q : counted(q);
    memcpy(q, p, old < n ? old : n);
    hook.free(p);
    return q;
}

void bki_free(void *p)
{
    if (!p)
        return;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    if (hook.alloc)
        hook.free(p);
    else
        free(p);
}

/* ---- defragmentation ---- */

void *bki_move_block(void *p, bki_mover_t *mv)
{
    if (!p || !hook.alloc)
        return p;
    void *q = mv->move(mv->arg, p);
    if (!q)
        return p;
    mv->moved++;
    return q;
}

uint8_t *bki_move_payload(uint8_t *p, uint64_t nbytes, bki_mem_t mem, bki_mover_t *mv)
{
    if (!p || !hook.alloc || (mem != BKI_MEM_HOOK && mem != BKI_MEM_HEAP))
        return p;
    size_t rounded = ((size_t)nbytes + 63) & ~(size_t)63;
    uint8_t *raw = p;
    if (mem == BKI_MEM_HEAP)
        memcpy(&raw, p - sizeof raw, sizeof raw);
    uint8_t *moved = mv->move(mv->arg, raw);
    if (!moved)
        return p;
    mv->moved++;
    /* A block that is the payload (HOOK) was 64-byte aligned, and a mover
     * keeps a block's alignment (bk_move_fn). */
    if (mem == BKI_MEM_HOOK)
        return moved;
    /* The HEAP form: the payload sits at the first 64-byte boundary at
     * least 8 bytes into the block, the block's address just below it. */
    size_t off = (size_t)(p - raw);
    uint8_t *q = (uint8_t *)(((uintptr_t)moved + 64) & ~(uintptr_t)63);
    if ((size_t)(q - moved) != off)
        memmove(q, moved + off, rounded);
    memcpy(q - sizeof moved, &moved, sizeof moved);
    return q;
}

/* ---- payloads ---- */

/* Zeroes n bytes. Large blocks of an allocator are anonymous private
 * memory: their whole pages are zeroed by handing them back to the kernel
 * (MADV_DONTNEED: they read as zero and take no memory until written, as a
 * fresh mapping would), which spares a memset pass over gigabytes when a
 * big filter is created; the partial pages at both ends are cleared by
 * hand. Huge pages are not asked for here, unlike for the default
 * allocator's mapped payloads: a program with its own allocator is a
 * server (Redis) whose filters fill a key at a time, and with THP in
 * "madvise" mode each first touch of a 2 MB region then allocated (and
 * compacted memory for) a huge page: the first BF.ADDs into a fresh
 * 100M-item key took 1-12 ms each and made all 166 MB resident. With 4 KB
 * pages a key's memory grows with what its adds touch, as RedisBloom's
 * does. */
void bki_zero_fill(uint8_t *p, size_t n)
{
    const uintptr_t page = 4096;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
    if (n < BKI_MAP_THRESHOLD || hi <= lo ||
        madvise((void *)lo, (size_t)(hi - lo), MADV_DONTNEED) != 0) {
        memset(p, 0, n);
        return;
    }
    memset(p, 0, (size_t)(lo - (uintptr_t)p));
    memset((void *)hi, 0, (size_t)((uintptr_t)p + n - hi));
}

/* A zeroed payload of `rounded` bytes (a multiple of 64) from the
 * program's allocator: its own block when that is 64-byte aligned
 * (*exact), else one 64 bytes larger, aligned here. */
static uint8_t *hook_payload(size_t rounded, bool *exact)
{
    if (rounded > SIZE_MAX - 64)
        return NULL;
    uint8_t *raw = hook.calloc ? hook.calloc(1, rounded) : hook.alloc(rounded);
    *exact = raw && ((uintptr_t)raw & 63) == 0;
    if (*exact) {
        if (!hook.calloc)
            bki_zero_fill(raw, rounded);
        return raw;
    }
    if (raw)
        hook.free(raw);
    raw = hook.calloc ? hook.calloc(1, rounded + 64) : hook.alloc(rounded + 64);
    if (!raw)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + 64) & ~(uintptr_t)63);
    memcpy(p - sizeof raw, &raw, sizeof raw);
    if (!hook.calloc)
        bki_zero_fill(p, rounded);
    return p;
}

static uint8_t *mapped_payload(uint64_t nbytes)
{
    void *p = mmap(NULL, (size_t)nbytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, (size_t)nbytes, MADV_HUGEPAGE); /* a hint; may fail */
#endif
    return p;
}

uint8_t *bki_payload_alloc(uint64_t nbytes, bki_mem_t *mem)
{
    *mem = BKI_MEM_NONE;
    if (nbytes == 0 || nbytes > BKI_MAX_PAYLOAD_BYTES || nbytes > SIZE_MAX - 128)
        return NULL;
    if (injected_failure())
        return NULL;
    size_t rounded = ((size_t)nbytes + 63) & ~(size_t)63;
    uint8_t *p;
    if (hook.alloc) {
        bool exact = false;
        p = hook_payload(rounded, &exact);
        *mem = exact ? BKI_MEM_HOOK : BKI_MEM_HEAP;
    } else if (nbytes >= BKI_MAP_THRESHOLD) {
        p = mapped_payload(nbytes);
        *mem = BKI_MEM_ANON;
    } else {
        p = aligned_alloc(64, rounded);
        if (p)
            memset(p, 0, rounded);
        *mem = BKI_MEM_HEAP;
    }
    if (!p)
        *mem = BKI_MEM_NONE;
    return counted(p);
}

void bki_payload_zero(uint8_t *p, uint64_t nbytes, bki_mem_t mem)
{
#ifdef MADV_DONTNEED
    if (mem == BKI_MEM_ANON && madvise(p, (size_t)nbytes, MADV_DONTNEED) == 0)
        return;
#endif
    memset(p, 0, (size_t)nbytes);
}

void bki_payload_free(uint8_t *p, uint64_t nbytes, bki_mem_t mem)
{
    if (!p || (mem != BKI_MEM_HEAP && mem != BKI_MEM_ANON && mem != BKI_MEM_HOOK))
        return;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    if (mem == BKI_MEM_ANON) {
        munmap(p, (size_t)nbytes);
    } else if (mem == BKI_MEM_HOOK) {
        hook.free(p);
    } else if (hook.alloc) {
        uint8_t *raw;
        memcpy(&raw, p - sizeof raw, sizeof raw);
        hook.free(raw);
    } else {
        free(p);
    }
}
