/*
 * The Redis module's shared types: the families, the value stored under a
 * key, and the constants of its encoding. Each file's own calls are in its
 * header (config.h, reply.h, ..., cmd_cf.h), which a file includes only
 * where it calls them.
 *
 * The files form a ladder; each calls only files above it in this list:
 *   config.c, reply.c, argv.c, events.c   the leaves: settings and the
 *              library's memory; replies; argument primitives; command
 *              registration, propagation and keyspace events
 *   value.c    the value under a key, full or packed; closing a key
 *   obj.c      the Redis type callbacks, loading, lookup
 *   redisbloom.c  RedisBloom's data taken over: its types' callbacks, its
 *              SCANDUMP chunks
 *   create.c   creating filters within MAX_BYTES, growth checks
 *   args.c     the options of BF.RESERVE / BF.INSERT / CBF.RESERVE
 *   items.c    what BF and CBF commands share: reserve, add, exists, card
 *   dump.c     SCANDUMP / LOADCHUNK and the AOF rewrite
 *   cmd_bf.c, cmd_cbf.c, cmd_cf.c, cmd_merge.c, cmd_wbf.c   the command
 *              handlers
 *   module.c   registration: API lookup, module arguments, command table
 *
 * One value type per command family: BF.* keys hold a scalable (or
 * non-scaling) Bloom filter, CBF.* keys a counting filter, WBF.* keys a
 * window filter. Three Redis data types (not one with a tag) so that TYPE,
 * WRONGTYPE and a key's encoding say which family a key belongs to; one
 * object (bkr_obj_t) and one set of callbacks for all three.
 *
 * A key may also hold a chunked load in progress (XX.LOADCHUNK): the
 * library's incremental loader copies the dump's bytes into the filter as
 * they arrive and validates them, and the key becomes that filter only once
 * all of them have arrived and passed, so a key never holds a half-trusted
 * filter.
 */
#ifndef BKR_BKR_H
#define BKR_BKR_H

#include "bloomkit/bloomkit.h"
#include "module_api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

typedef enum bkr_family {
    BKR_BF = 1,  /* BF.*: scalable Bloom filter (RedisBloom's semantics) */
    BKR_CBF = 2, /* CBF.*: counting Bloom filter with delete */
    BKR_WBF = 3  /* WBF.*: window filter (seen in the last N adds or T seconds) */
} bkr_family_t;

/* The value under a CF key (type MBbloomCF) in its full form: a cuckoo
 * filter in RedisBloom's flavour, and the Redis memory it holds. A CF key
 * of one sub-filter is instead compact (value.c): a bk_cuckoo_compact_t
 * whose first 4 bytes are 1 where these hold `compact`, 0. */
typedef struct bkr_cf {
    uint32_t compact; /* 0 */
    bk_cuckoo_t *c;
    uint64_t heap;
    /* Made by CF.LOADCHUNK's header: the bytes still to come, in order; 0
     * once whole. Until then commands refuse the key (zeroed buckets
     * would answer "absent" for added items). */
    uint64_t pending;
} bkr_cf_t;

typedef struct bkr_obj {
    bkr_family_t family;
    uint32_t packed; /* 0 here; 1 in a packed value, whose first 8 bytes
                        are these two fields and the rest the library's
                        packed filter (value.c): never a bkr_obj_t to
                        read further before bkr_resolve */
    bk_filter_t *f;  /* NULL while a chunked load is in progress */
    uint64_t heap;   /* Redis memory f (or load) holds, as the allocator counted it */
    void *block;     /* a packed value's block, whose bits f's first sub-filter
                        still uses since the key took its full form (value.c);
                        freed after f; NULL otherwise */
    /* Nothing else about f is cached: its sizes and growth state come from
     * bk_filter_shape() in O(1) whenever needed. */

    /* Chunked load in progress (f == NULL): the library's incremental
     * loader, which holds the filter being filled (bytes are copied into
     * place as they arrive, never collected first). */
    bk_filter_loader_t *load;

    /* A RedisBloom chain restored by BF.LOADCHUNK (its header made the key
     * at once, zeroed): the bytes still to come, in order; 0 once whole.
     * Until then every command but LOADCHUNK refuses the key, as a pending
     * load of ours does: zeroed bits would answer "absent" for items that
     * were added. */
    uint64_t rb_pending;
} bkr_obj_t;

/* rb_pending (and a CF key's pending) of a half restore that an RDB
 * brought back: where it stopped is not known, so only a header chunk
 * starts it over. */
#define BKR_RB_RESTART UINT64_MAX

/* Encoding version of the data types' RDB values (obj.c). */
#define BKR_ENCVER 2

/* The largest EXPANSION a BF takes (BF.RESERVE, BF.INSERT, BKI.CREATE). */
#define BKR_MAX_EXPANSION 32768

/* Serialized bytes exceed a filter's payload by their header, part table
 * and padding; this much slack over MAX_BYTES covers that for any filter
 * when a dump's announced size is checked against the cap. */
#define BKR_SERIAL_SLACK (UINT64_C(1) << 20)

/* Size of the pieces a filter is written in (RDB strings, AOF LOADCHUNK
 * commands): the only memory a save needs beyond Redis' own. */
#define BKR_PIECE_BYTES (UINT64_C(1) << 20)

/* What a filter is created with: capacity and error, a BF's growth, and
 * the seed when the user gave one. */
typedef struct bkr_params {
    uint64_t capacity;
    double error;
    uint64_t expansion; /* BF only */
    bool nonscaling;    /* BF only */
    double tightening;  /* BF only. 0: RedisBloom's rule, the first
                           sub-filter at error / 2 and each next one at half
                           the last (the chain's errors sum below the error);
                           else valkey-bloom's TIGHTENING: the first at the
                           error itself (so the rate at capacity is the one
                           asked for), each next one this times the last (a
                           grown chain may reach error / (1 - tightening)) */
    bool rb_layout;     /* BF only: a RedisBloom chain (module argument LAYOUT
                           redisbloom; BKI.CREATE's "RB:" spec), seed unused */
    bool seed_set;      /* seed given by the user (SEED): mergeable filters */
    uint64_t seed;
} bkr_params_t;

#pragma GCC visibility pop

#endif /* BKR_BKR_H */
