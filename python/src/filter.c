/*
 * bloomkit.Filter: a Python object owning one bk_filter_t (split, blocked,
 * classic, counting or scalable), in memory or mapped from a file.
 *
 * Every library call runs under the object's lock; batch calls over a
 * chunk of PYBK_CHUNK keys release the GIL while the library hashes,
 * prefetches and probes, so other Python threads run meanwhile. After
 * close() the object holds no filter and every call raises ValueError.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pybk.h"

typedef struct {
    PyObject_HEAD
    bk_filter_t *f; /* NULL once closed */
    pybk_objlock_t lock;
    bk_key_form_t norm; /* how keys are spelled before they reach f: the
                           form f records, or the one this object was
                           opened with for a file that records none */
    bk_checkpoint_t *cp; /* checkpoint() state, for the path in cp_path */
    PyObject *cp_path;   /* bytes, or NULL */
} filter_object;

/* Forgets checkpoint() state; the caller holds the lock or is the only user. */
static void drop_checkpoints(filter_object *self)
{
    bk_checkpoint_free(self->cp);
    self->cp = NULL;
    Py_CLEAR(self->cp_path);
}

/* The filter, or NULL with ValueError if the object was closed. */
static bk_filter_t *live(filter_object *self)
{
    if (!self->f)
        PyErr_SetString(PyExc_ValueError, "operation on a closed bloomkit.Filter");
    return self->f;
}

/* A path argument as str, for error messages. */
static PyObject *path_text(PyObject *fs_path)
{
    return PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(fs_path),
                                            PyBytes_GET_SIZE(fs_path));
}

static PyObject *raise_for_path(bk_status_t st, const char *why, PyObject *fs_path)
{
    PyObject *text = path_text(fs_path);
    pybk_raise(st, why, text);
    Py_XDECREF(text);
    return NULL;
}

/* ---- life cycle --------------------------------------------------------- */

