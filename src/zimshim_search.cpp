// The searcher pool, result pages and suggestions: see zimshim.h.
#include "zimshim_impl.hpp"
#include "zimshim_snippet.hpp"

#include <zim/search.h>
#include <zim/search_iterator.h>
#include <zim/suggestion.h>
#include <xapian.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace zs_impl;

// ---- searcher pool ------------------------------------------------------------------

namespace {

// libzim's Archive serialises lookups with internal mutexes, and every
// search result's title is a lookup; two threads searching through one
// Archive contend there (a shared Searcher ran at 75% of independent ones,
// measured).  So every pooled searcher but the first reads through its own
// copy of each archive, made by reopening the archive's descriptor: the
// same file, whatever happened to the path since (copy_archive).
struct Slot {
    uint64_t gen = ~uint64_t(0);
    bool own_files = false;  // opens its own copies of the archives
    std::unique_ptr<zim::Searcher> ft;
    std::unique_ptr<zim::SuggestionSearcher> sg;
    // The last Search served by this slot, kept so a Python Search that asks
    // for the estimate and then pages does not re-parse its query.
    uint64_t cached_id = 0;
    // As of gen. Holds the descriptors the searchers open their index
    // databases through (lazily, at the first search): replaced only
    // together with ft/sg.
    std::vector<ArchiveCopy> archives;
    std::vector<zim::Uuid> indexed_ids;  // per archive; zero uuid if no index
    std::vector<char> new_scheme;        // per archive: paths are namespace-less
    // Whether the index stores namespaced paths ("fullPath", the libzim default)
    // that getPath() strips: -1 until a hit shows it.  See Lease::path_of.
    int strips = -1;
    std::unique_ptr<zim::Search> ft_search;
    std::unique_ptr<zim::SuggestionSearch> sg_search;
};

// Estimates already counted, by query, for the searcher's archives as of a
// generation.  libzim's getEstimatedMatches runs Xapian's matcher once more on
// its own (get_mset(0, 0, 10)), which on a big archive costs more than the page
// of results: 68 ms against 29 for a word in 666,765 of 1,000,000 articles,
// measured; and a reader paging through a query, or a server asked the same
// query by many readers, pays it on every page.  The figure is a function of
// the query and the archives alone (never of the page asked), so keeping it
// changes no answer.  Bounded, oldest out first; LIBZIM_C_ESTIMATE_CACHE sets
// the number of queries kept (0: none).
struct EstimateCache {
    std::mutex mu;
    size_t cap = 1024;
    uint64_t gen = 0;  // the searcher's generation the entries belong to
    std::unordered_map<std::string, int64_t> counts;
    std::deque<std::string> order;

    bool find(const std::string &key, uint64_t g, int64_t *out) {
        std::lock_guard<std::mutex> lk(mu);
        if (g != gen)
            return false;
        auto it = counts.find(key);
        if (it == counts.end())
            return false;
        *out = it->second;
        return true;
    }
    void keep(const std::string &key, uint64_t g, int64_t n) {
        std::lock_guard<std::mutex> lk(mu);
        if (cap == 0 || g < gen)
            return;  // counted over archives the searcher has since added to
        if (g > gen) {
            counts.clear();
            order.clear();
            gen = g;
        }
        if (!counts.emplace(key, n).second)
            return;
        order.push_back(key);
        if (order.size() > cap) {
            counts.erase(order.front());
            order.pop_front();
        }
    }
};

// What an estimate depends on besides the archives: the text and the geo range.
std::string estimate_key(const zs_query *q) {
    std::string key(q->text, q->len);
    if (q->geo) {
        float geo[3] = {q->latitude, q->longitude, q->distance};
        key.push_back('\0');
        key.append(reinterpret_cast<const char *>(geo), sizeof geo);
    }
    return key;
}

std::atomic<uint64_t> g_estimate_runs{0};

}  // namespace

