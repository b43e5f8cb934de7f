// The only C++ in libzim-c: see zimshim.h for the contract.
#include "zimshim.h"

// For Archive::getClusterCount(), exported by libzim 8.1.1 but declared only
// under this macro.
#define ZIM_PRIVATE

#include <zim/archive.h>
#include <zim/entry.h>
#include <zim/error.h>
#include <zim/item.h>
#include <zim/search.h>
#include <zim/search_iterator.h>
#include <zim/suggestion.h>
#include <zim/version.h>
#include <xapian.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

struct zs_archive {
    zim::Archive a;
    std::string filename;
    // How it was opened, so a pooled searcher can open its own copy.
    std::string path;
    bool ranged = false;
    uint64_t offset = 0, size = 0;
};
struct zs_entry {
    zim::Entry e;
    std::string title, path;
};
struct zs_item {
    zim::Item it;
    std::string title, path, mimetype;
};
struct zs_blob {
    zim::Blob b;
};

namespace {

// ---- errors ---------------------------------------------------------------

std::atomic<long> g_fault{0};

struct InjectedFault : std::exception {
    const char *what() const noexcept override { return "injected fault"; }
};

// Called at the top of every guarded operation: fault injection lets the
// tests drive each error path of the extension without a corrupt archive.
std::atomic<long> g_delay_us{0};

void maybe_fault() {
    long d = g_delay_us.load(std::memory_order_relaxed);
    if (d > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(d));
    long v = g_fault.load(std::memory_order_relaxed);
    if (v > 0 && g_fault.fetch_sub(1) == 1)
        throw InjectedFault();
}

void trim(std::string &s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    size_t e = s.find_last_not_of(" \t\r\n");
    s = (b == std::string::npos) ? std::string() : s.substr(b, e - b + 1);
}

// libzim's messages are sometimes several lines (a sorted-table dump, or an
// assertion text that starts with a newline); the Python error must read as
// one line, so lines are trimmed and joined.
std::string one_line(const char *what) {
    std::istringstream in(what ? what : "");
    std::string line, out;
    while (std::getline(in, line)) {
        trim(line);
        if (line.empty())
            continue;
        if (!out.empty())
            out += (out.back() == ':') ? " " : "; ";
        out += line;
    }
    const std::string assert_prefix = "Assertion failed at ";
    if (out.compare(0, assert_prefix.size(), assert_prefix) == 0) {
        // "Assertion failed at ../src/cluster.cpp:123; new_offset[..] >= .."
        std::string rest = out.substr(assert_prefix.size());
        size_t slash = rest.find_last_of('/', rest.find(';'));
        if (slash != std::string::npos)
            rest = rest.substr(slash + 1);
        size_t semi = rest.find("; ");
        std::string where = rest.substr(0, semi);
        std::string cond = semi == std::string::npos ? "" : rest.substr(semi + 2);
        out = "corrupt data: libzim consistency check failed at " + where +
              (cond.empty() ? "" : " (" + cond + ")");
    }
    if (out.empty())
        out = "unknown error";
    return out;
}

void set_error(zs_error *err, zs_kind kind, const std::string &msg, int os_errno = 0) {
    if (!err)
        return;
    err->kind = kind;
    err->os_errno = os_errno;
    std::snprintf(err->msg, sizeof err->msg, "%s", msg.c_str());
}


// Maps the exception in flight to an error kind.  Must be called from a
// catch block.
void fill_error(zs_error *err) {
    try {
        throw;
    } catch (const InjectedFault &e) {
        set_error(err, ZS_ERR_INTERNAL, e.what());
    } catch (const zim::EntryNotFound &e) {
        set_error(err, ZS_ERR_NOT_FOUND, one_line(e.what()));
    } catch (const zim::ZimFileFormatError &e) {
        set_error(err, ZS_ERR_FORMAT, one_line(e.what()));
    } catch (const std::out_of_range &e) {
        set_error(err, ZS_ERR_INDEX, one_line(e.what()));
    } catch (const std::bad_alloc &) {
        set_error(err, ZS_ERR_MEMORY, "out of memory");
    } catch (const Xapian::QueryParserError &e) {
        set_error(err, ZS_ERR_QUERY, one_line(e.get_msg().c_str()));
    } catch (const Xapian::DatabaseError &e) {
        set_error(err, ZS_ERR_FORMAT, "search index: " + one_line(e.get_description().c_str()));
    } catch (const Xapian::Error &e) {
        set_error(err, ZS_ERR_INTERNAL, "Xapian: " + one_line(e.get_description().c_str()));
    } catch (const zim::InvalidType &e) {
        set_error(err, ZS_ERR_ARG, one_line(e.what()));
    } catch (const std::invalid_argument &e) {
        set_error(err, ZS_ERR_ARG, one_line(e.what()));
    } catch (const std::runtime_error &e) {
        std::string m = one_line(e.what());
        int code = 0;
        // libzim reports a failed open(2) as 'error N opening file "NAME'.
        if (std::sscanf(m.c_str(), "error %d opening file", &code) == 1 && code > 0) {
            set_error(err, ZS_ERR_IO, std::strerror(code), code);
        } else if (m.find("without FT Xapian index") != std::string::npos) {
            set_error(err, ZS_ERR_NO_INDEX, "no full-text index");
        } else {
            // Everything else libzim throws as runtime_error while reading
            // comes from data it could not make sense of.
            set_error(err, ZS_ERR_FORMAT, m);
        }
    } catch (const std::exception &e) {
        set_error(err, ZS_ERR_INTERNAL, one_line(e.what()));
    } catch (...) {
        set_error(err, ZS_ERR_INTERNAL, "unknown C++ exception");
    }
}

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

// ---- entries and items ----------------------------------------------------

zs_entry *make_entry(zim::Entry &&e, zs_entry_info *info) {
    std::unique_ptr<zs_entry> h(new zs_entry{std::move(e), {}, {}});
    h->title = h->e.getTitle();
    h->path = h->e.getPath();
    info->title = {h->title.data(), h->title.size()};
    info->path = {h->path.data(), h->path.size()};
    info->index = h->e.getIndex();
    info->is_redirect = h->e.isRedirect();
    return h.release();
}

zs_item *make_item(zim::Item &&it, zs_item_info *info) {
    std::unique_ptr<zs_item> h(new zs_item{std::move(it), {}, {}, {}});
    h->title = h->it.getTitle();
    h->path = h->it.getPath();
    h->mimetype = h->it.getMimetype();
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
    zim::Item::DirectAccessInfo where = item.getDirectAccessInformation();
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

// with_database: also open the index database (searchers are about to);
// has_*_index only reads the entry.
void check_index_entries(const zim::Archive &a, bool with_database) {
    auto check = [&](const zim::Entry &e) {
        if (e.isRedirect())
            return;
        try {
            zim::Item item = e.getItem();
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

char *join_nul(const std::vector<std::string> &v, size_t *len) {
    size_t total = 0;
    for (const auto &s : v)
        total += s.size() + 1;
    char *buf = static_cast<char *>(std::malloc(total ? total : 1));
    if (!buf)
        throw std::bad_alloc();
    char *p = buf;
    for (const auto &s : v) {
        std::memcpy(p, s.data(), s.size());
        p += s.size();
        *p++ = '\0';
    }
    *len = total;
    return buf;
}

}  // namespace

// ---- archive ----------------------------------------------------------------

extern "C" zs_archive *zs_archive_open(const char *path, int has_range, uint64_t offset,
                                       uint64_t size, zs_archive_info *info,
                                       zs_error *err) {
    return guarded(err, (zs_archive *)nullptr, [&]() -> zs_archive * {
        std::unique_ptr<zs_archive> h;
        if (has_range) {
            int fd = ::open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                int e = errno;
                set_error(err, ZS_ERR_IO, std::strerror(e), e);
                return nullptr;
            }
            // libzim duplicates the descriptor, so ours is closed either way.
            try {
                h.reset(new zs_archive{zim::Archive(fd, offset, size), path, path, true,
                                       offset, size});
            } catch (...) {
                ::close(fd);
                throw;
            }
            ::close(fd);
        } else {
            // libzim reports a directory as a bad header; say what it is.
            struct stat sb;
            if (::stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
                set_error(err, ZS_ERR_IO, std::strerror(EISDIR), EISDIR);
                return nullptr;
            }
            zim::Archive a{std::string(path)};
            h.reset(new zs_archive{std::move(a), {}, path});
            h->filename = h->a.getFilename();
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
        info->filename = {h->filename.data(), h->filename.size()};
        return h.release();
    });
}

extern "C" void zs_archive_free(zs_archive *a) { delete a; }

extern "C" int zs_archive_stat(zs_archive *a, zs_stat which, int64_t *out, zs_error *err) {
    return guarded(err, -1, [&] {
        switch (which) {
        case ZS_STAT_ARTICLE_COUNT: *out = a->a.getArticleCount(); break;
        case ZS_STAT_MEDIA_COUNT: *out = a->a.getMediaCount(); break;
        case ZS_STAT_HAS_FULLTEXT_INDEX:
            check_index_entries(a->a, false);
            *out = a->a.hasFulltextIndex();
            break;
        case ZS_STAT_HAS_TITLE_INDEX:
            check_index_entries(a->a, false);
            *out = a->a.hasTitleIndex();
            break;
        default: throw std::invalid_argument("unknown archive statistic");
        }
        return 0;
    });
}

extern "C" zs_entry *zs_archive_entry_by_path(zs_archive *a, const char *path, size_t len,
                                              zs_entry_info *info, zs_error *err) {
    return guarded(err, (zs_entry *)nullptr, [&] {
        std::string p(path, len);
        try {
            return make_entry(a->a.getEntryByPath(p), info);
        } catch (const zim::EntryNotFound &) {
            throw zim::EntryNotFound("no entry with path '" + p + "'");
        }
    });
}

extern "C" zs_entry *zs_archive_entry_by_title(zs_archive *a, const char *title, size_t len,
                                               zs_entry_info *info, zs_error *err) {
    return guarded(err, (zs_entry *)nullptr, [&] {
        std::string t(title, len);
        try {
            return make_entry(a->a.getEntryByTitle(t), info);
        } catch (const zim::EntryNotFound &) {
            throw zim::EntryNotFound("no entry with title '" + t + "'");
        }
    });
}

extern "C" zs_entry *zs_archive_entry_by_index(zs_archive *a, uint64_t idx, zs_entry_info *info,
                                               zs_error *err) {
    return guarded(err, (zs_entry *)nullptr, [&]() -> zs_entry * {
        // libzim indexes with uint32 and wraps larger values silently.
        if (idx >= a->a.getAllEntryCount())
            throw std::out_of_range("entry index " + std::to_string(idx) +
                                    " out of range (archive has " +
                                    std::to_string(a->a.getAllEntryCount()) + " entries)");
        return make_entry(a->a.getEntryByPath(static_cast<zim::entry_index_type>(idx)), info);
    });
}

extern "C" zs_entry *zs_archive_main_entry(zs_archive *a, zs_entry_info *info, zs_error *err) {
    return guarded(err, (zs_entry *)nullptr,
                   [&] { return make_entry(a->a.getMainEntry(), info); });
}

extern "C" zs_entry *zs_archive_random_entry(zs_archive *a, zs_entry_info *info,
                                             zs_error *err) {
    return guarded(err, (zs_entry *)nullptr,
                   [&] { return make_entry(a->a.getRandomEntry(), info); });
}

extern "C" int zs_archive_metadata_keys(zs_archive *a, char **buf, size_t *len, size_t *count,
                                        zs_error *err) {
    return guarded(err, -1, [&] {
        std::vector<std::string> keys = a->a.getMetadataKeys();
        *buf = join_nul(keys, len);
        *count = keys.size();
        return 0;
    });
}

extern "C" zs_item *zs_archive_metadata_item(zs_archive *a, const char *name, size_t len,
                                             zs_item_info *info, zs_error *err) {
    return guarded(err, (zs_item *)nullptr, [&] {
        std::string n(name, len);
        try {
            return make_item(a->a.getMetadataItem(n), info);
        } catch (const zim::EntryNotFound &) {
            throw zim::EntryNotFound("no metadata named '" + n + "'");
        }
    });
}

extern "C" int zs_archive_illustration_sizes(zs_archive *a, unsigned *sizes, size_t cap,
                                             size_t *count, zs_error *err) {
    return guarded(err, -1, [&] {
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
    return guarded(err, (zs_item *)nullptr, [&]() -> zs_item * {
        // libzim 8.1.1 throws a bare runtime_error for a missing size.
        if (!a->a.hasIllustration(size))
            throw zim::EntryNotFound("no illustration of size " + std::to_string(size));
        return make_item(a->a.getIllustrationItem(size), info);
    });
}

extern "C" void zs_buffer_free(char *buf) { std::free(buf); }

extern "C" int zs_archive_check(zs_archive *a, zs_error *err) {
    return guarded(err, -1, [&] { return a->a.check() ? 1 : 0; });
}

extern "C" int zs_archive_validate(zs_archive *a, unsigned mask, unsigned *failed,
                                   zs_error *err) {
    return guarded(err, -1, [&] {
        unsigned f = 0;
        for (unsigned c = 0; c < ZS_CHECK_COUNT; c++) {
            if (!(mask & (1u << c)))
                continue;
            bool ok;
            try {
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

extern "C" zs_entry *zs_entry_redirect(zs_entry *e, zs_entry_info *info, zs_error *err) {
    return guarded(err, (zs_entry *)nullptr, [&]() -> zs_entry * {
        if (!e->e.isRedirect())
            throw zim::InvalidType("entry '" + e->path + "' is not a redirect");
        return make_entry(e->e.getRedirectEntry(), info);
    });
}

extern "C" zs_item *zs_entry_item(zs_entry *e, zs_item_info *info, zs_error *err) {
    return guarded(err, (zs_item *)nullptr, [&] { return make_item(e->e.getItem(true), info); });
}

extern "C" void zs_item_free(zs_item *it) { delete it; }

extern "C" int zs_item_size(zs_item *it, uint64_t *size, zs_error *err) {
    return guarded(err, -1, [&] {
        *size = it->it.getSize();
        return 0;
    });
}

extern "C" zs_blob *zs_item_data(zs_item *it, zs_str *data, zs_error *err) {
    return guarded(err, (zs_blob *)nullptr, [&] {
        std::unique_ptr<zs_blob> b(new zs_blob{it->it.getData()});
        data->ptr = b->b.data();
        data->len = b->b.size();
        return b.release();
    });
}

extern "C" void zs_blob_free(zs_blob *b) { delete b; }

// ---- iteration ------------------------------------------------------------------

struct zs_iter {
    virtual ~zs_iter() {}
    virtual bool at_end() const = 0;
    virtual zim::Entry take() = 0;  // current entry, then advance
    uint64_t size = 0;
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
    // A corrupt title listing can claim billions of entries; walking them
    // would look like a hang.
    if (r.size() < 0 || (uint64_t)r.size() > a.getAllEntryCount())
        throw zim::ZimFileFormatError("entry listing claims " + std::to_string(r.size()) +
                                      " entries, the archive has " +
                                      std::to_string(a.getAllEntryCount()));
    zs_iter *it = new RangeIter<O>(r);
    *size = it->size;
    return it;
}
}  // namespace

extern "C" zs_iter *zs_iter_new(zs_archive *a, zs_order order, uint64_t *size,
                                zs_error *err) {
    return guarded(err, (zs_iter *)nullptr, [&]() -> zs_iter * {
        switch (order) {
        case ZS_BY_TITLE: return new_range(a->a, a->a.iterByTitle(), size);
        case ZS_BY_CLUSTER: {
            zs_iter *it = new ClusterOrderIter(a->a);
            *size = it->size;
            return it;
        }
        default: return new_range(a->a, a->a.iterByPath(), size);
        }
    });
}

extern "C" zs_iter *zs_iter_prefix(zs_archive *a, zs_order order, const char *prefix,
                                   size_t len, uint64_t *size, zs_error *err) {
    return guarded(err, (zs_iter *)nullptr, [&]() -> zs_iter * {
        std::string p(prefix, len);
        if (order == ZS_BY_TITLE)
            return new_range(a->a, a->a.findByTitle(p), size);
        return new_range(a->a, a->a.findByPath(p), size);
    });
}

extern "C" int zs_iter_next(zs_iter *it, zs_entry **out, zs_entry_info *infos, size_t cap,
                            size_t *n, zs_error *err) {
    *n = 0;
    return guarded(err, -1, [&] {
        while (*n < cap && !it->at_end()) {
            out[*n] = make_entry(it->take(), &infos[*n]);
            (*n)++;
        }
        return 0;
    });
}

extern "C" void zs_iter_free(zs_iter *it) { delete it; }

// ---- searcher pool ------------------------------------------------------------------

namespace {

// An archive of a searcher, with what it takes to open it again.
struct Source {
    zim::Archive a;
    std::string path;
    bool ranged;
    uint64_t offset, size;
};

// libzim's Archive serialises lookups with internal mutexes, and every
// search result's title is a lookup; two threads searching through one
// Archive contend there (a shared Searcher ran at 75% of independent ones,
// measured).  So every pooled searcher but the first opens the file again.
// Should that fail or find another archive (the file was replaced), the
// shared one is used.
zim::Archive own_copy(const Source &src) {
    try {
        std::unique_ptr<zim::Archive> a;
        if (src.ranged) {
            int fd = ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                return src.a;
            try {
                a.reset(new zim::Archive(fd, src.offset, src.size));
            } catch (...) {
                ::close(fd);
                throw;
            }
            ::close(fd);
        } else {
            a.reset(new zim::Archive(src.path));
        }
        if (a->getUuid() == src.a.getUuid() && a->getFilesize() == src.a.getFilesize())
            return *a;
    } catch (const std::bad_alloc &) {
        throw;
    } catch (...) {
    }
    return src.a;
}

struct Slot {
    uint64_t gen = ~uint64_t(0);
    bool own_files = false;  // opens its own copies of the archives
    std::unique_ptr<zim::Searcher> ft;
    std::unique_ptr<zim::SuggestionSearcher> sg;
    // The last Search served by this slot, kept so a Python Search that asks
    // for the estimate and then pages does not re-parse its query.
    uint64_t cached_id = 0;
    std::vector<zim::Archive> archives;  // as of gen
    std::vector<zim::Uuid> indexed_ids;  // per archive; zero uuid if no index
    std::unique_ptr<zim::Search> ft_search;
    std::unique_ptr<zim::SuggestionSearch> sg_search;
};

}  // namespace

struct zs_searcher {
    zs_search_kind kind;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Source> archives;
    uint64_t gen = 0;
    std::vector<std::unique_ptr<Slot>> slots;
    std::vector<Slot *> idle;
    size_t cap;
};

namespace {

// Holds one pooled native searcher for the length of a call.
class Lease {
  public:
    explicit Lease(zs_searcher *s) : s_(s) {
        std::unique_lock<std::mutex> lk(s->mu);
        for (;;) {
            if (!s->idle.empty()) {
                // Most recently used first: its caches are warm.
                slot_ = s->idle.back();
                s->idle.pop_back();
                break;
            }
            if (s->slots.size() < s->cap) {
                s->slots.emplace_back(new Slot);
                slot_ = s->slots.back().get();
                slot_->own_files = s->slots.size() > 1;
                break;
            }
            s->cv.wait(lk);
        }
        if (slot_->gen != s->gen) {
            std::vector<Source> archives = s->archives;
            uint64_t gen = s->gen;
            lk.unlock();
            try {
                rebuild(archives);
            } catch (...) {
                give_back();
                throw;
            }
            slot_->gen = gen;
        }
    }
    ~Lease() { give_back(); }
    Lease(const Lease &) = delete;
    Lease &operator=(const Lease &) = delete;

    zim::Search &search(const zs_query *q) {
        Slot &sl = *slot_;
        if (!q->search_id || sl.cached_id != q->search_id || !sl.ft_search) {
            sl.ft_search.reset();
            sl.cached_id = 0;
            zim::Query query(std::string(q->text, q->len));
            if (q->geo)
                query.setGeorange(q->latitude, q->longitude, q->distance);
            sl.ft_search.reset(new zim::Search(sl.ft->search(query)));
            sl.cached_id = q->search_id;
        }
        return *sl.ft_search;
    }

    zim::SuggestionSearch &suggest(const zs_query *q) {
        Slot &sl = *slot_;
        if (!q->search_id || sl.cached_id != q->search_id || !sl.sg_search) {
            sl.sg_search.reset();
            sl.cached_id = 0;
            sl.sg_search.reset(
                new zim::SuggestionSearch(sl.sg->suggest(std::string(q->text, q->len))));
            sl.cached_id = q->search_id;
        }
        return *sl.sg_search;
    }

    // Which archive a result came from: libzim numbers only the archives
    // that have an index, so results are matched back by UUID.
    int archive_of(const zim::Uuid &id) const {
        const auto &ids = slot_->indexed_ids;
        if (ids.size() == 1)
            return 0;
        for (size_t i = 0; i < ids.size(); i++)
            if (ids[i] == id)
                return (int)i;
        return -1;
    }

  private:
    void rebuild(const std::vector<Source> &sources) {
        Slot &sl = *slot_;
        sl.ft_search.reset();
        sl.sg_search.reset();
        sl.cached_id = 0;
        std::vector<zim::Archive> archives;
        for (const Source &src : sources)
            archives.push_back(sl.own_files ? own_copy(src) : src.a);
        sl.archives = archives;
        sl.indexed_ids.clear();
        for (const auto &a : archives)
            sl.indexed_ids.push_back(a.hasFulltextIndex() ? a.getUuid() : zim::Uuid());
        if (s_->kind == ZS_FULLTEXT) {
            sl.ft.reset(new zim::Searcher(archives));
        } else {
            sl.sg.reset(new zim::SuggestionSearcher(archives.at(0)));
        }
    }
    void give_back() {
        if (!slot_)
            return;
        {
            std::lock_guard<std::mutex> lk(s_->mu);
            s_->idle.push_back(slot_);
        }
        slot_ = nullptr;
        s_->cv.notify_one();
    }
    zs_searcher *s_;
    Slot *slot_ = nullptr;
};

struct Row {
    std::string path, title, snippet;
    int score = 0, word_count = 0, archive = -1;
};

struct PageImpl {
    std::vector<Row> rows;
    std::vector<zs_result> results;
};

zs_page *finish_page(std::unique_ptr<PageImpl> impl) {
    // Pointers are taken only now: rows no longer move.
    impl->results.resize(impl->rows.size());
    for (size_t i = 0; i < impl->rows.size(); i++) {
        const Row &r = impl->rows[i];
        zs_result &o = impl->results[i];
        o.path = {r.path.data(), r.path.size()};
        o.title = {r.title.data(), r.title.size()};
        o.snippet = {r.snippet.data(), r.snippet.size()};
        o.score = r.score;
        o.word_count = r.word_count;
        o.archive = r.archive;
    }
    std::unique_ptr<zs_page> p(new zs_page);
    p->results = impl->results.data();
    p->n = impl->results.size();
    p->priv = impl.release();
    return p.release();
}

size_t default_cap() {
    // Searches are CPU-bound: more native searchers than cores buys only
    // memory (each extra one has its own copy of the archives' caches, up to
    // 16 decompressed clusters each); threads beyond it wait without the GIL.
    unsigned hw = std::thread::hardware_concurrency();
    return std::max<size_t>(2, hw);
}

}  // namespace

extern "C" zs_searcher *zs_searcher_new(zs_search_kind kind, zs_archive *const *archives,
                                        size_t n, zs_error *err) {
    return guarded(err, (zs_searcher *)nullptr, [&]() -> zs_searcher * {
        if (kind == ZS_SUGGEST && n != 1)
            throw std::invalid_argument("a suggestion searcher takes exactly one archive");
        std::unique_ptr<zs_searcher> s(new zs_searcher);
        s->kind = kind;
        s->cap = default_cap();
        const char *env = std::getenv("LIBZIM_C_SEARCHER_POOL");
        if (env && std::atoi(env) > 0)
            s->cap = (size_t)std::atoi(env);
        for (size_t i = 0; i < n; i++) {
            check_index_entries(archives[i]->a, true);
            s->archives.push_back(Source{archives[i]->a, archives[i]->path, archives[i]->ranged,
                                         archives[i]->offset, archives[i]->size});
        }
        return s.release();
    });
}

extern "C" int zs_searcher_add_archive(zs_searcher *s, zs_archive *a, zs_error *err) {
    return guarded(err, -1, [&] {
        if (s->kind != ZS_FULLTEXT)
            throw std::invalid_argument("only full-text searchers take more archives");
        check_index_entries(a->a, true);
        std::lock_guard<std::mutex> lk(s->mu);
        s->archives.push_back(Source{a->a, a->path, a->ranged, a->offset, a->size});
        s->gen++;
        return 0;
    });
}

extern "C" int zs_searcher_prepare(zs_searcher *s, zs_error *err) {
    return guarded(err, -1, [&]() -> int {
        if (s->kind == ZS_FULLTEXT) {
            bool any;
            {
                std::lock_guard<std::mutex> lk(s->mu);
                any = std::any_of(s->archives.begin(), s->archives.end(),
                                  [](const Source &src) { return src.a.hasFulltextIndex(); });
            }
            if (!any) {
                set_error(err, ZS_ERR_NO_INDEX, "no full-text index");
                return -1;
            }
        }
        // Opening the database now makes the first search as fast as later
        // ones and reports a broken index at construction.
        Lease lease(s);
        zs_query q{"", 0, 0, 0, 0, 0, 0};
        if (s->kind == ZS_FULLTEXT)
            lease.search(&q);
        else
            lease.suggest(&q);
        return 0;
    });
}

extern "C" void zs_searcher_free(zs_searcher *s) { delete s; }

extern "C" size_t zs_searcher_pool_size(zs_searcher *s) {
    std::lock_guard<std::mutex> lk(s->mu);
    return s->slots.size();
}

extern "C" zs_page *zs_search_page(zs_searcher *s, const zs_query *q, int start, int count,
                                   unsigned flags, zs_error *err) {
    return guarded(err, (zs_page *)nullptr, [&]() -> zs_page * {
        if (start < 0 || count < 0)
            throw std::invalid_argument("start and count must not be negative");
        std::unique_ptr<PageImpl> impl(new PageImpl);
        Lease lease(s);
        if (s->kind == ZS_FULLTEXT) {
            zim::Search &search = lease.search(q);
            auto results = search.getResults(start, count);
            impl->rows.reserve(results.size() > 0 ? (size_t)results.size() : 0);
            for (auto it = results.begin(); it != results.end(); ++it) {
                Row r;
                r.path = it.getPath();
                if (flags & ZS_WANT_TITLE) {
                    r.title = it.getTitle();
                    r.score = it.getScore();
                }
                if (flags & ZS_WANT_SNIPPET) {
                    r.snippet = it.getSnippet();
                    // A separate value read per hit (~2 us, measured): it
                    // would make a snippet-less page 40% slower, while next
                    // to a snippet it is free.
                    r.word_count = it.getWordCount();
                } else {
                    r.word_count = -1;
                }
                r.archive = lease.archive_of(it.getZimId());
                impl->rows.push_back(std::move(r));
            }
        } else {
            zim::SuggestionSearch &search = lease.suggest(q);
            auto results = search.getResults(start, count);
            for (auto it = results.begin(); it != results.end(); ++it) {
                const zim::SuggestionItem &item = *it;
                Row r;
                r.path = item.getPath();
                r.title = item.getTitle();
                r.snippet = item.getSnippet();
                r.archive = 0;
                impl->rows.push_back(std::move(r));
            }
        }
        return finish_page(std::move(impl));
    });
}

extern "C" int zs_search_estimate(zs_searcher *s, const zs_query *q, int64_t *out,
                                  zs_error *err) {
    return guarded(err, -1, [&] {
        Lease lease(s);
        if (s->kind == ZS_FULLTEXT)
            *out = lease.search(q).getEstimatedMatches();
        else
            *out = lease.suggest(q).getEstimatedMatches();
        return 0;
    });
}

extern "C" void zs_page_free(zs_page *p) {
    if (!p)
        return;
    delete static_cast<PageImpl *>(p->priv);
    delete p;
}

// ---- library -------------------------------------------------------------------------

extern "C" int zs_versions(char **buf, size_t *len, size_t *count, zs_error *err) {
    return guarded(err, -1, [&] {
        std::vector<std::string> v;
        for (const auto &p : zim::getVersions())
            v.push_back(p.first + "=" + p.second);
        *buf = join_nul(v, len);
        *count = v.size();
        return 0;
    });
}

extern "C" long zs_fault_inject(long nth) { return g_fault.exchange(nth); }

extern "C" long zs_test_delay(long usec) { return g_delay_us.exchange(usec); }