static PyObject *filter_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    filter_object *self = (filter_object *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (pybk_objlock_init(&self->lock) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

PyObject *pybk_filter_wrap(PyTypeObject *type, bk_filter_t *f)
{
    filter_object *self = (filter_object *)filter_new(type, NULL, NULL);
    if (!self) {
        bk_filter_free(f);
        return NULL;
    }
    self->f = f;
    self->norm = bk_filter_key_form(f);
    return (PyObject *)self;
}

/* Writable mappings keep their checksums up to date only through sync:
 * a mapping closed without it would read back as damaged. */
static bk_status_t sync_if_writable_mapping(bk_filter_t *f, bool *faulted)
{
    /* The shape, O(1): bk_filter_info counts the set bits, which read the
     * whole payload (a 500 MB mapping took 4.5 s to close and became
     * resident). */
    bk_filter_shape_t shape;
    bk_filter_shape(f, &shape);
    bk_status_t st = BK_OK;
    *faulted = false;
    if (shape.mapped && !shape.readonly)
        PYBK_GUARDED(f, *faulted, st = bk_filter_sync(f));
    return st;
}

static void filter_dealloc(filter_object *self)
{
    if (self->f) {
        bool faulted;
        (void)sync_if_writable_mapping(self->f, &faulted);
        bk_filter_free(self->f);
    }
    drop_checkpoints(self);
    pybk_objlock_free(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

int pybk_filter_kind(const char *name, bk_kind_t *out)
{
    if (bk_kind_parse(name, out) == BK_OK && bk_kind_caps(*out) != 0) /* 0: a bitmap */
        return 0;
    /* the kinds there are, from the library's registry: those made empty,
     * then the static ones Filter.build makes */
    bk_kind_t kinds[64];
    size_t n = bk_filter_kinds(kinds, sizeof kinds / sizeof kinds[0]);
    char list[512] = "", built[256] = "";
    for (size_t i = 0; i < n && i < sizeof kinds / sizeof kinds[0]; i++) {
        bool fixed = (bk_kind_caps(kinds[i]) & BK_CAP_STATIC) != 0;
        char *dst = fixed ? built : list;
        size_t cap = fixed ? sizeof built : sizeof list, used = strlen(dst);
        snprintf(dst + used, cap - used, "%s%s", used ? ", " : "", bk_kind_name(kinds[i]));
    }
    PyErr_Format(PyExc_ValueError,
                 "unknown filter kind '%s' (%s, or %s through Filter.build; bitmaps are "
                 "bloomkit.Bitmap)", name, list, built);
    return -1;
}

/* kind and sub_kind may be NULL (None in Python): the library's default
 * (kind 0), which picks the kind by the error rate as the tool and
 * the C API do, so a filter made here and one made by `bloomkit create`
 * with the same n and p are the same kind. */
static int parse_options(bk_options_t *o, const char *kind, const char *hash, PyObject *seed,
                         const char *sub_kind)
{
    if ((kind && pybk_filter_kind(kind, &o->kind) < 0) ||
        (sub_kind && pybk_filter_kind(sub_kind, &o->sub_kind) < 0))
        return -1;
    if (hash && bk_hash_parse(hash, &o->hash) != BK_OK) {
        PyErr_Format(PyExc_ValueError, "unknown hash '%s'", hash);
        return -1;
    }
    if (seed != Py_None) {
        if (pybk_u64(seed, "seed", &o->seed) < 0)
            return -1;
        o->seed_set = true;
    }
    return 0;
}

/* normalize= as a key form: None (not given: *given false), "none" (keys
 * as given), "url" or "email". 0, or -1 with InvalidArgumentError. */
static int parse_normalize(PyObject *obj, bk_key_form_t *form, bool *given)
{
    *given = obj && obj != Py_None;
    *form = BK_KEY_FORM_AS_GIVEN;
    if (!*given)
        return 0;
    const char *name = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (name && strcmp(name, "url") == 0)
        *form = BK_KEY_FORM_URL;
    else if (name && strcmp(name, "email") == 0)
        *form = BK_KEY_FORM_EMAIL;
    else if (!name || strcmp(name, "none") != 0) {
        PyErr_Clear();
        PyErr_Format(pybk_error_class(BK_EINVAL),
                     "bad normalize %R (want 'url', 'email', 'none' or None)", obj);
        return -1;
    }
    return 0;
}

/* How the tool and this package name a key form in a message. */
static const char *form_words(bk_key_form_t form)
{
    return form == BK_KEY_FORM_URL     ? "normalize='url'"
           : form == BK_KEY_FORM_EMAIL ? "normalize='email'"
                                       : "normalize='none' (keys as given)";
}

/* The key form of a filter this object took from a file, against the
 * normalize= it was asked for, as the bloomkit tool settles --normalize:
 * the file's form applies unless normalize= says otherwise; a file that
 * records none takes the one asked for (recorded when `writes`: the copy
 * in memory of load(), which save() writes); an empty file that records
 * "as given" may still choose; any other disagreement is refused, since
 * the keys would not match. 0, or -1 with InvalidArgumentError. */
static int settle_form(filter_object *self, PyObject *normalize, bool writes, PyObject *path)
{
    bk_key_form_t asked, have = bk_filter_key_form(self->f);
    bool given;
    if (parse_normalize(normalize, &asked, &given) < 0)
        return -1;
    bool empty = bk_filter_items(self->f) == 0;
    if (have == BK_KEY_FORM_UNRECORDED || (writes && empty && given &&
                                           have == BK_KEY_FORM_AS_GIVEN)) {
        self->norm = asked;
        if (writes)
            (void)bk_filter_set_key_form(self->f, asked);
        return 0;
    }
    if (!given || asked == have) {
        self->norm = have;
        return 0;
    }
    PyObject *name = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
    if (name)
        PyErr_Format(pybk_error_class(BK_EINVAL),
                     "%U: its keys were added with %s and this call uses %s, so they would "
                     "not match; leave normalize out to use the file's (Filter.key_form shows "
                     "it)",
                     name, form_words(have), form_words(asked));
    Py_XDECREF(name);
    return -1;
}

/* InvalidArgumentError "bad NAME VALUE (want WANT)"; -1. */
static int bad_number(const char *name, double value, const char *want)
{
    PyObject *v = PyFloat_FromDouble(value);
    if (v)
        PyErr_Format(pybk_error_class(BK_EINVAL), "bad %s %R (want %s)", name, v, want);
    Py_XDECREF(v);
    return -1;
}

int pybk_check_size(uint64_t capacity, double fpr)
{
    if (capacity == 0) {
        PyErr_SetString(pybk_error_class(BK_EINVAL),
                        "bad capacity 0 (want the number of keys to hold, >= 1)");
        return -1;
    }
    if (!(fpr > 0.0 && fpr < 1.0))
        return bad_number("fpr", fpr, "a false-positive rate in (0, 1), such as 0.01");
    return 0;
}

/* The other options' ranges, each named with its value, as the tool names
 * its options; 0, or -1 with InvalidArgumentError. */
static int check_options(const bk_options_t *o)
{
    if (bk_kind_caps(o->kind) & BK_CAP_STATIC) {
        PyErr_Format(pybk_error_class(BK_EINVAL),
                     "kind '%s' is static: it is built from its whole key set, "
                     "bloomkit.build(keys, fpr, kind='%s'), not made empty and added to",
                     bk_kind_name(o->kind), bk_kind_name(o->kind));
        return -1;
    }
    if (o->growth != 0.0 && !(o->growth >= 1.0))
        return bad_number("growth", o->growth, "a capacity factor >= 1, such as 2");
    if (o->tightening != 0.0 && !(o->tightening > 0.0 && o->tightening < 1.0))
        return bad_number("tightening", o->tightening, "an error factor in (0, 1), such as 0.5");
    if (o->window_generations != 0 &&
        (o->window_generations < 2 || o->window_generations > 16)) {
        PyErr_Format(pybk_error_class(BK_EINVAL), "bad generations %u (want 2..16)",
                     o->window_generations);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(filter_doc,
"Filter(capacity, fpr=0.01, path=None, *, kind=None, hash=None, seed=None,\n"
"       growth=2.0, tightening=0.5, nonscaling=False, sub_kind=None,\n"
"       window_span=0, generations=0, normalize=None,\n"
"       error_rate=None, force=False)\n"
"--\n\n"
"A Bloom filter sized for `capacity` keys at false-positive rate `fpr`.\n\n"
"kind: None (default) lets the library choose by fpr, as the bloomkit tool\n"
"does: 'split' from 0.4% to 2%, 'blocked' at other rates down to 0.1%,\n"
"'blocked2' below. Or 'classic', 'precise', 'counting' (supports remove),\n"
"'cuckoo' (supports remove and count, at about a fifth of counting's bytes;\n"
"grows past capacity),\n"
"'scalable' (grows past capacity by adding sub-filters of `growth` times\n"
"the capacity, each `tightening` times the error; sub_kind: 'blocked'\n"
"(None, the default), 'blocked2' or 'classic').\n"
"'window' remembers the last `capacity` adds, or with window_span=T the\n"
"adds of the last T units of the clock given to advance(), and forgets\n"
"older ones (generations: 2..16, default 4).\n"
"Keys are bytes, str (hashed as UTF-8) or bytes-like objects.\n"
"hash: None (the default, 'xxh3-mix8': XXH3-128 of each key, except that an\n"
"8-byte key, such as a packed 64-bit id, gets a cheaper seeded mixer),\n"
"'xxh3' (XXH3-128 for every key), or a classic string hash ('bkdr', ...).\n"
"seed=None draws a random hash seed; give one to get reproducible files.\n"
"normalize: 'url' or 'email' spells every key canonically before it is\n"
"hashed (bloomkit.h, bk_key_normalize: the bloomkit tool's --normalize),\n"
"so 'HTTP://Example.com:80/a' and 'http://example.com/a' are one key; None\n"
"(the default) takes keys as given. The form is recorded in saved files,\n"
"and the tool and load()/open() apply it.\n"
"error_rate is another name for fpr (as ShardedFilter and other libraries\n"
"call it); give one of them.\n"
"A filter larger than the memory available (or, with path, than the free\n"
"space on its file system) is refused with OutOfMemoryError naming the\n"
"size, most often a typo (10**13 for 10**9); force=True makes it anyway.\n"
"Raises InvalidArgumentError for a zero capacity or an fpr outside (0, 1).");

static int init_filter(filter_object *self, PyObject *capacity_obj, double fpr,
                       const char *kind, const char *hash, PyObject *seed, double growth,
                       double tightening, int nonscaling, const char *sub_kind,
                       unsigned long long window_span, unsigned int generations,
                       PyObject *normalize, PyObject *path, int force);

static int filter_init(filter_object *self, PyObject *args, PyObject *kw)
{
    /* path third, positionally too: pybloomfiltermmap3's
     * BloomFilter(capacity, error_rate, filename) reads the same */
    static char *kwlist[] = {"capacity", "fpr", "path", "kind", "hash", "seed", "growth",
                             "tightening", "nonscaling", "sub_kind", "window_span",
                             "generations", "normalize", "error_rate", "force", NULL};
    PyObject *capacity_obj, *seed = Py_None, *normalize = Py_None, *path = NULL;
    PyObject *fpr_obj = NULL, *error_rate = NULL;
    double fpr = 0.01, growth = 0.0, tightening = 0.0;
    const char *kind = NULL, *hash = NULL, *sub_kind = NULL;
    int nonscaling = 0, force = 0;
    unsigned long long window_span = 0;
    unsigned int generations = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO&$zzOddpzKIOOp:Filter", kwlist,
                                     &capacity_obj, &fpr_obj, PyUnicode_FSConverter, &path,
                                     &kind, &hash, &seed, &growth, &tightening, &nonscaling,
                                     &sub_kind, &window_span, &generations, &normalize,
                                     &error_rate, &force))
        return -1;
    /* fpr, or its other name error_rate (ShardedFilter's and other
     * libraries'): one of them */
    if (fpr_obj && error_rate && error_rate != Py_None) {
        PyErr_SetString(PyExc_TypeError, "give fpr or error_rate (the same thing), not both");
        Py_XDECREF(path);
        return -1;
    }
    PyObject *rate = error_rate && error_rate != Py_None ? error_rate : fpr_obj;
    if (rate) {
        fpr = PyFloat_AsDouble(rate);
        if (fpr == -1.0 && PyErr_Occurred()) {
            Py_XDECREF(path);
            return -1;
        }
    }
    int rc = init_filter(self, capacity_obj, fpr, kind, hash, seed, growth, tightening,
                         nonscaling, sub_kind, window_span, generations, normalize, path, force);
    Py_XDECREF(path);
    return rc;
}

/* A new file at path holding f (never replacing one), then f swapped for
 * that file mapped writable: pybloomfiltermmap3's file-backed filter. */
static bk_status_t back_with_file(bk_filter_t **f, PyObject *path, const char **why)
{
    bk_filter_t *mapped = NULL;
    bk_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = bk_filter_save_new(*f, PyBytes_AS_STRING(path));
    if (st == BK_OK)
        st = bk_filter_open(&mapped, PyBytes_AS_STRING(path), BK_MAP_WRITABLE, why);
    Py_END_ALLOW_THREADS
    if (st == BK_OK) {
        bk_filter_free(*f);
        *f = mapped;
    }
    return st;
}

/* "65.1 TB" */
static void size_words(double b, char *out, size_t n)
{
    static const char *units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
    int u = 0;
    while (b >= 1000.0 && u < 6) {
        b /= 1000.0;
        u++;
    }
    snprintf(out, n, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

/* A new filter larger than this machine can hold (a typo: 10**13 for
 * 10**9 made a 65 TB mapping that "succeeded", then any look at it spun
 * for minutes): OutOfMemoryError naming the sizes, unless force. */
static int refuse_if_too_big(const bk_filter_t *f, PyObject *path, int force)
{
    if (force)
        return 0;
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    uint64_t room = 0;
    bk_status_t st = bk_room_for(sh.bytes, path ? PyBytes_AS_STRING(path) : NULL, &room);
    if (st == BK_OK)
        return 0;
    bool no_mem = st == BK_ENOMEM;
    char need[32], have[32];
    size_words((double)sh.bytes, need, sizeof need);
    size_words((double)room, have, sizeof have);
    char msg[300]; /* PyErr_Format has no %g */
    snprintf(msg, sizeof msg,
             "a filter for %llu keys at fpr %g takes %s, more than the %s %s (check the "
             "capacity and fpr for a typo; force=True makes it anyway)",
             (unsigned long long)sh.capacity, sh.fpr_target, need, have,
             no_mem ? "of memory available" : "free on the file system of path");
    PyErr_SetString(pybk_error_class(BK_ENOMEM), msg);
    return -1;
}

static int init_filter(filter_object *self, PyObject *capacity_obj, double fpr,
                       const char *kind, const char *hash, PyObject *seed, double growth,
                       double tightening, int nonscaling, const char *sub_kind,
                       unsigned long long window_span, unsigned int generations,
                       PyObject *normalize, PyObject *path, int force)
{
    uint64_t capacity;
    bk_options_t o = {0};
    bk_key_form_t form;
    bool given;
    if (pybk_u64(capacity_obj, "capacity", &capacity) < 0 ||
        parse_options(&o, kind, hash, seed, sub_kind) < 0 ||
        parse_normalize(normalize, &form, &given) < 0)
        return -1;
    o.growth = growth;
    o.tightening = tightening;
    o.nonscaling = nonscaling != 0;
    o.window_span = window_span;
    o.window_generations = generations;
    if (pybk_check_size(capacity, fpr) < 0 || check_options(&o) < 0)
        return -1;
    bk_filter_t *f = NULL;
    bk_status_t st = bk_filter_create(&f, capacity, fpr, &o);
    if (st != BK_OK) {
        pybk_raise(st, NULL, NULL);
        return -1;
    }
    if (refuse_if_too_big(f, path, force) < 0) {
        bk_filter_free(f);
        return -1;
    }
    /* Recorded like the tool's create: a file says how its keys are spelled. */
    (void)bk_filter_set_key_form(f, form);
    if (path) {
        const char *why = NULL;
        errno = 0;
        st = back_with_file(&f, path, &why);
        if (st != BK_OK) {
            bk_filter_free(f);
            if (st == BK_EEXIST) {
                PyObject *text = path_text(path);
                if (text)
                    PyErr_Format(PyExc_FileExistsError,
                                 "'%U' exists: open it with bloomkit.open(path, writable=True)",
                                 text);
                Py_XDECREF(text);
                return -1;
            }
            Py_XDECREF(raise_for_path(st, why, path));
            return -1;
        }
    }
    pybk_lock(&self->lock);
    bk_filter_t *old = self->f;
    self->f = f;
    self->norm = form;
    pybk_unlock(&self->lock);
    bk_filter_free(old);
    return 0;
}

PyDoc_STRVAR(advance_doc,
"advance(now)\n--\n\n"
"Time windows: moves the window's clock to `now` (in the unit of\n"
"window_span: seconds, milliseconds or a sequence number); adds and\n"
"lookups then use it. A `now` earlier than the latest is ignored. Other\n"
"window filters: no effect. Raises KindError for other kinds.");

static PyObject *filter_advance(filter_object *self, PyObject *arg)
{
    uint64_t now;
    if (!live(self) || pybk_u64(arg, "now", &now) < 0)
        return NULL;
    pybk_lock(&self->lock);
    bk_status_t st = self->f ? bk_filter_advance(self->f, now) : BK_EINVAL;
    pybk_unlock(&self->lock);
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, NULL, NULL);
}

PyDoc_STRVAR(close_doc,
"close()\n--\n\n"
"Releases the filter (and unmaps its file, syncing a writable mapping\n"
"first). Later calls raise ValueError. Closing twice is harmless.");

static PyObject *filter_close(filter_object *self, PyObject *unused)
{
    (void)unused;
    pybk_lock(&self->lock);
    bool faulted = false;
    bk_status_t st = self->f ? sync_if_writable_mapping(self->f, &faulted) : BK_OK;
    if (st == BK_OK || faulted) { /* a truncated file: unmapped all the same */
        bk_filter_free(self->f);
        self->f = NULL;
        drop_checkpoints(self);
    }
    pybk_unlock(&self->lock);
    if (faulted)
        return pybk_raise_truncated();
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, NULL, NULL);
}

static PyObject *filter_enter(filter_object *self, PyObject *unused)
{
    (void)unused;
    return live(self) ? Py_NewRef(self) : NULL;
}

static PyObject *filter_exit(filter_object *self, PyObject *args)
{
    (void)args;
    return filter_close(self, NULL);
}

/* ---- single keys -------------------------------------------------------- */

/* A filter read from a paged file that met a damaged page (whose keys
 * then answer "present", never "absent"): CorruptError with the offset,
 * and -1; else 0. Asked after every lookup or add, before an answer is
 * handed out. */
static int damaged(const bk_filter_t *f)
{
    const char *why = NULL;
    if (!f || bk_filter_damage(f, &why) == BK_OK)
        return 0;
    pybk_raise(BK_ECORRUPT, why, NULL);
    return -1;
}

PyDoc_STRVAR(add_doc,
"add(key) -> bool\n--\n\n"
"Adds a key. Returns True if it was new (not already, possibly falsely,\n"
"present). ReadOnlyError on a read-only mapping, FullError on a full\n"
"non-scaling filter; on error the filter is unchanged.");

static PyObject *filter_add(filter_object *self, PyObject *key_obj)
{
    bk_key_t key;
    PyObject *hold;
    if (!live(self) || pybk_key_in_form(key_obj, self->norm, &key, &hold) < 0)
        return NULL;
    bool was_new = false, faulted = false;
    bk_status_t st = BK_EINVAL;
    pybk_lock(&self->lock);
    if (self->f)
        PYBK_GUARDED(self->f, faulted, st = bk_filter_add(self->f, key.ptr, key.len, &was_new));
    pybk_unlock(&self->lock);
    Py_DECREF(hold);
    if (faulted)
        return pybk_raise_truncated();
    if (damaged(self->f) < 0)
        return NULL;
    if (st != BK_OK)
        return pybk_raise(st, NULL, NULL);
    return PyBool_FromLong(was_new);
}

/* 1 if present, 0 if not, -1 with an exception set. */
static int contains_key(filter_object *self, PyObject *key_obj)
{
    bk_key_t key;
    PyObject *hold;
    if (!live(self) || pybk_key_in_form(key_obj, self->norm, &key, &hold) < 0)
        return -1;
    int found = 0;
    bool faulted = false;
    pybk_lock(&self->lock);
    if (self->f)
        PYBK_GUARDED(self->f, faulted, found = bk_filter_contains(self->f, key.ptr, key.len));
    pybk_unlock(&self->lock);
    Py_DECREF(hold);
    if (faulted) {
        pybk_raise_truncated();
        return -1;
    }
    return damaged(self->f) < 0 ? -1 : found;
}

PyDoc_STRVAR(contains_doc,
"contains(key) -> bool\n--\n\n"
"True if the key may be in the set (`key in filter` is the same); False\n"
"if it certainly is not.");

static PyObject *filter_contains(filter_object *self, PyObject *key_obj)
{
    int found = contains_key(self, key_obj);
    return found < 0 ? NULL : PyBool_FromLong(found);
}

PyDoc_STRVAR(count_doc,
"count(key) -> int\n--\n\n"
"Counting filters: an upper bound of how many times the key was added\n"
"(saturates at 15). Other kinds: 1 if the key may be present, else 0.");

static PyObject *filter_count(filter_object *self, PyObject *key_obj)
{
    bk_key_t key;
    PyObject *hold;
    if (!live(self) || pybk_key_in_form(key_obj, self->norm, &key, &hold) < 0)
        return NULL;
    unsigned n = 0;
    bool faulted = false;
    pybk_lock(&self->lock);
    if (self->f)
        PYBK_GUARDED(self->f, faulted, n = bk_filter_count(self->f, key.ptr, key.len));
    pybk_unlock(&self->lock);
    Py_DECREF(hold);
    if (faulted)
        return pybk_raise_truncated();
    return PyLong_FromUnsignedLong(n);
}

PyDoc_STRVAR(remove_doc,
"remove(key)\n--\n\n"
"Counting filters: removes one occurrence of the key. NotFoundError (a\n"
"KeyError) if the key was never added, KindError (a TypeError) for\n"
"other kinds; nothing changes on error.");

static PyObject *filter_remove(filter_object *self, PyObject *key_obj)
{
    bk_key_t key;
    PyObject *hold;
    if (!live(self) || pybk_key_in_form(key_obj, self->norm, &key, &hold) < 0)
        return NULL;
    bk_status_t st = BK_EINVAL;
    bool faulted = false;
    pybk_lock(&self->lock);
    if (self->f)
        PYBK_GUARDED(self->f, faulted, st = bk_filter_remove(self->f, key.ptr, key.len));
    pybk_unlock(&self->lock);
    Py_DECREF(hold);
    if (faulted)
        return pybk_raise_truncated();
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, NULL, NULL);
}

/* ---- batches ------------------------------------------------------------ */

/* The status, or -1 with an exception set (the mapped file was truncated). */
static int add_chunk(filter_object *self, pybk_chunk_t *c, uint64_t *n_new, bk_status_t *st)
{
    volatile bool faulted = false; /* set across the guard's siglongjmp */
    *st = BK_EINVAL;
    pybk_lock(&self->lock);
    bk_filter_t *f = self->f;
    if (f && c->n >= PYBK_NOGIL_MIN) {
        Py_BEGIN_ALLOW_THREADS
        PYBK_GUARDED(f, faulted, *st = bk_filter_add_batch(f, c->keys, c->n, NULL, n_new));
        Py_END_ALLOW_THREADS
    } else if (f) {
        PYBK_GUARDED(f, faulted, *st = bk_filter_add_batch(f, c->keys, c->n, NULL, n_new));
    }
    pybk_unlock(&self->lock);
    if (faulted) {
        pybk_raise_truncated();
        return -1;
    }
    return damaged(self->f);
}

static int contains_chunk(filter_object *self, pybk_chunk_t *c)
{
    volatile bool faulted = false; /* set across the guard's siglongjmp */
    pybk_lock(&self->lock);
    const bk_filter_t *f = self->f;
    if (f && c->n >= PYBK_NOGIL_MIN) {
        Py_BEGIN_ALLOW_THREADS
        PYBK_GUARDED(f, faulted, bk_filter_contains_batch(f, c->keys, c->n, c->flags));
        Py_END_ALLOW_THREADS
    } else if (f) {
        PYBK_GUARDED(f, faulted, bk_filter_contains_batch(f, c->keys, c->n, c->flags));
    }
    pybk_unlock(&self->lock);
    if (faulted) {
        pybk_raise_truncated();
        return -1;
    }
    if (!f)
        PyErr_SetString(PyExc_ValueError, "bloomkit.Filter closed during a batch");
    return f ? damaged(f) : -1;
}

PyDoc_STRVAR(add_many_doc,
"add_many(keys) -> int\n--\n\n"
"Adds every key of an iterable of bytes/str and returns how many were new.\n"
"Keys go to the library in chunks of 4096 (hashed, prefetched, probed),\n"
"with the GIL released for chunks of 256 keys or more. On error (a key of\n"
"the wrong type, a full non-scaling filter) the keys of earlier chunks\n"
"stay added.");

static PyObject *filter_add_many(filter_object *self, PyObject *iterable)
{
    if (!live(self))
        return NULL;
    PyObject *it = PyObject_GetIter(iterable);
    pybk_chunk_t *c = it ? PyMem_Calloc(1, sizeof *c) : NULL;
    if (!c) {
        Py_XDECREF(it);
        return it ? PyErr_NoMemory() : NULL;
    }
    uint64_t total = 0;
    bk_status_t st = BK_OK;
    Py_ssize_t got;
    while ((got = pybk_chunk_fill(c, it, self->norm)) > 0) {
        uint64_t n_new = 0;
        if (add_chunk(self, c, &n_new, &st) < 0) {
            got = -1;
            break;
        }
        total += n_new;
        if (st != BK_OK)
            break;
    }
    pybk_chunk_release(c);
    PyMem_Free(c);
    Py_DECREF(it);
    if (got < 0)
        return NULL;
    if (st != BK_OK)
        return pybk_raise(st, NULL, NULL);
    return PyLong_FromUnsignedLongLong(total);
}

static int append_flags(PyObject *list, const pybk_chunk_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (PyList_Append(list, c->flags[i] ? Py_True : Py_False) < 0)
            return -1;
    return 0;
}

PyDoc_STRVAR(contains_many_doc,
"contains_many(keys) -> list[bool]\n--\n\n"
"One answer per key of an iterable of bytes/str, in order, computed in\n"
"chunks by the library's batch call with the GIL released.");

static PyObject *filter_contains_many(filter_object *self, PyObject *iterable)
{
    if (!live(self))
        return NULL;
    PyObject *it = PyObject_GetIter(iterable);
    PyObject *out = it ? PyList_New(0) : NULL;
    pybk_chunk_t *c = out ? PyMem_Calloc(1, sizeof *c) : NULL;
    if (!c) {
        if (out)
            PyErr_NoMemory();
        Py_XDECREF(out);
        Py_XDECREF(it);
        return NULL;
    }
    Py_ssize_t got;
    while ((got = pybk_chunk_fill(c, it, self->norm)) > 0)
        if (contains_chunk(self, c) < 0 || append_flags(out, c) < 0) {
            got = -1;
            break;
        }
    pybk_chunk_release(c);
    PyMem_Free(c);
    Py_DECREF(it);
    if (got < 0)
        Py_CLEAR(out);
    return out;
}

/* ---- whole filter ------------------------------------------------------- */

PyDoc_STRVAR(clear_doc, "clear()\n--\n\nForgets every key; keeps size, k, hash and seed.");

static PyObject *filter_clear(filter_object *self, PyObject *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    pybk_lock(&self->lock);
    bk_status_t st = self->f ? bk_filter_clear(self->f) : BK_EINVAL;
    pybk_unlock(&self->lock);
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, NULL, NULL);
}

/* dst |= src, each under its own lock (src first, a copy, so that two
 * threads doing a.union(b) and b.union(a) cannot deadlock). */
static bk_status_t union_into(filter_object *dst, filter_object *src)
{
    bk_filter_t *copy = NULL;
    pybk_lock(&src->lock);
    bk_status_t st = src->f ? bk_filter_clone(&copy, src->f) : BK_EINVAL;
    pybk_unlock(&src->lock);
    if (st != BK_OK)
        return st;
    pybk_lock(&dst->lock);
    st = dst->f ? bk_filter_union(dst->f, copy) : BK_EINVAL;
    pybk_unlock(&dst->lock);
    bk_filter_free(copy);
    return st;
}

static int check_filter_arg(PyObject *obj)
{
    if (PyObject_TypeCheck(obj, &pybk_filter_type))
        return 0;
    PyErr_Format(PyExc_TypeError, "expected a bloomkit.Filter, not %.100s", Py_TYPE(obj)->tp_name);
    return -1;
}

PyDoc_STRVAR(union_doc,
"union(other)\n--\n\n"
"Adds every key of `other` to this filter (self |= other). Both must\n"
"have the same kind, size, k, hash and seed (make them with the same\n"
"arguments and seed, or copy one): IncompatibleError otherwise.");

static const char *name_or(const char *name, const char *fallback);

/* Why two filters cannot be merged, in words, as the tool's merge says it:
 * the first field that differs (from the shapes: O(1)), and the fix. */
static PyObject *raise_incompatible(filter_object *a, filter_object *b)
{
    bk_filter_shape_t x, y;
    pybk_lock(&a->lock);
    bk_filter_shape(a->f, &x);
    pybk_unlock(&a->lock);
    pybk_lock(&b->lock);
    bk_filter_shape(b->f, &y);
    pybk_unlock(&b->lock);
    char d[160] = "";
    if (x.kind != y.kind || x.sub_kind != y.sub_kind)
        snprintf(d, sizeof d, "kind (%s vs %s)", name_or(bk_kind_name(x.kind), "?"),
                 name_or(bk_kind_name(y.kind), "?"));
    else if (x.bytes != y.bytes || x.filters != y.filters)
        snprintf(d, sizeof d, "size (%llu vs %llu bytes in %u vs %u filters)",
                 (unsigned long long)x.bytes, (unsigned long long)y.bytes, x.filters, y.filters);
    else if (x.k != y.k)
        snprintf(d, sizeof d, "k (%u vs %u)", x.k, y.k);
    else if (x.hash != y.hash)
        snprintf(d, sizeof d, "hash (%s vs %s)", name_or(bk_hash_name(x.hash), "?"),
                 name_or(bk_hash_name(y.hash), "?"));
    else if (x.seed != y.seed)
        snprintf(d, sizeof d, "seed (0x%016llx vs 0x%016llx)", (unsigned long long)x.seed,
                 (unsigned long long)y.seed);
    char msg[400];
    snprintf(msg, sizeof msg,
             "cannot merge: the filters differ in %s. Filters merge only when made with the "
             "same capacity, fpr, kind and hash and the same explicit seed, such as "
             "Filter(n, p, seed=7) for both (without seed= each draws a random one)",
             d[0] ? d : "kind, size, k, hash or seed");
    PyErr_SetString(pybk_error_class(BK_EINCOMPAT), msg);
    return NULL;
}

static PyObject *filter_union(filter_object *self, PyObject *other)
{
    if (!live(self) || check_filter_arg(other) < 0 || !live((filter_object *)other))
        return NULL;
    bk_status_t st = union_into(self, (filter_object *)other);
    if (st == BK_EINCOMPAT)
        return raise_incompatible(self, (filter_object *)other);
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, NULL, NULL);
}

PyDoc_STRVAR(copy_doc, "copy() -> Filter\n--\n\nA deep copy, in memory (also of a mapped filter).");

static PyObject *filter_copy(filter_object *self, PyObject *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    bk_filter_t *copy = NULL;
    pybk_lock(&self->lock);
    bk_status_t st = self->f ? bk_filter_clone(&copy, self->f) : BK_EINVAL;
    pybk_unlock(&self->lock);
    if (st != BK_OK)
        return pybk_raise(st, NULL, NULL);
    PyObject *r = pybk_filter_wrap(Py_TYPE(self), copy);
    if (r)
        ((filter_object *)r)->norm = self->norm;
    return r;
}

static PyObject *filter_deepcopy(filter_object *self, PyObject *memo)
{
    (void)memo;
    return filter_copy(self, NULL);
}

static PyObject *filter_or(PyObject *a, PyObject *b)
{
    if (!PyObject_TypeCheck(a, &pybk_filter_type) || !PyObject_TypeCheck(b, &pybk_filter_type))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *out = filter_copy((filter_object *)a, NULL);
    if (!out)
        return NULL;
    PyObject *r = filter_union((filter_object *)out, b);
    if (!r)
        Py_CLEAR(out);
    Py_XDECREF(r);
    return out;
}

static PyObject *filter_ior(PyObject *a, PyObject *b)
{
    if (!PyObject_TypeCheck(b, &pybk_filter_type))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = filter_union((filter_object *)a, b);
    if (!r)
        return NULL;
    Py_DECREF(r);
    return Py_NewRef(a);
}

static int set_item(PyObject *d, const char *name, PyObject *v)
{
    if (!v)
        return -1;
    int rc = PyDict_SetItemString(d, name, v);
    Py_DECREF(v);
    return rc;
}

static const char *name_or(const char *name, const char *fallback)
{
    return name ? name : fallback;
}

static int fill_info(PyObject *d, const bk_filter_info_t *i)
{
    if (set_item(d, "kind", PyUnicode_FromString(name_or(bk_kind_name(i->kind), "?"))) ||
        set_item(d, "hash", PyUnicode_FromString(name_or(bk_hash_name(i->hash), "?"))) ||
        set_item(d, "seed", PyLong_FromUnsignedLongLong(i->seed)) ||
        set_item(d, "capacity", PyLong_FromUnsignedLongLong(i->capacity)) ||
        set_item(d, "fpr", PyFloat_FromDouble(i->fpr_target)) ||
        set_item(d, "cells", PyLong_FromUnsignedLongLong(i->cells)) ||
        set_item(d, "k", PyLong_FromUnsignedLong(i->k)) ||
        set_item(d, "bytes", PyLong_FromUnsignedLongLong(i->bytes)) ||
        set_item(d, "items", PyLong_FromUnsignedLongLong(i->items)) ||
        set_item(d, "cells_set", PyLong_FromUnsignedLongLong(i->cells_set)) ||
        set_item(d, "fill", PyFloat_FromDouble(i->fill)) ||
        set_item(d, "estimated_items", PyFloat_FromDouble(i->estimated_items)) ||
        set_item(d, "expected_fpr", PyFloat_FromDouble(i->expected_fpr)) ||
        set_item(d, "filters", PyLong_FromUnsignedLong(i->filters)) ||
        set_item(d, "mapped", PyBool_FromLong(i->mapped)) ||
        set_item(d, "readonly", PyBool_FromLong(i->readonly)))
        return -1;
    /* a chain's own fields: a kind that grows with tighter rates */
    if ((bk_kind_caps(i->kind) & (BK_CAP_GROW | BK_CAP_BOUNDED)) != (BK_CAP_GROW | BK_CAP_BOUNDED))
        return 0;
    if (set_item(d, "sub_kind", PyUnicode_FromString(name_or(bk_kind_name(i->sub_kind), "?"))) ||
        set_item(d, "growth", PyFloat_FromDouble(i->growth)) ||
        set_item(d, "tightening", PyFloat_FromDouble(i->tightening)) ||
        set_item(d, "nonscaling", PyBool_FromLong(i->nonscaling)))
        return -1;
    return 0;
}

PyDoc_STRVAR(info_doc,
"info() -> dict\n--\n\n"
"kind, hash, seed, capacity, fpr (the target), cells, k, bytes (payload),\n"
"items (keys added that were new), cells_set, fill, estimated_items,\n"
"expected_fpr (at the current fill), filters, mapped, readonly; scalable\n"
"filters add sub_kind, growth, tightening, nonscaling. Reads the whole\n"
"payload to count the set cells.");

/* bk_filter_info under the lock and the SIGBUS guard: 0, or -1 with an
 * exception (a truncated mapping, or closed by another thread meanwhile). */
static int read_info(filter_object *self, bk_filter_info_t *info)
{
    pybk_lock(&self->lock);
    bool ok = self->f != NULL, faulted = false;
    if (ok)
        PYBK_GUARDED(self->f, faulted, bk_filter_info(self->f, info));
    pybk_unlock(&self->lock);
    if (faulted) {
        Py_XDECREF(pybk_raise_truncated());
        return -1;
    }
    if (!ok) {
        (void)live(self);
        return -1;
    }
    return 0;
}

static PyObject *filter_info(filter_object *self, PyObject *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    bk_filter_info_t info;
    if (read_info(self, &info) < 0)
        return NULL;
    PyObject *d = PyDict_New();
    if (d && fill_info(d, &info) < 0)
        Py_CLEAR(d);
    return d;
}

static Py_ssize_t filter_len(filter_object *self)
{
    if (!live(self))
        return -1;
    pybk_lock(&self->lock);
    uint64_t n = self->f ? bk_filter_items(self->f) : 0;
    pybk_unlock(&self->lock);
    return n > (uint64_t)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)n;
}

