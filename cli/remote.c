/*
 * --redis URL: dedup, check, add and info on a seen-set in Redis (see
 * remote.h). Lines are collected in batches of up to BATCH_LINES lines or
 * BATCH_BYTES bytes; each batch is one call of libbloomkit-redis (one
 * command per shard and 2,000 items, every node at once), and its answers
 * are printed in the input's order before the next batch is read. A batch
 * also goes out when the input is about to wait, so a slow producer's
 * lines flow through a pipeline at once.
 */
#include "remote.h"

#include "bloomkit/redis.h"
#include "input.h"
#include "message.h"
#include "output.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH_LINES 16384
#define BATCH_BYTES ((size_t)4 << 20)

typedef enum job { JOB_DEDUP, JOB_CHECK, JOB_ADD } job_t;

/* One batch of lines: read, then in flight (its call sent), then answered
 * and printed. Two take turns, so that the next batch is read, normalized
 * and sent while the servers work on the last. */
typedef struct batch {
    char *arena;
    size_t used, cap;
    size_t n;
    size_t line_off[BATCH_LINES], line_len[BATCH_LINES];
    size_t key_off[BATCH_LINES], key_len[BATCH_LINES];
    int8_t ans[BATCH_LINES];      /* each line's answer */
    bk_key_t send[BATCH_LINES];   /* the keys sent */
    uint32_t sent_of[BATCH_LINES]; /* the line of each key sent */
    int8_t sans[BATCH_LINES];     /* their answers */
    size_t nsend;
    uint64_t first_line;          /* the input line of line 0 (1-based) */
    bk_redis_pending_t *pending;  /* in flight */
} batch_t;

/* Keys of the batch in flight, for the next one: open addressing over
 * their indexes in its send[] (+1; 0 is empty). */
#define SEEN_SLOTS (2 * BATCH_LINES)

typedef struct rctx {
    bk_redis_t *r;
    job_t job;
    bool absent, count_only;
    const char *run_id;   /* --run-id, or NULL */
    uint64_t pushed;      /* lines read so far */
    bool overlap;         /* two batches in flight (not with BF.MADD) */
    batch_t b[2];
    int cur;              /* the batch being filled; b[!cur] may be in flight */
    uint32_t seen[SEEN_SLOTS];
    bool seen_valid;      /* seen[] holds b[!cur]'s keys */
    uint64_t lines, hits; /* lines read; new (dedup, add) or printed (check) */
    int failed;           /* an error met in the idle hook */
} rctx_t;

/* The URL as messages show it: a password as "***". */
static const char *shown_url(const char *url)
{
    static char buf[1024];
    const char *host = strncmp(url, "redis://", 8) == 0 ? url + 8 : NULL;
    const char *slash = host ? strchr(host, '/') : NULL;
    const char *at = slash ? memchr(host, '@', (size_t)(slash - host)) : NULL;
    const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
    const char *pass = colon ? colon + 1 : at ? host : NULL;
    if (!pass)
        return url;
    snprintf(buf, sizeof buf, "%.*s***%s", (int)(pass - url), url, at);
    return buf;
}

/* The filter, opened (created when o->create); NULL after a message. */
static bk_redis_t *open_remote(const bkc_remote_opts_t *o)
{
    bk_redis_opts_t ro = {.capacity = o->create ? o->n : 0, .error_rate = o->p,
                          .shards = o->shards};
    bk_redis_t *r = NULL;
    bk_status_t st = bk_redis_open(&r, o->url, &ro);
    if (st != BK_OK) {
        if (st == BK_ENOTFOUND)
            bkc_error("%s: no such filter (dedup -n N -p P --redis URL creates it)",
                      shown_url(o->url));
        else
            bkc_error("%s: %s", shown_url(o->url), r ? bk_redis_error(r) : "out of memory");
        bk_redis_close(r);
        return NULL;
    }
    return r;
}

