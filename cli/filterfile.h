/*
 * Filter files as the subcommands use them: load, map, save, and the
 * over-capacity warning, each printing one message that names the file
 * when something is wrong (the library returns statuses; the words are
 * here).
 */
#ifndef BKC_FILTERFILE_H
#define BKC_FILTERFILE_H

#include "bloomkit/bloomkit.h"
#include "lock.h"

#include <stdbool.h>

/* Loads a filter file, printing one line naming the file on failure.
 * Returns the filter (caller frees) or NULL. */
bk_filter_t *bkc_load_filter(const char *path);

/* As bkc_load_filter, for a read-modify-write: first takes the file's
 * lock (lock.h) into *lock, which the caller releases after saving. NULL
 * after a message (the lock not held). */
bk_filter_t *bkc_load_filter_locked(const char *path, bkc_lock_t *lock);

/* Whether a filter read from a paged file met a damaged page (its keys
 * there answered "present", never "absent"): -1 after a message naming
 * path and the byte offset, else 0. Asked before answers are printed. */
int bkc_filter_damaged(const bk_filter_t *f, const char *path);

/* Verifies a mapped filter's checksums (bk_filter_verify). 0, or -1
 * after a message naming the file. */
int bkc_verify_mapped(const bk_filter_t *f, const char *path);

/* Takes the FILE operand at argv[optind] (advancing optind past it) and
 * loads it with bkc_load_filter, or with map maps it read-only
 * (bk_filter_open) and guards the mapping (mapguard.h: a file truncated
 * while it is mapped ends the run with exit 2 and a message naming it, not
 * a silent SIGBUS). Sets *path to it and returns the filter (the caller
 * frees it with bkc_filter_operand_free), or NULL after printing why:
 * "FILE is required" as a usage error, or a message naming the file. The
 * subcommand then exits with 2. */
bk_filter_t *bkc_filter_operand(int argc, char **argv, bool map, const char **path);

/* Stops guarding an operand's mapping, if any, and frees it. NULL is a
 * no-op. */
void bkc_filter_operand_free(bk_filter_t *f);

/* Saves atomically, printing one line naming the file on failure. 0 or -1. */
int bkc_save_filter(const bk_filter_t *f, const char *path);
/* Saves f, loaded from path, back to it: a filter read from a paged file
 * by a checkpoint (what changed, in place, crash-safe), any other whole.
 * 0, or -1 after a message. */
int bkc_save_loaded(const bk_filter_t *f, const char *path);
/* As bkc_save_filter, but only where nothing is yet (a new OUT that
 * another process may create meanwhile): -1 after a message naming the
 * file if something is there. */
int bkc_save_new_filter(const bk_filter_t *f, const char *path);

/* For a filter far past its capacity (its expected false-positive rate
 * over twice the one it was sized for; windows and scalable filters never
 * are): says so, naming it, and what to do; true. The caller then exits
 * BKC_EXIT_OVER, so no script misses it. */
bool bkc_far_over_capacity(const bk_filter_t *f, const char *name, const char *advice);
/* The same finding as a warning, for readers of such a filter (check). */
void bkc_warn_far_over_capacity(const bk_filter_t *f, const char *name);

/* Checkpoints of a long-running writer (bk_checkpoint_*: only the sectors
 * that changed are written). start: for f as loaded from path; NULL after
 * a message. save: 0, or -1 after a message naming the file. */
bk_checkpoint_t *bkc_checkpoint_start(const bk_filter_t *f, const char *path);
int bkc_checkpoint_save(bk_checkpoint_t *cp, const bk_filter_t *f, const char *path);

/* A new filter f, about to be saved at path, is checked against what this
 * machine has: refused (a message with the sizes in words, -1) when its
 * payload is larger than the memory available or the free space on
 * path's file system (path NULL: in memory only), unless force. A typo in -n or -p (1e13 for 1e9)
 * otherwise made a 65 TB sparse file and spent minutes checksumming its
 * zeros. 0 when it fits (or force). */
int bkc_new_filter_fits(const bk_filter_t *f, const char *path, bool force, const char *override);

/* If a non-scaling filter holds more items than it was sized for, warns
 * "NAME: warning: N items exceed the capacity C; WHAT P (...)" with P its
 * expected FPR now. */
void bkc_warn_over_capacity(const bk_filter_t *f, const char *name, const char *what);

#endif /* BKC_FILTERFILE_H */
