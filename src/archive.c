/* Reader: Archive, the type (its metadata, illustrations and integrity checks
 * are in archive_metadata.c; Entry, Item and the content Blob, EntryIterator
 * each in a file of their own).
 *
 * Slightly over 900 lines, and one piece: the lookups and the lease of spare
 * native copies they run on are one mechanism (split, the lease's helpers
 * would leave the file they are inlined in), and the type's docstrings and
 * tables, a third of the file, stay beside the methods they describe.
 *
 * GIL rule (see README, "GIL policy"): every shim call that can read the
 * file or decompress runs with the GIL released, and builds no Python
 * object; everything an accessor needs afterwards was gathered in that
 * same call (zs_*_info), so property reads never call into libzim. */
#include "archive.h"
#include "archive_metadata.h"
#include "entry.h"
#include "entry_iterator.h"

#include <structmember.h>

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static void free_archive(void *h) { zs_archive_free((zs_archive *)h); }

/* ==== Archive ================================================================= */

/* Takes a use of the native archive, or raises ClosedError. Pair with
 * zc_archive_leave(). */
zs_archive *zc_archive_enter(zc_state *st, PyObject *self) {
    if (!PyObject_TypeCheck(self, st->Archive)) {
        PyErr_Format(PyExc_TypeError, "expected libzim.reader.Archive, not %.100s",
                     Py_TYPE(self)->tp_name);
        return NULL;
    }
    zs_archive *h = zc_guard_enter(&ARCHIVE(self)->guard);
    if (!h)
        zc_raise_closed(st, "archive", ARCHIVE(self)->name);
    return h;
}

void zc_archive_leave(PyObject *self) { zc_guard_leave(&ARCHIVE(self)->guard, free_archive); }

PyObject *zc_archive_name(PyObject *self) { return ARCHIVE(self)->name; }

static int archive_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"filename", "offset", "size", NULL};
    ArchiveObject *a = ARCHIVE(self);
    zc_state *st = zc_state_of(self);
    PyObject *path_bytes = NULL, *offset_o = Py_None, *size_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|$OO:Archive", kwlist,
                                     PyUnicode_FSConverter, &path_bytes, &offset_o, &size_o))
        return -1;
    int rc = -1;
    PyObject *fsname = NULL;
    if (atomic_load(&a->guard.handle) || a->filename) {
        PyErr_SetString(PyExc_RuntimeError, "Archive.__init__ called twice");
        goto done;
    }
    const char *path = PyBytes_AS_STRING(path_bytes);
    fsname = PyUnicode_DecodeFSDefault(path);
    if (!fsname)
        goto done;
    unsigned range = (offset_o != Py_None ? ZS_RANGE_OFFSET : 0) |
                     (size_o != Py_None ? ZS_RANGE_SIZE : 0);
    unsigned long long offset = 0, size = 0;
    if (range & ZS_RANGE_OFFSET) {
        offset = PyLong_AsUnsignedLongLong(offset_o);
        if (PyErr_Occurred())
            goto bad_range;
    }
    if (range & ZS_RANGE_SIZE) {
        size = PyLong_AsUnsignedLongLong(size_o);
        if (PyErr_Occurred())
            goto bad_range;
    }
    zs_archive_info info;
    zs_error err;
    zs_archive *h;
    for (;;) {
        NOGIL(h = zs_archive_open(path, range, offset, size, &info, &err));
        if (h || err.kind != ZS_ERR_INTERRUPTED)
            break;
        /* PEP 475: run the signal handlers; retry unless one raised. */
        if (PyErr_CheckSignals() < 0)
            goto done;
    }
    if (!h) {
        zs_error e2 = err;
        if (err.kind == ZS_ERR_ARG) {
            zc_raise_as(PyExc_ValueError, err.msg, fsname);
            goto done;
        }
        if (err.kind == ZS_ERR_IO)
            snprintf(e2.msg, sizeof e2.msg, "cannot open: %.400s", err.msg);
        zc_raise(st, &e2, fsname);
        goto done;
    }
    a->info = info;
    for (int i = 0; i < ZS_STAT_COUNT; i++)
        atomic_store(&a->stats[i], -1);
    atomic_store(&a->lookup_cost, ZC_ADAPTIVE_START_NS);
    atomic_store(&a->read_cost, ZC_ADAPTIVE_START_NS);
    a->name = Py_NewRef(fsname);
    a->has_range = range != 0;
    a->offset = offset;
    /* offset= alone: the size libzim was given, the rest of the file at open. */
    a->size = (range & ZS_RANGE_SIZE) ? size : info.filesize;
    PyObject *path_type = zc_lazy_import(&st->pathlib_Path, "pathlib", "Path");
    a->filename = path_type ? PyObject_CallOneArg(path_type, fsname) : NULL;
    if (!a->filename) {
        zs_archive_free(h);
        goto done;
    }
    atomic_store(&a->guard.handle, h);
    rc = 0;
    goto done;
bad_range:
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError) ||
        PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "offset and size must be non-negative integers within the file");
    }
done:
    Py_XDECREF(fsname);
    Py_DECREF(path_bytes);
    return rc;
}

static int archive_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(ARCHIVE(self)->filename);
    Py_VISIT(ARCHIVE(self)->name);
    return 0;
}

