/* Searcher: a pool of native full-text searchers over one or more archives;
 * the suggestion family's searcher is made of the same parts. */
#ifndef LIBZIM_C_SEARCHER_H
#define LIBZIM_C_SEARCHER_H

#include "archive.h"

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

SearcherObject *zc_searcher_init(PyObject *self, zs_search_kind kind, PyObject *archives);
int zc_searcher_traverse(PyObject *self, visitproc visit, void *arg);
int zc_searcher_clear(PyObject *self);
void zc_searcher_dealloc(PyObject *self);
extern PyGetSetDef zc_searcher_getset[];

/* The searcher, or NULL with ClosedError once closed (every call and page). */
static inline SearcherObject *zc_searcher_ready(PyObject *self) {
    SearcherObject *s = (SearcherObject *)self;
    if (!s->h) {
        zc_raise_closed(zc_state_of(self), "searcher", NULL);
        return NULL;
    }
    return s;
}

/* Names of the archives of list, for messages about all of them. */
PyObject *zc_searcher_names(PyObject *list);

/* Adds Searcher to the module. */
int zc_searcher_init_types(PyObject *m, zc_state *st);

#endif
