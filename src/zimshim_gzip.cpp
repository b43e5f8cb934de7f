// gzip for the server's answers: see zimshim.h (zs_gzip).
//
// libdeflate, not zlib: the server gzips every text answer a browser asks for
// (an article on its first view, search pages, the catalog), and on the
// rust-doc/openjdk pages libdeflate's level 6 makes the same size as zlib's
// level 6 (13.3% against 13.2% of the input) in half the CPU (168 against 82
// MB/s, bench/gzip_cost.py).  It compresses a whole buffer at once, which is all the
// server needs: an answer is in memory before it is sent.
#include "zimshim_impl.hpp"

#include <libdeflate.h>

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

using namespace zs_impl;

namespace {

constexpr int kMinLevel = 1;
constexpr int kMaxLevel = 12;  // libdeflate's levels: 1-9 as zlib's, 10-12 slower still

// A compressor is a few hundred KiB of tables, set up per level: each thread
// keeps the ones it used (the server's workers call this for every answer)
// and frees them when it ends.
struct Compressors {
    libdeflate_compressor *by_level[kMaxLevel + 1] = {};
    ~Compressors() {
        for (auto *c : by_level)
            if (c)
                libdeflate_free_compressor(c);
    }
    libdeflate_compressor *get(int level) {
        libdeflate_compressor *&c = by_level[level];
        if (!c && !(c = libdeflate_alloc_compressor(level)))
            throw std::bad_alloc();
        return c;
    }
};

thread_local Compressors t_compressors;

}  // namespace

extern "C" int zs_gzip(const void *data, size_t len, int level, char **out, size_t *out_len,
                       zs_error *err) {
    return guarded(err, -1, [&] {
        if (level < kMinLevel || level > kMaxLevel)
            throw std::invalid_argument("gzip level must be 1 to 12, not " + std::to_string(level));
        libdeflate_compressor *c = t_compressors.get(level);
        const size_t bound = libdeflate_gzip_compress_bound(c, len);
        char *buf = static_cast<char *>(std::malloc(bound ? bound : 1));
        if (!buf)
            throw std::bad_alloc();
        const size_t n = libdeflate_gzip_compress(c, data, len, buf, bound);
        if (n == 0) {  // cannot happen with the bound's room; never return a truncated stream
            std::free(buf);
            throw std::runtime_error("gzip: libdeflate found no room in its own bound");
        }
        *out = buf;
        *out_len = n;
        return 0;
    });
}
