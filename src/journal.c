/*
 * The checkpoint journal's read side (docs/FORMAT.md, "Checkpoints and
 * their journal"), run by every load and open of a filter file: bkf_settle
 * waits for a checkpoint in progress (the shared side of the checkpoint
 * lock) and finishes one a killed writer left, replaying its whole journal
 * or removing a torn or stale one, so what is read next is a whole
 * checkpoint. A journal settled in this boot (its last record names the
 * running kernel's boot id) is read past: the file as this kernel holds it
 * is whole, and two small reads say so. The writer is checkpoint.c; the
 * two share the lock, the journal's name and its layout (journal.h).
 */
#define _GNU_SOURCE
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- this boot ---- */

unsigned bki_test_reboots;

/* The text of a small kernel setting (/proc) into text, NUL-terminated:
 * its length, or -1 where it cannot be read. */
static ssize_t read_setting(const char *path, char *text, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    text[n > 0 ? n : 0] = '\0';
    return n;
}

bool bkf_boot_id(uint8_t id[16])
{
    /* Read once: it changes only with the kernel. 1 read, 2 unreadable. */
    static uint8_t cached[16];
    static int state;
    int st = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (st == 0) {
        char text[64];
        ssize_t n = read_setting("/proc/sys/kernel/random/boot_id", text, sizeof text);
        uint8_t got[16];
        int k = 0;
        for (ssize_t i = 0; i < n && k < 32; i++) {
            int v = bki_hexval((unsigned char)text[i]);
            if (v < 0)
                continue; /* the dashes */
            if (k % 2 == 0)
                got[k / 2] = (uint8_t)(v << 4);
            else
                got[k / 2] |= (uint8_t)v;
            k++;
        }
        st = k == 32 ? 1 : 2;
        if (st == 1)
            memcpy(cached, got, 16);
        __atomic_store_n(&state, st, __ATOMIC_RELEASE);
    }
    if (st != 1)
        return false;
    memcpy(id, cached, 16);
    id[0] = (uint8_t)(id[0] + bki_test_reboots);
    return true;
}

void bkf_settled_record(uint8_t *r, const uint8_t boot[16], uint64_t ino, uint64_t size,
                        uint64_t head_sum, uint64_t sum_at, uint64_t seg_sum)
{
    memcpy(r + S_MAGIC, cp_smagic, 8);
    memcpy(r + S_BOOT, boot, 16);
    put_u64(r + S_INODE, ino);
    put_u64(r + S_FILESIZE, size);
    put_u64(r + S_HEADSUM, head_sum);
    put_u64(r + S_SUMAT, sum_at);
    put_u64(r + S_SEGSUM, seg_sum);
    put_u64(r + S_SUM, XXH3_64bits(r, S_SUM));
}

