/* Reader: Entry.  Its path, title and redirect flag were read in the lookup
 * that made it, so reading them never enters libzim. */
#include "entry.h"
#include "item.h"

/* ==== Entry ================================================================= */


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
    return zc_entry_new(st, h, &info, e->archive);
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
    return zc_item_new(st, h, &info, e->archive);
}

static PyObject *entry_repr(PyObject *self) {
    EntryObject *e = (EntryObject *)self;
    return zc_url_title_repr(self, e->info.path, e->info.title);
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

int zc_entry_init_types(PyObject *m, zc_state *st) {
    return zc_add_type(m, &st->Entry, &entry_spec, 1);
}
