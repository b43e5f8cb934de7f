/* libzim._libzim: module init, module state and the exception tree. */
#include "module.h"
#include "util.h"

#include "archive.h"
#include "catalog.h"
#include "entry.h"
#include "entry_iterator.h"
#include "item.h"
#include "query.h"
#include "result.h"
#include "search.h"
#include "searcher.h"
#include "suggestion.h"
#include "writer.h"

/* Debian 13's 9.2.3 has no dirent cache API either: it arrived in libzim 9.3. */
#define LIBZIM_VERSION_NOTE                                                   \
    "libzim before 9.3 sizes an archive's dirent cache when the archive is "  \
    "opened (ZIM_DIRENTCACHE environment variable) and cannot read or "       \
    "resize it afterwards; this needs libzim >= 9.3"

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

/* The binding's own cache of decoded clusters (python-libzim 3.13's calls,
 * which resize libzim 9.3's global cache): cheap, so the GIL is kept. */
static PyObject *cluster_cache_size(PyObject *m, int current) {
    zc_state *st = PyModule_GetState(m);
    uint64_t max, used;
    zs_error err;
    if (zs_cluster_cache_sizes(&max, &used, &err) < 0)
        return zc_raise(st, &err, NULL);
    return PyLong_FromUnsignedLongLong(current ? used : max);
}

static PyObject *get_cluster_cache_max_size(PyObject *m, PyObject *noargs) {
    (void)noargs;
    return cluster_cache_size(m, 0);
}

static PyObject *get_cluster_cache_current_size(PyObject *m, PyObject *noargs) {
    (void)noargs;
    return cluster_cache_size(m, 1);
}

/* A cache budget in bytes, as python-libzim converts it to uint64_t:
 * TypeError for a non-integer (it truncates 1.5 to 1), OverflowError below 0
 * or past 2**64 - 1. Shared by both caches' setters, so they agree. */
static int parse_budget(PyObject *arg, uint64_t *bytes) {
    if (!PyLong_Check(arg) && !PyIndex_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "an integer is required, not %.100s", Py_TYPE(arg)->tp_name);
        return -1;
    }
    PyObject *n = PyNumber_Index(arg);
    if (!n)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(n);
    Py_DECREF(n);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *bytes = (uint64_t)v;
    return 0;
}

static PyObject *set_cluster_cache_max_size(PyObject *m, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"size_in_bytes", NULL};
    zc_state *st = PyModule_GetState(m);
    PyObject *arg;
    uint64_t bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:set_cluster_cache_max_size", kwlist, &arg) ||
        parse_budget(arg, &bytes) < 0)
        return NULL;
    zs_error err;
    if (zs_cluster_cache_set_max(bytes, &err) < 0)
        return zc_raise(st, &err, NULL);
    Py_RETURN_NONE;
}

/* The snippet engine's cache of hits' text (libzim.search's calls): a mutex
 * held for a lookup or a splice, so the GIL is kept, as for the clusters. */
enum { SNIP_MAX, SNIP_CURRENT, SNIP_COUNT };

static PyObject *snippet_cache_size(PyObject *m, int which) {
    zc_state *st = PyModule_GetState(m);
    uint64_t v[3];
    zs_error err;
    if (zs_snippet_cache_sizes(&v[SNIP_MAX], &v[SNIP_CURRENT], &v[SNIP_COUNT], &err) < 0)
        return zc_raise(st, &err, NULL);
    return PyLong_FromUnsignedLongLong(v[which]);
}

static PyObject *get_snippet_cache_max_size(PyObject *m, PyObject *noargs) {
    (void)noargs;
    return snippet_cache_size(m, SNIP_MAX);
}

static PyObject *get_snippet_cache_current_size(PyObject *m, PyObject *noargs) {
    (void)noargs;
    return snippet_cache_size(m, SNIP_CURRENT);
}

static PyObject *snippet_cache_count(PyObject *m, PyObject *noargs) {
    (void)noargs;
    return snippet_cache_size(m, SNIP_COUNT);
}

static PyObject *set_snippet_cache_max_size(PyObject *m, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"size_in_bytes", NULL};
    zc_state *st = PyModule_GetState(m);
    PyObject *arg;
    uint64_t bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:set_snippet_cache_max_size", kwlist, &arg) ||
        parse_budget(arg, &bytes) < 0)
        return NULL;
    zs_error err;
    if (zs_snippet_cache_set_max(bytes, &err) < 0)
        return zc_raise(st, &err, NULL);
    Py_RETURN_NONE;
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
    return zc_take_str(out, len);
}

