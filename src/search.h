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
    PyThread_type_lock add_lock;  /* one add_archive() at a time */
    PyObject *weakreflist;
} SearcherObject;

/* A query bound to a searcher.  Immutable, so any thread may page it. */
typedef struct {
    PyObject_HEAD
    SearcherObject *searcher;
    PyObject *text;      /* str; q.text is its UTF-8 */
    zs_query q;          /* q.text points into text */
} SearchObject;

/* SearchResult and SuggestionResult share this layout. */
typedef struct {
    PyObject_HEAD
    PyObject *path, *title, *snippet, *archive;
    PyObject *text;  /* NULL (None) unless get_results(include_text=True) gave it */
    int score, word_count;
} ResultObject;

/* Result sets are immutable tuples underneath: any thread may read them. */
typedef struct {
    PyObject_HEAD
    PyObject *items;  /* tuple */
} ResultSetObject;

/* The slots both families' result and result-set types are made of (search.c);
 * each family adds its members and doc. */
void zc_plain_dealloc(PyObject *self);
int zc_result_traverse(PyObject *self, visitproc visit, void *arg);
int zc_result_clear(PyObject *self);
PyObject *zc_result_repr(PyObject *self);
PyObject *zc_result_richcompare(PyObject *self, PyObject *other, int op);
extern PyMethodDef zc_result_methods[];
extern PyGetSetDef zc_result_getset[];
int zc_set_traverse(PyObject *self, visitproc visit, void *arg);
int zc_set_clear(PyObject *self);
Py_ssize_t zc_set_len(PyObject *self);
PyObject *zc_set_iter(PyObject *self);
PyObject *zc_set_subscript(PyObject *self, PyObject *key);
PyObject *zc_set_repr(PyObject *self);
extern PyMethodDef zc_set_methods[];

#define ZC_RESULT_SLOTS(members, doc)                   \
    {Py_tp_dealloc, zc_plain_dealloc},                  \
    {Py_tp_traverse, zc_result_traverse},               \
    {Py_tp_clear, zc_result_clear},                     \
    {Py_tp_members, members},                           \
    {Py_tp_methods, zc_result_methods},                 \
    {Py_tp_getset, zc_result_getset},                   \
    {Py_tp_repr, zc_result_repr},                       \
    {Py_tp_richcompare, zc_result_richcompare},         \
    {Py_tp_hash, PyObject_HashNotImplemented},          \
    {Py_tp_doc, doc},                                   \
    {0, NULL}

#define ZC_SET_SLOTS(doc)                               \
    {Py_tp_dealloc, zc_plain_dealloc},                  \
    {Py_tp_traverse, zc_set_traverse},                  \
    {Py_tp_clear, zc_set_clear},                        \
    {Py_tp_iter, zc_set_iter},                          \
    {Py_mp_subscript, zc_set_subscript},                \
    {Py_mp_length, zc_set_len},                         \
    {Py_sq_length, zc_set_len},                         \
    {Py_tp_repr, zc_set_repr},                          \
    {Py_tp_methods, zc_set_methods},                    \
    {Py_tp_doc, doc},                                   \
    {0, NULL}

#define ZC_RESULT_FLAGS (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | \
                         Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE)

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
/* One page: a result set of result_type (flags: ZS_WANT_*; text_max_chars
 * with ZS_WANT_TEXT, SIZE_MAX for no limit), or with as_paths an iterator
 * over path strings (the 3.x API). */
PyObject *zc_search_page(SearchObject *self, PyTypeObject *set_type, PyTypeObject *result_type,
                         PyObject *const *start_count, unsigned flags, size_t text_max_chars,
                         int as_paths);
/* getResults(start, count): the 3.x API, paths only; both families. */
PyObject *zc_search_get_paths(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

/* Adds Query, Searcher, Search, SearchResultSet and SearchResult to the module. */
int zc_search_init_types(PyObject *m, zc_state *st);

#endif
