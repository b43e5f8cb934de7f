/* Archive, the reader type the others are made from (entry.h, item.h,
 * entry_iterator.h), and what the other families may use of it. */
#ifndef LIBZIM_C_ARCHIVE_H
#define LIBZIM_C_ARCHIVE_H

#include "util.h"

typedef struct ArchiveObject ArchiveObject;

/* At most this many extra native copies of one archive for lookups. */
#define ZC_SPARES 8

struct ArchiveObject {
    PyObject_HEAD
    zc_guard guard;           /* zs_archive * */
    zs_archive_info info;     /* read at open */
    atomic_llong stats[ZS_STAT_COUNT];  /* zs_archive_stat results, -1 unknown */
    zc_cost lookup_cost;      /* dirent lookups: entries, items, redirects */
    zc_cost read_cost;        /* cluster reads: content, size, metadata */
    /* libzim serialises lookups inside one native archive, so a shared Archive
     * leases its own handle to one call at a time and idle copies of it
     * (zs_archive_clone: same descriptor) to the others; see lease(). */
    atomic_int primary_busy;
    _Atomic(zs_archive *) spare[ZC_SPARES];
    atomic_int spares_made;
    PyObject *filename;       /* pathlib.Path */
    PyObject *name;           /* str(filename), starts every error message */
    int has_range;            /* opened with offset/size: pickled with them */
    unsigned long long offset, size;
    PyObject *weakreflist;
};

/* Archives as the other families (search, suggestion) reach them: take a use
 * of the native handle (NULL with ClosedError set once closed), give it back,
 * and the name that starts every message about the file. */
zs_archive *zc_archive_enter(zc_state *st, PyObject *archive);
void zc_archive_leave(PyObject *archive);
PyObject *zc_archive_name(PyObject *archive);

/* Adds Archive and INTEGRITY_CHECKS to the module. */
int zc_archive_init_types(PyObject *m, zc_state *st);

#endif
