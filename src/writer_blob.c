/* Writing archives: Blob, a piece of an item's content that
 * ContentProvider.feed() returns; the callbacks hand its bytes to libzim. */
#include "writer.h"

#include <structmember.h>

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

int zc_writer_blob_init_types(PyObject *m, zc_state *st) {
    if (zc_add_type(m, &st->WriterBlob, &blob_spec, 0) < 0 ||
        PyModule_AddObjectRef(m, "_WriterBlob", (PyObject *)st->WriterBlob) < 0)
        return -1;
    return 0;
}
