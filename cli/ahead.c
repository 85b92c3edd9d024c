/*
 * The read-ahead of ahead.h. Blocks of whole lines travel through a ring
 * of slabs, each owned by one thread at a time:
 *
 *   FREE --reader copies lines in--> FILLED --a worker cuts them into
 *   batches--> READY --the consumer hands the batches out, then--> FREE
 *
 * Slabs are filled, cut and handed out in ring order, so the consumer sees
 * the lines in input order whichever worker cut them. The ends of the
 * inputs travel as slabs too (END, FAILED), so a failure reaches the
 * consumer after every line read before it. One mutex guards the states:
 * a slab holds up to SLAB_BYTES of input (a few thousand lines), so the
 * lock is taken a few times per thousand lines.
 */
#define _GNU_SOURCE
#include "ahead.h"
#include "input.h"
#include "newlines.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Input bytes a slab takes at a time: enough that the lock and the hand
 * overs cost nothing per line, few enough that the slabs in flight stay a
 * few MB (a slab's batches take about twice its bytes). */
#define SLAB_BYTES ((size_t)256 << 10)

/* Most lines a slab takes: its batches cost about 65 bytes a line beside
 * the line itself, so short lines (8-digit numbers) would otherwise make
 * a 256 KB slab's batches 1.7 MB. */
#define SLAB_LINES 8192

/* The consumer wakes a reader waiting for free slabs once this many are
 * free, not at each: a wake is a system call on the consumer's thread,
 * the one thread whose work cannot be shared out. */
#define RELEASE_BATCH 4

/* How often a reader waiting on a quiet pipe looks whether it is stopped. */
#define IDLE_MS 50

enum slab_state { FREE, FILLED, CUTTING, READY };
enum slab_kind { LINES, END, FAILED };

typedef struct slab {
    enum slab_state state;
    enum slab_kind kind;
    char *buf;            /* the input's lines [0, len), then the keys */
    size_t len, cap;
    uint64_t lineno;      /* number of the first line (0: not known) */
    const char *input;    /* its input's name */
    bkc_batch_t *batches; /* cut by a worker */
    size_t nbatches, batches_cap;
    size_t next;          /* the consumer's next batch */
    bool oom;             /* the worker ran out of memory */
} slab_t;

struct bkc_ahead {
    bkc_ahead_config_t cfg;
    bkc_newline_counter_t count_newlines;
    pthread_mutex_t mu;
    pthread_cond_t to_reader, to_workers, to_consumer;
    slab_t *slabs;
    size_t nslabs;
    uint64_t filled; /* slabs the reader has filled (ring position: % nslabs) */
    uint64_t cut;    /* slabs workers have taken */
    uint64_t taken;  /* slabs the consumer has finished */
    bool quit;
    pthread_t reader;
    pthread_t *workers;
    unsigned nworkers;
    bool reader_started;
    char **names;    /* the inputs' names, kept until the stop */
    int nnames;
    uint64_t bytes;
    char err[700];
};

/* ---- the reader ---- */

static int idle_hook(void *ctx)
{
    (void)ctx;
    return IDLE_MS;
}

/* The next free slab in ring order, waited for; NULL once stopped. */
static slab_t *free_slab(bkc_ahead_t *a)
{
    pthread_mutex_lock(&a->mu);
    slab_t *s = &a->slabs[a->filled % a->nslabs];
    while (!a->quit && s->state != FREE)
        pthread_cond_wait(&a->to_reader, &a->mu);
    if (a->quit)
        s = NULL;
    pthread_mutex_unlock(&a->mu);
    return s;
}

static void publish(bkc_ahead_t *a, slab_t *s)
{
    pthread_mutex_lock(&a->mu);
    s->state = FILLED;
    a->filled++;
    pthread_cond_signal(&a->to_workers);
    pthread_mutex_unlock(&a->mu);
}

/* Sends the end of the inputs (kind END or FAILED with msg) down the ring. */
static void publish_end(bkc_ahead_t *a, enum slab_kind kind, const char *msg)
{
    slab_t *s = free_slab(a);
    if (!s)
        return;
    s->kind = kind;
    s->len = 0;
    if (msg)
        snprintf(a->err, sizeof a->err, "%s", msg);
    publish(a, s);
}

/* How much of a block of len bytes of whole lines one slab takes: all of
 * it if it fits, else up to the last line end within SLAB_BYTES, else (one
 * long line) that first line. */
static size_t slab_share(const char *block, size_t len)
{
    if (len <= SLAB_BYTES)
        return len;
    const char *nl = memrchr(block, '\n', SLAB_BYTES);
    if (!nl)
        nl = memchr(block + SLAB_BYTES, '\n', len - SLAB_BYTES);
    return nl ? (size_t)(nl + 1 - block) : len;
}

/* Copies the lines of one open input into slabs. 0 at its end, -1 when
 * it failed (FAILED sent) or the read-ahead stopped. */
static int read_input(bkc_ahead_t *a, bkc_reader_t *r, const char *name)
{
    const char *block;
    size_t len;
    int got;
    while ((got = bkc_reader_peek_lines(r, &block, &len)) == 1) {
        while (len > 0) {
            slab_t *s = free_slab(a);
            if (!s)
                return -1;
            size_t take = slab_share(block, len);
            uint64_t lines = a->count_newlines(block, take);
            if (lines > SLAB_LINES) { /* up to the end of line SLAB_LINES */
                const char *at = block;
                for (uint32_t i = 0; i < SLAB_LINES; i++)
                    at = (const char *)memchr(at, '\n', (size_t)(block + take - at)) + 1;
                take = (size_t)(at - block);
                lines = SLAB_LINES;
            }
            lines += block[take - 1] != '\n'; /* the input's last line, without "\n" */
            if (take > s->cap) {
                char *nb = realloc(s->buf, take);
                if (!nb) {
                    publish_end(a, FAILED, "out of memory");
                    return -1;
                }
                s->buf = nb;
                s->cap = take;
            }
            memcpy(s->buf, block, take);
            s->kind = LINES;
            s->len = take;
            s->input = name;
            s->lineno = bkc_reader_lineno(r) + 1;
            bkc_reader_consume(r, take, lines);
            publish(a, s);
            block += take;
            len -= take;
        }
    }
    if (got < 0) {
        publish_end(a, FAILED, bkc_reader_error(r));
        return -1;
    }
    return 0;
}

static void *read_inputs(void *va)
{
    bkc_ahead_t *a = va;
    for (int i = 0; i < a->nnames; i++) {
        char err[600];
        bkc_reader_t *r = bkc_reader_open(a->cfg.npaths ? a->cfg.paths[i] : "-", err, sizeof err);
        if (!r) {
            publish_end(a, FAILED, err);
            return NULL;
        }
        a->names[i] = strdup(bkc_reader_name(r));
        int rc = a->names[i] ? read_input(a, r, a->names[i]) : -1;
        if (!a->names[i])
            publish_end(a, FAILED, "out of memory");
        bkc_reader_close(r);
        if (rc != 0)
            return NULL;
    }
    publish_end(a, END, NULL);
    return NULL;
}

/* ---- the workers ---- */

/* Room for more bytes after s->len + used in the slab's buffer. */
static int reserve(slab_t *s, size_t used, size_t more)
{
    if (s->cap - used >= more)
        return 0;
    size_t ncap = s->cap * 2;
    while (ncap - used < more) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    char *nb = realloc(s->buf, ncap);
    if (!nb)
        return -1;
    s->buf = nb;
    s->cap = ncap;
    return 0;
}

/* The slab's next batch, emptied; NULL when out of memory. */
static bkc_batch_t *next_batch(slab_t *s)
{
    if (s->nbatches == s->batches_cap) {
        size_t ncap = s->batches_cap ? s->batches_cap * 2 : 8;
        bkc_batch_t *nb = realloc(s->batches, ncap * sizeof *nb);
        if (!nb)
            return NULL;
        s->batches = nb;
        s->batches_cap = ncap;
    }
    bkc_batch_t *b = &s->batches[s->nbatches++];
    b->n = 0;
    b->used = b->cap = 0;
    return b;
}

/* Cuts the slab's lines into batches: line and key offsets into the
 * slab's buffer (normalized keys appended after the lines), hashes, line
 * numbers. nbuf/ncap: the worker's normalization buffer. */
static void cut_lines(const bkc_ahead_t *a, slab_t *s, char **nbuf, size_t *ncap)
{
    s->nbatches = 0;
    s->oom = false;
    size_t at = 0, keys_end = s->len;
    uint64_t lineno = s->lineno;
    bkc_batch_t *b = NULL;
    while (at < s->len) {
        const char *line = s->buf + at;
        const char *nl = memchr(line, '\n', s->len - at);
        size_t len = nl ? (size_t)(nl - line) : s->len - at;
        size_t next = at + len + (nl != NULL);
        if (nl && len > 0 && line[len - 1] == '\r')
            len--;
        if (!b || b->n == BKC_BATCH_KEYS) {
            if (!(b = next_batch(s)))
                goto oom;
        }
        size_t i = b->n++;
        b->line_off[i] = at;
        b->line_len[i] = len;
        b->raw_len[i] = next - at;
        b->lineno[i] = lineno ? lineno++ : 0;
        if (a->cfg.norm == BKC_NORM_NONE) {
            b->key_off[i] = at;
            b->keys[i].len = len;
            b->hash[i] = bk_hash_key(a->cfg.hash, a->cfg.seed, line, len);
        } else {
            ptrdiff_t k = bkc_normalize(a->cfg.norm, line, len, nbuf, ncap);
            if (k < 0 || reserve(s, keys_end, (size_t)k) != 0)
                goto oom;
            memcpy(s->buf + keys_end, *nbuf, (size_t)k);
            b->key_off[i] = keys_end;
            b->keys[i].len = (size_t)k;
            b->hash[i] = bk_hash_key(a->cfg.hash, a->cfg.seed, *nbuf, (size_t)k);
            keys_end += (size_t)k;
        }
        at = next;
    }
    for (size_t j = 0; j < s->nbatches; j++) {
        s->batches[j].arena = s->buf; /* borrowed: never freed through the batch */
        bkc_batch_keys(&s->batches[j]);
    }
    return;
oom:
    s->oom = true;
}

static void *cut_slabs(void *va)
{
    bkc_ahead_t *a = va;
    char *nbuf = NULL;
    size_t ncap = 0;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->quit && a->cut == a->filled)
            pthread_cond_wait(&a->to_workers, &a->mu);
        if (a->quit)
            break;
        slab_t *s = &a->slabs[a->cut++ % a->nslabs];
        s->state = CUTTING;
        pthread_mutex_unlock(&a->mu);
        if (s->kind == LINES)
            cut_lines(a, s, &nbuf, &ncap);
        pthread_mutex_lock(&a->mu);
        s->state = READY;
        pthread_cond_broadcast(&a->to_consumer);
    }
    pthread_mutex_unlock(&a->mu);
    free(nbuf);
    return NULL;
}

