/*
 * zimshim_catalog: the catalog's book index, libkiwix's query language over a
 * library's book records (not over archives: a book whose file is missing is
 * searchable too).  Plain C over Xapian and ICU, like zimshim.h: no Python.h,
 * every C++ exception caught and reported as a zs_error.
 *
 * An index is an in-memory Xapian database of one document per book, built as
 * libkiwix's Library::updateBookDB builds it, and queried as its
 * buildXapianQuery() queries it (src/library.cpp of libkiwix).  It locks
 * itself: Xapian databases are not thread-safe, so add() and query() take the
 * index's mutex and may be called from several threads with the GIL released.
 */
#ifndef LIBZIM_C_ZIMSHIM_CATALOG_H
#define LIBZIM_C_ZIMSHIM_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "zimshim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zs_catalog zs_catalog;

/* A string with its length (UTF-8; not NUL-terminated). */
typedef struct {
    const char *ptr;
    size_t len;
} zs_text;

/* The fields of a book record, in this order. LANGUAGE is comma-separated
 * (a book of several languages), TAGS semicolon-separated. */
enum {
    ZS_BOOK_TITLE, ZS_BOOK_DESCRIPTION, ZS_BOOK_LANGUAGE, ZS_BOOK_CREATOR,
    ZS_BOOK_PUBLISHER, ZS_BOOK_NAME, ZS_BOOK_FLAVOUR, ZS_BOOK_CATEGORY,
    ZS_BOOK_TAGS, ZS_BOOK_NFIELDS
};

/* The parts of a filter, in this order; an empty one (len 0, or ptr NULL)
 * filters nothing.  Q is the query (libkiwix's q=: words, "phrases",
 * field:prefixes, -exclusions, wildcards*); CATEGORY and LANG are
 * comma-separated alternatives; TAGS all required, NOTAGS all refused
 * (semicolon-separated). */
enum {
    ZS_FILTER_Q, ZS_FILTER_NAME, ZS_FILTER_FLAVOUR, ZS_FILTER_CATEGORY, ZS_FILTER_LANG,
    ZS_FILTER_PUBLISHER, ZS_FILTER_CREATOR, ZS_FILTER_TAGS, ZS_FILTER_NOTAGS,
    ZS_FILTER_N
};

zs_catalog *zs_catalog_new(zs_error *err);
void zs_catalog_free(zs_catalog *c);

/* Index (or re-index) book number `book` from its record. */
int zs_catalog_add(zs_catalog *c, uint32_t book, const zs_text fields[ZS_BOOK_NFIELDS],
                   zs_error *err);

/* The numbers of the books the filter selects, ascending, in *out (malloc'd,
 * the caller frees it) and their count in *n.  `partial`: the query's last
 * word may be a prefix (libkiwix's queryIsPartial).  A query Xapian cannot
 * parse is ZS_ERR_QUERY. */
int zs_catalog_query(zs_catalog *c, const zs_text filter[ZS_FILTER_N], int partial,
                     uint32_t **out, size_t *n, zs_error *err);

/* The language's name in itself (ICU: "fra" -> "français"), as libkiwix's
 * getLanguageSelfName; the code itself when ICU does not know it.  Written
 * NUL-terminated into buf (cut to cap - 1 bytes); returns the full length. */
size_t zs_language_self_name(const char *code, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
