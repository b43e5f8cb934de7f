// Internals shared by the zimshim*.cpp files: the handle structs and the
// error machinery that turns every C++ exception into a zs_error.  C++ only;
// the C side sees zimshim.h alone.
#ifndef LIBZIM_C_ZIMSHIM_IMPL_HPP
#define LIBZIM_C_ZIMSHIM_IMPL_HPP

#include "zimshim.h"

// For Archive::getClusterCount(), exported by libzim 8.1.1 but declared only
// under this macro.
#define ZIM_PRIVATE

#include <zim/archive.h>
#include <zim/entry.h>
#include <zim/error.h>
#include <zim/item.h>

#include <memory>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zs_impl {

class ClusterCache;

// The little-endian integer of n bytes at p, as ZIM stores every number.
inline uint64_t load_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

// Appends n bytes of text at p with &, < and > as HTML character references:
// snippets and title suggestions are HTML.
inline void append_html_escaped(std::string &out, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        switch (p[i]) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        default: out.push_back(p[i]);
        }
    }
}

// r, unless it claims more entries than the archive has: a corrupt title
// listing can claim billions, and walking them would look like a hang.
template <class Range> Range checked_range(const zim::Archive &a, Range r) {
    if (r.size() < 0 || (uint64_t)r.size() > a.getAllEntryCount())
        throw zim::ZimFileFormatError("entry listing claims " + std::to_string(r.size()) +
                                      " entries, the archive has " +
                                      std::to_string(a.getAllEntryCount()));
    return r;
}

// The file an archive was opened from, opened once and kept open: libzim
// 8.1.1 opens an archive made from a descriptor N through "/dev/fd/N", and
// so does its search (the index databases are opened by the path
// Item::getDirectAccessInformation() names, "/dev/fd/N" here). Keeping N open
// makes every native handle for the archive read this file, whatever happens
// to the path (atomic replace, deletion).  N must stay open, and be this
// file, for as long as any zim::Archive made from it lives: hold the
// shared_ptr next to it (ArchiveCopy).
struct OpenFile {
    int fd = -1;
    bool ranged = false;    // opened with offset= or size=
    bool blockdev = false;  // fstat's size is 0: libzim must be told the size
    uint64_t offset = 0, size = 0;  // the archive's bytes in the file
    // Decompressed clusters, shared by every OpenFile of the same file in
    // the process (zimshim_cluster.cpp);
    // null when the header could not be read (libzim then refuses the file).
    std::shared_ptr<ClusterCache> clusters;
    OpenFile() = default;
    OpenFile(const OpenFile &) = default;
    OpenFile &operator=(const OpenFile &) = delete;
    ~OpenFile();
    // Exactly len bytes at pos of the archive (pread), or throws.
    void read(uint64_t pos, void *buf, size_t len) const;
    // libzim maps the file: a read of a mapped page past a truncated end is
    // SIGBUS. So calls that may read the archive check first (one fstat)
    // that the file still holds it, and throw if not.
    void check_size() const;
};

inline void check_file(const std::shared_ptr<OpenFile> &f) {
    if (f)
        f->check_size();
}

// A zim::Archive with the descriptor it reads through (null for multi-part
// archives, which libzim 8.1.1 opens only by name).
struct ArchiveCopy {
    std::shared_ptr<OpenFile> file;
    zim::Archive a;
};

// Item::getDirectAccessInformation() returns std::pair<filename, offset> in libzim
// 8.1.1 (Debian 12) and 9.2.3 (Debian 13), a zim::ItemDataDirectAccessInfo
// {filename, offset} in later 9.x (9.7 in Debian sid, 9.8 in python-libzim's
// wheels). libzim's only version macro, LIBZIM_VERSION (zim/zim_config.h), is a
// string the preprocessor cannot compare, so overloading picks the shape: the exact
// pair match wins where it exists, the template takes the struct.
using direct_access = std::pair<std::string, uint64_t>;

inline direct_access as_direct_access(const std::pair<std::string, zim::offset_type> &d) {
    return {d.first, d.second};
}

template <class Info> direct_access as_direct_access(const Info &d) {
    return {d.filename, d.offset};
}

}  // namespace zs_impl

