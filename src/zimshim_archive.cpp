// Archives, entries, items, blobs and iterators: see zimshim.h.
#include "zimshim_impl.hpp"
#include "zimshim_snippet.hpp"

#include <xapian.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <new>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace zs_impl;

namespace {

// ---- entries and items ----------------------------------------------------

zs_entry *make_entry(zim::Entry &&e, const std::shared_ptr<OpenFile> &file,
                     zs_entry_info *info) {
    std::unique_ptr<zs_entry> h(new zs_entry{std::move(e), {}, {}, file});
    h->title = h->e.getTitle();
    h->path = h->e.getPath();
    info->title = {h->title.data(), h->title.size()};
    info->path = {h->path.data(), h->path.size()};
    info->index = h->e.getIndex();
    info->is_redirect = h->e.isRedirect();
    return h.release();
}

zs_item *make_item(zim::Item &&it, const std::shared_ptr<OpenFile> &file, zs_item_info *info) {
    std::unique_ptr<zs_item> h(new zs_item{std::move(it), {}, {}, {}, file});
    h->title = h->it.getTitle();
    h->path = h->it.getPath();
    info->mimetype_error = nullptr;
    try {
        h->mimetype = h->it.getMimetype();
    } catch (const std::bad_alloc &) {
        throw;
    } catch (const std::exception &e) {
        // A bad mimetype number costs the mimetype, not the content.
        set_error(&h->mimetype_error, ZS_ERR_FORMAT,
                  "entry '" + h->path + "': bad mimetype: " + one_line(e.what()));
        info->mimetype_error = &h->mimetype_error;
    }
    info->title = {h->title.data(), h->title.size()};
    info->path = {h->path.data(), h->path.size()};
    info->mimetype = {h->mimetype.data(), h->mimetype.size()};
    info->index = h->it.getIndex();
    return h.release();
}

// libzim 8.1.1 reads a search index entry's blob offset without a bounds
// check (FileImpl::getBlobOffset, reached from hasFulltextIndex(),
// hasTitleIndex() and every searcher's database setup), so a corrupt dirent
// there is a segfault, found by fuzzing small.zim. Item::getSize() checks the
// same indexes and throws, so it runs first on every entry that can be an
// index. In new-namespace archives those live in the X namespace, which the
// public API cannot name but which sorts last in path order.
//
// libzim 8.1.1 also parses the database's "valuesmap" metadata assuming every
// ';'-separated element has a ':' (read_valuesmap indexes past the end of a
// split otherwise: a segfault in strtol, also found by fuzzing), so the
// database is opened here first and that field checked.
bool valuesmap_ok(const std::string &map) {
    if (map.empty())
        return true;
    size_t start = 0;
    for (;;) {
        size_t end = map.find(';', start);
        std::string elem = map.substr(start, end == std::string::npos ? end : end - start);
        if (elem.find(':') == std::string::npos)
            return false;
        if (end == std::string::npos)
            return true;
        start = end + 1;
    }
}

void check_index_database(const zim::Item &item) {
    direct_access where = as_direct_access(item.getDirectAccessInformation());
    if (where.first.empty())
        return;  // compressed: libzim does not use it
    int fd = ::open(where.first.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;  // libzim will report the same failure itself
    if (::lseek(fd, (off_t)where.second, SEEK_SET) < 0) {
        ::close(fd);
        return;
    }
    std::string map;
    try {
        Xapian::Database db(fd);  // takes the descriptor
        map = db.get_metadata("valuesmap");
    } catch (const Xapian::Error &e) {
        throw zim::ZimFileFormatError("unreadable search index: " + e.get_description());
    }
    if (!valuesmap_ok(map))
        throw zim::ZimFileFormatError("search index has a malformed values map");
}

}  // namespace

// with_database: also open the index database (searchers are about to);
// has_*_index only reads the entry.
void zs_impl::check_index_entries(const zim::Archive &a, bool with_database, const OpenFile *file) {
    auto check = [&](const zim::Entry &e) {
        if (e.isRedirect())
            return;
        try {
            zim::Item item = e.getItem();
            uint64_t size;
            if (file)
                (void)compressed_item_size(*file, item, &size);
            (void)item.getSize();
            if (with_database)
                check_index_database(item);
        } catch (const std::bad_alloc &) {
            throw;
        } catch (const std::exception &ex) {
            throw zim::ZimFileFormatError("corrupt search index entry '" + e.getPath() +
                                          "': " + one_line(ex.what()));
        }
    };
    if (a.hasNewNamespaceScheme()) {
        const uint32_t n = a.getAllEntryCount();
        for (uint32_t i = n; i > 0 && i + 16 > n; i--) {
            zim::Entry e = a.getEntryByPath(i - 1);
            const std::string path = e.getPath();
            if (path.size() >= 6 && path.compare(path.size() - 6, 6, "xapian") == 0)
                check(e);
        }
    } else {
        for (const char *path : {"X/fulltext/xapian", "X/title/xapian", "Z//fulltextIndex/xapian"}) {
            try {
                check(a.getEntryByPath(path));
            } catch (const zim::EntryNotFound &) {
            }
        }
    }
}

// ---- archive ----------------------------------------------------------------

namespace {

// libzim 8.1.1 opens a multi-part archive ("name.zimaa", "name.zimab", ...)
// only by name, from the name without the suffix.
bool is_multipart_name(const char *path) {
    struct stat sb;
    return ::stat(path, &sb) < 0 && errno == ENOENT &&
           ::stat((std::string(path) + "aa").c_str(), &sb) == 0;
}

}  // namespace

extern "C" zs_archive *zs_archive_open(const char *path, unsigned range, uint64_t offset,
                                       uint64_t size, zs_archive_info *info,
                                       zs_error *err) {
    return guarded(err, (zs_archive *)nullptr, [&]() -> zs_archive * {
        std::unique_ptr<zs_archive> h;
        if (!range && is_multipart_name(path)) {
            h.reset(new zs_archive{nullptr, zim::Archive(std::string(path)), path});
        } else {
            std::shared_ptr<OpenFile> file = open_archive_file(path, range, offset, size, err);
            if (!file)
                return nullptr;
            check_title_listings(*file);
            zim::Archive a = open_archive(*file);
            h.reset(new zs_archive{std::move(file), std::move(a), path});
        }
        const zim::Archive &a = h->a;
        info->filesize = a.getFilesize();
        info->all_entry_count = a.getAllEntryCount();
        info->entry_count = a.getEntryCount();
        zim::Uuid u = a.getUuid();
        std::memcpy(info->uuid, u.data, 16);
        info->has_checksum = a.hasChecksum();
        info->checksum[0] = '\0';
        if (info->has_checksum) {
            std::string c = a.getChecksum();
            std::snprintf(info->checksum, sizeof info->checksum, "%s", c.c_str());
        }
        info->has_main_entry = a.hasMainEntry();
        info->is_multipart = a.isMultiPart();
        info->has_new_namespace_scheme = a.hasNewNamespaceScheme();
        // libzim 8.1.1 sizes the dirent cache from the environment at open
        // (default 512) and offers no accessor; report what it was given.
        const char *env = std::getenv("ZIM_DIRENTCACHE");
        long dc = env ? std::strtol(env, nullptr, 10) : 512;
        info->dirent_cache_max = dc > 0 ? (uint32_t)dc : 512;
        info->cluster_cache = h->file ? (uint64_t)(uintptr_t)h->file->clusters.get() : 0;
        return h.release();
    });
}

extern "C" zs_archive *zs_archive_clone(zs_archive *a, zs_error *err) {
    return guarded(err, (zs_archive *)nullptr, [&] {
        ArchiveCopy c = copy_archive(a->file, a->a);
        return new zs_archive{std::move(c.file), std::move(c.a), a->filename};
    });
}

extern "C" void zs_archive_free(zs_archive *a) { delete a; }

extern "C" int zs_archive_stat(zs_archive *a, zs_stat which, int64_t *out, zs_error *err) {
    return guarded_on(a->file, err, -1, [&] {
        switch (which) {
        case ZS_STAT_ARTICLE_COUNT: *out = a->a.getArticleCount(); break;
        case ZS_STAT_MEDIA_COUNT: *out = a->a.getMediaCount(); break;
        case ZS_STAT_HAS_FULLTEXT_INDEX:
            check_index_entries(a->a, false, a->file.get());
            *out = a->a.hasFulltextIndex();
            break;
        case ZS_STAT_HAS_TITLE_INDEX:
            check_index_entries(a->a, false, a->file.get());
            *out = a->a.hasTitleIndex();
            break;
        default: throw std::invalid_argument("unknown archive statistic");
        }
        return 0;
    });
}

extern "C" zs_entry *zs_archive_entry_by_path(zs_archive *a, const char *path, size_t len,
                                              zs_entry_info *info, zs_error *err) {
    return guarded_on(a->file, err, (zs_entry *)nullptr, [&] {
        std::string p(path, len);
        try {
            return make_entry(a->a.getEntryByPath(p), a->file, info);
        } catch (const zim::EntryNotFound &) {
            throw zim::EntryNotFound("no entry with path '" + p + "'");
        }
    });
}

extern "C" zs_entry *zs_archive_entry_by_title(zs_archive *a, const char *title, size_t len,
                                               zs_entry_info *info, zs_error *err) {
    return guarded_on(a->file, err, (zs_entry *)nullptr, [&] {
        std::string t(title, len);
        try {
            return make_entry(a->a.getEntryByTitle(t), a->file, info);
        } catch (const zim::EntryNotFound &) {
            throw zim::EntryNotFound("no entry with title '" + t + "'");
        }
    });
}

extern "C" zs_entry *zs_archive_entry_by_index(zs_archive *a, uint64_t idx, zs_entry_info *info,
                                               zs_error *err) {
    return guarded_on(a->file, err, (zs_entry *)nullptr, [&]() -> zs_entry * {
        // libzim indexes with uint32 and wraps larger values silently.
        if (idx >= a->a.getAllEntryCount())
            throw std::out_of_range("entry index " + std::to_string(idx) +
                                    " out of range (archive has " +
                                    std::to_string(a->a.getAllEntryCount()) + " entries)");
        return make_entry(a->a.getEntryByPath(static_cast<zim::entry_index_type>(idx)), a->file, info);
    });
}

extern "C" zs_entry *zs_archive_main_entry(zs_archive *a, zs_entry_info *info, zs_error *err) {
    return guarded_on(a->file, err, (zs_entry *)nullptr,
                   [&] { return make_entry(a->a.getMainEntry(), a->file, info); });
}

extern "C" zs_entry *zs_archive_random_entry(zs_archive *a, zs_entry_info *info,
                                             zs_error *err) {
    return guarded_on(a->file, err, (zs_entry *)nullptr,
                   [&] { return make_entry(a->a.getRandomEntry(), a->file, info); });
}

extern "C" int zs_archive_metadata_keys(zs_archive *a, char **buf, size_t *len, size_t *count,
                                        zs_error *err) {
    return guarded_on(a->file, err, -1, [&] {
        std::vector<std::string> keys = a->a.getMetadataKeys();
        *buf = join_nul(keys, len);
        *count = keys.size();
        return 0;
    });
}

extern "C" zs_item *zs_archive_metadata_item(zs_archive *a, const char *name, size_t len,
                                             zs_item_info *info, zs_error *err) {
    return guarded_on(a->file, err, (zs_item *)nullptr, [&] {
        std::string n(name, len);
        try {
            return make_item(a->a.getMetadataItem(n), a->file, info);
        } catch (const zim::EntryNotFound &) {
            throw zim::EntryNotFound("no metadata named '" + n + "'");
        }
    });
}

extern "C" int zs_archive_illustration_sizes(zs_archive *a, unsigned *sizes, size_t cap,
                                             size_t *count, zs_error *err) {
    return guarded_on(a->file, err, -1, [&] {
        size_t n = 0;
        for (unsigned s : a->a.getIllustrationSizes())
            if (n < cap)
                sizes[n++] = s;
        *count = n;
        return 0;
    });
}

extern "C" zs_item *zs_archive_illustration_item(zs_archive *a, unsigned size,
                                                 zs_item_info *info, zs_error *err) {
    return guarded_on(a->file, err, (zs_item *)nullptr, [&]() -> zs_item * {
        // libzim 8.1.1 throws a bare runtime_error for a missing size.
        if (!a->a.hasIllustration(size))
            throw zim::EntryNotFound("no illustration of size " + std::to_string(size));
        return make_item(a->a.getIllustrationItem(size), a->file, info);
    });
}

extern "C" void zs_buffer_free(char *buf) { std::free(buf); }

extern "C" int zs_archive_check(zs_archive *a, zs_error *err) {
    return guarded_on(a->file, err, -1, [&] { return a->a.check() ? 1 : 0; });
}

namespace {

// ZIM 6.3 (libzim 9's writer, every python-libzim 3.13 archive) drops the
// header's full title table (its position is all ones) and keeps only the
// front-article listing X/listing/titleOrdered/v1. libzim 8.1.1's check
// predates that and fails such a valid file ("Full Title index table outside
// ZIM file"; Debian's zimcheck says the same), so the listing itself is
// checked instead, as libzim checks its listings: every id in range, titles
// in order.
bool has_v1_listing_only(const zs_archive &a) {
    Header h;
    return a.file && read_header(*a.file, &h) && h.minor >= 3 && h.title_ptr_pos == ~uint64_t(0);
}

bool title_listing_ok(const zs_archive &a, const std::string &name) {
    Header h;
    Dirent d;
    uint32_t index;
    if (!read_header(*a.file, &h) || !find_dirent(*a.file, h, name, &index, &d))
        return true;  // no listing, nothing to check
    if (d.redirect)
        return false;
    const zim::Blob ids = a.a.getEntryByPath(index).getItem().getData();
    if (ids.size() % 4)
        return false;
    const uint32_t n = a.a.getAllEntryCount();
    std::string prev;
    for (size_t i = 0; i < ids.size(); i += 4) {
        const unsigned char *p = reinterpret_cast<const unsigned char *>(ids.data() + i);
        const uint32_t id = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
        if (id >= n)
            return false;
        std::string title = a.a.getEntryByPath(id).getTitle();
        if (i && title < prev)
            return false;
        prev.swap(title);
    }
    return true;
}

}  // namespace

extern "C" int zs_archive_validate(zs_archive *a, unsigned mask, unsigned *failed,
                                   zs_error *err) {
    return guarded_on(a->file, err, -1, [&] {
        unsigned f = 0;
        for (unsigned c = 0; c < ZS_CHECK_COUNT; c++) {
            if (!(mask & (1u << c)))
                continue;
            bool ok;
            try {
                if (c == ZS_CHECK_TITLE_INDEX && has_v1_listing_only(*a))
                    ok = title_listing_ok(*a, "Xlisting/titleOrdered/v1");
                else
                    ok = a->a.checkIntegrity(static_cast<zim::IntegrityCheck>(c));
            } catch (const std::bad_alloc &) {
                throw;
            } catch (...) {
                // A check that cannot even run on this data has failed.
                ok = false;
            }
            if (!ok)
                f |= 1u << c;
        }
        *failed = f;
        return 0;
    });
}

// ---- entry / item / blob ------------------------------------------------------

extern "C" void zs_entry_free(zs_entry *e) { delete e; }

extern "C" int zs_entry_fd(const zs_entry *e) { return e->file ? e->file->fd : -1; }

extern "C" zs_entry *zs_entry_redirect(zs_entry *e, zs_entry_info *info, zs_error *err) {
    return guarded_on(e->file, err, (zs_entry *)nullptr, [&]() -> zs_entry * {
        if (!e->e.isRedirect())
            throw zim::InvalidType("entry '" + e->path + "' is not a redirect");
        return make_entry(e->e.getRedirectEntry(), e->file, info);
    });
}

extern "C" zs_item *zs_entry_item(zs_entry *e, zs_item_info *info, zs_error *err) {
    return guarded_on(e->file, err, (zs_item *)nullptr, [&] { return make_item(e->e.getItem(true), e->file, info); });
}

extern "C" void zs_item_free(zs_item *it) { delete it; }

extern "C" int zs_item_size(zs_item *it, uint64_t *size, zs_error *err) {
    return guarded_on(it->file, err, -1, [&] {
        if (!it->file || !compressed_item_size(*it->file, it->it, size))
            *size = it->it.getSize();
        return 0;
    });
}

namespace {

// libzim hands out an item stored uncompressed as a view of its map of the
// file, which faults (SIGBUS) when the file is truncated later, while the
// view lives. Such content is read into memory of its own instead: one
// pread, where libzim would map and populate the same pages.
zim::Blob item_bytes(const zs_item &h) {
    if (h.file) {
        zim::Blob compressed;
        if (compressed_item_data(*h.file, h.it, &compressed))
            return compressed;
        const direct_access where = as_direct_access(h.it.getDirectAccessInformation());
        if (!where.first.empty()) {
            const zim::size_type n = h.it.getSize();
            std::shared_ptr<char> buf(new char[n ? n : 1], std::default_delete<char[]>());
            // where.second is a position in the file the archive was opened
            // from (embedding offset included), which h.file->fd reads.
            pread_exact(h.file->fd, buf.get(), n, where.second);
            return zim::Blob(buf, n);
        }
    }
    return h.it.getData();
}

}  // namespace

extern "C" zs_blob *zs_item_data(zs_item *it, zs_str *data, zs_error *err) {
    return guarded_on(it->file, err, (zs_blob *)nullptr, [&] {
        std::unique_ptr<zs_blob> b(new zs_blob{item_bytes(*it)});
        data->ptr = b->b.data();
        data->len = b->b.size();
        return b.release();
    });
}

extern "C" void zs_blob_free(zs_blob *b) { delete b; }

extern "C" int zs_item_text(zs_item *it, int main_only, size_t max_chars, char **out,
                            size_t *outlen, zs_error *err) {
    return guarded_on(it->file, err, -1, [&] {
        // item_bytes, not the snippet engine's reader: the same protection
        // against a file truncated under a mapped, uncompressed item.
        zim::Blob b = item_bytes(*it);
        std::string r = zsnip::html_text(b.data(), b.size(), main_only != 0, max_chars);
        char *buf = static_cast<char *>(std::malloc(r.size() + 1));
        if (!buf)
            throw std::bad_alloc();
        std::memcpy(buf, r.data(), r.size() + 1);
        *out = buf;
        *outlen = r.size();
        return 0;
    });
}

// ---- iteration ------------------------------------------------------------------

struct zs_iter {
    virtual ~zs_iter() {}
    virtual bool at_end() const = 0;
    virtual zim::Entry take() = 0;  // current entry, then advance
    uint64_t size = 0;
    std::shared_ptr<OpenFile> file;
};

namespace {
template <zim::EntryOrder O>
struct RangeIter : zs_iter {
    zim::Archive::EntryRange<O> range;
    zim::Archive::iterator<O> cur, end;
    explicit RangeIter(zim::Archive::EntryRange<O> r)
        : range(r), cur(range.begin()), end(range.end()) {
        size = range.size() > 0 ? (uint64_t)range.size() : 0;
    }
    bool at_end() const override { return !(cur != end); }
    zim::Entry take() override {
        zim::Entry e = *cur;
        ++cur;
        return e;
    }
};

// Cluster order computed here rather than by libzim: libzim 8.1.1 sizes its
// cluster-order list from namespace bounds that a corrupt dirent table can
// invert, and then zero-fills billions of entries (a fuzzed small.zim spent
// minutes in memset). Same order as libzim: redirects first, then by
// cluster; ties keep path order.
struct ClusterOrderIter : zs_iter {
    std::shared_ptr<zim::Archive> archive;
    std::vector<uint32_t> order;
    size_t pos = 0;
    explicit ClusterOrderIter(const zim::Archive &a) : archive(new zim::Archive(a)) {
        const uint32_t n = a.getEntryCount();
        std::vector<std::pair<uint32_t, uint32_t>> keyed;
        keyed.reserve(n);
        for (uint32_t i = 0; i < n; i++) {
            zim::Entry e = a.getEntryByPath(i);
            keyed.emplace_back(e.isRedirect() ? 0 : (uint32_t)e.getItem().getClusterIndex(), i);
        }
        std::stable_sort(keyed.begin(), keyed.end(),
                         [](const std::pair<uint32_t, uint32_t> &x,
                            const std::pair<uint32_t, uint32_t> &y) { return x.first < y.first; });
        order.reserve(n);
        for (const auto &k : keyed)
            order.push_back(k.second);
        size = order.size();
    }
    bool at_end() const override { return pos >= order.size(); }
    zim::Entry take() override { return archive->getEntryByPath(order[pos++]); }
};

template <zim::EntryOrder O>
zs_iter *new_range(const zim::Archive &a, zim::Archive::EntryRange<O> r, uint64_t *size) {
    zs_iter *it = new RangeIter<O>(checked_range(a, r));
    *size = it->size;
    return it;
}
}  // namespace

extern "C" zs_iter *zs_iter_new(zs_archive *a, zs_order order, uint64_t *size,
                                zs_error *err) {
    return guarded_on(a->file, err, (zs_iter *)nullptr, [&]() -> zs_iter * {
        zs_iter *it;
        switch (order) {
        case ZS_BY_TITLE: it = new_range(a->a, a->a.iterByTitle(), size); break;
        case ZS_BY_CLUSTER:
            it = new ClusterOrderIter(a->a);
            *size = it->size;
            break;
        default: it = new_range(a->a, a->a.iterByPath(), size); break;
        }
        it->file = a->file;
        return it;
    });
}

extern "C" zs_iter *zs_iter_prefix(zs_archive *a, zs_order order, const char *prefix,
                                   size_t len, uint64_t *size, zs_error *err) {
    return guarded_on(a->file, err, (zs_iter *)nullptr, [&]() -> zs_iter * {
        std::string p(prefix, len);
        zs_iter *it = order == ZS_BY_TITLE ? new_range(a->a, a->a.findByTitle(p), size)
                                           : new_range(a->a, a->a.findByPath(p), size);
        it->file = a->file;
        return it;
    });
}

extern "C" int zs_iter_next(zs_iter *it, zs_entry **out, zs_entry_info *infos, size_t cap,
                            size_t *n, zs_error *err) {
    *n = 0;
    return guarded_on(it->file, err, -1, [&] {
        while (*n < cap && !it->at_end()) {
            out[*n] = make_entry(it->take(), it->file, &infos[*n]);
            (*n)++;
        }
        return 0;
    });
}

extern "C" void zs_iter_free(zs_iter *it) { delete it; }
