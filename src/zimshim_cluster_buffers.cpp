// Where the cluster reader's decoded bytes live: anonymous maps kept for
// reuse in two small pools (segments; large blobs and whole clusters), the
// segments small blobs are packed into, and the buffers of large blobs and
// of zstd clusters decoded in one piece. A file of its own because it is one
// concern, memory that goes back to the kernel without a zeroed page per
// buffer (the comment at ZS_MAP_BUFFERS in zimshim_cluster.hpp says why),
// and the rest of the reader takes every buffer it decodes into from here.
#include "zimshim_cluster.hpp"

#include <algorithm>
#include <new>

#include <sys/mman.h>

namespace zs_cluster {

char *map_or_throw(size_t n) {
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw std::bad_alloc();
    return static_cast<char *>(p);
}

Map MapPool::take(uint64_t lo, uint64_t hi) {
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

void MapPool::give(const Map &m) {
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

MapPool &segment_pool() {
    static MapPool *pool = new MapPool(16, size_t(16) << 20);
    return *pool;
}
MapPool &large_pool() {
    static MapPool *pool = new MapPool(8, size_t(16) << 20);
    return *pool;
}

void Mapped::grow(size_t n) {
    void *q = mremap(p_, n_, n, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        throw std::bad_alloc();  // the old map stays, unmapped by the destructor
    p_ = static_cast<char *>(q);
    n_ = n;
}

std::shared_ptr<char> Mapped::release(MapPool &pool) {
    char *p = p_;
    p_ = nullptr;
    return pool.owned(p, n_);
}

std::shared_ptr<char> segment_buffer(size_t *n) {
    if (ZS_MAP_BUFFERS && *n >= kPooledFrom) {
        *n = kSegment;
        char *p = segment_pool().take(kSegment, kSegment).p;
        return segment_pool().owned(p ? p : map_or_throw(kSegment), kSegment);
    }
    return std::shared_ptr<char>(new char[*n ? *n : 1], std::default_delete<char[]>());
}

Mapped large_buffer(uint64_t size) {
    const Map m = large_pool().take(size, 2 * size);
    return m.p ? Mapped(m.p, m.size) : Mapped(kSegment);
}

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

}  // namespace zs_cluster
