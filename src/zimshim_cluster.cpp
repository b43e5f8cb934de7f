// Item content read by the binding instead of libzim, through one cache of
// decompressed clusters per file.
//
// libzim 8.1.1 feeds its decompressor 1 KiB at a time, and every KiB is a
// fresh mmap() of the file, unmapped when the next one comes
// (DecoderStreamReader over FileReader::get_buffer): about 300 mmap/munmap
// pairs per snippet search of the bench archives. Threads of one process
// queue on its address-space lock for those, and each munmap flushes the
// TLBs of the other cores: two threads made 20-30 voluntary context switches
// and spent 65% more CPU per snippet search, where two processes scaled.
// Here a compressed cluster is read with pread, 64 KiB at a time, and decoded
// into memory of its own. Decoding stops at the blob asked for, as libzim's
// does, and resumes from there for a later blob. A zstd cluster is decoded
// straight into one buffer (start_whole), an xz one into segments. There is one cache per file
// in the process, shared by every Archive opened on it and every libzim copy
// of those (pooled searchers, spare lookup copies), where libzim keeps one
// per copy.
#include "zimshim_impl.hpp"
#include "zimshim_snippet.hpp"

#include <lzma.h>
// ZSTD_d_stableOutBuffer is in zstd's experimental API (stable since 1.4.x;
// Debian 12 has 1.5.4); ZSTD_DCtx_setParameter says at run time whether the
// library takes it, and a decoder that does not is used the buffered way.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>
#include <sys/stat.h>

namespace zs_impl {

namespace {

const size_t kChunk = 64 * 1024;
// Decoded blobs are packed into segments of this size; a larger blob gets a
// buffer of its own, grown as its bytes are decoded. So memory follows the
// bytes the stream really holds, not what a (possibly corrupt) offset table
// declares, and a blob handed out is a view that never moves (it keeps its
// segment alive).
const size_t kSegment = size_t(1) << 20;
// Compressed clusters hold text; an offset past this is a corrupt table.
const uint64_t kMaxCluster = uint64_t(4) << 30;

// Where decoded cluster data lives. From malloc alone, memory the cache had
// let go stayed resident: glibc raises its mmap threshold to the largest
// block freed (up to 32 MiB), after which segments and large blobs came from
// the worker threads' arenas, where freed ones stayed. zim serve on the
// 43,000-page rustjava archive reached 414-516 MiB PSS after 12 s of search
// pages under a 64 MiB cache budget. Anonymous maps of their own go back to
// the kernel, but fresh pages are zeroed on first touch: with every buffer a
// new map, system time per search page went from 0.9 to 2.3 ms. So segments
// (a cluster's last, partial one too, from kPooledFrom bytes) and blobs larger
// than a segment are maps kept for reuse in two small pools (what a cache that
// churns frees, it soon needs again: a large blob, such as a search index, is
// decoded again whenever its cluster comes back, even when only a blob after
// it is asked for), unmapped past the pools' size. Sanitizer builds keep
// malloc, whose buffers the sanitizer checks.
#if defined(__SANITIZE_ADDRESS__)
#define ZS_MAP_BUFFERS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZS_MAP_BUFFERS 0
#endif
#endif
#ifndef ZS_MAP_BUFFERS
#define ZS_MAP_BUFFERS 1
#endif
const size_t kPooledFrom = 128 * 1024;  // glibc's first mmap threshold

char *map_or_throw(size_t n) {
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw std::bad_alloc();
    return static_cast<char *>(p);
}

// A map, and how many of its first bytes have been touched (resident).
struct Map {
    char *p = nullptr;
    size_t size = 0, touched = 0;
};

// Spare anonymous maps, at most max_count of them and max_bytes in all.
class MapPool {
  public:
    MapPool(size_t max_count, size_t max_bytes) : max_count_(max_count), max_bytes_(max_bytes) {
        spare_.reserve(max_count);  // so that give() cannot throw
    }
    // A spare map of lo to hi bytes: p null if none.
    Map take(uint64_t lo, uint64_t hi) {
        std::lock_guard<std::mutex> lk(mu_);
        for (size_t i = 0; i < spare_.size(); i++) {
            const Map m = spare_[i];
            if (m.size >= lo && m.size <= hi) {
                spare_.erase(spare_.begin() + (long)i);
                bytes_ -= m.size;
                return m;
            }
        }
        return Map{};
    }
    void give(const Map &m) {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (spare_.size() < max_count_ && bytes_ + m.size <= max_bytes_) {
                spare_.push_back(m);
                bytes_ += m.size;
                return;
            }
        }
        munmap(m.p, m.size);
    }
    // The map as a shared_ptr that gives it back here (also if the
    // shared_ptr cannot be made), all of it counted as touched.
    std::shared_ptr<char> owned(char *p, size_t n) {
        return std::shared_ptr<char>(p, [this, n](char *q) { give(Map{q, n, n}); });
    }
    // The same, the touched bytes read from *touched when it comes back.
    std::shared_ptr<char> owned(char *p, size_t n, std::shared_ptr<std::atomic<size_t>> touched) {
        return std::shared_ptr<char>(p, [this, n, touched](char *q) {
            give(Map{q, n, std::min(n, touched->load(std::memory_order_relaxed))});
        });
    }

  private:
    const size_t max_count_, max_bytes_;
    std::mutex mu_;
    std::vector<Map> spare_;
    size_t bytes_ = 0;
};

// The two pools, never destroyed: a buffer may outlive static destruction
// in a cache of another static object.
MapPool &segment_pool() {
    static MapPool *pool = new MapPool(16, size_t(16) << 20);
    return *pool;
}
MapPool &large_pool() {
    static MapPool *pool = new MapPool(8, size_t(16) << 20);
    return *pool;
}

// An anonymous map that grows in place or moves (mremap), unmapped unless
// released.
class Mapped {
  public:
    explicit Mapped(size_t n) : p_(map_or_throw(n)), n_(n) {}
    Mapped(char *p, size_t n) : p_(p), n_(n) {}  // adopts a map
    ~Mapped() {
        if (p_)
            munmap(p_, n_);
    }
    Mapped(const Mapped &) = delete;
    Mapped &operator=(const Mapped &) = delete;
    char *get() const { return p_; }
    size_t size() const { return n_; }
    void grow(size_t n) {
        void *q = mremap(p_, n_, n, MREMAP_MAYMOVE);
        if (q == MAP_FAILED)
            throw std::bad_alloc();  // the old map stays, unmapped by the destructor
        p_ = static_cast<char *>(q);
        n_ = n;
    }
    // Ownership to a shared_ptr that gives the map to pool.
    std::shared_ptr<char> release(MapPool &pool) {
        char *p = p_;
        p_ = nullptr;
        return pool.owned(p, n_);
    }

