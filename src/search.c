/* Full-text search: Search, a query bound to a searcher (searcher.c).
 *
 * A Search holds only its query; each call leases a native searcher, runs,
 * gathers a whole page of paths, titles, scores and snippets in one GIL-free
 * call, and builds the Python objects afterwards (result.h's types). */
#include "search.h"
#include "item.h"

#include <limits.h>
#include <math.h>

/* Identifies Search objects to the pool's per-searcher query cache. */
static atomic_ullong next_search_id = 1;

/* Xapian parses every term of a query; a multi-megabyte query is a mistake
 * or an attack, and it would hold a pooled searcher for seconds. */
#define MAX_QUERY_BYTES (64 * 1024)

SearchObject *zc_search_new(PyTypeObject *tp, SearcherObject *searcher, PyObject *text,
                            const zs_query *geo) {
    Py_ssize_t len;
    /* The str's own UTF-8 (its data when ASCII, else cached in it): it lives
     * as long as the str, which the Search holds; no copy per search. */
    const char *utf8 = zc_utf8(text, &len, "query");
    if (!utf8)
        return NULL;
    if (len > MAX_QUERY_BYTES) {
        PyErr_Format(PyExc_ValueError, "query is %zd bytes; at most %d are accepted", len,
                     MAX_QUERY_BYTES);
        return NULL;
    }
    SearchObject *s = PyObject_GC_New(SearchObject, tp);
    if (!s)
        return NULL;
    s->searcher = (SearcherObject *)Py_NewRef(searcher);
    s->text = Py_NewRef(text);
    memset(&s->q, 0, sizeof s->q);
    if (geo)
        s->q = *geo;
    s->q.text = utf8;
    s->q.len = (size_t)len;
    s->q.search_id = atomic_fetch_add(&next_search_id, 1);
    PyObject_GC_Track(s);
    return s;
}

int zc_searchobj_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((SearchObject *)self)->searcher);
    Py_VISIT(((SearchObject *)self)->text);
    return 0;
}

int zc_searchobj_clear(PyObject *self) {
    SearchObject *s = (SearchObject *)self;
    Py_CLEAR(s->searcher);
    /* q.text points into text; clear both together. */
    s->q.text = "";
    s->q.len = 0;
    Py_CLEAR(s->text);
    return 0;
}

void zc_searchobj_dealloc(PyObject *self) { zc_plain_dealloc(self); }

static SearcherObject *search_owner(SearchObject *self) {
    if (!self->searcher || !self->text)
        return (SearcherObject *)zc_raise_closed(zc_state_of((PyObject *)self), "search", NULL);
    return zc_searcher_ready((PyObject *)self->searcher);
}

static PyObject *search_estimate(SearchObject *self) {
    SearcherObject *owner = search_owner(self);
    if (!owner)
        return NULL;
    /* The page call runs on another thread's time: hold what it reads. */
    Py_INCREF(self);
    zs_error err;
    int64_t n = 0;
    int rc;
    NOGIL(rc = zs_search_estimate(owner->h, &self->q, &n, &err));
    PyObject *r = rc < 0 ? NULL : PyLong_FromLongLong(n);
    if (rc < 0) {
        PyObject *names = zc_searcher_names(owner->archives);
        if (names) {
            zc_raise(zc_state_of((PyObject *)self), &err, names);
            Py_DECREF(names);
        }
    }
    Py_DECREF(self);
    return r;
}

PyObject *zc_search_estimate_meth(PyObject *self, PyObject *noargs) {
    (void)noargs;
    return search_estimate((SearchObject *)self);
}

static int page_args(PyObject *const *args, int *start, int *count) {
    long long v[2];
    for (int i = 0; i < 2; i++) {
        if (!PyLong_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "%s must be int, not %.100s", i ? "count" : "start",
                         Py_TYPE(args[i])->tp_name);
            return -1;
        }
        int overflow = 0;
        v[i] = PyLong_AsLongLongAndOverflow(args[i], &overflow);
        if (v[i] == -1 && PyErr_Occurred())
            return -1;
        if (overflow < 0 || (overflow == 0 && v[i] < 0)) {
            PyErr_Format(PyExc_ValueError, "%s must not be negative", i ? "count" : "start");
            return -1;
        }
        /* Past the last result there is nothing: clamp, libzim takes int. */
        if (overflow > 0 || v[i] > INT_MAX)
            v[i] = INT_MAX;
    }
    *start = (int)v[0];
    *count = (int)v[1];
    /* libzim adds them as ints. */
    if (*count > INT_MAX - *start)
        *count = INT_MAX - *start;
    return 0;
}

static int archive_index_of(SearcherObject *owner, int i) {
    return i >= 0 && i < PyList_GET_SIZE(owner->archives) ? i : -1;
}

