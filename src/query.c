/* Full-text search: Query, python-libzim's query builder (set_query(),
 * set_georange()); Searcher.search() reads it once. */
#include "query.h"

static int query_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"query", NULL};
    QueryObject *q = (QueryObject *)self;
    PyObject *text = NULL;
    /* Query("words"), once per search: skip the generic parser. */
    if (!kwds && PyTuple_GET_SIZE(args) == 1 && PyUnicode_Check(PyTuple_GET_ITEM(args, 0)))
        text = PyTuple_GET_ITEM(args, 0);
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "|U:Query", kwlist, &text))
        return -1;
    PyObject *value = text ? Py_NewRef(text) : PyUnicode_FromString("");
    if (!value)
        return -1;
    ZC_BEGIN_CS(self);
    Py_XSETREF(q->text, value);
    ZC_END_CS();
    return 0;
}

static PyObject *query_set_query(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text))
        return PyErr_Format(PyExc_TypeError, "query must be str, not %.100s",
                            Py_TYPE(text)->tp_name);
    ZC_BEGIN_CS(self);
    Py_XSETREF(((QueryObject *)self)->text, Py_NewRef(text));
    ZC_END_CS();
    return Py_NewRef(self);
}

static PyObject *query_set_georange(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"latitude", "longitude", "distance", NULL};
    QueryObject *q = (QueryObject *)self;
    double lat, lon, dist;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ddd:set_georange", kwlist, &lat, &lon, &dist))
        return NULL;
    if (!isfinite(lat) || !isfinite(lon) || !isfinite(dist) || lat < -90 || lat > 90 ||
        lon < -180 || lon > 180 || dist < 0)
        return PyErr_Format(PyExc_ValueError,
                            "georange needs -90 <= latitude <= 90, -180 <= longitude <= 180 "
                            "and a finite distance >= 0");
    ZC_BEGIN_CS(self);
    q->geo = 1;
    q->latitude = (float)lat;
    q->longitude = (float)lon;
    q->distance = (float)dist;
    ZC_END_CS();
    return Py_NewRef(self);
}

ZC_KEYWORD_ARG(query_set_query, "set_query", "query")

static PyObject *query_get_text(PyObject *self, void *c) {
    (void)c;
    PyObject *t;
    ZC_BEGIN_CS(self);
    t = Py_XNewRef(((QueryObject *)self)->text);
    ZC_END_CS();
    return t ? t : PyUnicode_FromString("");
}

static PyObject *query_get_georange(PyObject *self, void *c) {
    (void)c;
    QueryObject *q = (QueryObject *)self;
    PyObject *r;
    ZC_BEGIN_CS(self);
    r = q->geo ? Py_BuildValue("(ddd)", (double)q->latitude, (double)q->longitude,
                               (double)q->distance)
               : Py_NewRef(Py_None);
    ZC_END_CS();
    return r;
}

static int query_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((QueryObject *)self)->text);
    return 0;
}

static int query_clear(PyObject *self) {
    Py_CLEAR(((QueryObject *)self)->text);
    return 0;
}


static PyObject *query_repr(PyObject *self) {
    /* A reference taken in the section set_query() swaps the text in: the
     * old text may be freed the moment it is swapped out. */
    PyObject *text;
    ZC_BEGIN_CS(self);
    text = Py_XNewRef(((QueryObject *)self)->text);
    ZC_END_CS();
    PyObject *r = PyUnicode_FromFormat("Query(%R)", text ? text : Py_None);
    Py_XDECREF(text);
    return r;
}

static PyMethodDef query_methods[] = {
    {"set_query", ZC_KW_METHOD(query_set_query),
     "set_query($self, /, query)\n--\n\n"
     "Set the query text (a str, parsed as libzim parses it) and return self,\n"
     "so calls chain: Query().set_query('a b')."},
    {"setQuery", ZC_KW_METHOD(query_set_query),
     "setQuery($self, /, query)\n--\n\n"
     "python-libzim 3.x's camelCase alias of set_query(): sets the text,\n"
     "returns self."},
    {"set_georange", (PyCFunction)(void (*)(void))query_set_georange, METH_VARARGS | METH_KEYWORDS,
     "set_georange($self, /, latitude, longitude, distance)\n--\n\n"
     "Restrict matches to a distance in metres around latitude, longitude\n"
     "(degrees) and return self.\n\n"
     "ValueError unless -90 <= latitude <= 90, -180 <= longitude <= 180 and\n"
     "distance is finite and >= 0."},
    {"setGeorange", (PyCFunction)(void (*)(void))query_set_georange, METH_VARARGS | METH_KEYWORDS,
     "setGeorange($self, /, latitude, longitude, distance)\n--\n\n"
     "python-libzim 3.x's camelCase alias of set_georange(): restricts, returns self."},
    ZC_REDUCE_METHOD,
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef query_getset[] = {
    {"query", query_get_text, NULL, "The query text (str) a search will run; '' by default.",
     NULL},
    {"_georange", query_get_georange, NULL, "(latitude, longitude, distance) or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot query_slots[] = {
    {Py_tp_init, query_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, zc_plain_dealloc},
    {Py_tp_traverse, query_traverse},
    {Py_tp_clear, query_clear},
    {Py_tp_methods, query_methods},
    {Py_tp_getset, query_getset},
    {Py_tp_repr, query_repr},
    {Py_tp_doc, "Query(query='')\n--\n\n"
                "A full-text query: text and an optional georange, independent of any\n"
                "archive.\n\n"
                "Pass it (or just the str) to Searcher.search(). The search copies the\n"
                "query, so changing a Query later does not change searches made from it.\n"
                "Setters are atomic, so threads may share one, but a Query is cheap: make\n"
                "one per search. Pickles; subclasses unpickle as Query. python-libzim's\n"
                "libzim.search.Query."},
    {0, NULL},
};

static PyType_Spec query_spec = {
    .name = "libzim.search.Query",
    .basicsize = sizeof(QueryObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = query_slots,
};

int zc_query_init_types(PyObject *m, zc_state *st) {
    return zc_add_type(m, &st->Query, &query_spec, 1);
}
