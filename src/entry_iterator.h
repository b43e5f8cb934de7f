/* EntryIterator: entries of an archive in path, title or cluster order. */
#ifndef LIBZIM_C_ENTRY_ITERATOR_H
#define LIBZIM_C_ENTRY_ITERATOR_H

#include "archive.h"

/* A new EntryIterator taking h (freed on failure); size: the entries it will yield. */
PyObject *zc_iter_new(zc_state *st, zs_iter *h, uint64_t size, ArchiveObject *archive);

/* Adds EntryIterator to the module. */
int zc_entry_iterator_init_types(PyObject *m, zc_state *st);

#endif