static int filter_sq_contains(filter_object *self, PyObject *key)
{
    return contains_key(self, key);
}

static PyObject *filter_repr(filter_object *self)
{
    if (!self->f)
        return PyUnicode_FromString("<bloomkit.Filter closed>");
    /* The shape, O(1): a repr must never read a whole filter (info's fill
     * does, minutes for a large one). */
    bk_filter_shape_t i;
    pybk_lock(&self->lock);
    bk_filter_shape(self->f, &i);
    pybk_unlock(&self->lock);
    char fpr[32];
    snprintf(fpr, sizeof fpr, "%g", i.fpr_target);
    return PyUnicode_FromFormat("<bloomkit.Filter kind=%s capacity=%llu fpr=%s items=%llu%s>",
                                name_or(bk_kind_name(i.kind), "?"),
                                (unsigned long long)i.capacity, fpr,
                                (unsigned long long)i.items, i.mapped ? " mapped" : "");
}

static PyObject *filter_get_kind(filter_object *self, void *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    return PyUnicode_FromString(name_or(bk_kind_name(bk_filter_kind(self->f)), "?"));
}

/* The library records the form and never applies it: a Python caller
 * adding to a tool's `--normalize url` file must spell keys that way. */
static PyObject *filter_get_key_form(filter_object *self, void *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    return PyUnicode_FromString(name_or(bk_key_form_name(bk_filter_key_form(self->f)), "?"));
}

