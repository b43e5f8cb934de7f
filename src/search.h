/* Full-text search (Query, Searcher, Search, SearchResultSet, SearchResult)
 * and what the suggestion family shares with it. */
#ifndef LIBZIM_C_SEARCH_H
#define LIBZIM_C_SEARCH_H

#include "archive.h"

#include <structmember.h>

/* The Python face of a zs_searcher pool: safe to share between threads
 * because the pool leases one native searcher per call. */
typedef struct {
    PyObject_HEAD
    zs_searcher *h;
    PyObject *archives;  /* list of Archive, in the pool's order */
    atomic_int indexed;  /* how many archives have a full-text index */
    PyObject *weakreflist;
} SearcherObject;

/* A query bound to a searcher.  Immutable, so any thread may page it. */
typedef struct {
    PyObject_HEAD
    SearcherObject *searcher;
    PyObject *text;      /* bytes, UTF-8 */
    zs_query q;          /* q.text points into text */
} SearchObject;

/* SearchResult and SuggestionResult share this layout. */
typedef struct {
    PyObject_HEAD
    PyObject *path, *title, *snippet, *archive;
    int score, word_count;
} ResultObject;

SearcherObject *zc_searcher_init(PyObject *self, zs_search_kind kind, PyObject *archives);
int zc_searcher_traverse(PyObject *self, visitproc visit, void *arg);
int zc_searcher_clear(PyObject *self);
void zc_searcher_dealloc(PyObject *self);
extern PyGetSetDef zc_searcher_getset[];
extern PyGetSetDef zc_search_getset[];  /* _state, for pickling */

SearchObject *zc_search_new(PyTypeObject *tp, SearcherObject *searcher, PyObject *text,
                            const zs_query *geo);
int zc_searchobj_traverse(PyObject *self, visitproc visit, void *arg);
int zc_searchobj_clear(PyObject *self);
void zc_searchobj_dealloc(PyObject *self);
PyObject *zc_search_estimate_meth(PyObject *self, PyObject *noargs);
PyObject *zc_search_repr(PyObject *self);
/* One page: a result set of result_type (flags: ZS_WANT_*), or with as_paths
 * an iterator over path strings (the 3.x API). */
PyObject *zc_search_page(SearchObject *self, PyTypeObject *set_type, PyTypeObject *result_type,
                         PyObject *const *start_count, unsigned flags, int as_paths);
/* getResults(start, count): the 3.x API, paths only; both families. */
PyObject *zc_search_get_paths(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

#endif
