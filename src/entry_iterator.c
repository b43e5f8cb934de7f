/* Reader: EntryIterator, from Archive.iter_by_path(), iter_by_title(),
 * iter_efficient(), find_by_path() and find_by_title(). */
#include "entry_iterator.h"
#include "entry.h"

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

PyObject *zc_iter_new(zc_state *st, zs_iter *h, uint64_t size, ArchiveObject *archive) {
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
        result = zc_entry_new(zc_state_of(self), s->buf[i], &s->infos[i], s->archive);
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

int zc_entry_iterator_init_types(PyObject *m, zc_state *st) {
    return zc_add_type(m, &st->EntryIterator, &iter_spec, 1);
}
