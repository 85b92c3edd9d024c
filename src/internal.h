/*
 * Internal definitions shared by the library's modules; not installed, and
 * visible only to src/ and the library's own tests (the Makefile gives
 * -Isrc to nothing else).
 *
 * src/ is a ladder: each file calls only files on its own rung or below,
 * and no files call each other in a circle. The rungs are docs/LAYOUT.md's
 * table (the one description of them); tests/ladder.py holds the build's
 * own objects to it.
 *
 * Adding a single-array kind: one new file on rung 2 with its probe
 * functions, one row in kinds.c's table (its name, flags and geometry) and
 * one row in array.c's table (its operations); see the comment at the top
 * of array.c.
 *
 * Every filter kind lives in one struct bk_filter so that the public API
 * has one handle type. Single-array kinds (blocked, classic, counting) use
 * the payload fields; a scalable filter uses `subs`, a chain of single-array
 * filters that it owns (or, when mapped, that borrow the parent's mapping);
 * a window uses `window`, a cuckoo filter `cuckoo`. filter.c sends each
 * call of a composite (chain, window, cuckoo, static) through that kind's
 * one row in registry.c.
 *
 * Payload bit order (also the file's): bit i of the payload is bit (i & 7)
 * of byte (i >> 3). On a little-endian host this is the same as bit (i & 63)
 * of 64-bit word (i >> 6), and bit (i & 31) of 32-bit word (i >> 5), which is
 * how the hot paths address it. Big-endian hosts are refused at compile time
 * rather than silently writing files other machines would misread.
 */
#ifndef BLOOMKIT_INTERNAL_H
#define BLOOMKIT_INTERNAL_H

#include "bloomkit/bloomkit.h"

#include <stdatomic.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bloomkit supports little-endian hosts only (see docs/FORMAT.md)"
#endif

#define BKI_HIDDEN __attribute__((visibility("hidden")))
#define BKI_LIKELY(x) __builtin_expect(!!(x), 1)
#define BKI_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Largest payload we agree to allocate or load: 2^46 bytes (64 TiB). Also
 * bounds every multiplication of sizes so none can overflow 64 bits. */
#define BKI_MAX_PAYLOAD_BYTES (UINT64_C(1) << 46)

/* In a function with a `const char **why`: sets *why (when non-NULL) to
 * msg and returns status. */
#define BKI_FAIL(status, msg)                                                  \
    do {                                                                       \
        if (why)                                                               \
            *why = (msg);                                                      \
        return (status);                                                       \
    } while (0)

__extension__ typedef unsigned __int128 bki_u128;

/* Range reduction without '%': maps a uniform 64-bit x to [0, n). */
static inline uint64_t bki_reduce(uint64_t x, uint64_t n)
{
    return (uint64_t)(((bki_u128)x * n) >> 64);
}

/* A hexadecimal digit's value (either case); -1 for any other byte. */
static inline int bki_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* How a payload's memory was obtained, so free() undoes the right thing. */
typedef enum bki_mem {
    BKI_MEM_NONE = 0,
    BKI_MEM_HEAP,      /* aligned_alloc */
    BKI_MEM_ANON,      /* anonymous mmap (large; asks for huge pages) */
    BKI_MEM_BORROWED,  /* points into memory owned by someone else */
    BKI_MEM_HOOK       /* a program allocator's own block, 64-byte aligned as
                          it came (alloc.c) */
} bki_mem_t;

/* bk_filter_add and bk_filter_contains of one filter (see bki_blocked_bind). */
typedef bk_status_t (*bki_add_key_fn)(bk_filter_t *f, const void *key, size_t len,
                                      bool *was_new);
typedef bool (*bki_contains_key_fn)(const bk_filter_t *f, const void *key, size_t len);
typedef bool (*bki_contains_hash_fn)(const bk_filter_t *f, bk_hash_t h);
/* bk_filter_add_u64, bk_filter_contains_u64 (a kind's pair, f->u64) and
 * bk_filter_remove_u64 (registry.h's table) of a kind with its own. */
typedef bk_status_t (*bki_add_u64_fn)(bk_filter_t *f, uint64_t key, bool *was_new);
typedef bool (*bki_contains_u64_fn)(const bk_filter_t *f, uint64_t key);
typedef bk_status_t (*bki_remove_u64_fn)(bk_filter_t *f, uint64_t key);
typedef struct {
    bki_add_u64_fn add;
    bki_contains_u64_fn contains;
} bki_u64_calls_t;

/* Every filter's three one-key calls (add_key, contains_key,
 * contains_hash) are bound where it is made, by its kind's own file
 * (array.c, cuckoo.c, scalable.c, window.c): the key's hash, then the
 * kind's probe, with no call up into filter.c. */

struct bk_filter {
    /* The fields every probe reads come first, in one cache line: a deep
     * scalable chain visits thousands of sub-filters per lookup. The rest
     * is ordered so that no padding is left: the struct stays within 256
     * bytes, and a small filter's struct and payload within one 512-byte
     * block of a size-class allocator (a Redis key's memory). */
    uint8_t *data;     /* 64-byte aligned */
    bki_add_key_fn add_key;           /* never NULL: at least the generic path */
    bki_contains_key_fn contains_key; /* never NULL: at least the generic path */
    bki_contains_hash_fn contains_hash; /* never NULL: at least the generic path */
    const uint32_t *lane_rows; /* blocked kinds: the active-lane rows of k */
    uint64_t cells;    /* bits, or counters for counting */
    uint64_t lines;    /* blocked, counting: 64-byte lines */
    uint32_t k;
    bk_kind_t kind;

