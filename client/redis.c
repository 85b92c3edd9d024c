/*
 * libbloomkit-redis: a sharded seen-set in Redis or a Redis Cluster (see
 * include/bloomkit/redis.h for the layout and the promises).
 *
 * One engine runs every command: run() sends a list of keyed commands to
 * the nodes owning their keys' slots, all nodes written before any is
 * read, and sends again what got no answer: a MOVED answer updates the
 * slot map, an ASK one goes to the named node after ASKING, and a lost
 * connection, a timeout or a cluster in the middle of a failover
 * (CLUSTERDOWN, TRYAGAIN, LOADING, MASTERDOWN) is retried with backoff
 * and a fresh slot map until retry_for seconds pass. Only commands that
 * are safe to repeat are resent after a lost reply (claims, checks, the
 * layout's reads and idempotent writes); a BF.MADD is not.
 */
#define _GNU_SOURCE
#include "bloomkit/redis.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT 10.0
#define DEFAULT_RETRY_FOR 15.0
#define DEFAULT_CLAIM_SECONDS 3600u
#define DEFAULT_RATE 0.01
#define SHARDS_PER_MASTER 8
#define MAX_SHARDS 16384u
/* Shard slack: standard deviations of the binomial count per shard (the
 * same as Python's SIGMAS). */
#define SIGMAS 4.0

/* NAME:meta written whole or not at all (the same script as Python's). */
static const char CREATE_META[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'capacity', ARGV[2], 'error_rate', ARGV[3])\n"
    "return 1\n";

/* Connections to a node, one per lane: lane 0 carries the layout's and
 * the slot map's commands, lanes 1 and 2 a call's items each, so that two
 * calls can be in flight at once (bk_redis_claim_send) with each lane's
 * replies belonging to one call. */
#define LANES 3
#define ITEM_LANES 2

typedef struct node {
    char *host;
    int port;
    redisContext *c[LANES]; /* NULL until connected, and after a failure */
} node_t;

struct bk_redis {
    char *name, *user, *pass;
    node_t *nodes;
    size_t nnodes, capnodes;
    int16_t slot_node[BK_REDIS_SLOTS]; /* -1: unknown (the seed is asked) */
    bool cluster, claims;
    unsigned shards;
    uint64_t capacity;
    double error_rate;
    char **keys; /* shard keys; keys[shards] is NAME:meta */
    double timeout, retry_for;
    unsigned claim_seconds;
    bool lane_busy[LANES];
    char err[512];
};

/* ---- small helpers ------------------------------------------------------ */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static bk_status_t fail(bk_redis_t *r, bk_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    return st;
}