static PyObject *filter_get_closed(filter_object *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->f == NULL);
}

/* ---- files and bytes ---------------------------------------------------- */

PyDoc_STRVAR(save_doc,
"save(path)\n--\n\n"
"Writes the filter to `path` atomically (temporary file, fsync, rename):\n"
"the same format the bloomkit tool reads and writes. On error the old\n"
"file is untouched: FileError / NoSpaceError (OSErrors with errno).");

static PyObject *filter_save(filter_object *self, PyObject *args)
{
    PyObject *path;
    if (!live(self) || !PyArg_ParseTuple(args, "O&:save", PyUnicode_FSConverter, &path))
        return NULL;
    bk_status_t st = BK_EINVAL;
    const char *why = NULL;
    pybk_lock(&self->lock);
    uint64_t pages = 0;
    if (self->f)
        bk_filter_pages(self->f, NULL, &pages);
    if (self->f && pages) {
        /* A filter loaded from a paged file, saved back to that file:
         * the pages its adds changed, in place through a journal (as
         * checkpoint() writes them), not the whole file again; to another
         * path, a whole save (the checkpoint's own choice). */
        bk_checkpoint_t *cp = NULL;
        st = bk_filter_damage(self->f, &why);
        Py_BEGIN_ALLOW_THREADS
        if (st == BK_OK)
            st = bk_checkpoint_new(&cp, self->f, PyBytes_AS_STRING(path));
        if (st == BK_OK)
            st = bk_checkpoint_save(cp, self->f, NULL);
        bk_checkpoint_free(cp);
        Py_END_ALLOW_THREADS
    } else if (self->f) {
        Py_BEGIN_ALLOW_THREADS
        st = bk_filter_save_why(self->f, PyBytes_AS_STRING(path), false, &why);
        Py_END_ALLOW_THREADS
    }
    pybk_unlock(&self->lock);
    PyObject *r = st == BK_OK ? Py_NewRef(Py_None) : raise_for_path(st, why, path);
    Py_DECREF(path);
    return r;
}

