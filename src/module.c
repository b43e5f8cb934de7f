/* libzim._libzim: module init, module state and the exception tree. */
#include "module.h"

#define LIBZIM_VERSION_NOTE                                                   \
    "libzim 8.1.1 sizes its caches per archive when the archive is opened "   \
    "(ZIM_CLUSTERCACHE, ZIM_DIRENTCACHE environment variables) and cannot "   \
    "read or resize them afterwards; this needs libzim >= 9.0"

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
    if (what && what != Py_None)
        PyErr_Format(exc, "%U: %s", what, err->msg);
    else
        PyErr_SetString(exc, err->msg);
    return NULL;
}

PyObject *zc_raise_closed(zc_state *st, const char *kind, PyObject *what) {
    if (what && what != Py_None)
        PyErr_Format(st->ClosedError, "%U: %s is closed", what, kind);
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

/* ---- module-level functions ----------------------------------------------- */

static PyObject *versions(PyObject *m, PyObject *noargs) {
    (void)noargs;
    zc_state *st = PyModule_GetState(m);
    char *buf = NULL;
    size_t len = 0, count = 0;
    zs_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zs_versions(&buf, &len, &count, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return zc_raise(st, &err, NULL);
    PyObject *out = PyList_New(0);
    const char *p = buf;
    for (size_t i = 0; out && i < count; i++) {
        size_t n = strlen(p);
        const char *eq = memchr(p, '=', n);
        PyObject *pair = eq ? Py_BuildValue("(s#s#)", p, (Py_ssize_t)(eq - p), eq + 1,
                                            (Py_ssize_t)(n - (size_t)(eq - p) - 1))
                            : NULL;
        if (!pair || PyList_Append(out, pair) < 0)
            Py_CLEAR(out);
        Py_XDECREF(pair);
        p += n + 1;
    }
    zs_buffer_free(buf);
    return out;
}

static PyObject *not_supported(PyObject *m, PyObject *args) {
    (void)args;
    zc_state *st = PyModule_GetState(m);
    PyErr_SetString(st->NotSupportedError, LIBZIM_VERSION_NOTE);
    return NULL;
}

/* The testing hooks take a long and return the previous setting. */
static PyObject *set_hook(PyObject *arg, long (*hook)(long)) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(hook(n));
}

static PyObject *fault_inject(PyObject *m, PyObject *arg) {
    (void)m;
    return set_hook(arg, zs_fault_inject);
}

static PyObject *test_delay(PyObject *m, PyObject *arg) {
    (void)m;
    return set_hook(arg, zs_test_delay);
}

static PyMethodDef module_methods[] = {
    {"_versions", versions, METH_NOARGS, "[(library, version), ...] as libzim reports them."},
    {"get_cluster_cache_max_size", not_supported, METH_NOARGS,
     "Not available with libzim 8.1.1: raises NotSupportedError."},
    {"get_cluster_cache_current_size", not_supported, METH_NOARGS,
     "Not available with libzim 8.1.1: raises NotSupportedError."},
    {"set_cluster_cache_max_size", not_supported, METH_O,
     "Not available with libzim 8.1.1: raises NotSupportedError."},
    {"_fault_inject", fault_inject, METH_O,
     "Testing only: make the N-th following native call fail. Returns the previous N."},
    {"_test_delay", test_delay, METH_O,
     "Testing only: native calls first sleep this many microseconds. Returns the previous value."},
    {NULL, NULL, 0, NULL},
};

/* ---- exception tree --------------------------------------------------------- */

static int add_exception(PyObject *m, PyObject **slot, const char *name, PyObject *bases,
                         const char *doc) {
    char qual[128];
    snprintf(qual, sizeof qual, "libzim.%s", name);
    *slot = PyErr_NewExceptionWithDoc(qual, doc, bases, NULL);
    Py_DECREF(bases);
    if (!*slot)
        return -1;
    return PyModule_AddObjectRef(m, name, *slot);
}

static int init_exceptions(PyObject *m, zc_state *st) {
    PyObject *b = PyTuple_Pack(1, PyExc_Exception);
    if (!b || add_exception(m, &st->ZimError, "ZimError", b,
                            "Root of every error libzim-c raises.") < 0)
        return -1;
#define SUB(field, name, pybase, doc)                                         \
    do {                                                                      \
        PyObject *bases = PyTuple_Pack(2, st->ZimError, pybase);              \
        if (!bases || add_exception(m, &st->field, name, bases, doc) < 0)     \
            return -1;                                                        \
    } while (0)
    SUB(ArchiveError, "ArchiveError", PyExc_RuntimeError,
        "The archive cannot be opened or its data is corrupt.");
    SUB(EntryNotFoundError, "EntryNotFoundError", PyExc_KeyError,
        "No entry with that path, title or name.");
    SUB(InvalidIndexError, "InvalidIndexError", PyExc_IndexError,
        "An entry id or position out of range.");
    SUB(ClosedError, "ClosedError", PyExc_ValueError,
        "The object was closed.");
    SUB(SearchError, "SearchError", PyExc_RuntimeError,
        "The search cannot run (no index, or a query Xapian rejects).");
    SUB(NotSupportedError, "NotSupportedError", PyExc_NotImplementedError,
        "The feature needs a newer libzim than the one linked.");
#undef SUB
    return 0;
}

/* ---- module lifecycle ---------------------------------------------------------- */

static int module_exec(PyObject *m) {
    zc_state *st = PyModule_GetState(m);
    if (init_exceptions(m, st) < 0 || zc_archive_init_types(m, st) < 0 ||
        zc_search_init_types(m, st) < 0 || zc_suggestion_init_types(m, st) < 0)
        return -1;
    PyObject *mod = PyImport_ImportModule("uuid");
    st->uuid_UUID = mod ? PyObject_GetAttrString(mod, "UUID") : NULL;
    Py_XDECREF(mod);
    mod = st->uuid_UUID ? PyImport_ImportModule("pathlib") : NULL;
    st->pathlib_Path = mod ? PyObject_GetAttrString(mod, "Path") : NULL;
    Py_XDECREF(mod);
    if (!st->pathlib_Path)
        return -1;
    return PyModule_AddStringConstant(m, "LIBZIM_VERSION_NOTE", LIBZIM_VERSION_NOTE);
}

#define STATE_FIELDS(X)                                                        \
    X(Archive) X(Entry) X(Item) X(Blob) X(EntryIterator) X(Query) X(Searcher)  \
    X(Search) X(ResultSet) X(Result) X(SuggestionSearcher) X(SuggestionSearch) \
    X(SuggestionResultSet) X(SuggestionResult) X(ZimError) X(ArchiveError)     \
    X(EntryNotFoundError) X(InvalidIndexError) X(ClosedError) X(SearchError)   \
    X(NotSupportedError) X(uuid_UUID) X(pathlib_Path)

static int module_traverse(PyObject *m, visitproc visit, void *arg) {
    zc_state *st = PyModule_GetState(m);
#define X(f) Py_VISIT(st->f);
    STATE_FIELDS(X)
#undef X
    return 0;
}

static int module_clear(PyObject *m) {
    zc_state *st = PyModule_GetState(m);
#define X(f) Py_CLEAR(st->f);
    STATE_FIELDS(X)
#undef X
    return 0;
}

static void module_free(void *m) { module_clear((PyObject *)m); }

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    /* Native handles are guarded by atomics (zc_guard), the searcher pool by
     * its own mutex, iterators by a per-object lock, and the remaining
     * mutable fields by critical sections (ZC_BEGIN_CS). */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

PyModuleDef zc_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "libzim._libzim",
    .m_doc = "Read ZIM archives and search them, with the GIL released around libzim.",
    .m_size = sizeof(zc_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__libzim(void) { return PyModuleDef_Init(&zc_module_def); }
