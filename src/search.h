/* Full-text search types: Query, Searcher, Search, SearchResultSet, SearchResult. */
#ifndef LIBZIM_C_SEARCH_H
#define LIBZIM_C_SEARCH_H
#include "module.h"
#endif