static int archive_clear(PyObject *self) {
    Py_CLEAR(ARCHIVE(self)->filename);
    Py_CLEAR(ARCHIVE(self)->name);
    return 0;
}

/* Frees the idle copies (leased ones are freed when given back after close). */
static void drop_spares(ArchiveObject *a) {
    for (int i = 0; i < ZC_SPARES; i++) {
        zs_archive *c = atomic_exchange(&a->spare[i], NULL);
        if (c) {
            zs_archive_free(c);
            atomic_fetch_sub(&a->spares_made, 1);
        }
    }
}

static void archive_dealloc(PyObject *self) {
    ArchiveObject *a = ARCHIVE(self);
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (a->weakreflist)
        PyObject_ClearWeakRefs(self);
    /* Nobody else can hold a use of a dying object: free directly, but
     * without the GIL since it closes files and drops caches. */
    void *h = atomic_exchange(&a->guard.handle, NULL);
    if (h)
        NOGIL(zs_archive_free(h));
    NOGIL(drop_spares(a));
    archive_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* Runs one lookup natively; op selects which. */
enum { LK_PATH, LK_TITLE, LK_ID, LK_MAIN, LK_RANDOM };

static zs_entry *lookup(zs_archive *h, int op, const char *s, Py_ssize_t len, uint64_t id,
                        zs_entry_info *info, zs_error *err) {
    switch (op) {
    case LK_PATH: return zs_archive_entry_by_path(h, s, (size_t)len, info, err);
    case LK_TITLE: return zs_archive_entry_by_title(h, s, (size_t)len, info, err);
    case LK_ID: return zs_archive_entry_by_index(h, id, info, err);
    case LK_MAIN: return zs_archive_main_entry(h, info, err);
    default: return zs_archive_random_entry(h, info, err);
    }
}

/* One native copy per core beyond the first: more cannot run at once. */
static int spare_cap(void) {
    static atomic_int cap;
    int c = atomic_load_explicit(&cap, memory_order_relaxed);
    if (!c) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c = n > 1 ? (int)(n - 1 < ZC_SPARES ? n - 1 : ZC_SPARES) : 1;
        atomic_store_explicit(&cap, c, memory_order_relaxed);
    }
    return c;
}

/* The handle this thread tries first: 0 the archive's own, k spare slot k-1.
 * Threads are numbered as they first look something up, so threads started
 * together prefer different handles.  An entry keeps the handle that found it
 * and its item is made through it without a lease; when two threads traded
 * handles from lookup to lookup, one's get_item() met the other's lookup in
 * libzim's dirent lock (futex waits in Entry::getItem).  Once each thread has
 * a handle of its own it keeps it: the other takes a spare only when the
 * archive's own is busy, and the archive's own only when its spare is. */
static int preferred_handle(void) {
    static atomic_uint threads;
    static _Thread_local unsigned number;
    if (!number)
        number = atomic_fetch_add(&threads, 1) + 1;
    return (int)(number % (unsigned)(spare_cap() + 1));
}

static zs_archive *take_spare(ArchiveObject *a, int i) {
    if (!atomic_load_explicit(&a->spare[i], memory_order_relaxed))
        return NULL;  /* no write: the slot's cache line stays shared */
    return atomic_exchange(&a->spare[i], NULL);
}

/* how: LEASED_OWN, SHARED_OWN, or the spare slot to give the copy back to. */
enum { LEASED_OWN = -1, SHARED_OWN = -2 };

/* The handle one lookup runs on: the thread's preferred one if idle, else the
 * archive's own when no other call is in it (always so while the GIL is
 * held, and spares exist only once calls overlapped), else an idle copy, else
 * a new copy (up to spare_cap()), else the archive's own, shared.  Touches no
 * Python object: runs with or without the GIL.  Entries remember the copy
 * that found them, so their items read through it too. */
static zs_archive *lease(ArchiveObject *a, zs_archive *h, int *how) {
    int mine = preferred_handle() - 1;
    zs_archive *c;
    if (mine >= 0 && (c = take_spare(a, mine))) {
        *how = mine;
        return c;
    }
    if (!atomic_exchange(&a->primary_busy, 1)) {
        *how = LEASED_OWN;
        return h;
    }
    for (int i = 0; i < ZC_SPARES; i++) {
        if ((c = take_spare(a, i))) {
            *how = i;
            return c;
        }
    }
    *how = mine >= 0 ? mine : 0;
    if (atomic_fetch_add(&a->spares_made, 1) < spare_cap()) {
        zs_error err;
        if ((c = zs_archive_clone(h, &err)))
            return c;
    }
    atomic_fetch_sub(&a->spares_made, 1);
    *how = SHARED_OWN;
    return h;
}

