// The catalog's book index: libkiwix's Library::updateBookDB and
// buildXapianQuery (src/library.cpp of the newest libkiwix) over book records,
// so /catalog/v2/entries?q=... and books.filter.* select what kiwix-serve
// selects: words (not substrings), "phrases", field:prefixes, -exclusions,
// wildcards, no boolean operators (FLAG_BOOLEAN is not given: "or" is a word).
#include "zimshim_catalog.h"

#include <xapian.h>

#include <unicode/locid.h>
#include <unicode/translit.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zimshim_impl.hpp"

struct zs_catalog {
    Xapian::WritableDatabase db{std::string(), Xapian::DB_BACKEND_INMEMORY};
    std::mutex lock;  // Xapian databases are not thread-safe
    uint32_t books = 0;
};

namespace {

std::string str(const zs_text &t) { return t.ptr ? std::string(t.ptr, t.len) : std::string(); }

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string::size_type start = 0;
    while (start <= s.size()) {
        auto end = s.find(sep, start);
        if (end == std::string::npos)
            end = s.size();
        if (end > start)
            out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// libkiwix's removeAccents (normalizeText): lower case, marks removed.  One
// transliterator per thread: ICU's are not thread-safe, and building one
// costs a few milliseconds.
std::string normalize(const std::string &text) {
    bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return (unsigned char)c < 128; });
    if (ascii) {
        std::string out(text);
        for (auto &c : out)
            if (c >= 'A' && c <= 'Z')
                c = char(c - 'A' + 'a');
        return out;
    }
    thread_local std::unique_ptr<icu::Transliterator> trans;
    if (!trans) {
        UErrorCode status = U_ZERO_ERROR;
        trans.reset(icu::Transliterator::createInstance("Lower; NFD; [:M:] remove; NFC",
                                                        UTRANS_FORWARD, status));
        if (U_FAILURE(status) || !trans)
            throw std::runtime_error("ICU has no accent-removing transliterator");
    }
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
    trans->transliterate(u);
    std::string out;
    u.toUTF8String(out);
    return out;
}

// libkiwix's iso639_3ToXapian: the stemmer's language, from ICU's locale.
std::string xapian_language(const std::string &lang) { return icu::Locale(lang.c_str()).getLanguage(); }

Xapian::Document book_document(const zs_text f[ZS_BOOK_NFIELDS]) {
    Xapian::TermGenerator indexer;
    const auto langs = split(str(f[ZS_BOOK_LANGUAGE]), ',');
    if (langs.size() == 1) {
        try {
            indexer.set_stemmer(Xapian::Stem(xapian_language(langs[0])));
            indexer.set_stemming_strategy(Xapian::TermGenerator::STEM_SOME);
        } catch (...) {  // no stemmer for this language: words as they are
        }
    }
    Xapian::Document doc;
    indexer.set_document(doc);
    const std::string title = normalize(str(f[ZS_BOOK_TITLE]));
    const std::string desc = normalize(str(f[ZS_BOOK_DESCRIPTION]));
    indexer.index_text(title);
    indexer.increase_termpos();
    indexer.index_text(desc);
    indexer.index_text(title, 1, "S");
    indexer.index_text(desc, 1, "XD");
    for (const auto &lang : langs)
        indexer.index_text(lang, 1, "L");
    indexer.index_text(normalize(str(f[ZS_BOOK_CREATOR])), 1, "A");
    indexer.index_text(normalize(str(f[ZS_BOOK_PUBLISHER])), 1, "XP");
    doc.add_term("XN" + normalize(str(f[ZS_BOOK_NAME])));
    indexer.index_text(normalize(str(f[ZS_BOOK_FLAVOUR])), 1, "XF");
    indexer.index_text(normalize(str(f[ZS_BOOK_CATEGORY])), 1, "XC");
    for (const auto &tag : split(normalize(str(f[ZS_BOOK_TAGS])), ';')) {
        doc.add_boolean_term("XT" + tag);
        if (tag[0] != '_') {  // hidden tags (_category:..., _ftindex:...) are not words
            indexer.increase_termpos();
            indexer.index_text(tag);
        }
    }
    return doc;
}

Xapian::Query match_all() { return Xapian::Query(std::string()); }

Xapian::Query any_of(const std::string &list, const char *prefix) {
    Xapian::Query q;
    bool first = true;
    for (const auto &x : split(list, ',')) {
        Xapian::Query one(prefix + normalize(x));
        q = first ? one : Xapian::Query(Xapian::Query::OP_OR, q, one);
        first = false;
    }
    return first ? Xapian::Query(prefix) : q;  // "," alone: a term no book has
}

Xapian::Query phrase_of(const std::string &text, const char *prefix) {
    Xapian::QueryParser qp;
    qp.set_default_op(Xapian::Query::OP_OR);
    qp.set_stemming_strategy(Xapian::QueryParser::STEM_NONE);
    const auto q = qp.parse_query(normalize(text), 0, prefix);
    return Xapian::Query(Xapian::Query::OP_PHRASE, q.get_terms_begin(), q.get_terms_end(), q.get_length());
}

