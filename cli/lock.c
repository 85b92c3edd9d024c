/*
 * File locks for read-modify-write of filter files (see lock.h).
 */
#define _GNU_SOURCE
#include "lock.h"
#include "message.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

bool bkc_lock_no_wait;

/* How long a writer waits quietly before saying whom it waits for. */
#define QUIET_WAIT_MS 1000
#define POLL_MS 20

/* The process holding an flock on the file open as fd, from /proc/locks
 * ("1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"); 0 if not known. */
static long lock_holder(int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return 0;
    FILE *f = fopen("/proc/locks", "r");
    if (!f)
        return 0;
    char line[256];
    long pid = 0;
    while (!pid && fgets(line, sizeof line, f)) {
        char type[16];
        long p;
        unsigned maj, min;
        unsigned long long ino;
        if (sscanf(line, "%*[^:]: %15s %*s %*s %ld %x:%x:%llu", type, &p, &maj, &min, &ino) == 5 &&
            strcmp(type, "FLOCK") == 0 && ino == (unsigned long long)sb.st_ino &&
            maj == major(sb.st_dev) && min == minor(sb.st_dev) && p != (long)getpid())
            pid = p;
    }
    fclose(f);
    return pid;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Takes the flock on fd: at once, or quietly for a second, then after
 * saying whom it waits for. 0, or 2 after a message. */
static int lock_fd(int fd, const char *path)
{
    for (long waited = 0; waited < QUIET_WAIT_MS; waited += POLL_MS) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            bkc_error("%s: cannot lock: %s", path, strerror(errno));
            return BKC_EXIT_ERROR;
        }
        long pid = lock_holder(fd);
        if (bkc_lock_no_wait) {
            if (pid)
                bkc_error("%s: locked by process %ld (another writer); not waiting (--no-wait)",
                          path, pid);
            else
                bkc_error("%s: locked by another writer; not waiting (--no-wait)", path);
            return BKC_EXIT_ERROR;
        }
        sleep_ms(POLL_MS);
    }
    long pid = lock_holder(fd);
    if (pid)
        bkc_error("%s: waiting for process %ld, which is writing it", path, pid);
    else
        bkc_error("%s: waiting for another process, which is writing it", path);
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            bkc_error("%s: cannot lock: %s", path, strerror(errno));
            return BKC_EXIT_ERROR;
        }
    }
    return 0;
}

/* Whether fd is still the file that path names (a writer that held the
 * lock before may have renamed a new file into place). */
static bool still_named(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int bkc_lock_take(const char *path, bkc_lock_t *lock)
{
    lock->fd = -1;
    for (;;) {
        /* O_NONBLOCK: opening a FIFO must not hang (a FIFO is refused when
         * loaded or saved); the descriptor is only locked, never read. */
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT)
                return 1;
            bkc_error("%s: %s", path, strerror(errno));
            return BKC_EXIT_ERROR;
        }
        int rc = lock_fd(fd, path);
        if (rc != 0) {
            close(fd);
            return rc;
        }
        if (still_named(fd, path)) {
            lock->fd = fd;
            return 0;
        }
        close(fd); /* replaced while we waited: lock the new file */
    }
}

void bkc_lock_release(bkc_lock_t *lock)
{
    if (lock->fd >= 0)
        close(lock->fd); /* closing the last descriptor drops the flock */
    lock->fd = -1;
}