static void give_back(ArchiveObject *a, zs_archive *c, int how) {
    if (how == LEASED_OWN) {
        atomic_store(&a->primary_busy, 0);
        return;
    }
    if (how == SHARED_OWN)
        return;
    if (!zc_guard_closed(&a->guard)) {
        for (int k = 0; k < ZC_SPARES; k++) {
            int i = (how + k) % ZC_SPARES;  /* its own slot first */
            zs_archive *expected = NULL;
            if (atomic_compare_exchange_strong(&a->spare[i], &expected, c)) {
                /* close() may have marked the guard and dropped the spares
                 * between the check above and this swap, leaving this copy
                 * (and its file) open until the object dies.  Either close()
                 * marked it before this re-check, which then sees it, or
                 * its drop_spares() comes after the swap and takes the copy;
                 * whoever swaps the copy out frees it. */
                if (zc_guard_closed(&a->guard) && (c = atomic_exchange(&a->spare[i], NULL)))
                    break;
                return;
            }
        }
    }
    zs_archive_free(c);
    atomic_fetch_sub(&a->spares_made, 1);
}

/* want_entry: 1 returns the Entry, 0 returns True/False for has_*(). */
static PyObject *archive_lookup(PyObject *self, int op, PyObject *key, int want_entry) {
    zc_state *st = zc_state_of(self);
    const char *s = NULL;
    Py_ssize_t len = 0;
    uint64_t id = 0;
    if (op == LK_PATH || op == LK_TITLE) {
        if (!(s = zc_utf8(key, &len, op == LK_PATH ? "path" : "title")))
            return NULL;
    } else if (op == LK_ID) {
        if (!PyLong_Check(key))
            return PyErr_Format(PyExc_TypeError, "entry_id must be int, not %.100s",
                                Py_TYPE(key)->tp_name);
        id = PyLong_AsUnsignedLongLong(key);
        if (id == (uint64_t)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return PyErr_Format(st->InvalidIndexError, "%U: entry id %R out of range",
                                ARCHIVE(self)->name, key);
        }
    }
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_entry_info info;
    zs_error err;
    zs_entry *e;
    ArchiveObject *a = ARCHIVE(self);
    ZC_ADAPTIVE(&a->lookup_cost, {
        int how;
        zs_archive *lh = lease(a, h, &how);
        e = lookup(lh, op, s, len, id, &info, &err);
        give_back(a, lh, how);
    });
    zc_archive_leave(self);
    if (!want_entry) {
        if (e) {
            zs_entry_free(e);
            Py_RETURN_TRUE;
        }
        if (err.kind == ZS_ERR_NOT_FOUND)
            Py_RETURN_FALSE;
    }
    if (!e)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return zc_entry_new(st, e, &info, ARCHIVE(self));
}

static PyObject *a_get_entry_by_path(PyObject *self, PyObject *path) { return archive_lookup(self, LK_PATH, path, 1); }
static PyObject *a_has_entry_by_path(PyObject *self, PyObject *path) { return archive_lookup(self, LK_PATH, path, 0); }
static PyObject *a_get_entry_by_title(PyObject *self, PyObject *title) { return archive_lookup(self, LK_TITLE, title, 1); }
static PyObject *a_has_entry_by_title(PyObject *self, PyObject *title) { return archive_lookup(self, LK_TITLE, title, 0); }
static PyObject *a_get_entry_by_id(PyObject *self, PyObject *id) { return archive_lookup(self, LK_ID, id, 1); }
static PyObject *a_get_random_entry(PyObject *self, PyObject *noargs) { (void)noargs; return archive_lookup(self, LK_RANDOM, NULL, 1); }
static PyObject *a_main_entry(PyObject *self, void *c) { (void)c; return archive_lookup(self, LK_MAIN, NULL, 1); }

ZC_KEYWORD_ARG(a_get_entry_by_path, "get_entry_by_path", "path")
ZC_KEYWORD_ARG(a_has_entry_by_path, "has_entry_by_path", "path")
ZC_KEYWORD_ARG(a_get_entry_by_title, "get_entry_by_title", "title")
ZC_KEYWORD_ARG(a_has_entry_by_title, "has_entry_by_title", "title")
ZC_KEYWORD_ARG(a_get_entry_by_id, "_get_entry_by_id", "entry_id")
static PyObject *archive_iter(PyObject *self, zs_order order, PyObject *prefix) {
    zc_state *st = zc_state_of(self);
    const char *s = NULL;
    Py_ssize_t len = 0;
    if (prefix && !(s = zc_utf8(prefix, &len, "prefix")))
        return NULL;
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_error err;
    uint64_t size = 0;
    zs_iter *it;
    NOGIL(it = prefix ? zs_iter_prefix(h, order, s, (size_t)len, &size, &err)
                      : zs_iter_new(h, order, &size, &err));
    zc_archive_leave(self);
    if (!it)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return zc_iter_new(st, it, size, ARCHIVE(self));
}

static PyObject *a_iter_by_path(PyObject *self, PyObject *n) { (void)n; return archive_iter(self, ZS_BY_PATH, NULL); }
static PyObject *a_iter_by_title(PyObject *self, PyObject *n) { (void)n; return archive_iter(self, ZS_BY_TITLE, NULL); }
static PyObject *a_iter_efficient(PyObject *self, PyObject *n) { (void)n; return archive_iter(self, ZS_BY_CLUSTER, NULL); }
static PyObject *a_find_by_path(PyObject *self, PyObject *p) { return archive_iter(self, ZS_BY_PATH, p); }
static PyObject *a_find_by_title(PyObject *self, PyObject *p) { return archive_iter(self, ZS_BY_TITLE, p); }
ZC_KEYWORD_ARG(a_find_by_path, "find_by_path", "prefix")
ZC_KEYWORD_ARG(a_find_by_title, "find_by_title", "prefix")

