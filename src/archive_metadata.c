/* Archive: metadata, illustrations and integrity checks (check(), validate()).
 * The docstrings and the method table are archive.c's, with the rest of the
 * type; see archive_metadata.h. */
#include "archive_metadata.h"
#include "item.h"

/* Returns the Item for a metadata name (size < 0) or an illustration. */
static PyObject *archive_item(PyObject *self, PyObject *name, long size, int want_bytes) {
    zc_state *st = zc_state_of(self);
    const char *s = NULL;
    Py_ssize_t len = 0;
    if (name && !(s = zc_utf8(name, &len, "name")))
        return NULL;
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_item_info info;
    zs_error err;
    zs_item *it;
    zs_blob *blob = NULL;
    zs_str data = {NULL, 0};
    ZC_ADAPTIVE(&ARCHIVE(self)->read_cost, {
        it = name ? zs_archive_metadata_item(h, s, (size_t)len, &info, &err)
                  : zs_archive_illustration_item(h, (unsigned)size, &info, &err);
        if (it && want_bytes) {
            blob = zs_item_data(it, &data, &err);
            zs_item_free(it);
            it = NULL;
        }
    });
    zc_archive_leave(self);
    if (want_bytes) {
        if (!blob)
            return zc_raise(st, &err, ARCHIVE(self)->name);
        PyObject *r = PyBytes_FromStringAndSize(data.ptr, (Py_ssize_t)data.len);
        zs_blob_free(blob);
        return r;
    }
    if (!it)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return zc_item_new(st, it, &info, ARCHIVE(self));
}

static PyObject *zc_archive_get_metadata(PyObject *self, PyObject *name) { return archive_item(self, name, -1, 1); }
static PyObject *zc_archive_get_metadata_item(PyObject *self, PyObject *name) { return archive_item(self, name, -1, 0); }
ZC_KEYWORD_ARG_EXTERN(zc_archive_get_metadata, "get_metadata", "name")
ZC_KEYWORD_ARG_EXTERN(zc_archive_get_metadata_item, "get_metadata_item", "name")

static int parse_size(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames, long *size) {
    static const char *const names[] = {"size"};
    PyObject *arg;
    *size = 48; /* libzim's default illustration size */
    if (zc_args(fname, args, nargs, kwnames, names, 1, 1, 0, &arg) < 0)
        return -1;
    if (arg && arg != Py_None) {
        *size = PyLong_AsLong(arg);
        if (*size == -1 && PyErr_Occurred()) {
            /* Past a C long is out of range like any size past UINT_MAX. */
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            *size = -1;
        }
        if (*size < 0 || *size > (long)UINT_MAX) {
            PyErr_SetString(PyExc_ValueError, "illustration size out of range");
            return -1;
        }
    }
    return 0;
}

PyObject *zc_archive_get_illustration_item(PyObject *self, PyObject *const *args,
                                          Py_ssize_t nargs, PyObject *kwnames) {
    long size;
    if (parse_size("get_illustration_item", args, nargs, kwnames, &size) < 0)
        return NULL;
    return archive_item(self, NULL, size, 0);
}

