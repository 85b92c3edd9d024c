/*
 * The checkpoint journal's read side (docs/FORMAT.md, "Checkpoints and
 * their journal"), run by every load and open of a filter file: bkf_settle
 * waits for a checkpoint in progress (the shared side of the checkpoint
 * lock) and finishes one a killed writer left, replaying its whole journal
 * or removing a torn or stale one, so what is read next is a whole
 * checkpoint. The writer is checkpoint.c; the two share the lock, the
 * journal's name and its layout (journal.h).
 */
#define _GNU_SOURCE
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- the lock ---- */

/* Takes (F_RDLCK, F_WRLCK, waiting) or drops (F_UNLCK) the checkpoint lock
 * of fd's open file. 0; -1 with errno. A filesystem without such locks
 * goes on unlocked: the journal alone still keeps every file whole. */
int bkf_journal_lock(int fd, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = CP_LOCK_AT;
    fl.l_len = 1;
    while (fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
        if (errno == EINTR)
            continue;
        if (errno == EINVAL || errno == ENOLCK || errno == EOPNOTSUPP)
            return 0;
        return -1;
    }
    return 0;
}

char *bkf_journal_path(const char *target)
{
    size_t n = strlen(target);
    char *j = bki_malloc(n + sizeof "-journal");
    if (j) {
        memcpy(j, target, n);
        memcpy(j + n, "-journal", sizeof "-journal");
    }
    return j;
}

/* ---- opening a journal safely ---- */

/* Whether whoever owns the journal st_j could have written the file st_f
 * themselves: root, the file's owner, the caller, or (the file writable by
 * its group or by all) its group or anyone. A journal is replayed into the
 * file, so one planted by somebody else in a directory they can write (a
 * shared or sticky one) must never be: it would write their bytes into a
 * file they may not touch. */
static bool journal_trusted(const struct stat *st_j, const struct stat *st_f)
{
    if (!S_ISREG(st_j->st_mode))
        return false;
    uid_t u = st_j->st_uid;
    if (u == 0 || u == st_f->st_uid || u == geteuid())
        return true;
    if ((st_f->st_mode & S_IWGRP) && st_j->st_gid == st_f->st_gid)
        return true;
    return (st_f->st_mode & S_IWOTH) != 0;
}