static PyObject *a_close(PyObject *self, PyObject *noargs) {
    (void)noargs;
    /* In-flight calls of other threads keep the handle until they finish;
     * the last one frees it (zc_guard). */
    if (atomic_load(&ARCHIVE(self)->guard.handle))
        NOGIL(zc_guard_close(&ARCHIVE(self)->guard, free_archive));
    else
        zc_guard_close(&ARCHIVE(self)->guard, free_archive);  /* frees nothing */
    NOGIL(drop_spares(ARCHIVE(self)));
    Py_RETURN_NONE;
}

static PyObject *a_enter(PyObject *self, PyObject *noargs) {
    (void)noargs;
    zc_state *st = zc_state_of(self);
    if (!zc_archive_enter(st, self))
        return NULL;
    zc_archive_leave(self);
    return Py_NewRef(self);
}

static PyObject *a_exit(PyObject *self, PyObject *args) {
    (void)args;
    return a_close(self, NULL);
}

/* Properties answered from the info read at open; they raise once closed
 * so that use after close() is uniformly an error. */
static ArchiveObject *open_or_raise(PyObject *self) {
    ArchiveObject *a = ARCHIVE(self);
    if (zc_guard_closed(&a->guard)) {
        zc_raise_closed(zc_state_of(self), "archive", a->name);
        return NULL;
    }
    return a;
}

#define INFO_INT(fname, field)                                                  \
    static PyObject *fname(PyObject *self, void *c) {                           \
        (void)c;                                                                \
        ArchiveObject *a = open_or_raise(self);                                 \
        return a ? PyLong_FromUnsignedLongLong((unsigned long long)a->info.field) : NULL; \
    }
#define INFO_BOOL(fname, field)                                                 \
    static PyObject *fname(PyObject *self, void *c) {                           \
        (void)c;                                                                \
        ArchiveObject *a = open_or_raise(self);                                 \
        return a ? PyBool_FromLong(a->info.field) : NULL;                       \
    }
INFO_INT(a_filesize, filesize)
INFO_INT(a_all_entry_count, all_entry_count)
INFO_INT(a_entry_count, entry_count)
INFO_INT(a_dirent_cache_max_size, dirent_cache_max)
INFO_BOOL(a_has_main_entry, has_main_entry)

/* Read once, natively, on first use; racing first reads compute the same. */
static int archive_stat(PyObject *self, zs_stat which, int64_t *out) {
    ArchiveObject *a = ARCHIVE(self);
    long long v = atomic_load(&a->stats[which]);
    if (v >= 0) {
        *out = v;
        return 0;
    }
    zc_state *st = zc_state_of(self);
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return -1;
    zs_error err;
    int rc;
    NOGIL(rc = zs_archive_stat(h, which, out, &err));
    zc_archive_leave(self);
    if (rc < 0) {
        zc_raise(st, &err, a->name);
        return -1;
    }
    atomic_store(&a->stats[which], *out);
    return 0;
}

#define STAT_GETTER(fname, which, make)                                       \
    static PyObject *fname(PyObject *self, void *c) {                         \
        (void)c;                                                              \
        int64_t v;                                                            \
        if (!open_or_raise(self) || archive_stat(self, which, &v) < 0)        \
            return NULL;                                                      \
        return make(v);                                                       \
    }
STAT_GETTER(a_article_count, ZS_STAT_ARTICLE_COUNT, PyLong_FromLongLong)
STAT_GETTER(a_media_count, ZS_STAT_MEDIA_COUNT, PyLong_FromLongLong)
STAT_GETTER(a_has_fulltext_index, ZS_STAT_HAS_FULLTEXT_INDEX, PyBool_FromLong)
STAT_GETTER(a_has_title_index, ZS_STAT_HAS_TITLE_INDEX, PyBool_FromLong)
INFO_BOOL(a_has_checksum, has_checksum)
INFO_BOOL(a_is_multipart, is_multipart)
INFO_BOOL(a_has_new_namespace_scheme, has_new_namespace_scheme)

static PyObject *a_checksum(PyObject *self, void *c) {
    (void)c;
    ArchiveObject *a = open_or_raise(self);
    return a ? PyUnicode_FromString(a->info.checksum) : NULL;
}

static PyObject *a_uuid(PyObject *self, void *c) {
    (void)c;
    ArchiveObject *a = open_or_raise(self);
    if (!a)
        return NULL;
    zc_state *st = zc_state_of(self);
    PyObject *uuid_type = zc_lazy_import(&st->uuid_UUID, "uuid", "UUID");
    if (!uuid_type)
        return NULL;
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)a->info.uuid, 16);
    if (!bytes)
        return NULL;
    PyObject *kw = Py_BuildValue("{sO}", "bytes", bytes);
    Py_DECREF(bytes);
    if (!kw)
        return NULL;
    PyObject *empty = PyTuple_New(0);
    PyObject *r = empty ? PyObject_Call(uuid_type, empty, kw) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(kw);
    return r;
}

static PyObject *a_filename(PyObject *self, void *c) {
    (void)c;
    ArchiveObject *a = ARCHIVE(self);
    if (!a->filename)
        return zc_raise_closed(zc_state_of(self), "archive", NULL);
    return Py_NewRef(a->filename);
}

