/* Item (an entry's content, with its article text) and the content Blob,
 * the buffer behind Item.content. */
#ifndef LIBZIM_C_ITEM_H
#define LIBZIM_C_ITEM_H

#include "archive.h"

typedef struct {
    PyObject_HEAD
    zs_item *h;
    zs_item_info info;
    ArchiveObject *archive;
    PyObject *blob;     /* cached content, set once (ZC_BEGIN_CS) */
    atomic_llong size;  /* cached, -1 until read */
} ItemObject;

/* A new Item taking h (freed on failure).  Inline because lookups end here
 * (Entry.get_item(), Archive.get_metadata_item()) as they did when the types
 * shared one file. */
static inline PyObject *zc_item_new(zc_state *st, zs_item *h, const zs_item_info *info, ArchiveObject *archive) {
    ItemObject *it = PyObject_GC_New(ItemObject, st->Item);
    if (!it) {
        zs_item_free(h);
        return NULL;
    }
    it->h = h;
    it->info = *info;
    it->archive = (ArchiveObject *)Py_NewRef(archive);
    it->blob = NULL;
    atomic_store(&it->size, -1);
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

/* Item.get_text()'s max_chars: None (SIZE_MAX) or an int >= 0; -1 with an exception. */
int zc_max_chars(PyObject *arg, size_t *out);
/* Entry(url=..., title=...) and Item(url=..., title=...), as python-libzim shows them. */
PyObject *zc_url_title_repr(PyObject *self, zs_str url, zs_str title);

/* Adds the content Blob and Item to the module. */
int zc_item_init_types(PyObject *m, zc_state *st);

#endif