    bk_hash_id_t hash;
    bool readonly;
    bool nonscaling;           /* scalable */
    bool first_error_as_given; /* scalable */
    bool packed_view;          /* scalable: a view of a packed block (packed.c) */
    uint64_t seed;
    uint64_t key8_secret;   /* the seed's part of an 8-byte key's hash
                               (bki_key8_secret, keyhash.h), set with the
                               one-key calls */
    uint64_t items;    /* keys added that were new (bki_items) */
    /* The kind's calls for a key given as a 64-bit integer
     * (bk_filter_add_u64, bk_filter_contains_u64), bound with the one-key
     * calls; NULL: the key's 8 little-endian bytes go to the byte calls.
     * Each entry checks that the byte call bound beside it is its own (a
     * paged file's or a read-only mapping's calls are bound over them) and
     * takes the bytes path where it is not. */
    const bki_u64_calls_t *u64;
    uint64_t capacity; /* n it was sized for */
    double fpr;        /* p it was sized for */
    uint64_t nbytes;   /* payload bytes */
    uint8_t mem;       /* bki_mem_t: how data was obtained */
    uint8_t block;     /* bki_mem_t; not NONE: the struct and a small payload
                          share one allocation of this kind (bki_array_new) */
    /* bk_key_form_t: how the keys were canonicalized before they were
     * added: recorded, never applied, by the library (outermost filter
     * only) */
    uint8_t key_form;
    int map_fd;        /* -1 when not mapped */

    /* scalable */
    bk_filter_t **subs;
    uint32_t nsubs;
    uint32_t subs_cap;
    bk_kind_t sub_kind;
    uint32_t subs_precise;  /* sub-filters of the precise kind */
    double growth;
    double tightening;
    uint64_t subs_capacity; /* sum of the sub-filters' capacities */
    uint64_t subs_bytes;    /* sum of the sub-filters' payload bytes */
    uint64_t max_bytes;     /* cap on the payload bytes; 0: none */

    /* RedisBloom compatibility (rbloom.c, redisbloom.c): a link's n2 (its
     * probes are taken mod 2^rb_n2 when nonzero, else mod cells) and bits
     * per entry, and a chain's options (BK_REDISBLOOM_*); zero otherwise */
    uint32_t rb_n2;
    uint32_t rb_options;
    double rb_bpe;

    /* the composite kinds' own state; data stays NULL (one or the other,
     * by kind) */
    union {
        struct bki_window *window; /* window: generations and clock (window.h) */
        struct bk_cuckoo *cuckoo;  /* cuckoo: its sub-filters (cuckoo.c) */
        struct bki_fuse *fuse;     /* fuse8, fuse16: its parts (fuse.h) */
    };

    /* file mapping (bk_filter_open); owned by the outermost filter */
    void *map_base;
    uint64_t map_len;
    /* a paged file's pages, checked as keys touch them (pages.c); NULL
     * for every filter whose bytes were checked when it was made */
    struct bki_pages *pages;
    /* With pages: checks the bytes [p, p + len) of the payload before a
     * kind reads them (write: and marks them for the next checkpoint);
     * false if they lie on a damaged page. Set by pages.c for the cuckoo
     * kind, whose kicks reach buckets no key's reads named. */
    bool (*touch)(const bk_filter_t *f, const uint8_t *p, uint64_t len, bool write);
};

/* Which 4 KiB pages of a large bitmap's payload were ever written
 * (touched.c): one bit per page (l1) and one per 4096 pages (l2). A page
 * whose bit is clear is all zero, so counting and iteration skip it and
 * cost follows the pages the values touched, not n. Maps under
 * BKI_TOUCHED_MIN bytes keep none (l1 NULL): scanning them whole is cheap,
 * and their updates skip the marking. */
typedef struct bki_touched {
    uint64_t *l1, *l2;
    uint64_t pages;      /* payload pages (the last may be partial) */
    uint64_t marked;     /* l1 bits set: pages touched */
    uint64_t l1_bytes, l2_bytes;
    bki_mem_t l1_mem, l2_mem;
} bki_touched_t;

#define BKI_TOUCHED_MIN (UINT64_C(64) << 20)
#define BKI_PAGE_WORDS 512u /* 64-bit words per 4 KiB page */

/* Sets up t for a payload of nbytes: BK_ENOMEM if its own maps fail. */
BKI_HIDDEN bk_status_t bki_touched_init(bki_touched_t *t, uint64_t nbytes);
BKI_HIDDEN void bki_touched_free(bki_touched_t *t);
/* Every page touched (a payload loaded whole), or none (cleared). */
BKI_HIDDEN void bki_touched_all(bki_touched_t *t);
BKI_HIDDEN void bki_touched_none(bki_touched_t *t);
/* dst gains src's pages (same payload size). */
BKI_HIDDEN void bki_touched_merge(bki_touched_t *dst, const bki_touched_t *src);
/* The first touched page at or after page, or t->pages; without a summary
 * every page counts as touched. */
BKI_HIDDEN uint64_t bki_touched_next(const bki_touched_t *t, uint64_t page);

/* Marks the page holding payload word `word`. */
static inline void bki_touched_mark(bki_touched_t *t, uint64_t word)
{
    uint64_t page = word / BKI_PAGE_WORDS, group = page >> 12;
    uint64_t bit = UINT64_C(1) << (page & 63);
    if (!(t->l1[page >> 6] & bit)) {
        t->l1[page >> 6] |= bit;
        t->l2[group >> 6] |= UINT64_C(1) << (group & 63);
        t->marked++;
    }
}

/* Dense bitmaps over [0, n): 1 bit per value (bk_bitmap) or 2 bits per
 * value (bk_bitmap2: value v in bits 2(v mod 32)..+1 of word v/32, states
 * 0, 1, 2; 3 never occurs). words holds nbytes bytes, a multiple of 64. */
