// libzim-c's snippet engine: one streaming pass over an article's HTML that
// keeps only visible text, finds the window of the text with the most
// distinct query terms, and formats it as libzim's snippets are formatted.
// Why not libzim's getSnippet(): it parses the whole article into a string,
// then Xapian's MSet::snippet() stems every word of it (about 2 ms a hit),
// keeps navigation text, and misses every word that differs from its stem
// (it looks for "Z"-prefixed stems, which libzim's STEM_ALL index lacks).
#include "zimshim_snippet.hpp"
#include "zimshim_impl.hpp"

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

using Xapian::Unicode::get_category;
using Xapian::Unicode::is_wordchar;

// ---- UTF-8 ----------------------------------------------------------------------

// Decodes one code point; an invalid or truncated sequence yields U+FFFD
// and consumes one byte, so any input becomes valid UTF-8.
uint32_t decode(const unsigned char *&p, const unsigned char *end) {
    unsigned c = *p;
    if (c < 0x80) {
        p++;
        return c;
    }
    int n;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 3, cp = c & 0x07, min = 0x10000;
    } else {
        p++;
        return 0xFFFD;
    }
    if (end - p <= n) {
        p++;
        return 0xFFFD;
    }
    for (int i = 1; i <= n; i++) {
        unsigned d = p[i];
        if ((d & 0xC0) != 0x80) {
            p++;
            return 0xFFFD;
        }
        cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        p++;
        return 0xFFFD;
    }
    p += n + 1;
    return cp;
}

// Decodes at a position of text this file wrote (valid UTF-8).
uint32_t cp_at(const std::string &s, size_t pos, size_t *next) {
    const unsigned char *p = (const unsigned char *)s.data() + pos;
    const unsigned char *e = (const unsigned char *)s.data() + s.size();
    uint32_t cp = decode(p, e);
    *next = (size_t)(p - (const unsigned char *)s.data());
    return cp;
}

bool all_ascii(const std::string &s) {
    for (unsigned char c : s)
        if (c >= 0x80)
            return false;
    return true;
}

// ---- normalisation, as libzim's removeAccents ("Lower; NFD; [:M:] remove; NFC") --

std::string strip_marks(const std::string &s, bool lower) {
    UErrorCode st = U_ZERO_ERROR;
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
    if (lower)
        u.toLower(icu::Locale::getRoot());
    const icu::Normalizer2 *nfd = icu::Normalizer2::getNFDInstance(st);
    const icu::Normalizer2 *nfc = icu::Normalizer2::getNFCInstance(st);
    if (U_FAILURE(st))
        return s;
    icu::UnicodeString d = nfd->normalize(u, st), kept;
    for (int32_t i = 0; i < d.length();) {
        UChar32 c = d.char32At(i);
        if (!(U_GET_GC_MASK(c) & U_GC_M_MASK))
            kept.append(c);
        i += U16_LENGTH(c);
    }
    icu::UnicodeString r = nfc->normalize(kept, st);
    if (U_FAILURE(st))
        return s;
    std::string out;
    r.toUTF8String(out);
    return out;
}

// The first character of a word once lowercased and stripped of accents:
// enough to rule out most words before normalising or stemming them.
uint32_t fold_first(uint32_t cp) {
    if (cp < 0x80)
        return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    UErrorCode st = U_ZERO_ERROR;
    const icu::Normalizer2 *nfd = icu::Normalizer2::getNFDInstance(st);
    if (U_FAILURE(st))
        return cp;
    icu::UnicodeString d;
    if (!nfd->getDecomposition((UChar32)cp, d) || d.isEmpty())
        return (uint32_t)u_tolower((UChar32)cp);
    return (uint32_t)u_tolower(d.char32At(0));
}

// ---- entities -----------------------------------------------------------------------

struct Entity {
    const char *name;
    uint32_t cp;
    int legacy;  // also recognised without the ';', as HTML5 does
};

