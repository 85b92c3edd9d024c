/*
 * The exact join when the smallest input fits in memory as it is on disk
 * (see join.h): every input a named regular file, no --normalize or
 * --ignore-case (a line is its own key), and the smallest input's bytes
 * plus an index of its lines within join->mem.
 *
 * The general join (join.c) copies the smallest input's lines into a set,
 * and with several threads each thread reads and hashes every line of
 * every input to keep its own shard. Here the smallest input is mapped
 * (its pages are the page cache's: nothing is copied, and no fresh memory
 * has to be zeroed by the kernel for it), the index holds one 8-byte word
 * a slot (the line's offset, a tag of its hash and its stamp: 11.4 bytes
 * a line at the table's load), and every phase
 * splits its input by byte ranges, so each line is read and hashed once,
 * by one thread:
 *
 *  1. count: the smallest input's lines, and whether each fits the index
 *     (a longer line, or more inputs than the stamp holds: not taken);
 *  2. build: the lines go into one shared open-addressing table, claimed
 *     slot by slot with compare-and-swap; a line seen again keeps its
 *     earliest offset;
 *  3. stamp, once per other input (read with pread in chunks, so its pages
 *     are not mapped and do not count as this process's memory): a line
 *     found in the table moves its stamp from i-1 to i with
 *     compare-and-swap, so a line repeated in the input counts once;
 *  4. emit: the entries stamped by every input, in the order of first
 *     appearance in the smallest input, the same on every run and every
 *     thread count: bucketed by offset into parts of the input, each part
 *     sorted and formatted by a thread of its own and the parts written in
 *     order ("emitting in order" below). Counting alone (-c) needs no
 *     order: the threads count their slices of the table.
 *
 * A line is what bkc_reader_next gives: it ends at "\n", a "\r" before the
 * "\n" is dropped, and a last line without "\n" is a line as it is.
 */
#define _GNU_SOURCE
#include "join.h"
#include "join_source.h"
#include "mapguard.h"

#define XXH_INLINE_ALL
#include <xxhash.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A slot is one word: the line's offset (40 bits), a tag (17 bits: 16 of
 * the line's hash and a 1, so a full slot is never 0) and the stamp (7 bits:
 * the inputs a line has been seen in, less one); 0 is an empty slot. The
 * line's length is not kept: the mapped input has it, where the line is
 * read anyway to compare or print it. Half the 16 bytes a slot took with
 * the whole hash and the length beside the offset: half the fresh memory
 * the kernel zeroes for the table (a fifth of the join's CPU time at 10M
 * lines), and the input that fits --memory with it is larger. The tag
 * keeps the byte comparisons to lines that match (a stranger passes it
 * once in 65,536). */
#define OFF_BITS 40
#define TAG_BITS 17
#define STAMP_BITS 7
#define MAX_OFF ((UINT64_C(1) << OFF_BITS) - 1)
#define MAX_LEN ((size_t)65535) /* a longer line: the general join's */
#define MAX_INPUTS (1u << STAMP_BITS)
#define TAG_SHIFT STAMP_BITS
#define TAG_MASK (((UINT64_C(1) << TAG_BITS) - 1) << TAG_SHIFT)

/* Table load at most 7/10: a lookup of an absent line scans a few slots. */
#define LOAD_NUM 10
#define LOAD_DEN 7

/* Bytes each thread reads at a time from the other inputs. */
#define CHUNK ((size_t)1 << 20)

/* Lines hashed together before their slots are touched, so the cache
 * misses of a group overlap. */
#define GROUP 32

/* Inputs smaller than this run on one thread: starting threads would
 * cost more than it saves. */
#define SMALL ((uint64_t)4 << 20)

typedef struct table {
    uint64_t *slots;
    uint64_t nslots;
    size_t bytes;
    uint64_t hash_mask; /* all ones; 0 with BLOOMKIT_JOIN_COLLIDE (tests:
                           every line then has one home slot and one tag,
                           so every lookup compares the bytes of every
                           entry before it) */
} table_t;

/* The tag bits of hash h, in place: its low 16 bits (the home slot is
 * taken from its high bits) and the bit above them. */
static inline uint64_t tag_of(uint64_t h)
{
    return ((h & 0xFFFF) | 0x10000) << TAG_SHIFT;
}
static inline uint64_t pack(uint64_t off, uint64_t tag, uint32_t stamp)
{
    return off << (TAG_BITS + STAMP_BITS) | tag | stamp;
}
static inline uint64_t meta_off(uint64_t m)
{
    return m >> (TAG_BITS + STAMP_BITS);
}
static inline uint32_t meta_stamp(uint64_t m)
{
    return (uint32_t)(m & (MAX_INPUTS - 1));
}

/* The table's own hash, used nowhere else: XXH3's 64-bit form, which
 * mixes a short line in fewer steps than the 128-bit one the other joins
 * share (user time of 2 x 10M URL lines 1.07 -> 1.00 s, 6 alternating
 * runs). */
static inline uint64_t line_hash(uint64_t seed, const char *line, size_t len)
{
    return XXH3_64bits_withSeed(line, len, seed);
}

/* The home slot: h scaled to [0, nslots) by multiply-shift (any table
 * size, no division). */
__extension__ typedef unsigned __int128 u128;
static inline uint64_t home_of(const table_t *t, uint64_t h)
{
    return (uint64_t)(((u128)h * t->nslots) >> 64);
}

