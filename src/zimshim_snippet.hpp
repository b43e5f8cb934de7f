// libzim-c's own snippet engine: C++ internals shared by the shim files.
// Never includes Python.h; callers catch exceptions (guarded()).
#ifndef ZIMSHIM_SNIPPET_HPP
#define ZIMSHIM_SNIPPET_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zim {
class Archive;
class Entry;
class Item;
}
namespace zs_impl {
struct OpenFile;
}

namespace zsnip {

// Target length of a snippet's text in bytes, before escaping: libzim asks
// Xapian for 500.
constexpr size_t kLength = 500;

// The indexing language and stop words of an archive's full-text index, as
// libzim 8.1.1 reads them to set up its query parser (the database's
// "language" metadata, else the archive's Language metadata).  Cached per
// archive; thread-safe.
struct IndexLanguage {
    std::string language, stopwords;
};
IndexLanguage index_language(const zim::Archive &a);

// Makes snippets for one query.  Not thread-safe (Xapian's stemmers keep
// state): one per thread, or per page call.
class Snippeter {
  public:
    Snippeter(const std::string &query, const IndexLanguage &lang);
    ~Snippeter();
    Snippeter(const Snippeter &) = delete;
    Snippeter &operator=(const Snippeter &) = delete;

    // Plain text of the best window of the article's visible text, matched
    // words in <b>...</b>, HTML-escaped, "..." where cut; valid UTF-8.
    std::string make(const char *html, size_t len);
    // The snippet of a search hit's article; "" when it cannot be read, as
    // libzim's getSnippet() does.
    // file: the archive's (for its cluster cache), or null.
    std::string of_entry(const zim::Entry &entry, const zs_impl::OpenFile *file);
    // The visible text of an article as the engine scans it (kept by the
    // text cache), and the snippet of such a text.
    std::shared_ptr<const std::string> record(const char *html, size_t len);
    std::string from_text(const std::string &text);
    // The query's terms, as the query parser made them (for tests).
    const std::vector<std::string> &terms() const;

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

// The visible text of an HTML document (see TextSink): at most max_chars
// code points; main_only drops navigation.  Valid UTF-8.
std::string html_text(const char *html, size_t len, bool main_only, size_t max_chars);
// The same for an item's content, read through the archive's cluster cache
// (file: the archive's, or null).  Throws what reading the item throws.
std::string item_text(const zim::Item &item, const zs_impl::OpenFile *file, bool main_only,
                      size_t max_chars);

// ---- the cache of hits' text (zimshim_snippet_cache.cpp) ----

// A blob of a file: the file's cluster cache (its serial) and where in it.
struct TextKey {
    uint64_t file;
    uint32_t cluster, blob;
    bool operator==(const TextKey &o) const {
        return file == o.file && cluster == o.cluster && blob == o.blob;
    }
};
// The default budget of the cache of snippet text, in bytes.
constexpr uint64_t kTextCacheDefault = uint64_t(16) << 20;
// The visible text the snippet engine recorded for a blob, or null; a hit
// becomes the most recently used.  Thread-safe.
std::shared_ptr<const std::string> text_cache_get(const TextKey &key);
// Keeps a blob's text (nothing if it alone is over the budget), evicting
// the least recently used over the budget.  Thread-safe.
void text_cache_put(const TextKey &key, const std::shared_ptr<const std::string> &text);
// Drops every text of a file's cluster cache (that cache is being freed).
void text_cache_forget(uint64_t file);

// ZS_TEXT_HTML, ZS_TEXT_PLAIN or 0 for a MIME type (zs_text_kind).
int text_kind(const char *mimetype, size_t len);
// Plain text as it is: invalid UTF-8 replaced, cut at max_chars code points.
std::string plain_text(const char *p, size_t len, size_t max_chars);

}  // namespace zsnip

#endif
