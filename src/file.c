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
#include "journal.h"
#include "registry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A tag of this machine's name for temp file names: which machine's pid a
 * temp file's pid is (a directory may be shared over the network). */
static unsigned long host_tag(void)
{
    char name[256] = "";
    if (gethostname(name, sizeof name - 1) != 0)
        name[0] = '\0';
    return (unsigned long)(bkf_checksum(name, strlen(name)) & 0xffffffffu);
}

/* Opens a fresh temp file next to path (same directory, so rename is
 * atomic). The name carries the pid, this machine's tag and a counter so
 * concurrent savers, in this process or others, never collide, and so a
 * later save can tell a dead saver's leftover (remove_stale_temps).
 * *tmp_out is heap-owned. */
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
        snprintf(tmp, cap, "%s.tmp-%ld-h%08lx-%lu-%lx", path, (long)getpid(), host_tag(), c,
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

#define SPARSE_BLOCK 4096u

/* Writes a payload at file offset `at`, leaving every whole 4 KiB block
 * of zeros (at a 4 KiB file offset) a hole: a new filter's file takes
 * almost no disk, and one that fills takes disk as its pages get bits.
 * Runs of non-zero blocks go out in one pwrite each, the holes with no
 * system call at all (a fresh 2 GB filter is half a million of them). The
 * file is given its full size at the end (write_obj). */
static bk_status_t write_sparse(int fd, const uint8_t *data, uint64_t len, uint64_t at,
                               const bkf_paging_t *g, const uint64_t *zeros)
{
    uint64_t done = 0, run = 0; /* [run, done): bytes to write */
    while (done < len) {
        uint64_t to_edge = SPARSE_BLOCK - (at + done) % SPARSE_BLOCK;
        size_t n = (size_t)(len - done < to_edge ? len - done : to_edge);
        bool zero = false;
        if (n == SPARSE_BLOCK) {
            /* A paged payload's pages were each found zero or not as their
             * sums were taken (bkf_pages_fill): not compared again. */
            uint64_t p = (at + done) / BKF_PAGE;
            if (zeros && p >= g->first && p - g->first < g->npages)
                zero = (zeros[(p - g->first) >> 6] >> ((p - g->first) & 63)) & 1;
            else
                zero = bkf_all_zero(data + done, n);
        }
        if (zero) {
            bk_status_t st = run < done ? bkf_pwrite_all(fd, data + run, done - run, at + run)
                                        : BK_OK;
            if (st != BK_OK)
                return st;
            run = done + n;
        }
        done += n;
    }
    return run < len ? bkf_pwrite_all(fd, data + run, len - run, at + run) : BK_OK;
}

/* Writes the metadata and every payload (zero-padded) to fd, sparsely,
 * then a paged object's page checksums (trailer: its bytes from
 * bkf_paging_t.trailer to the end); *why (never NULL here) says which
 * step failed. */
static bk_status_t write_obj(int fd, const bkf_obj_t *o, const uint8_t *meta,
                             const uint8_t *trailer, const uint64_t *zeros, const char **why)
{
    bkf_paging_t g = {0};
    if (o->paged)
        bkf_obj_paging(o, &g);
    *why = "cannot write the temp file";
    uint64_t at = bkf_meta_len(o->nparts);
    bk_status_t st = bkf_pwrite_all(fd, meta, at, 0);
    for (uint32_t i = 0; i < o->nparts && st == BK_OK; i++) {
        bkf_part_t p;
        bkf_obj_part(o, i, &p);
        /* the zero padding after it: a hole, filled in by ftruncate */
        st = write_sparse(fd, p.data, p.length, at, &g, i == 0 && o->paged ? zeros : NULL);
        at += bkf_align64(p.length);
    }
    if (st == BK_OK && o->paged) { /* its sums after every part: at */
        st = bkf_pwrite_all(fd, trailer, g.size - g.trailer, g.trailer);
        at = g.size;
    }
    /* Holes at the end count only once the file reaches its size. */
    if (st == BK_OK && ftruncate(fd, (off_t)at) != 0)
        st = bkf_errno_status();
    if (st == BK_OK && fsync(fd) != 0) {
        st = bkf_errno_status();
        *why = "cannot flush the temp file to disk";
    }
    return st;
}

/* Puts tmp in place at path only if nothing is there (EEXIST if
 * something is): renameat2's RENAME_NOREPLACE where the file system has
 * it, else link(2), which never replaces either. */
static int rename_noreplace(const char *tmp, const char *path)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1;
#endif
    if (link(tmp, path) != 0)
        return -1;
    unlink(tmp);
    return 0;
}