static bool starts(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

/* CRC16-XMODEM, Redis Cluster's key hash. */
static uint16_t crc16(const uint8_t *p, size_t n)
{
    uint16_t crc = 0;
    while (n--) {
        crc ^= (uint16_t)(*p++ << 8);
        for (int i = 0; i < 8; i++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned bk_redis_key_slot(const void *key, size_t len)
{
    const uint8_t *k = key;
    const uint8_t *open = memchr(k, '{', len);
    if (open) {
        size_t at = (size_t)(open - k) + 1;
        const uint8_t *close = memchr(k + at, '}', len - at);
        if (close && close > k + at)
            return crc16(k + at, (size_t)(close - (k + at))) % BK_REDIS_SLOTS;
    }
    return crc16(k, len) % BK_REDIS_SLOTS;
}

unsigned bk_redis_shard_of(const void *item, size_t len, unsigned shards)
{
    if (shards == 0)
        return 0;
    return (unsigned)(bk_hash_raw(BK_HASH_XXH3, BK_REDIS_ROUTE_SEED, item, len) % shards);
}

/* The shortest decimal that reads back as x (Python's repr of a float). */
static void shortest(double x, char *buf, size_t cap)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* ---- nodes and connections ---------------------------------------------- */

/* The node at host:port, added when new; -1 when out of memory. */
static int node_at(bk_redis_t *r, const char *host, size_t hlen, int port)
{
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i].port == port && strlen(r->nodes[i].host) == hlen &&
            memcmp(r->nodes[i].host, host, hlen) == 0)
            return (int)i;
    if (r->nnodes == (size_t)INT16_MAX)
        return -1;
    if (r->nnodes == r->capnodes) {
        size_t cap = r->capnodes ? r->capnodes * 2 : 8;
        node_t *nodes = realloc(r->nodes, cap * sizeof *nodes);
        if (!nodes)
            return -1;
        r->nodes = nodes;
        r->capnodes = cap;
    }
    char *h = strndup(host, hlen);
    if (!h)
        return -1;
    r->nodes[r->nnodes] = (node_t){.host = h, .port = port};
    return (int)r->nnodes++;
}

static void disconnect(node_t *n, int lane)
{
    if (n->c[lane])
        redisFree(n->c[lane]);
    n->c[lane] = NULL;
}

static struct timeval tv_of(double s)
{
    return (struct timeval){(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
}

/* A connected context for node i on a lane, or NULL (r->err says why). */
static redisContext *conn(bk_redis_t *r, int i, int lane)
{
    node_t *n = &r->nodes[i];
    if (n->c[lane] && !n->c[lane]->err)
        return n->c[lane];
    disconnect(n, lane);
    redisContext *c = redisConnectWithTimeout(n->host, n->port, tv_of(r->timeout));
    if (!c || c->err) {
        fail(r, BK_EIO, "cannot connect to %s:%d: %s", n->host, n->port,
             c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv_of(r->timeout));
    if (r->pass) {
        redisReply *a = r->user ? redisCommand(c, "AUTH %s %s", r->user, r->pass)
                                : redisCommand(c, "AUTH %s", r->pass);
        bool ok = a && a->type != REDIS_REPLY_ERROR;
        if (!ok)
            fail(r, BK_EIO, "%s:%d refused the password: %s", n->host, n->port,
                 a ? a->str : c->errstr);
        if (a)
            freeReplyObject(a);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    n->c[lane] = c;
    return c;
}

/* Reads the slot map from the first node that answers CLUSTER SLOTS. */
static bool refresh_slots(bk_redis_t *r)
{
    for (size_t i = 0; i < r->nnodes; i++) {
        redisContext *c = conn(r, (int)i, 0);
        if (!c)
            continue;
        redisReply *rep = redisCommand(c, "CLUSTER SLOTS");
        if (!rep) {
            disconnect(&r->nodes[i], 0);
            continue;
        }
        bool ok = rep->type == REDIS_REPLY_ARRAY && rep->elements > 0;
        for (size_t e = 0; ok && e < rep->elements; e++) {
            redisReply *ent = rep->element[e];
            if (ent->type != REDIS_REPLY_ARRAY || ent->elements < 3 ||
                ent->element[0]->type != REDIS_REPLY_INTEGER ||
                ent->element[1]->type != REDIS_REPLY_INTEGER ||
                ent->element[2]->type != REDIS_REPLY_ARRAY || ent->element[2]->elements < 2 ||
                ent->element[2]->element[0]->type != REDIS_REPLY_STRING ||
                ent->element[2]->element[1]->type != REDIS_REPLY_INTEGER)
                continue;
            long long lo = ent->element[0]->integer, hi = ent->element[1]->integer;
            redisReply *addr = ent->element[2];
            const char *host = addr->element[0]->str;
            size_t hlen = addr->element[0]->len;
            if (hlen == 0) { /* "unknown endpoint": the node we asked */
                host = r->nodes[i].host;
                hlen = strlen(host);
            }
            int node = node_at(r, host, hlen, (int)addr->element[1]->integer);
            if (node < 0 || lo < 0 || hi >= BK_REDIS_SLOTS || lo > hi) {
                ok = node >= 0;
                continue;
            }
            for (long long s = lo; s <= hi; s++)
                r->slot_node[s] = (int16_t)node;
        }
        freeReplyObject(rep);
        if (ok)
            return true;
    }
    return false;
}

/* ---- the engine ----------------------------------------------------------- */

typedef struct cmd {
    int argc;
    const char **argv;
    size_t *lens;
    unsigned slot;
    int ask;          /* >= 0: the node an ASK answer named */
    int sent;         /* the node written to this round, or -1 */
    bool unsure;      /* written, and its reply lost: it may have run */
    redisReply *reply;
} cmd_t;

/* "MOVED 3999 127.0.0.1:6381" or "ASK ...": the named node, or -1. */
static int redirect_node(bk_redis_t *r, const char *msg)
{
    const char *sp = strchr(msg, ' ');
    const char *addr = sp ? strchr(sp + 1, ' ') : NULL;
    const char *colon = addr ? strrchr(addr + 1, ':') : NULL;
    if (!colon)
        return -1;
    addr++;
    return node_at(r, addr, (size_t)(colon - addr), atoi(colon + 1));
}

/* An error answer that a moment's wait can cure. */
static bool transient(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_ERROR &&
           (starts(rep->str, rep->len, "CLUSTERDOWN") || starts(rep->str, rep->len, "TRYAGAIN") ||
            starts(rep->str, rep->len, "LOADING") || starts(rep->str, rep->len, "MASTERDOWN"));
}

/* Writes the commands that have no reply yet on `lane`, every node
 * written before any is read; *lost when a node could not be reached. */
static void send_round(bk_redis_t *r, cmd_t *cmds, size_t n, int lane, bool *lost)
{
    for (size_t i = 0; i < n; i++) {
        cmd_t *c = &cmds[i];
        c->sent = -1;
        if (c->reply)
            continue;
        int node = c->ask >= 0 ? c->ask : r->slot_node[c->slot] >= 0 ? r->slot_node[c->slot] : 0;
        redisContext *ctx = conn(r, node, lane);
        if (!ctx) {
            *lost = true;
            continue;
        }
        if (c->ask >= 0)
            redisAppendCommand(ctx, "ASKING");
        if (redisAppendCommandArgv(ctx, c->argc, c->argv, c->lens) != REDIS_OK) {
            disconnect(&r->nodes[node], lane);
            *lost = true;
            continue;
        }
        c->sent = node;
    }
    for (size_t k = 0; k < r->nnodes; k++) {
        redisContext *ctx = r->nodes[k].c[lane];
        int done = 0;
        while (ctx && !ctx->err && !done)
            if (redisBufferWrite(ctx, &done) != REDIS_OK)
                break;
    }
}

/* Reads the replies of the commands send_round wrote: a MOVED updates the
 * slot map (*moved), an ASK names the node for the next round, a
 * transient error or a lost connection (*lost) leaves the command for the
 * next round (unsure when it may have run), *again when any is left. */
static void read_round(bk_redis_t *r, cmd_t *cmds, size_t n, int lane, bool *lost, bool *again,
                       bool *moved)
{
    for (size_t i = 0; i < n; i++) {
        cmd_t *c = &cmds[i];
        if (c->sent < 0)
            continue;
        node_t *nd = &r->nodes[c->sent];
        redisContext *ctx = nd->c[lane];
        redisReply *rep = NULL;
        if (!ctx || ctx->err) {
            c->unsure = *lost = true;
            continue;
        }
        if (c->ask >= 0) {
            if (redisGetReply(ctx, (void **)&rep) != REDIS_OK) {
                fail(r, BK_EIO, "%s:%d: %s", nd->host, nd->port, ctx->errstr);
                disconnect(nd, lane);
                c->unsure = *lost = true;
                continue;
            }
            freeReplyObject(rep);
            rep = NULL;
            c->ask = -1;
        }
        if (redisGetReply(ctx, (void **)&rep) != REDIS_OK) {
            fail(r, BK_EIO, "%s:%d: %s", nd->host, nd->port,
                 ctx->errstr[0] ? ctx->errstr : "connection lost");
            disconnect(nd, lane);
            c->unsure = *lost = true;
            continue;
        }
        if (rep->type == REDIS_REPLY_ERROR &&
            (starts(rep->str, rep->len, "MOVED ") || starts(rep->str, rep->len, "ASK "))) {
            int to = redirect_node(r, rep->str);
            if (to >= 0 && rep->str[0] == 'M') {
                r->slot_node[c->slot] = (int16_t)to;
                *moved = true;
            } else if (to >= 0) {
                c->ask = to;
            }
            fail(r, BK_EIO, "%s", rep->str);
            freeReplyObject(rep);
            *again = true;
            continue;
        }
        if (transient(rep)) {
            fail(r, BK_EIO, "%s:%d: %s", nd->host, nd->port, rep->str);
            freeReplyObject(rep);
            *again = *lost = true; /* lost: wait, and read the map anew */
            continue;
        }
        c->reply = rep;
    }
}

/* Reads the replies of commands send_round wrote on `lane`, and sends
 * again what got none, until every command has its reply (the caller
 * frees them). `repeat`: commands may be sent again after a lost reply.
 * `lost`: send_round could not reach a node. BK_OK, or BK_EIO with a
 * message. */
static bk_status_t settle(bk_redis_t *r, cmd_t *cmds, size_t n, bool repeat, int lane, bool lost)
{
    double deadline = now() + r->retry_for, wait = 0.01;
    for (unsigned round = 0;; round++) {
        bool again = false, moved = false;
        read_round(r, cmds, n, lane, &lost, &again, &moved);
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            left += cmds[i].reply == NULL;
        if (left == 0)
            return BK_OK;
        if (!repeat) {
            /* a reply lost to a command that must not run twice */
            for (size_t i = 0; i < n; i++)
                if (!cmds[i].reply && cmds[i].unsure)
                    return fail(r, BK_EIO, "%s (a reply was lost, and the command cannot be "
                                           "sent again safely)", r->err);
        }
        if (now() >= deadline)
            return fail(r, BK_EIO, "no answer within %.0f s: %s", r->retry_for, r->err);
        if (lost || (again && round > 0)) {
            nap(wait);
            wait = wait * 2 > 1.0 ? 1.0 : wait * 2;
        }
        if ((lost || moved) && r->cluster)
            (void)refresh_slots(r);
        lost = false;
        send_round(r, cmds, n, lane, &lost);
    }
}

/* Runs cmds[0..n) on lane 0 (the layout's commands): sent, then settled. */
static bk_status_t run(bk_redis_t *r, cmd_t *cmds, size_t n, bool repeat)
{
    bool lost = false;
    send_round(r, cmds, n, 0, &lost);
    return settle(r, cmds, n, repeat, 0, lost);
}

static void free_replies(cmd_t *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cmds[i].reply)
            freeReplyObject(cmds[i].reply);
}

/* One keyed command from up to 8 words (NUL-terminated strings). */
typedef struct one {
    cmd_t cmd;
    const char *argv[8];
    size_t lens[8];
} one_t;

static void one_init(one_t *o, const char *key, int argc, const char *const *words)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        o->argv[i] = words[i];
        o->lens[i] = strlen(words[i]);
    }
    o->cmd = (cmd_t){.argc = argc, .argv = o->argv, .lens = o->lens,
                     .slot = bk_redis_key_slot(key, strlen(key)), .ask = -1};
}

/* ---- the layout ------------------------------------------------------------ */

/* The smallest decimal tag for each shard (Python's shard_tags). */
static bool make_keys(bk_redis_t *r)
{
    unsigned s = r->shards;
    r->keys = calloc((size_t)s + 1, sizeof *r->keys);
    if (!r->keys)
        return false;
    unsigned missing = s;
    char tag[24];
    for (uint64_t cand = 0; missing; cand++) {
        int len = snprintf(tag, sizeof tag, "%llu", (unsigned long long)cand);
        unsigned i = (unsigned)((uint64_t)bk_redis_key_slot(tag, (size_t)len) * s / BK_REDIS_SLOTS);
        if (r->keys[i])
            continue;
        if (asprintf(&r->keys[i], "%s:%u{%s}", r->name, i, tag) < 0) {
            r->keys[i] = NULL;
            return false;
        }
        missing--;
    }
    return asprintf(&r->keys[s], "%s:meta", r->name) >= 0 || (r->keys[s] = NULL, false);
}

static void free_keys(bk_redis_t *r)
{
    if (!r->keys)
        return;
    for (unsigned i = 0; i <= r->shards; i++)
        free(r->keys[i]);
    free(r->keys);
    r->keys = NULL;
}

/* NAME:meta: 1 read (r->shards, capacity, error_rate set), 0 none, 2 half
 * written by an earlier release, -1 failed (message set). */
static int read_meta(bk_redis_t *r, const char *meta_key)
{
    one_t o;
    const char *w[] = {"HGETALL", meta_key};
    one_init(&o, meta_key, 2, w);
    if (run(r, &o.cmd, 1, true) != BK_OK)
        return -1;
    redisReply *rep = o.cmd.reply;
    int rc = 0;
    if (rep->type == REDIS_REPLY_ERROR) {
        fail(r, BK_EINCOMPAT, "%s: %s", meta_key, rep->str);
        rc = -1;
    } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0) {
        int found = 0;
        for (size_t i = 0; i + 1 < rep->elements; i += 2) {
            const char *k = rep->element[i]->str, *v = rep->element[i + 1]->str;
            if (!k || !v)
                continue;
            char *end;
            if (strcmp(k, "shards") == 0) {
                unsigned long x = strtoul(v, &end, 10);
                if (*end || x == 0 || x > MAX_SHARDS)
                    break;
                r->shards = (unsigned)x;
                found |= 1;
            } else if (strcmp(k, "capacity") == 0) {
                r->capacity = strtoull(v, &end, 10);
                found |= *end ? 0 : 2;
            } else if (strcmp(k, "error_rate") == 0) {
                r->error_rate = strtod(v, &end);
                found |= *end || !(r->error_rate > 0 && r->error_rate < 1) ? 0 : 4;
            }
        }
        rc = found == 7 ? 1 : 2;
    }
    free_replies(&o.cmd, 1);
    return rc;
}

/* BF.RESERVE of every shard (an existing key is kept), then NAME:meta. */
static bk_status_t create(bk_redis_t *r, const char *meta_key)
{
    unsigned s = r->shards;
    double mean = (double)r->capacity / s;
    double per = ceil(mean + SIGMAS * sqrt(mean * (1.0 - 1.0 / s)));
    char rate[32], cap[32], shards[16], total[32];
    shortest(r->error_rate, rate, sizeof rate);
    snprintf(cap, sizeof cap, "%.0f", per < 1 ? 1 : per);
    snprintf(shards, sizeof shards, "%u", s);
    snprintf(total, sizeof total, "%llu", (unsigned long long)r->capacity);
    if (!make_keys(r))
        return fail(r, BK_ENOMEM, "out of memory");
    one_t *res = calloc(s, sizeof *res);
    if (!res)
        return fail(r, BK_ENOMEM, "out of memory");
    cmd_t *cmds = calloc(s, sizeof *cmds);
    if (!cmds) {
        free(res);
        return fail(r, BK_ENOMEM, "out of memory");
    }
    /* bloomkit.so: TIGHTENING 0.5, the first sub-filter at the rate itself
     * (the rate at capacity is the one asked for, in 13% less memory than
     * RedisBloom's rule; a shard grown past its capacity may reach twice
     * the rate); RedisBloom has no such option. */
    for (unsigned i = 0; i < s; i++) {
        const char *w[] = {"BF.RESERVE", r->keys[i], rate, cap, "TIGHTENING", "0.5"};
        one_init(&res[i], r->keys[i], r->claims ? 6 : 4, w);
        cmds[i] = res[i].cmd;
    }
    bk_status_t st = run(r, cmds, s, true);
    for (unsigned i = 0; st == BK_OK && i < s; i++) {
        redisReply *rep = cmds[i].reply;
        if (rep->type == REDIS_REPLY_ERROR && !strstr(rep->str, "item exists"))
            st = fail(r, BK_EIO, "BF.RESERVE %s: %s", r->keys[i], rep->str);
    }
    free_replies(cmds, s);
    free(cmds);
    free(res);
    if (st != BK_OK)
        return st;
    one_t o;
    const char *w[] = {"EVAL", CREATE_META, "1", meta_key, shards, total, rate};
    one_init(&o, meta_key, 7, w);
    st = run(r, &o.cmd, 1, true);
    if (st == BK_OK && o.cmd.reply->type == REDIS_REPLY_ERROR)
        st = fail(r, BK_EIO, "%s: %s", meta_key, o.cmd.reply->str);
    free_replies(&o.cmd, 1);
    return st;
}

/* ---- opening ------------------------------------------------------------- */

static bk_status_t parse_url(bk_redis_t *r, const char *url)
{
    const char *p = url;
    if (strncmp(p, "redis://", 8) != 0)
        return fail(r, BK_EINVAL, "'%s' is not a redis:// URL (redis://HOST[:PORT]/NAME)", url);
    p += 8;
    const char *slash = strchr(p, '/');
    if (!slash || !slash[1])
        return fail(r, BK_EINVAL, "'%s' names no filter (redis://HOST[:PORT]/NAME)", url);
    const char *at = memchr(p, '@', (size_t)(slash - p));
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            if (colon > p && !(r->user = strndup(p, (size_t)(colon - p))))
                return fail(r, BK_ENOMEM, "out of memory");
            r->pass = strndup(colon + 1, (size_t)(at - colon - 1));
        } else {
            r->pass = strndup(p, (size_t)(at - p));
        }
        if (!r->pass)
            return fail(r, BK_ENOMEM, "out of memory");
        p = at + 1;
    }
    const char *hend = slash, *colon = NULL;
    if (*p == '[') { /* [IPv6]:port */
        const char *close = memchr(p, ']', (size_t)(slash - p));
        if (!close)
            return fail(r, BK_EINVAL, "'%s': bad host", url);
        colon = close[1] == ':' ? close + 1 : NULL;
        hend = close;
        p++;
    } else {
        colon = memchr(p, ':', (size_t)(slash - p));
        if (colon)
            hend = colon;
    }
    int port = 6379;
    if (colon) {
        char *end;
        long x = strtol(colon + 1, &end, 10);
        if (end != slash || x < 1 || x > 65535)
            return fail(r, BK_EINVAL, "'%s': bad port", url);
        port = (int)x;
    }
    if (hend == p)
        return fail(r, BK_EINVAL, "'%s': no host", url);
    r->name = strdup(slash + 1);
    if (!r->name || node_at(r, p, (size_t)(hend - p), port) < 0)
        return fail(r, BK_ENOMEM, "out of memory");
    if (strpbrk(r->name, "{}"))
        return fail(r, BK_EINVAL, "'%s': a filter's name has no braces", r->name);
    return BK_OK;
}