  private:
    char *p_;
    size_t n_;
};

// A segment of at least *n bytes (and one), *n set to its size: a pooled
// full segment from kPooledFrom bytes up, else from malloc.
std::shared_ptr<char> segment_buffer(size_t *n) {
    if (ZS_MAP_BUFFERS && *n >= kPooledFrom) {
        *n = kSegment;
        char *p = segment_pool().take(kSegment, kSegment).p;
        return segment_pool().owned(p ? p : map_or_throw(kSegment), kSegment);
    }
    return std::shared_ptr<char>(new char[*n ? *n : 1], std::default_delete<char[]>());
}

// For a blob larger than a segment: a spare map of at least size bytes and
// at most twice that, else a new one of a segment's size, grown as the blob's
// bytes are decoded (a corrupt size costs what the stream holds, not what it
// claims).
Mapped large_buffer(uint64_t size) {
    const Map m = large_pool().take(size, 2 * size);
    return m.p ? Mapped(m.p, m.size) : Mapped(kSegment);
}

enum class Codec { none, xz, zstd, other };

Codec codec_of(unsigned char info) {
    switch (info & 0x0f) {
    case 0:
    case 1:
        return Codec::none;
    case 4:
        return Codec::xz;
    case 5:
        return Codec::zstd;
    default:
        return Codec::other;  // zlib, bzip2: libzim decides (and refuses)
    }
}

[[noreturn]] void corrupt(uint32_t cluster, const std::string &what) {
    throw zim::ZimFileFormatError("cluster " + std::to_string(cluster) + ": " + what);
}

[[noreturn]] void no_blob(uint32_t cluster, uint32_t blob, size_t blobs) {
    // libzim 9 says "blob index out of range"; 8.1.1 gave an empty blob.
    corrupt(cluster, "blob " + std::to_string(blob) + ": blob index out of range (the cluster has " +
                         std::to_string(blobs) + ")");
}

// Decoder contexts are costly to make (zstd's window and tables, liblzma's
// dictionary: allocations and, for the large ones, mmap/munmap and page
// faults), so a finished stream's context goes back to the thread that ends
// it, for that thread's next cluster, instead of being freed.
struct DecoderPool {
    static const size_t kKeep = 2;  // of each kind, per thread
    std::vector<ZSTD_DCtx *> zstd;
    // In ZSTD_d_stableOutBuffer mode (no window buffer of their own): kept
    // apart, since a buffered decode would make them allocate one.
    std::vector<ZSTD_DCtx *> zstd_stable;
    std::vector<lzma_stream> xz;
    std::vector<std::unique_ptr<char[]>> inputs;
    ~DecoderPool();
};
// False once this thread's pool is destroyed (thread exit): a stream ended
// after that frees its context itself.
thread_local bool t_pool_alive = true;
thread_local DecoderPool t_pool;

DecoderPool::~DecoderPool() {
    t_pool_alive = false;
    for (ZSTD_DCtx *d : zstd)
        ZSTD_freeDCtx(d);
    for (ZSTD_DCtx *d : zstd_stable)
        ZSTD_freeDCtx(d);
    for (lzma_stream &s : xz)
        lzma_end(&s);
}

DecoderPool *pool() { return t_pool_alive ? &t_pool : nullptr; }

template <class T> bool take(std::vector<T> &from, T *out) {
    if (from.empty())
        return false;
    *out = std::move(from.back());
    from.pop_back();
    return true;
}

// One compressed stream, read from the file as it is decoded.
class Stream {
  public:
    // stable (zstd only): decode_stable() into one buffer, if the library
    // takes ZSTD_d_stableOutBuffer (stable() says).
    Stream(Codec codec, uint64_t pos, uint64_t end, bool stable = false)
        : codec_(codec), pos_(pos), end_(end), stable_(stable && codec == Codec::zstd) {
        try {
            acquire();
        } catch (...) {
            release();
            throw;
        }
    }
    ~Stream() { release(); }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    // Decodes exactly len bytes into out, or throws (cluster names the
    // cluster in the message).
    void decode(const OpenFile &f, char *out, size_t len, uint32_t cluster) {
        size_t done = 0;
        while (done < len) {
            // The frame ended: what follows it is not the cluster's.
            if (ended_)
                corrupt(cluster, "the compressed data ends before the cluster does");
            if (in_off_ == in_len_)
                refill(f);
            const size_t got = codec_ == Codec::zstd ? step_zstd(out + done, len - done, cluster)
                                                     : step_xz(out + done, len - done, cluster);
            // No output from a step that had no input left: the stream is
            // cut short (or ended) before the bytes the offsets promise.
            if (got == 0 && in_len_ == 0)
                corrupt(cluster, "the compressed data ends before the cluster does");
            done += got;
        }
    }

    // Decodes n bytes and drops them.
    void skip(const OpenFile &f, uint64_t n, uint32_t cluster) {
        char scratch[16384];
        while (n > 0) {
            const size_t k = (size_t)std::min<uint64_t>(n, sizeof scratch);
            decode(f, scratch, k, cluster);
            n -= k;
        }
    }

    bool stable() const { return stable_; }

    // Stable mode: decodes into out[0, cap), from *pos (where the last call
    // left it: zstd requires the same buffer) until *pos >= target; zstd may
    // decode further, up to cap. False when a block does not fit in cap (the
    // frame runs past its offset table: corrupt); the caller decodes on the
    // buffered way then.
    bool decode_stable(const OpenFile &f, char *out, size_t cap, size_t *pos, size_t target,
                       uint32_t cluster) {
        while (*pos < target) {
            if (ended_)
                corrupt(cluster, "the compressed data ends before the cluster does");
            if (in_off_ == in_len_)
                refill(f);
            ZSTD_outBuffer o{out, cap, *pos};
            // At most the input zstd asks for next (its hint: the next block),
            // so a call decodes one block at most: given all it has, zstd
            // would decode every block that input completes, past target,
            // and an error in a later one would lose the earlier ones' output
            // (zstd sets pos only on success). Decoding stops at the blob
            // asked for, as in buffered mode, block by block.
            ZSTD_inBuffer i{in_.get(), std::min(in_len_, in_off_ + hint_), in_off_};
            const size_t r = ZSTD_decompressStream(zs_, &o, &i);
            if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
                return false;
            if (ZSTD_isError(r))
                corrupt(cluster, std::string("zstd: ") + ZSTD_getErrorName(r));
            in_off_ = i.pos;
            ended_ = r == 0;
            hint_ = r ? r : 1;
            const bool progress = o.pos > *pos;
            *pos = o.pos;
            if (!progress && in_len_ == 0)
                corrupt(cluster, "the compressed data ends before the cluster does");
        }
        return true;
    }