int bkf_journal_open(const char *journal, int fd)
{
    /* O_NOFOLLOW: a link named like the journal is not one. O_NONBLOCK: a
     * FIFO planted there opens at once (and is then refused) instead of
     * blocking every load until somebody writes to it. */
    int jfd = open(journal, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (jfd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return -1;
        /* ELOOP: a link; ENXIO: a socket. Anything else (EACCES, EIO) may
         * be a journal the file depends on that cannot be read: an error,
         * never a file read as if no checkpoint had been cut short. */
        return errno == ELOOP || errno == ENXIO ? -2 : -3;
    }
    struct stat js, fs;
    if (fstat(jfd, &js) != 0 || fstat(fd, &fs) != 0 || !journal_trusted(&js, &fs)) {
        close(jfd);
        return -2;
    }
    return jfd;
}

/* ---- reading and replaying a journal ---- */

typedef enum { J_NONE, J_STALE, J_APPLIES } jstate_t;

/* Whether the journal in jfd is whole (every byte its checksum covers, and
 * nothing after) and written for the file fd (same inode and size). Walks
 * it once; with replay_fd >= 0 also writes every run there. */
static bk_status_t journal_walk(int jfd, int fd, int replay_fd, jstate_t *state, uint8_t *buf)
{
    *state = J_STALE;
    struct stat js, fs;
    if (fstat(jfd, &js) != 0 || fstat(fd, &fs) != 0)
        return BK_EIO;
    uint64_t jsize = (uint64_t)js.st_size;
    uint8_t h[CP_JHEAD];
    if (jsize < CP_JHEAD + 8 || bkf_pread_all(jfd, h, CP_JHEAD, 0) != BK_OK)
        return BK_OK;
    if (memcmp(h + J_MAGIC, cp_jmagic, 8) != 0 || bkf_get_u32(h + J_VERSION) != CP_JVERSION)
        return BK_OK;
    uint64_t fsize = get_u64(h + J_FILESIZE), nruns = get_u64(h + J_NRUNS);
    XXH3_state_t sum;
    XXH3_64bits_reset(&sum);
    XXH3_64bits_update(&sum, h, CP_JHEAD);
    uint64_t at = CP_JHEAD, last_end = 0;
    for (uint64_t r = 0; r < nruns; r++) {
        uint8_t e[CP_JRUN];
        if (jsize - at < CP_JRUN + 8 || bkf_pread_all(jfd, e, CP_JRUN, at) != BK_OK)
            return BK_OK;
        XXH3_64bits_update(&sum, e, CP_JRUN);
        at += CP_JRUN;
        uint64_t off = get_u64(e), len = get_u64(e + 8);
        if (off < last_end || off > fsize || len > fsize - off || len > jsize - at - 8)
            return BK_OK;
        last_end = off + len;
        for (uint64_t done = 0; done < len;) {
            uint64_t n = len - done > CP_BUF ? CP_BUF : len - done;
            if (bkf_pread_all(jfd, buf, n, at + done) != BK_OK)
                return BK_OK;
            XXH3_64bits_update(&sum, buf, n);
            if (replay_fd >= 0) {
                bk_status_t st = bkf_pwrite_all(replay_fd, buf, n, off + done);
                if (st != BK_OK)
                    return st;
            }
            done += n;
        }
        at += len;
    }
    uint8_t c[8];
    if (jsize - at != 8 || bkf_pread_all(jfd, c, 8, at) != BK_OK ||
        get_u64(c) != (uint64_t)XXH3_64bits_digest(&sum))
        return BK_OK;
    if (get_u64(h + J_INODE) != (uint64_t)fs.st_ino || fsize != (uint64_t)fs.st_size)
        return BK_OK;
    /* The same inode and size are not the same file: a backup copied over
     * it (cp keeps the inode) would be overwritten by the replay. A file
     * this journal was written for holds, in its header checksum field,
     * the value from before the checkpoint or the one after (8 aligned
     * bytes in one sector, and sectors are written whole). Journals from
     * before these fields (zero there) skip the test. */
    uint64_t old_sum = get_u64(h + J_OLDSUM), sum_at = get_u64(h + J_SUMAT);
    if (sum_at != 0) {
        uint8_t cur[8];
        if (sum_at > fsize - 8 || bkf_pread_all(fd, cur, 8, sum_at) != BK_OK)
            return BK_OK;
        if (get_u64(cur) != old_sum && get_u64(cur) != get_u64(h + J_HEADSUM))
            return BK_OK;
    }
    *state = J_APPLIES;
    return BK_OK;
}

/* Finishes the checkpoint the journal of fd's file describes, or removes a
 * journal that cannot apply. The caller holds the write lock on fd (open
 * for writing), so no writer is between steps 1 and 5. */
bk_status_t bkf_journal_finish(int fd, const char *journal, const char *dir)
{
    /* None, or not a journal any writer of this file made (a link, a FIFO,
     * a stranger's file): nothing to replay; the writer's own checkpoint
     * removes the name or, if it cannot, saves whole instead. */
    int jfd = bkf_journal_open(journal, fd);
    if (jfd == -3)
        return BK_EIO;
    if (jfd < 0)
        return BK_OK;
    uint8_t *buf = bki_malloc(CP_BUF);
    if (!buf) {
        close(jfd);
        return BK_ENOMEM;
    }
    jstate_t state;
    bk_status_t st = journal_walk(jfd, fd, -1, &state, buf);
    if (st == BK_OK && state == J_APPLIES) {
        st = journal_walk(jfd, fd, fd, &state, buf);
        if (st == BK_OK && fdatasync(fd) != 0)
            st = bkf_errno_status();
    }
    bki_free(buf);
    close(jfd);
    if (st != BK_OK)
        return st; /* the journal stays for the next try */
    if (unlink(journal) != 0 && errno != ENOENT)
        return BK_EIO;
    return bkf_fsync_dir(dir);
}

/* Whether a journal exists next to target, and whether it applies to fd
 * (read without the write lock: a hint, checked again under it). */
static jstate_t journal_peek(int fd, const char *journal)
{
    int jfd = bkf_journal_open(journal, fd);
    if (jfd == -3)
        return J_APPLIES; /* cannot tell: the writer path finishes it or says why */
    if (jfd < 0)
        return J_NONE; /* none, or not one to trust: the file is read as it is */
    uint8_t *buf = bki_malloc(CP_BUF);
    jstate_t state = J_STALE;
    if (buf)
        (void)journal_walk(jfd, fd, -1, &state, buf);
    else
        state = J_APPLIES; /* cannot tell: let the writer path decide */
    bki_free(buf);
    close(jfd);
    return state;
}

bk_status_t bkf_settle(int fd, const char *path, const char **why)
{
    if (bkf_journal_lock(fd, F_RDLCK) != 0)
        FAIL(BK_EIO, "cannot lock the file");
    char *target = bkf_link_target(path);
    char *journal = target ? bkf_journal_path(target) : NULL;
    char *dir = target ? bkf_parent_dir(target) : NULL;
    bk_status_t st = BK_OK;
    const char *reason = NULL;
    if (!journal || !dir) {
        st = BK_ENOMEM;
        goto out;
    }
    jstate_t state = journal_peek(fd, journal);
    if (state == J_NONE)
        goto out;
    if (state == J_STALE) {
        /* Under the shared lock no writer is between steps 1 and 5, so
         * this is a dead writer's unfinished journal, or one for a file
         * since replaced: the file does not depend on it. */
        (void)unlink(journal);
        goto out;
    }
    /* A killed writer's whole journal: replay it, under the write lock. */
    int wfd = open(target, O_RDWR | O_CLOEXEC);
    if (wfd < 0) {
        st = BK_EIO;
        reason = "a checkpoint was interrupted and must be finished from its journal, which "
                 "needs write access to the file";
        goto out;
    }
    (void)bkf_journal_lock(fd, F_UNLCK);
    if (bkf_journal_lock(wfd, F_WRLCK) != 0) {
        st = BK_EIO;
        reason = "cannot lock the file";
    } else {
        struct stat a, b;
        if (fstat(fd, &a) == 0 && fstat(wfd, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev)
            st = bkf_journal_finish(wfd, journal, dir);
        if (st != BK_OK)
            reason = "cannot finish an interrupted checkpoint from its journal";
    }
    int saved = errno;
    close(wfd); /* drops its lock */
    errno = saved;
    if (st == BK_OK && bkf_journal_lock(fd, F_RDLCK) != 0) {
        st = BK_EIO;
        reason = "cannot lock the file";
    }
out:
    if (reason && why)
        *why = reason;
    bki_free(dir);
    bki_free(journal);
    bki_free(target);
    return st;
}

void bkf_settle_end(int fd)
{
    int saved = errno;
    (void)bkf_journal_lock(fd, F_UNLCK);
    errno = saved;
}