static PyObject *a_spares(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(atomic_load(&ARCHIVE(self)->spares_made));
}

static PyObject *a_cluster_cache(PyObject *self, void *c) {
    (void)c;
    uint64_t id = ARCHIVE(self)->info.cluster_cache;
    if (!id)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(id);
}

static PyObject *a_range(PyObject *self, void *c) {
    (void)c;
    ArchiveObject *a = ARCHIVE(self);
    if (!a->has_range)
        Py_RETURN_NONE;
    return Py_BuildValue("(KK)", a->offset, a->size);
}

static PyObject *a_closed(PyObject *self, void *c) {
    (void)c;
    ArchiveObject *a = ARCHIVE(self);
    return PyBool_FromLong(zc_guard_closed(&a->guard));
}

static int a_set_dirent_cache_max_size(PyObject *self, PyObject *value, void *c) {
    (void)c;
    (void)value;
    if (!open_or_raise(self))
        return -1;
    zc_state *st = zc_state_of(self);
    PyObject *note = PyObject_GetAttrString(PyType_GetModuleByDef(Py_TYPE(self), &zc_module_def),
                                            "LIBZIM_VERSION_NOTE");
    if (note) {
        PyErr_Format(st->NotSupportedError, "%U: %U", ARCHIVE(self)->name, note);
        Py_DECREF(note);
    }
    return -1;
}

static PyObject *a_dirent_cache_current_size(PyObject *self, void *c) {
    if (open_or_raise(self))
        a_set_dirent_cache_max_size(self, NULL, c);
    return NULL;
}

/* What equality compares, as python-libzim does: the `filename` attribute
 * (a subclass may override it), expanded and resolved (symlinks, ".."); and,
 * beyond python-libzim, which has no offset=, the range opened in the file.
 * NULL with an exception set when the filename does not resolve. */
static PyObject *equality_key(PyObject *self) {
    ArchiveObject *a = ARCHIVE(self);
    PyObject *f = PyObject_GetAttrString(self, "filename");
    PyObject *e = f ? PyObject_CallMethod(f, "expanduser", NULL) : NULL;
    PyObject *r = e ? PyObject_CallMethod(e, "resolve", NULL) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(e);
    if (!r)
        return NULL;
    PyObject *key = a->has_range ? Py_BuildValue("(NKK)", r, a->offset, a->size)
                                 : Py_BuildValue("(NOO)", r, Py_None, Py_None);
    return key;
}

/* python-libzim answers "not equal" when a filename does not resolve. */
static int key_failed(void) {
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return 0;
}

static PyObject *archive_richcompare(PyObject *self, PyObject *other, int op) {
    zc_state *st = zc_state_of(self);
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(other, st->Archive))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *ka = equality_key(self), *kb = ka ? equality_key(other) : NULL;
    int eq = ka && kb ? PyObject_RichCompareBool(ka, kb, Py_EQ) : key_failed();
    Py_XDECREF(ka);
    Py_XDECREF(kb);
    if (eq < 0)
        return NULL;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

/* Consistent with equality (python-libzim's Archive is unhashable): equal
 * archives resolve to the same key. */
static Py_hash_t archive_hash(PyObject *self) {
    PyObject *key = equality_key(self);
    if (!key)
        return key_failed() < 0 ? -1 : PyBaseObject_Type.tp_hash(self);
    Py_hash_t h = PyObject_Hash(key);
    Py_DECREF(key);
    return h;
}

static PyObject *archive_repr(PyObject *self) {
    ArchiveObject *a = ARCHIVE(self);
    PyObject *closed = a_closed(self, NULL);
    PyObject *r = PyUnicode_FromFormat("%s(filename=%S%s)", zc_type_name(Py_TYPE(self)),
                                       a->filename ? a->filename : Py_None,
                                       closed == Py_True ? ", closed" : "");
    Py_XDECREF(closed);
    return r;
}

/* Docstrings.  The first line of each method's is its text signature
 * (inspect.signature() and help() read it); the rest says what it returns,
 * what it raises, and whether the GIL is released: "adaptive" calls release
 * it only while the archive's running average of that kind of call is above
 * 20 us (README, "GIL policy"). */

PyDoc_STRVAR(a_close_doc,
"close($self, /)\n--\n\n"
"Close the archive: every later call on it raises ClosedError.\n\n"
"Entries, items, content views, iterators, searchers and results made from\n"
"it stay valid, and keep the file open until the last of them is dropped.\n"
"A call running in another thread finishes first; the last user frees\n"
"libzim's archive.  Idempotent.  Beyond python-libzim, which has no close().");

PyDoc_STRVAR(a_enter_doc,
"__enter__($self, /)\n--\n\n"
"Return the archive itself; raises ClosedError if it was closed.");

PyDoc_STRVAR(a_exit_doc,
"__exit__($self, /, *exc_info)\n--\n\n"
"Close the archive (close()) when the with block ends; never suppresses\n"
"an exception.");

PyDoc_STRVAR(a_has_entry_by_path_doc,
"has_entry_by_path($self, /, path)\n--\n\n"
"Return True if an entry has this path, else False.\n\n"
"path is the entry's full path as the archive stores it (a str).\n"
"Adaptive GIL release, like get_entry_by_path().");