    // What the stream holds: its input buffer and its decoder (for zstd's
    // buffered mode a window of up to 8 MiB; liblzma's dictionary).
    size_t memory() const {
        size_t n = kChunk;
        if (zs_)
            n += ZSTD_sizeof_DCtx(zs_);
        if (xz_.internal)
            n += (size_t)lzma_memusage(&xz_);
        return n;
    }

  private:
    void acquire() {
        DecoderPool *p = pool();
        if (!p || !take(p->inputs, &in_))
            in_.reset(new char[kChunk]);
        if (codec_ == Codec::zstd) {
            std::vector<ZSTD_DCtx *> *from = p ? (stable_ ? &p->zstd_stable : &p->zstd) : nullptr;
            const bool reused = from && take(*from, &zs_);
            if (!reused && !(zs_ = ZSTD_createDCtx()))
                throw std::bad_alloc();
            // A reused context starts a new frame; its parameters are kept.
            if (ZSTD_isError(ZSTD_DCtx_reset(zs_, ZSTD_reset_session_only)))
                throw std::bad_alloc();
            if (stable_ && !reused &&
                ZSTD_isError(ZSTD_DCtx_setParameter(zs_, ZSTD_d_stableOutBuffer, 1)))
                stable_ = false;  // this libzstd has no such mode: buffered
        } else {
            if (p)
                take(p->xz, &xz_);
            // libzim's memory limit for an xz cluster. On a reused stream
            // liblzma keeps the decoder's memory when the settings match.
            if (lzma_stream_decoder(&xz_, 1000000000, 0) != LZMA_OK)
                throw std::bad_alloc();
        }
    }

    void release() {
        DecoderPool *p = pool();
        std::vector<ZSTD_DCtx *> *to = p ? (stable_ ? &p->zstd_stable : &p->zstd) : nullptr;
        if (zs_ && to && to->size() < DecoderPool::kKeep)
            to->push_back(zs_);
        else if (zs_)
            ZSTD_freeDCtx(zs_);
        zs_ = nullptr;
        if (xz_.internal && p && p->xz.size() < DecoderPool::kKeep)
            p->xz.push_back(xz_);
        else
            lzma_end(&xz_);
        xz_ = LZMA_STREAM_INIT;
        if (in_ && p && p->inputs.size() < DecoderPool::kKeep)
            p->inputs.push_back(std::move(in_));
        in_.reset();
    }

    void refill(const OpenFile &f) {
        const size_t n = (size_t)std::min<uint64_t>(kChunk, end_ - std::min(end_, pos_));
        if (n)
            f.read(pos_, in_.get(), n);
        pos_ += n;
        in_off_ = 0;
        in_len_ = n;
    }

    size_t step_zstd(char *out, size_t len, uint32_t cluster) {
        ZSTD_outBuffer o{out, len, 0};
        ZSTD_inBuffer i{in_.get(), in_len_, in_off_};
        const size_t r = ZSTD_decompressStream(zs_, &o, &i);
        if (ZSTD_isError(r))
            corrupt(cluster, std::string("zstd: ") + ZSTD_getErrorName(r));
        in_off_ = i.pos;
        ended_ = r == 0;
        return o.pos;
    }

    size_t step_xz(char *out, size_t len, uint32_t cluster) {
        xz_.next_in = reinterpret_cast<const uint8_t *>(in_.get()) + in_off_;
        xz_.avail_in = in_len_ - in_off_;
        xz_.next_out = reinterpret_cast<uint8_t *>(out);
        xz_.avail_out = len;
        const lzma_ret r = lzma_code(&xz_, LZMA_RUN);
        in_off_ = in_len_ - xz_.avail_in;
        const size_t got = len - xz_.avail_out;
        ended_ = r == LZMA_STREAM_END;
        if (r != LZMA_OK && r != LZMA_STREAM_END)
            corrupt(cluster, "xz error " + std::to_string((int)r));
        return got;
    }

    Codec codec_;
    uint64_t pos_, end_;  // next compressed byte to read; the archive's end
    std::unique_ptr<char[]> in_;
    size_t in_off_ = 0, in_len_ = 0;
    bool ended_ = false;  // the decoder reported the end of its frame
    bool stable_;
    size_t hint_ = ZSTD_FRAMEHEADERSIZE_PREFIX(ZSTD_f_zstd1);  // stable mode: input for the next call
    ZSTD_DCtx *zs_ = nullptr;
    lzma_stream xz_ = LZMA_STREAM_INIT;
};

uint64_t read_le(const OpenFile &f, uint64_t pos, int width) {
    unsigned char b[8];
    f.read(pos, b, (size_t)width);
    return load_le(b, width);
}

// Checks a table entry against the one before it (the first entry, the
// table's size, is checked by first_offset()).
void check_offset(uint64_t v, uint64_t previous, uint64_t max, uint32_t cluster) {
    if (v < previous)
        corrupt(cluster, "blob offsets out of order");
    if (v > max)
        corrupt(cluster, "blob offset " + std::to_string(v) + " past the cluster's end");
}

uint64_t first_offset(const unsigned char *b, int width, uint64_t max, uint32_t cluster) {
    const uint64_t first = load_le(b, width);
    if (first < (uint64_t)width || first % width)
        corrupt(cluster, "offset of the first blob is not properly aligned (" + std::to_string(first) + ")");
    if (first > max)
        corrupt(cluster, "bad offset table size " + std::to_string(first));
    return first;
}

}  // namespace