/* Cluster or not: CLUSTER SLOTS on the seed. */
static bk_status_t discover(bk_redis_t *r)
{
    for (int i = 0; i < BK_REDIS_SLOTS; i++)
        r->slot_node[i] = -1;
    double deadline = now() + r->retry_for, wait = 0.05;
    redisReply *rep = NULL;
    for (;;) {
        redisContext *c = conn(r, 0, 0);
        if (c && (rep = redisCommand(c, "CLUSTER SLOTS")) != NULL && !transient(rep))
            break;
        if (!c) /* nothing there (a wrong port, a server down): said at once */
            return BK_EIO;
        if (rep) {
            fail(r, BK_EIO, "%s:%d: %s", r->nodes[0].host, r->nodes[0].port, rep->str);
            freeReplyObject(rep);
            rep = NULL;
        } else {
            fail(r, BK_EIO, "%s:%d: %s", r->nodes[0].host, r->nodes[0].port, c->errstr);
            disconnect(&r->nodes[0], 0);
        }
        if (now() >= deadline)
            return BK_EIO;
        nap(wait);
        wait = wait * 2 > 1.0 ? 1.0 : wait * 2;
    }
    r->cluster = rep->type == REDIS_REPLY_ARRAY;
    if (rep->type == REDIS_REPLY_ERROR && !strstr(rep->str, "cluster support disabled")) {
        bk_status_t st = fail(r, BK_EIO, "%s:%d: %s", r->nodes[0].host, r->nodes[0].port, rep->str);
        freeReplyObject(rep);
        return st;
    }
    freeReplyObject(rep);
    if (r->cluster && !refresh_slots(r))
        return fail(r, BK_EIO, "%s:%d: no slot map from the cluster", r->nodes[0].host,
                    r->nodes[0].port);
    /* claims: BF.CLAIM is a command of the server's modules (asked
     * again after a lost reply: a lost answer is not a "no") */
    one_t o;
    const char *w[] = {"COMMAND", "INFO", "BF.CLAIM"};
    one_init(&o, r->name, 3, w);
    bk_status_t st = run(r, &o.cmd, 1, true);
    rep = o.cmd.reply;
    r->claims = st == BK_OK && rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
                rep->element[0]->type == REDIS_REPLY_ARRAY;
    free_replies(&o.cmd, 1);
    return st;
}