/* ---- the consumer ---- */

int bkc_ahead_next(bkc_ahead_t *a, bkc_batch_t **b, const char **input, int timeout_ms)
{
    struct timespec until;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    int rc;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        slab_t *s = &a->slabs[a->taken % a->nslabs];
        if (s->state != READY) {
            if (timeout_ms < 0) {
                pthread_cond_wait(&a->to_consumer, &a->mu);
            } else if (pthread_cond_timedwait(&a->to_consumer, &a->mu, &until) == ETIMEDOUT &&
                       s->state != READY) {
                rc = BKC_AHEAD_WAIT;
                break;
            }
            continue;
        }
        if (s->kind != LINES || s->oom) {
            if (s->oom && s->kind == LINES)
                snprintf(a->err, sizeof a->err, "%s: out of memory", s->input);
            rc = s->kind == END ? BKC_AHEAD_END : BKC_AHEAD_ERROR;
            break;
        }
        if (s->next < s->nbatches) {
            *b = &s->batches[s->next++];
            *input = s->input;
            rc = BKC_AHEAD_BATCH;
            break;
        }
        /* Every batch of this slab was handed out, and the caller is done
         * with the last: the slab goes back to the reader. */
        a->bytes += s->len;
        s->state = FREE;
        s->next = s->nbatches = 0;
        a->taken++;
        if (a->taken % RELEASE_BATCH == 0)
            pthread_cond_signal(&a->to_reader);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

const char *bkc_ahead_error(const bkc_ahead_t *a)
{
    return a->err;
}

uint64_t bkc_ahead_bytes(const bkc_ahead_t *a)
{
    return a->bytes;
}

/* ---- start and stop ---- */

static void free_all(bkc_ahead_t *a)
{
    for (size_t i = 0; i < a->nslabs; i++) {
        free(a->slabs[i].buf);
        free(a->slabs[i].batches);
    }
    for (int i = 0; i < a->nnames; i++)
        free(a->names[i]);
    free(a->names);
    free(a->slabs);
    free(a->workers);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->to_reader);
    pthread_cond_destroy(&a->to_workers);
    pthread_cond_destroy(&a->to_consumer);
    free(a);
}