/* What a bitmap read from a paged file calls in the paging code above it
 * (bitmap_file.c gives it; bitmap.c, below the paging code, calls it only
 * through this and through the shell's touch): before a pass over the
 * whole map, every page read and checked (write: and marked for the next
 * save); the shell freed with the bitmap. */
typedef struct bki_bitmap_paging {
    void (*all)(const bk_filter_t *shell, bool write);
    void (*free)(bk_filter_t *shell);
} bki_bitmap_paging_t;

/* file: NULL, or for a bitmap read from a paged file (bitmap_file.c) the
 * filter shell that holds its pages (kind bitmap or bitmap2, data = words,
 * f->pages set; owned, freed through paging->free): each word's page is
 * checked through file->touch before its bits are trusted, and saves to
 * the same file go through a checkpoint. The words then borrow the
 * shell's memory. */
struct bk_bitmap {
    uint64_t n;
    uint64_t *words;
    uint64_t nbytes;
    bki_mem_t mem;
    bki_touched_t touched;
    bk_filter_t *file;
    const bki_bitmap_paging_t *paging;
};

struct bk_bitmap2 {
    uint64_t n;
    uint64_t *words;
    uint64_t nbytes;
    bki_mem_t mem;
    bki_touched_t touched;
    bk_filter_t *file;
    const bki_bitmap_paging_t *paging;
};

/* A bitmap of `bits` bits a value (1: bk_bitmap_t, 2: bk_bitmap2_t) over
 * [0, n) whose words are file's payload (bitmap_file.c's paged load):
 * the bitmap owns file from here (freed with it through paging->free, or
 * here on failure). NULL without memory. */
BKI_HIDDEN void *bki_bitmap_over(unsigned bits, uint64_t n, bk_filter_t *file,
                                 const bki_bitmap_paging_t *paging);

/* The item count: relaxed atomic loads and stores (GCC's builtins, on a
 * plain field), so bk_filter_add_atomic may bump it from many threads while
 * single-writer paths use a plain load and store. The one-key add
 * (onekey.h) updates it with a plain +=, which lets the compiler make it
 * one instruction; it runs, as every write but bk_filter_add_atomic, with
 * no other thread on the filter (bloomkit.h). */
static inline uint64_t bki_items(const bk_filter_t *f)
{
    return __atomic_load_n(&f->items, __ATOMIC_RELAXED);
}

static inline void bki_set_items(bk_filter_t *f, uint64_t v)
{
    __atomic_store_n(&f->items, v, __ATOMIC_RELAXED);
}

/* ==== rung 0 ============================================================ */

/* ---- alloc.c ---- */

/* Zeroes n bytes of a program allocator's block: from 2 MB up by handing
 * its whole pages back to the kernel (they read as zero and take no memory
 * until written), which assumes anonymous private memory, as large blocks
 * of malloc-family allocators are; by memset otherwise. */
BKI_HIDDEN void bki_zero_fill(uint8_t *p, size_t n);

/* Allocation-failure injection for tests: when > 0, each allocation
 * decrements it and the one that brings it to 0 fails. */
extern BKI_HIDDEN long bki_fail_countdown;

BKI_HIDDEN void *bki_malloc(size_t n);
BKI_HIDDEN void *bki_calloc(size_t count, size_t size);
/* Grows or shrinks a block of `old` bytes (0 for p NULL) to n: a program's
 * allocator has no realloc, so the caller says how much to keep. */
BKI_HIDDEN void *bki_realloc(void *p, size_t old, size_t n);
BKI_HIDDEN void bki_free(void *p);
/* A zeroed, 64-byte aligned payload; large ones are anonymous mappings with
 * transparent huge pages requested. */
BKI_HIDDEN uint8_t *bki_payload_alloc(uint64_t nbytes, bki_mem_t *mem);
BKI_HIDDEN void bki_payload_free(uint8_t *p, uint64_t nbytes, bki_mem_t mem);
/* Defragmentation (bk_filter_defrag): a mover and how many blocks it moved. */
typedef struct bki_mover {
    bk_move_fn move;
    void *arg;
    size_t moved;
} bki_mover_t;
/* A small block (bki_malloc/calloc/realloc) offered to the mover: where it
 * is now. Only blocks of a program's allocator are offered. */
BKI_HIDDEN void *bki_move_block(void *p, bki_mover_t *mv);
/* The same for a payload of nbytes obtained as mem: where it is now,
 * 64-byte aligned as before (bytes are shifted when the new block's
 * alignment differs). */
BKI_HIDDEN uint8_t *bki_move_payload(uint8_t *p, uint64_t nbytes, bki_mem_t mem, bki_mover_t *mv);
/* Zeroes a payload. A large anonymous mapping is handed back to the kernel
 * (MADV_DONTNEED makes its pages read as zero again) instead of being
 * written, so clearing a huge, sparsely touched map does not touch it all. */
BKI_HIDDEN void bki_payload_zero(uint8_t *p, uint64_t nbytes, bki_mem_t mem);

/* ---- hash.c (the inline XXH3 path is in keyhash.h) ---- */

/* The splitmix64 finalizer: a bijection on 64 bits with full avalanche. */
static inline uint64_t bki_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return x;
}

/* ---- strhash.c: the classic string hashes ---- */
/* The classic hash's own value (32-bit ones zero-extended); 0 for XXH3 or
 * an unknown id. */
BKI_HIDDEN uint64_t bki_classic_hash(bk_hash_id_t id, const unsigned char *s, size_t n);
/* A key's hash for a classic (non-XXH3) hash id: the classic value spread
 * to 128 bits by a seeded mixer. */
