/*
 * bloomkit._bloomkit: the module object. Registers Filter, Bitmap and the
 * exception classes, and offers the few free functions the Python side
 * needs: sizing (plan), unpickling (_restore), reading a file's kind, and
 * the routing hash of the Redis sharded filter.
 */
#include "pybk.h"

/* The routing hash's seed, BK_REDIS_ROUTE_SEED, is the one every client of
 * the sharded filter uses (the tool through libbloomkit-redis too): any
 * fixed value works, as long as it differs from the filters' own seeds
 * (random per filter), so that the items a shard receives are not
 * correlated with the bits they set there. Only the header is used: the
 * extension does not link the client library. */
#include <bloomkit/redis.h>

PyDoc_STRVAR(restore_doc, "_restore(data) -> Filter | Bitmap\n--\n\nUnpickling helper.");

static PyObject *module_restore(PyObject *mod, PyObject *arg)
{
    (void)mod;
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    bk_kind_t kind;
    bk_status_t st = bk_peek_kind(buf.buf, (size_t)buf.len, &kind);
    PyBuffer_Release(&buf);
    if (st != BK_OK)
        return pybk_raise(st, "not a bloomkit serialization", NULL);
    /* a kind with no filter capability is a bitmap */
    PyTypeObject *type = bk_kind_caps(kind) == 0 ? &pybk_bitmap_type : &pybk_filter_type;
    return PyObject_CallMethod((PyObject *)type, "from_bytes", "O", arg);
}

PyDoc_STRVAR(peek_kind_doc,
"peek_kind(header) -> str\n--\n\n"
"The kind stored in the first bytes of a bloomkit file or serialization\n"
"('blocked', ..., 'bitmap', 'bitmap2') without loading it. CorruptError\n"
"if the bytes are not a bloomkit header.");

static PyObject *module_peek_kind(PyObject *mod, PyObject *arg)
{
    (void)mod;
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    bk_kind_t kind;
    bk_status_t st = bk_peek_kind(buf.buf, (size_t)buf.len, &kind);
    PyBuffer_Release(&buf);
    if (st != BK_OK)
        return pybk_raise(st, "not a bloomkit header", NULL);
    const char *name = bk_kind_name(kind);
    return PyUnicode_FromString(name ? name : "?");
}

PyDoc_STRVAR(plan_doc,
"plan(capacity, fpr, kind=None, window_span=0, generations=0) -> dict\n--\n\n"
"How the library sizes a filter (kind=None: the kind Filter() would pick\n"
"for this fpr): kind, capacity, fpr, bits, cells, k,\n"
"bytes, bits_per_key, expected_fpr. kind=\"window\" sizes a window filter as\n"
"Filter(kind=\"window\", window_span=..., generations=...) makes it: a count\n"
"window of the last `capacity` adds (window_span 0) or a time window of\n"
"window_span units with at most `capacity` adds within any window_span,\n"
"however they arrive; its dict adds window_span, generations,\n"
"slots, slot_capacity, slot_span, forget_after (in windows) and\n"
"lines_per_lookup, and expected_fpr is at its fullest moment.\n"
"InvalidArgumentError for capacity 0, fpr outside (0, 1), generations\n"
"outside 2..16, or window_span/generations for a kind that is not a window.");

static PyObject *plan_window(uint64_t capacity, double fpr, uint64_t span, unsigned gens)
{
    bk_window_plan_t w;
    bk_status_t st = bk_plan_window(capacity, fpr, span, gens, &w);
    if (st != BK_OK)
        return pybk_raise(st, NULL, NULL);
    return Py_BuildValue(
        "{s:s,s:K,s:d,s:K,s:I,s:I,s:K,s:K,s:I,s:K,s:d,s:d,s:d,s:I}", "kind", "window",
        "capacity", (unsigned long long)w.capacity, "fpr", w.fpr_target, "window_span",
        (unsigned long long)w.span, "generations", (unsigned)w.generations, "slots",
        (unsigned)w.slots, "slot_capacity", (unsigned long long)w.slot_capacity, "slot_span",
        (unsigned long long)w.slot_span, "k", (unsigned)w.k, "bytes",
        (unsigned long long)w.bytes, "bits_per_key", w.bits_per_key, "expected_fpr",
        w.expected_fpr, "forget_after", w.forget_after, "lines_per_lookup",
        (unsigned)w.lines_per_lookup);
}

