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
// does, and resumes from there for a later blob. There is one cache per file
// in the process, shared by every Archive opened on it and every libzim copy
// of those (pooled searchers, spare lookup copies), where libzim keeps one
// per copy.
#include "zimshim_impl.hpp"

#include <lzma.h>
#include <zstd.h>

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

#include <sys/stat.h>

namespace zs_impl {

namespace {

const size_t kChunk = 64 * 1024;
// A cluster's decoded size is allocated at once, so a blob handed out is a
// view that never moves (it keeps the cluster's memory alive). Compressed
// clusters hold text; a size past this is a corrupt offset table.
const uint64_t kMaxCluster = uint64_t(4) << 30;

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

// One compressed stream, read from the file as it is decoded.
class Stream {
  public:
    Stream(Codec codec, uint64_t pos, uint64_t end) : codec_(codec), pos_(pos), end_(end) {
        if (codec == Codec::zstd) {
            zs_ = ZSTD_createDStream();
            if (!zs_ || ZSTD_isError(ZSTD_initDStream(zs_)))
                throw std::bad_alloc();
        } else if (lzma_stream_decoder(&xz_, 1000000000, 0) != LZMA_OK) {
            // libzim's memory limit for an xz cluster.
            throw std::bad_alloc();
        }
    }
    ~Stream() {
        if (zs_)
            ZSTD_freeDStream(zs_);
        lzma_end(&xz_);
    }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    // Decodes exactly len bytes into out, or throws (cluster names the
    // cluster in the message).
    void decode(const OpenFile &f, char *out, size_t len, uint32_t cluster) {
        size_t done = 0;
        while (done < len) {
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

  private:
    void refill(const OpenFile &f) {
        const size_t n = (size_t)std::min<uint64_t>(kChunk, end_ - std::min(end_, pos_));
        if (!in_)
            in_.reset(new char[kChunk]);
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
        if (r == 0 && o.pos == 0)
            corrupt(cluster, "the compressed data ends before the cluster does");
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
        if (r == LZMA_STREAM_END && got == 0)
            corrupt(cluster, "the compressed data ends before the cluster does");
        if (r != LZMA_OK && r != LZMA_STREAM_END)
            corrupt(cluster, "xz error " + std::to_string((int)r));
        return got;
    }

    Codec codec_;
    uint64_t pos_, end_;  // next compressed byte to read; the archive's end
    std::unique_ptr<char[]> in_;
    size_t in_off_ = 0, in_len_ = 0;
    ZSTD_DStream *zs_ = nullptr;
    lzma_stream xz_ = LZMA_STREAM_INIT;
};

uint64_t read_le(const OpenFile &f, uint64_t pos, int width) {
    unsigned char b[8];
    f.read(pos, b, (size_t)width);
    return load_le(b, width);
}

}  // namespace

// A compressed cluster, decoded as far as reads have needed.
// Reads of blobs already decoded take no lock: offsets and data are set once,
// before `started` is published, and bytes below `ready` never change. mu
// serialises decoding (and guards error and stream). (Publishing each decoded
// step to waiting threads was tried: more wake-ups, slower.)
struct Cluster {
    std::mutex mu;
    std::atomic<bool> started{false};
    std::string error;                  // set once: later decoding throws it
    std::vector<uint64_t> offsets;      // blob i is [offsets[i], offsets[i+1])
    std::shared_ptr<char> data;         // offsets.back() bytes, decoded up to `ready`
    std::atomic<uint64_t> ready{0};
    std::unique_ptr<Stream> stream;     // null once fully decoded
};

namespace {

// Reads the offset table: its first entry is the table's own size.
void start(Cluster &c, const OpenFile &f, uint32_t cluster, uint64_t pos, unsigned char info) {
    c.stream.reset(new Stream(codec_of(info), pos + 1, f.size));
    const int width = (info & 0x10) ? 8 : 4;
    unsigned char b[8];
    c.stream->decode(f, reinterpret_cast<char *>(b), (size_t)width, cluster);
    const uint64_t first = load_le(b, width);
    if (first < (uint64_t)width || first % width || first > kMaxCluster)
        corrupt(cluster, "bad offset table size " + std::to_string(first));
    // Read in steps: a corrupt table size then fails when the stream ends,
    // before anything that large is allocated.
    c.offsets.assign(1, first);
    char step[4096];
    for (uint64_t left = first - width; left > 0;) {
        const size_t n = (size_t)std::min<uint64_t>(left, sizeof step);
        c.stream->decode(f, step, n, cluster);
        for (size_t i = 0; i < n; i += width) {
            const uint64_t v = load_le(reinterpret_cast<unsigned char *>(step + i), width);
            if (v < c.offsets.back() || v > kMaxCluster)
                corrupt(cluster, "blob offsets out of order");
            c.offsets.push_back(v);
        }
        left -= n;
    }
    // Address space only: pages are touched as they are decoded.
    c.data.reset(new char[(size_t)(c.offsets.back() - first) + 1], std::default_delete<char[]>());
    c.ready.store(first, std::memory_order_relaxed);
    c.started.store(true, std::memory_order_release);
}

// Runs f(c) under the cluster's lock, its offset table read; an error is
// kept, and every later read that needs more of the cluster throws it again
// (blobs decoded before it stay readable).
template <class F>
auto with_cluster(Cluster &c, const OpenFile &f, const Header &h, uint32_t cluster,
                  unsigned char info, F &&fn) -> decltype(fn()) {
    std::lock_guard<std::mutex> lk(c.mu);
    if (!c.error.empty())
        throw zim::ZimFileFormatError(c.error);
    try {
        if (!c.started.load(std::memory_order_relaxed))
            start(c, f, cluster, read_le(f, h.cluster_ptr_pos + 8 * (uint64_t)cluster, 8), info);
        return fn();
    } catch (const std::exception &ex) {
        // Whatever failed (corrupt data, a read error, memory), the stream
        // stopped at an unknown point: decoding on from it would misplace bytes.
        c.error = dynamic_cast<const zim::ZimFileFormatError *>(&ex)
                      ? ex.what()
                      : "cluster " + std::to_string(cluster) + ": an earlier read failed: " + ex.what();
        c.stream.reset();
        throw;
    }
}

// libzim gives an empty blob, of size 0, for a blob number past the cluster.
bool in_cluster(const Cluster &c, uint32_t blob) { return (size_t)blob + 1 < c.offsets.size(); }

zim::Blob view(const Cluster &c, uint32_t blob) {
    const uint64_t base = c.offsets.front(), b = c.offsets[blob], e = c.offsets[blob + 1];
    return zim::Blob(std::shared_ptr<const char>(c.data, c.data.get() + (b - base)),
                     (zim::size_type)(e - b));
}

// The blob, if the cluster has decoded it already: no lock taken.
bool decoded_blob(const Cluster &c, uint32_t blob, zim::Blob *out) {
    if (!c.started.load(std::memory_order_acquire))
        return false;
    if (!in_cluster(c, blob))
        *out = zim::Blob();
    else if (c.offsets[blob + 1] <= c.ready.load(std::memory_order_acquire))
        *out = view(c, blob);
    else
        return false;
    return true;
}

// Under c.mu: decodes up to the end of blob.
zim::Blob blob_of(Cluster &c, const OpenFile &f, uint32_t cluster, uint32_t blob) {
    if (!in_cluster(c, blob))
        return zim::Blob();
    const uint64_t base = c.offsets.front(), e = c.offsets[blob + 1];
    const uint64_t ready = c.ready.load(std::memory_order_relaxed);
    if (e > ready) {
        c.stream->decode(f, c.data.get() + (ready - base), (size_t)(e - ready), cluster);
        c.ready.store(e, std::memory_order_release);
        if (e == c.offsets.back())
            c.stream.reset();
    }
    return view(c, blob);
}

}  // namespace

// ---- The cache: one per file, under one byte budget for the process ----
//
// As libzim 9.3+ (python-libzim 3.13's get/set_cluster_cache_max_size): the
// budget counts bytes of decoded cluster data (a cluster's whole decoded
// size, offset table included, charged once its offset table is read, since
// that is what it allocates), across every file's cache, least recently used
// evicted first. Unlike libzim 9, which keeps the newest cluster even when
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

uint64_t decoded_size(const Cluster &c) {
    return c.started.load(std::memory_order_acquire) ? c.offsets.back() : 0;
}

}  // namespace

// The most recently used compressed clusters of one file.
class ClusterCache {
  public:
    explicit ClusterCache(const Header &h)
        : header(h),
          infos_(h.clusters <= kMaxInfos ? new std::atomic<uint8_t>[h.clusters]() : nullptr) {}