BKI_HIDDEN bk_hash_t bki_classic_key_hash(bk_hash_id_t id, uint64_t seed, const void *key,
                                          size_t len);

/* RedisBloom's key hashes with any seed (strhash.c; tests check them
 * against the functions' published verification values). */
BKI_HIDDEN uint64_t bki_murmur64a(const unsigned char *s, size_t n, uint64_t seed);
BKI_HIDDEN uint32_t bki_murmur2(const unsigned char *s, size_t n, uint32_t seed);

/* ---- kinds.c: one row per kind ---- */
enum {
    BKI_KIND_FILTER = 1u << 0,     /* a filter (bk_filter_t) */
    BKI_KIND_BITMAP = 1u << 1,     /* a bitmap (bk_bitmap_t, bk_bitmap2_t) */
    BKI_KIND_TOP = 1u << 2,        /* a file's kind on its own */
    BKI_KIND_CREATE = 1u << 3,     /* bk_filter_create makes it (filters) */
    BKI_KIND_SUB_FILE = 1u << 4,   /* a scalable chain's sub-kind in a file */
    BKI_KIND_SUB_CREATE = 1u << 5, /* ... and at bk_filter_create */
    BKI_KIND_STATIC = 1u << 6,     /* built whole (bk_filter_build), never
                                      added to */
    BKI_KIND_DEEP = 1u << 7,       /* may stand in any chain's later parts
                                      (deep and packed chains) but a
                                      RedisBloom one's */
    BKI_KIND_RB_LINK = 1u << 8,    /* RedisBloom's link: n2 and bits per
                                      entry in its part-table entry; a chain
                                      of them keeps RedisBloom's rules */
    BKI_KIND_SEGMENTS = 1u << 9,   /* a segment geometry in its part-table
                                      entry (static filters) */
    BKI_KIND_CHAIN = 1u << 10,     /* a chain of single arrays (scalable):
                                      planned as its first link, at half
                                      the error */
    BKI_KIND_DOUBLE_HASH = 1u << 11, /* probes by double hashing over the
                                        whole array (classic): the FPR model
                                        that counts what that costs */
    BKI_KIND_BUCKETS = 1u << 12    /* fingerprints in buckets (cuckoo):
                                      sized by bk_cuckoo_plan */
};
/* The first kind with every property in `what` (BKI_KIND_RB_LINK:
 * RedisBloom's link); the default (0) if none. */
BKI_HIDDEN bk_kind_t bki_kind_with(unsigned what);
/* The single-array kind `kind` is sized as: its own, a chain's first
 * link's (blocked), blocked for the default when no rate is given. */
BKI_HIDDEN bk_kind_t bki_kind_plan_as(bk_kind_t kind);
/* The kind the library picks at error rate p (bk_filter_create and
 * bk_plan of the default): split, blocked or blocked2 by band. */
BKI_HIDDEN bk_kind_t bki_kind_default(double p);
/* The kind bk_filter_create_exact makes for `kind` (blocked for the
 * default). */
BKI_HIDDEN bk_kind_t bki_kind_exact(bk_kind_t kind);
/* The single-array kind made alone whose layout has line_cells cells a
 * line, key_lines lines a key, cell_bits bits a cell and a free k (one
 * 512-bit line of bits: blocked); the default (0) if none. */
BKI_HIDDEN bk_kind_t bki_kind_of_layout(uint32_t line_cells, uint32_t key_lines,
                                        uint32_t cell_bits);
/* The bitmap kind of cell_bits bits a value (1: bk_bitmap_t, 2:
 * bk_bitmap2_t); the default (0) if none. */
BKI_HIDDEN bk_kind_t bki_bitmap_kind(unsigned cell_bits);
/* A fingerprint kind's fingerprint bits (the static kinds); 0 for others. */
BKI_HIDDEN unsigned bki_kind_fp_bits(bk_kind_t kind);
/* The kind with every property in `what` whose fingerprints have fp_bits
 * bits; the default (0) if none. */
BKI_HIDDEN bk_kind_t bki_kind_with_fp_bits(unsigned what, unsigned fp_bits);
/* Whether kind has every property in `what`; false for unknown kinds. */
BKI_HIDDEN bool bki_kind_is(bk_kind_t kind, unsigned what);

/* ---- cpu.c: the one place that decides the instruction set ---- */
enum { BKI_SIMD_SCALAR = 0, BKI_SIMD_AVX2 = 1 };
/* The level the probes use: set once at load time from the CPU's feature
 * bits, lowered only by tests. Read on every probe (a predictable branch). */
extern BKI_HIDDEN int bki_simd_level;
BKI_HIDDEN int bki_simd_available(void);
/* Selects a level, clamped to what the CPU has; returns the previous one.
 * For tests, not while other threads probe. */
BKI_HIDDEN int bki_simd_set(int level);
/* Forces the scalar path (true) or the best available one (false); returns
 * whether a SIMD path was in use. */
BKI_HIDDEN bool bki_simd_force_scalar(bool force);
/* Set bits in w[0..n); nibbles: non-zero 4-bit cells instead (counting
 * kinds). With the popcount instruction where the CPU has it: built for
 * the generic x86-64 target, __builtin_popcountll is a library call, 4-5x
 * slower over a multi-GB payload. */
BKI_HIDDEN uint64_t bki_popcount_words(const uint64_t *w, uint64_t n, bool nibbles);

/* ==== rung 1: layout.c ================================================== */

