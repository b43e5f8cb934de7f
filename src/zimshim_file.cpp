// The file behind an archive: opened once, kept open, and shared by every
// native handle made for the archive. See zimshim_impl.hpp (OpenFile).
#include "zimshim_impl.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace zs_impl;

namespace {

std::atomic<long> g_block_open{0};

// Testing hook (zs_test_block_open): waits for a signal the way open(2) does
// on a FIFO or a hung network file system, then fails with EINTR.
int open_file(const char *path) {
    long v = g_block_open.load(std::memory_order_relaxed);
    if (v > 0 && g_block_open.fetch_sub(1) > 0) {
        ::pause();
        errno = EINTR;
        return -1;
    }
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
    return ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}

const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a file";
}

}  // namespace

namespace zs_impl {

// The header fields the binding needs before (or besides) libzim; false when
// there is no ZIM header (libzim then says what is wrong).
bool read_header(const OpenFile &f, Header *h) {
    unsigned char b[80];
    try {
        f.read(0, b, sizeof b);
    } catch (const std::exception &) {
        return false;
    }
    if (load_le(b, 4) != 72173914)
        return false;
    h->major = (uint16_t)load_le(b + 4, 2);
    h->minor = (uint16_t)load_le(b + 6, 2);
    h->entries = (uint32_t)load_le(b + 24, 4);
    h->clusters = (uint32_t)load_le(b + 28, 4);
    h->path_ptr_pos = load_le(b + 32, 8);
    h->title_ptr_pos = load_le(b + 40, 8);
    h->cluster_ptr_pos = load_le(b + 48, 8);
    return true;
}

namespace {

// Appends the NUL-terminated string at *pos to out and moves *pos past its
// NUL; false at the archive's end or past 64 KiB (a corrupt dirent).
bool read_cstring(const OpenFile &f, uint64_t *pos, std::string *out) {
    char chunk[256];
    for (;;) {
        size_t n = (size_t)std::min<uint64_t>(sizeof chunk, f.size - std::min(f.size, *pos));
        if (n == 0)
            return false;
        f.read(*pos, chunk, n);
        const char *nul = static_cast<const char *>(std::memchr(chunk, 0, n));
        out->append(chunk, nul ? (size_t)(nul - chunk) : n);
        if (nul) {
            *pos += (uint64_t)(nul - chunk) + 1;
            return true;
        }
        if (out->size() > 65536)
            return false;
        *pos += n;
    }
}

}  // namespace

// The dirent of entry i: namespace + path, and cluster/blob unless it is a
// redirect; with title, its title too (the path when it has none).
bool read_dirent(const OpenFile &f, const Header &h, uint32_t i, Dirent *d, std::string *title) {
    unsigned char b[16];
    f.read(h.path_ptr_pos + 8 * (uint64_t)i, b, 8);
    const uint64_t pos = load_le(b, 8);
    f.read(pos, b, 8);
    const unsigned mime = (unsigned)load_le(b, 2);
    uint64_t path_pos = pos + 8;
    d->redirect = mime >= 0xfffd;
    if (mime == 0xffff) {
        path_pos = pos + 12;
    } else if (!d->redirect) {
        f.read(pos + 8, b + 8, 8);
        d->cluster = (uint32_t)load_le(b + 8, 4);
        d->blob = (uint32_t)load_le(b + 12, 4);
        path_pos = pos + 16;
    }
    d->long_path.assign(1, (char)b[3]);
    if (!read_cstring(f, &path_pos, &d->long_path))
        return false;
    if (!title)
        return true;
    title->clear();
    if (!read_cstring(f, &path_pos, title))
        return false;
    if (title->empty())
        title->assign(d->long_path, 1, std::string::npos);
    return true;
}

// Binary search of the path-ordered dirent table for namespace + path.
bool find_dirent(const OpenFile &f, const Header &h, const std::string &long_path,
                 uint32_t *index, Dirent *d) {
    uint32_t lo = 0, hi = h.entries;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (!read_dirent(f, h, mid, d))
            return false;
        int c = d->long_path.compare(long_path);
        if (c == 0) {
            *index = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

// The listing's dirent and the number of blobs of its cluster, when that
// cluster is stored uncompressed (libzim skips a compressed listing).
// A table that is misaligned or larger than the archive sets defect:
// libzim 8.1.1 would reserve a vector from it.
bool listing_cluster(const OpenFile &f, const Header &h, const std::string &name, Dirent *d,
                     uint64_t *blobs, std::string *defect) {
    uint32_t index;
    if (!find_dirent(f, h, name, &index, d) || d->redirect || d->cluster >= h.clusters)
        return false;
    unsigned char b[9];
    f.read(h.cluster_ptr_pos + 8 * (uint64_t)d->cluster, b, 8);
    const uint64_t pos = load_le(b, 8);
    f.read(pos, b, 9);
    if ((b[0] & 0x0f) > 1)
        return false;
    const int width = (b[0] & 0x10) ? 8 : 4;
    // The first offset is the size of the offset table: one more than blobs.
    const uint64_t first = load_le(b + 1, width);
    if (first < (uint64_t)width || first % width)
        *defect = "offset of the first blob is not properly aligned (" + std::to_string(first) + ")";
    else if (first > f.size - (pos + 1))
        *defect = "bad offset table size " + std::to_string(first);
    *blobs = first / width ? first / width - 1 : 0;
    return true;
}

// libzim 8.1.1's Archive constructor reads the title listings' blob offsets
// without a bounds check (FileImpl::getTitleAccessor): a corrupt blob number
// there is a segfault while opening. The same bound is checked here first,
// from the file itself, since no libzim object exists yet.
void check_title_listings(const OpenFile &f) {
    Header h;
    if (!read_header(f, &h))
        return;
    for (const char *name : {"Xlisting/titleOrdered/v0", "Xlisting/titleOrdered/v1"}) {
        Dirent d;
        uint64_t blobs = 0;
        std::string defect;
        try {
            if (!listing_cluster(f, h, name, &d, &blobs, &defect))
                continue;
        } catch (const std::exception &) {
            continue;  // unreadable: libzim reports it in its own words
        }
        if (!defect.empty())
            throw zim::ZimFileFormatError("corrupt title listing '" + std::string(name + 1) + "': cluster " +
                                          std::to_string(d.cluster) + ": " + defect);
        if ((uint64_t)d.blob < blobs)
            continue;
        throw zim::ZimFileFormatError("corrupt title listing '" + std::string(name + 1) +
                                      "': blob " + std::to_string(d.blob) +
                                      " in a cluster of " + std::to_string(blobs) + " blobs");
    }
}

OpenFile::~OpenFile() {
    if (fd >= 0)
        ::close(fd);
}

void pread_exact(int fd, void *buf, size_t len, uint64_t pos) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = ::pread(fd, static_cast<char *>(buf) + done, len - done, (off_t)(pos + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw std::runtime_error(std::string("read error: ") + std::strerror(errno));
        // A short read: the data claims to be where the file has none.
        if (n == 0)
            throw zim::ZimFileFormatError("the file ends at byte " + std::to_string(pos + done) +
                                          ", before the data it should hold");
        done += (size_t)n;
    }
}

void OpenFile::read(uint64_t pos, void *buf, size_t len) const {
    if (pos > size || len > size - pos)
        throw zim::ZimFileFormatError("offset " + std::to_string(pos) + " outside the archive");
    pread_exact(fd, buf, len, offset + pos);
}

void OpenFile::check_size() const {
    // lseek to the end returns the size at a third of fstat's cost (measured
    // 0.2 against 0.6 us here). The descriptor's own offset is unused: every
    // read is a pread, and libzim reads through descriptors of its own.
    const off_t end = blockdev ? -1 : ::lseek(fd, 0, SEEK_END);
    if (end < 0 || (uint64_t)end >= offset + size)
        return;
    throw zim::ZimFileFormatError("the file was truncated to " + std::to_string(end) +
                                  " bytes while open (the archive ends at byte " +
                                  std::to_string(offset + size) + ")");
}

std::shared_ptr<OpenFile> open_archive_file(const char *path, unsigned range, uint64_t offset,
                                            uint64_t size, zs_error *err) {
    int fd = open_file(path);
    if (fd < 0) {
        int e = errno;
        set_error(err, e == EINTR ? ZS_ERR_INTERRUPTED : ZS_ERR_IO, std::strerror(e));
        return nullptr;
    }
    std::shared_ptr<OpenFile> f(new OpenFile);
    f->fd = fd;
    struct stat sb;
    if (::fstat(fd, &sb) < 0) {
        int e = errno;
        set_error(err, ZS_ERR_IO, std::strerror(e));
        return nullptr;
    }
    if (!S_ISREG(sb.st_mode) && !S_ISBLK(sb.st_mode)) {
        set_error(err, ZS_ERR_IO,
                  std::string("not a regular file or block device (") + file_kind(sb.st_mode) + ")");
        return nullptr;
    }
    // Reads block as usual from now on.
    int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0)
        ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    // st_size is 0 for a block device; lseek finds its end.
    off_t end = S_ISREG(sb.st_mode) ? sb.st_size : ::lseek(fd, 0, SEEK_END);
    if (end < 0) {
        int e = errno;
        set_error(err, ZS_ERR_IO, std::strerror(e));
        return nullptr;
    }
    const uint64_t fsize = (uint64_t)end;
    f->ranged = range != 0;
    f->blockdev = S_ISBLK(sb.st_mode);
    f->offset = (range & ZS_RANGE_OFFSET) ? offset : 0;
    if (f->offset > fsize) {
        set_error(err, ZS_ERR_ARG,
                  "offset " + std::to_string(offset) + " is past the end of the file (" +
                      std::to_string(fsize) + " bytes)");
        return nullptr;
    }
    f->size = (range & ZS_RANGE_SIZE) ? size : fsize - f->offset;
    if (f->size > fsize - f->offset) {
        set_error(err, ZS_ERR_ARG,
                  "offset " + std::to_string(f->offset) + " + size " + std::to_string(size) +
                      " is past the end of the file (" + std::to_string(fsize) + " bytes)");
        return nullptr;
    }
    f->clusters = make_cluster_cache(*f);
    return f;
}

// Whether the archive's bytes start with the ZIM magic number.
static bool has_zim_magic(const OpenFile &f) {
    unsigned char b[4];
    try {
        f.read(0, b, sizeof b);
    } catch (const std::exception &) {
        return false;  // fewer than 4 bytes
    }
    return load_le(b, 4) == 72173914;
}

zim::Archive open_archive(const OpenFile &f) {
    try {
        if (f.ranged || f.blockdev)
            return zim::Archive(f.fd, (zim::offset_type)f.offset, (zim::size_type)f.size);
        return zim::Archive(f.fd);
    } catch (const std::exception &e) {
        // libzim's words for a file that is no ZIM at all ("Invalid magic
        // number", "zim-file is too small to contain a header") do not say
        // so to someone who opened the wrong file: say it first.
        if (!has_zim_magic(f))
            throw zim::ZimFileFormatError("not a ZIM archive: " + one_line(e.what()));
        throw;
    }
}

// The same file as fd, whatever has become of its path, under an open file
// description of its own.  A dup() shares fd's, whose position lock every
// lseek takes: check_size() on two copies used by two threads then queued on
// one kernel lock, where two independently opened Archives do not.  (libzim
// reads through "/dev/fd/N", a description of its own either way.)  Falls back
// to dup() where /proc is not there or reopening is refused.
static int reopen(int fd) {
    char link[40];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int d = ::open(link, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    struct stat was, now;
    if (d >= 0 && ::fstat(fd, &was) == 0 && ::fstat(d, &now) == 0 && was.st_dev == now.st_dev &&
        was.st_ino == now.st_ino)
        return d;
    if (d >= 0)
        ::close(d);
    return ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

ArchiveCopy copy_archive(const std::shared_ptr<OpenFile> &file, const zim::Archive &a) {
    if (!file)
        return ArchiveCopy{nullptr, a};  // multi-part: shared (zimshim_impl.hpp)
    std::shared_ptr<OpenFile> d(new OpenFile(*file));
    d->fd = reopen(file->fd);
    if (d->fd < 0)
        throw std::runtime_error(std::string("cannot duplicate the archive's descriptor: ") +
                                 std::strerror(errno));
    return ArchiveCopy{d, open_archive(*d)};
}

}  // namespace zs_impl

extern "C" long zs_test_block_open(long n) { return g_block_open.exchange(n); }
