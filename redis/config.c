/*
 * The module's settings (module arguments' values, parsed by module.c) and
 * the library's memory: every allocation of the library goes to Redis'
 * allocator through these hooks, which also count what they hand out
 * (used_memory, maxmemory and MEMORY USAGE see it).
 */
#define _GNU_SOURCE
#include "config.h"

#include <stdint.h>

bkr_config_t bkr_config = {
    .max_bytes = UINT64_C(4) << 30,
    .bf_error = 0.01,
    .bf_capacity = 100,
    .bf_expansion = 2,
    .cbf_error = 0.01,
    .cbf_capacity = 100,
    .chunk_bytes = UINT64_C(16) << 20,
    .cf_max_expansions = 32,
};

/* Bytes of Redis memory the library holds, as Redis' allocator counts
 * them (its size classes included): what used_memory grows by. Updated
 * atomically: FLUSHALL ASYNC frees values in a background thread while
 * the main thread allocates. */
static uint64_t lib_bytes;

static void *lib_alloc(size_t n)
{
    void *p = RedisModule_TryAlloc(n);
    if (p)
        __atomic_fetch_add(&lib_bytes, RedisModule_MallocSize(p), __ATOMIC_RELAXED);
    return p;
}

static void *lib_calloc(size_t count, size_t size)
{
    void *p = RedisModule_TryCalloc(count, size);
    if (p)
        __atomic_fetch_add(&lib_bytes, RedisModule_MallocSize(p), __ATOMIC_RELAXED);
    return p;
}

static void lib_free(void *p)
{
    __atomic_fetch_sub(&lib_bytes, RedisModule_MallocSize(p), __ATOMIC_RELAXED);
    RedisModule_Free(p);
}

bk_allocator_t bkr_library_allocator(void)
{
    bk_allocator_t a = {lib_alloc, RedisModule_TryCalloc ? lib_calloc : NULL, lib_free};
    return a;
}

uint64_t bkr_lib_bytes(void)
{
    return __atomic_load_n(&lib_bytes, __ATOMIC_RELAXED);
}
