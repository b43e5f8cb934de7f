// Article text: the visible text of an HTML document (TextSink, a sink of the
// HTML scanner in zimshim_snippet_scanner.hpp), and plain text and markdown
// as they are; Item.get_text() and search results' text (zimshim_snippet.hpp).
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

}  // namespace zsnip

extern "C" int zs_html_text(const char *html, size_t len, int main_only, size_t max_chars,
                            char **out, size_t *outlen, zs_error *err) {
    return zs_impl::guarded(err, -1, [&] {
        return give(zsnip::html_text(html, len, main_only != 0, max_chars), out, outlen);
    });
}

extern "C" int zs_text_kind(const char *mimetype, size_t len) {
    return zsnip::text_kind(mimetype, len);
}