PyDoc_STRVAR(a_get_entry_by_path_doc,
"get_entry_by_path($self, /, path)\n--\n\n"
"Return the Entry at this path.\n\n"
"A redirect is returned as itself (is_redirect is True).  Raises\n"
"EntryNotFoundError (a KeyError and a RuntimeError, as python-libzim's\n"
"KeyError) if there is none, ClosedError after close().  Thread-safe: a\n"
"lookup that finds the archive's native handle busy runs on a spare copy\n"
"of it; the GIL is released only when lookups on this archive have been\n"
"slow lately (adaptive, 20 us).");

PyDoc_STRVAR(a_has_entry_by_title_doc,
"has_entry_by_title($self, /, title)\n--\n\n"
"Return True if an entry has exactly this title, else False.\n\n"
"Adaptive GIL release, like get_entry_by_title().");

PyDoc_STRVAR(a_get_entry_by_title_doc,
"get_entry_by_title($self, /, title)\n--\n\n"
"Return the first Entry with exactly this title (title order).\n\n"
"Raises EntryNotFoundError (a KeyError) if there is none.  Adaptive GIL\n"
"release, like get_entry_by_path().");

PyDoc_STRVAR(a_get_random_entry_doc,
"get_random_entry($self, /)\n--\n\n"
"Return a randomly chosen article Entry (libzim's choice).\n\n"
"Raises EntryNotFoundError if the archive has no article.  In archives\n"
"written by libzim 8.1.1 or 9.2.3, items added with Hint.FRONT_ARTICLE\n"
"false are articles too.  Adaptive GIL release.");

PyDoc_STRVAR(a_get_entry_by_id_doc,
"_get_entry_by_id($self, /, entry_id)\n--\n\n"
"Return the Entry at this index in path order (0 .. all_entry_count-1).\n\n"
"Raises InvalidIndexError (an IndexError and an OverflowError, as\n"
"python-libzim's) when out of range.  python-libzim's name, underscore\n"
"included.  Adaptive GIL release.");

PyDoc_STRVAR(a_get_metadata_doc,
"get_metadata($self, /, name)\n--\n\n"
"Return the value of the metadata entry name ('Title', 'Language', ...)\n"
"as bytes.\n\n"
"Raises EntryNotFoundError (a KeyError) if there is no such metadata.\n"
"Adaptive GIL release (it reads and may decompress a cluster).");

PyDoc_STRVAR(a_get_metadata_item_doc,
"get_metadata_item($self, /, name)\n--\n\n"
"Return the metadata entry name as an Item (its mimetype and content).\n\n"
"Raises EntryNotFoundError (a KeyError) if there is no such metadata.\n"
"Adaptive GIL release.");

PyDoc_STRVAR(a_get_illustration_sizes_doc,
"get_illustration_sizes($self, /)\n--\n\n"
"Return the set of sizes (in pixels, square) the archive has\n"
"illustrations for.\n\n"
"Deprecated, with python-libzim 3.13's DeprecationWarning; its\n"
"replacement get_illustration_infos() needs libzim 9.3.  Releases the GIL.");

PyDoc_STRVAR(a_has_illustration_doc,
"has_illustration($self, /, size=None)\n--\n\n"
"Return True if there is an illustration of this size in pixels\n"
"(None: 48, libzim's default), else False.\n\n"
"ValueError for a negative size or one past 2**32-1.  Releases the GIL.");

PyDoc_STRVAR(a_get_illustration_item_doc,
"get_illustration_item($self, /, size=None)\n--\n\n"
"Return the Item of the illustration (a PNG) of this size in pixels\n"
"(None: 48).\n\n"
"Raises EntryNotFoundError (a KeyError) if there is none, ValueError for a\n"
"size out of range.  Adaptive GIL release.");

PyDoc_STRVAR(a_check_doc,
"check($self, /)\n--\n\n"
"Return True if the archive has a checksum and its bytes match it, else\n"
"False.\n\n"
"Reads the whole file (all parts) with the GIL released: other threads\n"
"run meanwhile, and may keep using this archive.");

PyDoc_STRVAR(a_validate_doc,
"validate($self, /, checks=None)\n--\n\n"
"Run libzim's integrity checks and return the names of those that\n"
"failed, as a list of str ([] when the archive is sound).\n\n"
"checks is an iterable of names from INTEGRITY_CHECKS ('checksum',\n"
"'dirent_ptrs', 'dirent_order', 'title_index', 'cluster_ptrs',\n"
"'dirent_mimetypes'); None runs them all.  ValueError for an unknown\n"
"name, TypeError for a str.  On a ZIM 6.3 archive (written by libzim 9)\n"
"the 'title_index' check reads its front-article title listing, which\n"
"libzim 8.1.1's own check wrongly fails.  Runs with the GIL released.\n"
"Beyond python-libzim.");

PyDoc_STRVAR(a_iter_by_path_doc,
"iter_by_path($self, /)\n--\n\n"
"Return an EntryIterator over every user entry (entry_count of them), in\n"
"path order.\n\n"
"Entries are read in batches of up to 256 with the GIL released.\n"
"Beyond python-libzim.");

