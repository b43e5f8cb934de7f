// The shim's cluster reader as its files share it: what one of them defines
// and another calls, declared once here. The reader (why it exists: see
// zimshim_cluster.cpp) was one file of 1,248 lines, past the ~900 the
// architecture page sets; it is split by concern: buffers and stream at the
// bottom (neither uses the other), blobs over both, the cache over blobs, and
// the entry points over all:
//
//   zimshim_cluster_buffers.cpp  where decoded bytes live: the map pools, segments, large blobs' and
//                                whole clusters' buffers
//   zimshim_cluster_stream.cpp   one compressed stream read with pread: the zstd and xz decoders and
//                                each thread's spare decoder contexts
//   zimshim_cluster_blobs.cpp    a cluster: its offset table and its blobs, decoded as far as reads
//                                need (in one piece for zstd, in segments for xz); stored clusters' blobs
//   zimshim_cluster_cache.cpp    the cache of one file's clusters, under one byte budget for the
//                                process, and the one cache per file
//   zimshim_cluster.cpp          an item's content and size through the cache (what the rest of the
//                                shim calls), and the budget's extern "C" calls
//
// Internal to those files (no other file includes it); never includes Python.h.
#ifndef ZIMSHIM_CLUSTER_HPP
#define ZIMSHIM_CLUSTER_HPP

#include "zimshim_impl.hpp"

#include <lzma.h>
// ZSTD_d_stableOutBuffer is in zstd's experimental API (stable since 1.4.x;
// Debian 12 has 1.5.4); ZSTD_DCtx_setParameter says at run time whether the
// library takes it, and a decoder that does not is used the buffered way.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

// The reader's own names, apart from the rest of the shim's zs_impl (as the
// snippet engine's are in zsnip); only ClusterCache, which OpenFile holds,
// is zs_impl's.
namespace zs_cluster {

using zs_impl::Header;
using zs_impl::load_le;
using zs_impl::OpenFile;

// ---- where decoded bytes live (zimshim_cluster_buffers.cpp) ----

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

// A new anonymous map of n bytes, or std::bad_alloc.
char *map_or_throw(size_t n);

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
    Map take(uint64_t lo, uint64_t hi);
    // m back to the pool, or unmapped when the pool is full.
    void give(const Map &m);
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

// The two pools (segments; large blobs and whole clusters), never destroyed:
// a buffer may outlive static destruction in a cache of another static object.
MapPool &segment_pool();
MapPool &large_pool();

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
    void grow(size_t n);
    // Ownership to a shared_ptr that gives the map to pool.
    std::shared_ptr<char> release(MapPool &pool);

  private:
    char *p_;
    size_t n_;
};

// A segment of at least *n bytes (and one), *n set to its size: a pooled
// full segment from kPooledFrom bytes up, else from malloc.
std::shared_ptr<char> segment_buffer(size_t *n);
// For a blob larger than a segment: a spare map of at least size bytes and
// at most twice that, else a new one of a segment's size, grown as the blob's
// bytes are decoded (a corrupt size costs what the stream holds, not what it
// claims).
Mapped large_buffer(uint64_t size);
// The buffer of a cluster decoded in one piece, from malloc when small (*touched
// then its size: malloc's memory counts whole), else a map (pooled, as large
// blobs'; *touched its pages resident already, 0 for a new one).
std::shared_ptr<char> whole_buffer(size_t size, std::shared_ptr<std::atomic<size_t>> touched);

// ---- one compressed stream (zimshim_cluster_stream.cpp) ----

const size_t kChunk = 64 * 1024;

enum class Codec { none, xz, zstd, other };

