#include "suggestion.h"
int zc_suggestion_init_types(PyObject *m, zc_state *st) { (void)m; (void)st; return 0; }
