/*
 * Shared declarations of the bloomkit Python extension (bloomkit._bloomkit).
 *
 * The extension is a thin layer over the public C API: it turns Python
 * keys (bytes, str, buffers) into bk_key_t, library statuses into Python
 * exceptions, and feeds big batches to the library's prefetching batch
 * calls with the GIL released. Every object carries its own lock, because
 * a batch running without the GIL must not race another thread's add,
 * clear or close on the same filter (the library needs external locking
 * for writes).
 */
#ifndef PYBK_H
#define PYBK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <setjmp.h>
#include <stdbool.h>
#include <pythread.h>
#include <stdbool.h>

#include <bloomkit/bloomkit.h>

/* Keys per chunk of a batch call: big enough to amortize the GIL release
 * and the library's prefetching, small enough to stay in cache. */
#define PYBK_CHUNK 4096
/* Chunks of at least this many keys run with the GIL released. */
#define PYBK_NOGIL_MIN 256

/* ---- errors.c ---------------------------------------------------------- */

/* Creates the exception classes and adds them to the module. -1 on error. */
int pybk_errors_init(PyObject *module);
/* Sets the Python exception for a library status and returns NULL.
 * why (may be NULL) is the library's reason for corrupt input; path (may
 * be NULL) names the file involved. Reads errno for I/O statuses. */
PyObject *pybk_raise(bk_status_t status, const char *why, PyObject *path);
/* The exception class for a status (borrowed), or NULL for BK_OK. */
PyObject *pybk_error_class(bk_status_t status);

/* ---- mapguard.c: mapped files truncated under us ---------------------- */

/* One guarded library call (see mapguard.c). */
typedef struct pybk_guard {
    sigjmp_buf jb;
    const void *lo, *hi;
    struct pybk_guard *prev;
} pybk_guard_t;

/* Starts guarding f's mapping for this thread; false (nothing guarded)
 * for a filter in memory. */
bool pybk_guard_arm(pybk_guard_t *g, const bk_filter_t *f);
void pybk_guard_disarm(pybk_guard_t *g);
/* Sets FileError for a guarded call that hit a truncated mapping; NULL. */
PyObject *pybk_raise_truncated(void);

/* Runs `stmt` (a library call on f), *faulted set when the mapping's file
 * turned out truncated (the call was abandoned at the fault: only read or
 * bit-set of the filter's own memory was under way). sigsetjmp must be in
 * the caller's frame, hence a macro; use it inside any
 * Py_BEGIN/END_ALLOW_THREADS pair, never across one. */
#define PYBK_GUARDED(f, faulted, stmt)                                           \
    do {                                                                          \
        pybk_guard_t pybk_g_;                                                     \
        (faulted) = false;                                                        \
        if (pybk_guard_arm(&pybk_g_, (f))) {                                      \
            if (sigsetjmp(pybk_g_.jb, 1) == 0) {                                  \
                stmt;                                                             \
            } else {                                                              \
                (faulted) = true;                                                 \
            }                                                                     \
            pybk_guard_disarm(&pybk_g_);                                          \
        } else {                                                                  \
            stmt;                                                                 \
        }                                                                         \
    } while (0)

/* ---- filter.c ------------------------------------------------------------ */

/* capacity >= 1 and fpr in (0, 1), or InvalidArgumentError naming the
 * argument and its value (as the tool's "bad capacity '0'"); 0 or -1. */
int pybk_check_size(uint64_t capacity, double fpr);

/* ---- keys.c ------------------------------------------------------------ */

/* Points *key at the bytes of obj: bytes as they are, str as UTF-8,
 * anything else with the buffer protocol as a bytes copy. *hold receives a
 * new reference that keeps those bytes alive; the caller releases it.
 * TypeError for other objects. Returns 0, or -1 with an exception set. */