/* One 64-byte cache line: the unit of blocked and counting filters. */
#define BKI_LINE_BYTES 64u
#define BKI_LINE_BITS 512u
#define BKI_LINE_LANES 16u       /* 32-bit lanes per line */
#define BKI_LINE_COUNTERS 128u   /* 4-bit counters per line */
#define BKI_BLOCKED_MAX_K 16u    /* one probe per lane at most */
#define BKI_CLASSIC_MAX_K 64u
#define BKI_SPLIT_BLOCK_BITS 256u /* split: a key's block, eight 32-bit words */
#define BKI_SPLIT_K 8u            /* split: one bit in each word */
/* Largest bitmap: 2^48 values (2^46 bytes for a 2-bit map, the payload
 * limit). */
#define BKI_BITMAP_MAX_N (UINT64_C(1) << 48)

/* The geometry of one kind of single-array payload. */
typedef struct bki_layout {
    uint32_t unit;      /* cells come in multiples of this */
    uint32_t cell_bits; /* bits per cell: 1, 2 (bitmap2) or 4 (counting) */
    uint32_t line_cells; /* cells per line (the span a key's probes share:
                          * a 64-byte line, split's 32-byte block) for lined
                          * kinds, else 0 */
    uint32_t max_k;     /* probes per key per line (0: not a filter) */
    uint64_t max_cells; /* bitmaps: BKI_BITMAP_MAX_N; filters: by bytes */
    uint32_t key_lines; /* filters: lines (or arrays) a key's k probes are
                         * made in, each: a key makes k * key_lines probes
                         * (blocked2: 2; others 1) */
    uint32_t fixed_k;   /* nonzero: the only k the kind has (split: 8) */
} bki_layout_t;

/* What a single-array kind does: array.c dispatches through it, each
 * kind's file defines its own, and its row in kinds.c points to it. NULL
 * entries: add_atomic, remove, counter -> BK_EKIND (counter: 1 if
 * contained); add_batch, contains_batch and their pre-hashed forms -> the
 * generic pipeline of array.c; union_into -> bytewise OR. */
typedef struct bki_kind_ops {
    bool (*add)(bk_filter_t *f, bk_hash_t h);
    bool (*contains)(const bk_filter_t *f, bk_hash_t h);
    void (*prefetch)(const bk_filter_t *f, bk_hash_t h);
    bool (*add_atomic)(bk_filter_t *f, bk_hash_t h);
    bk_status_t (*remove)(bk_filter_t *f, bk_hash_t h);
    unsigned (*counter)(const bk_filter_t *f, bk_hash_t h);
    uint64_t (*add_batch)(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new);
    size_t (*contains_batch)(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out);
    void (*union_into)(bk_filter_t *dst, const bk_filter_t *src);
    uint64_t (*add_hash_batch)(bk_filter_t *f, const bk_hash_t *hashes, size_t n, bool *was_new);
    size_t (*contains_hash_batch)(const bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                  bool *out);
    /* sets f's one-key calls (add_key, contains_key, contains_hash) */
    void (*bind)(bk_filter_t *f);
    /* The payload byte offsets of the 8-byte words (or lines) a key's
     * probes read, into off (at most BKI_MAX_READS, repeats allowed); their
     * count. What a paged file checks before a key's probe trusts them
     * (pages.c). NULL: the kind's file is checked whole when loaded. */
    uint32_t (*reads)(const bk_filter_t *f, bk_hash_t h, uint64_t *off);
} bki_kind_ops_t;
#define BKI_MAX_READS 64u

/* The operations of a single-array kind, from array.c's table; NULL
 * for the others. */
BKI_HIDDEN const bki_kind_ops_t *bki_kind_ops(bk_kind_t kind);
extern BKI_HIDDEN const bki_kind_ops_t bki_blocked_ops, bki_blocked2_ops, bki_classic_ops,
    bki_counting_ops, bki_precise_ops, bki_split_ops, bki_redisbloom_ops;
/* The prefetch of a kind whose key lies in one 64-byte line (blocked.c). */
BKI_HIDDEN void bki_prefetch_line(const bk_filter_t *f, bk_hash_t h);
/* Its reads: the one line (blocked.c). */
BKI_HIDDEN uint32_t bki_reads_line(const bk_filter_t *f, bk_hash_t h, uint64_t *off);

/* The layout of a kind, from its row in kinds.c; NULL for kinds without a
 * single payload (scalable, window, cuckoo, default, unknown). */
BKI_HIDDEN const bki_layout_t *bki_layout_of(bk_kind_t kind);
/* Whether kind is a single-array filter kind (blocked, classic, counting). */
BKI_HIDDEN bool bki_layout_is_filter(bk_kind_t kind);
/* Whether a filter of this kind may make k probes per key per line. */
BKI_HIDDEN bool bki_layout_k_ok(bk_kind_t kind, uint32_t k);
/* Rounds a requested cell count up to the kind's unit; 0 on overflow, for
 * cells == 0, or past the payload limit. */
BKI_HIDDEN uint64_t bki_layout_round_cells(bk_kind_t kind, uint64_t cells);
/* Payload bytes for cells cells: exactly cells * cell_bits / 8 for filters,
 * rounded up to whole 64-byte lines for bitmaps. 0 if cells is not a
 * valid count for the kind (the file format's check). */
BKI_HIDDEN uint64_t bki_layout_bytes(bk_kind_t kind, uint64_t cells);
/* 64-byte lines of a lined kind's payload (0 for classic and bitmaps). */
BKI_HIDDEN uint64_t bki_layout_lines(bk_kind_t kind, uint64_t cells);

/* The 16 per-lane odd multipliers of the in-line probe scheme shared by
 * blocked and counting filters. Fixed forever: part of the format. */
extern BKI_HIDDEN const uint32_t bki_lane_salt[BKI_LINE_LANES];

/* The in-line probe scheme (the full description is at the top of
 * blocked.c): probe i of a key goes to 32-bit lane (first + i * stride)
 * mod 16 of its line, and within the lane to the slot picked by the top
 * bits of x * salt[lane]. */
