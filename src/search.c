/* Full-text search: Query, Searcher, Search, SearchResultSet, SearchResult.
 *
 * The searcher is a pool of native searchers (zimshim.h), so one Python
 * Searcher shared by every thread of a pool runs as many searches at once as
 * there are threads, and never lets two threads into one libzim Searcher
 * (libzim 8.1.1 crashes then).  A Search holds only its query; each call
 * leases a native searcher, runs, gathers a whole page of paths, titles,
 * scores and snippets in one GIL-free call, and builds the Python objects
 * afterwards. */
#include "search.h"
#include "item.h"

#include <limits.h>
#include <math.h>

/* Identifies Search objects to the pool's per-searcher query cache. */
static atomic_ullong next_search_id = 1;

/* Xapian parses every term of a query; a multi-megabyte query is a mistake
 * or an attack, and it would hold a pooled searcher for seconds. */
#define MAX_QUERY_BYTES (64 * 1024)

/* ==== Query ================================================================= */

typedef struct {
    PyObject_HEAD
    PyObject *text;  /* str */
    int geo;
    float latitude, longitude, distance;
} QueryObject;

static int query_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"query", NULL};
    QueryObject *q = (QueryObject *)self;
    PyObject *text = NULL;
    /* Query("words"), once per search: skip the generic parser. */
    if (!kwds && PyTuple_GET_SIZE(args) == 1 && PyUnicode_Check(PyTuple_GET_ITEM(args, 0)))
        text = PyTuple_GET_ITEM(args, 0);
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "|U:Query", kwlist, &text))
        return -1;
    PyObject *value = text ? Py_NewRef(text) : PyUnicode_FromString("");
    if (!value)
        return -1;
    ZC_BEGIN_CS(self);
    Py_XSETREF(q->text, value);
    ZC_END_CS();
    return 0;
}

static PyObject *query_set_query(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text))
        return PyErr_Format(PyExc_TypeError, "query must be str, not %.100s",
                            Py_TYPE(text)->tp_name);
    ZC_BEGIN_CS(self);
    Py_XSETREF(((QueryObject *)self)->text, Py_NewRef(text));
    ZC_END_CS();
    return Py_NewRef(self);
}

static PyObject *query_set_georange(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"latitude", "longitude", "distance", NULL};
    QueryObject *q = (QueryObject *)self;
    double lat, lon, dist;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ddd:set_georange", kwlist, &lat, &lon, &dist))
        return NULL;
    if (!isfinite(lat) || !isfinite(lon) || !isfinite(dist) || lat < -90 || lat > 90 ||
        lon < -180 || lon > 180 || dist < 0)
        return PyErr_Format(PyExc_ValueError,
                            "georange needs -90 <= latitude <= 90, -180 <= longitude <= 180 "
                            "and a finite distance >= 0");
    ZC_BEGIN_CS(self);
    q->geo = 1;
    q->latitude = (float)lat;
    q->longitude = (float)lon;
    q->distance = (float)dist;
    ZC_END_CS();
    return Py_NewRef(self);
}

ZC_KEYWORD_ARG(query_set_query, "set_query", "query")

static PyObject *query_get_text(PyObject *self, void *c) {
    (void)c;
    PyObject *t;
    ZC_BEGIN_CS(self);
    t = Py_XNewRef(((QueryObject *)self)->text);
    ZC_END_CS();
    return t ? t : PyUnicode_FromString("");
}

static PyObject *query_get_georange(PyObject *self, void *c) {
    (void)c;
    QueryObject *q = (QueryObject *)self;
    PyObject *r;
    ZC_BEGIN_CS(self);
    r = q->geo ? Py_BuildValue("(ddd)", (double)q->latitude, (double)q->longitude,
                               (double)q->distance)
               : Py_NewRef(Py_None);
    ZC_END_CS();
    return r;
}

static int query_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((QueryObject *)self)->text);
    return 0;
}

