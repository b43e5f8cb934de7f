/* Title suggestions: SuggestionSearcher, SuggestionSearch and their results.
 *
 * The same pool, page gathering and result layout as full-text search
 * (search.c), over libzim's SuggestionSearcher, which has the same
 * one-thread-at-a-time limit in libzim 8.1.1. */
#include "suggestion.h"

static int sugg_searcher_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"archive", NULL};
    PyObject *archive;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:SuggestionSearcher", kwlist, &archive))
        return -1;
    zc_state *st = zc_state_of(self);
    if (!PyObject_TypeCheck(archive, st->Archive)) {
        PyErr_Format(PyExc_TypeError, "expected Archive, not %.100s", Py_TYPE(archive)->tp_name);
        return -1;
    }
    return zc_searcher_init(self, ZS_SUGGEST, archive) ? 0 : -1;
}

static PyObject *sugg_suggest(PyObject *self, PyObject *text) {
    SearcherObject *s = (SearcherObject *)self;
    zc_state *st = zc_state_of(self);
    if (!s->h)
        return zc_raise_closed(st, "suggestion searcher", NULL);
    return (PyObject *)zc_search_new(st->SuggestionSearch, s, text, NULL);
}

ZC_KEYWORD_ARG(sugg_suggest, "suggest", "query")

static PyObject *sugg_get_results(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    static const char *const names[] = {"start", "count"};
    PyObject *a[2];
    if (zc_args("get_results", args, nargs, kwnames, names, 2, 2, 2, a) < 0)
        return NULL;
    zc_state *st = zc_state_of(self);
    return zc_search_page((SearchObject *)self, st->SuggestionResultSet, st->SuggestionResult, a,
                          ZS_WANT_TITLE | ZS_WANT_SNIPPET, SIZE_MAX, 0);
}

static PyMethodDef sugg_searcher_methods[] = {
    ZC_REDUCE_METHOD,
    {"suggest", ZC_KW_METHOD(sugg_suggest),
     "suggest($self, /, query)\n--\n\nA SuggestionSearch for this text."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef sugg_searcher_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(SearcherObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot sugg_searcher_slots[] = {
    {Py_tp_init, sugg_searcher_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, zc_searcher_dealloc},
    {Py_tp_traverse, zc_searcher_traverse},
    {Py_tp_clear, zc_searcher_clear},
    {Py_tp_methods, sugg_searcher_methods},
    {Py_tp_getset, zc_searcher_getset},
    {Py_tp_members, sugg_searcher_members},
    {Py_tp_doc, "SuggestionSearcher(archive)\n--\n\nTitle suggestions (the title index, or "
                "title prefixes when the archive has none). Safe to share between threads."},
    {0, NULL},
};

static PyType_Spec sugg_searcher_spec = {
    .name = "libzim.suggestion.SuggestionSearcher",
    .basicsize = sizeof(SearcherObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = sugg_searcher_slots,
};

static PyMethodDef sugg_search_methods[] = {
    ZC_REDUCE_METHOD,
    {"get_estimated_matches", zc_search_estimate_meth, METH_NOARGS,
     "get_estimated_matches($self, /)\n--\n\nEstimated number of matches."},
    {"getEstimatedMatches", zc_search_estimate_meth, METH_NOARGS,
     "getEstimatedMatches($self, /)\n--\n\n3.x alias of get_estimated_matches."},
    {"get_results", (PyCFunction)(void (*)(void))sugg_get_results, METH_FASTCALL | METH_KEYWORDS,
     "get_results($self, /, start, count)\n--\n\nA SuggestionResultSet of suggestions "
     "start..start+count."},
    {"getResults", (PyCFunction)(void (*)(void))zc_search_get_paths, METH_FASTCALL | METH_KEYWORDS,
     "getResults($self, /, start, count)\n--\n\n"
     "3.x API: an iterator over the paths of suggestions start..start+count."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot sugg_search_slots[] = {
    {Py_tp_dealloc, zc_searchobj_dealloc},
    {Py_tp_traverse, zc_searchobj_traverse},
    {Py_tp_clear, zc_searchobj_clear},
    {Py_tp_methods, sugg_search_methods},
    {Py_tp_getset, zc_search_getset},
    {Py_tp_repr, zc_search_repr},
    {Py_tp_doc, "A suggestion query bound to a SuggestionSearcher; safe to share."},
    {0, NULL},
};

static PyType_Spec sugg_search_spec = {
    .name = "libzim.suggestion.SuggestionSearch",
    .basicsize = sizeof(SearchObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = sugg_search_slots,
};

/* Suggestions have no score, word count or archive choice: the first three
 * members only. */
static PyMemberDef sugg_result_members[] = {
    {"path", T_OBJECT, offsetof(ResultObject, path), READONLY, "Entry path."},
    {"title", T_OBJECT, offsetof(ResultObject, title), READONLY, "Entry title."},
    {"snippet", T_OBJECT, offsetof(ResultObject, snippet), READONLY,
     "The title with the matched words in <b></b>."},
    {NULL, 0, 0, 0, NULL},
};
static PyType_Slot sugg_result_slots[] = {ZC_RESULT_SLOTS(sugg_result_members, "One title suggestion.")};
static PyType_Slot sugg_set_slots[] = {ZC_SET_SLOTS("A page of SuggestionResult.")};

static PyType_Spec sugg_result_spec = {"libzim.suggestion.SuggestionResult", sizeof(ResultObject), 0,
                                       ZC_RESULT_FLAGS, sugg_result_slots};
static PyType_Spec sugg_set_spec = {"libzim.suggestion.SuggestionResultSet", sizeof(ResultSetObject), 0,
                                    ZC_RESULT_FLAGS, sugg_set_slots};

int zc_suggestion_init_types(PyObject *m, zc_state *st) {
    if (zc_add_type(m, &st->SuggestionSearcher, &sugg_searcher_spec, 1) < 0 ||
        zc_add_type(m, &st->SuggestionSearch, &sugg_search_spec, 1) < 0 ||
        zc_add_type(m, &st->SuggestionResult, &sugg_result_spec, 1) < 0 ||
        zc_add_type(m, &st->SuggestionResultSet, &sugg_set_spec, 1) < 0)
        return -1;
    return 0;
}