typedef struct bki_lanes {
    uint32_t x, first, stride;
} bki_lanes_t;

static inline bki_lanes_t bki_lanes_of(uint64_t lo)
{
    bki_lanes_t l;
    l.x = (uint32_t)lo;
    l.first = (uint32_t)(lo >> 32) & 15u;
    l.stride = ((uint32_t)(lo >> 36) & 7u) * 2u + 1u;
    return l;
}

static inline uint32_t bki_lane(bki_lanes_t l, uint32_t i)
{
    return (l.first + i * l.stride) & 15u;
}

/* A key's 64-byte line in a lined payload, picked by the hash's high half. */
static inline uint32_t *bki_line_of(const bk_filter_t *f, uint64_t hi)
{
    return (uint32_t *)(void *)(f->data + bki_reduce(hi, f->lines) * BKI_LINE_BYTES);
}

/* ==== rung 2: the kinds ================================================== */

/* ---- split.c: 8 bits in one 32-byte block (kind table operations and
 * batches as for blocked below) ---- */
BKI_HIDDEN bool bki_split_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_split_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_split_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_split_prefetch(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN uint64_t bki_split_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                        bool *was_new);
BKI_HIDDEN size_t bki_split_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                           bool *out);
BKI_HIDDEN uint64_t bki_split_add_hash_batch(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                             bool *was_new);
BKI_HIDDEN size_t bki_split_contains_hash_batch(const bk_filter_t *f, const bk_hash_t *hashes,
                                                size_t n, bool *out);

/* ---- blocked.c ---- */
BKI_HIDDEN bool bki_blocked_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_blocked_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_blocked_contains(const bk_filter_t *f, bk_hash_t h);
/* blocked2: k probes in each of two lines (blocked.c); the batch calls
 * run the generic pipeline with the prefetch below. */
BKI_HIDDEN bool bki_blocked2_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_blocked2_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_blocked2_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_blocked2_prefetch(const bk_filter_t *f, bk_hash_t h);
/* Sets f->add_key, f->contains_key and f->contains_hash to a blocked or
 * blocked2 filter's own one-key calls (key hashed and probed in one call;
 * the add counts a new key in f's items) and pre-hashed lookup, for its
 * hash and the instruction set cpu.c chose now, and points f->lane_rows at
 * the AVX2 probe's active-lane rows for f->k. The kind table's bind
 * (bki_array_bind calls it). */
BKI_HIDDEN void bki_blocked_bind(bk_filter_t *f);
/* The same for a split filter (split.c). */
BKI_HIDDEN void bki_split_bind(bk_filter_t *f);
/* Batched lookup / add for a blocked filter (keys non-NULL when n > 0; out
 * non-NULL, was_new may be NULL): the batch pipeline of batch.h with the
 * probe inlined. Return the hits / new keys; the item count is untouched. */
BKI_HIDDEN size_t bki_blocked_contains_batch(const bk_filter_t *f, const bk_key_t *keys,
                                             size_t n, bool *out);
BKI_HIDDEN uint64_t bki_blocked_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                          bool *was_new);
/* The same for keys already hashed (hashes non-NULL when n > 0). */
BKI_HIDDEN size_t bki_blocked_contains_hash_batch(const bk_filter_t *f, const bk_hash_t *hashes,
                                                  size_t n, bool *out);
BKI_HIDDEN uint64_t bki_blocked_add_hash_batch(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                               bool *was_new);

/* ---- bloom.c (classic) ---- */
BKI_HIDDEN bool bki_classic_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_classic_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_classic_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_classic_prefetch(const bk_filter_t *f, bk_hash_t h);

/* ---- precise.c (classic layout, independently hashed probes) ---- */
BKI_HIDDEN bool bki_precise_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_precise_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_precise_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_precise_prefetch(const bk_filter_t *f, bk_hash_t h);
/* A key's first probe values, shared by every precise filter: a lookup in
 * a chain of many computes them once (a miss stops at the first clear bit,
 * after two probes on average). */
#define BKI_PRECISE_VALUES 4
BKI_HIDDEN void bki_precise_values(bk_hash_t h, uint64_t u[BKI_PRECISE_VALUES]);
BKI_HIDDEN bool bki_precise_contains_values(const bk_filter_t *f, bk_hash_t h,
                                            const uint64_t u[BKI_PRECISE_VALUES]);

