/*
 * The file format's codec (codec.c) and file I/O (file.c, map.c,
 * bitmap_file.c), on top of the shared definitions of wire.h.
 */
#ifndef BLOOMKIT_CODEC_H
#define BLOOMKIT_CODEC_H

#include "wire.h"

/* Writing. obj_from_* describe an object (BK_EINVAL for one the format
 * cannot encode); encode_meta writes bkf_meta_len(nparts) bytes. */
BKI_HIDDEN bk_status_t bkf_obj_from_filter(bkf_obj_t *o, const bk_filter_t *f);
BKI_HIDDEN bk_status_t bkf_obj_from_bitmap(bkf_obj_t *o, uint32_t kind, uint64_t n,
                                           const uint64_t *words, uint64_t nbytes);
BKI_HIDDEN void bkf_obj_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p);
BKI_HIDDEN uint64_t bkf_obj_size(const bkf_obj_t *o);
/* Whether a file save of o is paged (a single array of BKF_PAGED_MIN
 * payload bytes or more; docs/FORMAT.md, "Paged files"). */
BKI_HIDDEN bool bkf_obj_pageable(const bkf_obj_t *o);
/* Whether files of the kind with nparts parts may be paged: a single
 * array, a cuckoo filter of one sub-filter, a window (pages over its slots,
 * part 0; its state, part 1, keeps its own checksum). */
BKI_HIDDEN bool bkf_kind_pageable(uint32_t kind, uint32_t nparts);
/* A paged object's or file's page geometry: pages over part 0, the sums
 * after every part. */
BKI_HIDDEN void bkf_obj_paging(const bkf_obj_t *o, bkf_paging_t *g);
BKI_HIDDEN void bkf_encode_meta(const bkf_obj_t *o, uint8_t *out);
BKI_HIDDEN bk_status_t bkf_obj_serialize(const bkf_obj_t *o, void *buf, size_t cap,
                                         size_t *written);
/* The serialized bytes [off, off + len) into buf, with no allocation: the
 * metadata is encoded piece by piece, payloads copied from the object.
 * BK_EINVAL if the range runs past the end. */
BKI_HIDDEN bk_status_t bkf_obj_range(const bkf_obj_t *o, uint64_t off, void *buf, uint64_t len);

/* Reading. check_prefix: magic and version of `have` bytes. parse_meta:
 * the whole metadata in b (have bytes, at least bkf_meta_len) of an input
 * total bytes long, everything but the payload bytes. */
BKI_HIDDEN bk_status_t bkf_check_prefix(const uint8_t *b, uint64_t have, const char **why);
BKI_HIDDEN bk_status_t bkf_parse_meta(const uint8_t *b, uint64_t have, uint64_t total,
                                      bkf_meta_t *m, const char **why);
/* Every payload of an input held in memory, in place. */
BKI_HIDDEN bk_status_t bkf_verify_payloads(const bkf_meta_t *m, const bkf_source_t *s,
                                           const char **why);
/* Builds the filter m describes. With map != NULL the payloads borrow the
 * mapping (nothing is allocated for them); otherwise they are read from s
 * (and, for readers, verified). */
BKI_HIDDEN bk_status_t bkf_build_filter(bk_filter_t **out, const bkf_meta_t *m,
                                        const bkf_source_t *s, uint8_t *map, const char **why);

/* ---- pages.c: paged files (pages.h has the rest) ---- */

/* Checks a whole paged input's page checksums: every page of the payload
 * (at body, or in s->buf when body is NULL) and the sums over them. */
BKI_HIDDEN bk_status_t bkf_pages_verify(const bkf_meta_t *m, const bkf_source_t *s,
                                        const uint8_t *body, const char **why);

/* ---- cuckoo_codec.c: where a cuckoo filter differs ---- */
BKI_HIDDEN void bkf_cuckoo_obj(bkf_obj_t *o, const bk_filter_t *f);
BKI_HIDDEN void bkf_cuckoo_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p);
/* Payload length of a part, 0 if its geometry is not one. */
BKI_HIDDEN uint64_t bkf_cuckoo_part_len(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p);
/* The header's cuckoo fields (fingerprint width, kick limit, removals;
 * their reserved bytes zero up to end). */
BKI_HIDDEN void bkf_cuckoo_put_header(const bkf_obj_t *o, uint8_t *hdr);
BKI_HIDDEN void bkf_cuckoo_get_header(const uint8_t *hdr, bkf_meta_t *m);
BKI_HIDDEN bool bkf_cuckoo_header_reserved_zero(const uint8_t *hdr, uint32_t end);
/* The header's cuckoo fields and every part's agreement with them (all
 * at part 0). */
BKI_HIDDEN bk_status_t bkf_cuckoo_check(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p,
                                        const char **why);