static int query_clear(PyObject *self) {
    Py_CLEAR(((QueryObject *)self)->text);
    return 0;
}

void zc_plain_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    tp->tp_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *query_repr(PyObject *self) {
    /* A reference taken in the section set_query() swaps the text in: the
     * old text may be freed the moment it is swapped out. */
    PyObject *text;
    ZC_BEGIN_CS(self);
    text = Py_XNewRef(((QueryObject *)self)->text);
    ZC_END_CS();
    PyObject *r = PyUnicode_FromFormat("Query(%R)", text ? text : Py_None);
    Py_XDECREF(text);
    return r;
}

static PyMethodDef query_methods[] = {
    {"set_query", ZC_KW_METHOD(query_set_query),
     "set_query($self, /, query)\n--\n\n"
     "Set the query text (a str, parsed as libzim parses it) and return self,\n"
     "so calls chain: Query().set_query('a b')."},
    {"setQuery", ZC_KW_METHOD(query_set_query),
     "setQuery($self, /, query)\n--\n\n"
     "python-libzim 3.x's camelCase alias of set_query(): sets the text,\n"
     "returns self."},
    {"set_georange", (PyCFunction)(void (*)(void))query_set_georange, METH_VARARGS | METH_KEYWORDS,
     "set_georange($self, /, latitude, longitude, distance)\n--\n\n"
     "Restrict matches to a distance in metres around latitude, longitude\n"
     "(degrees) and return self.\n\n"
     "ValueError unless -90 <= latitude <= 90, -180 <= longitude <= 180 and\n"
     "distance is finite and >= 0."},
    {"setGeorange", (PyCFunction)(void (*)(void))query_set_georange, METH_VARARGS | METH_KEYWORDS,
     "setGeorange($self, /, latitude, longitude, distance)\n--\n\n"
     "python-libzim 3.x's camelCase alias of set_georange(): restricts, returns self."},
    ZC_REDUCE_METHOD,
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef query_getset[] = {
    {"query", query_get_text, NULL, "The query text (str) a search will run; '' by default.",
     NULL},
    {"_georange", query_get_georange, NULL, "(latitude, longitude, distance) or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot query_slots[] = {
    {Py_tp_init, query_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, zc_plain_dealloc},
    {Py_tp_traverse, query_traverse},
    {Py_tp_clear, query_clear},
    {Py_tp_methods, query_methods},
    {Py_tp_getset, query_getset},
    {Py_tp_repr, query_repr},
    {Py_tp_doc, "Query(query='')\n--\n\n"
                "A full-text query: text and an optional georange, independent of any\n"
                "archive.\n\n"
                "Pass it (or just the str) to Searcher.search(). The search copies the\n"
                "query, so changing a Query later does not change searches made from it.\n"
                "Setters are atomic, so threads may share one, but a Query is cheap: make\n"
                "one per search. Pickles; subclasses unpickle as Query. python-libzim's\n"
                "libzim.search.Query."},
    {0, NULL},
};

static PyType_Spec query_spec = {
    .name = "libzim.search.Query",
    .basicsize = sizeof(QueryObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = query_slots,
};

/* ==== results ================================================================ */

int zc_result_traverse(PyObject *self, visitproc visit, void *arg) {
    ResultObject *r = (ResultObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(r->path);
    Py_VISIT(r->title);
    Py_VISIT(r->snippet);
    Py_VISIT(r->text);
    Py_VISIT(r->archive);
    return 0;
}

int zc_result_clear(PyObject *self) {
    ResultObject *r = (ResultObject *)self;
    Py_CLEAR(r->path);
    Py_CLEAR(r->title);
    Py_CLEAR(r->snippet);
    Py_CLEAR(r->text);
    Py_CLEAR(r->archive);
    return 0;
}

static PyObject *result_get_entry(PyObject *self, PyObject *noargs) {
    (void)noargs;
    ResultObject *r = (ResultObject *)self;
    zc_state *st = zc_state_of(self);
    if (!r->archive || r->archive == Py_None)
        return PyErr_Format(st->ZimError, "result %R has no known archive", r->path);
    return PyObject_CallMethod(r->archive, "get_entry_by_path", "O", r->path);
}

PyObject *zc_result_repr(PyObject *self) {
    ResultObject *r = (ResultObject *)self;
    if (Py_TYPE(self) == zc_state_of(self)->Result)
        return PyUnicode_FromFormat("%s(path=%R, title=%R, score=%d)", zc_type_name(Py_TYPE(self)),
                                    r->path, r->title, r->score);
    return PyUnicode_FromFormat("%s(path=%R, title=%R)", zc_type_name(Py_TYPE(self)), r->path,
                                r->title);
}

PyObject *zc_result_richcompare(PyObject *self, PyObject *other, int op) {
    if (Py_TYPE(other) != Py_TYPE(self) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    ResultObject *a = (ResultObject *)self, *b = (ResultObject *)other;
    int eq = a->score == b->score && a->word_count == b->word_count && a->archive == b->archive;
    PyObject *pairs[4][2] = {{a->path, b->path}, {a->title, b->title}, {a->snippet, b->snippet},
                             {a->text ? a->text : Py_None, b->text ? b->text : Py_None}};
    for (int i = 0; eq && i < 4; i++) {
        int r = PyObject_RichCompareBool(pairs[i][0], pairs[i][1], Py_EQ);
        if (r < 0)
            return NULL;
        eq = r;
    }
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyMemberDef result_members[] = {
    {"path", T_OBJECT, offsetof(ResultObject, path), READONLY,
     "The matching entry's path (str), as Archive.get_entry_by_path() takes it."},
    {"title", T_OBJECT, offsetof(ResultObject, title), READONLY,
     "The matching entry's title (str), read in the same GIL-free call as the page."},
    {"snippet", T_OBJECT, offsetof(ResultObject, snippet), READONLY,
     "An HTML-escaped extract of the article with the query's words in\n"
     "<b>...</b> and '...' where cut (libzim-c's engine unless\n"
     "snippet_engine='libzim'); '' when snippets were not asked for or the\n"
     "article cannot be read."},
    {"score", T_INT, offsetof(ResultObject, score), READONLY,
     "Relevance in percent (int), as Xapian weighs the hit against the best\n"
     "one of the same search: not comparable between separate searches (or\n"
     "Searchers)."},
    {"word_count", T_INT, offsetof(ResultObject, word_count), READONLY,
     "Words in the article, as the index recorded them (int); -1 when snippets\n"
     "were not asked for (reading it costs as much as the rest of a\n"
     "snippet-less hit)."},
    {"archive", T_OBJECT, offsetof(ResultObject, archive), READONLY,
     "The Archive the hit comes from: one of its Searcher's archives (None\n"
     "only for a result unpickled without one)."},
    {"text", T_OBJECT, offsetof(ResultObject, text), READONLY,
     "The article's text (Item.get_text()) with\n"
     "get_results(include_text=True); None otherwise, and for a hit whose MIME\n"
     "type holds no text or that cannot be read."},
    {NULL, 0, 0, 0, NULL},
};

/* Pickling: every field, suggestions' hidden score and archive included. */
static PyObject *result_state(PyObject *self, void *c) {
    (void)c;
    ResultObject *r = (ResultObject *)self;
    PyObject *archive = r->archive ? r->archive : Py_None;
    if (Py_TYPE(self) != zc_state_of(self)->Result)  /* suggestions have no text */
        return Py_BuildValue("(OOOiiO)", r->path, r->title, r->snippet, r->score, r->word_count,
                             archive);
    return Py_BuildValue("(OOOiiOO)", r->path, r->title, r->snippet, r->score, r->word_count,
                         archive, r->text ? r->text : Py_None);
}

PyGetSetDef zc_result_getset[] = {
    {"_state", result_state, NULL, "(path, title, snippet, score, word_count, archive).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Unpickling: cls._restore(path, title, snippet, score, word_count, archive). */
static PyObject *result_restore(PyObject *cls, PyObject *args) {
    zc_state *st = zc_state_of_type((PyTypeObject *)cls);
    PyObject *path, *title, *snippet, *archive, *text = Py_None;
    int score, word_count;
    if (!PyArg_ParseTuple(args, "UUUiiO|O:_restore", &path, &title, &snippet, &score,
                          &word_count, &archive, &text))
        return NULL;
    if (text != Py_None && !PyUnicode_Check(text))
        return PyErr_Format(PyExc_TypeError, "expected str or None, not %.100s",
                            Py_TYPE(text)->tp_name);
    if (archive != Py_None && !PyObject_TypeCheck(archive, st->Archive))
        return PyErr_Format(PyExc_TypeError, "expected Archive or None, not %.100s",
                            Py_TYPE(archive)->tp_name);
    ResultObject *r = PyObject_GC_New(ResultObject, (PyTypeObject *)cls);
    if (!r)
        return NULL;
    r->path = Py_NewRef(path);
    r->title = Py_NewRef(title);
    r->snippet = Py_NewRef(snippet);
    r->text = text == Py_None ? NULL : Py_NewRef(text);
    r->archive = Py_NewRef(archive);
    r->score = score;
    r->word_count = word_count;
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

PyMethodDef zc_result_methods[] = {
    {"get_entry", result_get_entry, METH_NOARGS,
     "get_entry($self, /)\n--\n\n"
     "Return the Entry at this result's path, looked up in its archive\n"
     "(archive.get_entry_by_path(path)).\n\n"
     "Raises ClosedError if that archive was closed, ZimError if the result\n"
     "has no known archive."},
    {"_restore", result_restore, METH_VARARGS | METH_CLASS, "Unpickling (libzim._pickle)."},
    ZC_REDUCE_METHOD,
    {NULL, NULL, 0, NULL},
};

int zc_set_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((ResultSetObject *)self)->items);
    return 0;
}

int zc_set_clear(PyObject *self) {
    Py_CLEAR(((ResultSetObject *)self)->items);
    return 0;
}

Py_ssize_t zc_set_len(PyObject *self) { return PyTuple_GET_SIZE(((ResultSetObject *)self)->items); }

PyObject *zc_set_iter(PyObject *self) { return PyObject_GetIter(((ResultSetObject *)self)->items); }

PyObject *zc_set_subscript(PyObject *self, PyObject *key) {
    PyObject *r = PyObject_GetItem(((ResultSetObject *)self)->items, key);
    if (r && PySlice_Check(key)) {
        Py_SETREF(r, PySequence_List(r));
    }
    return r;
}

/* Unpickling: cls._restore(tuple of results of the matching type). */
static PyObject *set_restore(PyObject *cls, PyObject *items) {
    zc_state *st = zc_state_of_type((PyTypeObject *)cls);
    PyTypeObject *want = (PyTypeObject *)cls == st->ResultSet ? st->Result : st->SuggestionResult;
    if (!PyTuple_Check(items))
        return PyErr_Format(PyExc_TypeError, "expected a tuple, not %.100s", Py_TYPE(items)->tp_name);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items); i++)
        if (Py_TYPE(PyTuple_GET_ITEM(items, i)) != want)
            return PyErr_Format(PyExc_TypeError, "expected %s items", zc_type_name(want));
    ResultSetObject *set = PyObject_GC_New(ResultSetObject, (PyTypeObject *)cls);
    if (!set)
        return NULL;
    set->items = Py_NewRef(items);
    PyObject_GC_Track(set);
    return (PyObject *)set;
}

PyMethodDef zc_set_methods[] = {
    {"_restore", set_restore, METH_O | METH_CLASS, "Unpickling (libzim._pickle)."},
    ZC_REDUCE_METHOD,
    {NULL, NULL, 0, NULL},
};

PyObject *zc_set_repr(PyObject *self) {
    return PyUnicode_FromFormat("%s(%R)", zc_type_name(Py_TYPE(self)),
                                ((ResultSetObject *)self)->items);
}

/* ==== Searcher ================================================================ */

static void free_searcher(SearcherObject *s) {
    if (s->h) {
        zs_searcher *h = s->h;
        s->h = NULL;
        NOGIL(zs_searcher_free(h));
    }
}

/* archives: an Archive or an iterable of them.  Returns a new list. */
static PyObject *archive_list(zc_state *st, PyObject *archives) {
    if (PyObject_TypeCheck(archives, st->Archive))
        return Py_BuildValue("[O]", archives);
    PyObject *list = PySequence_List(archives);
    if (!list) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "expected an Archive or an iterable of Archives, not %.100s",
                         Py_TYPE(archives)->tp_name);
        }
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *a = PyList_GET_ITEM(list, i);
        if (!PyObject_TypeCheck(a, st->Archive)) {
            PyErr_Format(PyExc_TypeError, "expected Archive, not %.100s", Py_TYPE(a)->tp_name);
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

/* Takes a use of every archive of list; on failure none is held. */
static zs_archive **enter_all(zc_state *st, PyObject *list) {
    Py_ssize_t n = PyList_GET_SIZE(list);
    zs_archive **hs = PyMem_Calloc((size_t)(n ? n : 1), sizeof *hs);
    if (!hs)
        return (zs_archive **)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(hs[i] = zc_archive_enter(st, PyList_GET_ITEM(list, i)))) {
            while (i-- > 0)
                zc_archive_leave(PyList_GET_ITEM(list, i));
            PyMem_Free(hs);
            return NULL;
        }
    }
    return hs;
}

static void leave_all(PyObject *list, zs_archive **hs) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
        zc_archive_leave(PyList_GET_ITEM(list, i));
    PyMem_Free(hs);
}

static int count_indexed(PyObject *list) {
    int n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *v = PyObject_GetAttrString(PyList_GET_ITEM(list, i), "has_fulltext_index");
        if (!v)
            return -1;
        n += v == Py_True;
        Py_DECREF(v);
    }
    return n;
}

/* Names of the archives, for messages about all of them. */
static PyObject *names_of(PyObject *list) {
    PyObject *names = PyList_New(0), *sep = NULL, *r = NULL;
    ZC_BEGIN_CS(list);
    for (Py_ssize_t i = 0; names && i < PyList_GET_SIZE(list); i++)
        if (PyList_Append(names, zc_archive_name(PyList_GET_ITEM(list, i))) < 0)
            Py_CLEAR(names);
    ZC_END_CS();
    if (names && PyList_GET_SIZE(names) == 0)
        r = PyUnicode_FromString("Searcher of no archive");  /* the message still names its subject */
    else if (names && (sep = PyUnicode_FromString(", ")))
        r = PyUnicode_Join(sep, names);
    Py_XDECREF(sep);
    Py_XDECREF(names);
    return r;
}

SearcherObject *zc_searcher_init(PyObject *self, zs_search_kind kind, PyObject *archives) {
    SearcherObject *s = (SearcherObject *)self;
    zc_state *st = zc_state_of(self);
    if (s->h) {
        PyErr_SetString(PyExc_RuntimeError, "searcher already initialised");
        return NULL;
    }
    if (!s->add_lock && !(s->add_lock = PyThread_allocate_lock())) {
        PyErr_NoMemory();
        return NULL;
    }
    PyObject *list = archive_list(st, archives);
    if (!list)
        return NULL;
    int indexed = count_indexed(list);
    zs_archive **hs = indexed < 0 ? NULL : enter_all(st, list);
    if (!hs) {
        Py_DECREF(list);
        return NULL;
    }
    zs_error err;
    zs_searcher *h;
    int rc = 0;
    size_t n = (size_t)PyList_GET_SIZE(list);  /* read with the GIL held */
    Py_BEGIN_ALLOW_THREADS
    h = zs_searcher_new(kind, hs, n, &err);
    /* Open one database now: errors in the index surface here, and the first
     * search costs what the others do. */
    if (h && (kind == ZS_SUGGEST || indexed > 0))
        rc = zs_searcher_prepare(h, &err);
    Py_END_ALLOW_THREADS
    leave_all(list, hs);
    if (!h || rc < 0) {
        if (h)
            NOGIL(zs_searcher_free(h));
        PyObject *names = names_of(list);
        Py_DECREF(list);
        if (names) {
            zc_raise(st, &err, names);
            Py_DECREF(names);
        }
        return NULL;
    }
    s->h = h;
    atomic_store(&s->indexed, indexed);
    Py_XSETREF(s->archives, list);
    return s;
}

static int searcher_init(PyObject *self, PyObject *args, PyObject *kwds) {
    /* python-libzim names it "archive"; it may also be an iterable. */
    static char *kwlist[] = {"archive", NULL};
    PyObject *archives;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Searcher", kwlist, &archives))
        return -1;
    return zc_searcher_init(self, ZS_FULLTEXT, archives) ? 0 : -1;
}

int zc_searcher_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((SearcherObject *)self)->archives);
    return 0;
}