inline Codec codec_of(unsigned char info) {
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

// A corrupt cluster: zim::ZimFileFormatError naming it.
[[noreturn]] void corrupt(uint32_t cluster, const std::string &what);
// The cluster has no blob number blob (it has blobs of them).
[[noreturn]] void no_blob(uint32_t cluster, uint32_t blob, size_t blobs);

// One compressed stream, read from the file as it is decoded.
class Stream {
  public:
    // stable (zstd only): decode_stable() into one buffer, if the library
    // takes ZSTD_d_stableOutBuffer (stable() says).
    Stream(Codec codec, uint64_t pos, uint64_t end, bool stable = false);
    ~Stream() { release(); }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    // Decodes exactly len bytes into out, or throws (cluster names the
    // cluster in the message).
    void decode(const OpenFile &f, char *out, size_t len, uint32_t cluster);

    // Decodes n bytes and drops them.
    void skip(const OpenFile &f, uint64_t n, uint32_t cluster);

    bool stable() const { return stable_; }

    // Stable mode: decodes into out[0, cap), from *pos (where the last call
    // left it: zstd requires the same buffer) until *pos >= target; zstd may
    // decode further, up to cap. False when a block does not fit in cap (the
    // frame runs past its offset table: corrupt); the caller decodes on the
    // buffered way then.
    bool decode_stable(const OpenFile &f, char *out, size_t cap, size_t *pos, size_t target,
                       uint32_t cluster);

    // What the stream holds: its input buffer and its decoder (for zstd's
    // buffered mode a window of up to 8 MiB; liblzma's dictionary).
    size_t memory() const;

  private:
    void acquire();
    void release();
    void refill(const OpenFile &f);
    size_t step_zstd(char *out, size_t len, uint32_t cluster);
    size_t step_xz(char *out, size_t len, uint32_t cluster);

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

// The little-endian number of width bytes at pos of the archive.
inline uint64_t read_le(const OpenFile &f, uint64_t pos, int width) {
    unsigned char b[8];
    f.read(pos, b, (size_t)width);
    return load_le(b, width);
}

// ---- a cluster, decoded blob by blob (zimshim_cluster_blobs.cpp) ----

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

inline zim::Blob view(const Cluster &c, uint32_t blob) {
    return zim::Blob(c.blobs[blob], (zim::size_type)(c.offsets[blob + 1] - c.offsets[blob]));
}

// The blob, if the cluster has decoded it already: no lock taken.
inline bool decoded_blob(const Cluster &c, uint32_t blob, zim::Blob *out) {
    if (!c.started.load(std::memory_order_acquire) || blob >= c.ready.load(std::memory_order_acquire))
        return false;
    *out = view(c, blob);
    return true;
}

// Under c.mu: the cluster's offset table, read if not yet.
void ensure_started(Cluster &c, const OpenFile &f, const Header &h, uint32_t cluster,
                    unsigned char info);
// Under c.mu: decodes up to the end of blob.
zim::Blob blob_of(Cluster &c, const OpenFile &f, uint32_t cluster, uint32_t blob);
// An uncompressed cluster's blob, read from the file into memory of its own
// (a view of a map would fault if the file were truncated later), after the
// same checks of its offset table as a compressed one's: libzim 8.1.1
// reserves a vector from the table's first entry unchecked. With data false,
// only its size is set.
void stored_blob(const OpenFile &f, const Header &h, uint32_t cluster, uint32_t blob,
                 unsigned char info, bool data, zim::Blob *out, uint64_t *size);

// ---- the cache (zimshim_cluster_cache.cpp) ----

// A cached cluster in the process's list, with the file's cache that holds it.
struct Slot {
    zs_impl::ClusterCache *owner;
    uint32_t index;
    std::shared_ptr<Cluster> cluster;
    uint64_t cost;  // 0 until the cluster's size is known
};
using Lru = std::list<Slot>;  // most recently used first

// The process's budget (python-libzim's libzim.reader cluster cache calls):
// ZIM_CLUSTERCACHE read once, the budget and the bytes cached, a new budget
// (what is over it evicted at once).
void init_budget_once();
void budget_sizes(uint64_t *max, uint64_t *current);
void set_budget(uint64_t bytes);

}  // namespace zs_cluster

namespace zs_impl {

// The most recently used compressed clusters of one file.
class ClusterCache {
  public:
    explicit ClusterCache(const Header &h);
    ~ClusterCache();

    const Header header;
    // This cache's identity for the snippet text cache, unique in the process.
    const uint64_t serial;

    // The cluster, cached (a new, unstarted one if it was not), held by the
    // caller for its whole read: another thread's get() may evict it meanwhile.
    std::shared_ptr<zs_cluster::Cluster> get(uint32_t index);

    // After a read that may have decoded more of the cluster: charges what
    // it holds now (its memory grows with the data decoded, never with what
    // the file claims) if it is still cached, and evicts what is over.
    void charge(uint32_t index, const std::shared_ptr<zs_cluster::Cluster> &c);

    // Under the budget's lock: the least recently used go until the budget
    // holds (into dropped, freed by the caller after the lock).
    static void evict_locked(std::vector<std::shared_ptr<zs_cluster::Cluster>> &dropped);

    // The cluster's first byte (compression and offset width), read once:
    // whether a read goes through this cache or to libzim is decided on it.
    unsigned char info(const OpenFile &f, uint32_t cluster) {
        if (infos_) {
            const uint8_t v = infos_[cluster].load(std::memory_order_relaxed);
            if (v & 0x80)
                return v & 0x7f;
        }
        unsigned char b;
        f.read(zs_cluster::read_le(f, header.cluster_ptr_pos + 8 * (uint64_t)cluster, 8), &b, 1);
        if (infos_)
            infos_[cluster].store((uint8_t)(b | 0x80), std::memory_order_relaxed);
        return b & 0x7f;
    }

  private:
    static uint64_t next_serial();
    // One byte per cluster: 4 MiB at most.
    static const uint32_t kMaxInfos = 1u << 22;
    std::unordered_map<uint32_t, zs_cluster::Lru::iterator> map_;  // under the budget's lock
    std::unique_ptr<std::atomic<uint8_t>[]> infos_;  // 0: not read yet
};

}  // namespace zs_impl

#endif