PyDoc_STRVAR(update_doc,
"update(*others)\n--\n\n"
"Adds every key of each argument, as set.update() does: an iterable of\n"
"keys (add_many()) or another Filter (union(), so the same shape and\n"
"seed). Returns None; f |= g is the same for one Filter.");

static PyObject *filter_update(filter_object *self, PyObject *args)
{
    if (!live(self))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *other = PyTuple_GET_ITEM(args, i);
        PyObject *r = PyObject_TypeCheck(other, &pybk_filter_type)
                          ? filter_union(self, other)
                          : filter_add_many(self, other);
        if (!r)
            return NULL;
        Py_DECREF(r);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(approx_len_doc,
"approx_len()\n--\n\n"
"An estimate of how many distinct keys the filter holds, from the share\n"
"of its bits that are set (info()['estimated_items'], rounded): what\n"
"other libraries' len() or approx_items give. Reads the whole filter.\n"
"len(f) is exact for what it counts: the adds that were new (a key\n"
"falsely found present when added is not counted; merged filters count\n"
"both sides).");

static PyObject *filter_approx_len(filter_object *self, PyObject *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    bk_filter_info_t info;
    if (read_info(self, &info) < 0)
        return NULL;
    double e = info.estimated_items;
    return PyLong_FromDouble(e > 0 ? floor(e + 0.5) : 0);
}

PyDoc_STRVAR(checkpoint_doc,
"checkpoint(path)\n--\n\n"
"Brings the file at `path` up to date with the filter, writing only the\n"
"512-byte sectors that changed since this object's last checkpoint() to\n"
"the same path: in place, crash-safe through a journal beside the file\n"
"(path + '-journal'), which load() and open() finish if a process was\n"
"killed mid-way. The whole file is written instead (as save() does) the\n"
"first time, when that writes less, or when the file is not the one the\n"
"last checkpoint wrote. For a large filter saved often: a crawl's\n"
"seen-set. Keeps a 64-bit hash per sector (1/64 of the filter's size).\n"
"Errors as save().");

static PyObject *filter_checkpoint(filter_object *self, PyObject *args)
{
    PyObject *path;
    if (!live(self) || !PyArg_ParseTuple(args, "O&:checkpoint", PyUnicode_FSConverter, &path))
        return NULL;
    bk_status_t st = BK_EINVAL;
    pybk_lock(&self->lock);
    if (self->cp && PyObject_RichCompareBool(self->cp_path, path, Py_EQ) != 1)
        drop_checkpoints(self);
    if (self->f && !self->cp) {
        Py_BEGIN_ALLOW_THREADS
        st = bk_checkpoint_new(&self->cp, self->f, PyBytes_AS_STRING(path));
        Py_END_ALLOW_THREADS
        if (st == BK_OK)
            self->cp_path = Py_NewRef(path);
    }
    if (self->f && self->cp) {
        Py_BEGIN_ALLOW_THREADS
        st = bk_checkpoint_save(self->cp, self->f, NULL);
        Py_END_ALLOW_THREADS
    }
    pybk_unlock(&self->lock);
    PyObject *r = st == BK_OK ? Py_NewRef(Py_None) : raise_for_path(st, NULL, path);
    Py_DECREF(path);
    return r;
}

PyDoc_STRVAR(sync_doc,
"sync()\n--\n\n"
"Writable mapping: updates the file's checksums and flushes it to disk.\n"
"InvalidArgumentError for an in-memory filter.");

static PyObject *filter_sync(filter_object *self, PyObject *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    bk_status_t st = BK_EINVAL;
    bool faulted = false;
    pybk_lock(&self->lock);
    bk_filter_t *f = self->f;
    if (f) {
        Py_BEGIN_ALLOW_THREADS
        PYBK_GUARDED(f, faulted, st = bk_filter_sync(f));
        Py_END_ALLOW_THREADS
    }
    pybk_unlock(&self->lock);
    if (faulted)
        return pybk_raise_truncated();
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, NULL, NULL);
}