struct zs_archive {
    std::shared_ptr<zs_impl::OpenFile> file;  // declared first: outlives a
    zim::Archive a;
    std::string filename;  // as the caller gave it, for messages
};
struct zs_entry {
    zim::Entry e;
    std::string title, path;
    std::shared_ptr<zs_impl::OpenFile> file;  // checked before reads; null: multi-part
};
struct zs_item {
    zim::Item it;
    std::string title, path, mimetype;
    std::shared_ptr<zs_impl::OpenFile> file;
    zs_error mimetype_error{};  // kind ZS_OK unless the mimetype is unreadable
};
struct zs_blob {
    zim::Blob b;
};
namespace zs_impl {

// Fault injection and the test delay, checked at the top of every guarded
// call (zimshim_core.cpp).
void maybe_fault();

// libzim's messages joined into one line, assertion dumps shortened.
std::string one_line(const char *what);

void set_error(zs_error *err, zs_kind kind, const std::string &msg);

// Maps the exception in flight to an error kind.  Must be called from a
// catch block.
void fill_error(zs_error *err);

// Runs f, turning any exception into err; returns fallback on failure.
template <class F, class R>
R guarded(zs_error *err, R fallback, F &&f) {
    try {
        maybe_fault();
        return f();
    } catch (...) {
        fill_error(err);
        return fallback;
    }
}

// guarded(), after checking that file still holds the archive: for every
// call that may read it (see OpenFile::check_size).
template <class F, class R>
R guarded_on(const std::shared_ptr<OpenFile> &file, zs_error *err, R fallback, F &&f) {
    return guarded(err, fallback, [&]() -> R {
        check_file(file);
        return f();
    });
}

// The strings, NUL-separated in one malloc'd buffer (zs_buffer_free).
char *join_nul(const std::vector<std::string> &v, size_t *len);

// Checks the search-index entries that libzim 8.1.1 reads without bounds
// checks (zimshim_archive.cpp); with_database also opens the index.
// file (when known) reads an uncompressed index's offset table with the
// shim's checks first (libzim 8.1.1 reserves a vector from it unchecked).
void check_index_entries(const zim::Archive &a, bool with_database, const OpenFile *file = nullptr);

// ---- the archive's file (zimshim_file.cpp) ----

// Opens path for an archive: never blocks on a FIFO, refuses what is not a
// regular file or block device, checks offset/size against the file.
// Returns null with err set (ZS_ERR_INTERRUPTED on EINTR).
std::shared_ptr<OpenFile> open_archive_file(const char *path, unsigned range, uint64_t offset,
                                            uint64_t size, zs_error *err);
// Exactly len bytes at byte pos of the file, or throws.
void pread_exact(int fd, void *buf, size_t len, uint64_t pos);
// libzim's Archive over f's descriptor; throws as libzim does.
zim::Archive open_archive(const OpenFile &f);
// Refuses corruption that would crash libzim 8.1.1's Archive constructor.
void check_title_listings(const OpenFile &f);
// Another independent zim::Archive (its own caches and locks) over the same
// file, reopened through /proc/self/fd (dup() if that fails); for a
// multi-part archive, the same one.
ArchiveCopy copy_archive(const std::shared_ptr<OpenFile> &file, const zim::Archive &a);

struct Header {
    uint16_t major = 0, minor = 0;
    uint32_t entries = 0, clusters = 0;
    uint64_t path_ptr_pos = 0, title_ptr_pos = 0, cluster_ptr_pos = 0;
};
bool read_header(const OpenFile &f, Header *h);

struct Dirent {
    std::string long_path;  // namespace character + path
    bool redirect = false;
    uint32_t cluster = 0, blob = 0;
};
// Dirent i of the path-ordered table, read from the file; with title, its
// title (the path when it has none).
bool read_dirent(const OpenFile &f, const Header &h, uint32_t i, Dirent *d,
                 std::string *title = nullptr);
// The dirent and the number of blobs of listing name's cluster, when that
// cluster is stored uncompressed (as libzim writes listings); defect is set
// for an offset table that could not be right.
bool listing_cluster(const OpenFile &f, const Header &h, const std::string &name, Dirent *d,
                     uint64_t *blobs, std::string *defect);
bool find_dirent(const OpenFile &f, const Header &h, const std::string &long_path,
                 uint32_t *index, Dirent *d);

// ---- content of compressed clusters (zimshim_cluster.cpp) ----

// The cache for f's file (one per file and process), sized as libzim sizes
// its own (ZIM_CLUSTERCACHE).
std::shared_ptr<ClusterCache> make_cluster_cache(const OpenFile &f);
// The content of item when it is stored in a zstd or xz cluster, read
// through f's cache, or in an uncompressed one, read with pread (both offset
// tables checked); false for anything else (the caller reads it as before).
bool compressed_item_data(const OpenFile &f, const zim::Item &item, zim::Blob *out);
// Where item's content is, as the key of the snippet engine's text cache:
// false for what compressed_item_data() does not read.
bool item_text_key(const OpenFile &f, const zim::Item &item, uint64_t *file, uint32_t *cluster,
                   uint32_t *blob);
// Its size, from the cluster's offset table (libzim would read the cluster
// into a cache of its own for that, and 8.1.1 trusts an uncompressed one's).
bool compressed_item_size(const OpenFile &f, const zim::Item &item, uint64_t *size);

// ---- type-ahead over the title listing (zimshim_titles.cpp) ----

struct TitlePrefixRow {
    std::string path, title, snippet;
};
// The case variants of prefix that are looked up, in the order their titles
// are listed (empty for a prefix of white space only).
std::vector<std::string> title_variants(const std::string &prefix);
// Where the front-article title listing's entry ids are in the file, when
// the shim can read it itself (an uncompressed cluster, as libzim writes it).
struct TitleListing {
    bool ok = false;
    uint64_t ids_pos = 0;  // the first id: uint32 little-endian, one per title
    uint32_t count = 0;
};
TitleListing find_title_listing(const OpenFile &f);
// How many titles start with one of prefix's variants (exact, not estimated):
// through l when l.ok (f not null), else libzim's findByTitle.
int64_t title_prefix_count(const zim::Archive &a, const OpenFile *f, const TitleListing &l,
                           const std::string &prefix);
// Those titles start .. start+count-1: the variants in turn, each in title order.
void title_prefix_page(const zim::Archive &a, const OpenFile *f, const TitleListing &l,
                       const std::string &prefix, int start, int count, std::vector<TitlePrefixRow> *rows);

}  // namespace zs_impl

#endif
