/* Writing archives: the callbacks libzim runs on the creating thread and on
 * its worker threads while the creating thread waits in libzim with the GIL
 * released (any thread, without the GIL).  They call the methods of
 * libzim/writer.py's Item, ContentProvider and IndexData, as python-libzim
 * does, and each takes the GIL for the Python calls only. */
#include "writer.h"

#include <errno.h>

/* The GIL for a callback.  libzim's worker threads are not Python threads:
 * PyGILState_Ensure would make and free a thread state (and its frame
 * stack, an mmap) at every call, which made finishing an archive twice as
 * slow as libzim alone.  So the first callback on such a thread keeps a
 * thread state for the thread's life, and a pthread key's destructor frees
 * it when libzim ends the thread (while freeing the creator, without the
 * GIL). */
static pthread_key_t pinned_key;

/* Not PyGILState_Release: at thread exit libc may have cleared CPython's
 * own thread-local slot before this destructor runs. */
static void unpin(void *tstate) {
    PyEval_RestoreThread((PyThreadState *)tstate);
    PyThreadState_Clear((PyThreadState *)tstate);
    PyThreadState_DeleteCurrent();
}

static PyGILState_STATE gil_enter(void) {
    if (!PyGILState_GetThisThreadState()) {
        PyGILState_Ensure();
        if (pthread_setspecific(pinned_key, PyThreadState_Get()) == 0)
            PyEval_SaveThread();
        else  /* not pinned: the matching release frees the thread state */
            return PyGILState_UNLOCKED;
    }
    return PyGILState_Ensure();
}

#define gil_leave PyGILState_Release

/* Keeps the first exception of a creation: later ones are its consequences. */
void zc_writer_keep_error(WriterCtx *w) {
    PyObject *exc = PyErr_GetRaisedException();
    pthread_mutex_lock(&w->mutex);
    if (!w->pending) {
        w->pending = exc;
        exc = NULL;
    }
    pthread_mutex_unlock(&w->mutex);
    Py_XDECREF(exc);
}

PyObject *zc_writer_take_pending(WriterCtx *w) {
    pthread_mutex_lock(&w->mutex);
    PyObject *cause = w->pending;
    w->pending = NULL;
    pthread_mutex_unlock(&w->mutex);
    return cause;
}

