/*
 * Exact line set within a byte budget (see lineset.h).
 *
 * Record layout in a chunk: u32 stamp, u32 length, then the bytes, padded
 * to a multiple of 4 so the stamp is aligned. Records are appended in insertion
 * order and a record never spans chunks, so walking the chunks in order
 * walks the lines in the order they were first inserted.
 *
 * The table keeps the full 64-bit hash beside each record pointer, so a
 * probe that meets a different line is rejected without touching the
 * record. The load factor stays at or under 3/4; growing doubles the table,
 * and while growing the old and new tables exist together, which the
 * budget check accounts for.
 */
#define _GNU_SOURCE
#include "lineset.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REC_HDR 8u
/* Records start 4-byte aligned so the stamp can be used in place. */
#define REC_SIZE(len) ((REC_HDR + (size_t)(len) + 3) & ~(size_t)3)

typedef struct chunk {
    struct chunk *next;
    size_t used; /* bytes used after the header */
    size_t cap;  /* bytes available after the header */
    size_t maplen;
} chunk_t;

typedef struct slot {
    uint64_t h;
    char *rec; /* NULL: empty */
} slot_t;

struct bkc_lineset {
    size_t budget;
    size_t bytes;      /* chunk mappings + table mapping */
    size_t chunk_size; /* usual mapping size of a chunk */
    chunk_t *first; /* all chunks, in order */
    chunk_t *cur;          /* the one being filled; those after it are empty */
    slot_t *table;
    size_t table_len; /* slots, a power of two */
    size_t table_bytes;
    uint64_t count;
};

static size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    if (n > SIZE_MAX - pg)
        return 0;
    return (n + pg - 1) / pg * pg;
}