struct zs_searcher {
    zs_search_kind kind;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<ArchiveCopy> archives;
    uint64_t gen = 0;
    std::vector<std::unique_ptr<Slot>> slots;
    std::vector<Slot *> idle;
    size_t cap;
    // A suggestion searcher's title listing, found at its first type-ahead.
    bool listing_found = false;
    TitleListing listing;
    EstimateCache estimates;
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
            std::vector<ArchiveCopy> archives = s->archives;
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
        try {
            // Results read titles and snippets from the archives.
            for (const ArchiveCopy &c : slot_->archives)
                check_file(c.file);
        } catch (...) {
            give_back();
            throw;
        }
    }
    ~Lease() { give_back(); }
    // The searcher's generation this lease's searchers were built for.
    uint64_t gen() const { return slot_->gen; }
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

    // The language the query is parsed in: the first archive's with a
    // full-text index, as in libzim's Searcher.
    zsnip::IndexLanguage index_language() const {
        for (const ArchiveCopy &c : slot_->archives)
            if (c.a.hasFulltextIndex())
                return zsnip::index_language(c.a);
        return zsnip::IndexLanguage{};
    }

    const OpenFile *file_of(int archive) const {
        return archive < 0 ? nullptr : slot_->archives[(size_t)archive].file.get();
    }

    // Which archive a result came from: libzim numbers only the archives
    // that have an index, so results are matched back by UUID.
    int archive_of(const zim::SearchIterator &it) const {
        const auto &ids = slot_->indexed_ids;
        if (ids.size() == 1)
            return 0;
        const zim::Uuid id = it.getZimId();
        for (size_t i = 0; i < ids.size(); i++)
            if (ids[i] == id)
                return (int)i;
        return -1;
    }

    // getPath() without its per-hit cost: libzim reads the index's "data"
    // metadata for every hit to decide whether to strip the namespace from
    // the stored path.  That answer is fixed for a searcher, so the first
    // hit from a new-scheme archive learns it by comparing the two.
    std::string path_of(const zim::SearchIterator &it, int archive) {
        Slot &sl = *slot_;
        if (archive < 0)
            return it.getPath();
        std::string data = it.getDbData();
        if (!sl.new_scheme[(size_t)archive])
            return data;
        if (sl.strips < 0) {
            std::string path = it.getPath();
            sl.strips = path.size() != data.size();
            return path;
        }
        if (!sl.strips)
            return data;
        if (data.size() < 2)
            return data.substr(2);  // throws out_of_range, as libzim's getPath does
        data.erase(0, 2);
        return data;
    }

    // getTitle() looks the stored path up as given: for namespaced data
    // ("C/foo") that is one binary search over the dirents that misses and a
    // second after parsing.  The entry at the result's path is the same one
    // (unless an article's own path starts with "C/") for one search; if it
    // is not found, libzim's way decides.
    std::string title_of(const zim::SearchIterator &it, int archive, const std::string &path) {
        if (archive >= 0) {
            try {
                return slot_->archives[(size_t)archive].a.getEntryByPath(path).getTitle();
            } catch (const zim::EntryNotFound &) {
            }
        }
        return it.getTitle();
    }

  private:
    void rebuild(const std::vector<ArchiveCopy> &sources) {
        Slot &sl = *slot_;
        sl.ft_search.reset();
        sl.sg_search.reset();
        sl.cached_id = 0;
        std::vector<ArchiveCopy> copies;
        std::vector<zim::Archive> archives;
        std::vector<zim::Uuid> ids;
        std::vector<char> new_scheme;
        for (const ArchiveCopy &src : sources) {
            copies.push_back(sl.own_files ? copy_archive(src.file, src.a) : src);
            const zim::Archive &a = copies.back().a;
            archives.push_back(a);
            ids.push_back(a.hasFulltextIndex() ? a.getUuid() : zim::Uuid());
            new_scheme.push_back(a.hasNewNamespaceScheme());
        }
        if (s_->kind == ZS_FULLTEXT) {
            sl.ft.reset(new zim::Searcher(archives));
        } else {
            sl.sg.reset(new zim::SuggestionSearcher(archives.at(0)));
        }
        sl.archives = std::move(copies);
        sl.indexed_ids = std::move(ids);
        sl.new_scheme = std::move(new_scheme);
        sl.strips = -1;
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
    std::string path, title, snippet, text;
    bool has_text = false;
    int score = 0, word_count = 0, archive = -1;
};

