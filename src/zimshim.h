/*
 * zimshim: a plain C API over libzim (C++).
 *
 * This header is the only boundary between the CPython extension (C) and
 * libzim (C++).  It never includes Python.h and the C side never sees a C++
 * type.  Every function catches every C++ exception and reports it as a
 * zs_error (a kind and a one-line message), so no exception can unwind
 * through C frames.
 *
 * Threading contract: functions that do libzim work are called by the
 * extension with the GIL released.  All handles are safe to use from several
 * threads at once except where noted: libzim's Archive, Entry, Item and Blob
 * are immutable after construction; searchers are pools (see below).
 *
 * Strings handed out (char pointer + length) are UTF-8 as stored in the
 * archive, are not NUL-terminated unless said, and live as long as the
 * handle or page that holds them.
 */
#ifndef LIBZIM_C_ZIMSHIM_H
#define LIBZIM_C_ZIMSHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ZS_OK = 0,
    ZS_ERR_NOT_FOUND,   /* no such path, title, metadata or illustration */
    ZS_ERR_INDEX,       /* entry id out of range */
    ZS_ERR_FORMAT,      /* the archive is invalid or corrupt */
    ZS_ERR_IO,          /* the OS refused (missing file, permissions, ...) */
    ZS_ERR_NO_INDEX,    /* no full-text or title index to search */
    ZS_ERR_QUERY,       /* Xapian rejected the query */
    ZS_ERR_ARG,         /* an argument libzim cannot take */
    ZS_ERR_MEMORY,      /* std::bad_alloc */
    ZS_ERR_INTERNAL,    /* anything else libzim threw */
    ZS_ERR_INTERRUPTED  /* a system call was interrupted by a signal (EINTR):
                           run the signal handlers, then retry */
} zs_kind;

#define ZS_MSG_MAX 480

typedef struct {
    zs_kind kind;
    char msg[ZS_MSG_MAX];     /* one line, NUL-terminated */
} zs_error;

typedef struct zs_archive zs_archive;
typedef struct zs_entry zs_entry;
typedef struct zs_item zs_item;
typedef struct zs_blob zs_blob;
typedef struct zs_iter zs_iter;
typedef struct zs_searcher zs_searcher;

/* A borrowed view of bytes owned by a handle. */
typedef struct {
    const char *ptr;
    size_t len;
} zs_str;

/* Facts about an archive read once at open from its header and dirents;
 * they never change afterwards, so the extension answers property reads from
 * this struct without a shim call.  Facts that need a cluster read are not
 * here (see zs_archive_stat): a damaged cluster must not stop the open. */
typedef struct {
    uint64_t filesize;
    uint32_t all_entry_count, entry_count;
    unsigned char uuid[16];
    char checksum[33];        /* hex, NUL-terminated; "" when none */
    int has_checksum, has_main_entry;
    int is_multipart, has_new_namespace_scheme;
    uint32_t dirent_cache_max;  /* per-archive dirent cache size set at open */
    uint64_t cluster_cache;     /* identity of its decoded-cluster cache (0: none); tests */
} zs_archive_info;

/* Facts about an entry, gathered when the entry is looked up. */
typedef struct {
    zs_str title, path;
    uint32_t index;
    int is_redirect;
} zs_entry_info;

/* Facts about an item that cost no cluster read. */
typedef struct {
    zs_str title, path, mimetype;
    uint32_t index;
    /* Set when the dirent's mimetype number is not in the archive's list:
     * only .mimetype raises it (python-libzim still serves the content). */
    const zs_error *mimetype_error;
} zs_item_info;

/* ---- archive ------------------------------------------------------------ */

/* Which of offset and size zs_archive_open was given: the ZIM stored at
 * [offset, offset+size) in path; offset alone runs to the end of the file. */
enum { ZS_RANGE_OFFSET = 1, ZS_RANGE_SIZE = 2 };

