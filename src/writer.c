/* Writing archives: the native core of libzim.writer.
 *
 * _Creator drives zs_creator (zimshim.h, zimshim_writer.cpp) and Blob carries bytes for
 * feed().  Item, ContentProvider, IndexData and friends are Python classes
 * in libzim/writer.py, as in python-libzim; this file calls their methods
 * from the callbacks below, which libzim runs on the creating thread and on
 * its worker threads while the creating thread waits in libzim with the GIL
 * released.  Each callback takes the GIL for the Python calls only. */
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <structmember.h>
#include <unistd.h>


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

typedef struct {
    PyObject_HEAD
    zs_creator *h;
    WriterCtx *ctx;
    zc_state *st;
    PyObject *filename;        /* pathlib.Path */
    int state;
    PyThread_type_lock lock;   /* one call into libzim at a time */
} CreatorObject;

/* ---- Blob ------------------------------------------------------------------ */

static PyObject *blob_new(PyTypeObject *tp, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"content", NULL};
    PyObject *content;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Blob", kwlist, &content))
        return NULL;
    PyObject *ref;
    if (PyUnicode_Check(content))
        ref = PyUnicode_AsUTF8String(content);
    else if (PyBytes_Check(content))
        ref = Py_NewRef(content);
    else
        return PyErr_Format(PyExc_TypeError, "Expected bytes, got %.100s",
                            Py_TYPE(content)->tp_name);
    if (!ref)
        return NULL;
    BlobObject *b = (BlobObject *)tp->tp_alloc(tp, 0);
    if (!b) {
        Py_DECREF(ref);
        return NULL;
    }
    b->ref = ref;
    return (PyObject *)b;
}

static void blob_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(((BlobObject *)self)->ref);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *blob_size(PyObject *self, PyObject *noargs) {
    (void)noargs;
    return PyLong_FromSsize_t(PyBytes_GET_SIZE(((BlobObject *)self)->ref));
}

