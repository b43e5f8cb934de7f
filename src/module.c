/* libzim._libzim: module init, module state and the exception tree. */
#include "module.h"
#include "util.h"

#include "archive.h"
#include "search.h"
#include "suggestion.h"
#include "writer.h"

/* Debian 13's 9.2.3 has no cache API either: it arrived in libzim 9.3. */
#define LIBZIM_VERSION_NOTE                                                   \
    "libzim before 9.3 sizes its caches per archive when the archive is "     \
    "opened (ZIM_CLUSTERCACHE, ZIM_DIRENTCACHE environment variables) and "   \
    "cannot read or resize them afterwards; this needs libzim >= 9.3"

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

static PyObject *test_block_open(PyObject *m, PyObject *arg) {
    (void)m;
    return set_hook(arg, zs_test_block_open);
}

/* _snippet(html: bytes, query: str, language: str) -> str */
static PyObject *snippet_hook(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    zc_state *st = PyModule_GetState(m);
    Py_buffer html;
    const char *query, *lang;
    Py_ssize_t qlen;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_snippet(html, query, language) takes 3 arguments");
        return NULL;
    }
    if (!(query = PyUnicode_AsUTF8AndSize(args[1], &qlen)) ||
        !(lang = PyUnicode_AsUTF8(args[2])) ||
        PyObject_GetBuffer(args[0], &html, PyBUF_SIMPLE) < 0)
        return NULL;
    char *out = NULL;
    size_t len = 0;
    zs_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zs_snippet_test(html.buf, (size_t)html.len, query, (size_t)qlen, lang, &out, &len, &err);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&html);
    if (rc < 0)
        return zc_raise(st, &err, NULL);
    PyObject *r = PyUnicode_DecodeUTF8(out, (Py_ssize_t)len, "strict");
    zs_buffer_free(out);
    return r;
}

static long set_guard_pause(long us) { return atomic_exchange(&zc_guard_pause_us, us); }

static PyObject *test_guard_pause(PyObject *m, PyObject *arg) {
    (void)m;
    return set_hook(arg, set_guard_pause);
}

static PyMethodDef module_methods[] = {
    {"_versions", versions, METH_NOARGS, "[(library, version), ...] as libzim reports them."},
    {"get_cluster_cache_max_size", not_supported, METH_NOARGS,
     "Not available with libzim before 9.3: raises NotSupportedError."},
    {"get_cluster_cache_current_size", not_supported, METH_NOARGS,
     "Not available with libzim before 9.3: raises NotSupportedError."},
    {"set_cluster_cache_max_size", not_supported, METH_O,
     "Not available with libzim before 9.3: raises NotSupportedError."},
    {"_fault_inject", fault_inject, METH_O,
     "Testing only: make the N-th following native call fail. Returns the previous N."},
    {"_test_delay", test_delay, METH_O,
     "Testing only: native calls first sleep this many microseconds. Returns the previous value."},
    {"_test_block_open", test_block_open, METH_O,
     "Testing only: the next N archive opens wait for a signal, then fail with EINTR."},
    {"_snippet", (PyCFunction)(void (*)(void))snippet_hook, METH_FASTCALL,
     "_snippet(html, query, language, /)\n--\n\n"
     "Testing only: libzim-c's snippet of an HTML document (bytes) for a query, stemmed for "
     "an index language such as 'eng' ('' for none)."},
    {"_test_guard_pause", test_guard_pause, METH_O,
     "Testing only: taking a use of an archive sleeps this many microseconds between reading its "
     "state and counting the use. Returns the previous value."},
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
    SUB(WriterError, "WriterError", PyExc_RuntimeError,
        "Writing an archive failed (libzim refused, or a Python callback raised).");
#undef SUB
    return 0;
}

/* ---- module lifecycle ---------------------------------------------------------- */

static int module_exec(PyObject *m) {
    zc_state *st = PyModule_GetState(m);
    if (init_exceptions(m, st) < 0 || zc_archive_init_types(m, st) < 0 ||
        zc_search_init_types(m, st) < 0 || zc_suggestion_init_types(m, st) < 0 ||
        zc_writer_init_types(m, st) < 0)
        return -1;
    return PyModule_AddStringConstant(m, "LIBZIM_VERSION_NOTE", LIBZIM_VERSION_NOTE);
}

#define STATE_FIELDS(X)                                                        \
    X(Archive) X(Entry) X(Item) X(Blob) X(EntryIterator) X(Query) X(Searcher)  \
    X(Search) X(ResultSet) X(Result) X(SuggestionSearcher) X(SuggestionSearch) \
    X(SuggestionResultSet) X(SuggestionResult) X(ZimError) X(ArchiveError)     \
    X(EntryNotFoundError) X(InvalidIndexError) X(ClosedError) X(SearchError)   \
    X(NotSupportedError) X(uuid_UUID) X(pathlib_Path) X(Creator) X(WriterBlob)  \
    X(WriterError) X(WriterItem) X(WriterHint)

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