// A hit's article text (ZS_WANT_TEXT); false when it has none or cannot be
// read, as a snippet is "" then.
bool hit_text(const zim::Entry &entry, const zs_impl::OpenFile *file, bool main_only,
              size_t max_chars, std::string *out) {
    try {
        const zim::Item item = entry.getItem(true);
        const std::string mime = item.getMimetype();
        const int kind = zsnip::text_kind(mime.data(), mime.size());
        if (!kind)
            return false;
        zim::Blob blob;
        if (!file || !compressed_item_data(*file, item, &blob))
            blob = item.getData();
        *out = kind == ZS_TEXT_HTML ? zsnip::html_text(blob.data(), blob.size(), main_only, max_chars)
                                    : zsnip::plain_text(blob.data(), blob.size(), max_chars);
        return true;
    } catch (const std::bad_alloc &) {
        throw;
    } catch (const std::exception &) {
        return false;
    }
}

struct PageImpl {
    zs_page page;  // page.priv points back here: one allocation for both
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
        o.text = {r.text.data(), r.text.size()};
        o.has_text = r.has_text;
        o.score = r.score;
        o.word_count = r.word_count;
        o.archive = r.archive;
    }
    zs_page *p = &impl->page;
    p->results = impl->results.data();
    p->n = impl->results.size();
    p->priv = impl.release();
    return p;
}

size_t default_cap() {
    // Searches are CPU-bound: more native searchers than cores buys only
    // memory (each extra one has its own copy of the archives' caches, up to
    // 16 decompressed clusters each); threads beyond it wait without the GIL.
    unsigned hw = std::thread::hardware_concurrency();
    return std::max<size_t>(2, hw);
}

// What a type-ahead reads: the suggestion searcher's archive and file (no
// pooled searcher is needed, and both are safe to share) and its listing.
struct TitleSource {
    ArchiveCopy archive;
    TitleListing listing;
    int64_t count(const std::string &prefix) const {
        return title_prefix_count(archive.a, archive.file.get(), listing, prefix);
    }
};

TitleSource title_source(zs_searcher *s) {
    std::lock_guard<std::mutex> lk(s->mu);
    TitleSource t{s->archives.at(0), {}};
    if (!s->listing_found && t.archive.file) {
        s->listing = find_title_listing(*t.archive.file);
        s->listing_found = true;
    }
    t.listing = s->listing;
    return t;
}

// Whether q's suggestions come from the title listing (zs_suggest_mode).
bool from_titles(zs_searcher *s, const zs_query *q) {
    if (s->kind != ZS_SUGGEST || q->suggest_mode == ZS_SUGGEST_INDEX)
        return false;
    return q->suggest_mode == ZS_SUGGEST_TITLES ||
           title_source(s).count(std::string(q->text, q->len)) >= ZS_SUGGEST_AUTO_TITLES;
}

void title_page(zs_searcher *s, const zs_query *q, int start, int count, std::vector<Row> *rows) {
    const TitleSource t = title_source(s);
    std::vector<TitlePrefixRow> found;
    title_prefix_page(t.archive.a, t.archive.file.get(), t.listing, std::string(q->text, q->len), start,
                      count, &found);
    for (TitlePrefixRow &f : found) {
        Row r;
        r.path = std::move(f.path);
        r.title = std::move(f.title);
        r.snippet = std::move(f.snippet);
        r.archive = 0;
        rows->push_back(std::move(r));
    }
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
        env = std::getenv("LIBZIM_C_ESTIMATE_CACHE");
        if (env && std::atoi(env) >= 0)
            s->estimates.cap = (size_t)std::atoi(env);
        for (size_t i = 0; i < n; i++) {
            check_index_entries(archives[i]->a, true, archives[i]->file.get());
            s->archives.push_back(ArchiveCopy{archives[i]->file, archives[i]->a});
        }
        return s.release();
    });
}