// A compressed cluster, decoded as far as reads have needed, blob by blob.
// Reads of blobs already decoded take no lock: offsets are set once, before
// `started` is published, and blobs below `ready` never change. mu
// serialises decoding (and guards everything else). (Publishing each decoded
// step to waiting threads was tried: more wake-ups, slower.)
struct Cluster {
    std::mutex mu;
    std::atomic<bool> started{false};
    std::vector<uint64_t> offsets;      // blob i is [offsets[i], offsets[i+1])
    // Blob i's first byte, for i < ready, keeping its segment alive.
    std::unique_ptr<std::shared_ptr<const char>[]> blobs;
    std::atomic<uint32_t> ready{0};     // the first `ready` blobs are decoded
    std::atomic<size_t> held{0};        // bytes allocated for the cluster
    // Set once: the stream failed there, and blobs from `ready` on throw it
    // (those before stay readable).
    std::string error;
    std::unique_ptr<Stream> stream;     // null once fully decoded or failed
    size_t stream_held = 0;             // its memory(), counted in held while it lives
    std::shared_ptr<char> segment;      // where the next small blobs go
    size_t seg_used = 0, seg_size = 0;
    // A zstd cluster of a plausible size is decoded in one piece: bytes
    // [0, decoded) of whole are the cluster's (offset table included), and
    // blobs point into it. Null on the segment path (xz, or a table that
    // claims more than kWholeMax).
    std::shared_ptr<char> whole;
    size_t decoded = 0;
    // What whole costs: the pages touched, by this cluster's decoding or,
    // for a reused map, before (resident already); shared with the map's
    // deleter, which tells the pool.
    std::shared_ptr<std::atomic<size_t>> whole_touched;
    size_t whole_held = 0;              // counted in held
    size_t whole_cap = 0;               // its size (zstd's output buffer)
    bool whole_mapped = false;          // a map: its pages count as touched
    uint64_t data_pos = 0;              // the compressed stream's first byte

    size_t blob_count() const { return offsets.size() - 1; }
    // What the cluster costs in memory now (decoded data, the offset table,
    // the decoder of a partly decoded cluster), without a lock.
    size_t bytes_held() const { return held.load(std::memory_order_relaxed); }
};

