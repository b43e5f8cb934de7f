// The snippet engine's characters: UTF-8, accents folded as libzim's indexer
// folds them, and the word and space classes of Xapian's term generator.
// Shared by the snippet builder (zimshim_snippet.cpp) and the text extractor
// (zimshim_text.cpp).  Internal linkage (an unnamed namespace), as when the
// engine was one file: each includer inlines its own copies, and a helper
// one of them does not call is [[maybe_unused]] rather than inline, so that
// the compiler's inlining choices stay those of the single file.
#ifndef ZIMSHIM_SNIPPET_CHARS_HPP
#define ZIMSHIM_SNIPPET_CHARS_HPP

#include <xapian.h>

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace zsnip {
namespace {

using Xapian::Unicode::get_category;
using Xapian::Unicode::is_wordchar;

// ---- UTF-8 ----------------------------------------------------------------------

// Decodes one code point; an invalid or truncated sequence yields U+FFFD
// and consumes one byte, so any input becomes valid UTF-8.
[[maybe_unused]] uint32_t decode(const unsigned char *&p, const unsigned char *end) {
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
[[maybe_unused]] uint32_t cp_at(const std::string &s, size_t pos, size_t *next) {
    const unsigned char *p = (const unsigned char *)s.data() + pos;
    const unsigned char *e = (const unsigned char *)s.data() + s.size();
    uint32_t cp = decode(p, e);
    *next = (size_t)(p - (const unsigned char *)s.data());
    return cp;
}

[[maybe_unused]] bool all_ascii(const std::string &s) {
    for (unsigned char c : s)
        if (c >= 0x80)
            return false;
    return true;
}

// ---- normalisation, as libzim's removeAccents ("Lower; NFD; [:M:] remove; NFC") --

[[maybe_unused]] std::string strip_marks(const std::string &s, bool lower) {
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
[[maybe_unused]] uint32_t fold_first(uint32_t cp) {
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

// ---- word and space classes ------------------------------------------------------------

[[maybe_unused]] bool is_space(uint32_t cp) {
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\f' || cp == 0xA0 ||
           (cp > 0x7F && Xapian::Unicode::is_whitespace(cp));
}

// Characters that never reach the snippet as themselves.
[[maybe_unused]] bool is_control(uint32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp < 0xA0); }

const uint32_t kIgnore = 0xFFFFFFFF;

// Xapian's TermGenerator: characters that join two words into one term.
[[maybe_unused]] uint32_t infix(uint32_t ch) {
    if (ch == '\'' || ch == '&' || ch == 0xB7 || ch == 0x5F4 || ch == 0x2027)
        return ch;
    if (ch == 0x2019 || ch == 0x201B)
        return '\'';
    if (ch >= 0x200B && (ch <= 0x200D || ch == 0x2060 || ch == 0xFEFF))
        return kIgnore;
    return 0;
}

[[maybe_unused]] uint32_t infix_digit(uint32_t ch) {
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

}  // namespace
}  // namespace zsnip

namespace {

// ---- results to C ------------------------------------------------------------------------

// A result string as a malloc'ed, NUL-terminated copy (zs_buffer_free frees it).
[[maybe_unused]] int give(const std::string &r, char **out, size_t *outlen) {
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

#endif