/* _html_text(html: bytes, main_only: bool, max_chars: int | None) -> str */
static PyObject *html_text_hook(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    zc_state *st = PyModule_GetState(m);
    Py_buffer html;
    size_t max_chars;
    int main_only;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_html_text(html, main_only, max_chars) takes 3 arguments");
        return NULL;
    }
    if ((main_only = PyObject_IsTrue(args[1])) < 0 || zc_max_chars(args[2], &max_chars) < 0 ||
        PyObject_GetBuffer(args[0], &html, PyBUF_SIMPLE) < 0)
        return NULL;
    char *out = NULL;
    size_t len = 0;
    zs_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zs_html_text(html.buf, (size_t)html.len, main_only, max_chars, &out, &len, &err);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&html);
    if (rc < 0)
        return zc_raise(st, &err, NULL);
    return zc_take_str(out, len);
}

/* libzim.serve gzips its answers with this: libdeflate, off the GIL (the
 * server's workers compress in parallel).  The output is copied into a bytes
 * object after the GIL is back: no Python object is written without it. */
static PyObject *gzip_hook(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    zc_state *st = PyModule_GetState(m);
    Py_buffer data;
    long level = 6;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "_gzip(data, level=6) takes 1 or 2 arguments");
        return NULL;
    }
    if (nargs == 2 && (level = PyLong_AsLong(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if (level < 1 || level > 12)
        return PyErr_Format(PyExc_ValueError, "gzip level must be 1 to 12, not %ld", level);
    if (PyObject_GetBuffer(args[0], &data, PyBUF_SIMPLE) < 0)
        return NULL;
    char *out = NULL;
    size_t len = 0;
    zs_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zs_gzip(data.buf, (size_t)data.len, (int)level, &out, &len, &err);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (rc < 0)
        return zc_raise(st, &err, NULL);
    PyObject *r = PyBytes_FromStringAndSize(out, (Py_ssize_t)len);
    zs_buffer_free(out);
    return r;
}

static long set_guard_pause(long us) { return atomic_exchange(&zc_guard_pause_us, us); }

static PyObject *test_guard_pause(PyObject *m, PyObject *arg) {
    (void)m;
    return set_hook(arg, set_guard_pause);
}

static PyObject *title_probes(PyObject *m, PyObject *noargs) {
    (void)m;
    (void)noargs;
    return PyLong_FromUnsignedLongLong(zs_title_probes());
}

static PyObject *estimate_runs(PyObject *m, PyObject *noargs) {
    (void)m;
    (void)noargs;
    return PyLong_FromUnsignedLongLong(zs_estimate_runs());
}

static PyMethodDef module_methods[] = {
    {"_versions", versions, METH_NOARGS, "[(library, version), ...] as libzim reports them."},
    {"get_cluster_cache_max_size", get_cluster_cache_max_size, METH_NOARGS,
     "get_cluster_cache_max_size($module, /)\n--\n\n"
     "Return the budget, in bytes of decoded data, of the process's cache of\n"
     "decoded clusters.\n\n"
     "One budget for every archive of the process (python-libzim 3.13.1's\n"
     "call, libzim 9.3+ semantics): 16 MiB unless ZIM_CLUSTERCACHE=N was set\n"
     "before `import libzim` (then N MiB). Cheap; keeps the GIL."},
    {"get_cluster_cache_current_size", get_cluster_cache_current_size, METH_NOARGS,
     "get_cluster_cache_current_size($module, /)\n--\n\n"
     "Return the bytes of decoded cluster data the cache holds now, over every\n"
     "file.\n\n"
     "Content views still held may keep more memory alive than this counts (an\n"
     "evicted cluster lives while a view of it does). Cheap; keeps the GIL."},
    {"set_cluster_cache_max_size", (PyCFunction)(void (*)(void))set_cluster_cache_max_size,
     METH_VARARGS | METH_KEYWORDS,
     "set_cluster_cache_max_size($module, /, size_in_bytes)\n--\n\n"
     "Set the budget of the process's cache of decoded clusters, in bytes.\n\n"
     "Lowering it evicts at once, least recently used first; a budget smaller\n"
     "than a cluster caches nothing (reads still work). Snippet searches read\n"
     "many articles and run faster with a larger budget. TypeError for a\n"
     "non-integer (python-libzim truncates 1.5 to 1), OverflowError below 0.\n"
     "Thread-safe; keeps the GIL."},
    {"get_snippet_cache_max_size", get_snippet_cache_max_size, METH_NOARGS,
     "get_snippet_cache_max_size($module, /)\n--\n\n"
     "Return the budget, in bytes, of the process's cache of search hits'\n"
     "visible text, from which snippets of hits seen before are made.\n\n"
     "One budget for every archive of the process, 16 MiB at import, apart\n"
     "from the cluster cache's (get_cluster_cache_max_size). Cheap; keeps the\n"
     "GIL."},
    {"get_snippet_cache_current_size", get_snippet_cache_current_size, METH_NOARGS,
     "get_snippet_cache_current_size($module, /)\n--\n\n"
     "Return the bytes the cache of hits' text holds now, over every file.\n\n"
     "Counts each text's characters and what keeping it costs (about 160\n"
     "bytes of bookkeeping per text); never more than the budget. Cheap;\n"
     "keeps the GIL."},
    {"set_snippet_cache_max_size", (PyCFunction)(void (*)(void))set_snippet_cache_max_size,
     METH_VARARGS | METH_KEYWORDS,
     "set_snippet_cache_max_size($module, /, size_in_bytes)\n--\n\n"
     "Set the budget of the process's cache of hits' text, in bytes.\n\n"
     "Lowering it evicts at once, least recently used first; 0 turns the\n"
     "cache off (a text larger than the budget is never kept). Snippets are\n"
     "the same with or without it: a hit's text is cached as the snippet\n"
     "engine reads it, so a hit seen again makes its snippet without decoding\n"
     "its cluster. Content reads and the cluster cache are not affected.\n"
     "TypeError for a non-integer, OverflowError below 0 (as\n"
     "set_cluster_cache_max_size). Thread-safe; keeps the GIL."},
    {"_snippet_cache_count", snippet_cache_count, METH_NOARGS,
     "Testing only: how many hits' texts the snippet text cache holds."},
    {"_title_probes", title_probes, METH_NOARGS,
     "Testing only: titles read so far by type-ahead binary searches\n"
     "(SuggestionSearcher.suggest(mode='titles')), over the process."},
    {"_estimate_runs", estimate_runs, METH_NOARGS,
     "Testing only: estimates counted by libzim so far, over the process\n"
     "(the others came from a searcher's cache of them)."},
    {"_fault_inject", fault_inject, METH_O,
     "Testing only: make the N-th following native call fail. Returns the previous N."},
    {"_test_delay", test_delay, METH_O,
     "Testing only: native calls first sleep this many microseconds. Returns\n"
     "the previous value."},
    {"_test_block_open", test_block_open, METH_O,
     "Testing only: the next N archive opens wait for a signal, then fail with EINTR."},
    {"_snippet", (PyCFunction)(void (*)(void))snippet_hook, METH_FASTCALL,
     "_snippet(html, query, language, /)\n--\n\n"
     "Testing only: libzim-c's snippet of an HTML document (bytes) for a\n"
     "query, stemmed for an index language such as 'eng' ('' for none)."},
    {"_html_text", (PyCFunction)(void (*)(void))html_text_hook, METH_FASTCALL,
     "_html_text(html, main_only, max_chars, /)\n--\n\n"
     "Testing only: Item.get_text() of an HTML document (bytes)."},
    {"_gzip", (PyCFunction)(void (*)(void))gzip_hook, METH_FASTCALL,
     "_gzip(data, level=6, /)\n--\n\n"
     "data (any bytes-like object) gzipped by libdeflate, level 1-12 (6: the\n"
     "size of zlib's default); mtime 0, so the same data gives the same bytes.\n"
     "For libzim.serve's answers; releases the GIL while it compresses."},
    {"_test_guard_pause", test_guard_pause, METH_O,
     "Testing only: taking a use of an archive sleeps this many microseconds\n"
     "between reading its state and counting the use. Returns the previous\n"
     "value."},
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
    /* python-libzim raises RuntimeError wherever libzim throws and it has no
     * better word (no main page, not a redirect, missing metadata, ...): the
     * root is one, so every error of ours is caught where theirs were. */
    PyObject *b = PyTuple_Pack(1, PyExc_RuntimeError);
    if (!b || add_exception(m, &st->ZimError, "ZimError", b,
                            "Root of every error libzim-c raises: catch it for any of them.\n\n"
                            "A RuntimeError, as python-libzim raises RuntimeError wherever\n"
                            "libzim fails without a more specific word (no main entry, not\n"
                            "a redirect, ...). Messages are one line and start with the\n"
                            "file name.") < 0)
        return -1;
#define SUB(field, name, pybase, doc)                                         \
    do {                                                                      \
        PyObject *bases = PyTuple_Pack(2, st->ZimError, pybase);              \
        if (!bases || add_exception(m, &st->field, name, bases, doc) < 0)     \
            return -1;                                                        \
    } while (0)
    SUB(ArchiveError, "ArchiveError", PyExc_RuntimeError,
        "The archive cannot be opened (missing, not a regular file, not a ZIM\n"
        "archive) or its data is corrupt; also a RuntimeError.");
    SUB(EntryNotFoundError, "EntryNotFoundError", PyExc_KeyError,
        "No entry with that path or title, no metadata with that name, or no\n"
        "illustration of that size; also a KeyError, as python-libzim raises.");
    /* python-libzim: IndexError past the end, OverflowError for an id
     * outside uint32 (a negative one). */
    do {
        PyObject *bases = PyTuple_Pack(3, st->ZimError, PyExc_IndexError, PyExc_OverflowError);
        if (!bases || add_exception(m, &st->InvalidIndexError, "InvalidIndexError", bases,
                                    "An entry id out of range; also an IndexError and an OverflowError, as\n"
                                    "python-libzim raises (OverflowError below 0).") < 0)
            return -1;
    } while (0);
    SUB(ClosedError, "ClosedError", PyExc_ValueError,
        "Use of an Archive after close(), or of an object that was never\n"
        "initialised; also a ValueError, as for a closed file.");
    SUB(SearchError, "SearchError", PyExc_RuntimeError,
        "The search cannot run: no archive has a full-text index, the index is\n"
        "unusable, or Xapian rejects the query; also a RuntimeError.");
    SUB(NotSupportedError, "NotSupportedError", PyExc_NotImplementedError,
        "The feature needs a newer libzim than the one linked (the message names\n"
        "the version); also a NotImplementedError.");
    SUB(WriterError, "WriterError", PyExc_RuntimeError,
        "Writing an archive failed: libzim refused, or an item, content provider\n"
        "or index data method raised (chained as __cause__); also a RuntimeError,\n"
        "as python-libzim raises.");
#undef SUB
    return 0;
}

/* ---- module lifecycle ---------------------------------------------------------- */

static int module_exec(PyObject *m) {
    zc_state *st = PyModule_GetState(m);
    /* Before libzim/__init__.py sets ZIM_CLUSTERCACHE for libzim's own
     * cache: only a value the user set is the budget. */
    zs_cluster_cache_init();
    /* In the order the types were added when each family had one file. */
    if (init_exceptions(m, st) < 0 || zc_item_init_types(m, st) < 0 ||
        zc_entry_init_types(m, st) < 0 || zc_entry_iterator_init_types(m, st) < 0 ||
        zc_archive_init_types(m, st) < 0 || zc_query_init_types(m, st) < 0 ||
        zc_result_init_types(m, st) < 0 || zc_search_init_types(m, st) < 0 ||
        zc_searcher_init_types(m, st) < 0 || zc_suggestion_init_types(m, st) < 0 ||
        zc_writer_blob_init_types(m, st) < 0 || zc_creator_init_types(m, st) < 0 ||
        zc_catalog_init_types(m, st) < 0)
        return -1;
    return PyModule_AddStringConstant(m, "LIBZIM_VERSION_NOTE", LIBZIM_VERSION_NOTE);
}

#define STATE_FIELDS(X)                                                        \
    X(Archive) X(Entry) X(Item) X(Blob) X(EntryIterator) X(Query) X(Searcher)  \
    X(Search) X(ResultSet) X(Result) X(SuggestionSearcher) X(SuggestionSearch) \
    X(SuggestionResultSet) X(SuggestionResult) X(ZimError) X(ArchiveError)     \
    X(EntryNotFoundError) X(InvalidIndexError) X(ClosedError) X(SearchError)   \
    X(NotSupportedError) X(uuid_UUID) X(pathlib_Path) X(Creator) X(WriterBlob)  \
    X(WriterError) X(WriterItem) X(WriterHint) X(CatalogIndex)

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
    .m_doc = "The native core of libzim-c: libzim's reader, search, suggestions and\n"
             "writer, with the GIL released around libzim's work.\n\n"
             "Import its names from libzim.reader, libzim.search, libzim.suggestion,\n"
             "libzim.writer and libzim (the exceptions); the names starting with '_'\n"
             "are internal or testing hooks. INTEGRITY_CHECKS is the tuple of check\n"
             "names Archive.check_integrity() accepts, in libzim's order.",
    .m_size = sizeof(zc_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__libzim(void) { return PyModuleDef_Init(&zc_module_def); }
