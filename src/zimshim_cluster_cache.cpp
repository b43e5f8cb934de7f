// The cluster reader's cache: the decoded clusters of one file, least
// recently used evicted first, under one byte budget for the whole process
// (python-libzim's cluster cache calls, and ZIM_CLUSTERCACHE read once), and
// the one cache per file that every Archive of it and their copies share.
// Apart from the decoding (zimshim_cluster_blobs.cpp) because its lock and
// its list are the process's, where a Cluster's are its own: a read takes
// the budget's lock for a lookup and a splice only.
#include "zimshim_cluster.hpp"
#include "zimshim_snippet.hpp"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <tuple>

#include <sys/stat.h>

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

namespace zs_cluster {

namespace {

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

}  // namespace zs_cluster

using namespace zs_cluster;

namespace zs_impl {

ClusterCache::ClusterCache(const Header &h)
    : header(h), serial(next_serial()),
      infos_(h.clusters <= kMaxInfos ? new std::atomic<uint8_t>[h.clusters]() : nullptr) {}

ClusterCache::~ClusterCache() {
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

std::shared_ptr<Cluster> ClusterCache::get(uint32_t index) {
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

void ClusterCache::charge(uint32_t index, const std::shared_ptr<Cluster> &c) {
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

void ClusterCache::evict_locked(std::vector<std::shared_ptr<Cluster>> &dropped) {
    while (!g_lru.empty() && (g_used > g_budget || g_lru.size() > kMaxSlots)) {
        Slot &s = g_lru.back();
        g_used -= s.cost;
        s.owner->map_.erase(s.index);
        dropped.push_back(std::move(s.cluster));  // readers holding it keep it
        g_lru.pop_back();
    }
}

uint64_t ClusterCache::next_serial() {
    static std::atomic<uint64_t> n{0};
    return ++n;
}

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

}  // namespace zs_impl

// ---- the budget's API (python-libzim's libzim.reader cluster cache calls) ----

namespace zs_cluster {

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

void init_budget_once() { std::call_once(g_budget_once, init_budget); }

void budget_sizes(uint64_t *max, uint64_t *current) {
    std::lock_guard<std::mutex> lk(g_lru_mu);
    *max = g_budget;
    *current = g_used;
}

void set_budget(uint64_t bytes) {
    std::vector<std::shared_ptr<Cluster>> dropped;  // freed after the lock
    std::lock_guard<std::mutex> lk(g_lru_mu);
    g_budget = bytes;
    zs_impl::ClusterCache::evict_locked(dropped);
}

}  // namespace zs_cluster