/* Open by path (multi-part archives by the name without the "aa" suffix).
 * The file is opened once and every native handle made for the archive
 * (searchers, their index databases, clones) reads that same file through
 * that descriptor, whatever later happens to the path; multi-part archives
 * are the exception (libzim 8.1.1 opens them only by name).  Refuses, without
 * blocking, anything but a regular file or a block device.  Fails with
 * ZS_ERR_INTERRUPTED when a signal interrupted open(2). */
zs_archive *zs_archive_open(const char *path, unsigned range, uint64_t offset,
                            uint64_t size, zs_archive_info *info, zs_error *err);
/* Another handle on the same archive with its own libzim Archive (caches,
 * locks) over the same file, reopened (zimshim_file.cpp), so threads using
 * different clones do not contend inside libzim.  A multi-part archive's
 * clone shares the libzim Archive. */
zs_archive *zs_archive_clone(zs_archive *a, zs_error *err);
void zs_archive_free(zs_archive *a);

/* Facts that may read a cluster (listings, the Counter metadata, the index
 * items). */
typedef enum {
    ZS_STAT_ARTICLE_COUNT, ZS_STAT_MEDIA_COUNT, ZS_STAT_HAS_FULLTEXT_INDEX,
    ZS_STAT_HAS_TITLE_INDEX, ZS_STAT_COUNT
} zs_stat;
int zs_archive_stat(zs_archive *a, zs_stat which, int64_t *out, zs_error *err);

typedef enum { ZS_BY_PATH = 0, ZS_BY_TITLE = 1, ZS_BY_CLUSTER = 2 } zs_order;

/* Lookups return a new entry handle or NULL with err set. */
zs_entry *zs_archive_entry_by_path(zs_archive *a, const char *path, size_t len,
                                   zs_entry_info *info, zs_error *err);
zs_entry *zs_archive_entry_by_title(zs_archive *a, const char *title, size_t len,
                                    zs_entry_info *info, zs_error *err);
/* The entry with this id (path order). */
zs_entry *zs_archive_entry_by_index(zs_archive *a, uint64_t idx, zs_entry_info *info,
                                   zs_error *err);
zs_entry *zs_archive_main_entry(zs_archive *a, zs_entry_info *info, zs_error *err);
zs_entry *zs_archive_random_entry(zs_archive *a, zs_entry_info *info, zs_error *err);

/* Metadata: the keys as one buffer of NUL-separated names (freed with
 * zs_buffer_free), and a metadata item. */
int zs_archive_metadata_keys(zs_archive *a, char **buf, size_t *len, size_t *count,
                             zs_error *err);
zs_item *zs_archive_metadata_item(zs_archive *a, const char *name, size_t len,
                                  zs_item_info *info, zs_error *err);
/* Illustration sizes (at most cap of them are written). */
int zs_archive_illustration_sizes(zs_archive *a, unsigned *sizes, size_t cap,
                                  size_t *count, zs_error *err);
zs_item *zs_archive_illustration_item(zs_archive *a, unsigned size, zs_item_info *info,
                                      zs_error *err);
void zs_buffer_free(char *buf);

/* check(): 1 valid, 0 invalid, -1 error. */
int zs_archive_check(zs_archive *a, zs_error *err);

/* libzim's integrity checks, in libzim's IntegrityCheck order. */
enum {
    ZS_CHECK_CHECKSUM, ZS_CHECK_DIRENT_PTRS, ZS_CHECK_DIRENT_ORDER,
    ZS_CHECK_TITLE_INDEX, ZS_CHECK_CLUSTER_PTRS, ZS_CHECK_DIRENT_MIMETYPES,
    ZS_CHECK_COUNT
};
/* Runs the checks whose bit is set in mask; sets the bit of each failed one
 * in *failed.  Returns 0, or -1 with err set when a check could not run. */
int zs_archive_validate(zs_archive *a, unsigned mask, unsigned *failed, zs_error *err);