static PyMethodDef blob_methods[] = {
    {"size", blob_size, METH_NOARGS,
     "size($self, /)\n--\n\nReturn the size of the blob's content in bytes (UTF-8 bytes for a "
     "str)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef blob_members[] = {
    {"ref_content", T_OBJECT, offsetof(BlobObject, ref), READONLY,
     "The bytes the blob holds (a str is stored UTF-8 encoded); libzim reads\n"
     "them without a copy, and the provider keeps the blob until its next\n"
     "feed()."},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot blob_slots[] = {
    {Py_tp_new, blob_new},
    {Py_tp_dealloc, blob_dealloc},
    {Py_tp_methods, blob_methods},
    {Py_tp_members, blob_members},
    {Py_tp_doc, "Blob(content)\n--\n\n"
                "A piece of an item's content, returned by ContentProvider.feed() (or\n"
                "yielded by gen_blob()).\n\n"
                "content is bytes, or a str stored as UTF-8; TypeError otherwise. libzim\n"
                "reads the bytes in place, without a copy. python-libzim's\n"
                "libzim.writer.Blob (libzim.WritingBlob)."},
    {0, NULL},
};

static PyType_Spec blob_spec = {
    .name = "libzim.writer.Blob",
    .basicsize = sizeof(BlobObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = blob_slots,
};

/* ---- callbacks (any thread, without the GIL) -------------------------------- */

#if PY_VERSION_HEX < 0x030C0000
static PyObject *PyErr_GetRaisedException(void) {
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

static void PyErr_SetRaisedException(PyObject *exc) {
    if (!exc)
        return;
    PyErr_Restore(Py_NewRef(Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
}
#endif

#if PY_VERSION_HEX < 0x030D0000
static int PyObject_GetOptionalAttrString(PyObject *obj, const char *name, PyObject **out) {
    *out = PyObject_GetAttrString(obj, name);
    if (*out)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}
#endif

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
static void keep_error(WriterCtx *w) {
    PyObject *exc = PyErr_GetRaisedException();
    pthread_mutex_lock(&w->mutex);
    if (!w->pending) {
        w->pending = exc;
        exc = NULL;
    }
    pthread_mutex_unlock(&w->mutex);
    Py_XDECREF(exc);
}

static PyObject *take_pending(WriterCtx *w) {
    pthread_mutex_lock(&w->mutex);
    PyObject *cause = w->pending;
    w->pending = NULL;
    pthread_mutex_unlock(&w->mutex);
    return cause;
}

/* With the GIL. */
static void ctx_unref(WriterCtx *w) {
    if (atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    Py_CLEAR(w->pending);
    pthread_mutex_destroy(&w->mutex);
    PyMem_RawFree(w);
}

static PyObject *call0(PyObject *obj, const char *name) {
    return PyObject_CallMethod(obj, name, NULL);
}

static int get_uint(PyObject *v, uint64_t max, uint64_t *out, const char *name);

/* A callback's integer result, converted as python-libzim's Cython code
 * converts it: anything but a number is "TypeError: an integer is required"
 * (its tests match that text). */
static int callback_uint(PyObject *v, const char *name, uint64_t max, uint64_t *out) {
    if (!PyLong_Check(v) && !PyIndex_Check(v) && !PyFloat_Check(v)) {
        PyErr_Format(PyExc_TypeError, "an integer is required (%s() returned %.100s)", name,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    return get_uint(v, max, out, name);
}

/* With the GIL: the item's content provider (a new reference) and its size,
 * checked as python-libzim checks them. */
static int item_provider(PyObject *item, void **provider, uint64_t *size) {
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
    int rc = item_provider(item, provider, size);
    if (rc < 0)
        keep_error(c);
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
        keep_error(c);
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
        keep_error(c);
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
        keep_error(c);
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
    ctx_unref(ctx);
    gil_leave(g);
}

static const zs_writer_callbacks callbacks = {
    cb_item_provider, cb_item_indexdata, cb_indexdata_fetch, cb_provider_feed, cb_release,
    cb_ctx_free,
};

/* ---- errors ------------------------------------------------------------------ */

/* The exception a failed call raises: libzim's duplicate-path text as it is
 * (callers match it), other messages after the file name; a callback's
 * exception is chained as the cause. */
static PyObject *raise_werror(CreatorObject *c, const zs_werror *err) {
    PyObject *cause = c->ctx ? take_pending(c->ctx) : NULL;
    if (err->kind == ZS_ERR_MEMORY && !cause)
        return PyErr_NoMemory();
    PyObject *msg;
    if (err->duplicate)
        msg = PyUnicode_FromString(err->msg);
    else if (cause)
        msg = PyUnicode_FromFormat("%S: %s (%s: %S)", c->filename, err->msg,
                                   Py_TYPE(cause)->tp_name, cause);
    else
        msg = PyUnicode_FromFormat("%S: %s", c->filename, err->msg);
    if (msg) {
        PyErr_SetObject(c->st->WriterError, msg);
        Py_DECREF(msg);
    }
    if (cause) {
        PyObject *exc = PyErr_GetRaisedException();
        if (exc)
            PyException_SetCause(exc, Py_NewRef(cause));
        PyErr_SetRaisedException(exc);
        Py_DECREF(cause);
    }
    return NULL;
}

static PyObject *creator_error(CreatorObject *c, const char *what) {
    PyErr_SetString(c->st->WriterError, what);
    (void)c;
    return NULL;
}

/* ---- _Creator ---------------------------------------------------------------- */

#define CREATOR_CALL(c, rc, stmt)                 \
    do {                                          \
        ZC_LOCK((c)->lock);                       \
        if ((c)->state != STARTED || !(c)->h) {   \
            ZC_UNLOCK((c)->lock);                 \
            return creator_error((c), "Creator not started"); \
        }                                         \
        NOGIL(rc = (stmt));                       \
        ZC_UNLOCK((c)->lock);                     \
    } while (0)

static int writable_parent(PyObject *path) {
    PyObject *p = PyObject_CallMethod(path, "expanduser", NULL);
    PyObject *r = p ? PyObject_CallMethod(p, "resolve", NULL) : NULL;
    PyObject *parent = r ? PyObject_GetAttrString(r, "parent") : NULL;
    PyObject *s = parent ? PyObject_Str(parent) : NULL;
    Py_XDECREF(p);
    Py_XDECREF(r);
    Py_XDECREF(parent);
    if (!s)
        return -1;
    PyObject *fs = PyUnicode_EncodeFSDefault(s);
    Py_DECREF(s);
    if (!fs)
        return -1;
    int ok = access(PyBytes_AS_STRING(fs), W_OK) == 0;
    Py_DECREF(fs);
    return ok;
}

/* As python-libzim's __cinit__: the first argument (or filename=) is the
 * path, anything else is for a subclass's __init__. */
static PyObject *creator_new(PyTypeObject *tp, PyObject *args, PyObject *kwds) {
    PyObject *filename = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0)
                         : kwds ? PyDict_GetItemString(kwds, "filename") : NULL;
    if (!filename)
        return PyErr_Format(PyExc_TypeError, "%s() missing required argument 'filename'",
                            tp->tp_name);
    zc_state *st = zc_state_of_type(tp);
    if (!st)
        return NULL;
    CreatorObject *c = (CreatorObject *)tp->tp_alloc(tp, 0);
    if (!c)
        return NULL;
    c->st = st;
    PyObject *path_type = zc_lazy_import(&st->pathlib_Path, "pathlib", "Path");
    c->filename = path_type ? PyObject_CallOneArg(path_type, filename) : NULL;
    c->lock = PyThread_allocate_lock();
    if (!c->filename || !c->lock) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        Py_DECREF(c);
        return NULL;
    }
    int ok = writable_parent(c->filename);
    if (ok == 0)
        PyErr_Format(PyExc_OSError, "Unable to write ZIM file at %S", c->filename);
    if (ok <= 0) {
        Py_DECREF(c);
        return NULL;
    }
    WriterCtx *w = PyMem_RawCalloc(1, sizeof *w);
    if (!w) {
        Py_DECREF(c);
        return PyErr_NoMemory();
    }
    w->st = st;
    atomic_init(&w->refs, 2);  /* this object's and the shim's */
    pthread_mutex_init(&w->mutex, NULL);
    c->ctx = w;
    zs_werror err;
    c->h = zs_creator_new(&callbacks, w, &err);
    if (!c->h) {
        raise_werror(c, &err);
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static int creator_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"filename", NULL};
    PyObject *filename;
    (void)self;
    return PyArg_ParseTupleAndKeywords(args, kwds, "O:Creator", kwlist, &filename) ? 0 : -1;
}

/* Frees the native creator without the GIL (its workers may still call
 * back); an unfinished creation leaves nothing on disk. */
static void creator_drop(CreatorObject *c) {
    zs_creator *h = c->h;
    c->h = NULL;
    c->state = ENDED;
    if (h)
        NOGIL(zs_creator_free(h));
}

static void creator_dealloc(PyObject *self) {
    CreatorObject *c = (CreatorObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    creator_drop(c);
    if (c->ctx)
        ctx_unref(c->ctx);
    Py_CLEAR(c->filename);
    if (c->lock)
        PyThread_free_lock(c->lock);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static int creator_traverse(PyObject *self, visitproc visit, void *arg) {
    CreatorObject *c = (CreatorObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(c->filename);
    return 0;
}

static int creator_clear(PyObject *self) {
    (void)self;
    return 0;
}

static PyObject *config(CreatorObject *c, zs_config which, uint64_t value, const char *lang) {
    ZC_LOCK(c->lock);
    int ok = c->state == NOT_STARTED && c->h;
    if (ok)
        zs_creator_config(c->h, which, value, lang);
    ZC_UNLOCK(c->lock);
    if (!ok)
        return creator_error(c, "Creator started");
    return Py_NewRef(c);
}

static int get_uint(PyObject *v, uint64_t max, uint64_t *out, const char *name) {
    PyObject *i = PyNumber_Index(v);
    if (!i && PyFloat_Check(v)) {  /* Cython's int parameters truncate floats */
        PyErr_Clear();
        i = PyNumber_Long(v);
    }
    if (!i)
        return -1;
    unsigned long long n = PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    if (n == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    if (n > max) {
        PyErr_Format(PyExc_OverflowError, "%s is too large", name);
        return -1;
    }
    *out = n;
    return 0;
}

static PyObject *config_verbose(PyObject *self, PyObject *v) {
    int b = PyObject_IsTrue(v);
    return b < 0 ? NULL : config((CreatorObject *)self, ZS_CFG_VERBOSE, (uint64_t)b, NULL);
}
ZC_KEYWORD_ARG(config_verbose, "config_verbose", "verbose")

static PyObject *config_compression(PyObject *self, PyObject *v) {
    PyObject *value = PyObject_GetAttrString(v, "value");
    long n = value ? PyLong_AsLong(value) : -1;
    Py_XDECREF(value);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    return config((CreatorObject *)self, ZS_CFG_COMPRESSION, n != 0, NULL);
}
ZC_KEYWORD_ARG(config_compression, "config_compression", "compression")

static PyObject *config_clustersize(PyObject *self, PyObject *v) {
    uint64_t n;
    if (get_uint(v, UINT64_MAX, &n, "size") < 0)
        return NULL;
    return config((CreatorObject *)self, ZS_CFG_CLUSTERSIZE, n, NULL);
}
ZC_KEYWORD_ARG(config_clustersize, "config_clustersize", "size")

static PyObject *config_nbworkers(PyObject *self, PyObject *v) {
    uint64_t n;
    if (get_uint(v, UINT32_MAX, &n, "nbWorkers") < 0)
        return NULL;
    return config((CreatorObject *)self, ZS_CFG_WORKERS, n, NULL);
}
ZC_KEYWORD_ARG(config_nbworkers, "config_nbworkers", "nbWorkers")

static PyObject *config_indexing(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames) {
    static const char *const names[] = {"indexing", "language"};
    PyObject *a[2];
    Py_ssize_t len;
    if (zc_args("config_indexing", args, nargs, kwnames, names, 2, 2, 2, a) < 0)
        return NULL;
    int b = PyObject_IsTrue(a[0]);
    const char *lang = b < 0 ? NULL : zc_utf8(a[1], &len, "language");
    if (!lang)
        return NULL;
    return config((CreatorObject *)self, ZS_CFG_INDEXING, (uint64_t)b, lang);
}

static PyObject *set_mainpath(PyObject *self, PyObject *v) {
    CreatorObject *c = (CreatorObject *)self;
    Py_ssize_t len;
    const char *p = zc_utf8(v, &len, "mainPath");
    if (!p)
        return NULL;
    ZC_LOCK(c->lock);
    if (c->h)
        zs_creator_set_mainpath(c->h, p, (size_t)len);
    ZC_UNLOCK(c->lock);
    return Py_NewRef(self);
}
ZC_KEYWORD_ARG(set_mainpath, "set_mainpath", "mainPath")

static int str_arg(PyObject *v, const char *name, zs_str *out) {
    Py_ssize_t len;
    out->ptr = zc_utf8(v, &len, name);
    out->len = (size_t)len;
    return out->ptr ? 0 : -1;
}

static int bytes_arg(PyObject *v, const char *name, zs_str *out) {
    if (!PyBytes_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes, not %.100s", name, Py_TYPE(v)->tp_name);
        return -1;
    }
    out->ptr = PyBytes_AS_STRING(v);
    out->len = (size_t)PyBytes_GET_SIZE(v);
    return 0;
}

static PyObject *add_metadata(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    static const char *const names[] = {"name", "content", "mimetype"};
    CreatorObject *c = (CreatorObject *)self;
    PyObject *a[3];
    zs_str name, content, mime;
    if (zc_args("add_metadata", args, nargs, kwnames, names, 3, 3, 3, a) < 0 ||
        str_arg(a[0], "name", &name) < 0 || bytes_arg(a[1], "content", &content) < 0 ||
        str_arg(a[2], "mimetype", &mime) < 0)
        return NULL;
    int rc;
    zs_werror err;
    CREATOR_CALL(c, rc, zs_creator_add_metadata(c->h, name, content, mime, &err));
    return rc < 0 ? raise_werror(c, &err) : Py_NewRef(Py_None);
}

static PyObject *add_illustration(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    static const char *const names[] = {"size", "content"};
    CreatorObject *c = (CreatorObject *)self;
    PyObject *a[2];
    uint64_t size;
    zs_str content;
    if (zc_args("add_illustration", args, nargs, kwnames, names, 2, 2, 2, a) < 0 ||
        get_uint(a[0], UINT32_MAX, &size, "size") < 0 || bytes_arg(a[1], "content", &content) < 0)
        return NULL;
    int rc;
    zs_werror err;
    CREATOR_CALL(c, rc, zs_creator_add_illustration(c->h, (unsigned)size, content, &err));
    return rc < 0 ? raise_werror(c, &err) : Py_NewRef(Py_None);
}

/* Hints as libzim's map; for items (python-libzim) only Hint keys count,
 * and values are truth values. */
static int hints_dict(zc_state *st, PyObject *hints, int item, zs_entry_def *def);

/* An item's get_hints() result: python-libzim reads any mapping through
 * .items() (a non-mapping fails there: "'int' object has no attribute
 * 'items'"); add_redirection's hints argument must be a dict. */
static int hints_arg(zc_state *st, PyObject *hints, int item, zs_entry_def *def) {
    if (PyDict_Check(hints))
        return hints_dict(st, hints, item, def);
    if (!item) {
        PyErr_Format(PyExc_TypeError, "hints must be a dict, not %.100s",
                     Py_TYPE(hints)->tp_name);
        return -1;
    }
    PyObject *pairs = call0(hints, "items"), *d = pairs ? PyDict_New() : NULL;
    int rc = d ? PyDict_MergeFromSeq2(d, pairs, 1) : -1;
    if (rc == 0)
        rc = hints_dict(st, d, item, def);
    Py_XDECREF(pairs);
    Py_XDECREF(d);
    return rc;
}

static int hints_dict(zc_state *st, PyObject *hints, int item, zs_entry_def *def) {
    def->hints_set = 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(hints, &pos, &k, &v)) {
        if (item && !(st->WriterHint && PyObject_TypeCheck(k, (PyTypeObject *)st->WriterHint)))
            continue;
        PyObject *kv = PyObject_GetAttrString(k, "value");
        long key = kv ? PyLong_AsLong(kv) : -1;
        Py_XDECREF(kv);
        if (key == -1 && PyErr_Occurred())
            return -1;
        uint64_t val;
        if (item) {
            int t = PyObject_IsTrue(v);
            if (t < 0)
                return -1;
            val = (uint64_t)t;
        } else if (get_uint(v, UINT64_MAX, &val, "hint value") < 0) {
            return -1;
        }
        if (key < 0 || key > 1) {
            PyErr_Format(PyExc_ValueError, "unknown hint %R", k);
            return -1;
        }
        def->hints_set |= 1u << key;
        def->hints[key] = val;
    }
    return 0;
}

/* add_redirection and add_alias take the same arguments (python-libzim's
 * names, the camelCase targetPath included) and differ only in the shim call. */
typedef int (*link_fn)(zs_creator *, const zs_entry_def *, zs_str, zs_werror *);

static PyObject *add_link(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames, const char *fname, link_fn fn) {
    static const char *const names[] = {"path", "title", "targetPath", "hints"};
    CreatorObject *c = (CreatorObject *)self;
    PyObject *a[4];
    zs_entry_def def = {0};
    zs_str target;
    if (zc_args(fname, args, nargs, kwnames, names, 4, 4, 4, a) < 0 ||
        str_arg(a[0], "path", &def.path) < 0 || str_arg(a[1], "title", &def.title) < 0 ||
        str_arg(a[2], "targetPath", &target) < 0 || hints_arg(c->st, a[3], 0, &def) < 0)
        return NULL;
    int rc;
    zs_werror err;
    CREATOR_CALL(c, rc, fn(c->h, &def, target, &err));
    if (rc < 0 && err.unsupported) {
        PyErr_SetString(c->st->NotSupportedError, err.msg);
        return NULL;
    }
    return rc < 0 ? raise_werror(c, &err) : Py_NewRef(Py_None);
}

static PyObject *add_redirection(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames) {
    return add_link(self, args, nargs, kwnames, "add_redirection", zs_creator_add_redirection);
}

static PyObject *add_alias(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames) {
    return add_link(self, args, nargs, kwnames, "add_alias", zs_creator_add_alias);
}

/* A getter's str result, kept alive in *keep while the shim uses it. Like
 * python-libzim, anything else is asked for .encode('UTF-8') (None or an
 * int then fail with "'int' object has no attribute 'encode'"). */
static int item_str(PyObject *item, const char *name, PyObject **keep, zs_str *out) {
    *keep = call0(item, name);
    if (!*keep)
        return -1;
    Py_ssize_t len = 0;
    if (PyUnicode_Check(*keep)) {
        out->ptr = PyUnicode_AsUTF8AndSize(*keep, &len);
    } else {
        Py_SETREF(*keep, PyObject_CallMethod(*keep, "encode", "s", "UTF-8"));
        out->ptr = *keep && PyBytes_Check(*keep) ? PyBytes_AS_STRING(*keep) : NULL;
        len = out->ptr ? PyBytes_GET_SIZE(*keep) : 0;
        if (*keep && !out->ptr)
            PyErr_Format(PyExc_TypeError, "%s().encode() must return bytes, not %.100s", name,
                         Py_TYPE(*keep)->tp_name);
    }
    out->len = out->ptr ? (size_t)len : 0;
    if (out->ptr && memchr(out->ptr, '\0', out->len)) {
        PyErr_Format(PyExc_ValueError, "%s() must not return NUL characters", name);
        out->ptr = NULL;
    }
    return out->ptr ? 0 : -1;
}

/* An exception from the item's own getters, before libzim saw the item. */
static PyObject *item_failed(CreatorObject *c, const char *what) {
    zs_werror err = {.kind = ZS_ERR_INTERNAL};
    keep_error(c->ctx);
    snprintf(err.msg, sizeof err.msg, "%s of an item raised", what);
    return raise_werror(c, &err);
}

static PyObject *add_item(PyObject *self, PyObject *item) {
    CreatorObject *c = (CreatorObject *)self;
    zc_state *st = c->st;
    /* Any object with the Item methods will do, as with python-libzim; a
     * missing one fails when it is called (an AttributeError, the cause). */
    if (item == Py_None)
        return PyErr_Format(PyExc_TypeError, "Argument 'writer_item' must not be None");
    if (c->state != STARTED)
        return creator_error(c, "Creator not started");
    zs_entry_def def = {0};
    PyObject *keep[3] = {NULL, NULL, NULL}, *hints = NULL, *result = NULL;
    static const char *const getters[] = {"get_path", "get_title", "get_mimetype"};
    zs_str *fields[] = {&def.path, &def.title, &def.mimetype};
    for (int i = 0; i < 3; i++)
        if (item_str(item, getters[i], &keep[i], fields[i]) < 0) {
            item_failed(c, getters[i]);
            goto done;
        }
    hints = call0(item, "get_hints");
    if (!hints || hints_arg(st, hints, 1, &def) < 0) {
        item_failed(c, "get_hints");
        goto done;
    }
    /* Before libzim creates the entry: libzim 8.1.1 asks for the provider
     * after, and a failure then would leave an entry without content. */
    if (item_provider(item, &def.provider, &def.provider_size) < 0) {
        item_failed(c, "get_contentprovider");
        goto done;
    }
    int rc;
    zs_werror err;
    Py_INCREF(item);  /* the shim's references, given back through release */
    CREATOR_CALL(c, rc, zs_creator_add_item(c->h, &def, item, &err));
    result = rc < 0 ? raise_werror(c, &err) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 3; i++)
        Py_XDECREF(keep[i]);
    Py_XDECREF(hints);
    return result;
}
ZC_KEYWORD_ARG(add_item, "add_item", "writer_item")

static PyObject *creator_enter(PyObject *self, PyObject *noargs) {
    (void)noargs;
    CreatorObject *c = (CreatorObject *)self;
    PyObject *fs = PyUnicode_EncodeFSDefault(c->filename ? PyObject_Str(c->filename) : NULL);
    if (!fs)
        return NULL;
    int rc = 0, state;
    zs_werror err;
    ZC_LOCK(c->lock);
    state = c->state;
    if (state == NOT_STARTED && c->h) {
        NOGIL(rc = zs_creator_start(c->h, PyBytes_AS_STRING(fs), &err));
        c->state = STARTED;
    }
    ZC_UNLOCK(c->lock);
    Py_DECREF(fs);
    if (state != NOT_STARTED)
        return creator_error(c, state == STARTED ? "Creator already started"
                                                 : "Creator already finished");
    if (rc < 0) {
        raise_werror(c, &err);
        creator_drop(c);
        return NULL;
    }
    return Py_NewRef(self);
}

/* Finishes the archive, or, when the block raised, drops it: python-libzim
 * finishes it anyway, which leaves a valid-looking archive with part of the
 * content (python-libzim #42). */
static PyObject *creator_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    static const char *const names[] = {"exc_type", "exc_val", "exc_tb"};
    CreatorObject *c = (CreatorObject *)self;
    PyObject *a[3];
    if (zc_args("__exit__", args, nargs, kwnames, names, 3, 3, 3, a) < 0)
        return NULL;
    int rc = 0, was;
    zs_werror err;
    ZC_LOCK(c->lock);
    was = c->state;
    if (was == STARTED && a[0] == Py_None)
        NOGIL(rc = zs_creator_finish(c->h, &err));
    c->state = ENDED;
    ZC_UNLOCK(c->lock);
    if (rc < 0)
        raise_werror(c, &err);
    if (rc < 0 || a[0] != Py_None || was != STARTED) {
        PyObject *exc = PyErr_GetRaisedException();
        creator_drop(c);
        PyErr_SetRaisedException(exc);
    }
    return rc < 0 ? NULL : Py_NewRef(Py_None);
}

/* Drops an unfinished creation (atexit, before the interpreter stops
 * threads that libzim's workers would need to call back). */
static PyObject *creator_abort(PyObject *self, PyObject *noargs) {
    (void)noargs;
    CreatorObject *c = (CreatorObject *)self;
    ZC_LOCK(c->lock);
    creator_drop(c);
    ZC_UNLOCK(c->lock);
    Py_RETURN_NONE;
}

static PyObject *get_filename(PyObject *self, void *closure) {
    (void)closure;
    return Py_NewRef(((CreatorObject *)self)->filename);
}

static PyObject *get_started(PyObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(((CreatorObject *)self)->state == STARTED);
}

static PyGetSetDef creator_getset[] = {
    {"filename", get_filename, NULL,
     "The path of the archive being written, as a pathlib.Path; no file is\n"
     "there until the with block ends without an exception.", NULL},
    {"_filename", get_filename, NULL, "Same as filename.", NULL},
    {"_started", get_started, NULL, "True between __enter__ and __exit__.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Calls that run libzim hold the Creator's lock (one call into libzim at a
 * time) and release the GIL; libzim's callbacks into Python objects take it
 * for their Python calls only. */

PyDoc_STRVAR(config_verbose_doc,
"config_verbose($self, /, verbose)\n--\n\n"
"Make libzim print its progress (True) or not, and return self.\n\n"
"Before the with block only: raises WriterError (a RuntimeError) once\n"
"started, as every config_*() does.  libzim 8.1.1 prints some progress\n"
"lines on stdout even when not verbose.");

PyDoc_STRVAR(config_compression_doc,
"config_compression($self, /, compression)\n--\n\n"
"Set the compression of clusters, a Compression member (Creator also\n"
"takes its name, 'zstd' or 'none'), and return self.  Before the with\n"
"block only (WriterError once started).");

PyDoc_STRVAR(config_clustersize_doc,
"config_clustersize($self, /, size)\n--\n\n"
"Set the target size of a cluster in bytes (libzim groups items into\n"
"clusters of about this size before compressing) and return self.\n"
"Before the with block only (WriterError once started).");

PyDoc_STRVAR(config_indexing_doc,
"config_indexing($self, /, indexing, language)\n--\n\n"
"Build the full-text index (indexing True) for content in\n"
"language, an ISO 639-3 code such as 'eng' (stemming, stop words), and\n"
"return self.  Before the with block only (WriterError once started).");

PyDoc_STRVAR(config_nbworkers_doc,
"config_nbworkers($self, /, nbWorkers)\n--\n\n"
"Set the number of libzim worker threads (compression, indexing) and\n"
"return self.  Workers call back into content providers and index data\n"
"taking the GIL for those calls only.  Before the with block only\n"
"(WriterError once started).");

PyDoc_STRVAR(set_mainpath_doc,
"set_mainpath($self, /, mainPath)\n--\n\n"
"Set the path of the main entry (the archive's home page) and return\n"
"self.  May be called before or inside the with block.");

PyDoc_STRVAR(add_item_doc,
"add_item($self, /, writer_item)\n--\n\n"
"Add an item: any object with the libzim.writer.Item methods.\n\n"
"Its get_path(), get_title(), get_mimetype(), get_hints() and\n"
"get_contentprovider() (and the provider's get_size()) are called first,\n"
"in Python: if one raises, add_item raises WriterError (the exception as\n"
"__cause__) and the creation goes on without the item, as with\n"
"python-libzim.  Then libzim adds it with the GIL released; its workers\n"
"read the content later.  Inside the with block only (WriterError\n"
"before).  Threads may call it on one Creator: calls are serialised\n"
"(python-libzim crashes).  Errors of earlier items on libzim's workers\n"
"surface here or when the block ends.");

PyDoc_STRVAR(add_metadata_doc,
"add_metadata($self, /, name, content, mimetype)\n--\n\n"
"Add the metadata entry name ('Title', 'Language', 'Date', ...) with\n"
"content as bytes.\n\n"
"Creator.add_metadata also takes a str (UTF-8 encoded) or, for 'Date', a\n"
"date, and defaults mimetype to 'text/plain;charset=UTF-8'.  Inside the\n"
"with block only (WriterError before); runs with the GIL released.");

PyDoc_STRVAR(add_illustration_doc,
"add_illustration($self, /, size, content)\n--\n\n"
"Add the archive's illustration of size x size pixels: content is PNG\n"
"bytes (48: the size Archive.get_illustration_item() reads by default).\n"
"Inside the with block only;\n"
"runs with the GIL released.");

PyDoc_STRVAR(add_redirection_doc,
"add_redirection($self, /, path, title, targetPath, hints)\n--\n\n"
"Add an entry at path, with title, that redirects to the entry at\n"
"targetPath (which may be added later).\n\n"
"hints is a dict of Hint to int, as an item's get_hints() returns.\n"
"Inside the with block only; runs with the GIL released.");

PyDoc_STRVAR(add_alias_doc,
"add_alias($self, /, path, title, targetPath, hints)\n--\n\n"
"Add a second path for the item at targetPath: an entry at path, with\n"
"title, sharing that item's content (not a redirect).\n\n"
"Needs libzim >= 9.0: with libzim 8.1.1 it raises NotSupportedError\n"
"naming the version.  Inside the with block only.");

PyDoc_STRVAR(creator_enter_doc,
"__enter__($self, /)\n--\n\n"
"Start writing (libzim writes to <filename>.tmp) and return self.\n\n"
"Raises WriterError if already started or finished, or if libzim cannot\n"
"start writing.  Runs with the GIL released.");

PyDoc_STRVAR(creator_exit_doc,
"__exit__($self, /, exc_type, exc_val, exc_tb)\n--\n\n"
"Finish the archive when the block ended normally (the GIL released\n"
"while libzim writes it out), or discard it when the block raised: no\n"
"file at filename and libzim's temporary files removed.\n\n"
"python-libzim finishes the archive anyway (its issue #42).  An error of\n"
"a callback on libzim's workers raises WriterError here.");

static PyMethodDef creator_methods[] = {
    {"config_verbose", ZC_KW_METHOD(config_verbose), config_verbose_doc},
    {"config_compression", ZC_KW_METHOD(config_compression), config_compression_doc},
    {"config_clustersize", ZC_KW_METHOD(config_clustersize), config_clustersize_doc},
    {"config_indexing", (PyCFunction)(void (*)(void))config_indexing,
     METH_FASTCALL | METH_KEYWORDS, config_indexing_doc},
    {"config_nbworkers", ZC_KW_METHOD(config_nbworkers), config_nbworkers_doc},
    {"set_mainpath", ZC_KW_METHOD(set_mainpath), set_mainpath_doc},
    {"add_item", ZC_KW_METHOD(add_item), add_item_doc},
    {"add_metadata", (PyCFunction)(void (*)(void))add_metadata, METH_FASTCALL | METH_KEYWORDS,
     add_metadata_doc},
    {"add_illustration", (PyCFunction)(void (*)(void))add_illustration,
     METH_FASTCALL | METH_KEYWORDS, add_illustration_doc},
    {"add_redirection", (PyCFunction)(void (*)(void))add_redirection,
     METH_FASTCALL | METH_KEYWORDS, add_redirection_doc},
    {"add_alias", (PyCFunction)(void (*)(void))add_alias, METH_FASTCALL | METH_KEYWORDS,
     add_alias_doc},
    {"__enter__", creator_enter, METH_NOARGS, creator_enter_doc},
    {"__exit__", (PyCFunction)(void (*)(void))creator_exit, METH_FASTCALL | METH_KEYWORDS,
     creator_exit_doc},
    {"_abort", creator_abort, METH_NOARGS,
     "_abort($self, /)\n--\n\nDiscards an unfinished archive."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot creator_slots[] = {
    {Py_tp_new, creator_new},
    {Py_tp_init, creator_init},
    {Py_tp_dealloc, creator_dealloc},
    {Py_tp_traverse, creator_traverse},
    {Py_tp_clear, creator_clear},
    {Py_tp_methods, creator_methods},
    {Py_tp_getset, creator_getset},
    {Py_tp_doc, "_Creator(filename)\n--\n\n"
                "The native base of libzim.writer.Creator (use that): drives libzim's\n"
                "writer with the GIL released."},
    {0, NULL},
};

static PyType_Spec creator_spec = {
    .name = "libzim.writer._Creator",
    .basicsize = sizeof(CreatorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = creator_slots,
};

/* libzim.writer hands over its Item and Hint classes, which add_item checks. */
static PyObject *writer_register(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[0]) || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_writer_register(Item, Hint)");
        return NULL;
    }
    zc_state *st = PyModule_GetState(m);
    Py_XSETREF(st->WriterItem, Py_NewRef(args[0]));
    Py_XSETREF(st->WriterHint, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

static PyMethodDef writer_functions[] = {
    {"_writer_register", (PyCFunction)(void (*)(void))writer_register, METH_FASTCALL,
     "_writer_register(Item, Hint)\n--\n\nInternal: libzim.writer's classes."},
    {NULL, NULL, 0, NULL},
};

static int key_error;
static void make_key(void) { key_error = pthread_key_create(&pinned_key, unpin); }

int zc_writer_init_types(PyObject *m, zc_state *st) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_key);
    if (key_error) {
        errno = key_error;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    if (zc_add_type(m, &st->WriterBlob, &blob_spec, 0) < 0 ||
        zc_add_type(m, &st->Creator, &creator_spec, 0) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "_WriterBlob", (PyObject *)st->WriterBlob) < 0 ||
        PyModule_AddObjectRef(m, "_Creator", (PyObject *)st->Creator) < 0 ||
        PyModule_AddFunctions(m, writer_functions) < 0)
        return -1;
    return 0;
}
