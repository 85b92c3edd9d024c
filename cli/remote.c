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

typedef struct rctx {
    bk_redis_t *r;
    job_t job;
    bool absent, count_only;
    char *arena;
    size_t used, cap;
    size_t n;
    size_t line_off[BATCH_LINES], line_len[BATCH_LINES];
    size_t key_off[BATCH_LINES], key_len[BATCH_LINES];
    bk_key_t keys[BATCH_LINES];
    int8_t ans[BATCH_LINES];
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

static int push(rctx_t *c, const char *line, size_t len, const char *key, size_t klen)
{
    bool same = key == line && klen == len;
    size_t need = len + (same ? 0 : klen);
    if (c->used + need > c->cap) {
        size_t cap = c->cap ? c->cap : BATCH_BYTES;
        while (cap < c->used + need)
            cap *= 2;
        char *a = realloc(c->arena, cap);
        if (!a)
            return -1;
        c->arena = a;
        c->cap = cap;
    }
    memcpy(c->arena + c->used, line, len);
    c->line_off[c->n] = c->used;
    c->line_len[c->n] = len;
    c->used += len;
    if (same) {
        c->key_off[c->n] = c->line_off[c->n];
    } else {
        memcpy(c->arena + c->used, key, klen);
        c->key_off[c->n] = c->used;
        c->used += klen;
    }
    c->key_len[c->n] = klen;
    c->n++;
    return 0;
}

/* Sends the batch and prints its answers. 0, or 2 after a message: then
 * the lines printed are those answered before the first line the failure
 * stopped (in input order), every one of them recorded. */
static int flush(rctx_t *c)
{
    if (c->n == 0)
        return 0;
    for (size_t i = 0; i < c->n; i++)
        c->keys[i] = (bk_key_t){c->arena + c->key_off[i], c->key_len[i]};
    bk_status_t st = c->job == JOB_CHECK ? bk_redis_contains(c->r, c->keys, c->n, c->ans)
                                         : bk_redis_claim(c->r, c->keys, c->n, c->ans);
    int rc = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->ans[i] < 0)
            break;
        c->lines++;
        bool show = c->job == JOB_CHECK ? (c->ans[i] == 1) != c->absent : c->ans[i] == 1;
        if (!show)
            continue;
        c->hits++;
        if (c->job == JOB_ADD || c->count_only)
            continue;
        if (bkc_out_line(c->arena + c->line_off[i], c->line_len[i]) != 0) {
            rc = 2; /* reported by bkc_stdout_finish */
            break;
        }
    }
    if (st != BK_OK) {
        bkc_error("%s", bk_redis_error(c->r));
        rc = 2;
    }
    c->n = 0;
    c->used = 0;
    return rc;
}

static int on_line(void *vc, const char *line, size_t len, const char *key, size_t klen,
                   const bkc_reader_t *r)
{
    rctx_t *c = vc;
    if (c->failed)
        return c->failed;
    if (push(c, line, len, key, klen) != 0)
        return bkc_line_error(NULL, r, "out of memory");
    if (c->n == BATCH_LINES || c->used >= BATCH_BYTES)
        return flush(c);
    return 0;
}

static int on_end(void *vc, const bkc_reader_t *r)
{
    (void)r;
    rctx_t *c = vc;
    return c->failed ? c->failed : flush(c);
}

/* The input is about to wait: what was read goes out now. */
static int on_idle(void *vc)
{
    rctx_t *c = vc;
    if (!c->failed)
        c->failed = flush(c);
    if (!c->failed)
        (void)bkc_out_flush();
    return -1;
}

static int run_lines(rctx_t *c, char **paths, int n, const bkc_input_opts_t *in)
{
    bkc_stdout_setup();
    bkc_reader_set_idle_hook(on_idle, c);
    int rc = bkc_for_each_line(paths, n, in->norm, NULL, on_line, on_end, c);
    bkc_reader_set_idle_hook(NULL, NULL);
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
    return c;
}

static void free_ctx(rctx_t *c)
{
    if (c)
        free(c->arena);
    free(c);
}

int bkc_remote_dedup(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in)
{
    bk_redis_t *r = open_remote(o);
    if (!r)
        return 2;
    if (!bk_redis_has_claims(r))
        bkc_error("%s: warning: the server has no BF.CLAIM (RedisBloom, not bloomkit.so): lines "
                  "are added with BF.MADD, and a reply lost to a dropped connection makes this "
                  "run stop with its lines recorded but never printed",
                  shown_url(o->url));
    rctx_t *c = new_ctx(r, JOB_DEDUP);
    int rc = c ? run_lines(c, paths, n, in) : 2;
    if (c && rc == 0 && summary(in))
        fprintf(stderr, "bloomkit dedup: %s: %" PRIu64 " lines, %" PRIu64 " new\n",
                shown_url(o->url), c->lines, c->hits);
    free_ctx(c);
    bk_redis_close(r);
    return rc;
}

int bkc_remote_check(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in,
                     bool absent, bool count_only)
{
    bk_redis_t *r = open_remote(o);
    if (!r)
        return 2;
    rctx_t *c = new_ctx(r, JOB_CHECK);
    int rc = 2;
    if (c) {
        c->absent = absent;
        c->count_only = count_only;
        rc = run_lines(c, paths, n, in);
        if (rc == 0 && count_only)
            printf("%" PRIu64 "\n", c->hits);
        if (rc == 0)
            rc = c->hits ? 0 : 1;
    }
    free_ctx(c);
    bk_redis_close(r);
    return rc;
}

int bkc_remote_add(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in)
{
    bk_redis_t *r = open_remote(o);
    if (!r)
        return 2;
    rctx_t *c = new_ctx(r, JOB_ADD);
    int rc = c ? run_lines(c, paths, n, in) : 2;
    if (c && rc == 0 && summary(in))
        fprintf(stderr, "bloomkit add: %s: %" PRIu64 " lines, %" PRIu64 " new\n",
                shown_url(o->url), c->lines, c->hits);
    free_ctx(c);
    bk_redis_close(r);
    return rc;
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