static int push(batch_t *b, const char *line, size_t len, const char *key, size_t klen)
{
    bool same = key == line && klen == len;
    size_t need = len + (same ? 0 : klen);
    if (b->used + need > b->cap) {
        size_t cap = b->cap ? b->cap : BATCH_BYTES;
        while (cap < b->used + need)
            cap *= 2;
        char *a = realloc(b->arena, cap);
        if (!a)
            return -1;
        b->arena = a;
        b->cap = cap;
    }
    memcpy(b->arena + b->used, line, len);
    b->line_off[b->n] = b->used;
    b->line_len[b->n] = len;
    b->used += len;
    if (same) {
        b->key_off[b->n] = b->line_off[b->n];
    } else {
        memcpy(b->arena + b->used, key, klen);
        b->key_off[b->n] = b->used;
        b->used += klen;
    }
    b->key_len[b->n] = klen;
    b->n++;
    return 0;
}

static size_t seen_slot(const void *key, size_t len)
{
    return (size_t)(bk_hash_raw(BK_HASH_XXH3, 0, key, len) % SEEN_SLOTS);
}

/* True if the batch in flight sends this key (its claim decides it). */
static bool in_flight(const rctx_t *c, const void *key, size_t len)
{
    const batch_t *o = &c->b[!c->cur];
    for (size_t h = seen_slot(key, len);; h = (h + 1) % SEEN_SLOTS) {
        uint32_t v = c->seen[h];
        if (v == 0)
            return false;
        const bk_key_t *k = &o->send[v - 1];
        if (k->len == len && memcmp(k->ptr, key, len) == 0)
            return true;
    }
}

/* seen[] := the keys b sends. */
static void remember(rctx_t *c, const batch_t *b)
{
    memset(c->seen, 0, sizeof c->seen);
    for (size_t j = 0; j < b->nsend; j++) {
        size_t h = seen_slot(b->send[j].ptr, b->send[j].len);
        while (c->seen[h])
            h = (h + 1) % SEEN_SLOTS;
        c->seen[h] = (uint32_t)j + 1;
    }
    c->seen_valid = true;
}

/* Sends the batch being filled. A key that the batch in flight also sends
 * is answered "seen" here: that earlier line's claim decides it (the two
 * calls may run in either order on the servers). 0, or 2 after a message. */
static int send_batch(rctx_t *c)
{
    batch_t *b = &c->b[c->cur];
    b->nsend = 0;
    bool probe = c->job != JOB_CHECK && c->seen_valid;
    for (size_t i = 0; i < b->n; i++) {
        const char *key = b->arena + b->key_off[i];
        if (probe && in_flight(c, key, b->key_len[i])) {
            b->ans[i] = 0;
            continue;
        }
        b->ans[i] = -1;
        b->send[b->nsend] = (bk_key_t){key, b->key_len[i]};
        b->sent_of[b->nsend++] = (uint32_t)i;
    }
    char id[BK_REDIS_MAX_ID + 1];
    if (c->run_id) /* the same batches of the same input: the same ids */
        snprintf(id, sizeof id, "%s:%llu", c->run_id, (unsigned long long)b->first_line);
    bk_status_t st = c->job == JOB_CHECK
                         ? bk_redis_contains_send(c->r, b->send, b->nsend, &b->pending)
                     : c->run_id ? bk_redis_claim_send_as(c->r, id, b->send, b->nsend, &b->pending)
                                 : bk_redis_claim_send(c->r, b->send, b->nsend, &b->pending);
    if (st != BK_OK) {
        b->pending = NULL;
        bkc_error("%s", bk_redis_error(c->r));
        return 2;
    }
    return 0;
}

/* Waits for batch b's answers and prints its lines in order (unless
 * `print` is false: an earlier batch failed). 0, or 2 after a message: the
 * lines printed are those answered before the first line the failure
 * stopped, every one of them recorded. */