static PyObject *module_plan(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"capacity", "fpr", "kind", "window_span", "generations", NULL};
    PyObject *cap_obj, *span_obj = NULL;
    double fpr;
    const char *kind_name = NULL;
    unsigned gens = 0;
    uint64_t capacity, span = 0;
    bk_kind_t kind = 0; /* the library's default, by the rate */
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|zOI:plan", kwlist, &cap_obj, &fpr, &kind_name,
                                     &span_obj, &gens) ||
        pybk_u64(cap_obj, "capacity", &capacity) < 0 ||
        (span_obj && pybk_u64(span_obj, "window_span", &span) < 0))
        return NULL;
    if ((kind_name && pybk_filter_kind(kind_name, &kind) < 0) ||
        pybk_check_size(capacity, fpr) < 0)
        return NULL;
    if (gens != 0 && (gens < 2 || gens > 16)) {
        PyErr_Format(pybk_error_class(BK_EINVAL), "bad generations %u (want 2..16)", gens);
        return NULL;
    }
    if (bk_kind_caps(kind) & BK_CAP_WINDOW)
        return plan_window(capacity, fpr, span, gens);
    if (span || gens) {
        PyErr_SetString(pybk_error_class(BK_EINVAL),
                        "window_span and generations are for kind=\"window\"");
        return NULL;
    }
    if (bk_kind_caps(kind) & BK_CAP_STATIC) {
        /* a static filter of `capacity` keys: its fingerprints and rate */
        bk_static_plan_t sp;
        bk_status_t st = bk_static_plan(kind, capacity, fpr, &sp);
        if (st != BK_OK)
            return pybk_raise(st, "a static kind's rate is its fingerprints' (fuse8 2^-8, "
                                  "fuse16 2^-16, fuse32 2^-32): fpr must be at least that",
                              NULL);
        return Py_BuildValue("{s:s,s:K,s:d,s:K,s:K,s:I,s:K,s:d,s:d}", "kind",
                             bk_kind_name(sp.kind), "capacity", (unsigned long long)capacity,
                             "fpr", fpr, "bits", (unsigned long long)sp.bytes * 8, "cells",
                             (unsigned long long)sp.cells, "k", 3u, "bytes",
                             (unsigned long long)sp.bytes, "bits_per_key", sp.bits_per_key,
                             "expected_fpr", sp.expected_fpr);
    }
    bk_plan_t p;
    bk_status_t st = bk_plan(kind, capacity, fpr, &p);
    if (st != BK_OK)
        return pybk_raise(st, NULL, NULL);
    return Py_BuildValue("{s:s,s:K,s:d,s:K,s:K,s:I,s:K,s:d,s:d}", "kind", bk_kind_name(p.kind),
                         "capacity", (unsigned long long)p.capacity, "fpr", p.fpr_target,
                         "bits", (unsigned long long)p.bits, "cells", (unsigned long long)p.cells,
                         "k", (unsigned)p.k, "bytes", (unsigned long long)p.bytes,
                         "bits_per_key", p.bits_per_key, "expected_fpr", p.expected_fpr);
}

/* A list of fn(key, ctx) for each key of an iterable of bytes/str, the key
 * in `form` first (BK_KEY_FORM_AS_GIVEN: as it is); NULL with an error set. */
static PyObject *map_keys(PyObject *iterable, bk_key_form_t form,
                          PyObject *(*fn)(const bk_key_t *key, void *ctx), void *ctx)
{
    PyObject *it = PyObject_GetIter(iterable);
    PyObject *out = it ? PyList_New(0) : NULL;
    while (out) {
        PyObject *item = PyIter_Next(it), *hold = NULL, *value = NULL;
        if (!item) {
            if (PyErr_Occurred())
                Py_CLEAR(out);
            break;
        }
        bk_key_t key;
        if (pybk_key_in_form(item, form, &key, &hold) == 0)
            value = fn(&key, ctx);
        if (!value || PyList_Append(out, value) < 0)
            Py_CLEAR(out);
        Py_XDECREF(value);
        Py_XDECREF(hold);
        Py_DECREF(item);
    }
    Py_XDECREF(it);
    return out;
}