static inline uint64_t next_slot(const table_t *t, uint64_t i)
{
    return i + 1 == t->nslots ? 0 : i + 1;
}

/* One line of the mapped input from p (before end): its bytes and length
 * as the reader gives them; returns where the next line starts. */
static inline const char *map_line(const char *p, const char *end, size_t *len)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) {
        *len = (size_t)(end - p);
        return end;
    }
    size_t n = (size_t)(nl - p);
    *len = n > 0 && p[n - 1] == '\r' ? n - 1 : n;
    return nl + 1;
}

/* ---- the smallest input, mapped ---- */

typedef struct mapped {
    const char *base;
    uint64_t size;
    const char *path;
} mapped_t;

/* Whether the mapped input's line at offset `at` (as map_line reads it) is
 * line[0..len): its bytes, then the end of that line right after them ("\n"
 * after a last byte that is not "\r", "\r\n", or the end of the input),
 * read no further than len + 2 bytes. */
static inline bool line_is(const mapped_t *m, uint64_t at, const char *line, size_t len)
{
    uint64_t left = m->size - at; /* at < size: entries are the input's lines */
    if (len > left)
        return false;
    const char *a = m->base + at;
    if (memcmp(a, line, len) != 0)
        return false;
    if (len == left)
        return true;
    if (a[len] == '\n')
        return len == 0 || a[len - 1] != '\r'; /* else that line is len - 1 bytes */
    return a[len] == '\r' && len + 1 < left && a[len + 1] == '\n';
}

/* Where the line containing byte pos - 1 ends (the start of a range that
 * begins near pos), in a mapping. */
static uint64_t map_split(const mapped_t *m, uint64_t pos)
{
    if (pos == 0 || pos >= m->size)
        return pos >= m->size ? m->size : 0;
    const char *nl = memchr(m->base + pos - 1, '\n', (size_t)(m->size - pos + 1));
    return nl ? (uint64_t)(nl + 1 - m->base) : m->size;
}

/* Claims a slot for the mapped input's line at off (hash h), or finds the
 * slot of an equal line and keeps the earlier offset of the two. Threads
 * insert at once, each slot claimed or changed whole with compare-and-swap.
 * The table always has free slots (sized from the line count). */