Xapian::Query build_query(const zs_text f[ZS_FILTER_N], int partial) {
    Xapian::Query q = match_all();
    const std::string text = str(f[ZS_FILTER_Q]);
    if (!text.empty()) {
        Xapian::QueryParser qp;
        qp.set_default_op(Xapian::Query::OP_AND);
        qp.add_prefix("title", "S");
        qp.add_prefix("description", "XD");
        qp.add_prefix("name", "XN");
        qp.add_prefix("flavour", "XF");
        qp.add_prefix("category", "XC");
        qp.add_prefix("lang", "L");
        qp.add_prefix("publisher", "XP");
        qp.add_prefix("creator", "A");
        qp.add_prefix("tag", "XT");
        const unsigned flags = Xapian::QueryParser::FLAG_PHRASE | Xapian::QueryParser::FLAG_LOVEHATE |
                               Xapian::QueryParser::FLAG_WILDCARD |
                               (partial ? Xapian::QueryParser::FLAG_PARTIAL : 0);
        q = qp.parse_query(normalize(text), flags);
    }
    auto both = [&q](const Xapian::Query &other) { q = Xapian::Query(Xapian::Query::OP_AND, q, other); };
    if (f[ZS_FILTER_NAME].len)
        both(Xapian::Query("XN" + normalize(str(f[ZS_FILTER_NAME]))));
    if (f[ZS_FILTER_FLAVOUR].len)
        both(Xapian::Query("XF" + normalize(str(f[ZS_FILTER_FLAVOUR]))));
    if (f[ZS_FILTER_CATEGORY].len)
        both(any_of(str(f[ZS_FILTER_CATEGORY]), "XC"));
    if (f[ZS_FILTER_LANG].len)
        both(any_of(str(f[ZS_FILTER_LANG]), "L"));
    if (f[ZS_FILTER_PUBLISHER].len)
        both(phrase_of(str(f[ZS_FILTER_PUBLISHER]), "XP"));
    if (f[ZS_FILTER_CREATOR].len)
        both(phrase_of(str(f[ZS_FILTER_CREATOR]), "A"));
    const auto accept = split(str(f[ZS_FILTER_TAGS]), ';');
    const auto reject = split(str(f[ZS_FILTER_NOTAGS]), ';');
    if (!accept.empty() || !reject.empty()) {
        Xapian::Query t = match_all();
        for (const auto &tag : accept)
            t &= Xapian::Query("XT" + normalize(tag));
        for (const auto &tag : reject)
            t = Xapian::Query(Xapian::Query::OP_AND_NOT, t, Xapian::Query("XT" + normalize(tag)));
        both(t);
    }
    return q;
}

}  // namespace

extern "C" {

zs_catalog *zs_catalog_new(zs_error *err) {
    try {
        return new zs_catalog();
    } catch (...) {
        zs_impl::fill_error(err);
        return nullptr;
    }
}

void zs_catalog_free(zs_catalog *c) { delete c; }

int zs_catalog_add(zs_catalog *c, uint32_t book, const zs_text fields[ZS_BOOK_NFIELDS], zs_error *err) {
    try {
        Xapian::Document doc = book_document(fields);
        doc.set_data(std::to_string(book));
        std::lock_guard<std::mutex> hold(c->lock);
        // Document ids from 1, in the order books are added: libkiwix's, so
        // equal weights rank as its do.
        c->db.replace_document("Q" + std::to_string(book), doc);
        c->books++;
        return 0;
    } catch (...) {
        zs_impl::fill_error(err);
        return -1;
    }
}

int zs_catalog_query(zs_catalog *c, const zs_text filter[ZS_FILTER_N], int partial, uint32_t **out,
                     size_t *n, zs_error *err) {
    *out = nullptr;
    *n = 0;
    try {
        const Xapian::Query q = build_query(filter, partial);
        std::vector<uint32_t> ids;
        {
            std::lock_guard<std::mutex> hold(c->lock);
            Xapian::Enquire enquire(c->db);
            enquire.set_query(q);
            const auto mset = enquire.get_mset(0, c->db.get_doccount());
            ids.reserve(mset.size());
            for (auto it = mset.begin(); it != mset.end(); ++it)
                ids.push_back(uint32_t(std::strtoul(it.get_document().get_data().c_str(), nullptr, 10)));
        }
        *out = static_cast<uint32_t *>(std::malloc(std::max<size_t>(1, ids.size()) * sizeof(uint32_t)));
        if (!*out)
            throw std::bad_alloc();
        std::copy(ids.begin(), ids.end(), *out);
        *n = ids.size();
        return 0;
    } catch (...) {
        zs_impl::fill_error(err);
        return -1;
    }
}

size_t zs_language_self_name(const char *code, char *buf, size_t cap) {
    // libkiwix's getLanguageSelfName: ICU's ISO 639-1 languages by their
    // ISO 639-3 code, each named in itself; "mul" left out; else the code.
    static std::map<std::string, std::string> *names = nullptr;
    static std::once_flag once;
    std::string name = *code ? code : "Undetermined";  // ICU says "und"; libkiwix maps "" so
    try {
        std::call_once(once, [] {
            auto *m = new std::map<std::string, std::string>();
            for (auto p = icu::Locale::getISOLanguages(); *p != nullptr; ++p) {
                const icu::Locale loc(*p);
                icu::UnicodeString self;
                loc.getDisplayLanguage(loc, self);
                std::string s;
                self.toUTF8String(s);
                (*m)[loc.getISO3Language()] = s;
            }
            m->erase("mul");
            names = m;
        });
        if (names) {
            auto it = names->find(code);
            if (it != names->end())
                name = it->second;
        }
    } catch (...) {  // ICU failed: the code is still a name
    }
    if (cap) {
        const size_t k = std::min(name.size(), cap - 1);
        std::memcpy(buf, name.data(), k);
        buf[k] = '\0';
    }
    return name.size();
}

}  // extern "C"
