/* Title suggestions: SuggestionSearcher, SuggestionSearch, results; built on
 * the search family's pool, pages and result layout (search.h). */
#ifndef LIBZIM_C_SUGGESTION_H
#define LIBZIM_C_SUGGESTION_H

#include "search.h"

/* Adds SuggestionSearcher, SuggestionSearch and their result types to the module. */
int zc_suggestion_init_types(PyObject *m, zc_state *st);

#endif