/* Masters that own at least one slot. */
static unsigned masters(const bk_redis_t *r)
{
    if (!r->cluster)
        return 1;
    unsigned n = 0;
    for (size_t k = 0; k < r->nnodes; k++) {
        bool owns = false;
        for (int s = 0; s < BK_REDIS_SLOTS && !owns; s++)
            owns = r->slot_node[s] == (int16_t)k;
        n += owns;
    }
    return n ? n : 1;
}

bk_status_t bk_redis_open(bk_redis_t **out, const char *url, const bk_redis_opts_t *o)
{
    bk_redis_opts_t none = {0};
    if (!o)
        o = &none;
    bk_redis_t *r = calloc(1, sizeof *r);
    *out = r;
    if (!r)
        return BK_ENOMEM;
    r->timeout = o->timeout > 0 ? o->timeout : DEFAULT_TIMEOUT;
    r->retry_for = o->retry_for > 0 ? o->retry_for : DEFAULT_RETRY_FOR;
    r->claim_seconds = o->claim_seconds ? o->claim_seconds : DEFAULT_CLAIM_SECONDS;
    double rate = o->error_rate > 0 ? o->error_rate : DEFAULT_RATE;
    if (!url)
        return fail(r, BK_EINVAL, "no URL");
    bk_status_t st = parse_url(r, url);
    if (st != BK_OK)
        return st;
    if (!(rate > 0 && rate < 1) || o->shards > MAX_SHARDS || r->claim_seconds > 604800)
        return fail(r, BK_EINVAL, "bad option: error rate in (0, 1), shards 1 to %u, claims "
                                  "kept at most a week", MAX_SHARDS);
    if ((st = discover(r)) != BK_OK)
        return st;
    char *meta_key;
    if (asprintf(&meta_key, "%s:meta", r->name) < 0)
        return fail(r, BK_ENOMEM, "out of memory");
    int got = read_meta(r, meta_key);
    if (got != 1 && got >= 0 && o->capacity > 0) {
        /* a layout half written by an earlier release keeps its count */
        unsigned shards = got == 2 && r->shards ? r->shards : o->shards;
        if (!shards)
            shards = r->cluster ? SHARDS_PER_MASTER * masters(r) : 1;
        r->shards = shards;
        r->capacity = o->capacity;
        r->error_rate = rate;
        st = create(r, meta_key);
        free_keys(r);
        got = st == BK_OK ? read_meta(r, meta_key) : -1;
    }
    free(meta_key);
    if (got < 0)
        return r->err[0] ? BK_EIO : fail(r, BK_EIO, "no answer");
    if (got == 0)
        return fail(r, BK_ENOTFOUND, "no filter '%s' there (give a capacity to create it)",
                    r->name);
    if (got == 2)
        return fail(r, BK_EINCOMPAT, "%s:meta is half written (give a capacity to complete it)",
                    r->name);
    if (o->shards && o->shards != r->shards)
        return fail(r, BK_EINCOMPAT, "'%s' has %u shards, not %u (the count is fixed at creation)",
                    r->name, r->shards, o->shards);
    if (!make_keys(r))
        return fail(r, BK_ENOMEM, "out of memory");
    r->err[0] = '\0';
    return BK_OK;
}

