/* Title suggestions: SuggestionSearcher, SuggestionSearch, results. */
#ifndef LIBZIM_C_SUGGESTION_H
#define LIBZIM_C_SUGGESTION_H
#include "util.h"
#endif
