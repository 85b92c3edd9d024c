/*
 * Python objects to keys. bytes are used in place, str as its UTF-8 form
 * (cached inside the str object, so no copy), other buffers (bytearray,
 * memoryview, array) are copied to bytes first: a mutable buffer could
 * change size while a batch runs without the GIL.
 */
#include "pybk.h"

int pybk_key(PyObject *obj, bk_key_t *key, PyObject **hold)
{
    if (PyBytes_Check(obj)) {
        key->ptr = PyBytes_AS_STRING(obj);
        key->len = (size_t)PyBytes_GET_SIZE(obj);
        Py_INCREF(obj);
        *hold = obj;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(obj, &len);
        if (!s)
            return -1;
        key->ptr = s;
        key->len = (size_t)len;
        Py_INCREF(obj);
        *hold = obj;
        return 0;
    }
    if (PyObject_CheckBuffer(obj)) {
        PyObject *copy = PyBytes_FromObject(obj);
        if (!copy)
            return -1;
        key->ptr = PyBytes_AS_STRING(copy);
        key->len = (size_t)PyBytes_GET_SIZE(copy);
        *hold = copy;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a key must be bytes, str or a bytes-like object, not %.100s",
                 Py_TYPE(obj)->tp_name);
    return -1;
}

int pybk_key_in_form(PyObject *obj, bk_key_form_t form, bk_key_t *key, PyObject **hold)
{
    if (pybk_key(obj, key, hold) < 0)
        return -1;
    if (form != BK_KEY_FORM_URL && form != BK_KEY_FORM_EMAIL)
        return 0;
    /* The library's spelling, the same as the tool's --normalize. */
    if (key->len > (size_t)PY_SSIZE_T_MAX - 1) {
        Py_CLEAR(*hold);
        PyErr_NoMemory();
        return -1;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)key->len + 1);
    if (!out) {
        Py_CLEAR(*hold);
        return -1;
    }
    size_t n = 0;
    bk_status_t st = bk_key_normalize(form, key->ptr, key->len, PyBytes_AS_STRING(out),
                                      key->len + 1, &n);
    Py_CLEAR(*hold);
    if (st != BK_OK || _PyBytes_Resize(&out, (Py_ssize_t)n) < 0) {
        Py_XDECREF(out);
        if (!PyErr_Occurred())
            pybk_raise(st, NULL, NULL);
        return -1;
    }
    key->ptr = PyBytes_AS_STRING(out);
    key->len = n;
    *hold = out;
    return 0;
}

void pybk_chunk_release(pybk_chunk_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        Py_CLEAR(c->hold[i]);
    c->n = 0;
}

Py_ssize_t pybk_chunk_fill(pybk_chunk_t *c, PyObject *it, bk_key_form_t form)
{
    pybk_chunk_release(c);
    while (c->n < PYBK_CHUNK) {
        PyObject *item = PyIter_Next(it);
        if (!item)
            return PyErr_Occurred() ? -1 : (Py_ssize_t)c->n;
        int rc = pybk_key_in_form(item, form, &c->keys[c->n], &c->hold[c->n]);
        Py_DECREF(item);
        if (rc < 0)
            return -1;
        c->n++;
    }
    return (Py_ssize_t)c->n;
}

int pybk_u64(PyObject *obj, const char *what, uint64_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        /* Only the error path pays for telling negative from too big. */
        PyObject *zero = PyLong_FromLong(0);
        int negative = zero ? PyObject_RichCompareBool(obj, zero, Py_LT) : -1;
        Py_XDECREF(zero);
        if (negative < 0)
            return -1;
        PyErr_Format(PyExc_ValueError, negative ? "%s must not be negative"
                                                : "%s does not fit in 64 bits", what);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}