// The HTML 4 set plus common HTML5 names, sorted by strcmp; unknown names
// stay as written, as browsers show them.
const Entity kEntities[] = {
    {"AElig", 0xC6, 1}, {"AMP", 0x26, 1}, {"Aacute", 0xC1, 1}, {"Acirc", 0xC2, 1},
    {"Agrave", 0xC0, 1}, {"Alpha", 0x391, 0}, {"Aring", 0xC5, 1}, {"Atilde", 0xC3, 1},
    {"Auml", 0xC4, 1}, {"Beta", 0x392, 0}, {"COPY", 0xA9, 1}, {"Ccedil", 0xC7, 1},
    {"Chi", 0x3A7, 0}, {"Dagger", 0x2021, 0}, {"Delta", 0x394, 0}, {"ETH", 0xD0, 1},
    {"Eacute", 0xC9, 1}, {"Ecirc", 0xCA, 1}, {"Egrave", 0xC8, 1}, {"Epsilon", 0x395, 0},
    {"Eta", 0x397, 0}, {"Euml", 0xCB, 1}, {"GT", 0x3E, 1}, {"Gamma", 0x393, 0},
    {"Hat", 0x5E, 0}, {"Iacute", 0xCD, 1}, {"Icirc", 0xCE, 1}, {"Igrave", 0xCC, 1},
    {"Iota", 0x399, 0}, {"Iuml", 0xCF, 1}, {"Kappa", 0x39A, 0}, {"LT", 0x3C, 1},
    {"Lambda", 0x39B, 0}, {"Mu", 0x39C, 0}, {"NewLine", 0xA, 0}, {"Ntilde", 0xD1, 1},
    {"Nu", 0x39D, 0}, {"OElig", 0x152, 0}, {"Oacute", 0xD3, 1}, {"Ocirc", 0xD4, 1},
    {"Ograve", 0xD2, 1}, {"Omega", 0x3A9, 0}, {"Omicron", 0x39F, 0}, {"Oslash", 0xD8, 1},
    {"Otilde", 0xD5, 1}, {"Ouml", 0xD6, 1}, {"Phi", 0x3A6, 0}, {"Pi", 0x3A0, 0},
    {"Prime", 0x2033, 0}, {"Psi", 0x3A8, 0}, {"QUOT", 0x22, 1}, {"REG", 0xAE, 1},
    {"Rho", 0x3A1, 0}, {"Scaron", 0x160, 0}, {"Sigma", 0x3A3, 0}, {"THORN", 0xDE, 1},
    {"Tab", 0x9, 0}, {"Tau", 0x3A4, 0}, {"Theta", 0x398, 0}, {"Uacute", 0xDA, 1},
    {"Ucirc", 0xDB, 1}, {"Ugrave", 0xD9, 1}, {"Upsilon", 0x3A5, 0}, {"Uuml", 0xDC, 1},
    {"Xi", 0x39E, 0}, {"Yacute", 0xDD, 1}, {"Yuml", 0x178, 0}, {"Zeta", 0x396, 0},
    {"aacute", 0xE1, 1}, {"acirc", 0xE2, 1}, {"acute", 0xB4, 1}, {"aelig", 0xE6, 1},
    {"agrave", 0xE0, 1}, {"alefsym", 0x2135, 0}, {"alpha", 0x3B1, 0}, {"amp", 0x26, 1},
    {"and", 0x2227, 0}, {"apos", 0x27, 0}, {"aring", 0xE5, 1}, {"ast", 0x2A, 0},
    {"asymp", 0x2248, 0}, {"atilde", 0xE3, 1}, {"auml", 0xE4, 1}, {"bdquo", 0x201E, 0},
    {"beta", 0x3B2, 0}, {"brvbar", 0xA6, 1}, {"bull", 0x2022, 0}, {"cap", 0x2229, 0},
    {"ccedil", 0xE7, 1}, {"cedil", 0xB8, 1}, {"cent", 0xA2, 1}, {"check", 0x2713, 0},
    {"chi", 0x3C7, 0}, {"circ", 0x2C6, 0}, {"clubs", 0x2663, 0}, {"colon", 0x3A, 0},
    {"comma", 0x2C, 0}, {"commat", 0x40, 0}, {"cong", 0x2245, 0}, {"copy", 0xA9, 1},
    {"crarr", 0x21B5, 0}, {"cross", 0x2717, 0}, {"cup", 0x222A, 0}, {"curren", 0xA4, 1},
    {"dArr", 0x21D3, 0}, {"dagger", 0x2020, 0}, {"darr", 0x2193, 0}, {"deg", 0xB0, 1},
    {"delta", 0x3B4, 0}, {"diams", 0x2666, 0}, {"divide", 0xF7, 1}, {"dollar", 0x24, 0},
    {"eacute", 0xE9, 1}, {"ecirc", 0xEA, 1}, {"egrave", 0xE8, 1}, {"empty", 0x2205, 0},
    {"emsp", 0x2003, 0}, {"ensp", 0x2002, 0}, {"epsilon", 0x3B5, 0}, {"equals", 0x3D, 0},
    {"equiv", 0x2261, 0}, {"eta", 0x3B7, 0}, {"eth", 0xF0, 1}, {"euml", 0xEB, 1},
    {"euro", 0x20AC, 0}, {"excl", 0x21, 0}, {"exist", 0x2203, 0}, {"fnof", 0x192, 0},
    {"forall", 0x2200, 0}, {"frac12", 0xBD, 1}, {"frac14", 0xBC, 1}, {"frac34", 0xBE, 1},
    {"frasl", 0x2044, 0}, {"gamma", 0x3B3, 0}, {"ge", 0x2265, 0}, {"grave", 0x60, 0},
    {"gt", 0x3E, 1}, {"hArr", 0x21D4, 0}, {"harr", 0x2194, 0}, {"hearts", 0x2665, 0},
    {"hellip", 0x2026, 0}, {"iacute", 0xED, 1}, {"icirc", 0xEE, 1}, {"iexcl", 0xA1, 1},
    {"igrave", 0xEC, 1}, {"image", 0x2111, 0}, {"infin", 0x221E, 0}, {"int", 0x222B, 0},
    {"iota", 0x3B9, 0}, {"iquest", 0xBF, 1}, {"isin", 0x2208, 0}, {"iuml", 0xEF, 1},
    {"kappa", 0x3BA, 0}, {"lArr", 0x21D0, 0}, {"lambda", 0x3BB, 0}, {"lang", 0x27E8, 0},
    {"laquo", 0xAB, 1}, {"larr", 0x2190, 0}, {"lceil", 0x2308, 0}, {"lcub", 0x7B, 0},
    {"ldquo", 0x201C, 0}, {"le", 0x2264, 0}, {"leftarrow", 0x2190, 0},
    {"lfloor", 0x230A, 0}, {"lowbar", 0x5F, 0}, {"loz", 0x25CA, 0}, {"lpar", 0x28, 0},
    {"lrm", 0x200E, 0}, {"lsaquo", 0x2039, 0}, {"lsqb", 0x5B, 0}, {"lsquo", 0x2018, 0},
    {"lt", 0x3C, 1}, {"macr", 0xAF, 1}, {"mdash", 0x2014, 0}, {"micro", 0xB5, 1},
    {"middot", 0xB7, 1}, {"minus", 0x2212, 0}, {"mu", 0x3BC, 0}, {"nabla", 0x2207, 0},
    {"nbsp", 0xA0, 1}, {"ndash", 0x2013, 0}, {"ne", 0x2260, 0}, {"ni", 0x220B, 0},
    {"not", 0xAC, 1}, {"notin", 0x2209, 0}, {"nsub", 0x2284, 0}, {"ntilde", 0xF1, 1},
    {"nu", 0x3BD, 0}, {"num", 0x23, 0}, {"oacute", 0xF3, 1}, {"ocirc", 0xF4, 1},
    {"oelig", 0x153, 0}, {"ograve", 0xF2, 1}, {"oline", 0x203E, 0}, {"omega", 0x3C9, 0},
    {"omicron", 0x3BF, 0}, {"oplus", 0x2295, 0}, {"or", 0x2228, 0}, {"ordf", 0xAA, 1},
    {"ordm", 0xBA, 1}, {"oslash", 0xF8, 1}, {"otilde", 0xF5, 1}, {"otimes", 0x2297, 0},
    {"ouml", 0xF6, 1}, {"para", 0xB6, 1}, {"part", 0x2202, 0}, {"percnt", 0x25, 0},
    {"period", 0x2E, 0}, {"permil", 0x2030, 0}, {"perp", 0x22A5, 0}, {"phi", 0x3C6, 0},
    {"pi", 0x3C0, 0}, {"piv", 0x3D6, 0}, {"plus", 0x2B, 0}, {"plusmn", 0xB1, 1},
    {"pound", 0xA3, 1}, {"prime", 0x2032, 0}, {"prod", 0x220F, 0}, {"psi", 0x3C8, 0},
    {"quest", 0x3F, 0}, {"quot", 0x22, 1}, {"rArr", 0x21D2, 0}, {"radic", 0x221A, 0},
    {"rang", 0x27E9, 0}, {"raquo", 0xBB, 1}, {"rarr", 0x2192, 0}, {"rceil", 0x2309, 0},
    {"rcub", 0x7D, 0}, {"rdquo", 0x201D, 0}, {"real", 0x211C, 0}, {"reg", 0xAE, 1},
    {"rfloor", 0x230B, 0}, {"rho", 0x3C1, 0}, {"rightarrow", 0x2192, 0}, {"rlm", 0x200F, 0},
    {"rpar", 0x29, 0}, {"rsaquo", 0x203A, 0}, {"rsqb", 0x5D, 0}, {"rsquo", 0x2019, 0},
    {"sbquo", 0x201A, 0}, {"scaron", 0x161, 0}, {"sdot", 0x22C5, 0}, {"sect", 0xA7, 1},
    {"semi", 0x3B, 0}, {"shy", 0xAD, 1}, {"sigma", 0x3C3, 0}, {"sigmaf", 0x3C2, 0},
    {"sim", 0x223C, 0}, {"sol", 0x2F, 0}, {"spades", 0x2660, 0}, {"star", 0x2606, 0},
    {"starf", 0x2605, 0}, {"sub", 0x2282, 0}, {"sube", 0x2286, 0}, {"sum", 0x2211, 0},
    {"sup", 0x2283, 0}, {"sup1", 0xB9, 1}, {"sup2", 0xB2, 1}, {"sup3", 0xB3, 1},
    {"supe", 0x2287, 0}, {"szlig", 0xDF, 1}, {"tau", 0x3C4, 0}, {"there4", 0x2234, 0},
    {"theta", 0x3B8, 0}, {"thetasym", 0x3D1, 0}, {"thinsp", 0x2009, 0}, {"thorn", 0xFE, 1},
    {"tilde", 0x2DC, 0}, {"times", 0xD7, 1}, {"trade", 0x2122, 0}, {"uArr", 0x21D1, 0},
    {"uacute", 0xFA, 1}, {"uarr", 0x2191, 0}, {"ucirc", 0xFB, 1}, {"ugrave", 0xF9, 1},
    {"uml", 0xA8, 1}, {"upsih", 0x3D2, 0}, {"upsilon", 0x3C5, 0}, {"uuml", 0xFC, 1},
    {"verbar", 0x7C, 0}, {"vert", 0x7C, 0}, {"weierp", 0x2118, 0}, {"xi", 0x3BE, 0},
    {"yacute", 0xFD, 1}, {"yen", 0xA5, 1}, {"yuml", 0xFF, 1}, {"zeta", 0x3B6, 0},
    {"zwj", 0x200D, 0}, {"zwnj", 0x200C, 0},
};

