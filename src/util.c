/* Helpers shared by the type families: see util.h. */
#include "util.h"

#include <string.h>

PyObject *zc_raise(zc_state *st, const zs_error *err, PyObject *what) {
    PyObject *exc;
    switch (err->kind) {
    case ZS_ERR_MEMORY:
        return PyErr_NoMemory();
    case ZS_ERR_NOT_FOUND: exc = st->EntryNotFoundError; break;
    case ZS_ERR_INDEX: exc = st->InvalidIndexError; break;
    case ZS_ERR_FORMAT:
    case ZS_ERR_IO: exc = st->ArchiveError; break;
    case ZS_ERR_NO_INDEX:
    case ZS_ERR_QUERY: exc = st->SearchError; break;
    default: exc = st->ZimError; break;
    }
    return zc_raise_as(exc, err->msg, what);
}

/* Messages start with the name of the file; an empty one is shown quoted. */
PyObject *zc_raise_as(PyObject *exc, const char *msg, PyObject *what) {
    if (what && what != Py_None)
        PyErr_Format(exc, PyUnicode_Check(what) && PyUnicode_GET_LENGTH(what) == 0
                              ? "%R: %s" : "%U: %s", what, msg);
    else
        PyErr_SetString(exc, msg);
    return NULL;
}

PyObject *zc_raise_closed(zc_state *st, const char *kind, PyObject *what) {
    if (what && what != Py_None)
        PyErr_Format(st->ClosedError, PyUnicode_Check(what) && PyUnicode_GET_LENGTH(what) == 0
                                          ? "%R: %s is closed" : "%U: %s is closed", what, kind);
    else
        PyErr_Format(st->ClosedError, "%s is closed or was never opened", kind);
    return NULL;
}

const char *zc_utf8(PyObject *s, Py_ssize_t *len, const char *argname) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", argname,
                     Py_TYPE(s)->tp_name);
        return NULL;
    }
    /* Fails with UnicodeEncodeError on lone surrogates: libzim wants UTF-8. */
    const char *p = PyUnicode_AsUTF8AndSize(s, len);
    if (p && memchr(p, '\0', (size_t)*len)) {
        PyErr_Format(PyExc_ValueError, "%s must not contain NUL characters", argname);
        return NULL;
    }
    return p;
}

int zc_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
            const char *const *names, int n, int npos, int nreq, PyObject **out) {
    if (nargs > npos) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional argument%s (%zd given)",
                     fname, npos, npos == 1 ? "" : "s", nargs);
        return -1;
    }
    for (int i = 0; i < n; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int i = 0;
        while (i < n && PyUnicode_CompareWithASCIIString(key, names[i]) != 0)
            i++;
        if (i == n) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", fname, key);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname,
                         names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < nreq; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, names[i]);
            return -1;
        }
    return 0;
}

int zc_add_type(PyObject *m, PyTypeObject **slot, PyType_Spec *spec, int public) {
    *slot = (PyTypeObject *)PyType_FromModuleAndSpec(m, spec, NULL);
    if (!*slot)
        return -1;
    if (!public)
        return 0;
    return PyModule_AddObjectRef(m, strrchr(spec->name, '.') + 1, (PyObject *)*slot);
}

PyObject *zc_reduce(PyObject *self, PyObject *noargs) {
    (void)noargs;
    PyObject *mod = PyImport_ImportModule("libzim._pickle");
    if (!mod)
        return NULL;
    PyObject *r = PyObject_CallMethod(mod, "reduce", "O", self);
    Py_DECREF(mod);
    return r;
}

PyObject *zc_lazy_import(PyObject **slot, const char *module, const char *attr) {
    PyObject *v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (v)
        return v;
    PyObject *mod = PyImport_ImportModule(module);
    if (!mod)
        return NULL;
    v = PyObject_GetAttrString(mod, attr);
    Py_DECREF(mod);
    if (!v)
        return NULL;
    /* Two threads may import at once (no GIL, or a GIL dropped inside the
     * import): the first to publish wins and the other's copy goes. */
    PyObject *expected = NULL;
    if (!__atomic_compare_exchange_n(slot, &expected, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        Py_DECREF(v);
        v = expected;
    }
    return v;
}

atomic_long zc_guard_pause_us = 0;

void zc_guard_pause(void) {
    long us = atomic_load(&zc_guard_pause_us);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    if (us > 0)
        NOGIL(nanosleep(&ts, NULL));
}

void zc_plain_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    tp->tp_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}
