/* Query: the text (and optional geo range) of a full-text search. */
#ifndef LIBZIM_C_QUERY_H
#define LIBZIM_C_QUERY_H

#include "util.h"

typedef struct {
    PyObject_HEAD
    PyObject *text;  /* str */
    int geo;
    float latitude, longitude, distance;
} QueryObject;

/* Adds Query to the module. */
int zc_query_init_types(PyObject *m, zc_state *st);

#endif