int pybk_key(PyObject *obj, bk_key_t *key, PyObject **hold);
/* As pybk_key, then spelled in a key form (bk_key_normalize: url, email;
 * other forms take the key as it is): the form the filter records, so
 * Python finds the keys the tool added and the tool those Python adds. */
int pybk_key_in_form(PyObject *obj, bk_key_form_t form, bk_key_t *key, PyObject **hold);

/* A chunk of keys pulled from an iterator: owned references plus the
 * key views the library reads, and one flag per key for the answers. */
typedef struct pybk_chunk {
    PyObject *hold[PYBK_CHUNK];
    bk_key_t keys[PYBK_CHUNK];
    bool flags[PYBK_CHUNK];
    size_t n;
} pybk_chunk_t;

/* Pulls up to PYBK_CHUNK keys from it into c (after releasing what c held),
 * spelled in `form` (pybk_key_in_form).
 * Returns how many (0 at the end), or -1 with an exception set. */
Py_ssize_t pybk_chunk_fill(pybk_chunk_t *c, PyObject *it, bk_key_form_t form);
/* Releases the references c holds. */
void pybk_chunk_release(pybk_chunk_t *c);

/* Parses a filter kind's name (any kind but the bitmaps) into *out.
 * Returns 0, or -1 with a ValueError naming the kinds. */
int pybk_filter_kind(const char *name, bk_kind_t *out);

/* Converts a non-negative Python int to uint64; ValueError / TypeError
 * naming `what` otherwise. Returns 0 or -1. */
int pybk_u64(PyObject *obj, const char *what, uint64_t *out);

/* ---- per-object lock ----------------------------------------------------- */

/* Takes the lock, letting other Python threads run while it waits. */
/* An object's lock, remade in a fork child. A child inherits the parent's
 * memory with only the forking thread: a lock another thread held in the
 * parent (inside add_many, with the GIL released) would stay held forever
 * and the child would hang on its first call. So every fork bumps
 * pybk_fork_generation (an at-fork handler, fork.c), and the first use
 * of a lock of an earlier generation makes a new one; the old one is left
 * as it is (freeing a lock another thread held is undefined). */
typedef struct pybk_objlock {
    PyThread_type_lock lock;
    unsigned long generation;
} pybk_objlock_t;

extern volatile unsigned long pybk_fork_generation;
/* Starts bumping pybk_fork_generation in every fork child (fork.c; once). */
void pybk_fork_watch(void);

/* 0, or -1 if the lock cannot be made (then with MemoryError set). */
static inline int pybk_objlock_init(pybk_objlock_t *l)
{
    l->generation = pybk_fork_generation;
    l->lock = PyThread_allocate_lock();
    if (!l->lock) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static inline void pybk_objlock_free(pybk_objlock_t *l)
{
    if (l->lock && l->generation == pybk_fork_generation)
        PyThread_free_lock(l->lock);
    l->lock = NULL;
}

static inline void pybk_lock(pybk_objlock_t *l)
{
    if (l->generation != pybk_fork_generation) { /* in a fork child */
        PyThread_type_lock fresh = PyThread_allocate_lock();
        if (fresh) /* else keep the old one: a hang is no worse than before */
            l->lock = fresh;
        l->generation = pybk_fork_generation;
    }
    if (!PyThread_acquire_lock(l->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(l->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

static inline void pybk_unlock(pybk_objlock_t *l)
{
    PyThread_release_lock(l->lock);
}

/* ---- filter.c, bitmap.c ------------------------------------------------ */

extern PyTypeObject pybk_filter_type;
extern PyTypeObject pybk_bitmap_type;
extern PyTypeObject pybk_bitmap_iter_type;

/* New Python objects owning an already created library object (on failure
 * the library object is freed and NULL returned). */
PyObject *pybk_filter_wrap(PyTypeObject *type, bk_filter_t *f);
PyObject *pybk_bitmap_wrap(PyTypeObject *type, bk_bitmap_t *b);


#endif /* PYBK_H */