/* ---- entry / item / blob ------------------------------------------------- */

void zs_entry_free(zs_entry *e);
/* The descriptor the entry reads through (which native copy found it;
 * -1 for a multi-part archive).  For tests. */
int zs_entry_fd(const zs_entry *e);
zs_entry *zs_entry_redirect(zs_entry *e, zs_entry_info *info, zs_error *err);
/* The item behind the entry, following redirects (as python-libzim does). */
zs_item *zs_entry_item(zs_entry *e, zs_item_info *info, zs_error *err);

void zs_item_free(zs_item *it);
/* Reads the cluster header (may decompress): call without the GIL. */
int zs_item_size(zs_item *it, uint64_t *size, zs_error *err);
/* Decompresses the cluster if needed; the blob keeps the bytes alive on its
 * own, independent of the archive's lifetime. */
zs_blob *zs_item_data(zs_item *it, zs_str *data, zs_error *err);
void zs_blob_free(zs_blob *b);
/* The visible text of an HTML item (libzim-c's text extractor, over the
 * snippet engine's scanner): UTF-8, at most max_chars code points (SIZE_MAX:
 * no limit), navigation dropped when main_only.  *out is malloc'd
 * (zs_buffer_free).  Reads through the cluster cache: call without the GIL. */
int zs_item_text(zs_item *it, int main_only, size_t max_chars, char **out, size_t *outlen,
                 zs_error *err);
/* What text a MIME type holds: ZS_TEXT_HTML, ZS_TEXT_PLAIN (text/plain and
 * markdown, read as they are) or 0 (none). */
enum { ZS_TEXT_HTML = 1, ZS_TEXT_PLAIN = 2 };
int zs_text_kind(const char *mimetype, size_t len);
/* data gzipped (RFC 1952, mtime 0: the same data gives the same bytes) by
 * libdeflate at level 1-12 (6: zlib's default size, in half zlib's CPU;
 * zimshim_gzip.cpp).  *out is malloc'd (zs_buffer_free).  Call without the GIL. */
int zs_gzip(const void *data, size_t len, int level, char **out, size_t *out_len, zs_error *err);
/* The same for HTML bytes in memory (tests). */
int zs_html_text(const char *html, size_t len, int main_only, size_t max_chars, char **out,
                 size_t *outlen, zs_error *err);

/* ---- iteration ------------------------------------------------------------ */

/* Ranges over the whole archive in an order, or over the entries whose path
 * or title starts with prefix.  One iterator must not be advanced by two
 * threads at once; the extension serialises that. */
zs_iter *zs_iter_new(zs_archive *a, zs_order order, uint64_t *size, zs_error *err);
zs_iter *zs_iter_prefix(zs_archive *a, zs_order order, const char *prefix, size_t len,
                        uint64_t *size, zs_error *err);
/* Fills up to cap entries; *n == 0 at the end. */
int zs_iter_next(zs_iter *it, zs_entry **out, zs_entry_info *infos, size_t cap, size_t *n,
                 zs_error *err);
void zs_iter_free(zs_iter *it);

/* ---- full-text search and suggestions ------------------------------------ */

/*
 * A zs_searcher is a pool of libzim searchers over the same archives.
 * libzim 8.1.1's Searcher (and the Search objects it makes, which share its
 * Xapian database) crash when two threads use them at once, so each call
 * leases one native searcher for its whole duration; threads that find every
 * native searcher busy get a new one, up to a cap, then wait (without the
 * GIL, since callers release it).  Thread-safe.
 */
typedef enum { ZS_FULLTEXT = 0, ZS_SUGGEST = 1 } zs_search_kind;

zs_searcher *zs_searcher_new(zs_search_kind kind, zs_archive *const *archives, size_t n,
                             zs_error *err);
/* Only for full-text searchers. */
int zs_searcher_add_archive(zs_searcher *s, zs_archive *a, zs_error *err);
/* Opens the database of one pooled searcher: fails with ZS_ERR_NO_INDEX when
 * no archive can be searched. */
