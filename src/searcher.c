/* Full-text search: Searcher.
 *
 * The searcher is a pool of native searchers (zimshim.h), so one Python
 * Searcher shared by every thread of a pool runs as many searches at once as
 * there are threads, and never lets two threads into one libzim Searcher
 * (libzim 8.1.1 crashes then).  Searcher.search() makes a Search (search.c). */
#include "searcher.h"
#include "query.h"
#include "search.h"

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


/* Also for Search's messages (search.c). */
PyObject *zc_searcher_names(PyObject *list) {
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
        PyObject *names = zc_searcher_names(list);
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


static PyObject *searcher_add_archive(PyObject *self, PyObject *archive) {
    SearcherObject *s = zc_searcher_ready(self);
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


static PyObject *searcher_search(PyObject *self, PyObject *query) {
    SearcherObject *s = zc_searcher_ready(self);
    if (!s)
        return NULL;
    zc_state *st = zc_state_of(self);
    if (atomic_load(&s->indexed) == 0) {
        PyObject *names = zc_searcher_names(s->archives);
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
    SearcherObject *s = zc_searcher_ready(self);
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

int zc_searcher_init_types(PyObject *m, zc_state *st) {
    return zc_add_type(m, &st->Searcher, &searcher_spec, 1);
}
