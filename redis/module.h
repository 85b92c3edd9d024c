/*
 * Shared definitions of the Redis module's files: the value stored under a
 * key, the module's settings, and the reply-and-return helpers that keep the
 * command handlers short (parse, call the library, reply).
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
 *   cmd_bf.c, cmd_cbf.c, cmd_merge.c, cmd_wbf.c   the command handlers
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
#ifndef BLOOMKIT_REDIS_MODULE_H
#define BLOOMKIT_REDIS_MODULE_H

#include "bloomkit/bloomkit.h"
#include "module_api.h"

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

typedef enum bkr_family {
    BKR_BF = 1,  /* BF.*: scalable Bloom filter (RedisBloom's semantics) */
    BKR_CBF = 2, /* CBF.*: counting Bloom filter with delete */
    BKR_WBF = 3  /* WBF.*: window filter (seen in the last N adds or T seconds) */
} bkr_family_t;

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
} bkr_obj_t;

/* Settings from module arguments (see docs/REDIS.md). */
typedef struct bkr_config {
    uint64_t max_bytes;      /* largest filter payload held, however made */
    double bf_error;         /* defaults for BF.ADD/BF.INSERT auto-create */
    uint64_t bf_capacity;
    uint64_t bf_expansion;
    double cbf_error;        /* defaults for CBF.ADD auto-create */
    uint64_t cbf_capacity;
    uint64_t chunk_bytes;    /* SCANDUMP / AOF rewrite chunk size */
} bkr_config_t;

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

extern bkr_config_t bkr_config;
extern RedisModuleType *bkr_type_rb;   /* MBbloom--: BF keys taken over from RedisBloom */
extern RedisModuleType *bkr_type_rbcf; /* MBbloomCF: RedisBloom's CF keys, kept as stored */

/* ---- the leaves: settings and memory (config.c), replies (reply.c),
 * arguments (argv.c), registration, propagation, events (events.c) ---- */

/* The library's allocator: Redis' (TryAlloc, TryCalloc where the server
 * has it), counting what it hands out. */
bk_allocator_t bkr_library_allocator(void);
/* Bytes of Redis memory the library holds now. A difference of two
 * readings around a library call is what the call took. */
uint64_t bkr_lib_bytes(void);

/* Replies with an error for a library status (bk_strerror text). */
int bkr_reply_status(RedisModuleCtx *ctx, bk_status_t st);
/* Replies with an unsigned number as stored: an integer, or past
 * INT64_MAX (which RESP integers cannot carry) its decimal digits. */
int bkr_reply_u64(RedisModuleCtx *ctx, uint64_t v);
/* Replies with a stored double: an integer when it is a whole number that
 * a double holds exactly, else the double. */
