/*
 * Filter files: atomic save and whole-file reads, on the codec (codec.c).
 *
 * Saving goes through a temp file in the same directory, fsync, rename,
 * fsync of the directory: after a crash at any moment the path holds the
 * old file or the new one, never a mix. Reading takes the metadata first
 * (bounded by the file's real size), then each payload with pread straight
 * into the filter's memory, verified once read. map.c and bitmap_file.c
 * use the same pieces.
 */
#define _GNU_SOURCE
#include "codec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bk_status_t errno_status(void)
{
    return (errno == ENOSPC || errno == EDQUOT) ? BK_ENOSPC : BK_EIO;
}

static bk_status_t write_all(int fd, const void *buf, uint64_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        size_t chunk = n > (UINT64_C(1) << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno_status();
        }
        if (w == 0) {
            errno = ENOSPC;
            return BK_ENOSPC;
        }
        p += w;
        n -= (uint64_t)w;
    }
    return BK_OK;
}

/* Opens a fresh temp file next to path (same directory, so rename is
 * atomic). The name carries the pid and a counter so concurrent savers,
 * in this process or others, never collide. *tmp_out is heap-owned. */
static int open_temp(const char *path, char **tmp_out, mode_t mode)
{
    static _Atomic unsigned long counter;
    size_t plen = strlen(path);
    size_t cap = plen + 64;
    char *tmp = bki_malloc(cap);
    if (!tmp)
        return -2;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned long c = atomic_fetch_add(&counter, 1);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(tmp, cap, "%s.tmp-%ld-%lu-%lx", path, (long)getpid(), c,
                 (unsigned long)ts.tv_nsec);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    int saved = errno;
    bki_free(tmp);
    errno = saved;
    return -1;
}

/* The directory part of path ("." if none), heap-owned; NULL if out of
 * memory. Computed before the rename so nothing can fail for want of
 * memory once the new file is in place. */
static char *parent_dir(const char *path)
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

static bk_status_t fsync_dir(const char *dir)
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

/* Writes the metadata and every payload (zero-padded) to fd. */
static bk_status_t write_obj(int fd, const bkf_obj_t *o, const uint8_t *meta)
{
    static const uint8_t zeros[64];
    bk_status_t st = write_all(fd, meta, bkf_meta_len(o->nparts));
    for (uint32_t i = 0; i < o->nparts && st == BK_OK; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        st = write_all(fd, p.data, p.length);
        if (st == BK_OK)
            st = write_all(fd, zeros, bkf_align64(p.length) - p.length);
    }
    if (st == BK_OK && fsync(fd) != 0)
        st = errno_status();
    return st;
}

/* Closes the written temp file and renames it over path, or removes it
 * after an error; then makes the rename durable. errno is kept. */
static bk_status_t commit_temp(int fd, bk_status_t st, const char *tmp, const char *path,
                               const char *dir)
{
    int saved = errno;
    if (close(fd) != 0 && st == BK_OK) {
        st = errno_status();
        saved = errno;
    }
    if (st == BK_OK && rename(tmp, path) != 0) {
        st = errno_status();
        saved = errno;
    }
    if (st != BK_OK) {
        unlink(tmp);
    } else {
        /* The rename is done; this makes it survive a power loss. */
        st = fsync_dir(dir);
        saved = errno;
    }
    errno = saved;
    return st;
}

/* The file a save must replace: path itself, or, when path is a symbolic
 * link (or a chain of them), the file it finally names, which may not
 * exist yet. Saving there keeps the link and changes the data the link
 * points at, as the user meant; replacing the link itself would leave the
 * real file behind, and the data split in two. Heap-owned; NULL with errno
 * set (ELOOP for a cycle, ENOMEM). */
static char *link_target(const char *path)
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

/* Saves o over target (already resolved). A target that exists must be a
 * regular file: a device, FIFO, socket or directory is never replaced
 * (BK_EIO, errno EINVAL or EISDIR). A replaced file keeps its mode, owner
 * and group (when the saver may set them: root saving a service account's
 * file leaves it the account's); a new one gets 0666 & ~umask. */
static bk_status_t save_to(const bkf_obj_t *o, const uint8_t *meta, const char *target)
{
    struct stat old;
    bool exists = stat(target, &old) == 0;
    if (exists && !S_ISREG(old.st_mode)) {
        errno = S_ISDIR(old.st_mode) ? EISDIR : EINVAL;
        return BK_EIO;
    }
    char *dir = parent_dir(target);
    char *tmp = NULL;
    if (!dir)
        return BK_ENOMEM;
    bk_status_t st;
    int fd = open_temp(target, &tmp, 0666);
    if (fd < 0) {
        st = fd == -2 ? BK_ENOMEM : errno_status();
    } else {
        if (exists) {
            (void)fchmod(fd, old.st_mode & 07777);
            /* Fails with EPERM for an ordinary user saving someone else's
             * file: the new file is then the saver's, as any write would. */
            if (fchown(fd, old.st_uid, old.st_gid) == 0)
                (void)fchmod(fd, old.st_mode & 07777); /* chown clears set-id bits */
        }
        st = commit_temp(fd, write_obj(fd, o, meta), tmp, target, dir);
    }
    int saved = errno;
    bki_free(tmp);
    bki_free(dir);
    errno = saved;
    return st;
}

