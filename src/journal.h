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

/* The settled record's magic: \x89BKS\r\n^Z\n. */
static const uint8_t cp_smagic[8] __attribute__((unused)) = {0x89, 'B', 'K', 'S',
                                                             '\r', '\n', 0x1a, '\n'};

/* Journal segment header field offsets (docs/FORMAT.md). */
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

/* The settled record that follows a segment once its runs are in the
 * file (written by this boot's kernel, not yet known to be on disk). */
#define CP_SETTLED 72u
enum {
    S_MAGIC = 0,
    S_BOOT = 8,      /* 16 bytes: the kernel's boot id */
    S_INODE = 24,
    S_FILESIZE = 32,
    S_HEADSUM = 40,  /* the file's header checksum with the runs in */
    S_SUMAT = 48,    /* where that checksum lies in the file */
    S_SEGSUM = 56,   /* the segment's own checksum: which segment */
    S_SUM = 64       /* XXH3-64 of the record's bytes before it */
};
/* A settled journal is retired (the file synced, the journal removed)
 * once it reaches the file's size (at least 1 MiB, at most 64 MiB), even
 * while the file's pages are still being written back: it holds disk
 * space beside the file until then. */
#define CP_JMAX ((uint64_t)64 << 20)
static inline uint64_t cp_jmax(uint64_t file_size)
{
    uint64_t m = file_size < ((uint64_t)1 << 20) ? (uint64_t)1 << 20 : file_size;
    return m < CP_JMAX ? m : CP_JMAX;
}

/* The running kernel's boot id into id: true; false where it cannot be
 * read (no /proc), and then no journal is left settled. */
BKI_HIDDEN bool bkf_boot_id(uint8_t id[16]);
/* Tests only: added to the boot id's first byte, as if the machine had
 * restarted since (tests/unit/lib/test_checkpoint.c). */
BKI_HIDDEN extern unsigned bki_test_reboots;
/* Tests only: 1 retires a settled journal at every checkpoint, -1 never
 * (the size limit, cp_jmax, ignored too), 0 decides as described. */
BKI_HIDDEN extern int bki_test_retire;

/* Takes (F_RDLCK, F_WRLCK, waiting) or drops (F_UNLCK) the checkpoint lock
 * of fd's open file: an OFD lock on the byte at CP_LOCK_AT. 0; -1 with
 * errno. A filesystem without such locks goes on unlocked: the journal
 * alone still keeps every file whole. */
BKI_HIDDEN int bkf_journal_lock(int fd, short type);
/* Opens the journal beside the file open at fd (for reading, or with
 * write true for appending), without
 * following a link or blocking on a FIFO: the descriptor; -1 if there is
 * none; -2 if what is there is no journal to trust (a link, not a regular
 * file, or owned by someone who could not write the file: see journal.c);
 * -3 if it cannot be opened (errno: EACCES, EIO...). */
BKI_HIDDEN int bkf_journal_open(const char *journal, int fd, bool write);
/* target + "-journal", heap-owned; NULL without memory. */
BKI_HIDDEN char *bkf_journal_path(const char *target);
/* Finishes the checkpoints the journal of fd's file describes (replayed
 * unless settled in this boot, the file synced, the journal removed), or
 * removes a journal that cannot apply. With append non-NULL (a writer
 * about to checkpoint) a journal settled in this boot whose file is still
 * being written back is kept instead: *append is then the journal's size,
 * where the next segment goes (0: no journal kept). The caller holds the
 * write lock on fd, open for writing. */
BKI_HIDDEN bk_status_t bkf_journal_finish(int fd, const char *journal, const char *dir,
                                          uint64_t *append);
/* The file open at fd synced, then its journal removed and the directory
 * synced (so a removed journal never comes back after a power loss to be
 * replayed over a later state). On failure the journal stays. */
BKI_HIDDEN bk_status_t bkf_journal_retire(int fd, const char *journal, const char *dir);
/* The settled record of a segment into r (CP_SETTLED bytes), for the
 * file (inode, size) whose header checksum head_sum lies at sum_at. */
BKI_HIDDEN void bkf_settled_record(uint8_t *r, const uint8_t boot[16], uint64_t ino,
                                   uint64_t size, uint64_t head_sum, uint64_t sum_at,
                                   uint64_t seg_sum);

#endif /* BLOOMKIT_JOURNAL_H */