/* Closes the written temp file and renames it over path (or, noreplace,
 * into place only if path is free), or removes it after an error; then
 * makes the rename durable. errno is kept. */
static bk_status_t commit_temp(int fd, bk_status_t st, const char *tmp, const char *path,
                               const char *dir, bool noreplace, const char **why)
{
    int saved = errno;
    if (close(fd) != 0 && st == BK_OK) {
        st = bkf_errno_status();
        saved = errno;
        *why = "cannot close the temp file";
    }
    if (st == BK_OK && (noreplace ? rename_noreplace(tmp, path) : rename(tmp, path)) != 0) {
        st = bkf_errno_status();
        saved = errno;
        *why = noreplace && saved == EEXIST ? "a file appeared there meanwhile"
                                            : "cannot rename the temp file into place";
    }
    if (st != BK_OK) {
        unlink(tmp);
    } else {
        /* The rename is done; this makes it survive a power loss. A
         * checkpoint journal left beside the file it replaced (settled,
         * or a killed writer's) can only be stale now: removed after, so
         * that it never meets a later file at the name that reuses the
         * old one's inode number. */
        st = bkf_fsync_dir(dir);
        char *journal = st == BK_OK ? bkf_journal_path(path) : NULL;
        if (journal && unlink(journal) == 0)
            st = bkf_fsync_dir(dir);
        bki_free(journal);
        saved = errno;
        if (st != BK_OK)
            *why = "the file is in place, but its directory could not be flushed to disk";
    }
    errno = saved;
    return st;
}

