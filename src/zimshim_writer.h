/* ---- writer --------------------------------------------------------------
 *
 * A zs_creator wraps libzim's zim::writer::Creator.  Items, content providers
 * and index data live in the extension (Python objects); the shim sees them
 * as opaque references (void *) and calls back into the extension through
 * zs_writer_callbacks to use them.
 *
 * Threads: zs_creator_* calls are made with the GIL released, by one thread
 * at a time (the extension serialises them).  libzim calls the callbacks on
 * that thread and on its own worker threads; every callback takes the GIL
 * itself and the shim never holds a lock of its own while calling one, so
 * a thread waiting for the GIL never blocks a thread that holds it.
 *
 * References: zs_creator_add_item takes the caller's reference to the item;
 * the shim gives every reference back through `release` as soon as libzim
 * drops the object (after its content is written and indexed), or at the
 * end of the call when it fails.
 */
#ifndef LIBZIM_C_ZIMSHIM_WRITER_H
#define LIBZIM_C_ZIMSHIM_WRITER_H

#include "zimshim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zs_creator zs_creator;
/* A std::string of the shim that a callback fills (zs_sink_set). */
typedef struct zs_sink zs_sink;
void zs_sink_set(zs_sink *s, const char *p, size_t n);

typedef struct {
    int has;                          /* has_indexdata() */
    zs_sink *title, *content, *keywords;
    uint32_t wordcount;
    int has_geo;
    double latitude, longitude;
} zs_indexdata;

enum { ZS_INDEX_DEFAULT = 0, ZS_INDEX_NONE = 1, ZS_INDEX_CUSTOM = 2 };

/* Every callback returns 0, or -1 when the Python call failed: the extension
 * keeps that exception for the creator (ctx) and the shim aborts libzim's
 * operation with an error, which libzim reports at the creator's next call
 * when it happened on a worker thread. */
typedef struct {
    /* item.get_contentprovider(): a new reference and its get_size(). */
    int (*item_provider)(void *ctx, void *item, void **provider, uint64_t *size);
    /* item.get_indexdata: ZS_INDEX_* (and *data, a new reference, when
     * ZS_INDEX_CUSTOM), or -1. */
    int (*item_indexdata)(void *ctx, void *item, void **data);
    /* has_indexdata(), and the other getters when it is true or `all`. */
    int (*indexdata_fetch)(void *ctx, void *data, int all, zs_indexdata *out);
    /* provider.feed(): *chunk stays valid while *keep (a new reference) is
     * held.  `prev` is the previous call's keep, to drop under the GIL. */
    int (*provider_feed)(void *ctx, void *provider, void *prev, zs_str *chunk, void **keep);
    /* Drops a and b (either may be NULL). */
    void (*release)(void *a, void *b);
} zs_writer_callbacks;

/* Errors of writer calls: libzim's text may span lines (its duplicate-path
 * message, which callers match as is), so the message is longer and raw. */
#define ZS_WMSG_MAX 4096
typedef struct {
    zs_kind kind;
    int os_errno;
    int callback;             /* a Python callback failed (see ctx) */
    int duplicate;            /* libzim refused an existing path */
    char msg[ZS_WMSG_MAX];
} zs_werror;

typedef struct {
    zs_str path, title, mimetype;
    unsigned hints_set;       /* bit k: hint k (libzim's HintKeys) given */
    uint64_t hints[2];
} zs_entry_def;

zs_creator *zs_creator_new(const zs_writer_callbacks *cb, void *ctx, zs_werror *err);
/* Configuration, before zs_creator_start; language only for indexing. */
typedef enum {
    ZS_CFG_VERBOSE, ZS_CFG_COMPRESSION /* 0 none, 1 zstd */, ZS_CFG_CLUSTERSIZE,
    ZS_CFG_INDEXING, ZS_CFG_WORKERS
} zs_config;
void zs_creator_config(zs_creator *c, zs_config which, uint64_t value, const char *language);
int zs_creator_start(zs_creator *c, const char *path, zs_werror *err);
void zs_creator_set_mainpath(zs_creator *c, const char *path, size_t len);
int zs_creator_add_item(zs_creator *c, const zs_entry_def *def, void *item, zs_werror *err);
int zs_creator_add_metadata(zs_creator *c, zs_str name, zs_str content, zs_str mimetype,
                            zs_werror *err);
int zs_creator_add_illustration(zs_creator *c, unsigned size, zs_str content,
                                zs_werror *err);
int zs_creator_add_redirection(zs_creator *c, const zs_entry_def *def, zs_str target,
                               zs_werror *err);
/* Writes the archive and renames it into place. */
int zs_creator_finish(zs_creator *c, zs_werror *err);
/* Stops libzim's workers and removes everything a started, unfinished
 * creation left on disk, so no file that looks like an archive remains. */
void zs_creator_free(zs_creator *c);

#ifdef __cplusplus
}
#endif

#endif
