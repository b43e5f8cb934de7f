/* Module state of libzim._libzim: the types and exceptions every family
 * reaches through zc_state_of().  Helpers live in util.h. */
#ifndef LIBZIM_C_MODULE_H
#define LIBZIM_C_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    /* reader */
    PyTypeObject *Archive, *Entry, *Item, *Blob, *EntryIterator;
    /* search */
    PyTypeObject *Query, *Searcher, *Search, *ResultSet, *Result;
    /* suggestion */
    PyTypeObject *SuggestionSearcher, *SuggestionSearch, *SuggestionResultSet,
        *SuggestionResult;
    /* writer; WriterItem and WriterHint are libzim.writer's Python classes */
    PyTypeObject *Creator, *WriterBlob;
    /* the server's catalog index (catalog.c) */
    PyTypeObject *CatalogIndex;
    PyObject *WriterItem, *WriterHint;
    /* exception tree, built once at module init */
    PyObject *ZimError, *ArchiveError, *EntryNotFoundError, *InvalidIndexError,
        *ClosedError, *SearchError, *NotSupportedError, *WriterError;
    /* imported lazily, kept for the module's lifetime */
    PyObject *uuid_UUID, *pathlib_Path;
} zc_state;

extern PyModuleDef zc_module_def;

/* Module state from any of our instances, subclasses included. */
static inline zc_state *zc_state_of(PyObject *self) {
    PyObject *m = PyType_GetModuleByDef(Py_TYPE(self), &zc_module_def);
    return m ? (zc_state *)PyModule_GetState(m) : NULL;
}
static inline zc_state *zc_state_of_type(PyTypeObject *tp) {
    PyObject *m = PyType_GetModuleByDef(tp, &zc_module_def);
    return m ? (zc_state *)PyModule_GetState(m) : NULL;
}

#endif