    ~ClusterCache() {
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

    // After a read that may have started the cluster: charges its size to
    // the budget once (if it is still cached) and evicts what is over.
    void charge(uint32_t index, const std::shared_ptr<Cluster> &c) {
        const uint64_t size = decoded_size(*c);
        if (!size)
            return;
        std::vector<std::shared_ptr<Cluster>> dropped;
        std::lock_guard<std::mutex> lk(g_lru_mu);
        auto it = map_.find(index);
        if (it == map_.end() || it->second->cluster != c || it->second->cost)
            return;
        it->second->cost = size;
        g_used += size;
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

// Where item's content is, when that is a zstd or xz cluster.
struct Where {
    uint32_t cluster, blob;
    unsigned char info;
};

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
    const Codec codec = codec_of(w->info);
    return codec == Codec::xz || codec == Codec::zstd;
}

}  // namespace

bool compressed_item_data(const OpenFile &f, const zim::Item &item, zim::Blob *out) {
    Where w;
    if (!locate(f, item, &w))
        return false;
    // Held for the whole read: another thread's get() may evict it meanwhile.
    const std::shared_ptr<Cluster> held = f.clusters->get(w.cluster);
    Cluster &c = *held;
    if (decoded_blob(c, w.blob, out))
        return true;
    *out = with_cluster(c, f, f.clusters->header, w.cluster, w.info,
                        [&] { return blob_of(c, f, w.cluster, w.blob); });
    f.clusters->charge(w.cluster, held);
    return true;
}

bool compressed_item_size(const OpenFile &f, const zim::Item &item, uint64_t *size) {
    Where w;
    if (!locate(f, item, &w))
        return false;
    // Held for the whole read: another thread's get() may evict it meanwhile.
    const std::shared_ptr<Cluster> held = f.clusters->get(w.cluster);
    Cluster &c = *held;
    auto blob_size = [&]() -> uint64_t {
        return in_cluster(c, w.blob) ? c.offsets[w.blob + 1] - c.offsets[w.blob] : 0;
    };
    // Sizes need the offset table only, fixed once the cluster has started.
    if (c.started.load(std::memory_order_acquire))
        *size = blob_size();
    else {
        *size = with_cluster(c, f, f.clusters->header, w.cluster, w.info, blob_size);
        f.clusters->charge(w.cluster, held);
    }
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