static int finish_batch(rctx_t *c, batch_t *b, bool print)
{
    int rc = 0;
    if (b->pending) {
        bk_status_t st = bk_redis_wait(c->r, b->pending, b->sans);
        b->pending = NULL;
        for (size_t j = 0; j < b->nsend; j++)
            b->ans[b->sent_of[j]] = b->sans[j];
        if (st != BK_OK && print) {
            bkc_error("%s", bk_redis_error(c->r));
            rc = 2;
        }
    }
    for (size_t i = 0; print && i < b->n; i++) {
        if (b->ans[i] < 0) {
            rc = 2; /* said above */
            break;
        }
        c->lines++;
        bool show = c->job == JOB_CHECK ? (b->ans[i] == 1) != c->absent : b->ans[i] == 1;
        if (!show)
            continue;
        c->hits++;
        if (c->job == JOB_ADD || c->count_only)
            continue;
        if (bkc_out_line(b->arena + b->line_off[i], b->line_len[i]) != 0) {
            rc = 2; /* reported by bkc_stdout_finish */
            break;
        }
    }
    b->n = 0;
    b->used = 0;
    b->nsend = 0;
    return rc;
}

/* The batch being filled goes out; the one in flight before it is
 * answered and printed (with `drain`, this one too: the input ended or
 * waits). 0, or 2 after a message. */
static int flush(rctx_t *c, bool drain)
{
    batch_t *b = &c->b[c->cur], *older = &c->b[!c->cur];
    int rc_send = b->n ? send_batch(c) : 0;
    int rc = finish_batch(c, older, true); /* earlier lines: printed first */
    if (rc == 0)
        rc = rc_send;
    if (rc != 0 || !c->overlap || drain) {
        int rc_this = finish_batch(c, b, rc == 0);
        c->seen_valid = false;
        return rc ? rc : rc_this;
    }
    if (c->job != JOB_CHECK)
        remember(c, b);
    c->cur = !c->cur; /* the older batch, answered, is filled next */
    return 0;
}

static int on_line(void *vc, const char *line, size_t len, const char *key, size_t klen,
                   const bkc_reader_t *r)
{
    rctx_t *c = vc;
    if (c->failed)
        return c->failed;
    batch_t *b = &c->b[c->cur];
    if (b->n == 0)
        b->first_line = c->pushed + 1;
    if (push(b, line, len, key, klen) != 0)
        return bkc_line_error(NULL, r, "out of memory");
    c->pushed++;
    if (b->n == BATCH_LINES || b->used >= BATCH_BYTES)
        return flush(c, false);
    return 0;
}

static int on_end(void *vc, const bkc_reader_t *r)
{
    (void)r;
    rctx_t *c = vc;
    return c->failed ? c->failed : flush(c, true);
}

/* The input is about to wait: what was read goes out and is answered now. */
static int on_idle(void *vc)
{
    rctx_t *c = vc;
    if (!c->failed)
        c->failed = flush(c, true);
    if (!c->failed)
        (void)bkc_out_flush();
    return -1;
}

static int run_lines(rctx_t *c, char **paths, int n, const bkc_input_opts_t *in)
{
    bkc_stdout_setup();
    /* --run-id: batches cut by count and bytes alone, so that a re-run of
     * the same input cuts the same batches (the same claim ids); a slow
     * producer's lines then wait for their batch */
    if (!c->run_id)
        bkc_reader_set_idle_hook(on_idle, c);
    int rc = bkc_for_each_line(paths, n, in->norm, NULL, on_line, on_end, c);
    bkc_reader_set_idle_hook(NULL, NULL);
    /* a batch still in flight (a read error stopped the loop) is waited for */
    for (int k = 0; k < 2; k++)
        if (c->b[k].pending)
            (void)finish_batch(c, &c->b[k], false);
    if (bkc_stdout_finish() != 0 && rc == 0)
        rc = 2;
    return rc;
}

/* The summary is for a person watching: a terminal, or --progress. */
static bool summary(const bkc_input_opts_t *in)
{
    return in->pmode == BKC_PROGRESS_ON || (in->pmode == BKC_PROGRESS_AUTO && isatty(2));
}

