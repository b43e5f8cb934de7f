// Type-ahead: title suggestions from the title-ordered entry list (zimshim.h,
// ZS_SUGGEST_TITLES and ZS_SUGGEST_AUTO), instead of the Xapian title index.
//
// Why: libzim's suggestion query expands the last word to every indexed term
// it starts, and its weighting (BM25 with k1 = 0.001) scores every title that
// holds one, so a one-letter suggestion costs ~85 ms at 5 million entries, in
// libzim 8.1.1 and 9.8 alike (bench/results/suggest-scale.md). A binary
// search of the title listing (listing/titleOrdered/v1: front articles)
// costs O(log entries) per case variant of the prefix, whatever it matches;
// libzim answers so itself for an archive without a title index. The search
// is the shim's own, with pread and no libzim lock (libzim 8.1.1 serialises
// lookups on an Archive), and counts its probes (zs_title_probes); only an
// archive without that listing (before ZIM 6.1) goes to libzim's findByTitle.
#include "zimshim_impl.hpp"

#include <unicode/uchar.h>
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace zs_impl {

namespace {

// The letter at each word's start (or only the first word's) in title case,
// everything else as typed: "united st" -> "United st" / "United St".
std::string title_first(const icu::UnicodeString &in, bool every_word) {
    icu::UnicodeString out;
    bool word_start = true, done = false;
    for (int32_t i = 0; i < in.length(); i = in.moveIndex32(i, 1)) {
        const UChar32 c = in.char32At(i);
        if (!done && word_start && u_isalpha(c)) {
            out.append((UChar32)u_totitle(c));
            done = !every_word;
        } else {
            out.append(c);
        }
        word_start = u_isUWhiteSpace(c) || c == '(' || c == '-';
    }
    std::string s;
    return out.toUTF8String(s);
}

}  // namespace

// The spellings of prefix whose titles are suggested, most likely first, each
// once: as typed, its first letter capitalised (Wikipedia's titles), every
// word's, the capitalised lower case ("UNITED" -> "United"), all lower, all
// upper. Leading white space is dropped: no title starts with it.
std::vector<std::string> title_variants(const std::string &prefix) {
    const size_t skip = prefix.find_first_not_of(" \t\r\n");
    std::vector<std::string> out;
    if (skip == std::string::npos)
        return out;
    const std::string typed = prefix.substr(skip);
    const icu::UnicodeString u = icu::UnicodeString::fromUTF8(typed);
    icu::UnicodeString lower(u), upper(u);
    lower.toLower(icu::Locale::getRoot());
    upper.toUpper(icu::Locale::getRoot());
    std::string l, up;
    lower.toUTF8String(l);
    upper.toUTF8String(up);
    for (std::string v : {typed, title_first(u, false), title_first(u, true), title_first(lower, false),
                          l, up})
        if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end())
            out.push_back(v);
    return out;
}

