/* Archive's metadata, illustrations and integrity checks (archive_metadata.c):
 * methods and a property that archive.c's tables list, in a file of their own
 * because none of them is on the lookup path.  Only archive.c includes this. */
#ifndef LIBZIM_C_ARCHIVE_METADATA_H
#define LIBZIM_C_ARCHIVE_METADATA_H

#include "archive.h"

#define ARCHIVE(o) ((ArchiveObject *)(o))

/* get_metadata(name) and get_metadata_item(name), METH_FASTCALL | METH_KEYWORDS. */
PyObject *zc_archive_get_metadata_kw(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames);
PyObject *zc_archive_get_metadata_item_kw(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames);
/* The metadata_keys getter. */
PyObject *zc_archive_metadata_keys(PyObject *self, void *c);
PyObject *zc_archive_get_illustration_sizes(PyObject *self, PyObject *noargs);
PyObject *zc_archive_has_illustration(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                      PyObject *kwnames);
PyObject *zc_archive_get_illustration_item(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs, PyObject *kwnames);
PyObject *zc_archive_check(PyObject *self, PyObject *noargs);
PyObject *zc_archive_validate(PyObject *self, PyObject *args, PyObject *kwds);
/* Adds INTEGRITY_CHECKS, the names validate() takes, to the module. */
int zc_archive_add_integrity_checks(PyObject *m);

#endif
