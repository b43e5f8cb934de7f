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

/* The names of zs_suggest_mode, by value. */
const char *const zc_suggest_modes[] = {"index", "titles", "auto", NULL};

static int suggest_mode(PyObject *arg, int *mode) {
    if (!arg)
        return 0;
    if (PyUnicode_Check(arg))
        for (int i = 0; zc_suggest_modes[i]; i++)
            if (PyUnicode_CompareWithASCIIString(arg, zc_suggest_modes[i]) == 0) {
                *mode = i;
                return 0;
            }
    PyErr_Format(PyExc_ValueError, "mode must be 'index', 'titles' or 'auto', not %.100R", arg);
    return -1;
}

static PyObject *sugg_suggest(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    static const char *const names[] = {"query", "mode"};
    PyObject *a[2];
    int mode = ZS_SUGGEST_INDEX;
    if (zc_args("suggest", args, nargs, kwnames, names, 2, 1, 1, a) < 0 || suggest_mode(a[1], &mode) < 0)
        return NULL;
    SearcherObject *s = (SearcherObject *)self;
    zc_state *st = zc_state_of(self);
    if (!s->h)
        return zc_raise_closed(st, "suggestion searcher", NULL);
    SearchObject *r = zc_search_new(st->SuggestionSearch, s, a[0], NULL);
    if (r)
        r->q.suggest_mode = mode;
    return (PyObject *)r;
}

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
    {"suggest", (PyCFunction)(void (*)(void))sugg_suggest, METH_FASTCALL | METH_KEYWORDS,
     "suggest($self, /, query, *, mode='index')\n--\n\n"
     "Return a SuggestionSearch for the str query (the start of a title, or\n"
     "words of it).\n\n"
     "mode 'index' (python-libzim's results): libzim's title index, which\n"
     "matches titles holding words that start as the query's do, ranked; its\n"
     "cost grows with the titles matched (~85 ms for one letter at 5 million\n"
     "entries). 'titles': type-ahead, the titles that start with the query as\n"
     "typed, capitalised, title-cased, lower or upper case (those spellings in\n"
     "turn, each in title order), by binary search of the title listing: well\n"
     "under a millisecond at any size. 'auto': 'titles' when at least 100\n"
     "titles start with the query (the prefixes that make the index slow),\n"
     "else 'index'.\n\n"
     "Cheap: nothing runs until get_estimated_matches() or get_results().\n"
     "ValueError for a query over 64 KiB of UTF-8 or an unknown mode."},
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
    {Py_tp_doc, "SuggestionSearcher(archive)\n--\n\n"
                "Title suggestions for one Archive: its Xapian title index, or title\n"
                "prefixes when the archive has none.\n\n"
                "Construction opens the title index with the GIL released, so a broken\n"
                "index raises here. Share one between threads: like Searcher it is a pool\n"
                "of native suggestion searchers, one leased per call (libzim 8.1.1 has\n"
                "the same one-thread limit), grown on demand up to the number of cores.\n"
                "Pickles as its archive. python-libzim's\n"
                "libzim.suggestion.SuggestionSearcher."},
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
     "get_estimated_matches($self, /)\n--\n\n"
     "Return the estimated number of suggestions (an int).\n\nRuns with the GIL "
     "released on a pooled native searcher."},
    {"getEstimatedMatches", zc_search_estimate_meth, METH_NOARGS,
     "getEstimatedMatches($self, /)\n--\n\n"
     "python-libzim 3.x's camelCase alias of get_estimated_matches()."},
    {"get_results", (PyCFunction)(void (*)(void))sugg_get_results, METH_FASTCALL | METH_KEYWORDS,
     "get_results($self, /, start, count)\n--\n\n"
     "Return a SuggestionResultSet of the suggestions start .. start+count-1\n"
     "(fewer past the end).\n\n"
     "The page (paths, titles, snippets) is gathered in one call with the GIL\n"
     "released, from any thread. ValueError for a negative start or count."},
    {"getResults", (PyCFunction)(void (*)(void))zc_search_get_paths, METH_FASTCALL | METH_KEYWORDS,
     "getResults($self, /, start, count)\n--\n\n"
     "python-libzim 3.x's API: return an iterator over the paths (str) of the\n"
     "suggestions start .. start+count-1."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot sugg_search_slots[] = {
    {Py_tp_dealloc, zc_searchobj_dealloc},
    {Py_tp_traverse, zc_searchobj_traverse},
    {Py_tp_clear, zc_searchobj_clear},
    {Py_tp_methods, sugg_search_methods},
    {Py_tp_getset, zc_search_getset},
    {Py_tp_repr, zc_search_repr},
    {Py_tp_doc, "A suggestion query bound to a SuggestionSearcher, from suggest().\n\n"
                "Holds only the query text; each call runs it on a pooled native\n"
                "searcher, so any thread may page it. Immutable; pickles. python-libzim's\n"
                "libzim.suggestion.SuggestionSearch."},
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
    {"path", T_OBJECT, offsetof(ResultObject, path), READONLY,
     "The suggested entry's path (str), as Archive.get_entry_by_path() takes it."},
    {"title", T_OBJECT, offsetof(ResultObject, title), READONLY,
     "The suggested entry's title (str): what to show the user."},
    {"snippet", T_OBJECT, offsetof(ResultObject, snippet), READONLY,
     "libzim's snippet for the suggestion (str): the title with the matched\n"
     "words in <b></b> when it comes from the title index."},
    {NULL, 0, 0, 0, NULL},
};
static PyType_Slot sugg_result_slots[] = {ZC_RESULT_SLOTS(sugg_result_members,
    "One title suggestion: path, title and snippet.\n\n"
    "Made by SuggestionSearch.get_results(), never by a call. Immutable and\n"
    "safe to share; compares equal field by field; pickles. Not in\n"
    "python-libzim, whose suggestion results are paths (getResults() still\n"
    "yields those).")};
static PyType_Slot sugg_set_slots[] = {ZC_SET_SLOTS(
    "A page of SuggestionResult objects, from SuggestionSearch.get_results().\n\n"
    "Iterable, sized (len()) and indexable (a slice gives a list); immutable,\n"
    "so threads may share it. Pickles.")};

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