PyDoc_STRVAR(verify_doc,
"verify()\n--\n\n"
"Mapped filter: recomputes the payload checksum (open() does not) and\n"
"raises CorruptError on a mismatch. In-memory filters always pass.");

static PyObject *filter_verify(filter_object *self, PyObject *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    const char *why = NULL;
    bk_status_t st = BK_EINVAL;
    bool faulted = false;
    pybk_lock(&self->lock);
    bk_filter_t *f = self->f;
    if (f) {
        Py_BEGIN_ALLOW_THREADS
        PYBK_GUARDED(f, faulted, st = bk_filter_verify(f, &why));
        Py_END_ALLOW_THREADS
    }
    pybk_unlock(&self->lock);
    if (faulted)
        return pybk_raise_truncated();
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, why, NULL);
}

PyDoc_STRVAR(to_bytes_doc,
"to_bytes() -> bytes\n--\n\nThe portable serialized form (the file format).");

static PyObject *filter_to_bytes(filter_object *self, PyObject *unused)
{
    (void)unused;
    if (!live(self))
        return NULL;
    pybk_lock(&self->lock);
    uint64_t size = self->f ? bk_filter_serialized_size(self->f) : 0;
    PyObject *out = size <= (uint64_t)PY_SSIZE_T_MAX
                        ? PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size) : PyErr_NoMemory();
    bk_status_t st = BK_OK;
    if (out && self->f)
        st = bk_filter_serialize(self->f, PyBytes_AS_STRING(out), (size_t)size, NULL);
    pybk_unlock(&self->lock);
    if (out && st != BK_OK) {
        Py_CLEAR(out);
        pybk_raise(st, NULL, NULL);
    }
    return out;
}