PyObject *zc_search_page(SearchObject *self, PyTypeObject *set_type, PyTypeObject *result_type,
                         PyObject *const *args, unsigned flags, size_t text_max_chars,
                         int as_paths) {
    int start, count;
    if (page_args(args, &start, &count) < 0)
        return NULL;
    SearcherObject *owner = search_owner(self);
    if (!owner)
        return NULL;
    zc_state *st = zc_state_of((PyObject *)self);
    Py_INCREF(self);
    zs_error err;
    zs_page *page;
    NOGIL(page = zs_search_page(owner->h, &self->q, start, count, flags, text_max_chars, &err));
    PyObject *out = NULL;
    if (!page) {
        PyObject *names = zc_searcher_names(owner->archives);
        if (names) {
            zc_raise(st, &err, names);
            Py_DECREF(names);
        }
        goto done;
    }
    PyObject *items = PyTuple_New((Py_ssize_t)page->n);
    /* add_archive() may append meanwhile: read the list under its lock. */
    ZC_BEGIN_CS(owner->archives);
    for (size_t i = 0; items && i < page->n; i++) {
        const zs_result *res = &page->results[i];
        PyObject *obj;
        if (as_paths) {
            obj = zc_str(res->path);
        } else {
            ResultObject *r = PyObject_GC_New(ResultObject, result_type);
            obj = (PyObject *)r;
            if (r) {
                /* Read before anything that could run the collector (and so,
                 * through a finalizer, another thread's add_archive()). */
                int ai = archive_index_of(owner, res->archive);
                r->archive = Py_NewRef(ai >= 0 ? PyList_GET_ITEM(owner->archives, ai) : Py_None);
                r->path = zc_str(res->path);
                r->title = zc_str(res->title);
                r->snippet = zc_str(res->snippet);
                r->text = res->has_text ? zc_str(res->text) : NULL;
                r->score = res->score;
                r->word_count = res->word_count;
                PyObject_GC_Track(r);
                if (!r->path || !r->title || !r->snippet || (res->has_text && !r->text))
                    Py_CLEAR(obj);
            }
        }
        if (!obj)
            Py_CLEAR(items);
        else
            PyTuple_SET_ITEM(items, (Py_ssize_t)i, obj);
    }
    ZC_END_CS();
    zs_page_free(page);
    if (!items)
        goto done;
    if (as_paths) {
        out = PyObject_GetIter(items);
        Py_DECREF(items);
        goto done;
    }
    ResultSetObject *set = PyObject_GC_New(ResultSetObject, set_type);
    if (!set) {
        Py_DECREF(items);
        goto done;
    }
    set->items = items;
    PyObject_GC_Track(set);
    out = (PyObject *)set;
done:
    Py_DECREF(self);
    return out;
}

static const char *const page_names[] = {"start",          "count",         "include_snippets",
                                         "snippet_engine", "include_text", "text_max_chars"};

/* snippet_engine: "libzim-c" (default) or "libzim"; sets *flags. */
static int snippet_engine(PyObject *arg, unsigned *flags) {
    if (!arg)
        return 0;
    if (PyUnicode_Check(arg) && PyUnicode_CompareWithASCIIString(arg, "libzim") == 0) {
        *flags |= ZS_LIBZIM_SNIPPET;
        return 0;
    }
    if (PyUnicode_Check(arg) && PyUnicode_CompareWithASCIIString(arg, "libzim-c") == 0)
        return 0;
    PyErr_Format(PyExc_ValueError, "snippet_engine must be 'libzim-c' or 'libzim', not %R", arg);
    return -1;
}

static PyObject *search_get_results(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
    PyObject *a[6];
    int snippets = 1, text = 0;
    size_t max_chars = SIZE_MAX;
    unsigned flags = ZS_WANT_TITLE;
    if (zc_args("get_results", args, nargs, kwnames, page_names, 6, 2, 2, a) < 0 ||
        (a[2] && (snippets = PyObject_IsTrue(a[2])) < 0) || snippet_engine(a[3], &flags) < 0 ||
        (a[4] && (text = PyObject_IsTrue(a[4])) < 0) || zc_max_chars(a[5], &max_chars) < 0)
        return NULL;
    zc_state *st = zc_state_of(self);
    flags |= (snippets ? ZS_WANT_SNIPPET : 0) | (text ? ZS_WANT_TEXT : 0);
    return zc_search_page((SearchObject *)self, st->ResultSet, st->Result, a, flags, max_chars,
                          0);
}