/* With the GIL. */
void zc_writer_ctx_unref(WriterCtx *w) {
    if (atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    Py_CLEAR(w->pending);
    pthread_mutex_destroy(&w->mutex);
    PyMem_RawFree(w);
}

/* A callback's integer result, converted as python-libzim's Cython code
 * converts it: anything but a number is "TypeError: an integer is required"
 * (its tests match that text). */
static int callback_uint(PyObject *v, const char *name, uint64_t max, uint64_t *out) {
    if (!PyLong_Check(v) && !PyIndex_Check(v) && !PyFloat_Check(v)) {
        PyErr_Format(PyExc_TypeError, "an integer is required (%s() returned %.100s)", name,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    return zc_writer_get_uint(v, max, out, name);
}

/* Also for add_item() on the creating thread (creator.c). */
int zc_writer_item_provider(PyObject *item, void **provider, uint64_t *size) {
    int rc = -1;
    PyObject *p = call0(item, "get_contentprovider"), *n = NULL;
    int truth = p ? PyObject_IsTrue(p) : -1;
    if (truth == 0)
        PyErr_SetString(PyExc_RuntimeError, "ContentProvider is None");
    if (truth == 1 && (n = call0(p, "get_size")) != NULL &&
        callback_uint(n, "get_size", UINT64_MAX, size) == 0) {
        *provider = Py_NewRef(p);
        rc = 0;
    }
    Py_XDECREF(n);
    Py_XDECREF(p);
    return rc;
}

static int cb_item_provider(void *ctx, void *item, void **provider, uint64_t *size) {
    WriterCtx *c = ctx;
    PyGILState_STATE g = gil_enter();
    int rc = zc_writer_item_provider(item, provider, size);
    if (rc < 0)
        zc_writer_keep_error(c);
    gil_leave(g);
    return rc;
}

static int cb_item_indexdata(void *ctx, void *item, void **data) {
    WriterCtx *c = ctx;
    PyGILState_STATE g = gil_enter();
    int rc = ZS_INDEX_DEFAULT;
    PyObject *meth;
    /* python-libzim: no get_indexdata, or None, means libzim's own. */
    if (PyObject_GetOptionalAttrString(item, "get_indexdata", &meth) < 0) {
        rc = -1;
    } else if (meth && meth != Py_None) {
        PyObject *d = PyObject_CallNoArgs(meth);
        int truth = d ? PyObject_IsTrue(d) : -1;
        if (truth < 0)
            rc = -1;
        else if (truth == 0)
            rc = ZS_INDEX_NONE;
        else {
            rc = ZS_INDEX_CUSTOM;
            *data = Py_NewRef(d);
        }
        Py_XDECREF(d);
    }
    Py_XDECREF(meth);
    if (rc < 0)
        zc_writer_keep_error(c);
    gil_leave(g);
    return rc;
}

/* str getter result into a shim string, as python-libzim's .encode('UTF-8'). */
static int fetch_str(PyObject *obj, const char *name, zs_sink *sink) {
    PyObject *v = call0(obj, name);
    if (!v)
        return -1;
    PyObject *b = PyObject_CallMethod(v, "encode", "s", "UTF-8");
    Py_DECREF(v);
    if (!b)
        return -1;
    if (!PyBytes_Check(b)) {
        PyErr_Format(PyExc_TypeError, "%s() must return str", name);
        Py_DECREF(b);
        return -1;
    }
    zs_sink_set(sink, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
    Py_DECREF(b);
    return 0;
}

static int fetch_geo(PyObject *obj, zs_indexdata *out) {
    PyObject *v = call0(obj, "get_geoposition");
    int truth = v ? PyObject_IsTrue(v) : -1;
    if (truth == 1) {
        PyObject *lat = PySequence_GetItem(v, 0);
        PyObject *lon = lat ? PySequence_GetItem(v, 1) : NULL;
        out->latitude = lon ? PyFloat_AsDouble(lat) : -1.0;
        out->longitude = lon ? PyFloat_AsDouble(lon) : -1.0;
        Py_XDECREF(lat);
        Py_XDECREF(lon);
        truth = PyErr_Occurred() ? -1 : 1;
    }
    Py_XDECREF(v);
    out->has_geo = truth == 1;
    return truth < 0 ? -1 : 0;
}

static int fetch_indexdata(PyObject *d, int all, zs_indexdata *out) {
    PyObject *has = call0(d, "has_indexdata");
    out->has = has ? PyObject_IsTrue(has) : -1;
    Py_XDECREF(has);
    if (out->has < 0)
        return -1;
    if (!out->has && !all)
        return 0;
    if (fetch_str(d, "get_title", out->title) < 0 ||
        fetch_str(d, "get_content", out->content) < 0 ||
        fetch_str(d, "get_keywords", out->keywords) < 0)
        return -1;
    PyObject *wc = call0(d, "get_wordcount");
    uint64_t n = 0;
    int rc = wc ? callback_uint(wc, "get_wordcount", UINT32_MAX, &n) : -1;
    Py_XDECREF(wc);
    if (rc < 0)
        return -1;
    out->wordcount = (uint32_t)n;
    return fetch_geo(d, out);
}

static int cb_indexdata_fetch(void *ctx, void *data, int all, zs_indexdata *out) {
    WriterCtx *c = ctx;
    PyGILState_STATE g = gil_enter();
    int rc = fetch_indexdata(data, all, out);
    if (rc < 0)
        zc_writer_keep_error(c);
    gil_leave(g);
    return rc;
}

static int cb_provider_feed(void *ctx, void *provider, void *prev, zs_str *chunk, void **keep) {
    WriterCtx *c = ctx;
    PyGILState_STATE g = gil_enter();
    Py_XDECREF((PyObject *)prev);
    int rc = -1;
    PyObject *b = call0(provider, "feed");
    if (b == Py_None)
        PyErr_SetString(PyExc_RuntimeError, "Blob is none");
    else if (b && !PyObject_TypeCheck(b, c->st->WriterBlob))
        PyErr_Format(PyExc_TypeError, "feed() must return a Blob, not %.100s",
                     Py_TYPE(b)->tp_name);
    else if (b) {
        /* The bytes, not the Blob, are kept: libzim reads them until the
         * next feed() and nothing can change them meanwhile. */
        PyObject *ref = ((BlobObject *)b)->ref;
        chunk->ptr = PyBytes_AS_STRING(ref);
        chunk->len = (size_t)PyBytes_GET_SIZE(ref);
        *keep = Py_NewRef(ref);
        rc = 0;
    }
    if (rc < 0)
        zc_writer_keep_error(c);
    Py_XDECREF(b);
    gil_leave(g);
    return rc;
}

/* libzim drops items, providers and index data on its worker threads; the
 * last reference may run a weakref.finalize callback, so it needs the GIL. */
static void cb_release(void *a, void *b) {
    PyGILState_STATE g = gil_enter();
    Py_XDECREF((PyObject *)a);
    Py_XDECREF((PyObject *)b);
    gil_leave(g);
}

static void cb_ctx_free(void *ctx) {
    PyGILState_STATE g = gil_enter();
    zc_writer_ctx_unref(ctx);
    gil_leave(g);
}

const zs_writer_callbacks zc_writer_callbacks = {
    cb_item_provider, cb_item_indexdata, cb_indexdata_fetch, cb_provider_feed, cb_release,
    cb_ctx_free,
};

static int key_error;
static void make_key(void) { key_error = pthread_key_create(&pinned_key, unpin); }

int zc_writer_callbacks_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_key);
    if (key_error) {
        errno = key_error;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}
