/* Entry: a path, a title, and an item or a redirect. */
#ifndef LIBZIM_C_ENTRY_H
#define LIBZIM_C_ENTRY_H

#include "archive.h"

typedef struct {
    PyObject_HEAD
    zs_entry *h;
    zs_entry_info info;       /* strings owned by h */
    ArchiveObject *archive;   /* for messages and call costs; h keeps the file */
} EntryObject;

/* A new Entry taking h (freed on failure).  Inline because every lookup and
 * every iterator step ends here, as when the reader types shared one file. */
static inline PyObject *zc_entry_new(zc_state *st, zs_entry *h, const zs_entry_info *info,
                                        ArchiveObject *archive) {
    EntryObject *e = PyObject_GC_New(EntryObject, st->Entry);
    if (!e) {
        zs_entry_free(h);
        return NULL;
    }
    e->h = h;
    e->info = *info;
    e->archive = (ArchiveObject *)Py_NewRef(archive);
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

/* Adds Entry to the module. */
int zc_entry_init_types(PyObject *m, zc_state *st);

#endif