/* ---- counting.c ---- */
BKI_HIDDEN bool bki_counting_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_counting_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bk_status_t bki_counting_remove(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN unsigned bki_counting_count(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_counting_union(bk_filter_t *dst, const bk_filter_t *src);

/* ---- rbloom.c (RedisBloom links: its bit array, probes and sizing) ---- */
BKI_HIDDEN bool bki_rb_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_rb_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_rb_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_rb_prefetch(const bk_filter_t *f, bk_hash_t h);
/* RedisBloom's bits per entry for an error rate. */
BKI_HIDDEN double bki_rb_bpe(double error);
/* A new link's geometry by RedisBloom's rule (its bloom_init) for the
 * chain options: *entries may grow (without NOROUND, the power-of-two
 * rounding's spare bits are counted as room). BK_EFULL for what RedisBloom
 * would refuse (an error outside (0, 1), ENTS_IS_BITS, too many bits or
 * hashes for the library). */
BKI_HIDDEN bk_status_t bki_rb_geometry(uint64_t *entries, double error, uint32_t options,
                                       uint64_t *bits, uint32_t *hashes, uint32_t *n2,
                                       double *bpe);

/* ---- cuckoo.c as a bk_filter_t (the cuckoo kind, native flavour) ---- */
BKI_HIDDEN bk_status_t bki_cuckoo_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new);
BKI_HIDDEN bool bki_cuckoo_contains_hash(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN size_t bki_cuckoo_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                            bool *out);
/* BK_ENOTFOUND if no fingerprint of the key is there. */
BKI_HIDDEN bk_status_t bki_cuckoo_remove_hash(bk_filter_t *f, bk_hash_t h);
/* The same by key (bk_filter_remove's path for the kind). */
BKI_HIDDEN bk_status_t bki_cuckoo_remove_key(bk_filter_t *f, const void *key, size_t len);
/* bk_filter_remove_u64 for the kind: the planned geometry's one-key path
 * with the key in a register, else its 8 little-endian bytes through the
 * general remove; reached as remove_key is (not read-only, not paged). */
BKI_HIDDEN bk_status_t bki_cuckoo_remove_u64(bk_filter_t *f, uint64_t key);
BKI_HIDDEN unsigned bki_cuckoo_counter(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bk_status_t bki_cuckoo_clear(bk_filter_t *f);
/* Wraps c in a new handle of the cuckoo kind `kind` (the registry's
 * number, from the caller's options, file or source filter) that owns it
 * (c freed on BK_ENOMEM), keyed by `hash` (one bki_cuckoo_hash_ok
 * accepts: a native filter's bk_cuckoo_* calls hash with XXH3, the
 * handle's with its own id). */
BKI_HIDDEN bk_status_t bki_cuckoo_wrap(bk_filter_t **out, struct bk_cuckoo *c, bk_kind_t kind,
                                       bk_hash_id_t hash);
/* The hashes a cuckoo kind's handle takes: XXH3-128 and the default (the
 * same but for 8-byte keys, mixed): both give a full 128 bits, the
 * buckets from the low half and the fingerprint from the high. */
BKI_HIDDEN bool bki_cuckoo_hash_ok(bk_hash_id_t hash);
BKI_HIDDEN bk_status_t bki_cuckoo_filter_create(bk_filter_t **out, uint64_t capacity,
                                                double fpr, const bk_options_t *o);
BKI_HIDDEN bk_status_t bki_cuckoo_filter_clone(bk_filter_t **out, const bk_filter_t *f);
BKI_HIDDEN void bki_cuckoo_filter_free(bk_filter_t *f);
BKI_HIDDEN bk_filter_t *bki_cuckoo_filter_defrag(bk_filter_t *f, bki_mover_t *mv);
BKI_HIDDEN void bki_cuckoo_filter_info(const bk_filter_t *f, bk_filter_info_t *out);
BKI_HIDDEN void bki_cuckoo_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out);
BKI_HIDDEN uint64_t bki_cuckoo_items(const bk_filter_t *f);
/* The payload offsets (in its first sub-filter, the one a paged file
 * holds) of the first and last byte of both buckets of h: what a lookup,
 * a remove or an add that does not kick reads (pages.c). */
BKI_HIDDEN uint32_t bki_cuckoo_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off);
/* The first sub-filter's bytes (*len of them); true while it is the only
 * one (a paged file holds a filter that never grew). */
BKI_HIDDEN bool bki_cuckoo_first_payload(const bk_filter_t *f, uint8_t **data, uint64_t *len);
/* A filter loaded into memory of its own whose first sub-filter borrows
 * that memory may grow (the later ones are allocated). */
BKI_HIDDEN void bki_cuckoo_may_grow(bk_filter_t *f);
/* bk_filter_info without reading the slots: the fill from the item count
 * (what bk_filter_info_fast gives of a paged file not read yet). */
BKI_HIDDEN void bki_cuckoo_info_estimated(const bk_filter_t *f, bk_filter_info_t *out);

/* ==== rung 3: array.c (single-array dispatch) ============================ */

/* Payloads up to this many bytes share one allocation with their struct. */
#define BKI_INLINE_PAYLOAD_MAX 512u

/* A single-array filter of the given geometry (kind BLOCKED, CLASSIC or
 * COUNTING; cells already rounded). With borrow == NULL the payload is
 * allocated and zeroed; otherwise the filter uses borrow's bytes (at least
 * the kind's payload size, 64-byte aligned) and never frees them.
 * BK_EINVAL for a geometry the kind cannot have, BK_ENOMEM. */
BKI_HIDDEN bk_status_t bki_array_new(bk_filter_t **out, bk_kind_t kind, uint64_t cells,
                                     uint32_t k, bk_hash_id_t hash, uint64_t seed,
                                     uint8_t *borrow);
/* Frees the payload (unless borrowed) and the struct. */
BKI_HIDDEN void bki_array_free(bk_filter_t *f);
/* bk_filter_defrag for a single array: where f is now. */
BKI_HIDDEN bk_filter_t *bki_array_defrag(bk_filter_t *f, bki_mover_t *mv);
/* Binds a single-array filter's one-key calls by its kind's row (the
 * generic paths for kinds without their own), no add when it is read-only;
 * composites are left as they bound themselves. Called when a filter is
 * made and when its read-only flag changes. */
BKI_HIDDEN void bki_array_bind(bk_filter_t *f);
/* Adds / looks up a pre-hashed key; add counts a new key in f's items. */
BKI_HIDDEN bool bki_array_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_array_contains(const bk_filter_t *f, bk_hash_t h);
/* BK_EKIND for kinds without an atomic add. */
BKI_HIDDEN bk_status_t bki_array_add_atomic(bk_filter_t *f, bk_hash_t h, bool *was_new);
BKI_HIDDEN bk_status_t bki_array_remove(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN unsigned bki_array_counter(const bk_filter_t *f, bk_hash_t h);
/* The batch calls for one array (the public calls' contracts; adds count
 * the new keys in f's items). */
BKI_HIDDEN uint64_t bki_array_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                        bool *was_new);
BKI_HIDDEN size_t bki_array_contains_batch(const bk_filter_t *f, const bk_key_t *keys,
                                           size_t n, bool *out);
