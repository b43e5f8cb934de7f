/* Search: a query bound to a searcher, paged into results; with searcher.h
 * and result.h, what the suggestion family shares with full-text search. */
#ifndef LIBZIM_C_SEARCH_H
#define LIBZIM_C_SEARCH_H

#include "result.h"
#include "searcher.h"

/* A query bound to a searcher.  Immutable, so any thread may page it. */
typedef struct {
    PyObject_HEAD
    SearcherObject *searcher;
    PyObject *text;      /* str; q.text is its UTF-8 */
    zs_query q;          /* q.text points into text */
} SearchObject;

extern PyGetSetDef zc_search_getset[];  /* _state, for pickling */
extern const char *const zc_suggest_modes[];  /* zs_suggest_mode's names (suggestion.c) */

SearchObject *zc_search_new(PyTypeObject *tp, SearcherObject *searcher, PyObject *text,
                            const zs_query *geo);
int zc_searchobj_traverse(PyObject *self, visitproc visit, void *arg);
int zc_searchobj_clear(PyObject *self);
void zc_searchobj_dealloc(PyObject *self);
PyObject *zc_search_estimate_meth(PyObject *self, PyObject *noargs);
PyObject *zc_search_repr(PyObject *self);
/* One page: a result set of result_type (flags: ZS_WANT_*; text_max_chars
 * with ZS_WANT_TEXT, SIZE_MAX for no limit), or with as_paths an iterator
 * over path strings (the 3.x API). */
PyObject *zc_search_page(SearchObject *self, PyTypeObject *set_type, PyTypeObject *result_type,
                         PyObject *const *start_count, unsigned flags, size_t text_max_chars,
                         int as_paths);
/* getResults(start, count): the 3.x API, paths only; both families. */
PyObject *zc_search_get_paths(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

/* Adds Search to the module. */
int zc_search_init_types(PyObject *m, zc_state *st);

#endif