BKI_HIDDEN bk_status_t bkf_cuckoo_build(bk_filter_t **out, const bkf_meta_t *m,
                                        const bkf_source_t *s, uint8_t *map, const char **why);

/* ---- fuse_codec.c: where a static filter differs ---- */
BKI_HIDDEN bk_status_t bkf_fuse_obj(bkf_obj_t *o, const bk_filter_t *f);
BKI_HIDDEN void bkf_fuse_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p);
/* Payload length of a part, 0 if its geometry is not one. */
BKI_HIDDEN uint64_t bkf_fuse_part_len(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p);
/* The header's fields and every part's agreement with them (all at part
 * 0). */
BKI_HIDDEN bk_status_t bkf_fuse_check(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p,
                                      const char **why);
BKI_HIDDEN bk_status_t bkf_fuse_build(bk_filter_t **out, const bkf_meta_t *m,
                                      const bkf_source_t *s, uint8_t *map, const char **why);

/* ---- file.c ---- */

/* Atomic save of an object to path (temp file, fsync, rename, fsync of the
 * directory); errno is kept on error. */
BKI_HIDDEN bk_status_t bkf_save_obj(const bkf_obj_t *o, const char *path);
/* Opens path (with flags) and checks it is a regular file; *size its size. */
BKI_HIDDEN bk_status_t bkf_open_regular(const char *path, int flags, int *fd_out,
                                        uint64_t *size, const char **why);
/* bkf_open_regular, then bkf_settle: a checkpoint in progress waited for,
 * an interrupted one finished, the shared checkpoint lock held on return
 * (bkf_settle_end or close drops it); *size is the size after that. */
BKI_HIDDEN bk_status_t bkf_open_settled(const char *path, int flags, int *fd_out,
                                        uint64_t *size, const char **why);
/* Reads and validates the metadata of an open file into a heap buffer
 * (*meta_buf, caller frees), never larger than the file. */
BKI_HIDDEN bk_status_t bkf_read_file_meta(int fd, uint64_t size, uint8_t **meta_buf,
                                          bkf_meta_t *m, const char **why);
/* ---- map.c ---- */

/* Whether f is a mapping of the file at path (links followed): the same
 * device and inode. A save or checkpoint of a writable mapping to its own
 * file must write through the mapping (bkf_sync_map): a new file renamed
 * over it would leave the mapping writing into the unlinked old one. */
BKI_HIDDEN bool bkf_maps_file(const bk_filter_t *f, const char *path);
/* bk_filter_sync's work: the metadata and checksums written into the
 * mapping, then msync. BK_EINVAL unmapped, BK_EREADONLY read-only. */
BKI_HIDDEN bk_status_t bkf_sync_map(const bk_filter_t *f);

/* ---- fsio.c (under file.c, journal.c and checkpoint.c) ---- */

/* BK_ENOSPC for a full disk or quota (errno ENOSPC, EDQUOT), else BK_EIO. */
BKI_HIDDEN bk_status_t bkf_errno_status(void);
/* The directory part of path ("." if none); heap-owned, NULL without memory. */
BKI_HIDDEN char *bkf_parent_dir(const char *path);
/* fsync of a directory, so a rename, creation or removal in it lasts. */
BKI_HIDDEN bk_status_t bkf_fsync_dir(const char *dir);
/* The file a save must change: path, or what its chain of symbolic links
 * finally names (which may not exist yet). Heap-owned; NULL with errno. */
BKI_HIDDEN char *bkf_link_target(const char *path);

/* ---- journal.c (the checkpoint journal's read side) ---- */

/* Run by every load and open of a filter file, on its open descriptor fd:
 * waits for a checkpoint in progress (a shared lock on fd, held on return
 * until bkf_settle_end or close), and finishes one a killed writer left
 * (its journal), so what is read next is a whole checkpoint. */
BKI_HIDDEN bk_status_t bkf_settle(int fd, const char *path, const char **why);
BKI_HIDDEN void bkf_settle_end(int fd);

/* n bytes at off of fd into dst: BK_OK, or BK_EIO (errno set; EIO when
 * the file ended first). */
BKI_HIDDEN bk_status_t bkf_pread_all(int fd, void *dst, uint64_t n, uint64_t off);
/* n bytes of src to fd at off: BK_OK, or BK_ENOSPC / BK_EIO (errno kept;
 * ENOSPC when the device takes no more). */
BKI_HIDDEN bk_status_t bkf_pwrite_all(int fd, const void *src, uint64_t n, uint64_t off);
/* A source that reads fd with pread. */
BKI_HIDDEN bkf_source_t bkf_file_source(int fd);

#endif /* BLOOMKIT_CODEC_H */
