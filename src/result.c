/* Full-text search: SearchResult and SearchResultSet, the immutable page
 * Search.get_results() builds (search.c), and the slots the suggestion
 * family's result types share (result.h). */
#include "result.h"

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

/* ==== the types (suggestion.c makes its own from the same slots) ================= */

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

int zc_result_init_types(PyObject *m, zc_state *st) {
    if (zc_add_type(m, &st->Result, &result_spec, 1) < 0 || zc_add_type(m, &st->ResultSet, &set_spec, 1) < 0)
        return -1;
    return 0;
}