namespace {

std::atomic<uint64_t> g_probes{0};

bool starts_with(const std::string &s, const std::string &prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

[[noreturn]] void bad_listing(const std::string &what) {
    throw zim::ZimFileFormatError("title listing 'listing/titleOrdered/v1': " + what);
}

// [begin, end) of the listing: the titles that start with one prefix.
struct Span {
    uint32_t begin = 0, end = 0;
    int64_t size() const { return (int64_t)end - begin; }
};

// Binary searches of the listing, each probe one id and one dirent, read
// with pread.
class ListingSearch {
  public:
    ListingSearch(const OpenFile &f, const TitleListing &l) : f_(f), l_(l) {
        if (!read_header(f, &h_))
            bad_listing("the header cannot be read");
    }

    Span span(const std::string &prefix) {
        Span s;
        s.begin = partition(0, [&](const std::string &t) { return t < prefix; });
        s.end = partition(s.begin, [&](const std::string &t) { return starts_with(t, prefix); });
        return s;
    }

    // The entry (path order) i-th in title order.
    uint32_t id_at(uint32_t i) const {
        unsigned char b[4];
        f_.read(l_.ids_pos + 4 * (uint64_t)i, b, 4);
        const uint32_t id = (uint32_t)load_le(b, 4);
        if (id >= h_.entries)
            bad_listing("entry " + std::to_string(id) + " is out of range (the archive has " +
                        std::to_string(h_.entries) + ")");
        return id;
    }

  private:
    std::string title_at(uint32_t i) {
        Dirent d;
        std::string title;
        if (!read_dirent(f_, h_, id_at(i), &d, &title))
            bad_listing("the dirent of entry " + std::to_string(id_at(i)) + " cannot be read");
        g_probes.fetch_add(1, std::memory_order_relaxed);
        return title;
    }

    // The first i >= lo for which below(title i) is false (below is true for
    // a leading part of [lo, count): the listing is sorted by title).
    template <class F> uint32_t partition(uint32_t lo, F below) {
        uint32_t hi = l_.count;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            if (below(title_at(mid)))
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo;
    }

    const OpenFile &f_;
    const TitleListing &l_;
    Header h_;
};

// As Xapian's snippet of a title suggestion: HTML, the matched part in <b>.
std::string prefix_snippet(const std::string &title, size_t matched) {
    const size_t m = std::min(matched, title.size());
    std::string out = "<b>";
    append_html_escaped(out, title.data(), m);
    out += "</b>";
    append_html_escaped(out, title.data() + m, title.size() - m);
    return out;
}

TitlePrefixRow row_of(const zim::Entry &e, size_t matched) {
    TitlePrefixRow r;
    r.path = e.getPath();
    r.title = e.getTitle();
    r.snippet = prefix_snippet(r.title, matched);
    return r;
}

// Without the listing: libzim's findByTitle, per variant.
using TitleRange = zim::Archive::EntryRange<zim::EntryOrder::titleOrder>;

TitleRange libzim_range(const zim::Archive &a, const std::string &v) {
    return checked_range(a, a.findByTitle(v));
}

}  // namespace

TitleListing find_title_listing(const OpenFile &f) {
    TitleListing l;
    Header h;
    Dirent d;
    uint64_t blobs = 0;
    std::string defect;
    if (!read_header(f, &h) || !listing_cluster(f, h, "Xlisting/titleOrdered/v1", &d, &blobs, &defect) ||
        !defect.empty() || d.blob >= blobs)
        return l;  // libzim's way, which reports what is wrong
    unsigned char b[8];
    f.read(h.cluster_ptr_pos + 8 * (uint64_t)d.cluster, b, 8);
    const uint64_t pos = load_le(b, 8);
    f.read(pos, b, 1);
    const int width = (b[0] & 0x10) ? 8 : 4;
    unsigned char o[16];
    f.read(pos + 1 + (uint64_t)width * d.blob, o, 2 * (size_t)width);
    const uint64_t from = load_le(o, width), to = load_le(o + width, width);
    if (to < from || (to - from) % 4 || (to - from) / 4 > h.entries || from > f.size ||
        pos + 1 + to > f.size)
        return l;
    l.ok = true;
    l.ids_pos = pos + 1 + from;
    l.count = (uint32_t)((to - from) / 4);
    return l;
}

int64_t title_prefix_count(const zim::Archive &a, const OpenFile *f, const TitleListing &l,
                           const std::string &prefix) {
    int64_t n = 0;
    if (f && l.ok) {
        ListingSearch search(*f, l);
        for (const std::string &v : title_variants(prefix))
            n += search.span(v).size();
    } else {
        for (const std::string &v : title_variants(prefix))
            n += libzim_range(a, v).size();
    }
    return n;
}

// The variants' spans one after another (disjoint: a title starts with one
// spelling of the prefix at most), so a page is an offset into them.
void title_prefix_page(const zim::Archive &a, const OpenFile *f, const TitleListing &l,
                       const std::string &prefix, int start, int count, std::vector<TitlePrefixRow> *rows) {
    int64_t skip = start, want = count;
    std::unique_ptr<ListingSearch> search;  // reads the header once, for every variant
    if (f && l.ok)
        search.reset(new ListingSearch(*f, l));
    for (const std::string &v : title_variants(prefix)) {
        if (want <= 0)
            break;
        if (search) {
            const Span s = search->span(v);
            for (int64_t i = s.begin + skip; i < s.end && want > 0; i++, want--)
                rows->push_back(row_of(a.getEntryByPath((zim::entry_index_type)search->id_at((uint32_t)i)),
                                       v.size()));
            skip = std::max<int64_t>(0, skip - s.size());
        } else {
            const TitleRange r = libzim_range(a, v);
            for (const zim::Entry &e : r.offset((int)std::min<int64_t>(skip, r.size()), (int)want)) {
                rows->push_back(row_of(e, v.size()));
                want--;
            }
            skip = std::max<int64_t>(0, skip - r.size());
        }
    }
}

}  // namespace zs_impl

extern "C" uint64_t zs_title_probes(void) { return zs_impl::g_probes.load(); }
