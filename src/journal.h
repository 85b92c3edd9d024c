/*
 * The checkpoint journal's layout and lock, shared by its writer
 * (checkpoint.c) and its reader (journal.c); docs/FORMAT.md, "Checkpoints
 * and their journal", is the spec.
 */
#ifndef BLOOMKIT_JOURNAL_H
#define BLOOMKIT_JOURNAL_H

#include "codec.h"

#define CP_JHEAD 64u
#define CP_JRUN 16u
#define CP_JVERSION 1u
#define CP_BUF (1u << 20)
/* The byte the lock covers: past any file, so it never blocks I/O. */
#define CP_LOCK_AT ((off_t)1 << 62)

/* The journal's magic: \x89BKJ\r\n^Z\n. */
static const uint8_t cp_jmagic[8] __attribute__((unused)) = {0x89, 'B', 'K', 'J',
                                                             '\r', '\n', 0x1a, '\n'};

/* Journal header field offsets (docs/FORMAT.md). */
enum {
    J_MAGIC = 0,
    J_VERSION = 8,
    J_FILESIZE = 16,
    J_INODE = 24,
    J_HEADSUM = 32,
    J_NRUNS = 40,
    J_OLDSUM = 48, /* the header checksum before the changes */
    J_SUMAT = 56   /* where the header checksum lies in the file; 0: unknown */
};

/* Takes (F_RDLCK, F_WRLCK, waiting) or drops (F_UNLCK) the checkpoint lock
 * of fd's open file: an OFD lock on the byte at CP_LOCK_AT. 0; -1 with
 * errno. A filesystem without such locks goes on unlocked: the journal
 * alone still keeps every file whole. */
BKI_HIDDEN int bkf_journal_lock(int fd, short type);
/* Opens the journal beside the file open at fd for reading, without
 * following a link or blocking on a FIFO: the descriptor; -1 if there is
 * none; -2 if what is there is no journal to trust (a link, not a regular
 * file, or owned by someone who could not write the file: see journal.c);
 * -3 if it cannot be opened (errno: EACCES, EIO...). */
BKI_HIDDEN int bkf_journal_open(const char *journal, int fd);
/* target + "-journal", heap-owned; NULL without memory. */
BKI_HIDDEN char *bkf_journal_path(const char *target);
/* Finishes the checkpoint the journal of fd's file describes (replayed,
 * synced, removed), or removes a journal that cannot apply. The caller
 * holds the write lock on fd, open for writing. */
BKI_HIDDEN bk_status_t bkf_journal_finish(int fd, const char *journal, const char *dir);

#endif /* BLOOMKIT_JOURNAL_H */
