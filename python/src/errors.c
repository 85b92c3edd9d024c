/*
 * One Python exception class per library status, all under
 * bloomkit.Error, each also deriving from the built-in exception a Python
 * programmer would catch for that situation (ValueError for bad arguments
 * and damaged files, OSError for I/O, MemoryError, KeyError for a remove of
 * an absent key, TypeError for an operation the kind does not support).
 * Every class has a `status` attribute: the library's numeric status.
 */
#include <errno.h>
#include <string.h>

#include "pybk.h"

static PyObject *base_error;
static PyObject *status_class[BK_ESTATIC + 1];

static const struct {
    bk_status_t status;
    const char *name; /* qualified: bloomkit.NAME */
    const char *doc;
} classes[] = {
    {BK_EINVAL, "bloomkit.InvalidArgumentError", "A parameter is out of range or inconsistent."},
    {BK_ENOMEM, "bloomkit.OutOfMemoryError", "An allocation failed or a size does not fit."},
    {BK_EIO, "bloomkit.FileError", "A read, write, sync or rename failed (errno is kept)."},
    {BK_ENOSPC, "bloomkit.NoSpaceError", "The disk or a quota is full."},
    {BK_ECORRUPT, "bloomkit.CorruptError", "Serialized bytes are malformed, truncated or damaged."},
    {BK_EVERSION, "bloomkit.VersionError", "Serialized bytes are of an unknown format version."},
    {BK_EFULL, "bloomkit.FullError", "A non-scaling filter is at capacity."},
    {BK_ENOTFOUND, "bloomkit.NotFoundError", "Remove of a key that is not in the filter."},
    {BK_EKIND, "bloomkit.KindError", "The operation does not apply to this kind of filter."},
    {BK_EREADONLY, "bloomkit.ReadOnlyError", "The filter is a read-only mapping."},
    {BK_EINCOMPAT, "bloomkit.IncompatibleError",
     "Union of filters that differ in kind, size, k, hash or seed."},
    {BK_EEXIST, "bloomkit.AlreadyExistsError",
     "A save that only creates a file found one there (errno EEXIST)."},
    {BK_ENOTFILE, "bloomkit.NotAFileError",
     "The path is a directory, device, FIFO or socket, not a regular file."},
    {BK_ESTATIC, "bloomkit.StaticError",
     "An add, remove or clear of a static filter (fuse8, fuse16, fuse32): build it again."},
};

/* The built-in class each status also derives from (NULL: only Error). */
static PyObject *builtin_base(bk_status_t status)
{
    switch (status) {
    case BK_EINVAL:
    case BK_ECORRUPT:
    case BK_EVERSION:
    case BK_EINCOMPAT:
        return PyExc_ValueError;
    case BK_ENOMEM:
        return PyExc_MemoryError;
    case BK_EIO:
    case BK_ENOSPC:
        return PyExc_OSError;
    case BK_EEXIST:
        return PyExc_FileExistsError;
    case BK_ENOTFOUND:
        return PyExc_KeyError;
    case BK_EKIND:
        return PyExc_TypeError;
    default:
        return NULL;
    }
}

static PyObject *new_class(const char *name, const char *doc, PyObject *bases, long status)
{
    PyObject *dict = Py_BuildValue("{s:l}", "status", status);
    if (!dict)
        return NULL;
    PyObject *cls = PyErr_NewExceptionWithDoc(name, doc, bases, dict);
    Py_DECREF(dict);
    return cls;
}

static int add_status_class(PyObject *module, size_t i)
{
    /* A file that exists, or is no regular file, was a FileError (BK_EIO
     * with errno) before it had a status of its own: it still is one. */
    bk_status_t st = classes[i].status;
    bool file_case = st == BK_EEXIST || st == BK_ENOTFILE;
    /* A static filter's refusal is a KindError too (an operation its kind
     * does not have), which code written before static kinds catches. */
    PyObject *first = file_case          ? status_class[BK_EIO]
                      : st == BK_ESTATIC ? status_class[BK_EKIND]
                                         : base_error;
    PyObject *builtin = st == BK_ENOTFILE || st == BK_ESTATIC ? NULL : builtin_base(st);
    PyObject *bases = builtin ? PyTuple_Pack(2, first, builtin) : PyTuple_Pack(1, first);
    if (!bases)
        return -1;
    PyObject *cls = new_class(classes[i].name, classes[i].doc, bases, (long)classes[i].status);
    Py_DECREF(bases);
    if (!cls)
        return -1;
    status_class[classes[i].status] = cls;
    Py_INCREF(cls);
    return PyModule_AddObject(module, strchr(classes[i].name, '.') + 1, cls) < 0 ? -1 : 0;
}

int pybk_errors_init(PyObject *module)
{
    base_error = new_class("bloomkit.Error", "Base class of every bloomkit error.",
                           PyExc_Exception, 0);
    if (!base_error)
        return -1;
    Py_INCREF(base_error);
    if (PyModule_AddObject(module, "Error", base_error) < 0)
        return -1;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (add_status_class(module, i) < 0)
            return -1;
    return 0;
}

PyObject *pybk_error_class(bk_status_t status)
{
    if (status <= BK_OK || status > BK_ESTATIC || !status_class[status])
        return status == BK_OK ? NULL : base_error;
    return status_class[status];
}

/* OSError-style exceptions carry errno, its text (after the library's
 * reason, which step failed, when it gave one) and the file name. */
static PyObject *raise_os(PyObject *cls, int err, bk_status_t status, const char *why,
                          PyObject *path)
{
    const char *base = err ? strerror(err) : bk_strerror(status);
    char text[512];
    if (why)
        snprintf(text, sizeof text, "%s: %s", why, base);
    else
        snprintf(text, sizeof text, "%s", base);
    PyObject *exc = PyObject_CallFunction(cls, "isO", err, text, path ? path : Py_None);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *pybk_raise(bk_status_t status, const char *why, PyObject *path)
{
    int err = errno;
    PyObject *cls = pybk_error_class(status);
    if (!cls)
        cls = base_error;
    if (status == BK_EIO || status == BK_ENOSPC || status == BK_EEXIST || status == BK_ENOTFILE)
        return raise_os(cls, err, status, why, path);
    const char *text = bk_strerror(status);
    if (why && path)
        PyErr_Format(cls, "%s: %s (%S)", text, why, path);
    else if (why)
        PyErr_Format(cls, "%s: %s", text, why);
    else if (path)
        PyErr_Format(cls, "%s (%S)", text, path);
    else
        PyErr_SetString(cls, text);
    return NULL;
}