namespace {

// Under c.mu: runs step, which reads c's stream. A failure (corrupt data, a
// read error, memory) stops the stream at an unknown point, where decoding
// on would misplace bytes: it is kept, and every later step throws it.
// Under c.mu: held follows the stream's memory (a zstd window in buffered
// mode, liblzma's dictionary) while it lives, so the budget counts it.
void account_stream(Cluster &c) {
    const size_t now = c.stream ? c.stream->memory() : 0;
    c.held.fetch_add(now - c.stream_held, std::memory_order_relaxed);  // wraps to a decrease
    c.stream_held = now;
}

template <class F> void on_stream(Cluster &c, uint32_t cluster, F &&step) {
    if (!c.error.empty())
        throw zim::ZimFileFormatError(c.error);
    try {
        step();
    } catch (const std::exception &ex) {
        c.error = dynamic_cast<const zim::ZimFileFormatError *>(&ex)
                      ? ex.what()
                      : "cluster " + std::to_string(cluster) + ": an earlier read failed: " + ex.what();
        c.stream.reset();
        account_stream(c);
        throw;
    }
    account_stream(c);
}

// A cluster decoded in one piece needs no more than this (a table claiming
// more is likely corrupt: it takes the segment path, whose memory follows
// the bytes the stream really holds).
const uint64_t kWholeMax = uint64_t(64) << 20;
// The decoded size a cluster's buffer allows, per compressed byte.
const uint64_t kWholeRatio = 32;
// And at least this: a small cluster's first block may be all of it.
const uint64_t kWholeMin = 64 * 1024;

// The buffer of a cluster decoded in one piece, from malloc when small (*touched
// then its size: malloc's memory counts whole), else a map (pooled, as large
// blobs'; *touched its pages resident already, 0 for a new one).
std::shared_ptr<char> whole_buffer(size_t size, std::shared_ptr<std::atomic<size_t>> touched) {
    if (ZS_MAP_BUFFERS && size >= kPooledFrom) {
        Map m = large_pool().take(size, 2 * (uint64_t)size);
        if (!m.p)
            m = Map{map_or_throw(size), size, 0};
        touched->store(m.touched, std::memory_order_relaxed);
        return large_pool().owned(m.p, m.size, std::move(touched));
    }
    touched->store(size, std::memory_order_relaxed);
    return std::shared_ptr<char>(new char[size], std::default_delete<char[]>());
}

// Under c.mu: held follows the pages of whole that are touched.
void account_whole(Cluster &c) {
    const size_t page = c.whole_mapped ? 4096 : 1;
    const size_t now = std::max(c.whole_touched->load(std::memory_order_relaxed),
                                (c.decoded + page - 1) / page * page);
    c.whole_touched->store(now, std::memory_order_relaxed);
    c.held.fetch_add(now - c.whole_held, std::memory_order_relaxed);
    c.whole_held = now;
}

// The offsets of a table's bytes (width each), checked in order.
void append_offsets(Cluster &c, const unsigned char *p, size_t n, int width, uint32_t cluster) {
    for (size_t i = 0; i < n; i += width)
        c.offsets.push_back(load_le(p + i, width));
    for (size_t i = c.offsets.size() - n / width; i < c.offsets.size(); i++)
        check_offset(c.offsets[i], c.offsets[i - 1], kMaxCluster, cluster);
}

// A zstd cluster is decoded in one piece, straight into one buffer
// (ZSTD_d_stableOutBuffer), offset table included. So its decoder needs no
// window of its own: libzim's frames carry no content size, and the
// buffered decoder of a level-19 frame holds 8.5 MiB while its cluster is
// partly decoded, more than most clusters' data (and was not counted).
// Decoding into place also saves the copy out of the window. The buffer is
// sized before the table is read, from the compressed size (text compresses
// 3-8x here); a cluster that decodes larger, or a libzstd without the mode,
// takes the segment path (false, nothing kept).
bool start_whole(Cluster &c, const OpenFile &f, const Header &h, uint32_t cluster, int width) {
    const uint64_t next = cluster + 1 < h.clusters
                              ? read_le(f, h.cluster_ptr_pos + 8 * (uint64_t)(cluster + 1), 8)
                              : f.size;
    const uint64_t compressed = next > c.data_pos ? next - c.data_pos : f.size - std::min(f.size, c.data_pos);
    const uint64_t cap = std::min<uint64_t>(kWholeMax, std::max<uint64_t>(kWholeRatio * compressed, kWholeMin));
    std::unique_ptr<Stream> s(new Stream(Codec::zstd, c.data_pos, f.size, true));
    if (!s->stable())
        return false;
    c.whole_touched = std::make_shared<std::atomic<size_t>>(0);
    c.whole = whole_buffer((size_t)cap, c.whole_touched);
    c.whole_cap = (size_t)cap;
    c.whole_mapped = ZS_MAP_BUFFERS && cap >= kPooledFrom;
    c.decoded = 0;
    c.stream = std::move(s);
    unsigned char *p = reinterpret_cast<unsigned char *>(c.whole.get());
    // False when a block does not fit in the buffer.
    const auto upto = [&](uint64_t n) {
        return c.stream->decode_stable(f, c.whole.get(), (size_t)cap, &c.decoded, (size_t)n, cluster);
    };
    const auto give_up = [&] {  // decodes larger than its buffer: segments
        c.stream.reset();
        c.whole.reset();
        c.whole_touched.reset();
        c.offsets.clear();
        c.decoded = 0;
        return false;
    };
    if (!upto(width))
        return give_up();
    const uint64_t first = first_offset(p, width, kMaxCluster, cluster);
    if (first > cap || !upto(first))
        return give_up();
    c.offsets.assign(1, first);
    append_offsets(c, p + width, (size_t)(first - width), width, cluster);
    const uint64_t total = c.offsets.back();
    if (total > cap)
        return give_up();
    if (cap < kPooledFrom && total < cap) {
        // Small: decoded whole now, and only its bytes kept, in a buffer of
        // their size (malloc's memory counts whole). A failure keeps what
        // was decoded before it readable, as a later read's would.
        bool done = false;
        try {
            done = upto(total);
        } catch (const zim::ZimFileFormatError &ex) {
            c.error = ex.what();  // start() publishes what came before
            c.stream.reset();
            account_whole(c);
            return true;
        }
        if (!done)
            return give_up();
        std::shared_ptr<char> exact(new char[total], std::default_delete<char[]>());
        std::memcpy(exact.get(), c.whole.get(), (size_t)total);
        c.whole = std::move(exact);
        c.whole_cap = (size_t)total;
        c.whole_touched->store((size_t)total, std::memory_order_relaxed);
        c.stream.reset();
    }
    account_whole(c);
    return true;
}

// Under c.mu, on the stream: blobs [ready, k) for every blob now decoded.
void publish_whole(Cluster &c) {
    uint32_t i = c.ready.load(std::memory_order_relaxed);
    while (i < c.blob_count() && c.offsets[i + 1] <= c.decoded) {
        c.blobs[i] = std::shared_ptr<const char>(c.whole, c.whole.get() + c.offsets[i]);
        i++;
    }
    c.ready.store(i, std::memory_order_release);
    if (i == c.blob_count())
        c.stream.reset();  // its decoder goes back to this thread
}

void decode_whole(Cluster &c, const OpenFile &f, uint32_t cluster, uint64_t target);

// Under c.mu, on the stream: decodes the one-piece cluster to at least
// target. What was decoded before a failure is published too: those blobs
// stay readable.
void advance_whole(Cluster &c, const OpenFile &f, uint32_t cluster, uint64_t target) {
    try {
        decode_whole(c, f, cluster, target);
    } catch (...) {
        account_whole(c);
        publish_whole(c);
        throw;
    }
    account_whole(c);
    publish_whole(c);
}

void decode_whole(Cluster &c, const OpenFile &f, uint32_t cluster, uint64_t target) {
    if (c.decoded >= target)
        return;  // decoded already (a small cluster, whole at its start)
    const size_t cap = c.whole_cap;
    if (c.stream->stable() &&
        !c.stream->decode_stable(f, c.whole.get(), cap, &c.decoded, (size_t)target, cluster)) {
        // A block runs past the table's end: the rest the buffered way,
        // into the same buffer, from the frame's start.
        std::unique_ptr<Stream> b(new Stream(Codec::zstd, c.data_pos, f.size));
        b->skip(f, c.decoded, cluster);
        c.stream = std::move(b);
    }
    if (!c.stream->stable() && c.decoded < target) {
        c.stream->decode(f, c.whole.get() + c.decoded, (size_t)target - c.decoded, cluster);
        c.decoded = (size_t)target;
    }
}

// The segment path's table: read through a buffered stream, in steps, so
// that a corrupt table size fails when the stream ends, before anything that
// large is allocated.
void start_segments(Cluster &c, const OpenFile &f, uint32_t cluster, unsigned char info, int width) {
    c.stream.reset(new Stream(codec_of(info), c.data_pos, f.size));
    unsigned char b[8];
    c.stream->decode(f, reinterpret_cast<char *>(b), (size_t)width, cluster);
    const uint64_t first = first_offset(b, width, kMaxCluster, cluster);
    c.offsets.assign(1, first);
    unsigned char step[4096];
    for (uint64_t left = first - width; left > 0;) {
        const size_t n = (size_t)std::min<uint64_t>(left, sizeof step);
        c.stream->decode(f, reinterpret_cast<char *>(step), n, cluster);
        append_offsets(c, step, n, width, cluster);
        left -= n;
    }
}

// Reads the offset table: its first entry is the table's own size.
void start(Cluster &c, const OpenFile &f, const Header &h, uint32_t cluster, uint64_t pos,
           unsigned char info) {
    const int width = (info & 0x10) ? 8 : 4;
    c.data_pos = pos + 1;
    c.stream_held = 0;
    if (codec_of(info) != Codec::zstd || !start_whole(c, f, h, cluster, width))
        start_segments(c, f, cluster, info, width);
    c.blobs.reset(new std::shared_ptr<const char>[c.blob_count()]);
    c.held.fetch_add(c.offsets.capacity() * sizeof(uint64_t) + c.blob_count() * sizeof(c.blobs[0]),
                     std::memory_order_relaxed);
    if (c.whole)
        publish_whole(c);  // the blobs decoded with the table (a small cluster: all)
    if (c.blob_count() == 0)
        c.stream.reset();
    c.started.store(true, std::memory_order_release);
}

// A blob larger than a segment, in a buffer of its own grown as its bytes
// are decoded: a corrupt size costs what the stream really holds.
// *held is set to the memory it takes.
std::shared_ptr<char> decode_large(Stream &s, const OpenFile &f, uint64_t size, uint32_t cluster,
                                   size_t *held) {
    size_t cap = kSegment, done = 0;
    if (ZS_MAP_BUFFERS) {
        Mapped buf = large_buffer(size);
        cap = buf.size();
        for (;;) {
            const size_t n = (size_t)std::min<uint64_t>(cap, size) - done;
            s.decode(f, buf.get() + done, n, cluster);
            done += n;
            if (done == size) {
                *held = cap;
                return buf.release(large_pool());
            }
            cap = (size_t)std::min<uint64_t>(2 * (uint64_t)cap, size);
            buf.grow(cap);
        }
    }
    *held = (size_t)size;
    std::unique_ptr<char, void (*)(void *)> buf((char *)std::malloc(cap), &std::free);
    if (!buf)
        throw std::bad_alloc();
    for (;;) {
        const size_t n = (size_t)std::min<uint64_t>(cap, size) - done;
        s.decode(f, buf.get() + done, n, cluster);
        done += n;
        if (done == size)
            return std::shared_ptr<char>(buf.release(), &std::free);
        const size_t grown = (size_t)std::min<uint64_t>(2 * (uint64_t)cap, size);
        char *p = (char *)std::realloc(buf.get(), grown);
        if (!p)
            throw std::bad_alloc();
        (void)buf.release();  // realloc moved or freed it
        buf.reset(p);
        cap = grown;
    }
}

// Under c.mu, on the stream: decodes blob `ready`, the next one.
void decode_next(Cluster &c, const OpenFile &f, uint32_t cluster) {
    const uint32_t i = c.ready.load(std::memory_order_relaxed);
    const uint64_t size = c.offsets[i + 1] - c.offsets[i];
    if (size > kSegment) {
        size_t held = 0;
        c.blobs[i] = decode_large(*c.stream, f, size, cluster, &held);
        c.held.fetch_add(held, std::memory_order_relaxed);
    } else {
        // (An empty blob still needs a segment: a view is never null.)
        if (size > c.seg_size - c.seg_used || !c.segment) {
            // At most what the table says is left: a small cluster gets a small segment.
            size_t n = (size_t)std::min<uint64_t>(kSegment, c.offsets.back() - c.offsets[i]);
            c.segment = segment_buffer(&n);
            c.seg_size = n;
            c.seg_used = 0;
            c.held.fetch_add(n, std::memory_order_relaxed);
        }
        char *p = c.segment.get() + c.seg_used;
        c.stream->decode(f, p, (size_t)size, cluster);
        c.seg_used += (size_t)size;
        c.blobs[i] = std::shared_ptr<const char>(c.segment, p);
    }
    c.ready.store(i + 1, std::memory_order_release);
    if (i + 1 == c.blob_count()) {
        c.stream.reset();  // its decoder goes back to this thread
        c.segment.reset();
    }
}

zim::Blob view(const Cluster &c, uint32_t blob) {
    return zim::Blob(c.blobs[blob], (zim::size_type)(c.offsets[blob + 1] - c.offsets[blob]));
}

// The blob, if the cluster has decoded it already: no lock taken.
bool decoded_blob(const Cluster &c, uint32_t blob, zim::Blob *out) {
    if (!c.started.load(std::memory_order_acquire) || blob >= c.ready.load(std::memory_order_acquire))
        return false;
    *out = view(c, blob);
    return true;
}

// Under c.mu: the cluster's offset table, read if not yet.
void ensure_started(Cluster &c, const OpenFile &f, const Header &h, uint32_t cluster,
                    unsigned char info) {
    if (c.started.load(std::memory_order_relaxed))
        return;
    on_stream(c, cluster, [&] {
        start(c, f, h, cluster, read_le(f, h.cluster_ptr_pos + 8 * (uint64_t)cluster, 8), info);
    });
}

// A decoder above this is not kept for a partly decoded cluster.
const size_t kKeepDecoder = size_t(1) << 20;

// Under c.mu, the blob asked for decoded: a cluster whose decoder costs more
// than its data is likely to (liblzma's dictionary, a buffered zstd window:
// 8 MiB and more) is decoded to its end now, so the decoder goes. Counted in
// the budget, such a decoder would crowd out the decoded clusters (xz reads
// ran 3x slower at 16 MiB); the rest of a cluster costs less to decode now
// than again from its start once evicted. A failure there is the later
// blobs' (kept in c.error), not this read's.
void finish_costly(Cluster &c, const OpenFile &f, uint32_t cluster) {
    try {
        while (c.stream && c.stream_held > kKeepDecoder)
            on_stream(c, cluster, [&] { decode_next(c, f, cluster); });
    } catch (const std::exception &) {
    }
}

// Under c.mu: decodes up to the end of blob.
zim::Blob blob_of(Cluster &c, const OpenFile &f, uint32_t cluster, uint32_t blob) {
    if (blob >= c.blob_count())
        no_blob(cluster, blob, c.blob_count());
    if (c.whole && c.ready.load(std::memory_order_relaxed) <= blob)
        on_stream(c, cluster, [&] { advance_whole(c, f, cluster, c.offsets[blob + 1]); });
    while (c.ready.load(std::memory_order_relaxed) <= blob)
        on_stream(c, cluster, [&] { decode_next(c, f, cluster); });
    finish_costly(c, f, cluster);
    return view(c, blob);
}

// An uncompressed cluster's blob, read from the file into memory of its own
// (a view of a map would fault if the file were truncated later), after the
// same checks of its offset table as a compressed one's: libzim 8.1.1
// reserves a vector from the table's first entry unchecked. With data false,
// only its size is set.
void stored_blob(const OpenFile &f, const Header &h, uint32_t cluster, uint32_t blob,
                 unsigned char info, bool data, zim::Blob *out, uint64_t *size) {
    const int width = (info & 0x10) ? 8 : 4;
    const uint64_t table = read_le(f, h.cluster_ptr_pos + 8 * (uint64_t)cluster, 8) + 1;
    if (table > f.size)
        corrupt(cluster, "starts past the archive's end");
    const uint64_t room = f.size - table;  // the table and blobs lie in the archive
    unsigned char b[8];
    f.read(table, b, (size_t)width);
    const uint64_t first = first_offset(b, width, room, cluster);
    const uint64_t count = first / width - 1;
    if (blob >= count)
        no_blob(cluster, blob, (size_t)count);
    // The whole table, in steps, checked for order as libzim 9 checks it;
    // like libzim 9, only this blob must lie in the archive (a damaged end
    // of the cluster costs the blobs there, not the ones before).
    uint64_t previous = first, begin = 0, end = 0;
    unsigned char step[4096];
    for (uint64_t i = 1; i <= count;) {
        const uint64_t n = std::min<uint64_t>(count + 1 - i, sizeof step / width);
        f.read(table + i * width, step, (size_t)(n * width));
        for (uint64_t j = 0; j < n; j++, i++) {
            const uint64_t v = load_le(step + j * width, width);
            check_offset(v, previous, UINT64_MAX, cluster);
            if (i == blob)
                begin = v;
            if (i == blob + 1)
                end = v;
            previous = v;
        }
    }
    if (blob == 0)
        begin = first;
    if (end > room)
        corrupt(cluster, "blob " + std::to_string(blob) + " ends past the archive's end");
    *size = end - begin;
    if (!data)
        return;
    std::shared_ptr<char> buf(new char[*size ? *size : 1], std::default_delete<char[]>());
    f.read(table + begin, buf.get(), (size_t)*size);
    *out = zim::Blob(buf, (zim::size_type)*size);
}

}  // namespace

