/*
 * Opening a filter file for reading: a regular file (never a directory,
 * device or FIFO), settled (a checkpoint in progress waited for, one a
 * killed writer left finished: journal.c), its metadata read and
 * validated (bounded by the file's real size), and a reader of its bytes
 * for the codec. Under both file.c (loads) and map.c (mappings), which
 * take their file from here.
 */
#define _GNU_SOURCE
#include "codec.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static bk_status_t source_read(const bkf_source_t *s, uint64_t off, void *dst, uint64_t n)
{
    return bkf_pread_all(s->fd, dst, n, off);
}

bkf_source_t bkf_file_source(int fd)
{
    bkf_source_t s = {.buf = NULL, .read = source_read, .fd = fd};
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
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        FAIL(BK_ENOTFILE, "not a regular file");
    }
    *fd_out = fd;
    *size = (uint64_t)st.st_size;
    return BK_OK;
}

bk_status_t bkf_open_settled(const char *path, int flags, int *fd_out, uint64_t *size,
                             const char **why)
{
    bk_status_t st = bkf_open_regular(path, flags, fd_out, size, why);
    if (st != BK_OK)
        return st;
    st = bkf_settle(*fd_out, path, why);
    struct stat sb;
    if (st == BK_OK && fstat(*fd_out, &sb) == 0)
        *size = (uint64_t)sb.st_size; /* a finished checkpoint may change it */
    if (st != BK_OK) {
        int saved = errno;
        close(*fd_out);
        errno = saved;
    }
    return st;
}
