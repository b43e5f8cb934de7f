// The snippet engine's cache of article text: for a search hit's blob, the
// visible text the engine's Builder scans (whitespace collapsed, navigation
// dropped: what Builder::text() would have put in its buffer), so that a hit
// seen before makes its snippet without reading its cluster.
//
// Why a cache of its own: a zstd or xz cluster cannot be decoded from the
// middle, so a snippet of an article at the end of a 1 MiB cluster decoded
// that whole megabyte to show 500 bytes, whenever the cluster cache (16 MiB
// by default, python-libzim's budget, which content reads must keep) had let
// the cluster go: on linux-doc a snippet search cost 3.6x the raw libzim
// loop there, against 6.1x with a 64 MiB cluster budget. The text of a hit is
// a few KiB where its cluster is a MiB, so a small budget holds every hit of
// a working set of queries, and content reads keep the cluster cache's
// semantics untouched (a snippet served from here does not touch it).
//
// Keyed by the file's cluster cache (its serial: a file replaced or
// rewritten gets another cache) and the blob; one byte budget for the
// process, least recently used evicted first, a text larger than the budget
// not kept. Costs count the text's bytes and what holding it takes (node,
// map entry, shared_ptr control block). One mutex for the map and the list,
// held for a lookup and a splice; evicted texts are freed after it.
#include "zimshim_impl.hpp"
#include "zimshim_snippet.hpp"

#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace zsnip {

namespace {

struct KeyHash {
    size_t operator()(const TextKey &k) const {
        uint64_t h = k.file * 0x9E3779B97F4A7C15ull;
        h ^= ((uint64_t)k.cluster << 32 | k.blob) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
        return (size_t)h;
    }
};

struct TextSlot {
    TextKey key;
    std::shared_ptr<const std::string> text;
    uint64_t cost;
};
using TextLru = std::list<TextSlot>;  // most recently used first

// What holding a text costs beyond its characters: the list node, the map's
// node and bucket, the shared_ptr's control block, the string object.
const uint64_t kSlotOverhead = 160;

std::mutex g_mu;
// Never destroyed, as the cluster cache's list: a cache freed during
// interpreter exit must not meet a map that static destruction freed.
TextLru &g_lru = *new TextLru;
std::unordered_map<TextKey, TextLru::iterator, KeyHash> &g_map =
    *new std::unordered_map<TextKey, TextLru::iterator, KeyHash>;
uint64_t g_budget = kTextCacheDefault, g_used = 0;

uint64_t cost_of(const std::string &s) { return s.capacity() + 1 + kSlotOverhead; }

// Under g_mu: the least recently used go until the budget holds.
void evict_locked(std::vector<std::shared_ptr<const std::string>> &dropped) {
    while (!g_lru.empty() && g_used > g_budget) {
        TextSlot &s = g_lru.back();
        g_used -= s.cost;
        g_map.erase(s.key);
        dropped.push_back(std::move(s.text));
        g_lru.pop_back();
    }
}

}  // namespace

std::shared_ptr<const std::string> text_cache_get(const TextKey &key) {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_map.find(key);
    if (it == g_map.end())
        return nullptr;
    g_lru.splice(g_lru.begin(), g_lru, it->second);
    return it->second->text;
}

void text_cache_put(const TextKey &key, const std::shared_ptr<const std::string> &text) {
    const uint64_t cost = cost_of(*text);
    std::vector<std::shared_ptr<const std::string>> dropped;  // freed after the lock
    std::lock_guard<std::mutex> lk(g_mu);
    if (cost > g_budget)
        return;  // would evict everything and then itself
    auto it = g_map.find(key);
    if (it != g_map.end()) {  // another thread made it meanwhile: the same text
        g_lru.splice(g_lru.begin(), g_lru, it->second);
        return;
    }
    g_lru.push_front(TextSlot{key, text, cost});
    try {
        g_map.emplace(key, g_lru.begin());
    } catch (...) {
        g_lru.pop_front();
        throw;
    }
    g_used += cost;
    evict_locked(dropped);
}

void text_cache_forget(uint64_t file) {
    std::vector<std::shared_ptr<const std::string>> dropped;
    std::lock_guard<std::mutex> lk(g_mu);
    for (auto it = g_lru.begin(); it != g_lru.end();) {
        if (it->key.file != file) {
            ++it;
            continue;
        }
        g_used -= it->cost;
        g_map.erase(it->key);
        dropped.push_back(std::move(it->text));
        it = g_lru.erase(it);
    }
}

}  // namespace zsnip

using namespace zs_impl;

extern "C" int zs_snippet_cache_sizes(uint64_t *max, uint64_t *current, uint64_t *count,
                                      zs_error *err) {
    return guarded(err, -1, [&] {
        std::lock_guard<std::mutex> lk(zsnip::g_mu);
        *max = zsnip::g_budget;
        *current = zsnip::g_used;
        *count = zsnip::g_lru.size();
        return 0;
    });
}

extern "C" int zs_snippet_cache_set_max(uint64_t bytes, zs_error *err) {
    return guarded(err, -1, [&] {
        std::vector<std::shared_ptr<const std::string>> dropped;  // freed after the lock
        std::lock_guard<std::mutex> lk(zsnip::g_mu);
        zsnip::g_budget = bytes;
        zsnip::evict_locked(dropped);
        return 0;
    });
}
