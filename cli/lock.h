/*
 * Exclusive locks on filter files for the subcommands that read, change
 * and save one (add, remove, merge into one of its inputs, dedup --state,
 * create --force): two of them on one file would each load the old
 * contents and the last save would throw the other's work away.
 *
 * The lock is flock(2) on the file itself. A save replaces the file by an
 * atomic rename, so the locked inode can stop being the one the path
 * names: after the lock is taken the path is looked up again, and if it
 * now names another file the lock is dropped and taken on that one. The
 * lock is held from before the load until after the save, so the next
 * writer loads what this one saved. Readers (check, info) take no lock:
 * the rename never shows them a half-written file.
 *
 * A writer that has to wait says so after a second, naming the process it
 * waits for (from /proc/locks when it can be read); with --no-wait it
 * gives up at once instead (exit 2).
 */
#ifndef BKC_LOCK_H
#define BKC_LOCK_H

#include <stdbool.h>

typedef struct bkc_lock {
    int fd; /* -1 when not held */
} bkc_lock_t;

#define BKC_LOCK_NONE {-1}

/* Set by --no-wait: fail at once instead of waiting for another writer. */
extern bool bkc_lock_no_wait;

/* Takes the exclusive lock of the file at path. 0 when held; 1 when path
 * does not exist (nothing locked); 2 after a message naming the file (it
 * cannot be opened, or is locked and --no-wait was given). */
int bkc_lock_take(const char *path, bkc_lock_t *lock);

/* Releases the lock (after the save). A lock not held is a no-op. */
void bkc_lock_release(bkc_lock_t *lock);

#endif /* BKC_LOCK_H */
