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
//
// This file is the reader's face: an item's content, size and text key
// through the cache (what items, search pages, snippets and article text
// call), and the budget's extern "C" calls. The rest is split by concern
// behind zimshim_cluster.hpp, which lists the files (buffers, stream, blobs,
// cache).
#include "zimshim_cluster.hpp"

using namespace zs_impl;
using namespace zs_cluster;

namespace zs_impl {

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

}  // namespace zs_impl

extern "C" void zs_cluster_cache_init(void) {
    try {
        init_budget_once();
    } catch (...) {
        // Only std::system_error from the lock: the default budget stays.
    }
}

extern "C" int zs_cluster_cache_sizes(uint64_t *max, uint64_t *current, zs_error *err) {
    return guarded(err, -1, [&] {
        budget_sizes(max, current);
        return 0;
    });
}

extern "C" int zs_cluster_cache_set_max(uint64_t bytes, zs_error *err) {
    return guarded(err, -1, [&] {
        set_budget(bytes);
        return 0;
    });
}
