// One compressed stream of a cluster, read from the file with pread 64 KiB
// at a time as it is decoded: the zstd decoder (buffered, or straight into
// the caller's buffer in zstd's stable-output mode) and the xz one, and each
// thread's spare decoder contexts. Apart from the rest of the reader because
// it is the only part that calls libzstd and liblzma, and what a cluster's
// blobs are (zimshim_cluster_blobs.cpp) does not depend on which of the two
// decodes them.
#include "zimshim_cluster.hpp"

#include <zstd_errors.h>

#include <algorithm>
#include <new>

namespace zs_cluster {

[[noreturn]] void corrupt(uint32_t cluster, const std::string &what) {
    throw zim::ZimFileFormatError("cluster " + std::to_string(cluster) + ": " + what);
}

[[noreturn]] void no_blob(uint32_t cluster, uint32_t blob, size_t blobs) {
    // libzim 9 says "blob index out of range"; 8.1.1 gave an empty blob.
    corrupt(cluster, "blob " + std::to_string(blob) + ": blob index out of range (the cluster has " +
                         std::to_string(blobs) + ")");
}

namespace {

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

}  // namespace

Stream::Stream(Codec codec, uint64_t pos, uint64_t end, bool stable)
    : codec_(codec), pos_(pos), end_(end), stable_(stable && codec == Codec::zstd) {
    try {
        acquire();
    } catch (...) {
        release();
        throw;
    }
}

void Stream::decode(const OpenFile &f, char *out, size_t len, uint32_t cluster) {
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

void Stream::skip(const OpenFile &f, uint64_t n, uint32_t cluster) {
    char scratch[16384];
    while (n > 0) {
        const size_t k = (size_t)std::min<uint64_t>(n, sizeof scratch);
        decode(f, scratch, k, cluster);
        n -= k;
    }
}

bool Stream::decode_stable(const OpenFile &f, char *out, size_t cap, size_t *pos, size_t target,
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

size_t Stream::memory() const {
    size_t n = kChunk;
    if (zs_)
        n += ZSTD_sizeof_DCtx(zs_);
    if (xz_.internal)
        n += (size_t)lzma_memusage(&xz_);
    return n;
}

void Stream::acquire() {
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

void Stream::release() {
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

void Stream::refill(const OpenFile &f) {
    const size_t n = (size_t)std::min<uint64_t>(kChunk, end_ - std::min(end_, pos_));
    if (n)
        f.read(pos_, in_.get(), n);
    pos_ += n;
    in_off_ = 0;
    in_len_ = n;
}

size_t Stream::step_zstd(char *out, size_t len, uint32_t cluster) {
    ZSTD_outBuffer o{out, len, 0};
    ZSTD_inBuffer i{in_.get(), in_len_, in_off_};
    const size_t r = ZSTD_decompressStream(zs_, &o, &i);
    if (ZSTD_isError(r))
        corrupt(cluster, std::string("zstd: ") + ZSTD_getErrorName(r));
    in_off_ = i.pos;
    ended_ = r == 0;
    return o.pos;
}

size_t Stream::step_xz(char *out, size_t len, uint32_t cluster) {
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

}  // namespace zs_cluster