static rctx_t *new_ctx(bk_redis_t *r, job_t job)
{
    rctx_t *c = calloc(1, sizeof *c);
    if (!c) {
        bkc_error("out of memory");
        return NULL;
    }
    c->r = r;
    c->job = job;
    /* BF.MADD (a server without claims) is never sent before the last
     * one's answers came: a failure then stops at that batch */
    c->overlap = job == JOB_CHECK || bk_redis_has_claims(r);
    return c;
}

static void free_ctx(rctx_t *c)
{
    if (c) {
        free(c->b[0].arena);
        free(c->b[1].arena);
    }
    free(c);
}

/* Opens o's filter and runs a job over the inputs: the claims or checks,
 * then what the job says at the end. Returns the exit status. */
static int remote_job(const bkc_remote_opts_t *o, job_t job, char **paths, int n,
                      const bkc_input_opts_t *in, bool absent, bool count_only)
{
    bk_redis_t *r = open_remote(o);
    if (!r)
        return 2;
    if (job == JOB_DEDUP && !bk_redis_has_claims(r))
        bkc_error("%s: warning: the server has no BF.CLAIM (RedisBloom, not bloomkit.so): lines "
                  "are added with BF.MADD, and a reply lost to a dropped connection makes this "
                  "run stop with its lines recorded but never printed",
                  shown_url(o->url));
    rctx_t *c = new_ctx(r, job);
    int rc = 2;
    if (c) {
        c->run_id = job == JOB_DEDUP ? o->run_id : NULL;
        c->absent = absent;
        c->count_only = count_only;
        rc = run_lines(c, paths, n, in);
    }
    if (rc == 0 && job == JOB_CHECK) {
        if (count_only)
            printf("%" PRIu64 "\n", c->hits);
        rc = c->hits ? 0 : 1;
    } else if (rc == 0 && summary(in)) {
        fprintf(stderr, "bloomkit %s: %s: %" PRIu64 " lines, %" PRIu64 " new\n",
                job == JOB_DEDUP ? "dedup" : "add", shown_url(o->url), c->lines, c->hits);
    }
    free_ctx(c);
    bk_redis_close(r);
    return rc;
}

int bkc_remote_dedup(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in)
{
    return remote_job(o, JOB_DEDUP, paths, n, in, false, false);
}

int bkc_remote_check(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in,
                     bool absent, bool count_only)
{
    return remote_job(o, JOB_CHECK, paths, n, in, absent, count_only);
}

int bkc_remote_add(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in)
{
    return remote_job(o, JOB_ADD, paths, n, in, false, false);
}

int bkc_remote_info(const bkc_remote_opts_t *o, bool json)
{
    bk_redis_t *r = open_remote(o);
    if (!r)
        return 2;
    bk_redis_info_t info;
    bk_status_t st = bk_redis_info(r, &info);
    if (st != BK_OK) {
        bkc_error("%s: %s", shown_url(o->url), bk_redis_error(r));
        bk_redis_close(r);
        return 2;
    }
    const char *url = shown_url(o->url);
    if (json && strpbrk(url, "\"\\"))
        url = "(a URL with quotes)";
    if (json)
        printf("{\"url\": \"%s\", \"shards\": %u, \"capacity\": %" PRIu64
               ", \"error_rate\": %.17g, \"items\": %" PRIu64 ", \"bytes\": %" PRIu64
               ", \"nodes\": %u, \"cluster\": %s}\n",
               url, info.shards, info.capacity, info.error_rate, info.items, info.bytes,
               info.nodes, info.cluster ? "true" : "false");
    else
        printf("url:        %s\n"
               "shards:     %u on %u %s\n"
               "capacity:   %" PRIu64 "\n"
               "error rate: %g\n"
               "items:      %" PRIu64 "\n"
               "bytes:      %" PRIu64 "\n",
               url, info.shards, info.nodes,
               info.cluster ? (info.nodes == 1 ? "cluster node" : "cluster nodes") : "server",
               info.capacity, info.error_rate, info.items, info.bytes);
    bk_redis_close(r);
    return 0;
}