void bk_redis_close(bk_redis_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nnodes; i++) {
        for (int lane = 0; lane < LANES; lane++)
            disconnect(&r->nodes[i], lane);
        free(r->nodes[i].host);
    }
    free(r->nodes);
    free_keys(r);
    free(r->name);
    free(r->user);
    free(r->pass);
    free(r);
}

const char *bk_redis_error(const bk_redis_t *r)
{
    return r ? r->err : "out of memory";
}

bool bk_redis_has_claims(const bk_redis_t *r)
{
    return r->claims;
}

/* ---- items --------------------------------------------------------------- */

typedef enum verb { V_CLAIM, V_MADD, V_MEXISTS } verb_t;

/* A random id for one call's claims: 96 bits, in hex. */
static void claim_batch(char out[25])
{
    uint8_t b[12];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t k = getrandom(b + got, sizeof b - got, 0);
        if (k > 0)
            got += (size_t)k;
        else if (errno != EINTR)
            break;
    }
    if (got < sizeof b) { /* no getrandom: time and address, still unique enough per call */
        uint64_t t = (uint64_t)(now() * 1e9) ^ (uintptr_t)out ^ ((uint64_t)getpid() << 32);
        memcpy(b, &t, 8);
    }
    for (int i = 0; i < 12; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* How an error answer of the server reads as a status. */
static bk_status_t refused(const char *msg)
{
    if (starts(msg, strlen(msg), "OOM"))
        return BK_ENOMEM;
    if (strstr(msg, "full") || strstr(msg, "MAX_BYTES") || strstr(msg, "cannot grow"))
        return BK_EFULL;
    if (starts(msg, strlen(msg), "WRONGTYPE"))
        return BK_EKIND;
    return BK_EIO;
}

struct bk_redis_pending {
    verb_t verb;
    size_t n;      /* items */
    int lane;      /* 1 or 2 */
    bool lost;     /* send_round could not reach a node */
    size_t head;   /* words before the items in each command */
    cmd_t *cmds;
    size_t ncmds;
    const char **argv;
    size_t *lens;
    char (*ids)[BK_REDIS_MAX_ID + 48];
    size_t *first; /* each command's first item in order[] */
    size_t *order; /* item indexes grouped by shard */
    char secs[16];
};

static void pending_free(bk_redis_t *r, bk_redis_pending_t *p)
{
    if (!p)
        return;
    if (p->cmds)
        free_replies(p->cmds, p->ncmds);
    if (p->lane > 0)
        r->lane_busy[p->lane] = false;
    free(p->cmds);
    free(p->argv);
    free(p->lens);
    free(p->ids);
    free(p->first);
    free(p->order);
    free(p);
}

/* The commands of one call: items grouped by shard (in order within
 * each), one command per shard and BK_REDIS_COMMAND_ITEMS items. NULL
 * when out of memory (message set). */
static bk_redis_pending_t *build(bk_redis_t *r, verb_t verb, const bk_key_t *items, size_t n,
                                 const char *id)
{
    unsigned s = r->shards;
    bk_redis_pending_t *p = calloc(1, sizeof *p);
    uint32_t *count = calloc((size_t)s + 1, sizeof *count);
    unsigned *shard = malloc((n ? n : 1) * sizeof *shard);
    if (!p || !count || !shard)
        goto oom;
    p->verb = verb;
    p->n = n;
    p->head = verb == V_CLAIM ? 4 : 2;
    p->order = malloc((n ? n : 1) * sizeof *p->order);
    if (!p->order)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        shard[i] = bk_redis_shard_of(items[i].ptr, items[i].len, s);
        count[shard[i] + 1]++;
    }
    for (unsigned k = 0; k < s; k++)
        p->ncmds += (count[k + 1] + BK_REDIS_COMMAND_ITEMS - 1) / BK_REDIS_COMMAND_ITEMS;
    for (unsigned k = 0; k < s; k++)
        count[k + 1] += count[k];
    for (size_t i = 0; i < n; i++)
        p->order[count[shard[i]]++] = i;
    /* count[k] is now the end of shard k's run in order[] */
    size_t words = n + p->head * p->ncmds + 1;
    p->cmds = calloc(p->ncmds + 1, sizeof *p->cmds);
    p->argv = malloc(words * sizeof *p->argv);
    p->lens = malloc(words * sizeof *p->lens);
    p->ids = verb == V_CLAIM ? malloc((p->ncmds + 1) * sizeof *p->ids) : NULL;
    /* ids: ID:SHARD:START, ID the caller's or 96 random bits */
    p->first = malloc((p->ncmds + 1) * sizeof *p->first);
    if (!p->cmds || !p->argv || !p->lens || (verb == V_CLAIM && !p->ids) || !p->first)
        goto oom;
    char batch[BK_REDIS_MAX_ID + 1];
    if (id)
        snprintf(batch, sizeof batch, "%s", id);
    else
        claim_batch(batch);
    snprintf(p->secs, sizeof p->secs, "%u", r->claim_seconds);
    const char *vname = verb == V_CLAIM ? "BF.CLAIM" : verb == V_MADD ? "BF.MADD" : "BF.MEXISTS";
    size_t c = 0, w = 0;
    for (unsigned k = 0; k < s; k++) {
        size_t lo = k ? count[k - 1] : 0, hi = count[k];
        for (size_t start = lo; start < hi; start += BK_REDIS_COMMAND_ITEMS) {
            size_t end = hi - start > BK_REDIS_COMMAND_ITEMS ? start + BK_REDIS_COMMAND_ITEMS : hi;
            cmd_t *cm = &p->cmds[c];
            cm->argv = p->argv + w;
            cm->lens = p->lens + w;
            cm->slot = bk_redis_key_slot(r->keys[k], strlen(r->keys[k]));
            cm->ask = -1;
            p->first[c] = start;
            p->argv[w] = vname;
            p->lens[w++] = strlen(vname);
            p->argv[w] = r->keys[k];
            p->lens[w++] = strlen(r->keys[k]);
            if (verb == V_CLAIM) {
                int len = snprintf(p->ids[c], sizeof p->ids[c], "%s:%u:%zu", batch, k, start - lo);
                p->argv[w] = p->ids[c];
                p->lens[w++] = (size_t)len;
                p->argv[w] = p->secs;
                p->lens[w++] = strlen(p->secs);
            }
            for (size_t j = start; j < end; j++) {
                p->argv[w] = items[p->order[j]].ptr;
                p->lens[w++] = items[p->order[j]].len;
            }
            cm->argc = (int)(p->head + (end - start));
            c++;
        }
    }
    free(count);
    free(shard);
    return p;
oom:
    free(count);
    free(shard);
    pending_free(r, p);
    fail(r, BK_ENOMEM, "out of memory");
    return NULL;
}