// Windows-1252 meanings of &#128;..&#159;, as HTML5 reads them.
const uint16_t kCp1252[32] = {
    0x20AC, 0x81,   0x201A, 0x192,  0x201E, 0x2026, 0x2020, 0x2021, 0x2C6, 0x2030, 0x160,
    0x2039, 0x152,  0x8D,   0x17D,  0x8F,   0x90,   0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x2DC,  0x2122, 0x161,  0x203A, 0x153,  0x9D,   0x17E,  0x178};

const Entity *find_entity(const char *name, size_t len) {
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

bool is_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

// p points just after '&'.  Returns the bytes consumed after the '&' (0: not
// an entity, the '&' is literal) and the character in *cp.
size_t decode_entity(const char *p, const char *end, uint32_t *cp) {
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

// ---- visible text, words and the best window --------------------------------------------

struct Match {
    size_t start, end;  // absolute offsets in the visible text
    int term;
};

bool is_space(uint32_t cp) {
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\f' || cp == 0xA0 ||
           (cp > 0x7F && Xapian::Unicode::is_whitespace(cp));
}

// Characters that never reach the snippet as themselves.
bool is_control(uint32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp < 0xA0); }

const uint32_t kIgnore = 0xFFFFFFFF;

// Xapian's TermGenerator: characters that join two words into one term.
uint32_t infix(uint32_t ch) {
    if (ch == '\'' || ch == '&' || ch == 0xB7 || ch == 0x5F4 || ch == 0x2027)
        return ch;
    if (ch == 0x2019 || ch == 0x201B)
        return '\'';
    if (ch >= 0x200B && (ch <= 0x200D || ch == 0x2060 || ch == 0xFEFF))
        return kIgnore;
    return 0;
}

uint32_t infix_digit(uint32_t ch) {
    switch (ch) {
    case ',': case '.': case ';': case 0x37E: case 0x589: case 0x60D: case 0x7F8:
    case 0x2044: case 0xFE10: case 0xFE13: case 0xFE14:
        return ch;
    }
    if (ch >= 0x200B && (ch <= 0x200D || ch == 0x2060 || ch == 0xFEFF))
        return kIgnore;
    return 0;
}

// Xapian's character classes, with the ASCII answers inline: most text is
// ASCII and Xapian's table lookup is a call per character.
struct AsciiTables {
    bool word[128];
    char lower[128];
    AsciiTables() {
        for (int c = 0; c < 128; c++) {
            word[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_';
            lower[c] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
    }
};
const AsciiTables kAscii;
const bool *const kAsciiWord = kAscii.word;
const char *const kAsciiLower = kAscii.lower;

inline bool wordchar(uint32_t c) {
    if (c < 0x80)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    return is_wordchar(c);
}
inline uint32_t lower(uint32_t c) {
    if (c < 0x80)
        return c >= 'A' && c <= 'Z' ? c + 32 : c;
    return Xapian::Unicode::tolower(c);
}
inline bool is_upper(uint32_t c) {
    if (c < 0x80)
        return c >= 'A' && c <= 'Z';
    return get_category(c) == Xapian::Unicode::UPPERCASE_LETTER;
}
inline void append(std::string &s, uint32_t c) {
    if (c < 0x80)
        s.push_back((char)c);
    else
        Xapian::Unicode::append_utf8(s, c);
}
inline bool is_digit(uint32_t c) {
    if (c < 0x80)
        return c >= '0' && c <= '9';
    return get_category(c) == Xapian::Unicode::DECIMAL_DIGIT_NUMBER;
}

// Decodes at a position of the text buffer, ASCII inline.
inline uint32_t cp_fast(const std::string &s, size_t pos, size_t *next) {
    unsigned char c = (unsigned char)s[pos];
    if (c < 0x80) {
        *next = pos + 1;
        return c;
    }
    return cp_at(s, pos, next);
}

class Builder {
  public:
    Builder(Snippeter::Impl &q, size_t length) : q_(q), len_(length) {
        counts_.assign(q.terms.size(), 0);
    }

    bool done() const { return done_; }

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
        for (size_t i = a; i < b; i++) {
            char c = buf_[i];
            switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            default: out.push_back(c);
            }
        }
    }

    Snippeter::Impl &q_;
    size_t len_;
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
// from (Sphinx, DocBook, Read the Docs, MediaWiki).
const char *const kNavClasses[] = {
    "sphinxsidebar", "related", "footer", "header", "navheader", "navfooter", "headerlink",
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

uint8_t tag_kind(const char *name, size_t n) {
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

const Words &word_set(const char *const *list) {
    // One set per list, built on first use (thread-safe static init).
    static const Words roles(kNavRoles, kNavRoles + sizeof(kNavRoles) / sizeof(*kNavRoles) - 1);
    static const Words classes(kNavClasses,
                               kNavClasses + sizeof(kNavClasses) / sizeof(*kNavClasses) - 1);
    static const Words ids(kNavIds, kNavIds + sizeof(kNavIds) / sizeof(*kNavIds) - 1);
    return list == kNavRoles ? roles : list == kNavClasses ? classes : ids;
}

bool ieq(Span s, const char *lit, size_t n) {
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

const Shapes &shapes(const char *const *list) {
    static const Shapes roles(kNavRoles), classes(kNavClasses), ids(kNavIds);
    return list == kNavRoles ? roles : list == kNavClasses ? classes : ids;
}

// Whether one of the space-separated words of an attribute is in the list.
bool any_token(Span s, const char *const *list) {
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

bool hides(Span style) {
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

// ---- article text -------------------------------------------------------------------

// Visible text as one string: whitespace runs collapse to one space, block
// boundaries become one line break, table cells a tab; inside <pre> the
// text's own spaces and line breaks stay.  Stops after max_chars code points.
class TextSink {
  public:
    explicit TextSink(size_t max_chars) : max_(max_chars) {}

    bool done() const { return chars_ > max_; }

    void text(const char *p, size_t n) {
        const unsigned char *s = (const unsigned char *)p, *e = s + n;
        while (s < e && !done()) {
            unsigned char c = *s;
            if (c >= 0x80) {
                put(decode(s, e));
            } else if (c <= ' ' || c == 0x7F) {
                put(c);
                s++;
            } else {
                const unsigned char *r = s + 1;
                while (r < e && *r > ' ' && *r < 0x7F)
                    r++;
                flush();
                out_.append((const char *)s, (size_t)(r - s));
                chars_ += (size_t)(r - s);
                s = r;
            }
        }
    }

    void put(uint32_t cp) {
        if (pre_ && (cp == '\n' || cp == ' ' || cp == '\t')) {
            if (cp == '\n' && skip_lf_) {  // as HTML drops <pre>'s first line break
                skip_lf_ = false;
                return;
            }
            flush();
            emit(cp);
            return;
        }
        if (cp == '\r' && pre_)
            return;  // \r\n in <pre>: the \n is the line break
        if (is_space(cp)) {
            want(kSpaceGap);
            return;
        }
        if (is_control(cp) || cp == 0xAD)  // soft hyphens are invisible
            return;
        flush();
        emit(cp);
    }

    void brk() { want(kLine); }
    void cell() { want(kTab); }
    // Whole texts also drop navigation marked on spans (MediaWiki's
    // <span class="mw-editsection">[edit]</span>).
    static constexpr bool kNavOnSpans = true;
    void pre(bool open) {
        if (open) {
            pre_++;
            skip_lf_ = true;
        } else if (pre_) {
            pre_--;
        }
    }

    std::string finish() {
        if (chars_ > max_) {  // cut at max_ code points
            size_t i = 0, k = 0;
            while (i < out_.size() && k < max_) {
                i++;
                while (i < out_.size() && ((unsigned char)out_[i] & 0xC0) == 0x80)
                    i++;
                k++;
            }
            out_.resize(i);
        }
        while (!out_.empty() && (out_.back() == ' ' || out_.back() == '\n' || out_.back() == '\t'))
            out_.pop_back();
        return std::move(out_);
    }

  private:
    enum Gap { kNone = 0, kSpaceGap = 1, kTab = 2, kLine = 3 };

    void want(Gap g) {
        if (g > gap_)
            gap_ = g;
        if (g >= kTab)
            skip_lf_ = false;
    }

    // Writes the pending gap before visible text; none at the start, and no
    // second line break after one <pre> wrote.
    void flush() {
        skip_lf_ = false;
        Gap g = gap_;
        gap_ = kNone;
        if (g == kNone || out_.empty())
            return;
        char last = out_.back();
        if (g == kLine) {
            if (last != '\n') {
                while (!out_.empty() && (out_.back() == ' ' || out_.back() == '\t'))
                    out_.pop_back(), chars_--;
                emit('\n');
            }
        } else if (last != '\n' && last != ' ' && last != '\t') {
            emit(g == kTab ? '\t' : ' ');
        }
    }

    void emit(uint32_t cp) {
        if (cp < 0x80)
            out_.push_back((char)cp);
        else
            Xapian::Unicode::append_utf8(out_, cp);
        chars_++;
    }

    size_t max_, chars_ = 0;
    std::string out_;
    Gap gap_ = kNone;
    unsigned pre_ = 0;
    bool skip_lf_ = false;
};

}  // namespace

// ---- public ----------------------------------------------------------------------------

Snippeter::Snippeter(const std::string &query, const IndexLanguage &lang)
    : impl_(new Impl(query, lang)) {}

Snippeter::~Snippeter() = default;

const std::vector<std::string> &Snippeter::terms() const { return impl_->terms; }

std::string Snippeter::make(const char *html, size_t len) {
    Builder b(*impl_, kLength);
    Scanner<Builder> s(html, len, b);
    s.run();
    return b.finish();
}

std::string Snippeter::of_entry(const zim::Entry &entry, const zs_impl::OpenFile *file) {
    zim::Blob blob;
    try {
        const zim::Item item = entry.getItem(true);
        if (!file || !zs_impl::compressed_item_data(*file, item, &blob))
            blob = item.getData();
    } catch (const std::bad_alloc &) {
        throw;
    } catch (const std::exception &) {
        return "";
    }
    return make(blob.data(), blob.size());
}

std::string html_text(const char *html, size_t len, bool main_only, size_t max_chars) {
    TextSink sink(max_chars);
    Scanner<TextSink> s(html, len, sink, main_only);
    s.run();
    return sink.finish();
}

std::string item_text(const zim::Item &item, const zs_impl::OpenFile *file, bool main_only,
                      size_t max_chars) {
    zim::Blob blob;
    if (!file || !zs_impl::compressed_item_data(*file, item, &blob))
        blob = item.getData();
    return html_text(blob.data(), blob.size(), main_only, max_chars);
}

int text_kind(const char *m, size_t len) {
    static const std::pair<const char *, int> known[] = {
        {"text/html", ZS_TEXT_HTML},      {"application/xhtml+xml", ZS_TEXT_HTML},
        {"text/plain", ZS_TEXT_PLAIN},    {"text/markdown", ZS_TEXT_PLAIN},
        {"text/x-markdown", ZS_TEXT_PLAIN}};
    size_t n = 0;  // type/subtype, before any parameters
    while (n < len && m[n] != ';' && m[n] != ' ')
        n++;
    for (const auto &k : known)
        if (std::strlen(k.first) == n && ieq(Span{m, n}, k.first, n))
            return k.second;
    return 0;
}

std::string plain_text(const char *p, size_t len, size_t max_chars) {
    std::string out;
    const unsigned char *s = (const unsigned char *)p, *e = s + len;
    for (size_t k = 0; s < e && k < max_chars; k++) {
        if (*s < 0x80)
            out.push_back((char)*s++);
        else
            Xapian::Unicode::append_utf8(out, decode(s, e));
    }
    return out;
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

namespace {

// A result string as a malloc'ed, NUL-terminated copy (zs_buffer_free frees it).
int give(const std::string &r, char **out, size_t *outlen) {
    char *buf = static_cast<char *>(std::malloc(r.size() + 1));
    if (!buf)
        throw std::bad_alloc();
    std::memcpy(buf, r.data(), r.size());
    buf[r.size()] = '\0';
    *out = buf;
    *outlen = r.size();
    return 0;
}

}  // namespace

extern "C" int zs_html_text(const char *html, size_t len, int main_only, size_t max_chars,
                            char **out, size_t *outlen, zs_error *err) {
    return zs_impl::guarded(err, -1, [&] {
        return give(zsnip::html_text(html, len, main_only != 0, max_chars), out, outlen);
    });
}

extern "C" int zs_text_kind(const char *mimetype, size_t len) {
    return zsnip::text_kind(mimetype, len);
}

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
