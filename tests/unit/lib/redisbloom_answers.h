/*
 * What RedisBloom 2.8.20 wrote and answered (tests/data/redisbloom/
 * answers.txt, its format in README.md there), read once for the tests
 * that hold bloomkit's takeover of RedisBloom data to it: test_redisbloom.c
 * (Bloom chains) and test_cuckoo.c (cuckoo filters). Header-only: each
 * test includes it once.
 */
#ifndef BKT_REDISBLOOM_ANSWERS_H
#define BKT_REDISBLOOM_ANSWERS_H

#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RB_MAX_KEYS 16
#define RB_MAX_CHUNKS 16

typedef struct rb_chunk {
    long long iter;
    uint8_t *bytes;
    size_t len;
} rb_chunk_t;

typedef struct rb_answer {
    char name[64];
    char info[512];  /* "Field=value ..." (spaces in names as '_') */
    uint64_t card;
    rb_chunk_t chunks[RB_MAX_CHUNKS]; /* SCANDUMP pairs; [0] is the header */
    int nchunks;
    char **items;
    size_t nitems;
    bool *positive;  /* per probe: RedisBloom answered 1 */
} rb_answer_t;

static rb_answer_t rb_keys[RB_MAX_KEYS];
static int rb_nkeys;
static uint64_t rb_nprobes;

static uint8_t *rb_unhex(const char *s, size_t *len)
{
    size_t n = strlen(s) / 2;
    uint8_t *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        b[i] = (uint8_t)v;
    }
    *len = n;
    return b;
}

/* A numeric field of a key's info line ("Capacity"), UINT64_MAX if absent. */
static uint64_t rb_info(const rb_answer_t *a, const char *field)
{
    char want[80];
    snprintf(want, sizeof want, "%s=", field);
    const char *p = strstr(a->info, want);
    return p ? strtoull(p + strlen(want), NULL, 10) : UINT64_MAX;
}

/* The key named `name`, or NULL. */
static const rb_answer_t *rb_key(const char *name)
{
    for (int i = 0; i < rb_nkeys; i++)
        if (!strcmp(rb_keys[i].name, name))
            return &rb_keys[i];
    return NULL;
}

/* Reads answers.txt under $BK_TEST_DATA (default tests/data); false if it
 * cannot be read. */
static bool rb_load_answers(void)
{
    char path[512];
    const char *d = getenv("BK_TEST_DATA");
    snprintf(path, sizeof path, "%s/redisbloom/answers.txt", d ? d : "tests/data");
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    char *line = NULL;
    size_t cap = 0;
    rb_answer_t *a = NULL;
    while (getline(&line, &cap, fp) > 0) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "probes ", 7)) {
            rb_nprobes = strtoull(strrchr(line, ' ') + 1, NULL, 10);
        } else if (!strncmp(line, "key ", 4) && rb_nkeys < RB_MAX_KEYS) {
            a = &rb_keys[rb_nkeys++];
            snprintf(a->name, sizeof a->name, "%s", line + 4);
            a->positive = calloc(rb_nprobes ? rb_nprobes : 1, sizeof *a->positive);
        } else if (!a) {
            continue;
        } else if (!strncmp(line, "info ", 5)) {
            snprintf(a->info, sizeof a->info, "%s", line + 5);
        } else if (!strncmp(line, "card ", 5)) {
            a->card = strtoull(line + 5, NULL, 10);
        } else if (!strncmp(line, "items ", 6)) {
            a->items = calloc(strtoull(strrchr(line, ' ') + 1, NULL, 10) + 1, sizeof(char *));
        } else if (!strncmp(line, "chunk ", 6) && a->nchunks < RB_MAX_CHUNKS) {
            rb_chunk_t *c = &a->chunks[a->nchunks++];
            c->iter = atoll(line + 6);
            c->bytes = rb_unhex(strchr(line + 6, ' ') + 1, &c->len);
        } else if (!strncmp(line, "item ", 5) && a->items) {
            a->items[a->nitems++] = strdup(line + 5);
        } else if (!strncmp(line, "positive ", 9)) {
            uint64_t i = strtoull(line + 9, NULL, 10);
            if (i < rb_nprobes)
                a->positive[i] = true;
        }
    }
    free(line);
    fclose(fp);
    return rb_nkeys > 0 && rb_nprobes > 0;
}

#endif /* BKT_REDISBLOOM_ANSWERS_H */