/* The answers of a settled call into answer[] (-1 where none came). */
static bk_status_t answers(bk_redis_t *r, const bk_redis_pending_t *p, int8_t *answer)
{
    bk_status_t st = BK_OK;
    for (size_t k = 0; k < p->ncmds; k++) {
        const cmd_t *cm = &p->cmds[k];
        redisReply *rep = cm->reply;
        size_t m = (size_t)cm->argc - p->head;
        const size_t *idx = p->order + p->first[k];
        const char *vname = cm->argv[0];
        if (rep->type == REDIS_REPLY_ERROR) {
            if (st == BK_OK)
                st = fail(r, refused(rep->str), "%s %s: %s", vname, cm->argv[1], rep->str);
            continue;
        }
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements > m) {
            if (st == BK_OK)
                st = fail(r, BK_EIO, "%s %s: an answer that is not an array of %zu", vname,
                          cm->argv[1], m);
            continue;
        }
        for (size_t j = 0; j < rep->elements; j++) {
            redisReply *e = rep->element[j];
            if (e->type == REDIS_REPLY_INTEGER) {
                answer[idx[j]] = e->integer != 0;
            } else if (e->type == REDIS_REPLY_ERROR) {
                if (st == BK_OK)
                    st = fail(r, refused(e->str), "%s %s: %s", vname, cm->argv[1], e->str);
                break;
            }
        }
        if (rep->elements < m && st == BK_OK)
            st = fail(r, BK_EIO, "%s %s: %zu answers for %zu items", vname, cm->argv[1],
                      rep->elements, m);
    }
    return st;
}