int bkr_reply_number(RedisModuleCtx *ctx, double v);
/* Replies with a printf-formatted error ("ERR ..."). */
int bkr_reply_errorf(RedisModuleCtx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Case-insensitive comparison of an argument with an ASCII word. */
bool bkr_arg_is(const RedisModuleString *arg, const char *word);
/* Strict number parsing: the whole argument must be the number. */
bool bkr_arg_u64(const RedisModuleString *arg, uint64_t *out);
bool bkr_arg_double(const RedisModuleString *arg, double *out);
/* Propagates a write to replicas and the AOF: verbatim, or, when the
 * command created the key (and BKI.CREATE went first), re-sent explicitly
 * so both land in one MULTI/EXEC in order. */
void bkr_propagate(RedisModuleCtx *ctx, bool created, RedisModuleString **argv, int argc);
/* Fires the keyspace event of a write (class "module", 'd' in
 * notify-keyspace-events) named after the command in lower case
 * ("bf.add"), on key. */
void bkr_notify(RedisModuleCtx *ctx, RedisModuleString *cmd, RedisModuleString *key);

/* A command to register: its name (lower case, as RedisBloom's), handler,
 * flags, and last key argument (1; -1 when every argument after the
 * command is a key, so a cluster routes it and checks the slots). */
typedef struct bkr_command {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
    int lastkey;
} bkr_command_t;
/* Registers n commands; REDISMODULE_ERR if Redis refuses one. */
int bkr_create_commands(RedisModuleCtx *ctx, const bkr_command_t *cmds, size_t n);

/* ---- the value under a key, full or packed (value.c) ---- */

/* A new value (zeroed but for family and f); never NULL (small, from
 * RedisModule_Alloc). f (NULL for a pending load) was made from the Redis
 * memory the library took since `since`, a bkr_lib_bytes() reading taken
 * just before f was created: that is what MEMORY USAGE reports for it.
 * f gets MAX_BYTES as its library-held size cap. */
bkr_obj_t *bkr_obj_new(bkr_family_t family, bk_filter_t *f, uint64_t since);
/* Frees a value of either form (the types' free callback). */
void bkr_obj_free(void *value);
/* What a family is, wherever the module needs it: one row per family. */
typedef struct bkr_family_row {
    bkr_family_t family;
    const char *prefix;    /* "BF": its commands' prefix, and in messages */
    const char *type_name; /* its data type's name, 9 characters, stored in
                              RDB files: never renamed */
    const char *loadchunk; /* its LOADCHUNK command, as AOF rewrites emit it */
    const char *wrong_kind; /* "not a Bloom filter": the error for a filter
                               of another family's kind */
    bool (*fits)(bk_kind_t kind); /* whether a filter of kind belongs here */
    bool packs;            /* new keys are one packed block (BF) */
    /* What its commands create when they create implicitly (bkr_defaults):
     * the module arguments' capacity and error, and either the expansion
     * argument or (NULL) a filter that never grows. NULL capacity: the
     * family creates nothing implicitly (WBF). */
    const uint64_t *default_capacity;
    const double *default_error;
    const uint64_t *default_expansion;
} bkr_family_row_t;
const bkr_family_row_t *bkr_family(bkr_family_t family);
/* The family's data type, set once when the module loads. */
void bkr_family_set_type(bkr_family_t family, RedisModuleType *type);
RedisModuleType *bkr_family_type(bkr_family_t family);
const char *bkr_family_prefix(bkr_family_t family); /* "BF", "CBF" or "WBF" */
/* The size class of Redis' allocator (jemalloc) that n bytes land in. */
size_t bkr_size_class(size_t n);
/* A new packed value of the family (*out), or BK_EKIND when opts do not
 * make a packable filter (the caller makes a full one), BK_ENOMEM, or the
 * library's status for bad parameters. */
bk_status_t bkr_packed_new(bkr_family_t family, uint64_t capacity, double error,
                           const bk_options_t *opts, void **out);
/* o, or a packed value that replaces it (o freed) when its filter can be
 * packed: what a load or a merge stores. */
void *bkr_value_pack(bkr_obj_t *o);
/* The same for o, the value under key (open for writing), in place. */
void bkr_key_pack(RedisModuleKey *key, bkr_obj_t *o);
/* MEMORY USAGE of a value; a byte copy of a packed one (COPY), or NULL. */
size_t bkr_value_mem(const void *value);
void *bkr_value_copy(const void *value);
/* The object to work on for a value: itself, or for a packed value a slot
 * bound to it until bkr_done(key) (key NULL: until bkr_release). NULL
 * when no slot or no memory for a view is left. */
bkr_obj_t *bkr_resolve(void *value, RedisModuleKey *key);
void bkr_release(bkr_obj_t *o);
/* Whether o is a packed value's slot. */
bool bkr_is_packed(const bkr_obj_t *o);
/* Turns the packed value that o is bound to into the full form under key
 * (before a change the block cannot hold: growth); returns the object to
 * go on with (o itself when it is not packed; NULL not reached: the full
 * form keeps the block's bits, nothing is allocated). */
bkr_obj_t *bkr_promote(RedisModuleKey *key, bkr_obj_t *o);
/* Settles what the command did to packed values looked up through key,
 * closes it and returns REDISMODULE_OK: `return bkr_done(key);`. */
int bkr_done(RedisModuleKey *key);
/* True if the filter kind belongs in a key of this family. */
bool bkr_kind_fits(bkr_family_t family, bk_kind_t kind);
/* The size cap that applies to what the command in ctx creates or grows:
 * MAX_BYTES for a client's command; none (UINT64_MAX) while the server
 * replays its AOF or loads an RDB, or for a command from its master, since
 * those rebuild keys that exist already: a cap limits growth, never data
 * (docs/REDIS.md). */
uint64_t bkr_cap(RedisModuleCtx *ctx);
/* True while the server is loading (its AOF or an RDB, at start or from a
 * master). */
bool bkr_loading(RedisModuleCtx *ctx);
/* Stops the server with a log line: an AOF replay that cannot rebuild a
 * key must not go on with a key missing or made up (Redis then refuses to
 * start, and nothing is half-loaded). Only called while loading. */
void bkr_fatal_load(RedisModuleCtx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* True if f's payload is within cap; *bytes receives its size. */
bool bkr_within_cap(const bk_filter_t *f, uint64_t cap, uint64_t *bytes);
/* A save that cannot read a filter's bytes (a bug, never memory: saves
 * allocate nothing): logs, and in a fork child exits so that Redis reports
 * the save failed. */
void bkr_save_failed(RedisModuleIO *io);
/* The data type callbacks of a family but aof_rewrite (dump.c's). */
void bkr_type_methods(RedisModuleTypeMethods *tm, bkr_family_t family);
/* Loads a chunk into a pending key's loader, keeping o->heap. */
bk_status_t bkr_obj_feed(bkr_obj_t *o, const void *bytes, size_t len, const char **why);
/* A pending key whose bytes are all in: its filter, validated (loader
 * gone), or the status and reason. */
bk_status_t bkr_obj_finish(bkr_obj_t *o, const char **why);
/* Bytes of the serialized form of o: a filter's, or a pending load's
 * total. */
uint64_t bkr_obj_total(const bkr_obj_t *o);
/* Bytes [off, off + len) of o's serialized form (a pending load: of those
 * received), read from it without a copy of the whole; false if the range
 * is not there. */
bool bkr_obj_read(const bkr_obj_t *o, uint64_t off, void *buf, size_t len);

typedef enum bkr_lookup {
    BKR_FOUND = 0,
    BKR_EMPTY,     /* no such key */
    BKR_WRONGTYPE, /* another type (including the other family) */
    BKR_LOADING,   /* a chunked load is in progress */
    BKR_NOMEM      /* a packed value could not be opened (memory) */
} bkr_lookup_t;

/* Finds a key's object of the given family. */
bkr_lookup_t bkr_lookup(RedisModuleKey *key, bkr_family_t family, bkr_obj_t **out);
/* Replies with the error for a lookup status other than BKR_FOUND. */
int bkr_reply_lookup_error(RedisModuleCtx *ctx, bkr_lookup_t st);
/* Opens keyname (mode REDISMODULE_READ and/or _WRITE) and returns its
 * filter of the family with *key open (close it with bkr_done); or, when
 * the key is missing, of another type or still loading, replies with the
 * lookup error, closes the key and returns NULL: the command then returns
 * REDISMODULE_OK. */
bkr_obj_t *bkr_open_or_reply(RedisModuleCtx *ctx, RedisModuleString *keyname, int mode,
                             bkr_family_t family, RedisModuleKey **key);

/* ---- RedisBloom's data (redisbloom.c) ---- */

/* The value under a CF key (type MBbloomCF): a cuckoo filter in
 * RedisBloom's flavour, and the Redis memory it holds. */
typedef struct bkr_cf {
    bk_cuckoo_t *c;
    uint64_t heap;
} bkr_cf_t;
/* A new CF value for c, made from the library memory taken since `since`
 * (a bkr_lib_bytes() reading); c gets MAX_BYTES as its size cap. */
bkr_cf_t *bkr_cf_new(bk_cuckoo_t *c, uint64_t since);
void bkr_cf_free(void *value);
/* RedisBloom's CF.SCANDUMP header (38 bytes) of c; and a filter of zeroed
 * sub-filters from one, or the error to reply: RedisBloom's text for a bad
 * header, the cap's for one whose sub-filters would pass `cap` bytes
 * (checked before anything is allocated). */
#define BKR_CF_HEADER 38u
size_t bkr_cf_header(const bk_cuckoo_t *c, uint8_t out[BKR_CF_HEADER]);
const char *bkr_cf_from_header(const char *buf, size_t len, uint64_t cap, bk_cuckoo_t **out);

/* Registers RedisBloom's data types (MBbloom--, MBbloomCF), so an RDB
 * written by RedisBloom 2.x loads. */
int bkr_rb_register(RedisModuleCtx *ctx);
/* BF.SCANDUMP of a key taken over from RedisBloom (o->f a RedisBloom
 * chain): RedisBloom's header and chunks; replies. */
int bkr_rb_scandump(RedisModuleCtx *ctx, const bkr_obj_t *o, long long it);
/* Whether a LOADCHUNK header chunk has the shape of RedisBloom's. */
bool bkr_rb_is_header(const char *buf, size_t len);
/* BF.LOADCHUNK's header chunk from RedisBloom on an empty key: makes the
 * key (type MBbloom--) and returns NULL, or returns the error to reply
 * (RedisBloom's text for what it refuses). */
const char *bkr_rb_load_header(RedisModuleCtx *ctx, RedisModuleKey *key, const char *buf,
                               size_t len);
/* A data chunk into a key taken over from RedisBloom: NULL, or the error
 * to reply (RedisBloom's texts). */
const char *bkr_rb_load_chunk(bkr_obj_t *o, long long it, const char *buf, size_t len);

/* ---- creation with limits (create.c) ---- */

typedef struct bkr_params {
    uint64_t capacity;
    double error;
    uint64_t expansion; /* BF only */
    bool nonscaling;    /* BF only */
    bool seed_set;      /* seed given by the user (SEED): mergeable filters */
    uint64_t seed;
} bkr_params_t;

/* Creates a key's filter with p's seed, or a fresh random one, and
 * propagates the creation (BKI.CREATE with that seed) followed by the
 * command itself, so replicas and the AOF build a filter with the same
 * bits. On failure replies with an error and returns NULL (nothing
 * created). */
bkr_obj_t *bkr_create_key_or_reply(RedisModuleCtx *ctx, RedisModuleKey *key,
                                   RedisModuleString *keyname, bkr_family_t family,
                                   const bkr_params_t *p);
/* Before adding a new item to a BF: NULL, or the error to reply because
 * the chain would grow past the cap in ctx (bkr_cap; an O(1) look at the
 * filter's shape; a fixed-size filter answers NULL, the library refuses it
 * when full). */
const char *bkr_growth_check(RedisModuleCtx *ctx, const bkr_obj_t *o);
/* True if m items can be added in one batch: none of them can make the
 * filter grow or find it full, so no check is due between them. */
bool bkr_batch_safe(const bkr_obj_t *o, int m);

/* ---- command options (args.c) ---- */

/* Options a command accepts (bkr_parse_options_or_reply). */
enum {
    BKR_OPT_EXPANSION = 1 << 0,  /* EXPANSION x */
    BKR_OPT_NONSCALING = 1 << 1, /* NONSCALING */
    BKR_OPT_SEED = 1 << 2,       /* SEED s */
    BKR_OPT_INSERT = 1 << 3      /* CAPACITY c, ERROR e, NOCREATE, ITEMS ... */
};

typedef struct bkr_options {
    bkr_params_t p;
    bool nocreate;
    int items;            /* BKR_OPT_INSERT: index of the first item */
} bkr_options_t;

/* The defaults of filters a family's commands create implicitly, from
 * its row of the family table (value.c). */
bkr_params_t bkr_defaults(bkr_family_t family);
/* Parses argv[2] (error rate) and argv[3] (capacity) into *p; false after
 * replying with RedisBloom's error. */
bool bkr_rate_capacity_or_reply(RedisModuleCtx *ctx, RedisModuleString **argv,
                                bkr_params_t *p);
/* Parses the options argv[from .. argc) of the kinds in `allowed` into *o
 * (which holds the defaults); false after replying with the error. With
 * BKR_OPT_INSERT parsing stops after ITEMS, which must be followed by at
 * least one item. */
bool bkr_parse_options_or_reply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int from,
                                unsigned allowed, bkr_options_t *o);

/* ---- what BF and CBF commands share (items.c) ---- */

/* XX.RESERVE: creates keyname's filter with p; replies OK or the error. */
int bkr_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, bkr_family_t family,
                const bkr_params_t *p);
