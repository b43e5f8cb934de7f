/* _CatalogIndex: book records in, book numbers out (zimshim_catalog.cpp does
 * the Xapian work).  The index locks itself, so the GIL is released around
 * add() and query(); their arguments are UTF-8 copies taken before, so no
 * Python object is touched without it. */
#include "catalog.h"

#include "zimshim_catalog.h"

typedef struct {
    PyObject_HEAD
    zs_catalog *c;
} CatalogObject;

static PyObject *catalog_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds)))
        return PyErr_Format(PyExc_TypeError, "_CatalogIndex() takes no arguments");
    CatalogObject *self = (CatalogObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    zs_error err = {0};
    self->c = zs_catalog_new(&err);
    if (!self->c) {
        Py_DECREF(self);
        return PyErr_Format(PyExc_MemoryError, "catalog index: %s", err.msg);
    }
    return (PyObject *)self;
}

static void catalog_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    zs_catalog_free(((CatalogObject *)self)->c);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* UTF-8 views of n str arguments (None is empty); borrowed from the str
 * objects, which the caller's argument tuple keeps alive. */
static int texts_of(PyObject *const *args, int n, zs_text *out, const char *what) {
    for (int i = 0; i < n; i++) {
        if (args[i] == Py_None) {
            out[i].ptr = NULL;
            out[i].len = 0;
            continue;
        }
        if (!PyUnicode_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "%s: argument %d must be str or None, not %.100s", what, i + 1,
                         Py_TYPE(args[i])->tp_name);
            return -1;
        }
        Py_ssize_t len;
        const char *p = PyUnicode_AsUTF8AndSize(args[i], &len);
        if (!p)
            return -1;
        out[i].ptr = p;
        out[i].len = (size_t)len;
    }
    return 0;
}

static PyObject *raise_err(PyObject *self, const zs_error *err) {
    zc_state *st = zc_state_of(self);
    if (err->kind == ZS_ERR_QUERY)
        return PyErr_Format(PyExc_ValueError, "%s", err->msg);
    if (err->kind == ZS_ERR_MEMORY)
        return PyErr_NoMemory();
    return PyErr_Format(st ? st->ZimError : PyExc_RuntimeError, "catalog index: %s", err->msg);
}

static PyObject *catalog_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1 + ZS_BOOK_NFIELDS)
        return PyErr_Format(PyExc_TypeError, "add(book, title, description, language, creator, "
                                             "publisher, name, flavour, category, tags)");
    unsigned long book = PyLong_AsUnsignedLong(args[0]);
    if (PyErr_Occurred())
        return NULL;
    if (book > UINT32_MAX)
        return PyErr_Format(PyExc_OverflowError, "book number %lu is too large", book);
    zs_text fields[ZS_BOOK_NFIELDS];
    if (texts_of(args + 1, ZS_BOOK_NFIELDS, fields, "add") < 0)
        return NULL;
    zs_error err = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zs_catalog_add(((CatalogObject *)self)->c, (uint32_t)book, fields, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return raise_err(self, &err);
    Py_RETURN_NONE;
}

static PyObject *catalog_query(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1 + ZS_FILTER_N)
        return PyErr_Format(PyExc_TypeError, "query(partial, q, name, flavour, category, lang, "
                                             "publisher, creator, tags, notags)");
    int partial = PyObject_IsTrue(args[0]);
    if (partial < 0)
        return NULL;
    zs_text filter[ZS_FILTER_N];
    if (texts_of(args + 1, ZS_FILTER_N, filter, "query") < 0)
        return NULL;
    zs_error err = {0};
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zs_catalog_query(((CatalogObject *)self)->c, filter, partial, &ids, &n, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return raise_err(self, &err);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLong(ids[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    free(ids);
    return list;
}

static PyObject *language_self_name(PyObject *module, PyObject *code) {
    (void)module;
    if (!PyUnicode_Check(code))
        return PyErr_Format(PyExc_TypeError, "language code must be str");
    const char *c = PyUnicode_AsUTF8(code);
    if (!c)
        return NULL;
    char buf[256];
    size_t n = zs_language_self_name(c, buf, sizeof buf);
    return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)(n < sizeof buf ? n : sizeof buf - 1), "replace");
}

static PyMethodDef catalog_methods[] = {
    {"add", (PyCFunction)(void (*)(void))catalog_add, METH_FASTCALL,
     "add(book, title, description, language, creator, publisher, name, flavour, category, tags)\n"
     "--\n\nIndex book number `book` (an int from 0) from its record (str or None each)."},
    {"query", (PyCFunction)(void (*)(void))catalog_query, METH_FASTCALL,
     "query(partial, q, name, flavour, category, lang, publisher, creator, tags, notags)\n--\n\n"
     "The numbers of the books the filter selects, in libkiwix's order (relevance, then\n"
     "the order they were added). ValueError for a query Xapian cannot parse."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot catalog_slots[] = {
    {Py_tp_new, catalog_new},
    {Py_tp_dealloc, catalog_dealloc},
    {Py_tp_methods, catalog_methods},
    {Py_tp_doc, "_CatalogIndex()\n--\n\n"
                "The OPDS catalog's book index (libkiwix's query language, over Xapian).\n"
                "Private to libzim.serve (see libzim/serve/bookquery.py)."},
    {0, NULL},
};

static PyType_Spec catalog_spec = {
    .name = "libzim._libzim._CatalogIndex",
    .basicsize = sizeof(CatalogObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = catalog_slots,
};

static PyMethodDef language_def = {
    "_language_self_name", language_self_name, METH_O,
    "_language_self_name(code)\n--\n\nThe language's name in itself (ICU), or the code."};

int zc_catalog_init_types(PyObject *m, zc_state *st) {
    if (zc_add_type(m, &st->CatalogIndex, &catalog_spec, 1) < 0)
        return -1;
    PyObject *f = PyCFunction_NewEx(&language_def, NULL, PyModule_GetNameObject(m));
    if (!f)
        return -1;
    int rc = PyModule_AddObjectRef(m, "_language_self_name", f);
    Py_DECREF(f);
    return rc;
}