// ---- The cache: one per file, under one byte budget for the process ----
//
// As libzim 9.3+ (python-libzim 3.13's get/set_cluster_cache_max_size): the
// budget counts the memory of decoded clusters across every file's cache,
// least recently used evicted first: each cluster's decoded data (as its
// pages are touched, or as allocated), its offset table, and while it is
// partly decoded its decoder and input buffer (a zstd cluster's stable-mode
// decoder is ~0.3 MiB; the buffered one it replaced held an uncounted 8 MiB
// window: 16 MiB reported while the process had grown 56). Unlike libzim 9, which keeps the newest cluster even when
// it alone is over the budget, nothing stays cached past the budget: a read
// holds its cluster itself (a shared_ptr), so evicting one mid-read drops
// only the cache's reference and the memory goes when the last reader's does.
// One mutex guards the budget and every cache's map; it is held for a map
// lookup and a list splice per read that misses the lock-free path, and
// evicted clusters are freed after it is released.

namespace {

struct Slot {
    ClusterCache *owner;
    uint32_t index;
    std::shared_ptr<Cluster> cluster;
    uint64_t cost;  // 0 until the cluster's size is known
};
using Lru = std::list<Slot>;  // most recently used first

// Clusters that never start (a corrupt table) cost nothing: this bounds them.
const size_t kMaxSlots = 1 << 16;
const uint64_t kDefaultBudget = uint64_t(16) << 20;  // libzim 9's default

std::mutex g_lru_mu;
// Never destroyed: a cache freed during interpreter exit (or a daemon
// thread's read then) must not meet a list that static destruction freed.
Lru &g_lru = *new Lru;
uint64_t g_budget = kDefaultBudget, g_used = 0;
std::once_flag g_budget_once;

}  // namespace

