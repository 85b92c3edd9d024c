/*
 * Lines read, normalized and hashed ahead of the one thread that uses them,
 * for a job whose order matters (dedup: the first of two equal lines is the
 * one printed). One reader thread copies whole lines from the inputs in
 * blocks; worker threads cut each block into lines, normalize each into its
 * key and hash it as the filter would; the consumer takes the results in
 * input order as batches (batch.h) whose keys, hashes, lines and line
 * numbers are filled. So the consumer does only what must be done in order:
 * probe, add and print.
 *
 * Lines are what bkc_for_each_line gives (input.h: "\n" ends a line, a "\r"
 * before it is dropped, a last line without "\n" is a line), keys what its
 * normalization gives.
 */
#ifndef BKC_AHEAD_H
#define BKC_AHEAD_H

#include "batch.h"
#include "normalize.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bkc_ahead bkc_ahead_t;

typedef struct bkc_ahead_config {
    char **paths;       /* as bkc_for_each_line: "-" is standard input, */
    int npaths;         /* and no paths means standard input alone */
    bkc_norm_t norm;
    bk_hash_id_t hash;  /* the filter's hash and seed: batches carry */
    uint64_t seed;      /* bk_hash_key(hash, seed, key) for each key */
    unsigned workers;   /* threads that cut, normalize and hash (>= 1) */
} bkc_ahead_config_t;

/* What bkc_ahead_next found. */
enum {
    BKC_AHEAD_END = 0,   /* every line of every input was handed out */
    BKC_AHEAD_BATCH = 1, /* a batch */
    BKC_AHEAD_WAIT = 2,  /* none within the time given: the input is slow */
    BKC_AHEAD_ERROR = -1 /* an input could not be opened or read */
};

/* Starts the threads on the inputs. Returns the read-ahead, which the
 * caller ends with bkc_ahead_stop, or NULL when the threads or memory
 * could not be had (the caller then reads the lines itself). While it
 * runs, the input layer's idle hook (input.h) is its own. */
bkc_ahead_t *bkc_ahead_start(const bkc_ahead_config_t *cfg);

/* The next batch in input order, waiting at most timeout_ms (negative:
 * as long as it takes). BKC_AHEAD_BATCH: *b is valid until the next call,
 * *input names its input ("(standard input)" for "-") until the stop;
 * its keys (bkc_batch_keys done), hashes, lines and line numbers are set,
 * its flags are the caller's. BKC_AHEAD_ERROR comes after every line read
 * before the failure was handed out, with the message in
 * bkc_ahead_error; END and ERROR repeat on later calls. */
int bkc_ahead_next(bkc_ahead_t *a, bkc_batch_t **b, const char **input, int timeout_ms);

/* "PATH: reason" (naming the line where it applies) after
 * BKC_AHEAD_ERROR, else "". */
const char *bkc_ahead_error(const bkc_ahead_t *a);

/* Input bytes behind the batches handed out so far (for progress). */
uint64_t bkc_ahead_bytes(const bkc_ahead_t *a);

/* Ends the threads, whatever is left unread (a reader waiting on a slow
 * pipe notices within 50 ms), and frees everything. NULL is a no-op. */
void bkc_ahead_stop(bkc_ahead_t *a);

#endif /* BKC_AHEAD_H */
