// Internals shared by the zimshim*.cpp files: the handle structs and the
// error machinery that turns every C++ exception into a zs_error.  C++ only;
// the C side sees zimshim.h alone.
#ifndef LIBZIM_C_ZIMSHIM_IMPL_HPP
#define LIBZIM_C_ZIMSHIM_IMPL_HPP

#include "zimshim.h"

// For Archive::getClusterCount(), exported by libzim 8.1.1 but declared only
// under this macro.
#define ZIM_PRIVATE

#include <zim/archive.h>
#include <zim/entry.h>
#include <zim/error.h>
#include <zim/item.h>

#include <string>
#include <vector>

struct zs_archive {
    zim::Archive a;
    std::string filename;
    // How it was opened, so a pooled searcher can open its own copy.
    std::string path;
    bool ranged = false;
    uint64_t offset = 0, size = 0;
};
struct zs_entry {
    zim::Entry e;
    std::string title, path;
};
struct zs_item {
    zim::Item it;
    std::string title, path, mimetype;
};
struct zs_blob {
    zim::Blob b;
};
namespace zs_impl {

// Fault injection and the test delay, checked at the top of every guarded
// call (zimshim_core.cpp).
void maybe_fault();

// libzim's messages joined into one line, assertion dumps shortened.
std::string one_line(const char *what);

void set_error(zs_error *err, zs_kind kind, const std::string &msg, int os_errno = 0);

// Maps the exception in flight to an error kind.  Must be called from a
// catch block.
void fill_error(zs_error *err);

// Runs f, turning any exception into err; returns fallback on failure.
template <class F, class R>
R guarded(zs_error *err, R fallback, F &&f) {
    try {
        maybe_fault();
        return f();
    } catch (...) {
        fill_error(err);
        return fallback;
    }
}

// The strings, NUL-separated in one malloc'd buffer (zs_buffer_free).
char *join_nul(const std::vector<std::string> &v, size_t *len);

// Checks the search-index entries that libzim 8.1.1 reads without bounds
// checks (zimshim_archive.cpp); with_database also opens the index.
void check_index_entries(const zim::Archive &a, bool with_database);

}  // namespace zs_impl

#endif
