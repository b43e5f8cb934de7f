/* _CatalogIndex: the catalog's book index (zimshim_catalog.h) for
 * libzim/serve/bookquery.py; private to the server. */
#ifndef LIBZIM_C_CATALOG_H
#define LIBZIM_C_CATALOG_H

#include "util.h"

/* Adds _CatalogIndex and _language_self_name to the module. */
int zc_catalog_init_types(PyObject *m, zc_state *st);

#endif
