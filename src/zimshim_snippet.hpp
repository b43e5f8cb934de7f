// libzim-c's own snippet engine: C++ internals shared by the shim files.
// Never includes Python.h; callers catch exceptions (guarded()).
#ifndef ZIMSHIM_SNIPPET_HPP
#define ZIMSHIM_SNIPPET_HPP

#include <cstddef>
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

// ZS_TEXT_HTML, ZS_TEXT_PLAIN or 0 for a MIME type (zs_text_kind).
int text_kind(const char *mimetype, size_t len);
// Plain text as it is: invalid UTF-8 replaced, cut at max_chars code points.
std::string plain_text(const char *p, size_t len, size_t max_chars);

}  // namespace zsnip

#endif