PyDoc_STRVAR(a_iter_by_title_doc,
"iter_by_title($self, /)\n--\n\n"
"Return an EntryIterator over the entries of the title index, in title\n"
"order (batches read with the GIL released).  Beyond python-libzim.");

PyDoc_STRVAR(a_iter_efficient_doc,
"iter_efficient($self, /)\n--\n\n"
"Return an EntryIterator over the entries iter_by_path() yields, in\n"
"cluster order: the fastest order to read all content, each cluster\n"
"decompressed once.\n\n"
"Batches read with the GIL released.  Beyond python-libzim.");

PyDoc_STRVAR(a_find_by_path_doc,
"find_by_path($self, /, prefix)\n--\n\n"
"Return an EntryIterator over the entries whose path starts with prefix,\n"
"in path order (batches read with the GIL released).  Beyond\n"
"python-libzim.");

PyDoc_STRVAR(a_find_by_title_doc,
"find_by_title($self, /, prefix)\n--\n\n"
"Return an EntryIterator over the entries whose title starts with\n"
"prefix, in title order (batches read with the GIL released).  Beyond\n"
"python-libzim.");

static PyMethodDef archive_methods[] = {
    ZC_REDUCE_METHOD,
    {"close", a_close, METH_NOARGS, a_close_doc},
    {"__enter__", a_enter, METH_NOARGS, a_enter_doc},
    {"__exit__", a_exit, METH_VARARGS, a_exit_doc},
    {"has_entry_by_path", ZC_KW_METHOD(a_has_entry_by_path), a_has_entry_by_path_doc},
    {"get_entry_by_path", ZC_KW_METHOD(a_get_entry_by_path), a_get_entry_by_path_doc},
    {"has_entry_by_title", ZC_KW_METHOD(a_has_entry_by_title), a_has_entry_by_title_doc},
    {"get_entry_by_title", ZC_KW_METHOD(a_get_entry_by_title), a_get_entry_by_title_doc},
    {"get_random_entry", a_get_random_entry, METH_NOARGS, a_get_random_entry_doc},
    {"_get_entry_by_id", ZC_KW_METHOD(a_get_entry_by_id), a_get_entry_by_id_doc},
    {"get_metadata", ZC_KW_METHOD(zc_archive_get_metadata), a_get_metadata_doc},
    {"get_metadata_item", ZC_KW_METHOD(zc_archive_get_metadata_item), a_get_metadata_item_doc},
    {"get_illustration_sizes", zc_archive_get_illustration_sizes, METH_NOARGS, a_get_illustration_sizes_doc},
    {"has_illustration", (PyCFunction)(void (*)(void))zc_archive_has_illustration,
     METH_FASTCALL | METH_KEYWORDS, a_has_illustration_doc},
    {"get_illustration_item", (PyCFunction)(void (*)(void))zc_archive_get_illustration_item,
     METH_FASTCALL | METH_KEYWORDS, a_get_illustration_item_doc},
    {"check", zc_archive_check, METH_NOARGS, a_check_doc},
    {"validate", (PyCFunction)(void (*)(void))zc_archive_validate, METH_VARARGS | METH_KEYWORDS,
     a_validate_doc},
    {"iter_by_path", a_iter_by_path, METH_NOARGS, a_iter_by_path_doc},
    {"iter_by_title", a_iter_by_title, METH_NOARGS, a_iter_by_title_doc},
    {"iter_efficient", a_iter_efficient, METH_NOARGS, a_iter_efficient_doc},
    {"find_by_path", ZC_KW_METHOD(a_find_by_path), a_find_by_path_doc},
    {"find_by_title", ZC_KW_METHOD(a_find_by_title), a_find_by_title_doc},
    {NULL, NULL, 0, NULL},
};

/* Properties read from what the open gathered never enter libzim; the
 * counts and index flags marked "read once" are asked of libzim (GIL
 * released) the first time and kept.  The public ones raise ClosedError
 * after close(), except filename and closed. */
