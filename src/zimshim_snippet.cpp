// libzim-c's snippet engine: the query's terms, the window of an article's
// visible text with the most distinct of them, formatted as libzim's snippets
// are formatted (Builder, a sink of the HTML scanner in
// zimshim_snippet_scanner.hpp), and the index language it needs.
// Why not libzim's getSnippet(): it parses the whole article into a string,
// then Xapian's MSet::snippet() stems every word of it (about 2 ms a hit),
// keeps navigation text, and misses every word that differs from its stem
// (it looks for "Z"-prefixed stems, which libzim's STEM_ALL index lacks).
#include "zimshim_snippet.hpp"
#include "zimshim_impl.hpp"
#include "zimshim_snippet_scanner.hpp"

#include <zim/archive.h>
#include <zim/entry.h>
#include <zim/error.h>
#include <zim/item.h>
#include <xapian.h>

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace zsnip {
namespace {

// ---- the query ---------------------------------------------------------------------

// Languages whose Snowball stemmers only rewrite the end of a word, so a
// word can match a stemmed term only if their first characters agree.
bool suffix_stemmer(const std::string &lang) {
    static const char *const names[] = {"ca", "da", "de", "en", "es", "fi", "fr", "hu", "it",
                                        "nb", "nl", "nn", "no", "pt", "ro", "ru", "sv", "tr"};
    for (const char *n : names)
        if (lang == n)
            return true;
    return false;
}

const unsigned kMaxTermBytes = 64;  // Xapian's TermGenerator skips longer words

}  // namespace

struct Snippeter::Impl {
    std::vector<std::string> terms;
    std::unordered_map<std::string, int> term_index;
    std::vector<uint32_t> first_chars;  // of the terms, sorted
    bool ascii_candidates[0x80] = {};   // candidate() for ASCII, precomputed
    Xapian::Stem stem;
    bool stemming = false, prefilter = false;
    std::unordered_map<std::string, int> memo;  // word -> term or -1

    Impl(const std::string &query, const IndexLanguage &lang) {
        std::string iso;
        if (!lang.language.empty()) {
            icu::Locale loc(lang.language.c_str());
            iso = loc.getLanguage();
            try {
                stem = Xapian::Stem(iso);
                stemming = !stem.is_none();
            } catch (const Xapian::Error &) {
            }
        }
        prefilter = !stemming || suffix_stemmer(iso);
        parse(query, lang.stopwords);
    }

    // Terms as libzim 8.1.1's query parser makes them (default AND, STEM_ALL,
    // the index's stop words, FLAG_DEFAULT), from the query without accents
    // as the indexer stored the text.
    void parse(const std::string &query, const std::string &stopwords) {
        Xapian::QueryParser qp;
        qp.set_default_op(Xapian::Query::OP_AND);
        if (stemming) {
            qp.set_stemmer(stem);
            qp.set_stemming_strategy(Xapian::QueryParser::STEM_ALL);
        }
        Xapian::SimpleStopper stopper;
        if (!stopwords.empty()) {
            size_t start = 0;
            while (start <= stopwords.size()) {
                size_t nl = stopwords.find('\n', start);
                if (nl == std::string::npos)
                    nl = stopwords.size();
                if (nl > start)
                    stopper.add(stopwords.substr(start, nl - start));
                start = nl + 1;
            }
            qp.set_stopper(&stopper);
        }
        std::string text = strip_marks(query, false);
        Xapian::Query q;
        try {
            q = qp.parse_query(text, Xapian::QueryParser::FLAG_DEFAULT);
        } catch (const Xapian::QueryParserError &) {
            try {
                q = qp.parse_query(text, 0);
            } catch (const Xapian::QueryParserError &) {
                return;  // no terms: the snippet is the start of the text
            }
        }
        for (auto t = q.get_unique_terms_begin(); t != q.get_unique_terms_end(); ++t) {
            const std::string &term = *t;
            if (term.empty() || term_index.count(term))
                continue;
            term_index.emplace(term, (int)terms.size());
            terms.push_back(term);
            size_t next;
            first_chars.push_back(fold_first(cp_at(term, 0, &next)));
        }
        std::sort(first_chars.begin(), first_chars.end());
        for (uint32_t c = 0; c < 0x80; c++)
            ascii_candidates[c] =
                !terms.empty() &&
                (!prefilter ||
                 std::binary_search(first_chars.begin(), first_chars.end(), fold_first(c)));
    }

    // Whether a word starting with this character may match a term.
    bool candidate(uint32_t first) const {
        if (first < 0x80)
            return ascii_candidates[first];
        if (terms.empty())
            return false;
        return !prefilter ||
               std::binary_search(first_chars.begin(), first_chars.end(), fold_first(first));
    }

    // Which term a word of the text (lowercased as Xapian does) matches, -1
    // if none.  Only words that pass the first-character test are
    // normalised and stemmed, and each distinct one once.
    int match(const std::string &word, uint32_t first) {
        if (!candidate(first))
            return -1;
        auto m = memo.find(word);
        if (m != memo.end())
            return m->second;
        std::string key = all_ascii(word) ? word : strip_marks(word, true);
        int r = -1;
        auto it = term_index.find(key);
        if (it != term_index.end()) {
            r = it->second;
        } else if (stemming) {
            it = term_index.find(stem(key));
            if (it != term_index.end())
                r = it->second;
        }
        if (memo.size() > 20000)
            memo.clear();
        memo.emplace(word, r);
        return r;
    }
};

namespace {

// ---- words and the best window -------------------------------------------------------------

struct Match {
    size_t start, end;  // absolute offsets in the visible text
    int term;
};

// With record set, a Builder only collects the visible text as its buffer
// holds it (chunks between spaces, one ' ' between them, nothing before the
// first or after the last), to be kept and replayed later (replay()) into a
// Builder that scores it: the same code lays out the text both ways.
class Builder {
  public:
    Builder(Snippeter::Impl &q, size_t length, bool record = false)
        : q_(q), len_(length), record_(record) {
        counts_.assign(q.terms.size(), 0);
    }

    bool done() const { return done_; }

    // A recorded text (take_text()), as if its events came again: a chunk's
    // bytes are appended as text() appends an ASCII run, each ' ' is the
    // space that separated them. Stops once the snippet is settled, where
    // the scanner would stop (what comes after cannot change it).
    void replay(const std::string &t) {
        const char *p = t.data(), *e = p + t.size();
        while (p < e && !done_) {
            const char *sp = (const char *)std::memchr(p, ' ', (size_t)(e - p));
            const char *stop = sp ? sp : e;
            before_char();
            buf_.append(p, (size_t)(stop - p));
            if (sp)
                space_ = true;
            p = sp ? sp + 1 : e;
        }
    }

    // A recording Builder's text.
    std::string take_text() { return std::move(buf_); }

    // Visible text as it comes, in any amount; whitespace runs collapse.
    void text(const char *p, size_t n) {
        const unsigned char *s = (const unsigned char *)p, *e = s + n;
        while (s < e) {
            unsigned char c = *s;
            if (c >= 0x80) {
                put(decode(s, e));
            } else if (c <= ' ' || c == 0x7F) {
                space_ = true;
                s++;
            } else {
                const unsigned char *r = s + 1;
                while (r < e && *r > ' ' && *r < 0x7F)
                    r++;
                before_char();
                buf_.append((const char *)s, (size_t)(r - s));
                s = r;
            }
        }
    }

    void put(uint32_t cp) {
        if (is_space(cp) || is_control(cp)) {
            space_ = true;
            return;
        }
        if (cp < 0x80) {
            put_ascii((char)cp);
            return;
        }
        before_char();
        Xapian::Unicode::append_utf8(buf_, cp);
    }

    // An element boundary that separates words.
    void brk() { space_ = true; }
    // A table cell's boundary and <pre>'s bounds: only text extraction
    // (TextSink) treats them apart.
    void cell() { space_ = true; }
    void pre(bool) {}
    // Navigation classes are looked for on blocks and links only: code
    // highlighting makes most tags spans with classes, and a snippet costs
    // little enough that checking them all shows.
    static constexpr bool kNavOnSpans = false;

    std::string finish() {
        end_chunk();
        ended_ = true;
        if (!have_head_)
            take_head();
        if (pending_)
            snapshot();
        if (best_distinct_ == 0)
            return head_;
        return result_;
    }

  private:
    void put_ascii(char c) {
        if (space_)
            before_char();
        buf_.push_back(c);
    }

    void before_char() {
        if (!space_)
            return;
        space_ = false;
        if (buf_.empty())
            return;
        end_chunk();
        buf_.push_back(' ');
        chunk_ = buf_.size();
    }

    size_t text_end() const { return base_ + buf_.size(); }

    // A run of text between spaces is complete: find its words.
    void end_chunk() {
        if (record_) {
            chunk_ = buf_.size();
            return;
        }
        if (chunk_ < buf_.size())
            tokenize(chunk_, buf_.size());
        chunk_ = buf_.size();
        after_chunk();
    }

    void after_chunk() {
        if (!have_head_ && text_end() > len_)
            take_head();
        if (pending_ && text_end() > need_)
            snapshot();
        if (!pending_ && have_head_ &&
            (q_.terms.empty() || best_distinct_ == q_.terms.size()))
            done_ = true;
        trim();
    }

    // Keeps memory bounded: only the text a window can still use stays.
    void trim() {
        if (buf_.size() < 8 * len_)
            return;
        size_t keep = text_end() - 3 * len_;
        if (pending_)
            keep = std::min(keep, a_);
        keep = std::min(keep, base_ + chunk_);
        if (keep <= base_)
            return;
        size_t cut = keep - base_;
        buf_.erase(0, cut);
        base_ = keep;
        chunk_ -= cut;
        while (!matches_.empty() && matches_.front().start < base_)
            matches_.pop_front();
    }

    // The snippet when no word matches: the start of the text.
    void take_head() {
        have_head_ = true;
        size_t b = std::min(buf_.size(), len_);
        bool more = b < buf_.size();
        if (more)
            b = snap_back(b, 0);
        head_ = escape(0, b, false);
        if (more)
            head_ += "...";
    }

    // Xapian's TermGenerator word splitting, on [cs, ce) of the buffer:
    // acronyms (U.S.A.), infixes (AT&T, don't, 3.11), suffixes (C++, C#).
    void tokenize(size_t cs, size_t ce) {
        std::string term;
        for (size_t i = cs; i < ce;) {
            size_t nx;
            uint32_t c = cp_fast(buf_, i, &nx);
            if (!wordchar(c)) {
                i = nx;
                continue;
            }
            term.clear();
            size_t end = is_upper(c) ? acronym_end(i, ce, term) : 0;
            if (!end) {
                term.clear();
                // Words that cannot match are walked but not spelled out.
                const bool cand = q_.candidate(c);
                end = word_end(i, ce, cand, term);
                if (!cand) {
                    i = end;
                    continue;
                }
            }
            word(i, end, term, c);
            i = end;
        }
    }

    // "U.S.A." from i: where it ends, or 0 if the word is no acronym.
    size_t acronym_end(size_t i, size_t ce, std::string &term) const {
        size_t p = i, next;
        for (;;) {
            append(term, lower(cp_fast(buf_, p, &next)));
            p = next;
            if (p >= ce || buf_[p] != '.' || ++p >= ce || !is_upper(cp_fast(buf_, p, &next)))
                break;
        }
        if (term.size() > 1 && (p >= ce || !wordchar(cp_fast(buf_, p, &next))))
            return p;
        return 0;
    }

    // Where the word from pos ends: runs of word characters joined by
    // infixes, then up to three '+' or '#'.  Spells it into term if asked.
    size_t word_end(size_t pos, size_t ce, bool spell, std::string &term) const {
        uint32_t prev = 0;
        for (;;) {
            while (pos < ce) {
                unsigned char b = (unsigned char)buf_[pos];
                if (b < 0x80) {
                    if (!kAsciiWord[b])
                        break;
                    if (spell)
                        term.push_back(kAsciiLower[b]);
                    prev = b;
                    pos++;
                } else {
                    size_t pn;
                    uint32_t raw = cp_at(buf_, pos, &pn);
                    if (!wordchar(raw))
                        break;
                    prev = lower(raw);
                    if (spell)
                        append(term, prev);
                    pos = pn;
                }
            }
            if (pos >= ce)
                return pos;
            size_t after, nn;
            uint32_t raw = cp_fast(buf_, pos, &after);
            if (after >= ce)
                break;
            uint32_t next = cp_fast(buf_, after, &nn);
            if (!wordchar(next))
                break;
            uint32_t inf = is_digit(prev) && is_digit(next) ? infix_digit(raw) : infix(raw);
            if (!inf)
                break;
            if (inf != kIgnore && spell)
                append(term, inf);
            pos = after;
        }
        size_t p = pos, pn;
        while (p < ce && p - pos < 4 && (buf_[p] == '+' || buf_[p] == '#'))
            p++;
        if (p > pos && p - pos <= 3 && (p >= ce || !wordchar(cp_fast(buf_, p, &pn)))) {
            if (spell)
                term.append(buf_, pos, p - pos);
            return p;
        }
        return pos;
    }

    void word(size_t start, size_t end, const std::string &term, uint32_t first) {
        if (term.size() > kMaxTermBytes)
            return;
        int t = q_.match(term, first);
        if (t >= 0)
            add_match(Match{base_ + start, base_ + end, t});
    }

    // Slides the window of len_ bytes that ends at each match; the first
    // window to reach a new number of distinct terms is the best so far.
    void add_match(const Match &m) {
        matches_.push_back(m);
        window_.push_back(m);
        if (counts_[m.term]++ == 0)
            distinct_++;
        while (m.end - window_.front().start > len_) {
            if (--counts_[window_.front().term] == 0)
                distinct_--;
            window_.pop_front();
        }
        if (distinct_ > best_distinct_) {
            best_distinct_ = distinct_;
            place(window_.front().start, m.end);
        }
    }

    // Where the snippet of a window [f, l) of matches starts and ends: a
    // little context before, more after, starting at a sentence if one
    // begins close by.
    void place(size_t f, size_t l) {
        first_ = f;
        last_ = l;
        size_t slack = len_ - (l - f);
        size_t a;
        if (f <= slack / 2) {
            a = 0;
        } else {
            a = f - slack / 4;
            size_t lo = std::max(f - slack / 2, base_);
            for (size_t i = f; i >= lo + 2; i--) {
                size_t r = i - base_;
                char c = buf_[r - 2];
                if (buf_[r - 1] == ' ' && (c == '.' || c == '!' || c == '?' || c == ':')) {
                    a = i;
                    break;
                }
            }
        }
        a_ = std::max(a, base_);
        need_ = a_ + len_;
        pending_ = true;
    }

    // The bytes up to b, ending at a word boundary unless that would lose
    // a match.
    size_t snap_back(size_t b, size_t min_b) {
        size_t i = b;
        while (i > min_b && i < buf_.size() && buf_[i] != ' ')
            i--;
        return i > min_b ? i : b;
    }

    void snapshot() {
        pending_ = false;
        size_t a = a_ - base_;
        if (ended_ && text_end() - a_ < len_) {
            // The text ends soon: use the room for context before.
            size_t want = buf_.size() > len_ ? buf_.size() - len_ : 0;
            if (want < a) {
                a = want;
                if (a > 0)
                    while (a < first_ - base_ && buf_[a - 1] != ' ')
                        a++;
            }
        } else if (a > 0 && buf_[a - 1] != ' ') {
            while (a < first_ - base_ && buf_[a - 1] != ' ')
                a++;
        }
        size_t b = std::min(buf_.size(), a + len_);
        bool more = b < buf_.size() || !ended_;
        if (b < buf_.size())
            b = snap_back(b, last_ - base_);
        result_ = (a > 0 || base_ > 0) ? "..." : "";
        result_ += escape(a, b, true);
        if (more)
            result_ += "...";
    }

    std::string escape(size_t a, size_t b, bool highlight) const {
        std::string out;
        out.reserve((b - a) + 64);
        size_t i = a;
        if (highlight) {
            for (const Match &m : matches_) {
                if (m.start < base_ + i)
                    continue;
                if (m.end > base_ + b)
                    break;
                append_escaped(out, i, m.start - base_);
                out += "<b>";
                append_escaped(out, m.start - base_, m.end - base_);
                out += "</b>";
                i = m.end - base_;
            }
        }
        append_escaped(out, i, b);
        return out;
    }

    void append_escaped(std::string &out, size_t a, size_t b) const {
        zs_impl::append_html_escaped(out, buf_.data() + a, b - a);
    }

    Snippeter::Impl &q_;
    size_t len_;
    bool record_;
    std::string buf_;  // visible text from absolute offset base_
    size_t base_ = 0, chunk_ = 0;
    bool space_ = false, done_ = false, ended_ = false;
    bool have_head_ = false;
    std::string head_, result_;
    std::deque<Match> matches_, window_;
    std::vector<int> counts_;
    size_t distinct_ = 0, best_distinct_ = 0;
    bool pending_ = false;
    size_t a_ = 0, need_ = 0, first_ = 0, last_ = 0;
};

}  // namespace

// ---- public ----------------------------------------------------------------------------

Snippeter::Snippeter(const std::string &query, const IndexLanguage &lang)
    : impl_(new Impl(query, lang)) {}

Snippeter::~Snippeter() = default;

const std::vector<std::string> &Snippeter::terms() const { return impl_->terms; }

namespace {

// The scanner's sink for a hit whose text is not cached yet: records the
// whole text for the cache and, until the snippet is settled, builds it.
class Tee {
  public:
    Tee(Builder &record, Builder &snippet) : record_(record), snippet_(snippet) {}
    bool done() const { return false; }
    void text(const char *p, size_t n) {
        record_.text(p, n);
        if (!snippet_.done())
            snippet_.text(p, n);
    }
    void put(uint32_t cp) {
        record_.put(cp);
        if (!snippet_.done())
            snippet_.put(cp);
    }
    void brk() {
        record_.brk();
        snippet_.brk();
    }
    void cell() {
        record_.cell();
        snippet_.cell();
    }
    void pre(bool on) {
        record_.pre(on);
        snippet_.pre(on);
    }
    static constexpr bool kNavOnSpans = Builder::kNavOnSpans;

  private:
    Builder &record_, &snippet_;
};

}  // namespace

std::string Snippeter::make(const char *html, size_t len) {
    // Through the recorded text, as a cached hit is made: the tests of
    // make() (zs_snippet_test) hold the replay to the scanner's output.
    return from_text(*record(html, len));
}

std::shared_ptr<const std::string> Snippeter::record(const char *html, size_t len) {
    Builder r(*impl_, kLength, true);
    Scanner<Builder> s(html, len, r);
    s.run();
    return std::make_shared<const std::string>(r.take_text());
}

std::string Snippeter::from_text(const std::string &text) {
    Builder b(*impl_, kLength);
    b.replay(text);
    return b.finish();
}

std::string Snippeter::of_entry(const zim::Entry &entry, const zs_impl::OpenFile *file) {
    zim::Blob blob;
    TextKey key{};
    bool keyed = false;
    try {
        const zim::Item item = entry.getItem(true);
        if (file && zs_impl::item_text_key(*file, item, &key.file, &key.cluster, &key.blob)) {
            keyed = true;
            if (std::shared_ptr<const std::string> t = text_cache_get(key))
                return from_text(*t);
        }
        if (!file || !zs_impl::compressed_item_data(*file, item, &blob))
            blob = item.getData();
    } catch (const std::bad_alloc &) {
        throw;
    } catch (const std::exception &) {
        return "";
    }
    if (!keyed) {
        Builder b(*impl_, kLength);
        Scanner<Builder> s(blob.data(), blob.size(), b);
        s.run();
        return b.finish();
    }
    // One pass: the text for the cache, and the snippet built as it comes.
    Builder r(*impl_, kLength, true), b(*impl_, kLength);
    Tee tee(r, b);
    Scanner<Tee> s(blob.data(), blob.size(), tee);
    s.run();
    text_cache_put(key, std::make_shared<const std::string>(r.take_text()));
    return b.finish();
}

namespace {

// The full-text index's item, found as libzim 8.1.1 finds it.
std::unique_ptr<zim::Item> fulltext_item(const zim::Archive &a) {
    if (!a.hasFulltextIndex())
        return nullptr;
    const char *const paths[] = {"X/fulltext/xapian", "Z//fulltextIndex/xapian"};
    if (a.hasNewNamespaceScheme()) {
        const uint32_t n = a.getAllEntryCount();
        for (uint32_t i = n; i > 0 && i + 16 > n; i--) {
            zim::Entry e = a.getEntryByPath(i - 1);
            if (e.getPath() == paths[0] && !e.isRedirect())
                return std::unique_ptr<zim::Item>(new zim::Item(e.getItem()));
        }
        return nullptr;
    }
    for (const char *path : paths) {
        try {
            zim::Entry e = a.getEntryByPath(path);
            if (!e.isRedirect())
                return std::unique_ptr<zim::Item>(new zim::Item(e.getItem()));
        } catch (const zim::EntryNotFound &) {
        }
    }
    return nullptr;
}

}  // namespace

IndexLanguage index_language(const zim::Archive &a) {
    static std::mutex mu;
    static std::map<std::string, std::pair<bool, IndexLanguage>> cache;
    std::string key = std::string(a.getUuid()) + a.getFilename() + "/" +
                      std::to_string(a.getFilesize());
    {
        std::lock_guard<std::mutex> lk(mu);
        auto it = cache.find(key);
        if (it != cache.end())
            return it->second.second;
    }
    IndexLanguage r;
    std::unique_ptr<zim::Item> item;
    try {
        item = fulltext_item(a);
    } catch (const std::bad_alloc &) {
        throw;
    } catch (...) {
    }
    bool found = item != nullptr;
    if (found) {
        zs_impl::direct_access where = zs_impl::as_direct_access(item->getDirectAccessInformation());
        int fd = where.first.empty() ? -1 : ::open(where.first.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && ::lseek(fd, (off_t)where.second, SEEK_SET) >= 0) {
            try {
                Xapian::Database db(fd);  // takes the descriptor
                fd = -1;
                r.language = db.get_metadata("language");
                r.stopwords = db.get_metadata("stopwords");
            } catch (const Xapian::Error &) {
            }
        }
        if (fd >= 0)
            ::close(fd);
    }
    if (r.language.empty()) {
        try {
            r.language = a.getMetadata("Language");
        } catch (...) {
        }
    }
    std::lock_guard<std::mutex> lk(mu);
    cache.emplace(key, std::make_pair(found, r));
    return r;
}

}  // namespace zsnip

extern "C" int zs_snippet_test(const char *html, size_t len, const char *query, size_t qlen,
                               const char *language, char **out, size_t *outlen,
                               zs_error *err) {
    return zs_impl::guarded(err, -1, [&] {
        zsnip::IndexLanguage lang;
        lang.language = language;
        zsnip::Snippeter s(std::string(query, qlen), lang);
        return give(s.make(html, len), out, outlen);
    });
}
