/* Writing archives: what the writer's files share.  writer_blob.c (Blob, the
 * bytes feed() returns), writer_callbacks.c (what libzim's writer threads run)
 * and creator.c (_Creator); libzim.writer builds the rest in Python. */
#ifndef LIBZIM_C_WRITER_H
#define LIBZIM_C_WRITER_H

#include "util.h"

#include <pthread.h>

/* The writer's Blob: bytes libzim reads in place. */
typedef struct {
    PyObject_HEAD
    PyObject *ref;  /* bytes */
} BlobObject;

enum { NOT_STARTED = 0, STARTED = 1, ENDED = 2 };

/* What the callbacks need: shared by the Python object and the shim, which
 * may still run callbacks after the object is gone (refs counts both). */
typedef struct {
    zc_state *st;
    atomic_int refs;
    pthread_mutex_t mutex;     /* for pending, without relying on the GIL */
    PyObject *pending;         /* first exception a callback raised */
} WriterCtx;

/* Newer CPython API the writer uses, for the versions before it. */
#if PY_VERSION_HEX < 0x030C0000
static inline PyObject *PyErr_GetRaisedException(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    if (!t)
        return NULL;
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb)
        PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    return v;
}

static inline void PyErr_SetRaisedException(PyObject *exc) {
    if (!exc)
        return;
    PyErr_Restore(Py_NewRef(Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
}
#endif

#if PY_VERSION_HEX < 0x030D0000
static inline int PyObject_GetOptionalAttrString(PyObject *obj, const char *name, PyObject **out) {
    *out = PyObject_GetAttrString(obj, name);
    if (*out)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}
#endif

static inline PyObject *call0(PyObject *obj, const char *name) {
    return PyObject_CallMethod(obj, name, NULL);
}

/* An unsigned integer argument or callback result, converted as Cython's
 * int parameters convert it (creator.c); -1 with an exception. */
int zc_writer_get_uint(PyObject *v, uint64_t max, uint64_t *out, const char *name);

/* The callbacks zs_creator_new() takes (writer_callbacks.c); each takes the GIL. */
extern const zs_writer_callbacks zc_writer_callbacks;
/* Makes the thread-state key the callbacks pin libzim's threads with, once;
 * -1 with OSError set. */
int zc_writer_callbacks_init(void);
/* With the GIL: the item's content provider (a new reference) and its size,
 * checked as python-libzim checks them; -1 with an exception. */
int zc_writer_item_provider(PyObject *item, void **provider, uint64_t *size);
/* Keeps the first exception of a creation (the current one) in w. */
void zc_writer_keep_error(WriterCtx *w);
/* The kept exception (a new reference) or NULL; w keeps none after. */
PyObject *zc_writer_take_pending(WriterCtx *w);
/* Drops a reference to w, freeing it with the last; with the GIL. */
void zc_writer_ctx_unref(WriterCtx *w);

/* Adds the writer's Blob (as _WriterBlob) to the module. */
int zc_writer_blob_init_types(PyObject *m, zc_state *st);
/* Adds _Creator and _writer_register to the module. */
int zc_creator_init_types(PyObject *m, zc_state *st);

#endif