/* Whether r is a settled record, whole. */
static bool record_whole(const uint8_t *r)
{
    return memcmp(r + S_MAGIC, cp_smagic, 8) == 0 &&
           get_u64(r + S_SUM) == (uint64_t)XXH3_64bits(r, S_SUM);
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

int bkf_journal_open(const char *journal, int fd, bool write)
{
    /* O_NOFOLLOW: a link named like the journal is not one. O_NONBLOCK: a
     * FIFO planted there opens at once (and is then refused) instead of
     * blocking every load until somebody writes to it. */
    int jfd = open(journal, (write ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
                                O_CLOEXEC);
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

/* J_SETTLED: every segment's runs are in the file as this boot's kernel
 * holds it (the journal still guards them until the file is synced). */
typedef enum { J_NONE, J_STALE, J_APPLIES, J_SETTLED } jstate_t;

/* The settled record ending the journal in jfd, when it is one for the
 * file fd as it is (inode, size, header checksum), written in this boot:
 * then every segment before it is whole and in the file. Two small reads;
 * nothing is hashed but the record. */
static bool settled_here(int jfd, int fd, uint64_t jsize)
{
    uint8_t r[CP_SETTLED], boot[16], cur[8];
    struct stat fs;
    if (jsize < CP_JHEAD + 8 + CP_SETTLED || fstat(fd, &fs) != 0 ||
        bkf_pread_all(jfd, r, CP_SETTLED, jsize - CP_SETTLED) != BK_OK || !record_whole(r) ||
        !bkf_boot_id(boot) || memcmp(r + S_BOOT, boot, 16) != 0 ||
        get_u64(r + S_INODE) != (uint64_t)fs.st_ino ||
        get_u64(r + S_FILESIZE) != (uint64_t)fs.st_size)
        return false;
    uint64_t at = get_u64(r + S_SUMAT);
    return at <= (uint64_t)fs.st_size - 8 && bkf_pread_all(fd, cur, 8, at) == BK_OK &&
           get_u64(cur) == get_u64(r + S_HEADSUM);
}

/* One segment at journal offset at: whole (its checksum matches, its runs
 * lie inside the stated file size, in order), with *end where it ends
 * (its settled record included) and *record what follows it: 0 no
 * settled record (or a torn one: nothing after it is trusted), 1 one from
 * another boot, 2 one from this boot. With replay_fd >= 0 also writes
 * every run there (only ever a segment already found whole). */
static bool segment_walk(int jfd, uint64_t jsize, uint64_t at, int replay_fd, uint8_t *h,
                         uint64_t *end, int *record, uint8_t *buf, bk_status_t *st)
{
    if (jsize - at < CP_JHEAD + 8 || bkf_pread_all(jfd, h, CP_JHEAD, at) != BK_OK)
        return false;
    if (memcmp(h + J_MAGIC, cp_jmagic, 8) != 0 || bkf_get_u32(h + J_VERSION) != CP_JVERSION)
        return false;
    uint64_t fsize = get_u64(h + J_FILESIZE), nruns = get_u64(h + J_NRUNS);
    XXH3_state_t sum;
    XXH3_64bits_reset(&sum);
    XXH3_64bits_update(&sum, h, CP_JHEAD);
    uint64_t last_end = 0;
    at += CP_JHEAD;
    for (uint64_t r = 0; r < nruns; r++) {
        uint8_t e[CP_JRUN];
        if (jsize - at < CP_JRUN + 8 || bkf_pread_all(jfd, e, CP_JRUN, at) != BK_OK)
            return false;
        XXH3_64bits_update(&sum, e, CP_JRUN);
        at += CP_JRUN;
        uint64_t off = get_u64(e), len = get_u64(e + 8);
        if (off < last_end || off > fsize || len > fsize - off || len > jsize - at - 8)
            return false;
        last_end = off + len;
        for (uint64_t done = 0; done < len;) {
            uint64_t n = len - done > CP_BUF ? CP_BUF : len - done;
            if (bkf_pread_all(jfd, buf, n, at + done) != BK_OK)
                return false;
            XXH3_64bits_update(&sum, buf, n);
            if (replay_fd >= 0 && (*st = bkf_pwrite_all(replay_fd, buf, n, off + done)) != BK_OK)
                return false;
            done += n;
        }
        at += len;
    }
    uint8_t c[8];
    if (jsize - at < 8 || bkf_pread_all(jfd, c, 8, at) != BK_OK ||
        get_u64(c) != (uint64_t)XXH3_64bits_digest(&sum))
        return false;
    at += 8;
    *record = 0;
    uint8_t r[CP_SETTLED], boot[16];
    if (jsize - at >= CP_SETTLED && bkf_pread_all(jfd, r, CP_SETTLED, at) == BK_OK &&
        record_whole(r) && get_u64(r + S_SEGSUM) == get_u64(c)) {
        *record = bkf_boot_id(boot) && memcmp(r + S_BOOT, boot, 16) == 0 ? 2 : 1;
        at += CP_SETTLED;
    }
    *end = at;
    return true;
}

/* What the journal in jfd is to the file fd: its whole segments (a
 * segment torn at the end, a writer killed while appending it, is left
 * out: the file never held any of it), whether they were written for fd
 * (same inode and size, and the file's header checksum one of the values
 * they went through), and whether the last is settled in this boot.
 * *whole_end: where the whole segments end. Reads no further than limit;
 * with replay_fd >= 0 also writes every run there, in order (the caller
 * passes the whole segments' end as limit, so a torn segment's runs are
 * never written). */
static bk_status_t journal_walk(int jfd, int fd, int replay_fd, uint64_t limit, jstate_t *state,
                               uint64_t *whole_end, uint8_t *buf)
{
    *state = J_STALE;
    *whole_end = 0;
    struct stat js, fs;
    if (fstat(jfd, &js) != 0 || fstat(fd, &fs) != 0)
        return BK_EIO;
    uint64_t jsize = (uint64_t)js.st_size < limit ? (uint64_t)js.st_size : limit;
    uint64_t at = 0, sum_at = 0, prev_sum = 0;
    uint8_t h[CP_JHEAD], cur[8] = {0};
    bool settled = false, have_cur = false, sum_seen = false;
    bk_status_t st = BK_OK;
    for (unsigned seg = 0; at < jsize; seg++) {
        uint64_t end;
        int record;
        if (!segment_walk(jfd, jsize, at, replay_fd, h, &end, &record, buf, &st)) {
            if (st != BK_OK)
                return st;
            break;
        }
        if (get_u64(h + J_INODE) != (uint64_t)fs.st_ino ||
            get_u64(h + J_FILESIZE) != (uint64_t)fs.st_size)
            break;
        /* The same inode and size are not the same file: a backup copied
         * over it (cp keeps the inode) would be overwritten by a replay.
         * A file these segments were written for holds, in its header
         * checksum field, the value from before the first or the one
         * after any (8 aligned bytes in one sector, and sectors are
         * written whole). Journals from before these fields (zero there)
         * skip the test. */
        uint64_t old_sum = get_u64(h + J_OLDSUM), new_sum = get_u64(h + J_HEADSUM);
        if (seg > 0 && (old_sum != prev_sum || get_u64(h + J_SUMAT) != sum_at))
            break; /* not the next segment of this chain */
        if (seg == 0) {
            sum_at = get_u64(h + J_SUMAT);
            if (sum_at != 0) {
                if (sum_at > (uint64_t)fs.st_size - 8 || bkf_pread_all(fd, cur, 8, sum_at) != BK_OK)
                    return BK_OK;
                have_cur = true;
                sum_seen = get_u64(cur) == old_sum;
            }
        }
        if (have_cur && get_u64(cur) == new_sum)
            sum_seen = true;
        prev_sum = new_sum;
        settled = record == 2;
        at = end;
        *whole_end = end;
        if (record == 0)
            break; /* a segment is appended only after the last settled */
    }
    if (*whole_end == 0 || (sum_at != 0 && !sum_seen))
        return BK_OK;
    /* Settled only if the file holds the last segment's header checksum:
     * one at an earlier value was written over since (a copy of the file
     * as it was), and the segments are replayed into it. */
    *state = settled && sum_at != 0 && get_u64(cur) == prev_sum ? J_SETTLED : J_APPLIES;
    return BK_OK;
}

/* A centisecond setting of the kernel's writeback (/proc/sys/vm/NAME);
 * def where it cannot be read. */
static long vm_centisecs(const char *name, long def)
{
    char path[64], text[32];
    snprintf(path, sizeof path, "/proc/sys/vm/%s", name);
    ssize_t n = read_setting(path, text, sizeof text);
    char *end;
    long v = n > 0 ? strtol(text, &end, 10) : -1;
    return n > 0 && end != text && v >= 0 ? v : def;
}

/* Seconds after which the kernel has written a file's dirty pages back
 * (it writes those dirty for dirty_expire_centisecs, 30 s by default, on
 * passes dirty_writeback_centisecs apart, 5 s), with 10 s to spare. */
static long writeback_delay(void)
{
    static long delay; /* 0: not read yet */
    long d = __atomic_load_n(&delay, __ATOMIC_RELAXED);
    if (d == 0) {
        d = (vm_centisecs("dirty_expire_centisecs", 3000) +
             vm_centisecs("dirty_writeback_centisecs", 500)) / 100 + 10;
        __atomic_store_n(&delay, d, __ATOMIC_RELAXED);
    }
    return d;
}

int bki_test_retire;

/* Whether a journal settled in this boot should be retired now (the file
 * synced, the journal removed) rather than appended to: when it has
 * reached cp_jmax, or when it is older than the kernel's writeback delay
 * (every page its checkpoints wrote is on disk by then, and the file's
 * sync nearly free). Otherwise appending costs a run less: a retirement
 * removes a file (a large journal's blocks freed, and discarded where the
 * file system does that) and syncs the directory twice. Asking the kernel
 * whether the file is written back (cachestat) took 3 ms for a 2 GB
 * state's page cache, more than the append it could save. */
static bool worth_retiring(int fd, int jfd, uint64_t jsize)
{
    if (bki_test_retire)
        return bki_test_retire > 0;
    struct stat fs;
    if (fstat(fd, &fs) != 0 || jsize >= cp_jmax((uint64_t)fs.st_size))
        return true;
    struct stat js;
    struct timespec now;
    if (fstat(jfd, &js) != 0 || clock_gettime(CLOCK_REALTIME, &now) != 0)
        return true;
    long age = (long)(now.tv_sec - js.st_mtim.tv_sec);
    return age < 0 || age >= writeback_delay();
}

bk_status_t bkf_journal_finish(int fd, const char *journal, const char *dir, uint64_t *append)
{
    if (append)
        *append = 0;
    /* None, or not a journal any writer of this file made (a link, a FIFO,
     * a stranger's file): nothing to replay; the writer's own checkpoint
     * removes the name or, if it cannot, saves whole instead. */
    int jfd = bkf_journal_open(journal, fd, false);
    if (jfd == -3)
        return BK_EIO;
    if (jfd < 0)
        return BK_OK;
    struct stat js;
    if (fstat(jfd, &js) != 0) {
        close(jfd);
        return BK_EIO;
    }
    uint64_t jsize = (uint64_t)js.st_size, whole_end = jsize;
    jstate_t state = J_SETTLED;
    bk_status_t st = BK_OK;
    uint8_t *buf = NULL;
    if (!settled_here(jfd, fd, jsize)) {
        buf = bki_malloc(CP_BUF);
        st = buf ? journal_walk(jfd, fd, -1, UINT64_MAX, &state, &whole_end, buf) : BK_ENOMEM;
    }
    if (st == BK_OK && state == J_SETTLED && append && !worth_retiring(fd, jfd, whole_end)) {
        *append = whole_end; /* a torn segment after it is cut off there */
        bki_free(buf);
        close(jfd);
        return BK_OK;
    }
    if (st == BK_OK && state == J_APPLIES) {
        uint64_t end2;
        st = journal_walk(jfd, fd, fd, whole_end, &state, &end2, buf);
    }
    bki_free(buf);
    close(jfd);
    if (st != BK_OK)
        return st; /* the journal stays for the next try */
    if (state == J_STALE) {
        if (unlink(journal) != 0 && errno != ENOENT)
            return BK_EIO;
        return bkf_fsync_dir(dir);
    }
    return bkf_journal_retire(fd, journal, dir);
}

bk_status_t bkf_journal_retire(int fd, const char *journal, const char *dir)
{
    if (fdatasync(fd) != 0)
        return bkf_errno_status(); /* the journal stays for the next try */
    if (unlink(journal) != 0 && errno != ENOENT)
        return BK_EIO;
    return bkf_fsync_dir(dir);
}

/* Whether a journal exists next to target, and what it is to fd (read
 * without the write lock: a hint, checked again under it). */
static jstate_t journal_peek(int fd, const char *journal)
{
    int jfd = bkf_journal_open(journal, fd, false);
    if (jfd == -3)
        return J_APPLIES; /* cannot tell: the writer path finishes it or says why */
    if (jfd < 0)
        return J_NONE; /* none, or not one to trust: the file is read as it is */
    struct stat js;
    jstate_t state = J_APPLIES; /* cannot tell: let the writer path decide */
    if (fstat(jfd, &js) == 0 && settled_here(jfd, fd, (uint64_t)js.st_size)) {
        close(jfd);
        return J_SETTLED;
    }
    uint8_t *buf = bki_malloc(CP_BUF);
    uint64_t end;
    if (buf && journal_walk(jfd, fd, -1, UINT64_MAX, &state, &end, buf) != BK_OK)
        state = J_APPLIES;
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
    if (state == J_NONE || state == J_SETTLED)
        goto out; /* settled: the file as this kernel holds it is whole */
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
        reason = "a checkpoint was interrupted (or the machine restarted before it reached the "
                 "disk) and must be finished from its journal, which needs write access to the file";
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
            st = bkf_journal_finish(wfd, journal, dir, NULL);
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