int zs_searcher_prepare(zs_searcher *s, zs_error *err);
void zs_searcher_free(zs_searcher *s);
size_t zs_searcher_pool_size(zs_searcher *s);

typedef struct {
    const char *text;
    size_t len;
    int geo;
    float latitude, longitude, distance;
    /* Identifies the Python Search object, so a pooled searcher that served
     * it last can reuse its parsed query. 0 disables reuse. */
    uint64_t search_id;
    /* Suggestions only (zs_suggest_mode): where they come from. */
    int suggest_mode;
} zs_query;

/* ZS_SUGGEST_INDEX: libzim's SuggestionSearcher (the Xapian title index;
 * title prefixes when the archive has none), python-libzim's results.
 * ZS_SUGGEST_TITLES: the titles that start with the query, in one of its
 * case variants, from the title listing (zimshim_titles.cpp): O(log entries),
 * whatever the query matches.  ZS_SUGGEST_AUTO: the titles when at least
 * ZS_SUGGEST_AUTO_TITLES start with the query (a prefix that common is what
 * makes the index slow), else the index. */
typedef enum { ZS_SUGGEST_INDEX = 0, ZS_SUGGEST_TITLES = 1, ZS_SUGGEST_AUTO = 2 } zs_suggest_mode;
#define ZS_SUGGEST_AUTO_TITLES 100
/* Titles read by type-ahead binary searches in this process (a test hook:
 * the work is O(log entries) per search). */
uint64_t zs_title_probes(void);
/* Estimates counted by libzim (not served from a searcher's cache of them) in
 * this process: a test hook. */
uint64_t zs_estimate_runs(void);

typedef struct {
    zs_str path, title, snippet;
    zs_str text;   /* with ZS_WANT_TEXT; has_text 0 when the hit has none */
    int has_text;
    int score, word_count;
    int archive;   /* position in the searcher's archive list; -1 unknown */
} zs_result;

typedef struct {
    zs_result *results;
    size_t n;
    void *priv;
} zs_page;

/* ZS_LIBZIM_SNIPPET: with ZS_WANT_SNIPPET, libzim's own getSnippet() instead
 * of libzim-c's snippet engine (zimshim_snippet.cpp). */
/* ZS_WANT_TEXT: each hit's article text, as zs_item_text() makes it with
 * main_only and text_max_chars (HTML; plain text and markdown as they are;
 * none for other MIME types or an article that cannot be read). */
enum { ZS_WANT_TITLE = 1, ZS_WANT_SNIPPET = 2, ZS_LIBZIM_SNIPPET = 4, ZS_WANT_TEXT = 8,
       ZS_TEXT_ALL = 16 };

/* Runs the query and gathers a whole page (paths always; titles, scores and
 * snippets as flags ask) in one call. */
zs_page *zs_search_page(zs_searcher *s, const zs_query *q, int start, int count,
                        unsigned flags, size_t text_max_chars, zs_error *err);
int zs_search_estimate(zs_searcher *s, const zs_query *q, int64_t *out, zs_error *err);
void zs_page_free(zs_page *p);

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
 * keeps that exception in ctx.  The creation is then failed: on the calling
 * thread the shim call fails at once; on a libzim worker thread (where
 * throwing would end the thread and hang libzim's destructor) the shim gives
 * libzim harmless data and the next call into the creator fails.  ctx may
 * outlive the zs_creator (ctx_free says when it is done with it). */
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
    /* The shim no longer uses ctx (any thread, without the GIL). */
    void (*ctx_free)(void *ctx);
} zs_writer_callbacks;

/* Errors of writer calls: libzim's text may span lines (its duplicate-path
 * message, which callers match as is), so the message is longer and raw. */