static bk_status_t send_call(bk_redis_t *r, verb_t verb, const bk_key_t *items, size_t n,
                             const char *id, bk_redis_pending_t **out)
{
    *out = NULL;
    if (id && (!id[0] || strlen(id) > BK_REDIS_MAX_ID))
        return fail(r, BK_EINVAL, "a claim id of 1 to %d bytes", BK_REDIS_MAX_ID);
    int lane = 0;
    for (int l = 1; l <= ITEM_LANES && !lane; l++)
        if (!r->lane_busy[l])
            lane = l;
    if (!lane)
        return fail(r, BK_EINVAL, "two calls are in flight already (wait for one first)");
    bk_redis_pending_t *p = build(r, verb, items, n, id);
    if (!p)
        return BK_ENOMEM;
    p->lane = lane;
    r->lane_busy[lane] = true;
    send_round(r, p->cmds, p->ncmds, lane, &p->lost);
    *out = p;
    return BK_OK;
}

bk_status_t bk_redis_wait(bk_redis_t *r, bk_redis_pending_t *p, int8_t *answer)
{
    for (size_t i = 0; i < p->n; i++)
        answer[i] = -1;
    bk_status_t st = settle(r, p->cmds, p->ncmds, p->verb != V_MADD, p->lane, p->lost);
    if (st == BK_OK)
        st = answers(r, p, answer);
    pending_free(r, p);
    return st;
}