PyDoc_STRVAR(from_bytes_doc,
"from_bytes(data) -> Filter\n--\n\n"
"Validates and loads a serialized filter (bytes-like; copied).\n"
"CorruptError / VersionError with the reason on bad input.");

static PyObject *filter_from_bytes(PyTypeObject *type, PyObject *arg)
{
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_deserialize(&f, buf.buf, (size_t)buf.len, &why);
    PyBuffer_Release(&buf);
    if (st != BK_OK)
        return pybk_raise(st, why, NULL);
    return pybk_filter_wrap(type, f);
}

PyDoc_STRVAR(load_doc,
"load(path, normalize=None) -> Filter\n--\n\n"
"Reads a filter file (as written by save() or the bloomkit tool) into\n"
"memory and validates it: CorruptError / VersionError with the reason\n"
"for a damaged or foreign file, FileError if it cannot be read. A file of\n"
"1 MiB and more (a paged file) is read as keys touch it, each 4 KiB page\n"
"checked when first read: a load of a 2 GB file reads kilobytes, and a\n"
"damaged page raises CorruptError (its offset) at the call that reads it. Keys are\n"
"spelled in the form the file records (Filter.key_form); normalize= must\n"
"agree with it (InvalidArgumentError otherwise, as the tool refuses a\n"
"conflicting --normalize), and sets it for a file that records none.");

static PyObject *filter_load(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "normalize", NULL};
    PyObject *path, *normalize = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O:load", kwlist, PyUnicode_FSConverter, &path,
                                     &normalize))
        return NULL;
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = bk_filter_load(&f, PyBytes_AS_STRING(path), &why);
    Py_END_ALLOW_THREADS
    PyObject *r = st == BK_OK ? pybk_filter_wrap(type, f) : raise_for_path(st, why, path);
    if (r && settle_form((filter_object *)r, normalize, true, path) < 0)
        Py_CLEAR(r);
    Py_DECREF(path);
    return r;
}

PyDoc_STRVAR(open_doc,
"open(path, writable=False, normalize=None) -> Filter\n--\n\n"
"Maps a filter file instead of reading it: a multi-GB filter answers at\n"
"once. The header is validated; the payload checksum only by verify()\n"
"(a paged file's pages: as keys first read them, as load() does).\n"
"Read-only mappings raise ReadOnlyError on add; writable ones update the\n"
"file in place (sync() or close() writes the checksums) and cannot grow\n"
"a scalable filter. Use it as a context manager to unmap promptly.\n"
"Keys are spelled in the form the file records; normalize= as for load().");

static PyObject *filter_open(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "writable", "normalize", NULL};
    PyObject *path, *normalize = Py_None;
    int writable = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|pO:open", kwlist, PyUnicode_FSConverter,
                                     &path, &writable, &normalize))
        return NULL;
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = bk_filter_open(&f, PyBytes_AS_STRING(path), writable ? BK_MAP_WRITABLE : BK_MAP_READONLY,
                        &why);
    Py_END_ALLOW_THREADS
    PyObject *r = st == BK_OK ? pybk_filter_wrap(type, f) : raise_for_path(st, why, path);
    /* A mapping's header is not rewritten for a form: it is applied only. */
    if (r && settle_form((filter_object *)r, normalize, false, path) < 0)
        Py_CLEAR(r);
    Py_DECREF(path);
    return r;
}

PyDoc_STRVAR(build_doc,
"build(keys, fpr=0.0, kind=None, hash=None, seed=None, normalize=None, memory=None,\n"
"      tmpdir=None) -> Filter\n--\n\n"
"A static filter of an iterable of bytes/str given whole: kind 'fuse8'\n"
"(about 9 bits a key, rate 2^-8), 'fuse16' (18 bits, 2^-16) or 'fuse32'\n"
"(36 bits, 2^-32); None picks by fpr ('fuse8' for fpr >= 0.0041, 'fuse16'\n"
"down to 1.6e-5, 'fuse32' down to 2.4e-10); fpr 0 with a\n"
"kind: the kind's own rate. It answers contains, contains_many and info,\n"
"and saves and maps like any filter; add, remove and clear raise\n"
"StaticError: build it again when the set changes. memory= caps the\n"
"build (bytes, at least 1 MiB): larger sets are built in parts, their key\n"
"hashes (8 bytes a key) kept in unlinked files under tmpdir= ($TMPDIR or\n"
"/tmp). normalize= ('url', 'email') spells the keys first and records it.");

static PyObject *filter_build(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "fpr", "kind", "hash", "seed", "normalize", "memory",
                             "tmpdir", NULL};
    PyObject *keys, *seed = Py_None, *normalize = Py_None, *memory = Py_None, *dir = Py_None;
    PyObject *tmpdir = NULL;
    double fpr = 0.0;
    const char *kind = NULL, *hash = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|dzzOOOO:build", kwlist, &keys, &fpr, &kind,
                                     &hash, &seed, &normalize, &memory, &dir))
        return NULL;
    if (dir != Py_None && !PyUnicode_FSConverter(dir, &tmpdir))
        return NULL;
    bk_options_t o = {0};
    bk_key_form_t form;
    bool given;
    uint64_t cap = 0;
    PyObject *r = NULL, *it = NULL;
    pybk_chunk_t *c = NULL;
    bk_builder_t *b = NULL;
    if (parse_options(&o, kind, hash, seed, NULL) < 0 || parse_normalize(normalize, &form, &given) < 0 ||
        (memory != Py_None && pybk_u64(memory, "memory", &cap) < 0))
        goto out;
    bk_status_t st = bk_builder_create(&b, fpr, &o);
    if (st == BK_OK)
        st = bk_builder_set_memory(b, cap, tmpdir ? PyBytes_AS_STRING(tmpdir) : NULL);
    if (st != BK_OK) {
        pybk_raise(st,
                   st == BK_EINVAL ? "a static filter is kind 'fuse8', 'fuse16' or 'fuse32', at "
                                     "fpr >= 0.0041, 1.6e-5 or 2.4e-10 (or 0: the kind's own), "
                                     "the default or 'xxh3' hash, memory 0 or >= 1 MiB"
                                   : NULL,
                   NULL);
        goto out;
    }
    it = PyObject_GetIter(keys);
    c = it ? PyMem_Calloc(1, sizeof *c) : NULL;
    if (!c) {
        if (it)
            PyErr_NoMemory();
        goto out;
    }
    Py_ssize_t got;
    while ((got = pybk_chunk_fill(c, it, form)) > 0) {
        Py_BEGIN_ALLOW_THREADS
        st = bk_builder_add_batch(b, c->keys, c->n);
        Py_END_ALLOW_THREADS
        if (st != BK_OK) {
            pybk_raise(st, NULL, NULL);
            got = -1;
            break;
        }
    }
    pybk_chunk_release(c);
    if (got < 0)
        goto out;
    bk_filter_t *f = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = bk_builder_finish(b, &f);
    Py_END_ALLOW_THREADS
    if (st != BK_OK) {
        pybk_raise(st, NULL, NULL);
        goto out;
    }
    (void)bk_filter_set_key_form(f, form);
    r = pybk_filter_wrap(type, f);