static PyObject *illustration_sizes(PyObject *self, zc_state *st, unsigned *sizes, size_t *n) {
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_error err;
    int rc;
    NOGIL(rc = zs_archive_illustration_sizes(h, sizes, 64, n, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return Py_None;
}

PyObject *zc_archive_get_illustration_sizes(PyObject *self, PyObject *noargs) {
    (void)noargs;
    zc_state *st = zc_state_of(self);
    /* python-libzim 3.13's words (libzim 9.3 added illustration infos,
     * which libzim 8.1.1 and 9.2.3 lack). */
    if (PyErr_WarnEx(PyExc_DeprecationWarning,
                     "get_illustration_sizes() is deprecated, use get_illustration_infos() instead",
                     1) < 0)
        return NULL;
    unsigned sizes[64];
    size_t n = 0;
    if (!illustration_sizes(self, st, sizes, &n))
        return NULL;
    PyObject *set = PySet_New(NULL);
    for (size_t i = 0; set && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLong(sizes[i]);
        if (!v || PySet_Add(set, v) < 0)
            Py_CLEAR(set);
        Py_XDECREF(v);
    }
    return set;
}

PyObject *zc_archive_has_illustration(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
    zc_state *st = zc_state_of(self);
    long size;
    unsigned sizes[64];
    size_t n = 0;
    if (parse_size("has_illustration", args, nargs, kwnames, &size) < 0 ||
        !illustration_sizes(self, st, sizes, &n))
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (sizes[i] == (unsigned)size)
            Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

PyObject *zc_archive_metadata_keys(PyObject *self, void *c) {
    (void)c;
    zc_state *st = zc_state_of(self);
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    char *buf = NULL;
    size_t len = 0, count = 0;
    zs_error err;
    int rc;
    NOGIL(rc = zs_archive_metadata_keys(h, &buf, &len, &count, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    PyObject *list = PyList_New((Py_ssize_t)count);
    const char *p = buf;
    for (size_t i = 0; list && i < count; i++) {
        size_t n = strlen(p);
        PyObject *k = zc_str((zs_str){p, n});
        if (!k)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, k);
        p += n + 1;
    }
    zs_buffer_free(buf);
    return list;
}

PyObject *zc_archive_check(PyObject *self, PyObject *noargs) {
    (void)noargs;
    zc_state *st = zc_state_of(self);
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_error err;
    int rc;
    NOGIL(rc = zs_archive_check(h, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return PyBool_FromLong(rc);
}

static const char *const check_names[ZS_CHECK_COUNT] = {
    "checksum", "dirent_ptrs", "dirent_order", "title_index", "cluster_ptrs", "dirent_mimetypes",
};

PyObject *zc_archive_validate(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"checks", NULL};
    PyObject *checks = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:validate", kwlist, &checks))
        return NULL;
    zc_state *st = zc_state_of(self);
    unsigned mask = (1u << ZS_CHECK_COUNT) - 1;
    if (checks != Py_None) {
        if (PyUnicode_Check(checks))
            return PyErr_Format(PyExc_TypeError, "checks must be an iterable of names, not str");
        PyObject *it = PyObject_GetIter(checks), *name;
        if (!it)
            return NULL;
        mask = 0;
        while ((name = PyIter_Next(it))) {
            int found = -1;
            for (int i = 0; i < ZS_CHECK_COUNT && found < 0; i++)
                if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, check_names[i]) == 0)
                    found = i;
            if (found < 0) {
                PyErr_Format(PyExc_ValueError, "unknown integrity check %R (known: checksum, "
                             "dirent_ptrs, dirent_order, title_index, cluster_ptrs, "
                             "dirent_mimetypes)", name);
                Py_DECREF(name);
                Py_DECREF(it);
                return NULL;
            }
            mask |= 1u << found;
            Py_DECREF(name);
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            return NULL;
    }
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_error err;
    unsigned failed = 0;
    int rc;
    NOGIL(rc = zs_archive_validate(h, mask, &failed, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < ZS_CHECK_COUNT; i++) {
        if (!(failed & (1u << i)))
            continue;
        PyObject *s = PyUnicode_FromString(check_names[i]);
        if (!s || PyList_Append(out, s) < 0)
            Py_CLEAR(out);
        Py_XDECREF(s);
    }
    return out;
}

/* libzim._libzim.INTEGRITY_CHECKS: the names validate() takes, in its order. */
int zc_archive_add_integrity_checks(PyObject *m) {
    PyObject *names = PyTuple_New(ZS_CHECK_COUNT);
    for (int i = 0; names && i < ZS_CHECK_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(check_names[i]);
        if (!s) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    if (!names)
        return -1;
    int rc = PyModule_AddObjectRef(m, "INTEGRITY_CHECKS", names);
    Py_DECREF(names);
    return rc;
}