bk_status_t bkf_save_obj(const bkf_obj_t *o, const char *path)
{
    if (!path || !*path)
        return BK_EINVAL;
    uint64_t mlen = bkf_meta_len(o->nparts);
    if (mlen > SIZE_MAX)
        return BK_ENOMEM;
    uint8_t *meta = bki_malloc((size_t)mlen);
    if (!meta)
        return BK_ENOMEM;
    bkf_encode_meta(o, meta);
    bk_status_t st;
    char *target = link_target(path);
    if (!target)
        st = errno == ENOMEM ? BK_ENOMEM : BK_EIO;
    else
        st = save_to(o, meta, target);
    int saved = errno;
    bki_free(target);
    bki_free(meta);
    errno = saved;
    return st;
}

/* ---- reading ---- */

static bk_status_t pread_all(const bkf_source_t *s, uint64_t off, void *dst, uint64_t n)
{
    uint8_t *p = dst;
    while (n > 0) {
        size_t chunk = n > (UINT64_C(1) << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t r = pread(s->fd, p, chunk, (off_t)off);
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

bkf_source_t bkf_file_source(int fd)
{
    bkf_source_t s = {.buf = NULL, .read = pread_all, .fd = fd};
    return s;
}

/* Reads and validates the metadata of an open file into a heap buffer
 * (*meta_buf, caller frees). The buffer is never larger than the file. */
bk_status_t bkf_read_file_meta(int fd, uint64_t size, uint8_t **meta_buf, bkf_meta_t *m,
                                  const char **why)
{
    uint8_t head[BKF_HEADER];
    uint64_t n = size < BKF_HEADER ? size : BKF_HEADER;
    *meta_buf = NULL;
    if (size == 0)
        FAIL(BK_ECORRUPT, "empty file");
    bkf_source_t s = bkf_file_source(fd);
    if (bkf_source_read(&s, 0, head, n) != BK_OK)
        FAIL(BK_EIO, "read error");
    bk_status_t st = bkf_check_prefix(head, n, why);
    if (st != BK_OK)
        return st;
    uint32_t nparts = bkf_get_u32(head + H_NPARTS);
    if (nparts == 0 || nparts > BKF_MAX_PARTS)
        FAIL(BK_ECORRUPT, "part count is zero or absurd");
    uint64_t mlen = bkf_meta_len(nparts);
    if (mlen > size)
        FAIL(BK_ECORRUPT, "truncated inside the header or part table");
    uint8_t *b = bki_malloc((size_t)mlen);
    if (!b)
        FAIL(BK_ENOMEM, "out of memory");
    if (bkf_source_read(&s, 0, b, mlen) != BK_OK) {
        bki_free(b);
        FAIL(BK_EIO, "read error");
    }
    st = bkf_parse_meta(b, mlen, size, m, why);
    if (st != BK_OK) {
        bki_free(b);
        return st;
    }
    *meta_buf = b;
    return BK_OK;
}

bk_status_t bkf_open_regular(const char *path, int flags, int *fd_out, uint64_t *size,
                                const char **why)
{
    if (!path)
        FAIL(BK_EINVAL, "invalid argument");
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        FAIL(BK_EIO, "cannot open the file");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        FAIL(BK_EIO, "cannot stat the file");
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        FAIL(BK_EIO, "not a regular file");
    }
    *fd_out = fd;
    *size = (uint64_t)st.st_size;
    return BK_OK;
}

/* ---- public API ---- */

bk_status_t bk_filter_save(const bk_filter_t *f, const char *path)
{
    bkf_obj_t o;
    bk_status_t st = bkf_obj_from_filter(&o, f);
    if (st != BK_OK)
        return st;
    return bkf_save_obj(&o, path);
}

bk_status_t bk_filter_load(bk_filter_t **out, const char *path, const char **why)
{
    if (!out)
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    int fd;
    uint64_t size;
    bk_status_t st = bkf_open_regular(path, O_RDONLY, &fd, &size, why);
    if (st != BK_OK)
        return st;
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    uint8_t *mb;
    bkf_meta_t m;
    st = bkf_read_file_meta(fd, size, &mb, &m, why);
    if (st == BK_OK) {
        bkf_source_t s = bkf_file_source(fd);
        st = bkf_build_filter(out, &m, &s, NULL, why);
        bki_free(mb);
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return st;
}
