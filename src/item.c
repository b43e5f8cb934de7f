/* Reader: Item, the content of an entry (content, size, article text), and
 * Blob, the read-only buffer behind Item.content.
 *
 * GIL rule (see README, "GIL policy"): every shim call that can read the
 * file or decompress runs with the GIL released, and builds no Python
 * object. */
#include "item.h"

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

/* Also Entry's repr (entry.c). */
PyObject *zc_url_title_repr(PyObject *self, zs_str url, zs_str title) {
    PyObject *u = zc_str(url), *t = u ? zc_str(title) : NULL;
    PyObject *r = t ? PyUnicode_FromFormat("%s(url=%U, title=%U)", zc_type_name(Py_TYPE(self)), u, t) : NULL;
    Py_XDECREF(u);
    Py_XDECREF(t);
    return r;
}

static PyObject *item_repr(PyObject *self) {
    ItemObject *it = (ItemObject *)self;
    return zc_url_title_repr(self, it->info.path, it->info.title);
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

int zc_item_init_types(PyObject *m, zc_state *st) {
    if (zc_add_type(m, &st->Blob, &blob_spec, 0) < 0 || zc_add_type(m, &st->Item, &item_spec, 1) < 0)
        return -1;
    return 0;
}
