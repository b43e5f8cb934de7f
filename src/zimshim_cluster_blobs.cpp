// A cluster of the archive, decoded as far as reads have needed, blob by
// blob: its offset table checked as it is read, a zstd cluster decoded in
// one piece straight into one buffer (start_whole), an xz one (or a zstd one
// whose table claims too much) into segments and large blobs' buffers; what
// a failed stream leaves readable; and the blobs of stored (uncompressed)
// clusters, read from the file. Apart from the cache (zimshim_cluster_cache.cpp)
// because a Cluster knows nothing of eviction or the budget: it only says
// what it holds (bytes_held()), and the cache charges that.
#include "zimshim_cluster.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace zs_cluster {

namespace {

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

}  // namespace

// Under c.mu: the cluster's offset table, read if not yet.
void ensure_started(Cluster &c, const OpenFile &f, const Header &h, uint32_t cluster,
                    unsigned char info) {
    if (c.started.load(std::memory_order_relaxed))
        return;
    on_stream(c, cluster, [&] {
        start(c, f, h, cluster, read_le(f, h.cluster_ptr_pos + 8 * (uint64_t)cluster, 8), info);
    });
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

}  // namespace zs_cluster