// The most recently used compressed clusters of one file.
class ClusterCache {
  public:
    explicit ClusterCache(const Header &h)
        : header(h), serial(next_serial()),
          infos_(h.clusters <= kMaxInfos ? new std::atomic<uint8_t>[h.clusters]() : nullptr) {}

    ~ClusterCache() {
        // The snippet text of this file's blobs goes with it (the serial is
        // never reused, so it could only linger).
        zsnip::text_cache_forget(serial);
        std::vector<std::shared_ptr<Cluster>> dropped;
        {
            std::lock_guard<std::mutex> lk(g_lru_mu);
            for (auto &kv : map_) {
                g_used -= kv.second->cost;
                dropped.push_back(std::move(kv.second->cluster));
                g_lru.erase(kv.second);
            }
        }
    }

    const Header header;
    // This cache's identity for the snippet text cache, unique in the process.
    const uint64_t serial;

    std::shared_ptr<Cluster> get(uint32_t index) {
        std::vector<std::shared_ptr<Cluster>> dropped;  // freed after the lock
        std::lock_guard<std::mutex> lk(g_lru_mu);
        auto it = map_.find(index);
        if (it != map_.end()) {
            g_lru.splice(g_lru.begin(), g_lru, it->second);
            return it->second->cluster;
        }
        g_lru.push_front(Slot{this, index, std::make_shared<Cluster>(), 0});
        map_[index] = g_lru.begin();
        std::shared_ptr<Cluster> out = g_lru.front().cluster;
        evict_locked(dropped);
        return out;
    }

    // After a read that may have decoded more of the cluster: charges what
    // it holds now (its memory grows with the data decoded, never with what
    // the file claims) if it is still cached, and evicts what is over.
    void charge(uint32_t index, const std::shared_ptr<Cluster> &c) {
        const uint64_t size = c->bytes_held();
        std::vector<std::shared_ptr<Cluster>> dropped;  // freed after the lock
        std::lock_guard<std::mutex> lk(g_lru_mu);
        auto it = map_.find(index);
        if (it == map_.end() || it->second->cluster != c || it->second->cost == size)
            return;
        // Down too: a cluster decoded to its end lets its decoder go.
        g_used = g_used - it->second->cost + size;
        it->second->cost = size;
        evict_locked(dropped);
    }

    // Under g_lru_mu: the least recently used go until the budget holds.
    static void evict_locked(std::vector<std::shared_ptr<Cluster>> &dropped) {
        while (!g_lru.empty() && (g_used > g_budget || g_lru.size() > kMaxSlots)) {
            Slot &s = g_lru.back();
            g_used -= s.cost;
            s.owner->map_.erase(s.index);
            dropped.push_back(std::move(s.cluster));  // readers holding it keep it
            g_lru.pop_back();
        }
    }

    // The cluster's first byte (compression and offset width), read once:
    // whether a read goes through this cache or to libzim is decided on it.
    unsigned char info(const OpenFile &f, uint32_t cluster) {
        if (infos_) {
            const uint8_t v = infos_[cluster].load(std::memory_order_relaxed);
            if (v & 0x80)
                return v & 0x7f;
        }
        unsigned char b;
        f.read(read_le(f, header.cluster_ptr_pos + 8 * (uint64_t)cluster, 8), &b, 1);
        if (infos_)
            infos_[cluster].store((uint8_t)(b | 0x80), std::memory_order_relaxed);
        return b & 0x7f;
    }

  private:
    static uint64_t next_serial() {
        static std::atomic<uint64_t> n{0};
        return ++n;
    }
    // One byte per cluster: 4 MiB at most.
    static const uint32_t kMaxInfos = 1u << 22;
    std::unordered_map<uint32_t, Lru::iterator> map_;  // under g_lru_mu
    std::unique_ptr<std::atomic<uint8_t>[]> infos_;  // 0: not read yet
};

namespace {

// Which bytes a cache holds: the file (device, inode and last change, so a
// file rewritten in place or replaced is another key) and the archive's
// range in it.
using CacheKey = std::tuple<dev_t, ino_t, int64_t, int64_t, uint64_t, uint64_t>;

std::mutex g_caches_mu;
std::map<CacheKey, std::weak_ptr<ClusterCache>> &g_caches =
    *new std::map<CacheKey, std::weak_ptr<ClusterCache>>;  // never destroyed, as g_lru

}  // namespace

