/* Reader types: Archive, Entry, Item, the content Blob and EntryIterator. */
#ifndef LIBZIM_C_ARCHIVE_H
#define LIBZIM_C_ARCHIVE_H

#include "module.h"

struct ArchiveObject {
    PyObject_HEAD
    zc_guard guard;           /* zs_archive * */
    zs_archive_info info;     /* read at open; info.filename is not kept */
    atomic_llong stats[ZS_STAT_COUNT];  /* zs_archive_stat results, -1 unknown */
    PyObject *filename;       /* pathlib.Path */
    PyObject *name;           /* str(filename), starts every error message */
    PyObject *weakreflist;
};

typedef struct {
    PyObject_HEAD
    zs_entry *h;
    zs_entry_info info;       /* strings owned by h */
    PyObject *name;           /* the archive's file name, for messages */
} EntryObject;

#endif