BKI_HIDDEN uint64_t bki_array_add_hash_batch(bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                             bool *was_new);
BKI_HIDDEN size_t bki_array_contains_hash_batch(const bk_filter_t *f, const bk_hash_t *hashes,
                                                size_t n, bool *out);
BKI_HIDDEN void bki_array_clear(bk_filter_t *f);
BKI_HIDDEN bk_status_t bki_array_union(bk_filter_t *dst, const bk_filter_t *src);
BKI_HIDDEN bk_status_t bki_array_clone(bk_filter_t **out, const bk_filter_t *f);
BKI_HIDDEN void bki_array_info(const bk_filter_t *f, bk_filter_info_t *out);
/* bki_array_info with the set cells expected from the item count instead
 * of counted: no byte of the payload read. */
BKI_HIDDEN void bki_array_info_estimated(const bk_filter_t *f, bk_filter_info_t *out);
/* A single array's shape (bk_filter_shape); the common fields of every
 * kind's, which a composite's shape starts from. */
BKI_HIDDEN void bki_array_shape(const bk_filter_t *f, bk_filter_shape_t *out);
/* Popcount over the payload (counting: non-zero counters). */
BKI_HIDDEN uint64_t bki_cells_set(const bk_filter_t *f);

/* ==== rung 4: scalable.c ================================================= */

/* Longest chain, the file format's part limit: growth 1 chains of capacity
 * 1 reach thousands of sub-filters, and a key's lookup visits each, so a
 * size cap (max_bytes) is the practical bound. bki_scalable_max_subs (at
 * most this) lets tests reach the limit quickly. */
#define BKI_SCALABLE_MAX_SUBS 65536u
extern BKI_HIDDEN uint32_t bki_scalable_max_subs;

/* The fields that make a chain, as created, loaded or cloned. */
typedef struct bki_chain {
    bk_hash_id_t hash;
    uint64_t seed;
    uint64_t capacity; /* of the first sub-filter */
    double fpr;        /* p asked for the whole chain */
    uint64_t items;
    bk_kind_t sub_kind;
    double growth, tightening;
    bool nonscaling, first_error_as_given;
    uint64_t max_bytes; /* 0: no cap */
    uint32_t rb_options; /* RedisBloom chains (of RedisBloom's links) */
} bki_chain_t;

/* The one place a scalable filter's outer struct is assembled: an empty
 * chain (no sub-filters yet) with room for subs_cap of them. */
BKI_HIDDEN bk_status_t bki_scalable_shell(bk_filter_t **out, const bki_chain_t *c,
                                          uint32_t subs_cap);
/* Links sub-filter s as the chain's newest (room must have been made). */
BKI_HIDDEN void bki_scalable_append(bk_filter_t *f, bk_filter_t *s);
BKI_HIDDEN void bki_scalable_free(bk_filter_t *f);
BKI_HIDDEN bk_filter_t *bki_scalable_defrag(bk_filter_t *f, bki_mover_t *mv);
BKI_HIDDEN bk_status_t bki_scalable_create(bk_filter_t **out, uint64_t capacity, double fpr,
                                           const bk_options_t *opts, bk_hash_id_t hash,
                                           uint64_t seed);
BKI_HIDDEN bk_status_t bki_scalable_add(bk_filter_t *f, bk_hash_t h, bool *was_new);
BKI_HIDDEN bool bki_scalable_contains(const bk_filter_t *f, bk_hash_t h);
/* Capacity and error of sub-filter i of a scalable filter. */
BKI_HIDDEN uint64_t bki_scalable_sub_capacity(const bk_filter_t *f, uint32_t i);
BKI_HIDDEN double bki_scalable_sub_fpr(const bk_filter_t *f, uint32_t i);
/* The whole-filter operations for a chain. */
BKI_HIDDEN bk_status_t bki_scalable_clear(bk_filter_t *f);
BKI_HIDDEN bk_status_t bki_scalable_union(bk_filter_t *dst, const bk_filter_t *src);
BKI_HIDDEN bk_status_t bki_scalable_clone(bk_filter_t **out, const bk_filter_t *f);
BKI_HIDDEN void bki_scalable_info(const bk_filter_t *f, bk_filter_info_t *out);
BKI_HIDDEN void bki_scalable_shape(const bk_filter_t *f, bk_filter_shape_t *out);

/* ==== rung 5: pages.c (a filter read from a paged file; pages.h) ========= */

/* The pages key h reads in f (f->pages set) checked; a write marks them
 * for the next save. false if one is damaged (then its bits read as ones:
 * a lookup answers "present"; an add must be refused). */
BKI_HIDDEN bool bki_pages_key(const bk_filter_t *f, bk_hash_t h, bool write);
BKI_HIDDEN bool bki_pages_keys(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool write);
BKI_HIDDEN bool bki_pages_hashes(const bk_filter_t *f, const bk_hash_t *hashes, size_t n,
                                 bool write);
/* Every page not yet checked, checked (the whole file read): for the
 * operations that read the whole payload. BK_OK, or the damage. BK_OK
 * for a filter without pages. */
BKI_HIDDEN bk_status_t bki_pages_all(const bk_filter_t *f, const char **why);
/* Every page counted as written (a clear changes them all). */
BKI_HIDDEN void bki_pages_mark_all_written(const bk_filter_t *f);
BKI_HIDDEN void bki_pages_free(struct bki_pages *pg);

#endif /* BLOOMKIT_INTERNAL_H */
