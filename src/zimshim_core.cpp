// Errors, testing hooks and versions: see zimshim.h for the contract.
#include "zimshim_impl.hpp"

#include <zim/version.h>
#include <xapian.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace zs_impl {

// ---- errors ---------------------------------------------------------------

std::atomic<long> g_fault{0};

struct InjectedFault : std::exception {
    const char *what() const noexcept override { return "injected fault"; }
};

// Called at the top of every guarded operation: fault injection lets the
// tests drive each error path of the extension without a corrupt archive.
std::atomic<long> g_delay_us{0};

void maybe_fault() {
    long d = g_delay_us.load(std::memory_order_relaxed);
    if (d > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(d));
    long v = g_fault.load(std::memory_order_relaxed);
    if (v > 0 && g_fault.fetch_sub(1) == 1)
        throw InjectedFault();
}

void trim(std::string &s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    size_t e = s.find_last_not_of(" \t\r\n");
    s = (b == std::string::npos) ? std::string() : s.substr(b, e - b + 1);
}

// libzim's messages are sometimes several lines (a sorted-table dump, or an
// assertion text that starts with a newline); the Python error must read as
// one line, so lines are trimmed and joined.
std::string one_line(const char *what) {
    std::istringstream in(what ? what : "");
    std::string line, out;
    while (std::getline(in, line)) {
        trim(line);
        if (line.empty())
            continue;
        if (!out.empty())
            out += (out.back() == ':') ? " " : "; ";
        out += line;
    }
    const std::string assert_prefix = "Assertion failed at ";
    if (out.compare(0, assert_prefix.size(), assert_prefix) == 0) {
        // "Assertion failed at ../src/cluster.cpp:123; new_offset[..] >= .."
        std::string rest = out.substr(assert_prefix.size());
        size_t slash = rest.find_last_of('/', rest.find(';'));
        if (slash != std::string::npos)
            rest = rest.substr(slash + 1);
        size_t semi = rest.find("; ");
        std::string where = rest.substr(0, semi);
        std::string cond = semi == std::string::npos ? "" : rest.substr(semi + 2);
        out = "corrupt data: libzim consistency check failed at " + where +
              (cond.empty() ? "" : " (" + cond + ")");
    }
    if (out.empty())
        out = "unknown error";
    return out;
}

void set_error(zs_error *err, zs_kind kind, const std::string &msg) {
    if (!err)
        return;
    err->kind = kind;
    std::snprintf(err->msg, sizeof err->msg, "%s", msg.c_str());
}


void fill_error(zs_error *err) {
    try {
        throw;
    } catch (const InjectedFault &e) {
        set_error(err, ZS_ERR_INTERNAL, e.what());
    } catch (const zim::EntryNotFound &e) {
        set_error(err, ZS_ERR_NOT_FOUND, one_line(e.what()));
    } catch (const zim::ZimFileFormatError &e) {
        set_error(err, ZS_ERR_FORMAT, one_line(e.what()));
    } catch (const std::out_of_range &e) {
        set_error(err, ZS_ERR_INDEX, one_line(e.what()));
    } catch (const std::bad_alloc &) {
        set_error(err, ZS_ERR_MEMORY, "out of memory");
    } catch (const Xapian::QueryParserError &e) {
        set_error(err, ZS_ERR_QUERY, one_line(e.get_msg().c_str()));
    } catch (const Xapian::DatabaseError &e) {
        set_error(err, ZS_ERR_FORMAT, "search index: " + one_line(e.get_description().c_str()));
    } catch (const Xapian::Error &e) {
        set_error(err, ZS_ERR_INTERNAL, "Xapian: " + one_line(e.get_description().c_str()));
    } catch (const zim::InvalidType &e) {
        set_error(err, ZS_ERR_ARG, one_line(e.what()));
    } catch (const std::invalid_argument &e) {
        set_error(err, ZS_ERR_ARG, one_line(e.what()));
    } catch (const std::runtime_error &e) {
        std::string m = one_line(e.what());
        int code = 0;
        // libzim reports a failed open(2) as 'error N opening file "NAME'.
        if (std::sscanf(m.c_str(), "error %d opening file", &code) == 1 && code > 0) {
            set_error(err, ZS_ERR_IO, std::strerror(code));
        } else if (m.find("without FT Xapian index") != std::string::npos) {
            set_error(err, ZS_ERR_NO_INDEX, "no full-text index");
        } else {
            // Everything else libzim throws as runtime_error while reading
            // comes from data it could not make sense of.
            set_error(err, ZS_ERR_FORMAT, m);
        }
    } catch (const std::exception &e) {
        set_error(err, ZS_ERR_INTERNAL, one_line(e.what()));
    } catch (...) {
        set_error(err, ZS_ERR_INTERNAL, "unknown C++ exception");
    }
}

char *join_nul(const std::vector<std::string> &v, size_t *len) {
    size_t total = 0;
    for (const auto &s : v)
        total += s.size() + 1;
    char *buf = static_cast<char *>(std::malloc(total ? total : 1));
    if (!buf)
        throw std::bad_alloc();
    char *p = buf;
    for (const auto &s : v) {
        std::memcpy(p, s.data(), s.size());
        p += s.size();
        *p++ = '\0';
    }
    *len = total;
    return buf;
}

}  // namespace zs_impl

using namespace zs_impl;

// ---- library -------------------------------------------------------------------------

extern "C" int zs_versions(char **buf, size_t *len, size_t *count, zs_error *err) {
    return guarded(err, -1, [&] {
        std::vector<std::string> v;
        for (const auto &p : zim::getVersions())
            v.push_back(p.first + "=" + p.second);
        *buf = join_nul(v, len);
        *count = v.size();
        return 0;
    });
}

extern "C" long zs_fault_inject(long nth) { return g_fault.exchange(nth); }

extern "C" long zs_test_delay(long usec) { return g_delay_us.exchange(usec); }

