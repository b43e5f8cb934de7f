/* SearchResult and SearchResultSet, and the slots the suggestion family's
 * result types are made of too. */
#ifndef LIBZIM_C_RESULT_H
#define LIBZIM_C_RESULT_H

#include "util.h"

#include <structmember.h>

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

/* The slots both families' result and result-set types are made of (result.c);
 * each family adds its members and doc. */
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

/* Adds SearchResult and SearchResultSet to the module. */
int zc_result_init_types(PyObject *m, zc_state *st);

#endif