PyObject *zc_search_get_paths(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    PyObject *a[2];
    if (zc_args("getResults", args, nargs, kwnames, page_names, 2, 2, 2, a) < 0)
        return NULL;
    zc_state *st = zc_state_of(self);
    return zc_search_page((SearchObject *)self, st->ResultSet, st->Result, a, 0, SIZE_MAX, 1);
}

PyObject *zc_search_repr(PyObject *self) {
    SearchObject *s = (SearchObject *)self;
    PyObject *text = zc_str((zs_str){s->q.text, s->q.len});
    PyObject *r = text ? PyUnicode_FromFormat("%s(%R)", zc_type_name(Py_TYPE(self)), text) : NULL;
    Py_XDECREF(text);
    return r;
}

/* Pickling: (searcher, query text, (latitude, longitude, distance) or None);
 * a suggestion's mode name instead of None when it is not "index". */
static PyObject *search_state(PyObject *self, void *c) {
    (void)c;
    SearchObject *s = (SearchObject *)self;
    PyObject *text = zc_str((zs_str){s->q.text, s->q.len});
    if (!text)
        return NULL;
    if (s->q.suggest_mode)
        return Py_BuildValue("(ONs)", (PyObject *)s->searcher, text, zc_suggest_modes[s->q.suggest_mode]);
    if (!s->q.geo)
        return Py_BuildValue("(ONO)", (PyObject *)s->searcher, text, Py_None);
    return Py_BuildValue("(ON(ddd))", (PyObject *)s->searcher, text, (double)s->q.latitude,
                         (double)s->q.longitude, (double)s->q.distance);
}

PyGetSetDef zc_search_getset[] = {
    {"_state", search_state, NULL, "(searcher, text, georange or None).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef search_methods[] = {
    ZC_REDUCE_METHOD,
    {"get_estimated_matches", zc_search_estimate_meth, METH_NOARGS,
     "get_estimated_matches($self, /)\n--\n\n"
     "Return Xapian's estimate of the number of matches (an int), which may\n"
     "differ from the number of results a full walk returns.\n\n"
     "Runs the query with the GIL released on a pooled native searcher. Raises\n"
     "SearchError if the index rejects the query."},
    {"getEstimatedMatches", zc_search_estimate_meth, METH_NOARGS,
     "getEstimatedMatches($self, /)\n--\n\n"
     "python-libzim 3.x's camelCase alias of get_estimated_matches()."},
    {"get_results", (PyCFunction)(void (*)(void))search_get_results,
     METH_FASTCALL | METH_KEYWORDS,
     "get_results($self, /, start, count, *, include_snippets=True, snippet_engine='libzim-c', include_text=False, text_max_chars=None)\n--\n\n"
     "Return a SearchResultSet of the hits start .. start+count-1 (fewer past\n"
     "the end).\n\n"
     "The whole page (paths, titles, scores, snippets) is gathered in one call\n"
     "with the GIL released; any thread may call it, on a pooled native\n"
     "searcher. With include_snippets=False no article is read and only the\n"
     "path, title and score of each hit are: snippet is '' and word_count -1.\n"
     "snippet_engine='libzim' makes snippets with libzim's getSnippet()\n"
     "instead of libzim-c's engine. include_text=True also fills each result's\n"
     "text (Item.get_text(), at most text_max_chars characters) in the same\n"
     "call. ValueError for a negative start or count. python-libzim's\n"
     "get_results() yields paths; this yields SearchResult objects\n"
     "(getResults() still yields paths)."},
    {"getResults", (PyCFunction)(void (*)(void))zc_search_get_paths, METH_FASTCALL | METH_KEYWORDS,
     "getResults($self, /, start, count)\n--\n\n"
     "python-libzim 3.x's API: return an iterator over the paths (str) of the\n"
     "hits start .. start+count-1, gathered in one call with the GIL released."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot search_slots[] = {
    {Py_tp_dealloc, zc_searchobj_dealloc},
    {Py_tp_traverse, zc_searchobj_traverse},
    {Py_tp_clear, zc_searchobj_clear},
    {Py_tp_methods, search_methods},
    {Py_tp_getset, zc_search_getset},
    {Py_tp_repr, zc_search_repr},
    {Py_tp_doc, "A query bound to a Searcher, from Searcher.search().\n\n"
                "Holds only the query: each get_estimated_matches() or get_results() call\n"
                "runs it on a pooled native searcher (the one that served it last keeps\n"
                "its parsed query), so any thread may page it at any time. Immutable;\n"
                "pickles as its searcher and query. python-libzim's libzim.search.Search."},
    {0, NULL},
};

static PyType_Spec search_spec = {
    .name = "libzim.search.Search",
    .basicsize = sizeof(SearchObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = search_slots,
};

int zc_search_init_types(PyObject *m, zc_state *st) {
    return zc_add_type(m, &st->Search, &search_spec, 1);
}