extern "C" int zs_searcher_add_archive(zs_searcher *s, zs_archive *a, zs_error *err) {
    return guarded(err, -1, [&] {
        if (s->kind != ZS_FULLTEXT)
            throw std::invalid_argument("only full-text searchers take more archives");
        check_index_entries(a->a, true, a->file.get());
        std::lock_guard<std::mutex> lk(s->mu);
        s->archives.push_back(ArchiveCopy{a->file, a->a});
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
                                  [](const ArchiveCopy &src) { return src.a.hasFulltextIndex(); });
            }
            if (!any) {
                set_error(err, ZS_ERR_NO_INDEX, "no full-text index");
                return -1;
            }
        }
        // Opening the database now makes the first search as fast as later
        // ones and reports a broken index at construction.
        Lease lease(s);
        zs_query q{"", 0, 0, 0, 0, 0, 0, ZS_SUGGEST_INDEX};
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
                                   unsigned flags, size_t text_max_chars, zs_error *err) {
    return guarded(err, (zs_page *)nullptr, [&]() -> zs_page * {
        if (start < 0 || count < 0)
            throw std::invalid_argument("start and count must not be negative");
        std::unique_ptr<PageImpl> impl(new PageImpl);
        if (from_titles(s, q)) {
            title_page(s, q, start, count, &impl->rows);
            return finish_page(std::move(impl));
        }
        Lease lease(s);
        if (s->kind == ZS_FULLTEXT) {
            zim::Search &search = lease.search(q);
            auto results = search.getResults(start, count);
            impl->rows.reserve(results.size() > 0 ? (size_t)results.size() : 0);
            std::unique_ptr<zsnip::Snippeter> own;
            if ((flags & ZS_WANT_SNIPPET) && !(flags & ZS_LIBZIM_SNIPPET))
                own.reset(new zsnip::Snippeter(std::string(q->text, q->len),
                                               lease.index_language()));
            const auto end = results.end();  // each end() allocates an iterator
            for (auto it = results.begin(); it != end; ++it) {
                Row r;
                r.archive = lease.archive_of(it);
                r.path = lease.path_of(it, r.archive);
                if (flags & ZS_WANT_TITLE) {
                    // getSnippet() reads the entry getTitle() caches: share it.
                    r.title = (flags & ZS_WANT_SNIPPET) ? it.getTitle()
                                                        : lease.title_of(it, r.archive, r.path);
                    r.score = it.getScore();
                }
                if (flags & ZS_WANT_SNIPPET) {
                    r.snippet = own ? own->of_entry(*it, lease.file_of(r.archive)) : it.getSnippet();
                    // A separate value read per hit (~2 us, measured): it
                    // would make a snippet-less page 40% slower, while next
                    // to a snippet it is free.
                    r.word_count = it.getWordCount();
                } else {
                    r.word_count = -1;
                }
                if (flags & ZS_WANT_TEXT)
                    r.has_text = hit_text(*it, lease.file_of(r.archive), !(flags & ZS_TEXT_ALL),
                                          text_max_chars, &r.text);
                impl->rows.push_back(std::move(r));
            }
        } else {
            zim::SuggestionSearch &search = lease.suggest(q);
            auto results = search.getResults(start, count);
            const auto end = results.end();
            for (auto it = results.begin(); it != end; ++it) {
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
        if (from_titles(s, q)) {
            *out = title_source(s).count(std::string(q->text, q->len));
            return 0;
        }
        const std::string key = estimate_key(q);
        uint64_t gen;
        {
            std::lock_guard<std::mutex> lk(s->mu);
            gen = s->gen;
        }
        // A kept estimate needs no native searcher: it must not wait for one.
        if (s->estimates.find(key, gen, out))
            return 0;
        Lease lease(s);
        g_estimate_runs++;
        if (s->kind == ZS_FULLTEXT)
            *out = lease.search(q).getEstimatedMatches();
        else
            *out = lease.suggest(q).getEstimatedMatches();
        s->estimates.keep(key, lease.gen(), *out);
        return 0;
    });
}

extern "C" uint64_t zs_estimate_runs(void) { return g_estimate_runs.load(); }

extern "C" void zs_page_free(zs_page *p) {
    if (!p)
        return;
    delete static_cast<PageImpl *>(p->priv);  // p is its first member
}