/* Whether a process with this id runs on this machine. */
static bool process_alive(long pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Removes the temp files of earlier saves of target that were killed
 * before they could rename or remove their own (a SIGKILL, a power loss):
 * "<target>.tmp-<pid>-h<machine>-..." made on this machine by a process
 * that is gone. A temp file of another machine sharing the directory is
 * left alone (its pid means nothing here), and so is one named by a
 * release before the machine tag while anything wrote it in the last
 * minute. Best effort: a name that does not parse, or any error, leaves
 * the file. `mine` is this save's own temp name, never removed. */
static void remove_stale_temps(const char *target, const char *mine)
{
    char *dir = bkf_parent_dir(target);
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    size_t blen = strlen(base);
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    time_t now = time(NULL);
    while (d && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp-", 5) != 0)
            continue;
        char *end;
        long pid = strtol(name + blen + 5, &end, 10);
        if (end == name + blen + 5 || *end != '-' || process_alive(pid))
            continue;
        bool tagged = end[1] == 'h';
        if (tagged && strtoul(end + 2, NULL, 16) != host_tag())
            continue;
        size_t plen = strlen(dir) + 1 + strlen(name) + 1;
        char *path = bki_malloc(plen);
        if (!path)
            break;
        snprintf(path, plen, "%s/%s", dir, name);
        struct stat sb;
        if (strcmp(path, mine) != 0 && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
            (tagged || now - sb.st_mtime >= 60))
            unlink(path);
        bki_free(path);
    }
    if (d)
        closedir(d);
    bki_free(dir);
}

/* Saves o over target (already resolved). A target that exists must be a
 * regular file: a device, FIFO, socket or directory is never replaced
 * (BK_ENOTFILE, errno EINVAL or EISDIR). A replaced file keeps its mode, owner
 * and group (when the saver may set them: root saving a service account's
 * file leaves it the account's); a new one gets 0666 & ~umask. */
static bk_status_t save_to(const bkf_obj_t *o, const uint8_t *meta, const uint8_t *trailer,
                           const uint64_t *zeros, const char *target, bool noreplace,
                           const char **why)
{
    struct stat old;
    bool exists = lstat(target, &old) == 0 && stat(target, &old) == 0;
    if (noreplace && exists) {
        errno = EEXIST;
        *why = "a file is already there";
        return BK_EEXIST;
    }
    if (exists && !S_ISREG(old.st_mode)) {
        errno = S_ISDIR(old.st_mode) ? EISDIR : EINVAL;
        *why = S_ISDIR(old.st_mode) ? "a directory is there" : "a device, FIFO or socket is there";
        return BK_ENOTFILE;
    }
    char *dir = bkf_parent_dir(target);
    char *tmp = NULL;
    if (!dir)
        return BK_ENOMEM;
    bk_status_t st;
    int fd = open_temp(target, &tmp, 0666);
    if (fd < 0) {
        st = fd == -2 ? BK_ENOMEM : bkf_errno_status();
        *why = "cannot create a temp file in its directory";
    } else {
        /* A dead saver's leftovers go first: on a disk with room for one
         * copy of the file, a leftover would make this save, and every
         * later one, fail for want of space. */
        remove_stale_temps(target, tmp);
        if (exists) {
            (void)fchmod(fd, old.st_mode & 07777);
            /* Fails with EPERM for an ordinary user saving someone else's
             * file: the new file is then the saver's, as any write would. */
            if (fchown(fd, old.st_uid, old.st_gid) == 0)
                (void)fchmod(fd, old.st_mode & 07777); /* chown clears set-id bits */
        }
        st = write_obj(fd, o, meta, trailer, zeros, why);
        st = commit_temp(fd, st, tmp, target, dir, noreplace, why);
        if (st == BK_EIO && noreplace && errno == EEXIST)
            st = BK_EEXIST; /* another writer's file appeared meanwhile */
    }
    int saved = errno;
    bki_free(tmp);
    bki_free(dir);
    errno = saved;
    return st;
}

/* Saves o at path (its link's target); *why (never NULL) says which step
 * failed. */
static bk_status_t save_named(const bkf_obj_t *given, const char *path, bool noreplace,
                              const char **why)
{
    bkf_obj_t obj = *given, *o = &obj;
    uint64_t mlen = bkf_meta_len(o->nparts);
    if (mlen > SIZE_MAX)
        return BK_ENOMEM;
    /* A large single array is saved paged: its page checksums first, for
     * the header's checksum of them. */
    o->paged = bkf_obj_pageable(o);
    uint8_t *trailer = NULL;
    uint64_t tlen = 0, *zeros = NULL;
    if (o->paged) {
        bkf_part_t p;
        bkf_obj_part(o, 0, &p);
        bkf_paging_t g;
        bkf_obj_paging(o, &g);
        tlen = g.size - g.trailer;
        trailer = bki_calloc(1, (size_t)tlen);
        /* which pages are zeros, found once for the sums and the holes */
        zeros = bki_calloc((size_t)((g.npages + 63) / 64 + 1), 8);
        if (!trailer || !zeros) {
            bki_free(trailer);
            bki_free(zeros);
            return BK_ENOMEM;
        }
        bkf_pages_fill(&g, p.data, p.length, trailer, &o->groups_sum, zeros);
    }
    uint8_t *meta = bki_malloc((size_t)mlen);
    if (!meta) {
        bki_free(trailer);
        bki_free(zeros);
        return BK_ENOMEM;
    }
    bkf_encode_meta(o, meta);
    bk_status_t st;
    char *target = bkf_link_target(path);
    if (!target) {
        st = errno == ENOMEM ? BK_ENOMEM : BK_EIO;
        *why = "cannot follow its symbolic link";
    } else {
        st = save_to(o, meta, trailer, zeros, target, noreplace, why);
    }
    int saved = errno;
    bki_free(target);
    bki_free(meta);
    bki_free(trailer);
    bki_free(zeros);
    errno = saved;
    return st;
}

static bk_status_t save_obj(const bkf_obj_t *o, const char *path, bool noreplace,
                           const char **why_out)
{
    const char *why = NULL;
    bk_status_t st = BK_OK;
    if (!path || !*path) {
        st = BK_EINVAL;
        why = "no path";
    } else {
        st = save_named(o, path, noreplace, &why);
    }
    if (why_out)
        *why_out = st == BK_OK ? NULL : why ? why : bk_strerror(st);
    return st;
}

bk_status_t bkf_save_obj(const bkf_obj_t *o, const char *path)
{
    return save_obj(o, path, false, NULL);
}

/* ---- reading ---- */

/* ---- public API ---- */

bk_status_t bk_filter_save_why(const bk_filter_t *f, const char *path, bool only_new,
                               const char **why)
{
    /* A writable mapping saved to its own file is brought up to date in
     * place: renaming a new file over it would leave the mapping, and
     * every add after the save, in the unlinked old file. */
    if (!only_new && f && f->map_base && !f->readonly && bkf_maps_file(f, path)) {
        bk_status_t st = bkf_sync_map(f);
        if (st != BK_OK && why)
            *why = "cannot write the mapping back to its file";
        return st;
    }
    /* A filter read from a paged file: every page it has not read yet is
     * read and checked before it is written anywhere. */
    bk_status_t st = f ? bki_pages_all(f, why) : BK_OK;
    if (st != BK_OK)
        return st;
    bkf_obj_t o;
    st = bkf_obj_from_filter(&o, f);
    if (st != BK_OK) {
        if (why)
            *why = "the filter cannot be saved as it is";
        return st;
    }
    return save_obj(&o, path, only_new, why);
}

bk_status_t bk_filter_save(const bk_filter_t *f, const char *path)
{
    return bk_filter_save_why(f, path, false, NULL);
}

bk_status_t bk_filter_save_new(const bk_filter_t *f, const char *path)
{
    return bk_filter_save_why(f, path, true, NULL);
}

/* A paged file loaded into memory as keys touch it: an anonymous mapping
 * the size of the file's payload, each 4 KiB page read into it (pread)
 * and checked the first time a key touches it (pages.c). One fault and
 * one copy per page, where a private mapping of the file took a read
 * fault, a copy-on-write fault and a TLB flush for each page an add
 * touched; and the filter never sees the file change under it once a
 * page is read. On success the filter owns a duplicate of fd and the
 * memory. BK_ENOMEM with nothing made (no address space, or no memory
 * for the page records): the caller reads the file whole instead. */
static bk_status_t load_paged(bk_filter_t **out, int fd, const bkf_meta_t *m,
                              const uint8_t *meta, const char **why)
{
    uint64_t len = bkf_align_page(m->body_end);
    if (len > SIZE_MAX)
        return BK_ENOMEM;
    uint8_t *map = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    int keep = map == MAP_FAILED ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (keep < 0) {
        if (map != MAP_FAILED)
            munmap(map, (size_t)len);
        return BK_ENOMEM;
    }
    /* A page read is 4 KiB: a transparent huge page would make it 2 MiB
     * of memory. */
    (void)madvise(map, (size_t)len, MADV_NOHUGEPAGE);
    bkf_source_t s = {.buf = map, .read = NULL, .fd = -1};
    bk_status_t st = BK_OK;
    /* The parts after the paged one (a window's state) are small and the
     * filter is built from them: read now, and checked against their own
     * checksums. */
    for (uint32_t i = 1; i < m->nparts && st == BK_OK; i++) {
        bkf_part_t p;
        bkf_decode_part(m, i, &p);
        st = bkf_pread_all(fd, map + p.offset, bkf_align64(p.length), p.offset);
        if (st != BK_OK) {
            if (why)
                *why = "read error";
        } else {
            st = bkf_check_payload(&s, &p, map + p.offset, true, why);
        }
    }
    if (st == BK_OK)
        st = bkf_build_filter(out, m, &s, map, why);
    if (st == BK_OK) {
        st = bki_pages_attach(*out, keep, m, meta, map, len, true,
                              bki_page_calls_of(m->kind), why);
        keep = -1;
        if (st != BK_OK) {
            bk_filter_free(*out);
            *out = NULL;
        }
    }
    if (st != BK_OK) {
        if (keep >= 0)
            close(keep);
        munmap(map, (size_t)len);
    } else {
        /* The duplicate shares fd's checkpoint lock: dropped, so that
         * checkpoints are not held off for the filter's lifetime. */
        bkf_settle_end(fd);
    }
    return st;
}

bk_status_t bk_filter_load(bk_filter_t **out, const char *path, const char **why)
{
    if (!out)
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    int fd;
    uint64_t size;
    /* the shared checkpoint lock lasts until close */
    bk_status_t st = bkf_open_settled(path, O_RDONLY, &fd, &size, why);
    if (st != BK_OK)
        return st;
    uint8_t *mb;
    bkf_meta_t m;
    st = bkf_read_file_meta(fd, size, &mb, &m, why);
    if (st == BK_OK && m.paged) {
        st = load_paged(out, fd, &m, mb, why);
        if (st != BK_ENOMEM) {
            bki_free(mb);
            int saved = errno;
            close(fd);
            errno = saved;
            return st;
        }
        st = BK_OK; /* read it whole, below */
    }
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
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