out:
    bk_builder_free(b);
    PyMem_Free(c);
    Py_XDECREF(it);
    Py_XDECREF(tmpdir);
    return r;
}

/* Pickles as bloomkit._bloomkit._restore(serialized bytes). */
static PyObject *filter_reduce(filter_object *self, PyObject *unused)
{
    (void)unused;
    PyObject *data = filter_to_bytes(self, NULL);
    if (!data)
        return NULL;
    PyObject *mod = PyImport_ImportModule("bloomkit._bloomkit");
    PyObject *restore = mod ? PyObject_GetAttrString(mod, "_restore") : NULL;
    Py_XDECREF(mod);
    if (!restore) {
        Py_DECREF(data);
        return NULL;
    }
    return Py_BuildValue("(N(N))", restore, data);
}

/* ---- type --------------------------------------------------------------- */

static PyMethodDef filter_methods[] = {
    {"add", (PyCFunction)filter_add, METH_O, add_doc},
    {"contains", (PyCFunction)filter_contains, METH_O, contains_doc},
    {"count", (PyCFunction)filter_count, METH_O, count_doc},
    {"remove", (PyCFunction)filter_remove, METH_O, remove_doc},
    {"add_many", (PyCFunction)filter_add_many, METH_O, add_many_doc},
    {"contains_many", (PyCFunction)filter_contains_many, METH_O, contains_many_doc},
    {"clear", (PyCFunction)filter_clear, METH_NOARGS, clear_doc},
    {"advance", (PyCFunction)filter_advance, METH_O, advance_doc},
    {"union", (PyCFunction)filter_union, METH_O, union_doc},
    {"update", (PyCFunction)filter_update, METH_VARARGS, update_doc},
    {"approx_len", (PyCFunction)filter_approx_len, METH_NOARGS, approx_len_doc},
    {"copy", (PyCFunction)filter_copy, METH_NOARGS, copy_doc},
    {"__copy__", (PyCFunction)filter_copy, METH_NOARGS, copy_doc},
    {"__deepcopy__", (PyCFunction)filter_deepcopy, METH_O, copy_doc},
    {"info", (PyCFunction)filter_info, METH_NOARGS, info_doc},
    {"save", (PyCFunction)filter_save, METH_VARARGS, save_doc},
    {"checkpoint", (PyCFunction)filter_checkpoint, METH_VARARGS, checkpoint_doc},
    {"sync", (PyCFunction)filter_sync, METH_NOARGS, sync_doc},
    {"verify", (PyCFunction)filter_verify, METH_NOARGS, verify_doc},
    {"to_bytes", (PyCFunction)filter_to_bytes, METH_NOARGS, to_bytes_doc},
    {"from_bytes", (PyCFunction)filter_from_bytes, METH_O | METH_CLASS, from_bytes_doc},
    {"load", (PyCFunction)(void (*)(void))filter_load, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     load_doc},
    {"build", (PyCFunction)(void (*)(void))filter_build, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     build_doc},
    {"open", (PyCFunction)(void (*)(void))filter_open, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     open_doc},
    {"close", (PyCFunction)filter_close, METH_NOARGS, close_doc},
    {"__enter__", (PyCFunction)filter_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)filter_exit, METH_VARARGS, NULL},
    {"__reduce__", (PyCFunction)filter_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef filter_getset[] = {
    {"kind", (getter)filter_get_kind, NULL, "The kind's name: 'blocked', 'classic', ...", NULL},
    {"key_form", (getter)filter_get_key_form, NULL,
     "How the keys were normalized before they were added, as the file "
     "records it: 'url' or 'email' (the bloomkit tool's --normalize), "
     "'as-given', or 'unrecorded'. Read-only; the module never applies it.",
     NULL},
    {"closed", (getter)filter_get_closed, NULL, "True after close().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods filter_as_sequence = {
    .sq_length = (lenfunc)filter_len,
    .sq_contains = (objobjproc)filter_sq_contains,
};

static PyNumberMethods filter_as_number = {
    .nb_or = filter_or,
    .nb_inplace_or = filter_ior,
};

/* f == g: the same filter, answer for answer: the same shape (kind, size,
 * k, hash, seed, capacity, rate) and the same bits and counts, compared
 * as their serialized bytes a megabyte at a time. Filters are mutable, so
 * they stay unhashable, as sets are. */
static int same_bytes(const bk_filter_t *a, const bk_filter_t *b)
{
    uint64_t n = bk_filter_serialized_size(a);
    if (n != bk_filter_serialized_size(b))
        return 0;
    enum { PIECE = 1 << 20 };
    uint8_t *x = PyMem_Malloc(PIECE), *y = PyMem_Malloc(PIECE);
    int same = x && y ? 1 : -1;
    for (uint64_t off = 0; same == 1 && off < n; off += PIECE) {
        size_t m = (size_t)(n - off < PIECE ? n - off : PIECE);
        if (bk_filter_serialize_range(a, off, x, m) != BK_OK ||
            bk_filter_serialize_range(b, off, y, m) != BK_OK)
            same = -1;
        else if (memcmp(x, y, m) != 0)
            same = 0;
    }
    PyMem_Free(x);
    PyMem_Free(y);
    return same;
}

static PyObject *filter_richcompare(PyObject *a, PyObject *b, int op)
{
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &pybk_filter_type))
        Py_RETURN_NOTIMPLEMENTED;
    filter_object *x = (filter_object *)a, *y = (filter_object *)b;
    if (!live(x) || !live(y))
        return NULL;
    int same = 1;
    if (x != y) {
        bk_filter_shape_t sx, sy;
        bk_filter_shape(x->f, &sx);
        bk_filter_shape(y->f, &sy);
        if (sx.kind != sy.kind || sx.hash != sy.hash || sx.seed != sy.seed ||
            sx.bytes != sy.bytes || sx.k != sy.k || sx.capacity != sy.capacity ||
            sx.fpr_target != sy.fpr_target || sx.items != sy.items || sx.filters != sy.filters) {
            same = 0;
        } else {
            /* both locks, always in the same order: no two threads comparing
             * the same pair the other way round can deadlock */
            filter_object *first = x < y ? x : y, *second = x < y ? y : x;
            pybk_lock(&first->lock);
            pybk_lock(&second->lock);
            same = same_bytes(x->f, y->f);
            pybk_unlock(&second->lock);
            pybk_unlock(&first->lock);
        }
    }
    if (same < 0)
        return PyErr_NoMemory();
    return PyBool_FromLong(op == Py_EQ ? same : !same);
}

PyTypeObject pybk_filter_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit.Filter",
    .tp_basicsize = sizeof(filter_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = filter_doc,
    .tp_new = filter_new,
    .tp_init = (initproc)filter_init,
    .tp_dealloc = (destructor)filter_dealloc,
    .tp_repr = (reprfunc)filter_repr,
    .tp_methods = filter_methods,
    .tp_getset = filter_getset,
    .tp_as_sequence = &filter_as_sequence,
    .tp_as_number = &filter_as_number,
    .tp_richcompare = filter_richcompare,
};
