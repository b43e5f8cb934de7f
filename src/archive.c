/* Reader: Archive, Entry, Item, Blob (the content buffer) and EntryIterator.
 *
 * GIL rule (see README, "GIL policy"): every shim call that can read the
 * file or decompress runs with the GIL released, and builds no Python
 * object; everything an accessor needs afterwards was gathered in that
 * same call (zs_*_info), so property reads never call into libzim. */
#include "archive.h"

#include <structmember.h>

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static void free_archive(void *h) { zs_archive_free((zs_archive *)h); }

/* ==== Blob: the buffer behind Item.content ================================ */

typedef struct {
    PyObject_HEAD
    zs_blob *h;
    zs_str data;
} BlobObject;

static int blob_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    BlobObject *b = (BlobObject *)self;
    /* An empty blob may have no storage; a memoryview still wants a pointer. */
    static char empty[1];
    void *ptr = b->data.ptr ? (void *)b->data.ptr : (void *)empty;
    return PyBuffer_FillInfo(view, self, ptr, (Py_ssize_t)b->data.len, 1, flags);
}

static void blob_dealloc(PyObject *self) {
    BlobObject *b = (BlobObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    /* Dropping the last reference to a cluster frees its buffer only. */
    if (b->h)
        zs_blob_free(b->h);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot blob_slots[] = {
    {Py_tp_dealloc, blob_dealloc},
    {Py_bf_getbuffer, blob_getbuffer},
    {Py_tp_doc, "The read-only buffer behind Item.content: bytes of one item, shared with\n"
                "the decoded cluster (or a copy of its stored bytes) and kept alive by\n"
                "any memoryview of it."},
    {0, NULL},
};

static PyType_Spec blob_spec = {
    .name = "libzim._libzim.Blob",
    .basicsize = sizeof(BlobObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = blob_slots,
};

/* ==== Item ================================================================= */

typedef struct {
    PyObject_HEAD
    zs_item *h;
    zs_item_info info;
    ArchiveObject *archive;
    PyObject *blob;     /* cached content, set once (ZC_BEGIN_CS) */
    atomic_llong size;  /* cached, -1 until read */
} ItemObject;

static PyObject *item_new(zc_state *st, zs_item *h, const zs_item_info *info, ArchiveObject *archive) {
    ItemObject *it = PyObject_GC_New(ItemObject, st->Item);
    if (!it) {
        zs_item_free(h);
        return NULL;
    }
    it->h = h;
    it->info = *info;
    it->archive = (ArchiveObject *)Py_NewRef(archive);
    it->blob = NULL;
    atomic_store(&it->size, -1);
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

static int item_traverse(PyObject *self, visitproc visit, void *arg) {
    ItemObject *it = (ItemObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(it->archive);
    Py_VISIT(it->blob);
    return 0;
}

static int item_clear(PyObject *self) {
    ItemObject *it = (ItemObject *)self;
    Py_CLEAR(it->archive);
    Py_CLEAR(it->blob);
    return 0;
}

static void item_dealloc(PyObject *self) {
    ItemObject *it = (ItemObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    item_clear(self);
    zs_item_free(it->h);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *item_title(PyObject *self, void *c) { (void)c; return zc_str(((ItemObject *)self)->info.title); }
static PyObject *item_path(PyObject *self, void *c) { (void)c; return zc_str(((ItemObject *)self)->info.path); }
static PyObject *item_mimetype(PyObject *self, void *c) {
    (void)c;
    ItemObject *it = (ItemObject *)self;
    if (it->info.mimetype_error)
        return zc_raise(zc_state_of(self), it->info.mimetype_error, it->archive->name);
    return zc_str(it->info.mimetype);
}
static PyObject *item_index(PyObject *self, void *c) { (void)c; return PyLong_FromUnsignedLong(((ItemObject *)self)->info.index); }

static PyObject *item_size(PyObject *self, void *c) {
    (void)c;
    ItemObject *it = (ItemObject *)self;
    long long known = atomic_load(&it->size);
    if (known < 0) {
        uint64_t size = 0;
        zs_error err;
        int rc;
        ZC_ADAPTIVE(&it->archive->read_cost, rc = zs_item_size(it->h, &size, &err));
        if (rc < 0)
            return zc_raise(zc_state_of(self), &err, it->archive->name);
        known = (long long)size;
        atomic_store(&it->size, known);
    }
    return PyLong_FromLongLong(known);
}

static PyObject *item_content(PyObject *self, void *c) {
    (void)c;
    ItemObject *it = (ItemObject *)self;
    PyObject *blob;
    ZC_BEGIN_CS(self);
    blob = Py_XNewRef(it->blob);
    ZC_END_CS();
    if (!blob) {
        zc_state *st = zc_state_of(self);
        zs_error err;
        zs_str data = {NULL, 0};
        zs_blob *h;
        ZC_ADAPTIVE(&it->archive->read_cost, h = zs_item_data(it->h, &data, &err));
        if (!h)
            return zc_raise(st, &err, it->archive->name);
        BlobObject *b = PyObject_New(BlobObject, st->Blob);
        if (!b) {
            zs_blob_free(h);
            return NULL;
        }
        b->h = h;
        b->data = data;
        /* Another thread may have read it meanwhile; keep the first. */
        ZC_BEGIN_CS(self);
        if (!it->blob)
            it->blob = Py_NewRef(b);
        blob = Py_NewRef(it->blob);
        ZC_END_CS();
        Py_DECREF(b);
    }
    PyObject *view = PyMemoryView_FromObject(blob);
    Py_DECREF(blob);
    return view;
}

/* ---- article text ---- */

/* max_chars: None (no limit) or an int >= 0, as SIZE_MAX or the count. */
int zc_max_chars(PyObject *arg, size_t *out) {
    if (arg == NULL || arg == Py_None) {
        *out = SIZE_MAX;
        return 0;
    }
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "max_chars must be None or an int, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return -1;
    }
    Py_ssize_t v = PyLong_AsSsize_t(arg);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0) {
        PyErr_SetString(PyExc_ValueError, "max_chars must not be negative");
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* Plain text items come back as they are (UTF-8; invalid bytes replaced). */
static PyObject *item_plain_text(ItemObject *it, size_t max_chars) {
    zs_error err;
    zs_str data = {NULL, 0};
    zs_blob *h;
    NOGIL(h = zs_item_data(it->h, &data, &err));
    if (!h)
        return zc_raise(zc_state_of((PyObject *)it), &err, it->archive->name);
    PyObject *s = PyUnicode_DecodeUTF8(data.ptr, (Py_ssize_t)data.len, "replace");
    zs_blob_free(h);
    if (s && max_chars != SIZE_MAX && (size_t)PyUnicode_GET_LENGTH(s) > max_chars)
        Py_SETREF(s, PyUnicode_Substring(s, 0, (Py_ssize_t)max_chars));
    return s;
}

static PyObject *item_text_of(PyObject *self, int main_only, size_t max_chars) {
    ItemObject *it = (ItemObject *)self;
    zc_state *st = zc_state_of(self);
    if (it->info.mimetype_error)
        return zc_raise(st, it->info.mimetype_error, it->archive->name);
    int kind = zs_text_kind(it->info.mimetype.ptr, it->info.mimetype.len);
    if (kind == ZS_TEXT_PLAIN)
        return item_plain_text(it, max_chars);
    if (kind != ZS_TEXT_HTML) {
        PyObject *m = zc_str(it->info.mimetype), *path = m ? zc_str(it->info.path) : NULL;
        if (path)
            PyErr_Format(PyExc_TypeError,
                         "item %R has MIME type %R: text is read from HTML, plain text or "
                         "markdown only", path, m);
        Py_XDECREF(m);
        Py_XDECREF(path);
        return NULL;
    }
    zs_error err;
    char *buf = NULL;
    size_t len = 0;
    int rc;
    NOGIL(rc = zs_item_text(it->h, main_only, max_chars, &buf, &len, &err));
    if (rc < 0)
        return zc_raise(st, &err, it->archive->name);
    return zc_take_str(buf, len);
}

static PyObject *item_get_text(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"main_only", "max_chars", NULL};
    int main_only = 1;
    PyObject *max_obj = Py_None;
    size_t max_chars;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$pO:get_text", names, &main_only, &max_obj) ||
        zc_max_chars(max_obj, &max_chars) < 0)
        return NULL;
    return item_text_of(self, main_only, max_chars);
}

static PyObject *item_text(PyObject *self, void *c) {
    (void)c;
    return item_text_of(self, 1, SIZE_MAX);
}

/* Entry(url=..., title=...) and Item(url=..., title=...), as python-libzim shows them. */
static PyObject *url_title_repr(PyObject *self, zs_str url, zs_str title) {
    PyObject *u = zc_str(url), *t = u ? zc_str(title) : NULL;
    PyObject *r = t ? PyUnicode_FromFormat("%s(url=%U, title=%U)", zc_type_name(Py_TYPE(self)), u, t) : NULL;
    Py_XDECREF(u);
    Py_XDECREF(t);
    return r;
}

static PyObject *item_repr(PyObject *self) {
    ItemObject *it = (ItemObject *)self;
    return url_title_repr(self, it->info.path, it->info.title);
}

/* Items (and entries, below) pickle as their archive, index and path. */
static PyObject *item_archive(PyObject *self, void *c) {
    (void)c;
    return Py_NewRef((PyObject *)((ItemObject *)self)->archive);
}

static PyMethodDef item_methods[] = {
    ZC_REDUCE_METHOD,
    {"get_text", (PyCFunction)(void (*)(void))item_get_text, METH_VARARGS | METH_KEYWORDS,
     "get_text($self, /, *, main_only=True, max_chars=None)\n--\n\n"
     "Return the visible text of an HTML item as one str.\n\n"
     "Scripts, styles, head and hidden elements are dropped, entities decoded,\n"
     "one line break put between blocks and a tab between table cells, and\n"
     "whitespace collapsed except in <pre>.  main_only=True also drops\n"
     "navigation (nav, header, footer, aside, navigation classes); max_chars\n"
     "cuts the text after that many characters.  text/plain and markdown\n"
     "items come back as they are; other MIME types raise TypeError\n"
     "(ArchiveError if the content cannot be read).  Computed in one pass\n"
     "with the GIL released.  Not in python-libzim."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef item_getset[] = {
    {"_archive", item_archive, NULL, "The Archive of the item.", NULL},
    {"title", item_title, NULL,
     "The item's title (str), as its entry has it; never enters libzim.", NULL},
    {"path", item_path, NULL,
     "The item's full path (str): the target's path when the entry was a redirect.", NULL},
    {"mimetype", item_mimetype, NULL,
     "The item's MIME type (str), such as 'text/html'; raises ArchiveError\n"
     "when the entry names a MIME type the archive does not list (the content\n"
     "stays readable).",
     NULL},
    {"_index", item_index, NULL, "Entry index (path order) of the item.", NULL},
    {"size", item_size, NULL,
     "Size of the content in bytes, from its cluster's offset table (decoding\n"
     "at most the start of a compressed cluster, not the content); read once\n"
     "(adaptive GIL release).", NULL},
    {"content", item_content, NULL,
     "The content as a read-only, zero-copy memoryview of bytes. Compressed\n"
     "clusters are decoded by the binding into a cache shared by every Archive\n"
     "of the file; the view keeps its memory alive, after eviction, close() or\n"
     "truncation of the file. Read once per Item (adaptive GIL release);\n"
     "bytes(item.content) copies it.", NULL},
    {"text", item_text, NULL,
     "The visible main text of an HTML (or plain text, markdown) item as a\n"
     "str: get_text() with its defaults. TypeError for other MIME types.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot item_slots[] = {
    {Py_tp_dealloc, item_dealloc},
    {Py_tp_traverse, item_traverse},
    {Py_tp_clear, item_clear},
    {Py_tp_getset, item_getset},
    {Py_tp_methods, item_methods},
    {Py_tp_repr, item_repr},
    {Py_tp_doc, "The content of an entry: title, path, mimetype, size, content and text.\n\n"
                "Made by Entry.get_item() or Archive.get_metadata_item(), never by a\n"
                "call. Immutable and safe to share between threads; it stays usable after\n"
                "Archive.close() (it keeps the file open). Pickles as its archive and\n"
                "path (the content is read again on the other side). python-libzim's\n"
                "libzim.reader.Item; text and get_text() are additions."},
    {0, NULL},
};

static PyType_Spec item_spec = {
    .name = "libzim.reader.Item",
    .basicsize = sizeof(ItemObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = item_slots,
};

/* ==== Entry ================================================================= */

static PyObject *entry_new(zc_state *st, zs_entry *h, const zs_entry_info *info,
                           ArchiveObject *archive) {
    EntryObject *e = PyObject_GC_New(EntryObject, st->Entry);
    if (!e) {
        zs_entry_free(h);
        return NULL;
    }
    e->h = h;
    e->info = *info;
    e->archive = (ArchiveObject *)Py_NewRef(archive);
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

static int entry_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((EntryObject *)self)->archive);
    return 0;
}

static int entry_clear(PyObject *self) {
    Py_CLEAR(((EntryObject *)self)->archive);
    return 0;
}

static void entry_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    entry_clear(self);
    zs_entry_free(((EntryObject *)self)->h);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *entry_title(PyObject *self, void *c) { (void)c; return zc_str(((EntryObject *)self)->info.title); }
static PyObject *entry_path(PyObject *self, void *c) { (void)c; return zc_str(((EntryObject *)self)->info.path); }
static PyObject *entry_index(PyObject *self, void *c) { (void)c; return PyLong_FromUnsignedLong(((EntryObject *)self)->info.index); }
static PyObject *entry_fd(PyObject *self, void *c) { (void)c; return PyLong_FromLong(zs_entry_fd(((EntryObject *)self)->h)); }
static PyObject *entry_is_redirect(PyObject *self, void *c) { (void)c; return PyBool_FromLong(((EntryObject *)self)->info.is_redirect); }

static PyObject *entry_get_redirect_entry(PyObject *self, PyObject *noargs) {
    (void)noargs;
    EntryObject *e = (EntryObject *)self;
    zc_state *st = zc_state_of(self);
    zs_entry_info info;
    zs_error err;
    zs_entry *h;
    ZC_ADAPTIVE(&e->archive->lookup_cost, h = zs_entry_redirect(e->h, &info, &err));
    if (!h)
        return zc_raise(st, &err, e->archive->name);
    return entry_new(st, h, &info, e->archive);
}

static PyObject *entry_get_item(PyObject *self, PyObject *noargs) {
    (void)noargs;
    EntryObject *e = (EntryObject *)self;
    zc_state *st = zc_state_of(self);
    zs_item_info info;
    zs_error err;
    zs_item *h;
    ZC_ADAPTIVE(&e->archive->lookup_cost, h = zs_entry_item(e->h, &info, &err));
    if (!h)
        return zc_raise(st, &err, e->archive->name);
    return item_new(st, h, &info, e->archive);
}

static PyObject *entry_repr(PyObject *self) {
    EntryObject *e = (EntryObject *)self;
    return url_title_repr(self, e->info.path, e->info.title);
}

static PyMethodDef entry_methods[] = {
    {"get_redirect_entry", entry_get_redirect_entry, METH_NOARGS,
     "get_redirect_entry($self, /)\n--\n\n"
     "Return the Entry this redirect points to (one step: it may be a redirect\n"
     "itself).\n\n"
     "Raises ZimError (a RuntimeError, as python-libzim) when the entry is not\n"
     "a redirect. Adaptive GIL release."},
    {"get_item", entry_get_item, METH_NOARGS,
     "get_item($self, /)\n--\n\n"
     "Return the Item (content) of this entry, following redirects to their\n"
     "target.\n\n"
     "Adaptive GIL release: a lookup, usually microseconds, released only\n"
     "while this archive's lookups have been slow lately."},
    ZC_REDUCE_METHOD,
    {NULL, NULL, 0, NULL},
};

static PyObject *entry_archive(PyObject *self, void *c) {
    (void)c;
    return Py_NewRef((PyObject *)((EntryObject *)self)->archive);
}

static PyGetSetDef entry_getset[] = {
    {"_archive", entry_archive, NULL, "The Archive of the entry.", NULL},
    {"title", entry_title, NULL,
     "The entry's title (str); the path when the entry was written without one.", NULL},
    {"path", entry_path, NULL,
     "The entry's full path in the archive (str), as get_entry_by_path() takes it.", NULL},
    {"_index", entry_index, NULL, "Entry index in path order.", NULL},
    {"_fd", entry_fd, NULL, "Descriptor of the native copy that found the entry (-1: multi-part).", NULL},
    {"is_redirect", entry_is_redirect, NULL,
     "True if the entry redirects to another (get_redirect_entry()), else False.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot entry_slots[] = {
    {Py_tp_dealloc, entry_dealloc},
    {Py_tp_traverse, entry_traverse},
    {Py_tp_clear, entry_clear},
    {Py_tp_methods, entry_methods},
    {Py_tp_getset, entry_getset},
    {Py_tp_repr, entry_repr},
    {Py_tp_doc, "An entry of an archive: a path, a title, and an item or a redirect.\n\n"
                "Made by Archive lookups and iterators, never by a call. Its path, title\n"
                "and redirect flag were read in the lookup, so reading them never enters\n"
                "libzim. Immutable and safe to share between threads; it stays usable\n"
                "after Archive.close(). Pickles as its archive and path. python-libzim's\n"
                "libzim.reader.Entry."},
    {0, NULL},
};

static PyType_Spec entry_spec = {
    .name = "libzim.reader.Entry",
    .basicsize = sizeof(EntryObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = entry_slots,
};

/* ==== EntryIterator ========================================================== */

/* Entries are read natively in batches so that a walk over an archive hands
 * the GIL over once per batch, not once per entry; batches start small so a
 * single next() stays cheap. */
#define ITER_BATCH_MIN 8
#define ITER_BATCH_MAX 256

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;  /* serialises next() between threads */
    zs_iter *it;              /* NULL once exhausted */
    zs_entry *buf[ITER_BATCH_MAX];
    zs_entry_info infos[ITER_BATCH_MAX];
    size_t pos, n, batch;
    uint64_t remaining;
    ArchiveObject *archive;
} IterObject;

static PyObject *iter_new(zc_state *st, zs_iter *h, uint64_t size, ArchiveObject *archive) {
    IterObject *self = PyObject_GC_New(IterObject, st->EntryIterator);
    if (!self) {
        zs_iter_free(h);
        return NULL;
    }
    self->lock = PyThread_allocate_lock();
    self->it = h;
    self->pos = self->n = 0;
    self->batch = ITER_BATCH_MIN;
    self->remaining = size;
    self->archive = (ArchiveObject *)Py_NewRef(archive);
    PyObject_GC_Track(self);
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static int iter_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((IterObject *)self)->archive);
    return 0;
}

static int iter_clear(PyObject *self) {
    Py_CLEAR(((IterObject *)self)->archive);
    return 0;
}

static void iter_dealloc(PyObject *self) {
    IterObject *s = (IterObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    iter_clear(self);
    for (size_t i = s->pos; i < s->n; i++)
        zs_entry_free(s->buf[i]);
    if (s->it)
        zs_iter_free(s->it);
    if (s->lock)
        PyThread_free_lock(s->lock);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *iter_next(PyObject *self) {
    IterObject *s = (IterObject *)self;
    PyObject *result = NULL;
    ZC_LOCK(s->lock);
    if (s->pos == s->n && s->it) {
        zs_error err;
        int rc;
        size_t n = 0;
        NOGIL(rc = zs_iter_next(s->it, s->buf, s->infos, s->batch, &n, &err));
        s->pos = 0;
        s->n = rc < 0 ? 0 : n;
        if (s->batch < ITER_BATCH_MAX)
            s->batch *= 2;
        if (rc < 0) {
            ZC_UNLOCK(s->lock);
            return zc_raise(zc_state_of(self), &err, s->archive->name);
        }
        if (n == 0) {
            zs_iter_free(s->it);
            s->it = NULL;
        }
    }
    if (s->pos < s->n) {
        size_t i = s->pos++;
        if (s->remaining)
            s->remaining--;
        result = entry_new(zc_state_of(self), s->buf[i], &s->infos[i], s->archive);
    }
    ZC_UNLOCK(s->lock);
    return result;  /* NULL without an error set ends the iteration */
}

static PyObject *iter_length_hint(PyObject *self, PyObject *noargs) {
    (void)noargs;
    return PyLong_FromUnsignedLongLong(((IterObject *)self)->remaining);
}

static PyMethodDef iter_methods[] = {
    {"__length_hint__", iter_length_hint, METH_NOARGS,
     "__length_hint__($self, /)\n--\n\n"
     "Return how many entries are left to yield (list() uses it to size its result)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot iter_slots[] = {
    {Py_tp_dealloc, iter_dealloc},
    {Py_tp_traverse, iter_traverse},
    {Py_tp_clear, iter_clear},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, iter_next},
    {Py_tp_methods, iter_methods},
    {Py_tp_doc, "Iterator over entries, from Archive.iter_by_path(), iter_by_title(),\n"
                "iter_efficient(), find_by_path() or find_by_title().\n\n"
                "Reads entries natively in batches (8, doubling up to 256) with the GIL\n"
                "released, so a walk hands the GIL over once per batch. Threads may share\n"
                "one iterator: next() calls are serialised by a per-object lock (each\n"
                "entry is yielded once). It keeps its archive usable after close(). Does\n"
                "not pickle. Not in python-libzim."},
    {0, NULL},
};

static PyType_Spec iter_spec = {
    .name = "libzim.reader.EntryIterator",
    .basicsize = sizeof(IterObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = iter_slots,
};

/* ==== Archive ================================================================= */

#define ARCHIVE(o) ((ArchiveObject *)(o))

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
    return entry_new(st, e, &info, ARCHIVE(self));
}

static PyObject *a_get_entry_by_path(PyObject *self, PyObject *path) { return archive_lookup(self, LK_PATH, path, 1); }
static PyObject *a_has_entry_by_path(PyObject *self, PyObject *path) { return archive_lookup(self, LK_PATH, path, 0); }
static PyObject *a_get_entry_by_title(PyObject *self, PyObject *title) { return archive_lookup(self, LK_TITLE, title, 1); }
static PyObject *a_has_entry_by_title(PyObject *self, PyObject *title) { return archive_lookup(self, LK_TITLE, title, 0); }
static PyObject *a_get_entry_by_id(PyObject *self, PyObject *id) { return archive_lookup(self, LK_ID, id, 1); }
static PyObject *a_get_random_entry(PyObject *self, PyObject *noargs) { (void)noargs; return archive_lookup(self, LK_RANDOM, NULL, 1); }
static PyObject *a_main_entry(PyObject *self, void *c) { (void)c; return archive_lookup(self, LK_MAIN, NULL, 1); }

/* Returns the Item for a metadata name (size < 0) or an illustration. */
static PyObject *archive_item(PyObject *self, PyObject *name, long size, int want_bytes) {
    zc_state *st = zc_state_of(self);
    const char *s = NULL;
    Py_ssize_t len = 0;
    if (name && !(s = zc_utf8(name, &len, "name")))
        return NULL;
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_item_info info;
    zs_error err;
    zs_item *it;
    zs_blob *blob = NULL;
    zs_str data = {NULL, 0};
    ZC_ADAPTIVE(&ARCHIVE(self)->read_cost, {
        it = name ? zs_archive_metadata_item(h, s, (size_t)len, &info, &err)
                  : zs_archive_illustration_item(h, (unsigned)size, &info, &err);
        if (it && want_bytes) {
            blob = zs_item_data(it, &data, &err);
            zs_item_free(it);
            it = NULL;
        }
    });
    zc_archive_leave(self);
    if (want_bytes) {
        if (!blob)
            return zc_raise(st, &err, ARCHIVE(self)->name);
        PyObject *r = PyBytes_FromStringAndSize(data.ptr, (Py_ssize_t)data.len);
        zs_blob_free(blob);
        return r;
    }
    if (!it)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return item_new(st, it, &info, ARCHIVE(self));
}

static PyObject *a_get_metadata(PyObject *self, PyObject *name) { return archive_item(self, name, -1, 1); }
static PyObject *a_get_metadata_item(PyObject *self, PyObject *name) { return archive_item(self, name, -1, 0); }
ZC_KEYWORD_ARG(a_get_entry_by_path, "get_entry_by_path", "path")
ZC_KEYWORD_ARG(a_has_entry_by_path, "has_entry_by_path", "path")
ZC_KEYWORD_ARG(a_get_entry_by_title, "get_entry_by_title", "title")
ZC_KEYWORD_ARG(a_has_entry_by_title, "has_entry_by_title", "title")
ZC_KEYWORD_ARG(a_get_entry_by_id, "_get_entry_by_id", "entry_id")
ZC_KEYWORD_ARG(a_get_metadata, "get_metadata", "name")
ZC_KEYWORD_ARG(a_get_metadata_item, "get_metadata_item", "name")

static int parse_size(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames, long *size) {
    static const char *const names[] = {"size"};
    PyObject *arg;
    *size = 48; /* libzim's default illustration size */
    if (zc_args(fname, args, nargs, kwnames, names, 1, 1, 0, &arg) < 0)
        return -1;
    if (arg && arg != Py_None) {
        *size = PyLong_AsLong(arg);
        if (*size == -1 && PyErr_Occurred()) {
            /* Past a C long is out of range like any size past UINT_MAX. */
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            *size = -1;
        }
        if (*size < 0 || *size > (long)UINT_MAX) {
            PyErr_SetString(PyExc_ValueError, "illustration size out of range");
            return -1;
        }
    }
    return 0;
}

static PyObject *a_get_illustration_item(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames) {
    long size;
    if (parse_size("get_illustration_item", args, nargs, kwnames, &size) < 0)
        return NULL;
    return archive_item(self, NULL, size, 0);
}

static PyObject *illustration_sizes(PyObject *self, zc_state *st, unsigned *sizes, size_t *n) {
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_error err;
    int rc;
    NOGIL(rc = zs_archive_illustration_sizes(h, sizes, 64, n, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return Py_None;
}

static PyObject *a_get_illustration_sizes(PyObject *self, PyObject *noargs) {
    (void)noargs;
    zc_state *st = zc_state_of(self);
    /* python-libzim 3.13's words (libzim 9.3 added illustration infos,
     * which libzim 8.1.1 and 9.2.3 lack). */
    if (PyErr_WarnEx(PyExc_DeprecationWarning,
                     "get_illustration_sizes() is deprecated, use get_illustration_infos() instead",
                     1) < 0)
        return NULL;
    unsigned sizes[64];
    size_t n = 0;
    if (!illustration_sizes(self, st, sizes, &n))
        return NULL;
    PyObject *set = PySet_New(NULL);
    for (size_t i = 0; set && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLong(sizes[i]);
        if (!v || PySet_Add(set, v) < 0)
            Py_CLEAR(set);
        Py_XDECREF(v);
    }
    return set;
}

static PyObject *a_has_illustration(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
    zc_state *st = zc_state_of(self);
    long size;
    unsigned sizes[64];
    size_t n = 0;
    if (parse_size("has_illustration", args, nargs, kwnames, &size) < 0 ||
        !illustration_sizes(self, st, sizes, &n))
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (sizes[i] == (unsigned)size)
            Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *a_metadata_keys(PyObject *self, void *c) {
    (void)c;
    zc_state *st = zc_state_of(self);
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    char *buf = NULL;
    size_t len = 0, count = 0;
    zs_error err;
    int rc;
    NOGIL(rc = zs_archive_metadata_keys(h, &buf, &len, &count, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    PyObject *list = PyList_New((Py_ssize_t)count);
    const char *p = buf;
    for (size_t i = 0; list && i < count; i++) {
        size_t n = strlen(p);
        PyObject *k = zc_str((zs_str){p, n});
        if (!k)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, k);
        p += n + 1;
    }
    zs_buffer_free(buf);
    return list;
}

static PyObject *a_check(PyObject *self, PyObject *noargs) {
    (void)noargs;
    zc_state *st = zc_state_of(self);
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_error err;
    int rc;
    NOGIL(rc = zs_archive_check(h, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    return PyBool_FromLong(rc);
}

static const char *const check_names[ZS_CHECK_COUNT] = {
    "checksum", "dirent_ptrs", "dirent_order", "title_index", "cluster_ptrs", "dirent_mimetypes",
};

static PyObject *a_validate(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"checks", NULL};
    PyObject *checks = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:validate", kwlist, &checks))
        return NULL;
    zc_state *st = zc_state_of(self);
    unsigned mask = (1u << ZS_CHECK_COUNT) - 1;
    if (checks != Py_None) {
        if (PyUnicode_Check(checks))
            return PyErr_Format(PyExc_TypeError, "checks must be an iterable of names, not str");
        PyObject *it = PyObject_GetIter(checks), *name;
        if (!it)
            return NULL;
        mask = 0;
        while ((name = PyIter_Next(it))) {
            int found = -1;
            for (int i = 0; i < ZS_CHECK_COUNT && found < 0; i++)
                if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, check_names[i]) == 0)
                    found = i;
            if (found < 0) {
                PyErr_Format(PyExc_ValueError, "unknown integrity check %R (known: checksum, "
                             "dirent_ptrs, dirent_order, title_index, cluster_ptrs, "
                             "dirent_mimetypes)", name);
                Py_DECREF(name);
                Py_DECREF(it);
                return NULL;
            }
            mask |= 1u << found;
            Py_DECREF(name);
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            return NULL;
    }
    zs_archive *h = zc_archive_enter(st, self);
    if (!h)
        return NULL;
    zs_error err;
    unsigned failed = 0;
    int rc;
    NOGIL(rc = zs_archive_validate(h, mask, &failed, &err));
    zc_archive_leave(self);
    if (rc < 0)
        return zc_raise(st, &err, ARCHIVE(self)->name);
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < ZS_CHECK_COUNT; i++) {
        if (!(failed & (1u << i)))
            continue;
        PyObject *s = PyUnicode_FromString(check_names[i]);
        if (!s || PyList_Append(out, s) < 0)
            Py_CLEAR(out);
        Py_XDECREF(s);
    }
    return out;
}

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
    return iter_new(st, it, size, ARCHIVE(self));
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
    {"get_metadata", ZC_KW_METHOD(a_get_metadata), a_get_metadata_doc},
    {"get_metadata_item", ZC_KW_METHOD(a_get_metadata_item), a_get_metadata_item_doc},
    {"get_illustration_sizes", a_get_illustration_sizes, METH_NOARGS, a_get_illustration_sizes_doc},
    {"has_illustration", (PyCFunction)(void (*)(void))a_has_illustration,
     METH_FASTCALL | METH_KEYWORDS, a_has_illustration_doc},
    {"get_illustration_item", (PyCFunction)(void (*)(void))a_get_illustration_item,
     METH_FASTCALL | METH_KEYWORDS, a_get_illustration_item_doc},
    {"check", a_check, METH_NOARGS, a_check_doc},
    {"validate", (PyCFunction)(void (*)(void))a_validate, METH_VARARGS | METH_KEYWORDS,
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
    {"metadata_keys", a_metadata_keys, NULL,
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
    if (zc_add_type(m, &st->Blob, &blob_spec, 0) < 0 || zc_add_type(m, &st->Item, &item_spec, 1) < 0 ||
        zc_add_type(m, &st->Entry, &entry_spec, 1) < 0 ||
        zc_add_type(m, &st->EntryIterator, &iter_spec, 1) < 0 ||
        zc_add_type(m, &st->Archive, &archive_spec, 1) < 0)
        return -1;
    PyObject *names = PyTuple_New(ZS_CHECK_COUNT);
    for (int i = 0; names && i < ZS_CHECK_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(check_names[i]);
        if (!s) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    if (!names)
        return -1;
    int rc = PyModule_AddObjectRef(m, "INTEGRITY_CHECKS", names);
    Py_DECREF(names);
    return rc;
}