/* XX.ADD / XX.MADD / BF.INSERT: adds items to argv[1]'s filter, creating
 * it with p unless nocreate, and replies one boolean (multi false) or an
 * array of them; an error ends the array early, as RedisBloom does. */
int bkr_add_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bkr_family_t family,
                    const bkr_options_t *o, bool multi);
/* XX.EXISTS / XX.MEXISTS: checks items against a key's filter and
 * replies; a missing key or a key of another type answers all false, as
 * RedisBloom does. */
int bkr_exists_items(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family,
                     RedisModuleString **items, int n, bool multi);
/* Replies with the number of items added to keyname's filter of the
 * family, 0 for a missing key (BF.CARD, CBF.CARD). */
int bkr_reply_card(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family);

/* ---- dumps (dump.c) ---- */

/* Emits the AOF commands that rebuild the key (chunked LOADCHUNK). */
void bkr_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value);

/* ---- command handlers, registered in module.c ---- */

int bkr_cmd_bf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_wbf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_wbf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_create(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
/* The WBF.* window filters' commands (cmd_wbf.c). */
int bkr_wbf_register(RedisModuleCtx *ctx);

int bkr_cmd_bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_debug(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

int bkr_cmd_cbf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

/* RedisBloom's CF.* commands (cmd_cf.c). */
int bkr_cf_register(RedisModuleCtx *ctx);

#pragma GCC visibility pop

#endif /* BLOOMKIT_REDIS_MODULE_H */