static void *map_zeroed(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Lookups land on random slots: 2 MB pages save a TLB miss on most. */
    if (n >= ((size_t)2 << 20))
        (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

bkc_lineset_t *bkc_lineset_new(size_t budget)
{
    bkc_lineset_t *s = map_zeroed(sizeof *s);
    if (!s)
        return NULL;
    s->budget = budget;
    /* Chunks of about 1/32 of the budget, at most 4 MiB: big enough that
     * the per-chunk waste and mmap calls do not matter, small enough that
     * the last, partly used chunk is a small part of the budget. */
    size_t cs = budget / 32;
    if (cs > ((size_t)4 << 20))
        cs = (size_t)4 << 20;
    s->chunk_size = page_round(cs);
    s->table_len = 256;
    s->table_bytes = s->table_len * sizeof(slot_t);
    s->table = map_zeroed(s->table_bytes);
    if (!s->table) {
        munmap(s, sizeof *s);
        return NULL;
    }
    s->bytes = s->table_bytes;
    return s;
}

void bkc_lineset_free(bkc_lineset_t *s)
{
    if (!s)
        return;
    chunk_t *c = s->first;
    while (c) {
        chunk_t *next = c->next;
        munmap(c, c->maplen);
        c = next;
    }
    if (s->table)
        munmap(s->table, s->table_bytes);
    munmap(s, sizeof *s);
}

uint64_t bkc_lineset_count(const bkc_lineset_t *s)
{
    return s->count;
}

size_t bkc_lineset_bytes(const bkc_lineset_t *s)
{
    return s->bytes;
}

static int rec_equal(const char *rec, const char *line, size_t len)
{
    uint32_t rlen;
    memcpy(&rlen, rec + 4, 4);
    return rlen == len && (len == 0 || memcmp(rec + REC_HDR, line, len) == 0);
}

/* Index of the slot holding the line, or of the empty slot where it would
 * go. The table is never full, so the loop ends. */
static size_t find_slot(const bkc_lineset_t *s, uint64_t h, const char *line, size_t len)
{
    size_t mask = s->table_len - 1;
    size_t i = (size_t)h & mask;
    for (;;) {
        const slot_t *sl = &s->table[i];
        if (!sl->rec)
            return i;
        if (sl->h == h && rec_equal(sl->rec, line, len))
            return i;
        i = (i + 1) & mask;
    }
}

void bkc_lineset_prefetch(const bkc_lineset_t *s, uint64_t h)
{
    __builtin_prefetch(&s->table[(size_t)h & (s->table_len - 1)]);
}

uint32_t *bkc_lineset_stamp(bkc_lineset_t *s, uint64_t h, const char *line, size_t len)
{
    size_t i = find_slot(s, h, line, len);
    return s->table[i].rec ? (uint32_t *)(void *)s->table[i].rec : NULL;
}

/* Moves every entry into a table of nlen slots. Old and new table coexist
 * while rehashing, which the budget check counts. */
static int rehash_to(bkc_lineset_t *s, size_t nlen)
{
    size_t nbytes = nlen * sizeof(slot_t);
    if (s->bytes + nbytes > s->budget)
        return BKC_SET_FULL;
    slot_t *nt = map_zeroed(nbytes);
    if (!nt)
        return BKC_SET_NOMEM;
    size_t mask = nlen - 1;
    for (size_t i = 0; i < s->table_len; i++) {
        if (!s->table[i].rec)
            continue;
        size_t j = (size_t)s->table[i].h & mask;
        while (nt[j].rec)
            j = (j + 1) & mask;
        nt[j] = s->table[i];
    }
    munmap(s->table, s->table_bytes);
    s->bytes = s->bytes - s->table_bytes + nbytes;
    s->table = nt;
    s->table_len = nlen;
    s->table_bytes = nbytes;
    return 0;
}

static int grow_table(bkc_lineset_t *s)
{
    return rehash_to(s, s->table_len * 2);
}

/* Slots for `lines` lines at a load of at most 3/4: a power of two. */
static size_t slots_for(uint64_t lines)
{
    size_t len = 256;
    while ((uint64_t)len * 3 < lines * 4 && len < ((size_t)1 << 40))
        len *= 2;
    return len;
}

size_t bkc_lineset_table_bytes(uint64_t lines)
{
    return slots_for(lines) * sizeof(slot_t);
}

int bkc_lineset_reserve(bkc_lineset_t *s, uint64_t lines)
{
    size_t len = slots_for(lines);
    return len > s->table_len ? rehash_to(s, len) : 0;
}

void bkc_lineset_set_budget(bkc_lineset_t *s, size_t budget)
{
    s->budget = budget;
}

static chunk_t *map_chunk(bkc_lineset_t *s, size_t maplen)
{
    chunk_t *c = map_zeroed(maplen);
    if (!c)
        return NULL;
    c->maplen = maplen;
    c->cap = maplen - sizeof(chunk_t);
    c->used = 0;
    c->next = NULL;
    s->bytes += maplen;
    return c;
}

static char *alloc_record(bkc_lineset_t *s, size_t need)
{
    chunk_t *c = s->cur;
    if (!c || c->cap - c->used < need) {
        chunk_t *next = c ? c->next : s->first;
        if (next && next->cap >= need) {
            c = next; /* kept from before a reset */
        } else {
            size_t maplen = need + sizeof(chunk_t) > s->chunk_size
                                ? page_round(need + sizeof(chunk_t))
                                : s->chunk_size;
            if (maplen == 0)
                return NULL;
            /* The first line is always taken (see lineset.h). */
            if (s->count > 0 && s->bytes + maplen > s->budget)
                return (char *)-1;
            chunk_t *nc = map_chunk(s, maplen);
            if (!nc)
                return NULL;
            /* Insert after the current chunk, keeping later empty ones. */
            if (c) {
                nc->next = c->next;
                c->next = nc;
            } else {
                nc->next = s->first;
                s->first = nc;
            }
            c = nc;
        }
        s->cur = c;
    }
    char *rec = (char *)(c + 1) + c->used;
    c->used += need;
    return rec;
}

void bkc_lineset_reset(bkc_lineset_t *s)
{
    /* Keep the usual-size chunks; give oversized ones back. */
    chunk_t **pp = &s->first;
    while (*pp) {
        chunk_t *c = *pp;
        if (c->maplen != s->chunk_size) {
            *pp = c->next;
            s->bytes -= c->maplen;
            munmap(c, c->maplen);
            continue;
        }
        c->used = 0;
        pp = &c->next;
    }
    s->cur = NULL;
    memset(s->table, 0, s->table_bytes);
    s->count = 0;
}

int bkc_lineset_insert(bkc_lineset_t *s, uint64_t h, const char *line, size_t len)
{
    if (len > UINT32_MAX - 16)
        return BKC_SET_NOMEM;
    size_t i = find_slot(s, h, line, len);
    if (s->table[i].rec)
        return BKC_SET_OLD;
    if ((s->count + 1) * 4 > (uint64_t)s->table_len * 3) {
        int rc = grow_table(s);
        if (rc != 0)
            return rc;
        i = find_slot(s, h, line, len);
    }
    char *rec = alloc_record(s, REC_SIZE(len));
    if (rec == (char *)-1)
        return BKC_SET_FULL;
    if (!rec)
        return BKC_SET_NOMEM;
    uint32_t stamp = 0, rlen = (uint32_t)len;
    memcpy(rec, &stamp, 4);
    memcpy(rec + 4, &rlen, 4);
    if (len)
        memcpy(rec + REC_HDR, line, len);
    s->table[i].h = h;
    s->table[i].rec = rec;
    s->count++;
    return BKC_SET_NEW;
}

int bkc_lineset_foreach(const bkc_lineset_t *s,
                        int (*fn)(void *ctx, const char *line, size_t len, uint32_t stamp),
                        void *ctx)
{
    for (const chunk_t *c = s->first; c; c = c->next) {
        const char *p = (const char *)(c + 1);
        const char *end = p + c->used;
        while (p < end) {
            uint32_t stamp, len;
            memcpy(&stamp, p, 4);
            memcpy(&len, p + 4, 4);
            int rc = fn(ctx, p + REC_HDR, len, stamp);
            if (rc)
                return rc;
            p += REC_SIZE(len);
        }
    }
    return 0;
}