static PyObject *route(const bk_key_t *key, void *ctx)
{
    uint64_t shards = *(const uint64_t *)ctx;
    return PyLong_FromUnsignedLongLong(
        bk_hash_raw(BK_HASH_XXH3, BK_REDIS_ROUTE_SEED, key->ptr, key->len) % shards);
}

PyDoc_STRVAR(shard_of_doc,
"shard_of(keys, shards) -> list[int]\n--\n\n"
"The shard (0 <= i < shards) of each key of an iterable of bytes/str:\n"
"XXH3 of the key with a fixed routing seed, modulo shards. Stable across\n"
"versions and machines, and independent of any filter's own hashing.");

static PyObject *module_shard_of(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *iterable;
    unsigned long long shards;
    if (!PyArg_ParseTuple(args, "OK:shard_of", &iterable, &shards))
        return NULL;
    if (shards == 0 || shards > 1000000) {
        PyErr_SetString(PyExc_ValueError, "shards must be in 1..1000000");
        return NULL;
    }
    uint64_t n = shards;
    return map_keys(iterable, BK_KEY_FORM_AS_GIVEN, route, &n);
}

PyDoc_STRVAR(normalize_doc,
"normalize(keys, form) -> list[bytes]\n--\n\n"
"Each key of an iterable of bytes/str in the library's spelling for form\n"
"'url' or 'email' (bk_key_normalize: what the tool's --normalize and\n"
"filters made with normalize= hash), so that clients of a filter that does\n"
"not record a form (a Redis sharded filter) spell keys alike.");

static PyObject *key_bytes(const bk_key_t *key, void *ctx)
{
    (void)ctx;
    return PyBytes_FromStringAndSize(key->ptr, (Py_ssize_t)key->len);
}

static PyObject *module_normalize(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *iterable;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:normalize", &iterable, &name))
        return NULL;
    bk_key_form_t form = BK_KEY_FORM_UNRECORDED;
    if (strcmp(name, "url") == 0)
        form = BK_KEY_FORM_URL;
    else if (strcmp(name, "email") == 0)
        form = BK_KEY_FORM_EMAIL;
    if (form == BK_KEY_FORM_UNRECORDED) {
        PyErr_Format(pybk_error_class(BK_EINVAL), "bad form '%s' (want 'url' or 'email')", name);
        return NULL;
    }
    return map_keys(iterable, form, key_bytes, NULL);
}

static PyMethodDef module_methods[] = {
    {"normalize", module_normalize, METH_VARARGS, normalize_doc},
    {"_restore", module_restore, METH_O, restore_doc},
    {"peek_kind", module_peek_kind, METH_O, peek_kind_doc},
    {"plan", (PyCFunction)(void (*)(void))module_plan, METH_VARARGS | METH_KEYWORDS, plan_doc},
    {"shard_of", module_shard_of, METH_VARARGS, shard_of_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bloomkit._bloomkit",
    .m_doc = "The C core of the bloomkit package; use `import bloomkit`.",
    .m_size = -1,
    .m_methods = module_methods,
};

static int add_type(PyObject *m, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

/* KINDS: the names of every kind a program makes filters of, from the
 * library's registry (bk_filter_kinds), so a new kind shows by itself. */
static PyObject *kind_names(void)
{
    bk_kind_t kinds[64];
    size_t n = bk_filter_kinds(kinds, sizeof kinds / sizeof kinds[0]);
    if (n > sizeof kinds / sizeof kinds[0])
        n = sizeof kinds / sizeof kinds[0];
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; t && i < n; i++) {
        PyObject *s = PyUnicode_FromString(bk_kind_name(kinds[i]));
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, s);
    }
    return t;
}

PyMODINIT_FUNC PyInit__bloomkit(void)
{
    pybk_fork_watch();
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (PyType_Ready(&pybk_bitmap_iter_type) < 0 || add_type(m, &pybk_filter_type, "Filter") < 0 ||
        add_type(m, &pybk_bitmap_type, "Bitmap") < 0 || pybk_errors_init(m) < 0 ||
        PyModule_AddStringConstant(m, "LIBRARY_VERSION", BK_VERSION_STRING) < 0 ||
        PyModule_AddIntConstant(m, "CHUNK", PYBK_CHUNK) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *kinds = kind_names();
    if (!kinds || PyModule_AddObject(m, "KINDS", kinds) < 0) {
        Py_XDECREF(kinds);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