bk_status_t bk_redis_claim_send(bk_redis_t *r, const bk_key_t *items, size_t n,
                                bk_redis_pending_t **out)
{
    return send_call(r, r->claims ? V_CLAIM : V_MADD, items, n, NULL, out);
}

bk_status_t bk_redis_claim_send_as(bk_redis_t *r, const char *id, const bk_key_t *items,
                                   size_t n, bk_redis_pending_t **out)
{
    return send_call(r, r->claims ? V_CLAIM : V_MADD, items, n, id, out);
}

bk_status_t bk_redis_contains_send(bk_redis_t *r, const bk_key_t *items, size_t n,
                                   bk_redis_pending_t **out)
{
    return send_call(r, V_MEXISTS, items, n, NULL, out);
}

/* A call sent (status st, pending p) waited for at once. */
static bk_status_t now_call(bk_redis_t *r, bk_status_t st, bk_redis_pending_t *p, size_t n,
                            int8_t *answer)
{
    if (st == BK_OK)
        return bk_redis_wait(r, p, answer);
    for (size_t i = 0; i < n; i++)
        answer[i] = -1;
    return st;
}

bk_status_t bk_redis_claim(bk_redis_t *r, const bk_key_t *items, size_t n, int8_t *answer)
{
    bk_redis_pending_t *p;
    bk_status_t st = bk_redis_claim_send(r, items, n, &p);
    return now_call(r, st, p, n, answer);
}

bk_status_t bk_redis_contains(bk_redis_t *r, const bk_key_t *items, size_t n, int8_t *answer)
{
    bk_redis_pending_t *p;
    bk_status_t st = bk_redis_contains_send(r, items, n, &p);
    return now_call(r, st, p, n, answer);
}

/* ---- the whole filter ------------------------------------------------------ */

/* One command per shard key (`words` before the key), run and checked. */
static bk_status_t per_shard(bk_redis_t *r, const char *verb, cmd_t **out, one_t **hold,
                             bool with_meta)
{
    unsigned n = r->shards + with_meta;
    *out = NULL;
    *hold = NULL;
    one_t *o = calloc(n, sizeof *o);
    cmd_t *cmds = calloc(n, sizeof *cmds);
    if (!o || !cmds) {
        free(o);
        free(cmds);
        return fail(r, BK_ENOMEM, "out of memory");
    }
    for (unsigned i = 0; i < n; i++) {
        const char *w[] = {verb, r->keys[i]};
        one_init(&o[i], r->keys[i], 2, w);
        cmds[i] = o[i].cmd;
    }
    bk_status_t st = run(r, cmds, n, true);
    for (unsigned i = 0; st == BK_OK && i < n; i++)
        if (cmds[i].reply->type == REDIS_REPLY_ERROR)
            st = fail(r, refused(cmds[i].reply->str), "%s %s: %s", verb, r->keys[i],
                      cmds[i].reply->str);
    *out = cmds;
    *hold = o;
    return st;
}

bk_status_t bk_redis_info(bk_redis_t *r, bk_redis_info_t *info)
{
    memset(info, 0, sizeof *info);
    info->shards = r->shards;
    info->capacity = r->capacity;
    info->error_rate = r->error_rate;
    info->cluster = r->cluster;
    cmd_t *cmds;
    one_t *hold;
    bk_status_t st = per_shard(r, "BF.INFO", &cmds, &hold, false);
    bool *used = calloc(r->nnodes + 1, sizeof *used);
    for (unsigned i = 0; st == BK_OK && i < r->shards; i++) {
        redisReply *rep = cmds[i].reply;
        if (rep->type == REDIS_REPLY_ARRAY) {
            for (size_t j = 0; j + 1 < rep->elements; j += 2) {
                const char *k = rep->element[j]->str;
                redisReply *v = rep->element[j + 1];
                if (!k || v->type != REDIS_REPLY_INTEGER)
                    continue;
                if (strcmp(k, "Size") == 0)
                    info->bytes += (uint64_t)v->integer;
                else if (strcmp(k, "Number of items inserted") == 0)
                    info->items += (uint64_t)v->integer;
            }
        }
        int node = r->slot_node[cmds[i].slot];
        if (used && node >= 0 && !used[node]) {
            used[node] = true;
            info->nodes++;
        }
    }
    if (!r->cluster)
        info->nodes = 1;
    free(used);
    if (cmds)
        free_replies(cmds, r->shards);
    free(cmds);
    free(hold);
    return st;
}

bk_status_t bk_redis_delete(bk_redis_t *r)
{
    cmd_t *cmds;
    one_t *hold;
    bk_status_t st = per_shard(r, "DEL", &cmds, &hold, true);
    if (cmds)
        free_replies(cmds, r->shards + 1);
    free(cmds);
    free(hold);
    return st;
}