int zc_searcher_clear(PyObject *self) {
    Py_CLEAR(((SearcherObject *)self)->archives);
    return 0;
}

void zc_searcher_dealloc(PyObject *self) {
    SearcherObject *s = (SearcherObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (s->weakreflist)
        PyObject_ClearWeakRefs(self);
    free_searcher(s);
    if (s->add_lock)
        PyThread_free_lock(s->add_lock);
    zc_searcher_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static SearcherObject *ready(PyObject *self) {
    SearcherObject *s = (SearcherObject *)self;
    if (!s->h) {
        zc_raise_closed(zc_state_of(self), "searcher", NULL);
        return NULL;
    }
    return s;
}

static PyObject *searcher_add_archive(PyObject *self, PyObject *archive) {
    SearcherObject *s = ready(self);
    if (!s)
        return NULL;
    zc_state *st = zc_state_of(self);
    zs_archive *a = zc_archive_enter(st, archive);
    if (!a)
        return NULL;
    PyObject *has = PyObject_GetAttrString(archive, "has_fulltext_index");
    if (!has) {
        zc_archive_leave(archive);
        return NULL;
    }
    /* Results name their archive by its position in the pool, so the pool
     * and the list must grow in the same order: one adder at a time.  The
     * list grows first, so that a search racing this call never gets a
     * position the list does not have yet. */
    zs_error err;
    int rc = -1;
    ZC_LOCK(s->add_lock);
    Py_ssize_t n = PyList_Size(s->archives);
    if (PyList_Append(s->archives, archive) == 0) {
        NOGIL(rc = zs_searcher_add_archive(s->h, a, &err));
        if (rc < 0) {
            if (PyList_SetSlice(s->archives, n, n + 1, NULL) == 0)  /* shrinking: no failure */
                zc_raise(st, &err, zc_archive_name(archive));
        } else {
            atomic_fetch_add(&s->indexed, has == Py_True);
        }
    }
    ZC_UNLOCK(s->add_lock);
    zc_archive_leave(archive);
    Py_DECREF(has);
    return rc < 0 ? NULL : Py_NewRef(self);
}

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

static PyObject *searcher_search(PyObject *self, PyObject *query) {
    SearcherObject *s = ready(self);
    if (!s)
        return NULL;
    zc_state *st = zc_state_of(self);
    if (atomic_load(&s->indexed) == 0) {
        PyObject *names = names_of(s->archives);
        if (names) {
            PyErr_Format(st->SearchError, "%U: no full-text index to search", names);
            Py_DECREF(names);
        }
        return NULL;
    }
    if (PyUnicode_Check(query))
        return (PyObject *)zc_search_new(st->Search, s, query, NULL);
    if (!PyObject_TypeCheck(query, st->Query))
        return PyErr_Format(PyExc_TypeError, "query must be Query or str, not %.100s",
                            Py_TYPE(query)->tp_name);
    QueryObject *q = (QueryObject *)query;
    zs_query geo = {0};
    PyObject *text;
    ZC_BEGIN_CS(query);
    geo.geo = q->geo;
    geo.latitude = q->latitude;
    geo.longitude = q->longitude;
    geo.distance = q->distance;
    text = Py_XNewRef(q->text);
    ZC_END_CS();
    if (!text && !(text = PyUnicode_FromString("")))
        return NULL;
    PyObject *r = (PyObject *)zc_search_new(st->Search, s, text, &geo);
    Py_DECREF(text);
    return r;
}

ZC_KEYWORD_ARG(searcher_add_archive, "add_archive", "archive")
ZC_KEYWORD_ARG(searcher_search, "search", "query")

static PyObject *searcher_archives(PyObject *self, void *c) {
    (void)c;
    PyObject *a = ((SearcherObject *)self)->archives;
    if (!a)
        return PyTuple_New(0);
    /* Not PyList_AsTuple(): it takes the list's item array and then
     * allocates the tuple, and an allocation can run the garbage collector,
     * whose finalizers may release the GIL (a __del__ that sleeps, a
     * dealloc that closes a file) and let add_archive() grow, and so move,
     * that array: the copy read freed memory.  Allocate first; check and
     * copy with no allocation in between. */
    for (;;) {
        Py_ssize_t n = PyList_Size(a);
        PyObject *t = PyTuple_New(n);
        if (!t)
            return NULL;
        int same;
        ZC_BEGIN_CS(a);
        same = PyList_GET_SIZE(a) == n;
        for (Py_ssize_t i = 0; same && i < n; i++)
            PyTuple_SET_ITEM(t, i, Py_NewRef(PyList_GET_ITEM(a, i)));
        ZC_END_CS();
        if (same)
            return t;
        Py_DECREF(t);  /* still all NULL */
    }
}

static PyObject *searcher_pool_size(PyObject *self, void *c) {
    (void)c;
    SearcherObject *s = ready(self);
    size_t n = 0;
    if (!s)
        return NULL;
    NOGIL(n = zs_searcher_pool_size(s->h));
    return PyLong_FromSize_t(n);
}

PyGetSetDef zc_searcher_getset[] = {
    {"archives", searcher_archives, NULL,
     "The archives searched, as a tuple, in the order given and added (a\n"
     "result's archive is one of them).", NULL},
    {"_pool_size", searcher_pool_size, NULL, "Native searchers created so far.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef searcher_methods[] = {
    ZC_REDUCE_METHOD,
    {"add_archive", ZC_KW_METHOD(searcher_add_archive),
     "add_archive($self, /, archive)\n--\n\n"
     "Search this Archive too, from the next search on, and return self.\n\n"
     "Calls from several threads are serialised (a per-Searcher lock), so\n"
     "archives and the pool of native searchers grow in the same order. Raises\n"
     "ClosedError for a closed archive; the GIL is released while libzim adds\n"
     "it."},
    {"addArchive", ZC_KW_METHOD(searcher_add_archive),
     "addArchive($self, /, archive)\n--\n\n"
     "python-libzim 3.x's camelCase alias of add_archive(): adds, returns self."},
    {"search", ZC_KW_METHOD(searcher_search),
     "search($self, /, query)\n--\n\n"
     "Return a Search for query, a Query or a str, over every archive of the\n"
     "searcher.\n\n"
     "Cheap: nothing runs until get_estimated_matches() or get_results().\n"
     "Raises SearchError if no archive has a full-text index, ValueError for a\n"
     "query over 64 KiB of UTF-8, TypeError for anything but a Query or a str."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef searcher_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(SearcherObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot searcher_slots[] = {
    {Py_tp_init, searcher_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, zc_searcher_dealloc},
    {Py_tp_traverse, zc_searcher_traverse},
    {Py_tp_clear, zc_searcher_clear},
    {Py_tp_methods, searcher_methods},
    {Py_tp_getset, zc_searcher_getset},
    {Py_tp_members, searcher_members},
    {Py_tp_doc, "Searcher(archive)\n--\n\n"
                "Full-text search over one Archive or an iterable of them (one Xapian\n"
                "query over their combined indexes).\n\n"
                "Construction opens an index database with the GIL released, so a broken\n"
                "index raises (SearchError, ArchiveError) here. Share one Searcher\n"
                "between all threads: it is a pool of native searchers, each call leasing\n"
                "one for its duration (libzim 8.1.1 crashes when two threads use one),\n"
                "creating another when all are busy, up to the number of cores (at least\n"
                "2; LIBZIM_C_SEARCHER_POOL overrides), and waiting without the GIL beyond\n"
                "that. Pickles as its archives. python-libzim's libzim.search.Searcher;\n"
                "an iterable of archives is an addition."},
    {0, NULL},
};

static PyType_Spec searcher_spec = {
    .name = "libzim.search.Searcher",
    .basicsize = sizeof(SearcherObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = searcher_slots,
};

/* ==== Search ======================================================================= */

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
    return ready((PyObject *)self->searcher);
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
        PyObject *names = names_of(owner->archives);
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
        PyObject *names = names_of(owner->archives);
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

/* Pickling: (searcher, query text, (latitude, longitude, distance) or None). */
static PyObject *search_state(PyObject *self, void *c) {
    (void)c;
    SearchObject *s = (SearchObject *)self;
    PyObject *text = zc_str((zs_str){s->q.text, s->q.len});
    if (!text)
        return NULL;
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

/* ==== result types (suggestion.c makes its own from the same slots) ================= */

static PyType_Slot result_slots[] = {ZC_RESULT_SLOTS(result_members,
    "One full-text match: path, title, snippet, score, word_count, archive\n"
    "and text.\n\n"
    "Made by Search.get_results(), never by a call. Immutable (read-only\n"
    "attributes) and safe to share; compares equal field by field;\n"
    "unhashable. Pickles as its fields and its archive. Not in python-libzim,\n"
    "whose get_results() yields paths.")};
static PyType_Slot set_slots[] = {ZC_SET_SLOTS(
    "A page of SearchResult objects, from Search.get_results().\n\n"
    "Iterable, sized (len()) and indexable (set[i]; a slice gives a list). An\n"
    "immutable tuple inside: iterate it from any number of threads. Pickles,\n"
    "its archives once.")};

static PyType_Spec result_spec = {"libzim.search.SearchResult", sizeof(ResultObject), 0, ZC_RESULT_FLAGS, result_slots};
static PyType_Spec set_spec = {"libzim.search.SearchResultSet", sizeof(ResultSetObject), 0, ZC_RESULT_FLAGS, set_slots};

int zc_search_init_types(PyObject *m, zc_state *st) {
    if (zc_add_type(m, &st->Query, &query_spec, 1) < 0 || zc_add_type(m, &st->Result, &result_spec, 1) < 0 ||
        zc_add_type(m, &st->ResultSet, &set_spec, 1) < 0 || zc_add_type(m, &st->Search, &search_spec, 1) < 0 ||
        zc_add_type(m, &st->Searcher, &searcher_spec, 1) < 0)
        return -1;
    return 0;
}