static void insert(table_t *t, const mapped_t *a, uint64_t h, uint64_t off, size_t len, bool once)
{
    uint64_t tag = tag_of(h);
    for (uint64_t i = home_of(t, h);; i = next_slot(t, i)) {
        uint64_t *s = &t->slots[i];
        uint64_t m = __atomic_load_n(s, __ATOMIC_ACQUIRE);
        if (m == 0) {
            if (__atomic_compare_exchange_n(s, &m, pack(off, tag, 0), false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                return;
            /* another thread claimed it: m is its entry, looked at below */
        }
        if ((m & TAG_MASK) != tag || !line_is(a, meta_off(m), a->base + off, len))
            continue;
        /* the earlier offset kept; once --lines: marked as seen twice (a
         * single input's entries are emitted with stamp 0) */
        for (;;) {
            uint64_t want =
                pack(off < meta_off(m) ? off : meta_off(m), tag, once ? 1 : meta_stamp(m));
            if (want == m ||
                __atomic_compare_exchange_n(s, &m, want, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                break;
        }
        return;
    }
}

#define NO_SLOT UINT64_MAX

/* The first slot from i on whose entry has tag `tag`, or NO_SLOT if an
 * empty slot comes first (no such line is in the table). */
static inline uint64_t find_tag(const table_t *t, uint64_t i, uint64_t tag)
{
    for (;; i = next_slot(t, i)) {
        uint64_t m = __atomic_load_n(&t->slots[i], __ATOMIC_RELAXED);
        if ((m & TAG_MASK) == tag)
            return i;
        if (m == 0)
            return NO_SLOT;
    }
}

/* Moves the stamp of line[0..len) (tag `tag`, first found at slot i) from
 * `from` to from + 1 if it is in the table with that stamp; 1 if this call
 * moved it. */
static int stamp(table_t *t, const mapped_t *a, uint64_t i, uint64_t tag, const char *line,
                 size_t len, uint32_t from)
{
    for (; i != NO_SLOT; i = find_tag(t, next_slot(t, i), tag)) {
        uint64_t *s = &t->slots[i];
        uint64_t m = __atomic_load_n(s, __ATOMIC_RELAXED);
        if (!line_is(a, meta_off(m), line, len))
            continue;
        while (meta_stamp(m) == from)
            if (__atomic_compare_exchange_n(s, &m, m + 1, false, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                return 1;
        return 0;
    }
    return 0;
}

/* ---- the other inputs, read in chunks ---- */

typedef struct chunk_reader {
    int fd;
    uint64_t pos, end; /* next byte to read, end of the range */
    char *buf;
    size_t start, fill;
    bool skipping; /* in a line longer than any in the table */
    int err;       /* errno of a failed read */
} chunk_reader_t;

/* Reads more of the range after what is buffered; 0 at its end. */
static ssize_t refill(chunk_reader_t *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->fill - r->start);
        r->fill -= r->start;
        r->start = 0;
    }
    if (r->fill == CHUNK) { /* one line fills the buffer: it can match nothing */
        r->fill = 0;
        r->skipping = true;
    }
    size_t want = CHUNK - r->fill;
    if (want > r->end - r->pos)
        want = (size_t)(r->end - r->pos);
    if (want == 0)
        return 0;
    ssize_t got;
    do
        got = pread(r->fd, r->buf + r->fill, want, (off_t)r->pos);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
        r->err = errno;
        return -1;
    }
    if (got == 0) /* the file shrank: its range ends here */
        r->end = r->pos;
    r->pos += (uint64_t)got;
    r->fill += (size_t)got;
    return got;
}

/* The next line of the range: 1, 0 at its end, -1 on a read error, or
 * LATER when the buffer holds no whole line and may_move is false (moving
 * the buffer would invalidate lines handed out before). Lines longer than
 * MAX_LEN are passed over (nothing in the table can equal them). */
enum { LATER = 2 };
static int chunk_next(chunk_reader_t *r, const char **line, size_t *len, bool may_move)
{
    for (;;) {
        char *p = r->buf + r->start;
        char *nl = memchr(p, '\n', r->fill - r->start);
        if (nl) {
            size_t n = (size_t)(nl - p);
            r->start += n + 1;
            if (r->skipping || n > MAX_LEN + 1) {
                r->skipping = false;
                continue;
            }
            *line = p;
            *len = n > 0 && p[n - 1] == '\r' ? n - 1 : n;
            return 1;
        }
        if (!may_move)
            return LATER;
        ssize_t got = refill(r);
        if (got < 0)
            return -1;
        if (got == 0) {
            size_t n = r->fill - r->start;
            bool skipped = r->skipping;
            r->start = r->fill;
            r->skipping = false;
            if (n == 0 || skipped)
                return 0;
            *line = r->buf + r->fill - n;
            *len = n;
            return 1;
        }
    }
}

/* The start of a range beginning near pos in a file read with pread:
 * just after the first "\n" at or after pos - 1. */
static int file_split(int fd, uint64_t size, uint64_t pos, uint64_t *out)
{
    if (pos == 0) {
        *out = 0;
        return 0;
    }
    char buf[4096];
    for (uint64_t at = pos - 1; at < size;) {
        ssize_t got = pread(fd, buf, sizeof buf, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? -1 : (*out = size, 0);
        const char *nl = memchr(buf, '\n', (size_t)got);
        if (nl) {
            *out = at + (uint64_t)(nl - buf) + 1;
            return 0;
        }
        at += (uint64_t)got;
    }
    *out = size;
    return 0;
}

/* ---- the phases, on threads ---- */

typedef struct run run_t;

typedef struct part {
    run_t *run;
    uint64_t lo, hi;   /* byte range of the input of the phase */
    uint64_t lines;    /* count: lines in the range; emit: common entries
                          in the slice */
    bool too_long;     /* count: a line longer than MAX_LEN */
    bool changed;      /* build: the range no longer holds what count saw */
    uint64_t moved;    /* stamp: stamps this thread moved */
    int err;           /* stamp: errno of a failed read */
    char *buf;         /* stamp: the chunk buffer */
    char *out;         /* emit: a part's common lines, formatted */
    size_t out_cap, buf_used;
} part_t;

/* The emit phase's state (see "emitting in order"). The common entries
 * are bucketed by offset into 2^part_bits parts of the mapped input, part
 * = off >> part_shift; per thread k and part q, at [k * parts + q]: how
 * many (counts) and where thread k writes its next one into sorted
 * (cursor). */
typedef struct emit_state {
    uint32_t n; /* inputs: an entry with stamp n - 1 is common */
    unsigned part_bits, part_shift;
    uint64_t *counts, *cursor;
    uint64_t *part_start; /* [q]: where part q begins in sorted; [parts]: all */
    uint64_t *sorted;     /* the entries, part by part; each part sorted by step 3 */
    uint64_t next_part;   /* the next part to take (atomic) */
    uint64_t next_out;    /* the part whose lines go out next */
    bool failed;          /* a write failed: the others stop writing */
    bool changed;         /* a part's lines outgrew its input's bytes */
    bool sorted_on_threads; /* steps 2 and 3 ran (else the serial way) */
    pthread_mutex_t mu;
    pthread_cond_t turn;
} emit_state_t;

struct run {
    bkc_join_t *join;
    mapped_t a;
    table_t t;
    uint64_t seed;
    unsigned threads;
    part_t *parts;
    /* stamp phase */
    int fd;
    uint32_t from;
    emit_state_t emit;
};

/* Whether the line of bytes [start, nl) before a "\n" at nl is longer than
 * MAX_LEN as the reader gives it (a "\r" before the "\n" dropped). */
static inline bool over_max(const char *base, uint64_t start, uint64_t nl)
{
    uint64_t n = nl - start;
    return n > MAX_LEN + 1 || (n == MAX_LEN + 1 && base[nl - 1] != '\r');
}

/* The part's lines, counted, and whether one is over MAX_LEN: the newlines
 * of each 64 bytes found at once (SSE2 compares, a popcount), a line
 * measured only where it ends in a block with none before it in the block
 * (every other is shorter than 64 bytes). With a call of memchr per line
 * the phase took 59-65 ms on 10M URLs (543 MB), now 39-54 ms: the rest is
 * the first touches of the mapped input's pages. */
static void *count_part(void *vp)
{
    part_t *p = vp;
    const char *base = p->run->a.base;
    uint64_t i = p->lo, hi = p->hi, start = p->lo, lines = 0;
    bool too_long = false;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n');
    for (; i + 64 <= hi; i += 64) {
        uint64_t m = 0;
        for (int k = 0; k < 4; k++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(base + i + 16 * k));
            m |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) << (16 * k);
        }
        if (!m)
            continue;
        lines += (uint64_t)__builtin_popcountll(m);
        too_long = too_long || over_max(base, start, i + (uint64_t)__builtin_ctzll(m));
        start = i + 64 - (uint64_t)__builtin_clzll(m); /* after the block's last "\n" */
    }
#endif
    for (const char *q; i < hi && (q = memchr(base + i, '\n', (size_t)(hi - i))) != NULL;) {
        uint64_t at = (uint64_t)(q - base);
        too_long = too_long || over_max(base, start, at);
        lines++;
        start = i = at + 1;
    }
    if (start < hi) { /* a last line without "\n": as it is */
        lines++;
        too_long = too_long || hi - start > MAX_LEN;
    }
    p->lines = lines;
    p->too_long = too_long;
    return NULL;
}

/* Inserts the lines of the part's range. Another program may rewrite the
 * file in place after count_part read it (the mapping shows its changes):
 * a range with more lines than were counted could fill the table, and a
 * line over MAX_LEN would not fit its entry, so either stops the part; a
 * range with fewer lines than counted is reported the same way (so a
 * miscount cannot pass unseen). */
static void *build_part(void *vp)
{
    part_t *p = vp;
    run_t *r = p->run;
    const char *base = r->a.base, *at = base + p->lo, *end = base + p->hi;
    uint64_t left = p->lines;
    while (at < end) {
        uint64_t h[GROUP], off[GROUP];
        size_t len[GROUP];
        uint32_t n = 0;
        for (; n < GROUP && at < end; n++, left--) {
            off[n] = (uint64_t)(at - base);
            at = map_line(at, end, &len[n]);
            if (left == 0 || len[n] > MAX_LEN) {
                p->changed = true;
                return NULL;
            }
            h[n] = line_hash(r->seed, base + off[n], len[n]) & r->t.hash_mask;
            __builtin_prefetch(&r->t.slots[home_of(&r->t, h[n])], 1);
        }
        for (uint32_t j = 0; j < n; j++)
            insert(&r->t, &r->a, h[j], off[j], len[j], r->join->once);
    }
    p->changed = left != 0;
    return NULL;
}

static void *stamp_part(void *vp)
{
    part_t *p = vp;
    run_t *r = p->run;
    chunk_reader_t rd = {.fd = r->fd, .pos = p->lo, .end = p->hi, .buf = p->buf};
    for (;;) {
        const char *line[GROUP];
        size_t len[GROUP];
        uint64_t h[GROUP];
        uint32_t n = 0;
        int rc = 1;
        /* A group's lines point into the buffer, so it is refilled only
         * at the start of a group. */
        while (n < GROUP && (rc = chunk_next(&rd, &line[n], &len[n], n == 0)) == 1) {
            if (len[n] > MAX_LEN)
                continue;
            h[n] = line_hash(r->seed, line[n], len[n]) & r->t.hash_mask;
            __builtin_prefetch(&r->t.slots[home_of(&r->t, h[n])]);
            n++;
        }
        /* The slots are in cache by now; the smallest input's copy of each
         * line found by hash is fetched next, all at once, so the byte
         * comparisons do not each wait for memory in turn. */
        uint64_t at[GROUP];
        for (uint32_t j = 0; j < n; j++) {
            at[j] = find_tag(&r->t, home_of(&r->t, h[j]), tag_of(h[j]));
            if (at[j] != NO_SLOT) {
                uint64_t m = __atomic_load_n(&r->t.slots[at[j]], __ATOMIC_RELAXED);
                const char *a = r->a.base + meta_off(m);
                __builtin_prefetch(a);
                __builtin_prefetch(a + len[j]);
            }
        }
        for (uint32_t j = 0; j < n; j++)
            p->moved +=
                (uint64_t)stamp(&r->t, &r->a, at[j], tag_of(h[j]), line[j], len[j], r->from);
        if (rc < 0) {
            p->err = rd.err;
            return NULL;
        }
        if (rc == 0)
            return NULL;
    }
}

/* Runs fn on each of run->threads parts, the last on this thread. */
static void on_threads(run_t *r, void *(*fn)(void *))
{
    pthread_t tid[64];
    unsigned started = 0;
    for (unsigned i = 0; i + 1 < r->threads; i++) {
        if (pthread_create(&tid[i], NULL, fn, &r->parts[i]) != 0)
            break;
        started++;
    }
    /* Parts whose thread did not start run here, in turn. */
    for (unsigned i = started; i < r->threads; i++)
        fn(&r->parts[i]);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
}

/* ---- emitting in order ---- */

enum { TAKEN = 0, NOT_TAKEN = 1 };

/* The emit phase prints the common entries in order of offset. Its work is
 * split among the threads by table slice, then by part of the input (a
 * range of offsets), and never reads the input again but for the lines it
 * prints:
 *  1. tally: each thread moves the common entries of its slice of the
 *     table to the slice's start (in order, so no entry is overwritten
 *     before it is read), counting them per part;
 *  2. scatter: each thread copies its entries into their part's place in
 *     one array (a counting sort's scatter; the counts make the threads'
 *     writes disjoint);
 *  3. print: the parts, taken in turn by whichever thread is free, are
 *     each sorted by offset (the table's memory, no longer needed, is the
 *     scratch), formatted into the thread's buffer and written out in part
 *     order.
 * Steps 2 and 3 need the array (8 bytes a common line) and a buffer per
 * thread as large as a part's lines can be: the part's bytes of the input
 * and one line more (part_room). On one thread, or when that does not fit
 * within the join's memory beside the table, the entries are gathered at
 * the table's start instead and sorted (in place) and printed on this
 * thread, in no memory but the table's. */

/* The offset bits that can be set in an entry of the mapped input. */
static unsigned offset_bits(const run_t *r)
{
    unsigned bits = 1;
    while (bits < 64 && (UINT64_C(1) << bits) < r->a.size)
        bits++;
    return bits;
}

/* Sorts v[0..n) by offset in place, most significant byte first (an
 * American flag sort: each bucket's entries swapped into it in cycles,
 * then each bucket sorted on the next byte); bits: how many low offset
 * bits can differ among them. */
static void sort_in_place(uint64_t *v, uint64_t n, unsigned bits)
{
    if (n < 32 || bits == 0) {
        for (uint64_t i = 1; i < n; i++) {
            uint64_t x = v[i], j = i;
            for (; j > 0 && meta_off(v[j - 1]) > meta_off(x); j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    unsigned shift = bits > 8 ? bits - 8 : 0;
    uint64_t start[257] = {0}, next[256];
#define DIGIT_OF(x) ((meta_off(x) >> shift) & 0xFF)
    for (uint64_t i = 0; i < n; i++)
        start[DIGIT_OF(v[i]) + 1]++;
    for (unsigned d = 0; d < 256; d++) {
        start[d + 1] += start[d];
        next[d] = start[d];
    }
    for (unsigned d = 0; d < 256; d++)
        while (next[d] < start[d + 1]) {
            uint64_t x = v[next[d]];
            unsigned e = (unsigned)DIGIT_OF(x);
            while (e != d) { /* x belongs in bucket e: swap it there */
                uint64_t y = v[next[e]];
                v[next[e]++] = x;
                x = y;
                e = (unsigned)DIGIT_OF(x);
            }
            v[next[d]++] = x;
        }
#undef DIGIT_OF
    for (unsigned d = 0; d < 256; d++)
        sort_in_place(v + start[d], start[d + 1] - start[d], shift);
}

/* Sorts v[0..n) by offset (the meta word's offset bits), least significant
 * digit first, with tmp[0..n) as scratch; bits: how many offset bits
 * differ among them. */
static void sort_by_offset(uint64_t *v, uint64_t *tmp, uint64_t n, unsigned bits)
{
    enum { DIGIT = 11 };
    uint64_t count[1u << DIGIT];
    for (unsigned shift = 0; shift < bits; shift += DIGIT) {
        memset(count, 0, sizeof count);
        for (uint64_t i = 0; i < n; i++)
            count[(meta_off(v[i]) >> shift) & ((1u << DIGIT) - 1)]++;
        uint64_t sum = 0;
        for (unsigned d = 0; d < (1u << DIGIT); d++) {
            uint64_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (uint64_t i = 0; i < n; i++)
            tmp[count[(meta_off(v[i]) >> shift) & ((1u << DIGIT) - 1)]++] = v[i];
        uint64_t *swap = v;
        v = tmp;
        tmp = swap;
    }
    /* An odd number of passes left the result in the scratch half. */
    if (((bits + DIGIT - 1) / DIGIT) % 2)
        memcpy(tmp, v, n * sizeof *v);
}

/* Parts of the input: about 4 MB of it each and at least 8 per thread, so
 * the threads share the work however the common lines fall, and a part's
 * buffer stays small unless they bunch up in a few parts. The serial way
 * (threaded false) needs no parts: one, the whole input. */
static void plan_parts(run_t *r, unsigned bits, bool threaded)
{
    emit_state_t *e = &r->emit;
    uint64_t want = threaded ? (uint64_t)r->threads * 8 : 1;
    if (threaded && want < r->a.size >> 22)
        want = r->a.size >> 22;
    unsigned pb = 0;
    while ((UINT64_C(1) << pb) < want && pb < bits && pb < 16)
        pb++;
    e->part_bits = pb;
    e->part_shift = bits - pb;
}

/* The part's slice of the table: the k-th of run->threads. */
static void table_slice(const run_t *r, const part_t *p, uint64_t *lo, uint64_t *hi)
{
    uint64_t k = (uint64_t)(p - r->parts);
    *lo = r->t.nslots / r->threads * k;
    *hi = k + 1 == r->threads ? r->t.nslots : r->t.nslots / r->threads * (k + 1);
}

/* The start of the part's slice, as an array of entries (step 1 writes
 * them there). */
static uint64_t *slice_entries(const run_t *r, const part_t *p)
{
    uint64_t lo, hi;
    table_slice(r, p, &lo, &hi);
    return (uint64_t *)(void *)(r->t.slots + lo);
}

/* Counts the common entries in the part's slice of the table, into
 * p->lines (counting alone, -c). */
static void *count_common_part(void *vp)
{
    part_t *p = vp;
    run_t *r = p->run;
    uint64_t lo, hi, found = 0;
    table_slice(r, p, &lo, &hi);
    for (uint64_t i = lo; i < hi; i++) {
        uint64_t m = r->t.slots[i];
        found += m && meta_stamp(m) == r->emit.n - 1;
    }
    p->lines = found;
    return NULL;
}

/* Step 1 for one thread; p->lines: the entries moved. */
static void *tally_common_part(void *vp)
{
    part_t *p = vp;
    run_t *r = p->run;
    emit_state_t *e = &r->emit;
    uint64_t parts = UINT64_C(1) << e->part_bits, lo, hi, kept = 0;
    uint64_t *count = e->counts + (uint64_t)(p - r->parts) * parts;
    uint64_t *out = slice_entries(r, p);
    table_slice(r, p, &lo, &hi);
    for (uint64_t i = lo; i < hi; i++) {
        uint64_t m = r->t.slots[i];
        if (m && meta_stamp(m) == e->n - 1) {
            count[meta_off(m) >> e->part_shift]++;
            out[kept++] = m; /* at or before slot i: read already */
        }
    }
    p->lines = kept;
    return NULL;
}

/* Step 2 for one thread: its cursors start where step 1's counts put
 * them, so no two threads write the same element. */
static void *scatter_common_part(void *vp)
{
    part_t *p = vp;
    run_t *r = p->run;
    emit_state_t *e = &r->emit;
    uint64_t parts = UINT64_C(1) << e->part_bits;
    uint64_t *cursor = e->cursor + (uint64_t)(p - r->parts) * parts;
    const uint64_t *v = slice_entries(r, p);
    for (uint64_t i = 0; i < p->lines; i++)
        e->sorted[cursor[meta_off(v[i]) >> e->part_shift]++] = v[i];
    return NULL;
}

/* Writes a part's lines out once every earlier part's are. */
static void emit_in_turn(run_t *r, part_t *p, uint64_t chunk)
{
    emit_state_t *e = &r->emit;
    pthread_mutex_lock(&e->mu);
    while (e->next_out != chunk)
        pthread_cond_wait(&e->turn, &e->mu);
    pthread_mutex_unlock(&e->mu);
    /* Only this thread writes now: the turn is its own until it passes it. */
    if (!e->failed && p->buf_used &&
        r->join->emit_lines(r->join->emit_ctx, p->out, p->buf_used) != 0)
        e->failed = true;
    pthread_mutex_lock(&e->mu);
    e->next_out++;
    pthread_cond_broadcast(&e->turn);
    pthread_mutex_unlock(&e->mu);
}

/* The most bytes a part's lines take printed: lines start at distinct
 * offsets of the part's range and do not overlap, each prints at most its
 * bytes of the input ("\n" for "\n" or "\r\n"; one "\n" more for a last
 * line without one), and the last may run on past the range by a line's
 * length and its "\r\n". */
static uint64_t part_room(const run_t *r)
{
    uint64_t span = UINT64_C(1) << r->emit.part_shift;
    return (span < r->a.size ? span : r->a.size) + MAX_LEN + 3;
}

/* Step 3 for one thread: parts taken in turn until none is left. The
 * buffer p->out holds part_room bytes (emit_sorted sized it). */
static void *print_sorted_part(void *vp)
{
    part_t *p = vp;
    run_t *r = p->run;
    emit_state_t *e = &r->emit;
    uint64_t *scratch = (uint64_t *)(void *)r->t.slots;
    for (;;) {
        uint64_t q = __atomic_fetch_add(&e->next_part, 1, __ATOMIC_RELAXED);
        if (q >= (UINT64_C(1) << e->part_bits))
            return NULL;
        uint64_t at = e->part_start[q], n = e->part_start[q + 1] - at;
        uint64_t *v = e->sorted + at;
        /* Within a part the offsets differ only in their low part_shift bits. */
        sort_by_offset(v, scratch + at, n, e->part_shift);
        size_t used = 0;
        const char *end = r->a.base + r->a.size;
        for (uint64_t i = 0; i < n; i++) {
            const char *line = r->a.base + meta_off(v[i]);
            size_t len;
            (void)map_line(line, end, &len);
            if (len >= p->out_cap - used) {
                e->changed = true; /* lines overlap: the input was rewritten */
                break;
            }
            memcpy(p->out + used, line, len);
            p->out[used + len] = '\n';
            used += len + 1;
        }
        p->buf_used = used;
        emit_in_turn(r, p, q);
    }
}

/* Steps 2 and 3, with m entries in all: 0, -1 on a failed write,
 * NOT_TAKEN (nothing written, the entries where step 1 left them) when
 * their memory is not to be had. */
static int emit_sorted(run_t *r, uint64_t m)
{
    emit_state_t *e = &r->emit;
    uint64_t largest = part_room(r);
    double need = (double)r->a.size + (double)r->t.bytes + (double)r->threads * CHUNK +
                  (double)m * sizeof *e->sorted + (double)r->threads * (double)largest;
    if (need > (double)r->join->mem)
        return NOT_TAKEN;
    for (unsigned k = 0; k < r->threads; k++) {
        part_t *p = &r->parts[k];
        if (largest > p->out_cap) {
            free(p->out);
            p->out_cap = (size_t)largest;
            if (!(p->out = malloc(p->out_cap))) {
                p->out_cap = 0;
                return NOT_TAKEN;
            }
        }
    }
    if (!(e->sorted = malloc((m ? m : 1) * sizeof *e->sorted)))
        return NOT_TAKEN;
    on_threads(r, scatter_common_part);
    e->sorted_on_threads = true;
    e->next_part = e->next_out = 0;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->turn, NULL);
    on_threads(r, print_sorted_part);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->turn);
    r->join->found += m;
    if (e->changed)
        return bkc_join_fail(r->join, "%s: the file changed while it was being read", r->a.path);
    if (e->failed) {
        r->join->emit_failed = true;
        return bkc_join_fail(r->join, "write error");
    }
    return 0;
}

/* The serial way: the slices' entries gathered at the table's start, in
 * slice order (each slice's entries move to at or before where they lie,
 * and past every earlier slice's, so memmove in order loses none), sorted
 * in place, and printed on this thread. */
static int emit_gathered(run_t *r, uint64_t m)
{
    uint64_t *v = (uint64_t *)(void *)r->t.slots, at = 0;
    for (unsigned k = 0; k < r->threads; k++) {
        const part_t *p = &r->parts[k];
        memmove(v + at, slice_entries(r, p), p->lines * sizeof *v);
        at += p->lines;
    }
    sort_in_place(v, m, offset_bits(r));
    const char *end = r->a.base + r->a.size;
    for (uint64_t i = 0; i < m; i++) {
        const char *line = r->a.base + meta_off(v[i]);
        size_t len;
        (void)map_line(line, end, &len);
        if (bkc_join_emit(r->join, line, len) != 0)
            return -1;
    }
    return 0;
}

/* The common lines, in order, or their count (-c needs no order: each
 * thread counts its slice of the table). 0 or -1. */
static int emit_phase(run_t *r, uint32_t n)
{
    emit_state_t *e = &r->emit;
    e->n = n;
    if (r->join->count_only) {
        on_threads(r, count_common_part);
        for (unsigned k = 0; k < r->threads; k++)
            r->join->found += r->parts[k].lines;
        return 0;
    }
    bool threaded = r->threads >= 2 && r->join->emit_lines && !getenv("BLOOMKIT_SERIAL_EMIT");
    plan_parts(r, offset_bits(r), threaded);
    uint64_t parts = UINT64_C(1) << e->part_bits, cells = parts * r->threads;
    int rc = -1;
    e->counts = calloc(cells, sizeof *e->counts);
    e->cursor = malloc(cells * sizeof *e->cursor);
    e->part_start = malloc((parts + 1) * sizeof *e->part_start);
    if (!e->counts || !e->cursor || !e->part_start) {
        rc = bkc_join_fail(r->join, "out of memory");
        goto out;
    }
    on_threads(r, tally_common_part);
    uint64_t m = 0;
    for (uint64_t q = 0; q < parts; q++) {
        e->part_start[q] = m;
        for (unsigned k = 0; k < r->threads; k++) {
            e->cursor[k * parts + q] = m;
            m += e->counts[k * parts + q];
        }
    }
    e->part_start[parts] = m;
    rc = NOT_TAKEN;
    if (threaded)
        rc = emit_sorted(r, m);
    if (rc == NOT_TAKEN)
        rc = emit_gathered(r, m);
out:
    free(e->counts);
    free(e->cursor);
    free(e->part_start);
    free(e->sorted);
    return rc;
}

/* ---- the whole ---- */

static bool eligible(const bkc_join_t *join, const bkc_join_src_t *srcs, uint32_t n)
{
    if (getenv("BLOOMKIT_NO_MMAP") || join->norm != BKC_NORM_NONE || join->icase ||
        n > MAX_INPUTS)
        return false;
    for (uint32_t i = 0; i < n; i++) /* a named regular file, not "-" or a pipe */
        if (srcs[i].sp || !bkc_join_src_rereadable(&srcs[i]))
            return false;
    return srcs[0].size <= MAX_OFF && srcs[0].size < join->mem;
}

/* Splits [0, size) into run->threads ranges at line starts: of the mapped
 * input when fd < 0 (cannot fail), else of the file fd (-1 with errno set
 * if a read fails). */
static int split(run_t *r, uint64_t size, int fd)
{
    uint64_t prev = 0;
    for (unsigned i = 0; i < r->threads; i++) {
        uint64_t at = size / r->threads * i, s;
        if (fd < 0)
            s = map_split(&r->a, at);
        else if (file_split(fd, size, at, &s) != 0)
            return -1;
        if (s < prev)
            s = prev;
        if (i > 0)
            r->parts[i - 1].hi = s;
        r->parts[i].lo = s;
        prev = s;
    }
    r->parts[r->threads - 1].hi = size;
    return 0;
}

/* Counts the lines of the mapped input and sizes the table: NOT_TAKEN if a
 * line is too long for the index or the table does not fit beside the
 * mapping, else TAKEN with the table mapped (zero-filled). */
static int size_table(run_t *r)
{
    (void)split(r, r->a.size, -1);
    on_threads(r, count_part);
    uint64_t lines = 0;
    for (unsigned i = 0; i < r->threads; i++) {
        if (r->parts[i].too_long)
            return NOT_TAKEN;
        lines += r->parts[i].lines;
    }
    r->t.nslots = lines * LOAD_NUM / LOAD_DEN + 2;
    double need = (double)r->a.size + (double)r->t.nslots * sizeof *r->t.slots +
                  (double)r->threads * CHUNK;
    if (need > (double)r->join->mem)
        return NOT_TAKEN;
    r->t.bytes = (size_t)r->t.nslots * sizeof *r->t.slots;
    void *p = mmap(NULL, r->t.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NOT_TAKEN;
    (void)madvise(p, r->t.bytes, MADV_HUGEPAGE);
    r->t.slots = p;
    r->t.hash_mask = getenv("BLOOMKIT_JOIN_COLLIDE") ? 0 : ~UINT64_C(0);
    return TAKEN;
}

/* Stamps the lines of input i (path) that were in all inputs before it.
 * Sets *alive to how many lines are still candidates. 0 or -1. */
static int stamp_input(run_t *r, const bkc_join_src_t *s, uint32_t i, uint64_t *alive)
{
    bkc_join_t *join = r->join;
    r->fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        return bkc_join_fail(join, "%s: %s", s->path, strerror(errno));
    struct stat st;
    int rc = fstat(r->fd, &st) == 0 && split(r, (uint64_t)st.st_size, r->fd) == 0 ? 0 : -1;
    if (rc != 0)
        bkc_join_fail(join, "%s: %s", s->path, strerror(errno));
    r->from = i - 1;
    if (rc == 0) {
        for (unsigned k = 0; k < r->threads; k++)
            r->parts[k].moved = 0;
        on_threads(r, stamp_part);
        *alive = 0;
        for (unsigned k = 0; k < r->threads && rc == 0; k++) {
            if (r->parts[k].err)
                rc = bkc_join_fail(join, "%s: %s", s->path, strerror(r->parts[k].err));
            *alive += r->parts[k].moved;
        }
    }
    close(r->fd);
    r->fd = -1;
    return rc;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int join_mapped(run_t *r, bkc_join_src_t *srcs, uint32_t n)
{
    double t0 = seconds();
    int taken = size_table(r);
    if (taken != TAKEN)
        return taken;
    double t1 = seconds();
    on_threads(r, build_part);
    for (unsigned k = 0; k < r->threads; k++)
        if (r->parts[k].changed)
            return bkc_join_fail(r->join, "%s: the file changed while it was being read",
                                 r->a.path);
    for (unsigned k = 0; k < r->threads; k++)
        if (!(r->parts[k].buf = malloc(CHUNK)))
            return bkc_join_fail(r->join, "out of memory");
    double t2 = seconds();
    for (uint32_t i = 1; i < n; i++) {
        uint64_t alive = 0;
        if (stamp_input(r, &srcs[i], i, &alive) != 0)
            return -1;
        if (alive == 0)
            return TAKEN; /* nothing can be common any more */
    }
    double t3 = seconds();
    if (emit_phase(r, n) != 0)
        return -1;
    double t4 = seconds();
    snprintf(r->join->timing, sizeof r->join->timing,
             "mapped join, seconds: count %.3f, build %.3f, stamp %.3f, %s %.3f", t1 - t0,
             t2 - t1, t3 - t2,
             r->join->count_only            ? "count common"
             : r->emit.sorted_on_threads ? "emit (parts sorted on every thread)"
                                         : "emit (sorted on one thread)",
             t4 - t3);
    return TAKEN;
}

int bkc_join_mapped(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n)
{
    bkc_join_sort_by_size(srcs, n);
    if (!eligible(join, srcs, n))
        return NOT_TAKEN;
    int fd = open(srcs[0].path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
        (uint64_t)st.st_size > MAX_OFF) {
        if (fd >= 0)
            close(fd);
        return NOT_TAKEN; /* an empty smallest input is the general path's */
    }
    run_t r;
    memset(&r, 0, sizeof r);
    r.join = join;
    r.a.size = (uint64_t)st.st_size;
    r.a.path = srcs[0].path;
    r.seed = bkc_join_level_seed(join, 0);
    r.threads = join->threads ? join->threads : 1;
    if (r.threads > 64)
        r.threads = 64;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += srcs[i].size;
    if (total < SMALL)
        r.threads = 1;
    void *map = mmap(NULL, (size_t)r.a.size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    r.parts = calloc(r.threads, sizeof *r.parts);
    if (map == MAP_FAILED || !r.parts) {
        if (map != MAP_FAILED)
            munmap(map, (size_t)r.a.size);
        free(r.parts);
        return NOT_TAKEN;
    }
    r.a.base = map;
    (void)bkc_map_guard(map, (size_t)r.a.size, srcs[0].path);
    for (unsigned k = 0; k < r.threads; k++)
        r.parts[k].run = &r;
    int rc = join_mapped(&r, srcs, n);
    if (rc == TAKEN) {
        join->workers = r.threads;
        join->mapped = true;
    }
    for (unsigned k = 0; k < r.threads; k++) {
        free(r.parts[k].buf);
        free(r.parts[k].out);
    }
    free(r.parts);
    if (r.t.slots)
        munmap(r.t.slots, r.t.bytes);
    bkc_map_unguard(map);
    munmap(map, (size_t)r.a.size);
    return rc;
}