// One cache per file and process: every Archive opened on the same file
// (one per thread, say) shares the decoded clusters, as copies of one
// Archive do.
std::shared_ptr<ClusterCache> make_cluster_cache(const OpenFile &f) {
    Header h;
    struct stat st;
    if (!read_header(f, &h) || ::fstat(f.fd, &st) != 0)
        return nullptr;
    const CacheKey key{st.st_dev, st.st_ino, (int64_t)st.st_mtim.tv_sec,
                       (int64_t)st.st_mtim.tv_nsec, f.offset, f.size};
    std::lock_guard<std::mutex> lk(g_caches_mu);
    for (auto it = g_caches.begin(); it != g_caches.end();)
        it = it->second.expired() ? g_caches.erase(it) : std::next(it);
    std::weak_ptr<ClusterCache> &slot = g_caches[key];
    std::shared_ptr<ClusterCache> cache = slot.lock();
    if (!cache) {
        cache = std::make_shared<ClusterCache>(h);
        slot = cache;
    }
    return cache;
}

namespace {

// Where item's content is, when that is a cluster the shim reads.
struct Where {
    uint32_t cluster, blob;
    unsigned char info;
};

// False for what libzim reads (redirects, other codecs, no header).
bool locate(const OpenFile &f, const zim::Item &item, Where *w) {
    if (!f.clusters)
        return false;
    const Header &h = f.clusters->header;
    const uint32_t index = item.getIndex();
    if (index >= h.entries)
        return false;
    const uint64_t dirent = read_le(f, h.path_ptr_pos + 8 * (uint64_t)index, 8);
    unsigned char d[16];
    f.read(dirent, d, sizeof d);
    w->cluster = (uint32_t)load_le(d + 8, 4);
    w->blob = (uint32_t)load_le(d + 12, 4);
    if (load_le(d, 2) >= 0xfffd || w->cluster >= h.clusters)
        return false;  // libzim has its own word for these
    w->info = f.clusters->info(f, w->cluster);
    return codec_of(w->info) != Codec::other;
}

bool compressed(const Where &w) { return codec_of(w.info) != Codec::none; }

}  // namespace

bool compressed_item_data(const OpenFile &f, const zim::Item &item, zim::Blob *out) {
    Where w;
    if (!locate(f, item, &w))
        return false;
    const Header &h = f.clusters->header;
    if (!compressed(w)) {
        uint64_t size;
        stored_blob(f, h, w.cluster, w.blob, w.info, true, out, &size);
        return true;
    }
    // Held for the whole read: another thread's get() may evict it meanwhile.
    const std::shared_ptr<Cluster> held = f.clusters->get(w.cluster);
    Cluster &c = *held;
    if (decoded_blob(c, w.blob, out))
        return true;
    // Charged even when the read fails: the blobs decoded before the failure
    // stay cached and readable, so they count.
    try {
        std::lock_guard<std::mutex> lk(c.mu);
        ensure_started(c, f, h, w.cluster, w.info);
        *out = blob_of(c, f, w.cluster, w.blob);
    } catch (...) {
        f.clusters->charge(w.cluster, held);
        throw;
    }
    f.clusters->charge(w.cluster, held);
    return true;
}

bool item_text_key(const OpenFile &f, const zim::Item &item, uint64_t *file, uint32_t *cluster,
                   uint32_t *blob) {
    Where w;
    if (!locate(f, item, &w))
        return false;
    *file = f.clusters->serial;
    *cluster = w.cluster;
    *blob = w.blob;
    return true;
}

bool compressed_item_size(const OpenFile &f, const zim::Item &item, uint64_t *size) {
    Where w;
    if (!locate(f, item, &w))
        return false;
    const Header &h = f.clusters->header;
    if (!compressed(w)) {
        stored_blob(f, h, w.cluster, w.blob, w.info, false, nullptr, size);
        return true;
    }
    // Held for the whole read: another thread's get() may evict it meanwhile.
    const std::shared_ptr<Cluster> held = f.clusters->get(w.cluster);
    Cluster &c = *held;
    // Sizes need the offset table only, fixed once the cluster has started.
    if (!c.started.load(std::memory_order_acquire)) {
        {
            std::lock_guard<std::mutex> lk(c.mu);
            ensure_started(c, f, h, w.cluster, w.info);
        }
        f.clusters->charge(w.cluster, held);
    }
    if (w.blob >= c.blob_count())
        no_blob(w.cluster, w.blob, c.blob_count());
    *size = c.offsets[w.blob + 1] - c.offsets[w.blob];
    return true;
}


// ---- the budget's API (python-libzim's libzim.reader cluster cache calls) ----

namespace {

// ZIM_CLUSTERCACHE counts clusters per archive for libzim 8 (default 16);
// libzim 9.3 replaced it by a byte budget of 16 MiB and ignores the variable
// (python-libzim 3.13.1 reports 16777216 whatever it says). A value set
// before `import libzim` is kept as the budget at libzim 9's own ratio,
// 16 clusters to 16 MiB: N clusters, N MiB.
void init_budget() {
    const char *env = std::getenv("ZIM_CLUSTERCACHE");
    if (!env || !*env)
        return;
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(env, &end, 10);
    if (*end || errno || env[0] == '-' || n > (UINT64_MAX >> 20))
        return;  // not a count: libzim 8 would read a prefix; keep the default
    std::lock_guard<std::mutex> lk(g_lru_mu);
    g_budget = (uint64_t)n << 20;
}

}  // namespace

}  // namespace zs_impl

using namespace zs_impl;

extern "C" void zs_cluster_cache_init(void) {
    try {
        std::call_once(g_budget_once, init_budget);
    } catch (...) {
        // Only std::system_error from the lock: the default budget stays.
    }
}

extern "C" int zs_cluster_cache_sizes(uint64_t *max, uint64_t *current, zs_error *err) {
    return guarded(err, -1, [&] {
        std::lock_guard<std::mutex> lk(g_lru_mu);
        *max = g_budget;
        *current = g_used;
        return 0;
    });
}

extern "C" int zs_cluster_cache_set_max(uint64_t bytes, zs_error *err) {
    return guarded(err, -1, [&] {
        std::vector<std::shared_ptr<Cluster>> dropped;  // freed after the lock
        std::lock_guard<std::mutex> lk(g_lru_mu);
        g_budget = bytes;
        ClusterCache::evict_locked(dropped);
        return 0;
    });
}
