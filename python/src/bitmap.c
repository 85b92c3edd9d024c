/*
 * bloomkit.Bitmap: a dense 1-bit map over the integers [0, size), exact
 * (no false positives), for distinct counts and "seen" sets over ids.
 * Like Filter, every library call runs under the object's lock and big
 * batches run with the GIL released.
 */
#include "pybk.h"

typedef struct {
    PyObject_HEAD
    bk_bitmap_t *b;
    pybk_objlock_t lock;
} bitmap_object;

static PyObject *bitmap_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    bitmap_object *self = (bitmap_object *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (pybk_objlock_init(&self->lock) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

PyObject *pybk_bitmap_wrap(PyTypeObject *type, bk_bitmap_t *b)
{
    bitmap_object *self = (bitmap_object *)bitmap_new(type, NULL, NULL);
    if (!self) {
        bk_bitmap_free(b);
        return NULL;
    }
    self->b = b;
    return (PyObject *)self;
}

static void bitmap_dealloc(bitmap_object *self)
{
    bk_bitmap_free(self->b);
    pybk_objlock_free(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The map, or NULL with ValueError if __init__ never ran. */
static bk_bitmap_t *ready(bitmap_object *self)
{
    if (!self->b)
        PyErr_SetString(PyExc_ValueError, "bloomkit.Bitmap was not initialized");
    return self->b;
}

PyDoc_STRVAR(bitmap_doc,
"Bitmap(size)\n--\n\n"
"An exact set of the integers 0 <= v < size, one bit each (size up to\n"
"2**48). Adding a value outside the range raises IndexError; `v in map`\n"
"is simply False for it.");

static int bitmap_init(bitmap_object *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"size", NULL};
    PyObject *size_obj;
    uint64_t size;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:Bitmap", kwlist, &size_obj) ||
        pybk_u64(size_obj, "size", &size) < 0)
        return -1;
    bk_bitmap_t *b = NULL;
    bk_status_t st = bk_bitmap_create(&b, size);
    if (st != BK_OK) {
        pybk_raise(st, NULL, NULL);
        return -1;
    }
    pybk_lock(&self->lock);
    bk_bitmap_t *old = self->b;
    self->b = b;
    pybk_unlock(&self->lock);
    bk_bitmap_free(old);
    return 0;
}

/* Reads a value and checks it is inside the map: IndexError otherwise. */
static int value_in_range(bitmap_object *self, PyObject *obj, uint64_t *v)
{
    if (pybk_u64(obj, "a bitmap value", v) < 0)
        return -1;
    if (*v >= bk_bitmap_size(self->b)) {
        PyErr_Format(PyExc_IndexError, "value %llu is outside the bitmap [0, %llu)",
                     (unsigned long long)*v, (unsigned long long)bk_bitmap_size(self->b));
        return -1;
    }
    return 0;
}

/* A bitmap read from a paged file that met a damaged page (whose values
 * then read as set, never unset): CorruptError with the offset, and -1;
 * else 0. Asked after every call that reads bits, before an answer is
 * handed out. */
static int damaged(const bk_bitmap_t *b)
{
    const char *why = NULL;
    if (bk_bitmap_damage(b, &why) == BK_OK)
        return 0;
    pybk_raise(BK_ECORRUPT, why, NULL);
    return -1;
}

PyDoc_STRVAR(badd_doc, "add(v) -> bool\n--\n\nSets v; True if it was not set before.");

static PyObject *bitmap_add(bitmap_object *self, PyObject *obj)
{
    uint64_t v;
    if (!ready(self) || value_in_range(self, obj, &v) < 0)
        return NULL;
    pybk_lock(&self->lock);
    bool was_new = bk_bitmap_set(self->b, v);
    pybk_unlock(&self->lock);
    return damaged(self->b) < 0 ? NULL : PyBool_FromLong(was_new);
}

/* 1 / 0, or -1 with an exception: non-integers are a TypeError, integers
 * outside the map are simply absent. */
static int bitmap_has(bitmap_object *self, PyObject *obj)
{
    if (!ready(self))
        return -1;
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "bitmap values are ints, not %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    uint64_t v;
    if (pybk_u64(obj, "a bitmap value", &v) < 0) {
        PyErr_Clear(); /* negative or huge: not in any bitmap */
        return 0;
    }
    pybk_lock(&self->lock);
    int found = bk_bitmap_test(self->b, v);
    pybk_unlock(&self->lock);
    return damaged(self->b) < 0 ? -1 : found;
}

PyDoc_STRVAR(bcontains_doc, "contains(v) -> bool\n--\n\nTrue if v is set (same as `v in map`).");

static PyObject *bitmap_contains(bitmap_object *self, PyObject *obj)
{
    int found = bitmap_has(self, obj);
    return found < 0 ? NULL : PyBool_FromLong(found);
}

/* Pulls up to PYBK_CHUNK values into vals; for adds they must be in range. */
static Py_ssize_t fill_values(bitmap_object *self, PyObject *it, uint64_t *vals, bool for_add)
{
    Py_ssize_t n = 0;
    while (n < PYBK_CHUNK) {
        PyObject *item = PyIter_Next(it);
        if (!item)
            return PyErr_Occurred() ? -1 : n;
        int rc;
        if (for_add) {
            rc = value_in_range(self, item, &vals[n]);
        } else {
            rc = pybk_u64(item, "a bitmap value", &vals[n]);
            if (rc < 0 && PyLong_Check(item)) { /* out of any range: absent */
                PyErr_Clear();
                vals[n] = UINT64_MAX;
                rc = 0;
            }
        }
        Py_DECREF(item);
        if (rc < 0)
            return -1;
        n++;
    }
    return n;
}

static uint64_t set_values(bk_bitmap_t *b, const uint64_t *vals, Py_ssize_t n)
{
    uint64_t added = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        added += bk_bitmap_set(b, vals[i]);
    return added;
}

static void test_values(const bk_bitmap_t *b, const uint64_t *vals, Py_ssize_t n, bool *out)
{
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = bk_bitmap_test(b, vals[i]); /* false for v >= size */
}

PyDoc_STRVAR(badd_many_doc,
"add_many(values) -> int\n--\n\n"
"Sets every value of an iterable of ints; returns how many were new.\n"
"A value outside the map raises IndexError; values of earlier chunks\n"
"(4096 each) stay set.");

static PyObject *bitmap_add_many(bitmap_object *self, PyObject *iterable)
{
    if (!ready(self))
        return NULL;
    PyObject *it = PyObject_GetIter(iterable);
    uint64_t *vals = it ? PyMem_Malloc(PYBK_CHUNK * sizeof *vals) : NULL;
    if (!vals) {
        Py_XDECREF(it);
        return it ? PyErr_NoMemory() : NULL;
    }
    uint64_t added = 0;
    Py_ssize_t n;
    while ((n = fill_values(self, it, vals, true)) > 0) {
        pybk_lock(&self->lock);
        Py_BEGIN_ALLOW_THREADS
        added += set_values(self->b, vals, n);
        Py_END_ALLOW_THREADS
        pybk_unlock(&self->lock);
    }
    PyMem_Free(vals);
    Py_DECREF(it);
    if (n < 0 || damaged(self->b) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(added);
}

PyDoc_STRVAR(bcontains_many_doc,
"contains_many(values) -> list[bool]\n--\n\nOne answer per value, in order.");

static PyObject *bitmap_contains_many(bitmap_object *self, PyObject *iterable)
{
    if (!ready(self))
        return NULL;
    PyObject *it = PyObject_GetIter(iterable);
    PyObject *out = it ? PyList_New(0) : NULL;
    uint64_t *vals = out ? PyMem_Malloc(PYBK_CHUNK * (sizeof *vals + sizeof(bool))) : NULL;
    if (!vals) {
        if (out)
            PyErr_NoMemory();
        Py_XDECREF(out);
        Py_XDECREF(it);
        return NULL;
    }
    bool *flags = (bool *)(vals + PYBK_CHUNK);
    Py_ssize_t n;
    while ((n = fill_values(self, it, vals, false)) > 0) {
        pybk_lock(&self->lock);
        test_values(self->b, vals, n, flags);
        pybk_unlock(&self->lock);
        for (Py_ssize_t i = 0; i < n && out; i++)
            if (PyList_Append(out, flags[i] ? Py_True : Py_False) < 0)
                Py_CLEAR(out);
        if (!out)
            break;
    }
    PyMem_Free(vals);
    Py_DECREF(it);
    if (n < 0 || (out && damaged(self->b) < 0))
        Py_CLEAR(out);
    return out;
}

static Py_ssize_t bitmap_len(bitmap_object *self)
{
    if (!ready(self))
        return -1;
    pybk_lock(&self->lock);
    uint64_t n = bk_bitmap_count(self->b);
    pybk_unlock(&self->lock);
    return damaged(self->b) < 0 ? -1 : (Py_ssize_t)n; /* at most 2^48 */
}

static int bitmap_sq_contains(bitmap_object *self, PyObject *obj)
{
    return bitmap_has(self, obj);
}

static PyObject *bitmap_get_size(bitmap_object *self, void *unused)
{
    (void)unused;
    return ready(self) ? PyLong_FromUnsignedLongLong(bk_bitmap_size(self->b)) : NULL;
}

PyDoc_STRVAR(bclear_doc, "clear()\n--\n\nUnsets every value.");

static PyObject *bitmap_clear(bitmap_object *self, PyObject *unused)
{
    (void)unused;
    if (!ready(self))
        return NULL;
    pybk_lock(&self->lock);
    bk_bitmap_clear(self->b);
    pybk_unlock(&self->lock);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(bverify_doc,
"verify()\n--\n\n"
"A bitmap loaded from a large (paged) file: reads and checks every page\n"
"not checked yet (the whole file) and raises CorruptError with the offset\n"
"of the first damaged one. Other bitmaps always pass.");

static PyObject *bitmap_verify(bitmap_object *self, PyObject *unused)
{
    (void)unused;
    if (!ready(self))
        return NULL;
    const char *why = NULL;
    bk_status_t st;
    pybk_lock(&self->lock);
    Py_BEGIN_ALLOW_THREADS
    st = bk_bitmap_verify(self->b, &why);
    Py_END_ALLOW_THREADS
    pybk_unlock(&self->lock);
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, why, NULL);
}

/* ---- bytes, files, copies ----------------------------------------------- */

PyDoc_STRVAR(bto_bytes_doc, "to_bytes() -> bytes\n--\n\nThe portable serialized form.");

static PyObject *bitmap_to_bytes(bitmap_object *self, PyObject *unused)
{
    (void)unused;
    if (!ready(self))
        return NULL;
    pybk_lock(&self->lock);
    uint64_t size = bk_bitmap_serialized_size(self->b);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    bk_status_t st = out ? bk_bitmap_serialize(self->b, PyBytes_AS_STRING(out), size, NULL) : BK_OK;
    pybk_unlock(&self->lock);
    if (out && st != BK_OK) {
        Py_CLEAR(out);
        pybk_raise(st, NULL, NULL);
    }
    return out;
}

PyDoc_STRVAR(bfrom_bytes_doc,
"from_bytes(data) -> Bitmap\n--\n\nValidates and loads a serialized bitmap (CorruptError on bad input).");

static PyObject *bitmap_from_bytes(PyTypeObject *type, PyObject *arg)
{
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    bk_bitmap_t *b = NULL;
    const char *why = NULL;
    bk_status_t st = bk_bitmap_deserialize(&b, buf.buf, (size_t)buf.len, &why);
    PyBuffer_Release(&buf);
    return st == BK_OK ? pybk_bitmap_wrap(type, b) : pybk_raise(st, why, NULL);
}

PyDoc_STRVAR(bcopy_doc, "copy() -> Bitmap\n--\n\nA deep copy.");

static PyObject *bitmap_copy(bitmap_object *self, PyObject *unused)
{
    PyObject *data = bitmap_to_bytes(self, unused);
    if (!data)
        return NULL;
    PyObject *copy = bitmap_from_bytes(Py_TYPE(self), data);
    Py_DECREF(data);
    return copy;
}

static PyObject *bitmap_deepcopy(bitmap_object *self, PyObject *memo)
{
    (void)memo;
    return bitmap_copy(self, NULL);
}

PyDoc_STRVAR(bsave_doc,
"save(path)\n--\n\n"
"Writes the bitmap atomically (the format the bloomkit tool reads). A\n"
"bitmap loaded from a large file and saved to that file writes only the\n"
"pages that changed, in place through a journal (a process killed\n"
"meanwhile leaves the old file or the new one). CorruptError, and nothing\n"
"written, for a bitmap that met a damaged page.");

static PyObject *bitmap_save(bitmap_object *self, PyObject *args)
{
    PyObject *path;
    if (!ready(self) || !PyArg_ParseTuple(args, "O&:save", PyUnicode_FSConverter, &path))
        return NULL;
    bk_status_t st;
    pybk_lock(&self->lock);
    Py_BEGIN_ALLOW_THREADS
    st = bk_bitmap_save(self->b, PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    pybk_unlock(&self->lock);
    PyObject *text = st == BK_OK ? NULL : PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
    Py_DECREF(path);
    if (st == BK_OK)
        Py_RETURN_NONE;
    pybk_raise(st, NULL, text);
    Py_XDECREF(text);
    return NULL;
}

PyDoc_STRVAR(bload_doc,
"load(path) -> Bitmap\n--\n\n"
"Reads and validates a bitmap file (CorruptError with the reason if\n"
"damaged). A large file (1 MiB or more, saved paged) is read a 4 KiB page\n"
"at a time as values touch it, each page checked against its checksum\n"
"first: loading a 2 GB bitmap takes milliseconds. A damaged page raises\n"
"CorruptError when a value on it is read or set; verify() checks them all.");

static PyObject *bitmap_load(PyTypeObject *type, PyObject *args)
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:load", PyUnicode_FSConverter, &path))
        return NULL;
    bk_bitmap_t *b = NULL;
    const char *why = NULL;
    bk_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = bk_bitmap_load(&b, PyBytes_AS_STRING(path), &why);
    Py_END_ALLOW_THREADS
    PyObject *text = st == BK_OK ? NULL : PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
    Py_DECREF(path);
    if (st == BK_OK)
        return pybk_bitmap_wrap(type, b);
    pybk_raise(st, why, text);
    Py_XDECREF(text);
    return NULL;
}

static PyObject *bitmap_reduce(bitmap_object *self, PyObject *unused)
{
    PyObject *data = bitmap_to_bytes(self, unused);
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

/* ---- set algebra -------------------------------------------------------- */

typedef bk_status_t (*combine_fn)(bk_bitmap_t *, const bk_bitmap_t *);

/* dst op= src, src read from a copy so that the two locks are never held
 * together. */
static PyObject *combine(bitmap_object *dst, PyObject *src_obj, combine_fn fn)
{
    if (!PyObject_TypeCheck(src_obj, &pybk_bitmap_type)) {
        PyErr_Format(PyExc_TypeError, "expected a bloomkit.Bitmap, not %.100s",
                     Py_TYPE(src_obj)->tp_name);
        return NULL;
    }
    if (!ready(dst) || !ready((bitmap_object *)src_obj))
        return NULL;
    bitmap_object *src = (bitmap_object *)bitmap_copy((bitmap_object *)src_obj, NULL);
    if (!src)
        return NULL;
    pybk_lock(&dst->lock);
    bk_status_t st = fn(dst->b, src->b);
    pybk_unlock(&dst->lock);
    Py_DECREF(src);
    return st == BK_OK ? Py_NewRef(Py_None) : pybk_raise(st, NULL, NULL);
}

PyDoc_STRVAR(bunion_doc,
"union(other)\n--\n\nSets every value set in `other` (self |= other). IncompatibleError if sizes differ.");

static PyObject *bitmap_union(bitmap_object *self, PyObject *other)
{
    return combine(self, other, bk_bitmap_or);
}

PyDoc_STRVAR(bintersect_doc,
"intersection_update(other)\n--\n\nKeeps only values also set in `other` (self &= other).");

static PyObject *bitmap_intersection_update(bitmap_object *self, PyObject *other)
{
    return combine(self, other, bk_bitmap_and);
}

static PyObject *binary(PyObject *a, PyObject *b, combine_fn fn, bool in_place)
{
    if (!PyObject_TypeCheck(a, &pybk_bitmap_type) || !PyObject_TypeCheck(b, &pybk_bitmap_type))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *dst = in_place ? Py_NewRef(a) : bitmap_copy((bitmap_object *)a, NULL);
    if (!dst)
        return NULL;
    PyObject *r = combine((bitmap_object *)dst, b, fn);
    if (!r)
        Py_CLEAR(dst);
    Py_XDECREF(r);
    return dst;
}

static PyObject *bitmap_or(PyObject *a, PyObject *b) { return binary(a, b, bk_bitmap_or, false); }
static PyObject *bitmap_and(PyObject *a, PyObject *b) { return binary(a, b, bk_bitmap_and, false); }
static PyObject *bitmap_ior(PyObject *a, PyObject *b) { return binary(a, b, bk_bitmap_or, true); }
static PyObject *bitmap_iand(PyObject *a, PyObject *b) { return binary(a, b, bk_bitmap_and, true); }

PyDoc_STRVAR(binfo_doc,
"info() -> dict\n--\n\nkind ('bitmap'), size, count (values set), bytes (payload).");

static PyObject *bitmap_info(bitmap_object *self, PyObject *unused)
{
    (void)unused;
    if (!ready(self))
        return NULL;
    pybk_lock(&self->lock);
    uint64_t size = bk_bitmap_size(self->b), count = bk_bitmap_count(self->b);
    pybk_unlock(&self->lock);
    if (damaged(self->b) < 0)
        return NULL;
    return Py_BuildValue("{s:s,s:K,s:K,s:K}", "kind", "bitmap", "size", (unsigned long long)size,
                         "count", (unsigned long long)count, "bytes",
                         (unsigned long long)((size + 63) / 64 * 8));
}

static PyObject *bitmap_repr(bitmap_object *self)
{
    if (!self->b)
        return PyUnicode_FromString("<bloomkit.Bitmap uninitialized>");
    pybk_lock(&self->lock);
    uint64_t size = bk_bitmap_size(self->b), count = bk_bitmap_count(self->b);
    pybk_unlock(&self->lock);
    return PyUnicode_FromFormat("<bloomkit.Bitmap size=%llu count=%llu>", (unsigned long long)size,
                                (unsigned long long)count);
}

/* ---- iteration ---------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    bitmap_object *map;
    uint64_t next; /* first value not yet looked at */
} bitmap_iter_object;

static PyObject *bitmap_iter(bitmap_object *self)
{
    if (!ready(self))
        return NULL;
    bitmap_iter_object *it = PyObject_New(bitmap_iter_object, &pybk_bitmap_iter_type);
    if (!it)
        return NULL;
    it->map = (bitmap_object *)Py_NewRef(self);
    it->next = 0;
    return (PyObject *)it;
}

static PyObject *bitmap_iter_next(bitmap_iter_object *it)
{
    uint64_t v;
    pybk_lock(&it->map->lock);
    bool found = it->next < bk_bitmap_size(it->map->b) && bk_bitmap_next(it->map->b, it->next, &v);
    pybk_unlock(&it->map->lock);
    if (damaged(it->map->b) < 0)
        return NULL;
    if (!found)
        return NULL; /* StopIteration */
    it->next = v + 1;
    return PyLong_FromUnsignedLongLong(v);
}

static void bitmap_iter_dealloc(bitmap_iter_object *it)
{
    Py_DECREF(it->map);
    PyObject_Free(it);
}

PyTypeObject pybk_bitmap_iter_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit._BitmapIterator",
    .tp_basicsize = sizeof(bitmap_iter_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)bitmap_iter_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)bitmap_iter_next,
};

/* ---- type --------------------------------------------------------------- */

static PyMethodDef bitmap_methods[] = {
    {"add", (PyCFunction)bitmap_add, METH_O, badd_doc},
    {"contains", (PyCFunction)bitmap_contains, METH_O, bcontains_doc},
    {"add_many", (PyCFunction)bitmap_add_many, METH_O, badd_many_doc},
    {"contains_many", (PyCFunction)bitmap_contains_many, METH_O, bcontains_many_doc},
    {"clear", (PyCFunction)bitmap_clear, METH_NOARGS, bclear_doc},
    {"union", (PyCFunction)bitmap_union, METH_O, bunion_doc},
    {"intersection_update", (PyCFunction)bitmap_intersection_update, METH_O, bintersect_doc},
    {"copy", (PyCFunction)bitmap_copy, METH_NOARGS, bcopy_doc},
    {"__copy__", (PyCFunction)bitmap_copy, METH_NOARGS, bcopy_doc},
    {"__deepcopy__", (PyCFunction)bitmap_deepcopy, METH_O, bcopy_doc},
    {"info", (PyCFunction)bitmap_info, METH_NOARGS, binfo_doc},
    {"verify", (PyCFunction)bitmap_verify, METH_NOARGS, bverify_doc},
    {"save", (PyCFunction)bitmap_save, METH_VARARGS, bsave_doc},
    {"to_bytes", (PyCFunction)bitmap_to_bytes, METH_NOARGS, bto_bytes_doc},
    {"from_bytes", (PyCFunction)bitmap_from_bytes, METH_O | METH_CLASS, bfrom_bytes_doc},
    {"load", (PyCFunction)bitmap_load, METH_VARARGS | METH_CLASS, bload_doc},
    {"__reduce__", (PyCFunction)bitmap_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef bitmap_getset[] = {
    {"size", (getter)bitmap_get_size, NULL, "The map covers 0 <= v < size.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods bitmap_as_sequence = {
    .sq_length = (lenfunc)bitmap_len,
    .sq_contains = (objobjproc)bitmap_sq_contains,
};

static PyNumberMethods bitmap_as_number = {
    .nb_or = bitmap_or,
    .nb_and = bitmap_and,
    .nb_inplace_or = bitmap_ior,
    .nb_inplace_and = bitmap_iand,
};

PyTypeObject pybk_bitmap_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit.Bitmap",
    .tp_basicsize = sizeof(bitmap_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = bitmap_doc,
    .tp_new = bitmap_new,
    .tp_init = (initproc)bitmap_init,
    .tp_dealloc = (destructor)bitmap_dealloc,
    .tp_repr = (reprfunc)bitmap_repr,
    .tp_iter = (getiterfunc)bitmap_iter,
    .tp_methods = bitmap_methods,
    .tp_getset = bitmap_getset,
    .tp_as_sequence = &bitmap_as_sequence,
    .tp_as_number = &bitmap_as_number,
};