void bkc_ahead_stop(bkc_ahead_t *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->quit = true;
    pthread_cond_broadcast(&a->to_reader);
    pthread_cond_broadcast(&a->to_workers);
    pthread_mutex_unlock(&a->mu);
    bkc_reader_interrupt(true); /* a reader waiting on a quiet pipe */
    if (a->reader_started)
        pthread_join(a->reader, NULL);
    for (unsigned i = 0; i < a->nworkers; i++)
        pthread_join(a->workers[i], NULL);
    bkc_reader_interrupt(false);
    bkc_reader_set_idle_hook(NULL, NULL);
    free_all(a);
}

/* Starts a thread with the signals that end a run blocked, so they go to
 * the threads that wait on the input and the consumer's loop, not to a
 * worker. */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg, bool worker)
{
    sigset_t all, old;
    sigemptyset(&all);
    if (worker) {
        sigaddset(&all, SIGINT);
        sigaddset(&all, SIGTERM);
        sigaddset(&all, SIGHUP);
    }
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

bkc_ahead_t *bkc_ahead_start(const bkc_ahead_config_t *cfg)
{
    bkc_ahead_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cfg = *cfg;
    a->count_newlines = bkc_newline_counter();
    a->nnames = cfg->npaths ? cfg->npaths : 1;
    unsigned workers = cfg->workers ? cfg->workers : 1;
    a->nslabs = 2 * (size_t)workers + 8; /* at least 2 RELEASE_BATCH */
    pthread_condattr_t mono;
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->to_reader, NULL);
    pthread_cond_init(&a->to_workers, NULL);
    pthread_cond_init(&a->to_consumer, &mono);
    pthread_condattr_destroy(&mono);
    a->slabs = calloc(a->nslabs, sizeof *a->slabs);
    a->names = calloc((size_t)a->nnames, sizeof *a->names);
    a->workers = calloc(workers, sizeof *a->workers);
    if (!a->slabs || !a->names || !a->workers) {
        free_all(a);
        return NULL;
    }
    for (size_t i = 0; i < a->nslabs; i++) {
        if (!(a->slabs[i].buf = malloc(SLAB_BYTES))) {
            free_all(a);
            return NULL;
        }
        a->slabs[i].cap = SLAB_BYTES;
    }
    for (; a->nworkers < workers; a->nworkers++)
        if (start_thread(&a->workers[a->nworkers], cut_slabs, a, true) != 0)
            break;
    bkc_reader_set_idle_hook(idle_hook, NULL);
    if (a->nworkers == 0 || start_thread(&a->reader, read_inputs, a, false) != 0) {
        bkc_ahead_stop(a);
        return NULL;
    }
    a->reader_started = true;
    return a;
}
