// The HTML scanner, a template over its sink (the snippet Builder in
// zimshim_snippet.cpp, TextSink in zimshim_text.cpp): one streaming pass that
// keeps only visible text, with the character references it decodes
// (zimshim_snippet_entities.inc) and the element lists it knows.  A header so
// that each sink's file instantiates it and inlines the sink's calls, as when
// the engine was one file; internal linkage, see zimshim_snippet_chars.hpp.
#ifndef ZIMSHIM_SNIPPET_SCANNER_HPP
#define ZIMSHIM_SNIPPET_SCANNER_HPP

#include "zimshim_snippet_chars.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

namespace zsnip {
namespace {

// ---- entities -----------------------------------------------------------------------

struct Entity {
    const char *name;
    uint32_t cp;
    int legacy;  // also recognised without the ';', as HTML5 does
};

// The HTML 4 set plus common HTML5 names, sorted by strcmp; unknown names
// stay as written, as browsers show them.  tools/gen_entities.py writes the
// list, from Python's html.entities.
const Entity kEntities[] = {
#include "zimshim_snippet_entities.inc"
};

// Windows-1252 meanings of &#128;..&#159;, as HTML5 reads them.
const uint16_t kCp1252[32] = {
    0x20AC, 0x81,   0x201A, 0x192,  0x201E, 0x2026, 0x2020, 0x2021, 0x2C6, 0x2030, 0x160,
    0x2039, 0x152,  0x8D,   0x17D,  0x8F,   0x90,   0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x2DC,  0x2122, 0x161,  0x203A, 0x153,  0x9D,   0x17E,  0x178};

[[maybe_unused]] const Entity *find_entity(const char *name, size_t len) {
    size_t lo = 0, hi = sizeof(kEntities) / sizeof(kEntities[0]);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = std::strncmp(kEntities[mid].name, name, len);
        if (c == 0 && kEntities[mid].name[len] != '\0')
            c = 1;
        if (c == 0)
            return &kEntities[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return nullptr;
}

// Byte classes for the HTML scanner's loops.
enum : uint8_t { kAlnum = 1, kNameChar = 2, kSpace = 4, kAttrEnd = 8, kValueEnd = 16 };
struct ByteClasses {
    uint8_t c[256] = {};
    ByteClasses() {
        for (int b = 0; b < 256; b++) {
            bool alnum = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
            bool space = b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f';
            c[b] = (uint8_t)((alnum ? kAlnum : 0) |
                             (alnum || b == '-' || b == ':' || b == '_' ? kNameChar : 0) |
                             (space ? kSpace : 0) |
                             (space || b == '=' || b == '>' || b == '/' ? kAttrEnd : 0) |
                             (space || b == '>' ? kValueEnd : 0));
        }
    }
};
const ByteClasses kBytes;
inline bool byte_is(char b, uint8_t cls) { return kBytes.c[(unsigned char)b] & cls; }

[[maybe_unused]] bool is_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

// p points just after '&'.  Returns the bytes consumed after the '&' (0: not
// an entity, the '&' is literal) and the character in *cp.
[[maybe_unused]] size_t decode_entity(const char *p, const char *end, uint32_t *cp) {
    if (p < end && *p == '#') {
        const char *q = p + 1;
        bool hex = q < end && (*q | 32) == 'x';
        if (hex)
            q++;
        const char *digits = q;
        uint32_t v = 0;
        while (q < end) {
            unsigned char c = *q;
            int d = c >= '0' && c <= '9' ? c - '0'
                    : hex && (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                               : -1;
            if (d < 0)
                break;
            if (v <= 0x10FFFF)
                v = v * (hex ? 16 : 10) + (uint32_t)d;
            q++;
        }
        if (q == digits)
            return 0;
        if (q < end && *q == ';')
            q++;
        if (v >= 0x80 && v < 0xA0)
            v = kCp1252[v - 0x80];
        if (v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            v = 0xFFFD;
        *cp = v;
        return (size_t)(q - p);
    }
    const char *q = p;
    while (q < end && q - p < 32 && is_alnum((unsigned char)*q))
        q++;
    if (q == p)
        return 0;
    const Entity *e = find_entity(p, (size_t)(q - p));
    if (!e)
        return 0;
    bool semi = q < end && *q == ';';
    if (!semi && !e->legacy)
        return 0;
    *cp = e->cp;
    return (size_t)(q - p) + (semi ? 1 : 0);
}

// ---- HTML ----------------------------------------------------------------------------

// Elements whose content is not text (raw text: skipped to their end tag).
const char *const kRawText[] = {"script", "style", "title", "textarea", "xmp", "iframe",
                                "noembed", "noframes", "plaintext", nullptr};
// Boilerplate or invisible elements skipped with all they contain.
const char *const kSkipped[] = {"head", "nav", "header", "footer", "aside", "template",
                                "noscript", "select", "button", "form", "svg", "object",
                                "canvas", "audio", "video", "menu", "dialog", "annotation",
                                "annotation-xml", "datalist", "map", nullptr};
const char *const kVoid[] = {"area", "base", "br", "col", "embed", "hr", "img", "input",
                             "link", "meta", "param", "source", "track", "wbr", "keygen",
                             nullptr};
// Elements inside a line of text: they do not separate words.
const char *const kInline[] = {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del",
                               "dfn", "em", "font", "i", "ins", "kbd", "mark", "q", "s",
                               "samp", "small", "span", "strike", "strong", "sub", "sup",
                               "time", "tt", "u", "var", "wbr", "big", "nobr", nullptr};
// Cells of a table row: separated by a tab in extracted text.
const char *const kCells[] = {"td", "th", nullptr};
const char *const kPreEls[] = {"pre", "listing", nullptr};
// The skipped elements that are navigation rather than invisible: kept with
// main_only=false.
const char *const kNavEls[] = {"nav", "header", "footer", "aside", "menu", nullptr};
const char *const kNavRoles[] = {"navigation", "banner", "contentinfo", "search", "menu",
                                 "menubar", "toolbar", "complementary", nullptr};
// Class and id names of navigation blocks in the generators ZIM files come
// from (Sphinx, DocBook, Read the Docs, MediaWiki).  Not the class "header":
// javadoc puts each page's <h1> in <div class="header"> inside <main> (its
// navigation bar is a <header role="banner">, dropped as an element).
const char *const kNavClasses[] = {
    "sphinxsidebar", "related", "footer", "navheader", "navfooter", "headerlink",
    "navbar", "navbox", "navigation", "nav", "sidebar", "breadcrumb", "breadcrumbs",
    "wy-nav-side", "wy-nav-top", "rst-footer-buttons", "mw-editsection", "mw-jump-link",
    "noprint", "printfooter", "catlinks", "skip-link", "navbox-inner", "vertical-navbox",
    nullptr};
const char *const kNavIds[] = {"footer", "header", "navigation", "sidebar", "mw-navigation",
                               "mw-head", "mw-panel", "jump-to-nav", "catlinks", "toc-sidebar",
                               nullptr};

struct Span {
    const char *p = nullptr;
    size_t n = 0;
};

enum : uint8_t { kRaw = 1, kSkip = 2, kVoidEl = 4, kInlineEl = 8, kCell = 16, kPre = 32,
                 kNavEl = 64 };

// Tag names of up to 8 bytes packed into an integer: one comparison each
// instead of a hash or a memcmp per listed name.
constexpr uint64_t pack(const char *s, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        v |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return v;
}

// An open-addressing table of the listed tag names, keyed by the packed name
// and its length: one multiply and usually one probe per tag.
struct Kinds {
    struct K {
        uint64_t packed = 0;
        size_t n = 0;
        const char *name = nullptr;
        uint8_t kind = 0;
    };
    K slots[256];
    static size_t hash(uint64_t v, size_t n) {
        return (size_t)(((v ^ n) * 0x9E3779B97F4A7C15ull) >> 56);
    }
    K *find(uint64_t v, size_t n, const char *name) {
        for (size_t h = hash(v, n);; h = (h + 1) & 255) {
            K &k = slots[h];
            if (!k.name || (k.packed == v && k.n == n && std::memcmp(k.name, name, n) == 0))
                return &k;
        }
    }
    Kinds() {
        const std::pair<const char *const *, uint8_t> lists[] = {
            {kRawText, kRaw}, {kSkipped, kSkip}, {kVoid, kVoidEl}, {kInline, kInlineEl},
            {kCells, kCell},   {kPreEls, kPre},  {kNavEls, kNavEl}};
        for (const auto &l : lists)
            for (const char *const *n = l.first; *n; n++) {
                size_t len = std::strlen(*n);
                K *k = find(pack(*n, len), len, *n);
                *k = K{pack(*n, len), len, *n, (uint8_t)(k->kind | l.second)};
            }
    }
};
const Kinds kKinds;

[[maybe_unused]] uint8_t tag_kind(const char *name, size_t n) {
    if (n == 0 || n > 15)
        return 0;
    uint64_t v = pack(name, n);
    for (size_t h = Kinds::hash(v, n);; h = (h + 1) & 255) {
        const Kinds::K &k = kKinds.slots[h];
        if (!k.name)
            return 0;
        if (k.packed == v && k.n == n && (n <= 8 || std::memcmp(k.name, name, n) == 0))
            return k.kind;
    }
}

using Words = std::unordered_set<std::string>;

[[maybe_unused]] const Words &word_set(const char *const *list) {
    // One set per list, built on first use (thread-safe static init).
    static const Words roles(kNavRoles, kNavRoles + sizeof(kNavRoles) / sizeof(*kNavRoles) - 1);
    static const Words classes(kNavClasses,
                               kNavClasses + sizeof(kNavClasses) / sizeof(*kNavClasses) - 1);
    static const Words ids(kNavIds, kNavIds + sizeof(kNavIds) / sizeof(*kNavIds) - 1);
    return list == kNavRoles ? roles : list == kNavClasses ? classes : ids;
}

[[maybe_unused]] bool ieq(Span s, const char *lit, size_t n) {
    if (s.n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((s.p[i] | (s.p[i] >= 'A' && s.p[i] <= 'Z' ? 32 : 0)) != lit[i])
            return false;
    return true;
}

// For each first letter, the lengths of the listed words that start with
// it: rules out most class names (Sphinx's "pre", "n", "s1"...) unhashed.
struct Shapes {
    uint32_t by_first[128] = {};
    explicit Shapes(const char *const *list) {
        for (; *list; list++)
            by_first[(unsigned char)**list & 127] |= 1u << (std::strlen(*list) & 31);
    }
    bool maybe(const char *w, size_t n) const {
        unsigned char c = (unsigned char)w[0];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        return c < 128 && n < 32 && (by_first[c] >> n & 1);
    }
};

[[maybe_unused]] const Shapes &shapes(const char *const *list) {
    static const Shapes roles(kNavRoles), classes(kNavClasses), ids(kNavIds);
    return list == kNavRoles ? roles : list == kNavClasses ? classes : ids;
}

// Whether one of the space-separated words of an attribute is in the list.
[[maybe_unused]] bool any_token(Span s, const char *const *list) {
    if (!s.n)
        return false;
    const Words &set = word_set(list);
    const Shapes &shape = shapes(list);
    std::string w;
    size_t i = 0;
    while (i < s.n) {
        while (i < s.n && (s.p[i] == ' ' || s.p[i] == '\t' || s.p[i] == '\n' || s.p[i] == '\r'))
            i++;
        size_t j = i;
        while (j < s.n && s.p[j] != ' ' && s.p[j] != '\t' && s.p[j] != '\n' && s.p[j] != '\r')
            j++;
        if (j > i && shape.maybe(s.p + i, j - i)) {
            w.assign(s.p + i, j - i);
            for (char &c : w)
                if (c >= 'A' && c <= 'Z')
                    c = (char)(c + 32);
            if (set.count(w))
                return true;
        }
        i = j;
    }
    return false;
}

[[maybe_unused]] bool hides(Span style) {
    // "display:none" or "visibility:hidden", whatever the spacing.
    std::string s;
    for (size_t i = 0; i < style.n && s.size() < 512; i++) {
        char c = style.p[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            s.push_back((char)((c >= 'A' && c <= 'Z') ? c + 32 : c));
    }
    return s.find("display:none") != std::string::npos ||
           s.find("visibility:hidden") != std::string::npos;
}

// The HTML scanner, shared by snippets (Builder) and article text (TextSink).
// main_only=false keeps navigation (kNavEls and the navigation classes,
// roles and ids) but still drops what a browser does not show.
template <class Sink>
class Scanner {
  public:
    Scanner(const char *html, size_t len, Sink &out, bool main_only = true)
        : p_(html), end_(html + len), out_(out), main_only_(main_only) {}

    void run() {
        while (p_ < end_ && !out_.done()) {
            const char *lt = (const char *)std::memchr(p_, '<', (size_t)(end_ - p_));
            const char *stop = lt ? lt : end_;
            if (!skip_depth_)
                text(p_, stop);
            p_ = stop;
            if (p_ < end_)
                tag();
        }
    }

  private:
    void text(const char *p, const char *stop) {
        while (p < stop) {
            const char *amp = (const char *)std::memchr(p, '&', (size_t)(stop - p));
            const char *plain = amp ? amp : stop;
            out_.text(p, (size_t)(plain - p));
            p = plain;
            if (p < stop) {
                uint32_t cp;
                size_t n = decode_entity(p + 1, stop, &cp);
                if (n) {
                    out_.put(cp);
                    p += 1 + n;
                } else {
                    out_.put('&');
                    p++;
                }
            }
        }
    }

    static bool name_char(char c) { return byte_is(c, kNameChar); }

    // At '<': a comment, a declaration, an end tag, a start tag or a literal.
    void tag() {
        const char *p = p_ + 1;
        if (p < end_ && *p == '!') {
            if (end_ - p >= 3 && p[1] == '-' && p[2] == '-') {
                const char *c = find(p + 3, "-->");
                p_ = c ? c + 3 : end_;
            } else {
                const char *gt = (const char *)std::memchr(p, '>', (size_t)(end_ - p));
                p_ = gt ? gt + 1 : end_;
            }
            return;
        }
        if (p < end_ && *p == '?') {
            const char *gt = (const char *)std::memchr(p, '>', (size_t)(end_ - p));
            p_ = gt ? gt + 1 : end_;
            return;
        }
        bool closing = p < end_ && *p == '/';
        if (closing)
            p++;
        if (p >= end_ || !((*p | 32) >= 'a' && (*p | 32) <= 'z')) {
            if (closing) {  // "</ ..." is a bogus comment
                const char *gt = (const char *)std::memchr(p, '>', (size_t)(end_ - p));
                p_ = gt ? gt + 1 : end_;
            } else {
                if (!skip_depth_)
                    out_.put('<');
                p_++;
            }
            return;
        }
        char name[24];
        size_t n = 0;
        while (p < end_ && name_char(*p)) {
            if (n < sizeof(name))
                name[n++] = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
            else
                n = sizeof(name) + 1;  // too long to be one we know
            p++;
        }
        if (n > sizeof(name))
            n = 0;
        Attrs at;
        p = attributes(p, &at);
        p_ = p;
        if (closing)
            close(name, n);
        else
            open(name, n, at);
    }

    struct Attrs {
        Span role, cls, id, aria_hidden, style;
        bool hidden = false, self_closing = false;
    };

    // Reads attributes up to the end of the tag; returns what follows it.
    const char *attributes(const char *p, Attrs *at) {
        for (;;) {
            while (p < end_ && (byte_is(*p, kSpace) || *p == '/')) {
                if (*p == '/' && p + 1 < end_ && p[1] == '>')
                    at->self_closing = true;
                p++;
            }
            if (p >= end_)
                return end_;
            if (*p == '>')
                return p + 1;
            const char *an = p;
            while (p < end_ && !byte_is(*p, kAttrEnd))
                p++;
            Span name{an, (size_t)(p - an)};
            if (p == an)
                p++;  // a stray '=': skip it
            while (p < end_ && byte_is(*p, kSpace))
                p++;
            Span value;
            if (p < end_ && *p == '=' && name.n) {
                p++;
                while (p < end_ && byte_is(*p, kSpace))
                    p++;
                if (p < end_ && (*p == '"' || *p == '\'')) {
                    const char *q = (const char *)std::memchr(p + 1, *p, (size_t)(end_ - p - 1));
                    if (!q)
                        return end_;
                    value = Span{p + 1, (size_t)(q - p - 1)};
                    p = q + 1;
                } else {
                    const char *v = p;
                    while (p < end_ && !byte_is(*p, kValueEnd))
                        p++;
                    value = Span{v, (size_t)(p - v)};
                }
            }
            switch (name.n) {
            case 2:
                if (ieq(name, "id", 2))
                    at->id = value;
                break;
            case 4:
                if (ieq(name, "role", 4))
                    at->role = value;
                break;
            case 5:
                if (ieq(name, "class", 5))
                    at->cls = value;
                else if (ieq(name, "style", 5))
                    at->style = value;
                break;
            case 6:
                if (ieq(name, "hidden", 6))
                    at->hidden = true;
                break;
            case 11:
                if (ieq(name, "aria-hidden", 11))
                    at->aria_hidden = value;
                break;
            }
        }
    }

    static bool invisible(const Attrs &at) { return at.hidden || (at.style.n && hides(at.style)); }

    bool boilerplate(const Attrs &at) const {
        return main_only_ && (ieq(at.aria_hidden, "true", 4) || any_token(at.role, kNavRoles) ||
                              any_token(at.cls, kNavClasses) || any_token(at.id, kNavIds));
    }

    void open(const char *name, size_t n, const Attrs &at) {
        if (n == 0)
            return;
        uint8_t kind = tag_kind(name, n);
        bool is_void = (kind & kVoidEl) || at.self_closing;
        if (kind & kRaw) {
            skip_raw(name, n);
            return;
        }
        if (skip_depth_) {
            if (n == 4 && std::memcmp(name, "body", 4) == 0 && skip_n_ == 4 &&
                std::memcmp(skip_, "head", 4) == 0) {
                skip_depth_ = 0;  // a <head> never closed
                out_.brk();
            } else if (!is_void && n == skip_n_ && std::memcmp(name, skip_, n) == 0) {
                skip_depth_++;
            }
            return;
        }
        // Navigation is marked on blocks (and Sphinx's pilcrow links), not on
        // the spans of highlighted code, which are most tags of a page.
        bool maybe_nav = !(kind & kInlineEl) || (n == 1 && name[0] == 'a') ||
                         (Sink::kNavOnSpans && n == 4 && std::memcmp(name, "span", 4) == 0);
        bool skip = (kind & kSkip) && (main_only_ || !(kind & kNavEl));
        if (!is_void && (skip || invisible(at) || (maybe_nav && boilerplate(at)))) {
            std::memcpy(skip_, name, n);
            skip_n_ = n;
            skip_depth_ = 1;
            // A hidden inline element leaves the words around it joined.
            skip_inline_ = (kind & kInlineEl) && !(kind & kSkip);
            if (!skip_inline_)
                out_.brk();
            return;
        }
        if (kind & kCell)
            out_.cell();
        else if (!(kind & kInlineEl))
            out_.brk();
        if ((kind & kPre) && !is_void)
            out_.pre(true);
    }

    void close(const char *name, size_t n) {
        if (skip_depth_) {
            if (n == skip_n_ && std::memcmp(name, skip_, n) == 0 && --skip_depth_ == 0 &&
                !skip_inline_)
                out_.brk();
            return;
        }
        uint8_t kind = n ? tag_kind(name, n) : (uint8_t)kInlineEl;
        if (kind & kPre)
            out_.pre(false);
        if (kind & kCell)
            out_.cell();
        else if (!(kind & kInlineEl))
            out_.brk();
    }

    // After the start tag of a raw text element: skip to its end tag.
    void skip_raw(const char *name, size_t n) {
        const char *p = p_;
        for (;;) {
            const char *lt = (const char *)std::memchr(p, '<', (size_t)(end_ - p));
            if (!lt || end_ - lt < (ptrdiff_t)(n + 2)) {
                p_ = end_;
                return;
            }
            if (lt[1] == '/') {
                size_t i = 0;
                while (i < n && (lt[2 + i] | 32) == name[i])
                    i++;
                const char *after = lt + 2 + n;
                if (i == n && (after >= end_ || !name_char(*after))) {
                    const char *gt = (const char *)std::memchr(after, '>', (size_t)(end_ - after));
                    p_ = gt ? gt + 1 : end_;
                    out_.brk();
                    return;
                }
            }
            p = lt + 1;
        }
    }

    const char *find(const char *p, const char *needle) const {
        size_t nl = std::strlen(needle);
        while (p < end_) {
            const char *c = (const char *)std::memchr(p, needle[0], (size_t)(end_ - p));
            if (!c || (size_t)(end_ - c) < nl)
                return nullptr;
            if (std::memcmp(c, needle, nl) == 0)
                return c;
            p = c + 1;
        }
        return nullptr;
    }

    const char *p_, *end_;
    Sink &out_;
    bool main_only_;
    char skip_[24];
    size_t skip_n_ = 0;
    size_t skip_depth_ = 0;
    bool skip_inline_ = false;
};

}  // namespace
}  // namespace zsnip

#endif