#define ZS_WMSG_MAX 4096
typedef struct {
    zs_kind kind;
    int os_errno;
    int callback;             /* a Python callback failed (see ctx) */
    int duplicate;            /* libzim refused an existing path */
    int unsupported;          /* the linked libzim lacks the feature */
    char msg[ZS_WMSG_MAX];
} zs_werror;

typedef struct {
    zs_str path, title, mimetype;
    unsigned hints_set;       /* bit k: hint k (libzim's HintKeys) given */
    uint64_t hints[2];
    /* add_item only: the item's content provider and its size, fetched
     * before libzim sees the item (a failure there then leaves the
     * creation intact); the shim takes the reference and hands it to
     * libzim's first getContentProvider(). */
    void *provider;
    uint64_t provider_size;
} zs_entry_def;

/* Takes ctx: the shim calls cb->ctx_free(ctx) once done, even on failure. */
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
/* libzim >= 9.0 only: else fails with err->unsupported set. */
int zs_creator_add_alias(zs_creator *c, const zs_entry_def *def, zs_str target,
                         zs_werror *err);
/* Writes the archive and renames it into place. */
int zs_creator_finish(zs_creator *c, zs_werror *err);
/* Stops libzim's workers and removes everything a started, unfinished
 * creation left on disk, so no file that looks like an archive remains.
 * After a failure of libzim's own threads, libzim's creator is leaked
 * rather than destroyed, because its destructor could wait forever. */
void zs_creator_free(zs_creator *c);

/* ---- library ---------------------------------------------------------------- */

/* "name=version" pairs, NUL-separated in one buffer (zs_buffer_free). */
int zs_versions(char **buf, size_t *len, size_t *count, zs_error *err);

/* The cache of decoded zstd/xz clusters (zimshim_cluster.cpp): one byte
 * budget for every file's cache in the process, in bytes of decoded data.
 * zs_cluster_cache_init reads ZIM_CLUSTERCACHE once per process (N clusters
 * become N MiB; unset, 16 MiB); the extension calls it at import, before
 * the package sets that variable for libzim's own cache. Lowering the
 * budget evicts at once (readers keep the clusters they hold). */
void zs_cluster_cache_init(void);
int zs_cluster_cache_sizes(uint64_t *max, uint64_t *current, zs_error *err);
int zs_cluster_cache_set_max(uint64_t bytes, zs_error *err);

/* Testing hook: when set to N > 0, the N-th following shim call that checks
 * it fails with ZS_ERR_INTERNAL, so error paths in the extension can be
 * exercised (APSW-style fault injection).  Returns the previous value. */
long zs_fault_inject(long nth);
/* Testing hook: every following shim call that checks for faults first
 * sleeps this many microseconds, so tests can see that the extension
 * releases the GIL around a call however fast libzim is.  0 turns it off.
 * Returns the previous value. */
long zs_test_delay(long usec);
/* Testing hook: the next n archive opens wait for a signal, as open(2) on a
 * FIFO or a hung network file system does, and then fail with EINTR.
 * Returns the previous value. */
long zs_test_block_open(long n);

/* ---- snippet engine ----------------------------------------------------------- */

/* The snippet engine's cache of hits' visible text (zimshim_snippet_cache.cpp):
 * one byte budget for the process (default 16 MiB), apart from the cluster
 * cache's; current counts the texts' bytes and their bookkeeping, count the
 * texts. Lowering the budget evicts at once. */
int zs_snippet_cache_sizes(uint64_t *max, uint64_t *current, uint64_t *count, zs_error *err);
int zs_snippet_cache_set_max(uint64_t bytes, zs_error *err);

/* Testing hook: libzim-c's snippet of an HTML document for a query, stemmed
 * for an index language (as in an index's "language" metadata, e.g. "eng";
 * "" for none).  *out is UTF-8, malloc'd (zs_buffer_free). */
int zs_snippet_test(const char *html, size_t len, const char *query, size_t qlen,
                    const char *language, char **out, size_t *outlen, zs_error *err);

#ifdef __cplusplus
}
#endif

#endif
