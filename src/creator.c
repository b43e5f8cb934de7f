/* Writing archives: _Creator, the native core of libzim.writer.Creator.
 *
 * _Creator drives zs_creator (zimshim.h, zimshim_writer.cpp) and writer_blob.c's
 * Blob carries bytes for feed().  Item, ContentProvider, IndexData and friends
 * are Python classes in libzim/writer.py, as in python-libzim;
 * writer_callbacks.c calls their methods from libzim's threads. */
#include "writer.h"

#include <errno.h>
#include <unistd.h>

typedef struct {
    PyObject_HEAD
    zs_creator *h;
    WriterCtx *ctx;
    zc_state *st;
    PyObject *filename;        /* pathlib.Path */
    int state;
    PyThread_type_lock lock;   /* one call into libzim at a time */
} CreatorObject;

/* ---- errors ------------------------------------------------------------------ */

/* The exception a failed call raises: libzim's duplicate-path text as it is
 * (callers match it), other messages after the file name; a callback's
 * exception is chained as the cause. */
static PyObject *raise_werror(CreatorObject *c, const zs_werror *err) {
    PyObject *cause = c->ctx ? zc_writer_take_pending(c->ctx) : NULL;
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
    c->h = zs_creator_new(&zc_writer_callbacks, w, &err);
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
        zc_writer_ctx_unref(c->ctx);
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

int zc_writer_get_uint(PyObject *v, uint64_t max, uint64_t *out, const char *name) {
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
    if (zc_writer_get_uint(v, UINT64_MAX, &n, "size") < 0)
        return NULL;
    return config((CreatorObject *)self, ZS_CFG_CLUSTERSIZE, n, NULL);
}
ZC_KEYWORD_ARG(config_clustersize, "config_clustersize", "size")

static PyObject *config_nbworkers(PyObject *self, PyObject *v) {
    uint64_t n;
    if (zc_writer_get_uint(v, UINT32_MAX, &n, "nbWorkers") < 0)
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
        zc_writer_get_uint(a[0], UINT32_MAX, &size, "size") < 0 || bytes_arg(a[1], "content", &content) < 0)
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
        } else if (zc_writer_get_uint(v, UINT64_MAX, &val, "hint value") < 0) {
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
    zc_writer_keep_error(c->ctx);
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
    if (zc_writer_item_provider(item, &def.provider, &def.provider_size) < 0) {
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

int zc_creator_init_types(PyObject *m, zc_state *st) {
    if (zc_writer_callbacks_init() < 0 || zc_add_type(m, &st->Creator, &creator_spec, 0) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "_Creator", (PyObject *)st->Creator) < 0 ||
        PyModule_AddFunctions(m, writer_functions) < 0)
        return -1;
    return 0;
}
