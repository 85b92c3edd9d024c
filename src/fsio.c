/*
 * The file-system pieces that saving, loading and checkpoints share:
 * reading and writing whole ranges, the status of an errno, a path's
 * directory and its fsync, and the file a chain of symbolic links names;
 * and the room a new filter would have (bk_room_for).
 * The bottom of the I/O files: file.c, journal.c and checkpoint.c call it,
 * it calls none of them.
 */
#define _GNU_SOURCE
#include "codec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

uint64_t bk_memory_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    if (kb)
        return kb * 1024;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

bk_status_t bk_room_for(uint64_t bytes, const char *path, uint64_t *have)
{
    uint64_t mem = bk_memory_available();
    if (mem && bytes > mem) {
        if (have)
            *have = mem;
        return BK_ENOMEM;
    }
    char *dir = path ? bkf_parent_dir(path) : NULL;
    struct statvfs v;
    if (dir && statvfs(dir, &v) == 0) {
        uint64_t disk = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
        if (bytes > disk) {
            bki_free(dir);
            if (have)
                *have = disk;
            return BK_ENOSPC;
        }
    }
    bki_free(dir);
    return BK_OK;
}

bk_status_t bkf_errno_status(void)
{
    return (errno == ENOSPC || errno == EDQUOT) ? BK_ENOSPC : BK_EIO;
}

/* The directory part of path ("." if none), heap-owned; NULL if out of
 * memory. Computed before the rename so nothing can fail for want of
 * memory once the new file is in place. */
char *bkf_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = bki_malloc(n + 1);
    if (!dir)
        return NULL;
    if (!slash)
        memcpy(dir, ".", 1);
    else
        memcpy(dir, path, n);
    dir[n] = '\0';
    return dir;
}

bk_status_t bkf_fsync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return BK_EIO;
    bk_status_t st = BK_OK;
    if (fsync(dfd) != 0 && errno != EINVAL) /* some filesystems cannot */
        st = BK_EIO;
    int saved = errno;
    close(dfd);
    errno = saved;
    return st;
}

/* The file a save must replace: path itself, or, when path is a symbolic
 * link (or a chain of them), the file it finally names, which may not
 * exist yet. Saving there keeps the link and changes the data the link
 * points at, as the user meant; replacing the link itself would leave the
 * real file behind, and the data split in two. Heap-owned; NULL with errno
 * set (ELOOP for a cycle, ENOMEM). */
char *bkf_link_target(const char *path)
{
    char *cur = bki_malloc(strlen(path) + 1);
    if (!cur) {
        errno = ENOMEM;
        return NULL;
    }
    strcpy(cur, path);
    for (int depth = 0; depth < 40; depth++) {
        struct stat sb;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode))
            return cur; /* a file, something else, or nothing yet */
        char buf[PATH_MAX];
        ssize_t n = readlink(cur, buf, sizeof buf - 1);
        if (n < 0) {
            bki_free(cur);
            return NULL;
        }
        buf[n] = '\0';
        /* A relative target is relative to the link's own directory. */
        const char *slash = strrchr(cur, '/');
        size_t dlen = buf[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = bki_malloc(dlen + (size_t)n + 1);
        if (!next) {
            bki_free(cur);
            errno = ENOMEM;
            return NULL;
        }
        memcpy(next, cur, dlen);
        memcpy(next + dlen, buf, (size_t)n + 1);
        bki_free(cur);
        cur = next;
    }
    bki_free(cur);
    errno = ELOOP;
    return NULL;
}

bk_status_t bkf_pread_all(int fd, void *dst, uint64_t n, uint64_t off)
{
    uint8_t *p = dst;
    while (n > 0) {
        size_t chunk = n > (UINT64_C(1) << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t r = pread(fd, p, chunk, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return BK_EIO;
        }
        if (r == 0) { /* the file shrank under us */
            errno = EIO;
            return BK_EIO;
        }
        p += r;
        off += (uint64_t)r;
        n -= (uint64_t)r;
    }
    return BK_OK;
}

bk_status_t bkf_pwrite_all(int fd, const void *src, uint64_t n, uint64_t off)
{
    const uint8_t *p = src;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n > ((uint64_t)1 << 20) ? ((uint64_t)1 << 20) : (size_t)n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return bkf_errno_status();
        }
        p += w;
        off += (uint64_t)w;
        n -= (uint64_t)w;
    }
    return BK_OK;
}