static PyGetSetDef archive_getset[] = {
    {"filename", a_filename, NULL,
     "The path the archive was opened with, as a pathlib.Path (readable after\n"
     "close()).", NULL},
    {"closed", a_closed, NULL,
     "True once close() was called (or the with block ended), else False.", NULL},
    {"_range", a_range, NULL, "(offset, size) when opened inside a larger file, else None.", NULL},
    {"_spares", a_spares, NULL, "Native copies made for concurrent lookups so far.", NULL},
    {"_cluster_cache", a_cluster_cache, NULL,
     "Identity of the decoded-cluster cache shared by Archives of the same\n"
     "file, or None.", NULL},
    {"filesize", a_filesize, NULL,
     "Size of the archive in bytes (the sum of all parts of a multi-part archive).", NULL},
    {"all_entry_count", a_all_entry_count, NULL,
     "Number of entries, metadata and other internal entries included (valid\n"
     "_get_entry_by_id() ids are 0 to this minus 1).", NULL},
    {"entry_count", a_entry_count, NULL,
     "Number of user entries: what iter_by_path() yields (every entry with the\n"
     "old namespace scheme).", NULL},
    {"article_count", a_article_count, NULL,
     "Number of articles, as libzim counts them (with the v0 title listing of\n"
     "libzim 8.1.1 and 9.2.3 writers, items added without Hint.FRONT_ARTICLE\n"
     "too); read once.",
     NULL},
    {"media_count", a_media_count, NULL,
     "Number of media entries (images, video and audio, as libzim counts\n"
     "them); read once.", NULL},
    {"has_main_entry", a_has_main_entry, NULL,
     "True if the archive names a main entry (main_entry), else False.", NULL},
    {"main_entry", a_main_entry, NULL,
     "The main (home page) Entry, often a redirect; raises EntryNotFoundError\n"
     "if the archive has none. A lookup (adaptive GIL release).", NULL},
    {"uuid", a_uuid, NULL,
     "The archive's 16-byte identifier from its header, as a uuid.UUID.", NULL},
    {"has_new_namespace_scheme", a_has_new_namespace_scheme, NULL,
     "True if the archive uses the namespace-less scheme (libzim 7+ writers;\n"
     "user content in 'C'), False for the old A/I/M/... namespaces.", NULL},
    {"is_multipart", a_is_multipart, NULL,
     "True if the archive is split into parts (name.zimaa, name.zimab, ...).", NULL},
    {"has_fulltext_index", a_has_fulltext_index, NULL,
     "True if the archive has a Xapian full-text index for Searcher; read once.", NULL},
    {"has_title_index", a_has_title_index, NULL,
     "True if the archive has a Xapian title index for suggestions; read once.", NULL},
    {"has_checksum", a_has_checksum, NULL,
     "True if the archive's header points to an MD5 checksum (see check()).", NULL},
    {"checksum", a_checksum, NULL,
     "The stored MD5 checksum as 32 hex digits, or '' if the archive has none.", NULL},
    {"metadata_keys", zc_archive_metadata_keys, NULL,
     "Names of the metadata entries, as a list of str (get_metadata() reads\n"
     "one). Read with the GIL released.", NULL},
    {"dirent_cache_max_size", a_dirent_cache_max_size, a_set_dirent_cache_max_size,
     "Dirent cache size libzim was given at open (ZIM_DIRENTCACHE, default\n"
     "512); setting it needs libzim >= 9.3 and raises NotSupportedError.", NULL},
    {"dirent_cache_current_size", a_dirent_cache_current_size, NULL,
     "Entries in the dirent cache now: needs libzim >= 9.3, so it raises\n"
     "NotSupportedError.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef archive_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(ArchiveObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(archive_doc,
"Archive(filename, *, offset=None, size=None)\n--\n\n"
"A ZIM archive opened for reading.\n\n"
"filename is a str or os.PathLike.  With offset (and size), the archive is\n"
"read from that byte range of a larger file; offset alone runs to the end\n"
"of the file.  The file is opened once, with the GIL released, and read\n"
"through that descriptor for the archive's life: replacing or deleting the\n"
"path does not affect an open Archive.  Raises ArchiveError (a\n"
"RuntimeError) when the file cannot be opened, is not a ZIM archive or is\n"
"corrupt; ValueError when offset or size fall outside the file; TypeError\n"
"for a filename that is not a path.  For files from untrusted sources,\n"
"call libzim.reader.check_untrusted() first.\n\n"
"Threads: an Archive may be shared by any number of threads.  Long calls\n"
"(open, check(), validate(), iteration) release the GIL; lookups and\n"
"content reads release it adaptively, only while they have been slow\n"
"(over 20 us on average, such as a cold cache); property reads gathered at\n"
"open never enter libzim.  Concurrent lookups run on spare native copies\n"
"of the archive (at most one per core beyond the first), since libzim\n"
"serialises lookups inside one copy.  The module supports free-threaded\n"
"builds (3.13t).\n\n"
"Use it as a context manager or call close(); the objects made from it stay\n"
"valid after that.  Archives compare equal (and hash alike) when their\n"
"filename resolves to the same path and they were opened on the same range,\n"
"as python-libzim compares them.  An Archive pickles as its path and UUID\n"
"and is reopened (once per process) on the other side.\n\n"
"python-libzim compatibility: the same names and keyword names as\n"
"python-libzim 3.x's libzim.reader.Archive; close(), closed, the iterators,\n"
"find_by_path(), find_by_title(), validate() and offset/size are\n"
"additions.  Every error is a libzim.ZimError, itself a RuntimeError, and\n"
"also the built-in type python-libzim raises (KeyError, IndexError, ...).");

static PyType_Slot archive_slots[] = {
    {Py_tp_init, archive_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, archive_dealloc},
    {Py_tp_traverse, archive_traverse},
    {Py_tp_clear, archive_clear},
    {Py_tp_methods, archive_methods},
    {Py_tp_getset, archive_getset},
    {Py_tp_members, archive_members},
    {Py_tp_richcompare, archive_richcompare},
    {Py_tp_hash, archive_hash},
    {Py_tp_repr, archive_repr},
    {Py_tp_doc, (void *)archive_doc},
    {0, NULL},
};

static PyType_Spec archive_spec = {
    .name = "libzim.reader.Archive",
    .basicsize = sizeof(ArchiveObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = archive_slots,
};

/* ==== setup ====================================================================== */

int zc_archive_init_types(PyObject *m, zc_state *st) {
    if (zc_add_type(m, &st->Archive, &archive_spec, 1) < 0)
        return -1;
    return zc_archive_add_integrity_checks(m);
}
