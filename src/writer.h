/* Writing archives: _Creator and Blob (libzim.writer builds the rest). */
#ifndef LIBZIM_C_WRITER_H
#define LIBZIM_C_WRITER_H

#include "util.h"

int zc_writer_init_types(PyObject *m, zc_state *st);

#endif
