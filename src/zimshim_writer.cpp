// libzim's writer behind the writer section of zimshim.h: adapters that turn
// libzim's virtual calls on items, content providers and index data into
// calls of the extension's callbacks.
#include "zimshim_impl.hpp"

#include <zim/writer/contentProvider.h>
#include <zim/writer/creator.h>
#include <zim/writer/item.h>
#include <zim/zim_config.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <atomic>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

struct zs_sink {
    std::string s;
};

extern "C" void zs_sink_set(zs_sink *s, const char *p, size_t n) { s->s.assign(p, n); }

namespace {

// Thrown when a callback failed; the Python exception waits in the ctx.
struct CallbackFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What the creator and every adapter share.  libzim 8.1.1 ends a worker
// thread whose task throws, and then its Creator's destructor waits forever
// to hand that thread a quit task.  So a failure on a worker thread (a
// callback that raised, a provider's size mismatch) never throws: it marks
// the creation failed, gives libzim harmless data, and the next call into
// the creator reports it.  On the calling thread it throws as usual.
struct Shared {
    const zs_writer_callbacks *cb;
    void *ctx;
    std::atomic<std::thread::id> caller{};  // the thread inside a zs_creator_* call
    std::atomic<bool> failed{false};
    std::mutex m;
    std::string first_failure;        // under m

    Shared(const zs_writer_callbacks *cb_, void *ctx_) : cb(cb_), ctx(ctx_) {}
    ~Shared() { cb->ctx_free(ctx); }

    // Records the failure; throws when on the calling thread.
    void fail(const std::string &msg, bool callback) {
        {
            std::lock_guard<std::mutex> g(m);
            if (first_failure.empty())
                first_failure = msg;
        }
        failed = true;
        if (std::this_thread::get_id() != caller)
            return;
        if (callback)
            throw CallbackFailed(msg);
        throw std::runtime_error(msg);
    }
};
using Ctx = std::shared_ptr<Shared>;

std::string quoted(const std::string &path) { return "'" + path + "'"; }

class Provider : public zim::writer::ContentProvider {
  public:
    Provider(Ctx c, void *obj, uint64_t size, const std::string &path)
        : c_(c), obj_(obj), size_(size), path_(path) {}
    ~Provider() override { c_->cb->release(obj_, keep_); }
    zim::size_type getSize() const override { return size_; }

    // libzim computed the archive's offsets from getSize(): a provider that
    // feeds more or less would corrupt it, so that is an error here.  Once
    // failed (on a worker), the rest of the promised size is fed as zeros:
    // the archive will be discarded.
    zim::Blob feed() override {
        if (broken_)
            return zeros();
        zs_str chunk = {nullptr, 0};
        void *prev = keep_;
        keep_ = nullptr;
        if (c_->failed) {  // the creation is lost: do not call Python again
            c_->cb->release(prev, nullptr);
            broken_ = true;
            return zeros();
        }
        if (c_->cb->provider_feed(c_->ctx, obj_, prev, &chunk, &keep_) < 0)
            return broken("feed() of the content provider of " + quoted(path_) + " raised", true);
        if (chunk.len > size_ - fed_)
            return broken("the content provider of " + quoted(path_) + " fed more than the " +
                          std::to_string(size_) + " bytes its get_size() returned", false);
        if (chunk.len == 0 && fed_ != size_)
            return broken("the content provider of " + quoted(path_) + " fed " +
                          std::to_string(fed_) + " bytes, but its get_size() returned " +
                          std::to_string(size_), false);
        fed_ += chunk.len;
        return zim::Blob(chunk.ptr, chunk.len);
    }

  private:
    zim::Blob broken(const std::string &msg, bool callback) {
        broken_ = true;
        c_->fail(msg, callback);
        return zeros();
    }
    zim::Blob zeros() {
        static const char zero[65536] = {0};
        uint64_t n = size_ - fed_ < sizeof zero ? size_ - fed_ : sizeof zero;
        fed_ += n;
        return zim::Blob(zero, n);
    }
    Ctx c_;
    void *obj_;
    void *keep_ = nullptr;
    uint64_t size_, fed_ = 0;
    bool broken_ = false;
    std::string path_;
};

std::unique_ptr<zim::writer::ContentProvider> make_provider(Ctx c, void *obj, uint64_t size,
                                                            const std::string &path) {
    try {
        return std::unique_ptr<zim::writer::ContentProvider>(new Provider(c, obj, size, path));
    } catch (...) {
        c->cb->release(obj, nullptr);
        throw;
    }
}

// libzim calls every method from one worker thread; the Python getters are
// called together in one GIL hold, the first time libzim asks.
class IndexData : public zim::writer::IndexData {
  public:
    IndexData(Ctx c, void *obj, const std::string &path) : c_(c), obj_(obj), path_(path) {}
    ~IndexData() override { c_->cb->release(obj_, nullptr); }
    bool hasIndexData() const override { return fetch(false).has; }
    std::string getTitle() const override { return fetch(true), title_.s; }
    std::string getContent() const override { return fetch(true), content_.s; }
    std::string getKeywords() const override { return fetch(true), keywords_.s; }
    uint32_t getWordCount() const override { return fetch(true).wordcount; }
    GeoPosition getGeoPosition() const override {
        const zs_indexdata &d = fetch(true);
        return GeoPosition(d.has_geo != 0, d.latitude, d.longitude);
    }

  private:
    const zs_indexdata &fetch(bool all) const {
        if (fetched_ == 2 || (fetched_ == 1 && (!all || d_.has)))
            return d_;
        zs_indexdata d = {};
        d.title = &title_;
        d.content = &content_;
        d.keywords = &keywords_;
        if (c_->failed || c_->cb->indexdata_fetch(c_->ctx, obj_, all, &d) < 0) {
            if (!c_->failed)
                c_->fail("the index data of " + quoted(path_) + " raised", true);
            d = zs_indexdata();  // nothing to index: the archive is lost anyway
            all = true;
        }
        d_ = d;
        fetched_ = (all || d.has) ? 2 : 1;
        return d_;
    }
    Ctx c_;
    void *obj_;
    std::string path_;
    mutable int fetched_ = 0;  // 1: has_indexdata only, 2: everything
    mutable zs_indexdata d_ = {};
    mutable zs_sink title_, content_, keywords_;
};

// Stands for a provider that could not be made on a worker thread.
class Zeros : public zim::writer::ContentProvider {
  public:
    explicit Zeros(uint64_t size) : size_(size) {}
    zim::size_type getSize() const override { return size_; }
    zim::Blob feed() override {
        static const char zero[65536] = {0};
        uint64_t n = size_ - fed_ < sizeof zero ? size_ - fed_ : sizeof zero;
        fed_ += n;
        return zim::Blob(zero, n);
    }

  private:
    uint64_t size_, fed_ = 0;
};

zim::writer::Hints hints_of(const zs_entry_def *def) {
    zim::writer::Hints h;
    for (unsigned k = 0; k < 2; k++)
        if (def->hints_set & (1u << k))
            h[static_cast<zim::writer::HintKeys>(k)] = def->hints[k];
    return h;
}

std::string str(zs_str s) { return std::string(s.ptr ? s.ptr : "", s.len); }

// Path, title, mimetype, hints and the first content provider were read from
// the Python item before the call, with the GIL held; later content
// providers (libzim's default indexing reads the content again) and index
// data call back.
class Item : public zim::writer::Item {
  public:
    Item(Ctx c, void *obj, const zs_entry_def *def)
        : c_(c), obj_(obj), path_(str(def->path)), title_(str(def->title)),
          mimetype_(str(def->mimetype)), hints_(hints_of(def)), first_(def->provider),
          first_size_(def->provider_size) {}
    ~Item() override { c_->cb->release(obj_, first_.exchange(nullptr)); }
    std::string getPath() const override { return path_; }
    std::string getTitle() const override { return title_; }
    std::string getMimeType() const override { return mimetype_; }
    zim::writer::Hints getHints() const override { return hints_; }

    std::unique_ptr<zim::writer::ContentProvider> getContentProvider() const override {
        if (void *first = first_.exchange(nullptr))
            return make_provider(c_, first, first_size_, path_);
        void *p = nullptr;
        uint64_t size = 0;
        if (c_->cb->item_provider(c_->ctx, obj_, &p, &size) < 0) {
            c_->fail("get_contentprovider() of " + quoted(path_) + " raised", true);
            return std::unique_ptr<zim::writer::ContentProvider>(new Zeros(size));
        }
        return make_provider(c_, p, size, path_);
    }

    std::shared_ptr<zim::writer::IndexData> getIndexData() const override {
        void *d = nullptr;
        int r = c_->cb->item_indexdata(c_->ctx, obj_, &d);
        if (r < 0) {
            c_->fail("get_indexdata() of " + quoted(path_) + " raised", true);
            return nullptr;
        }
        if (r == ZS_INDEX_DEFAULT)
            return zim::writer::Item::getIndexData();
        if (r == ZS_INDEX_NONE)
            return nullptr;
        try {
            return std::make_shared<IndexData>(c_, d, path_);
        } catch (...) {
            c_->cb->release(d, nullptr);
            throw;
        }
    }

  private:
    Ctx c_;
    void *obj_;
    std::string path_, title_, mimetype_;
    zim::writer::Hints hints_;
    mutable std::atomic<void *> first_;  // taken by the first getContentProvider()
    const uint64_t first_size_;
};

void set_werror(zs_werror *err, zs_kind kind, const std::string &msg) {
    err->kind = kind;
    size_t n = msg.size() < ZS_WMSG_MAX - 1 ? msg.size() : ZS_WMSG_MAX - 1;
    memcpy(err->msg, msg.data(), n);
    err->msg[n] = '\0';
}

// libzim's duplicate-path message is kept as it is (several lines):
// zimscraperlib recognises duplicates by matching it.
void fill_werror(zs_werror *err) {
    err->callback = err->duplicate = err->unsupported = 0;
    err->os_errno = 0;
    try {
        throw;
    } catch (const CallbackFailed &e) {
        err->callback = 1;
        set_werror(err, ZS_ERR_INTERNAL, e.what());
    } catch (const std::bad_alloc &) {
        set_werror(err, ZS_ERR_MEMORY, "out of memory");
    } catch (const std::system_error &e) {
        err->os_errno = e.code().value();
        set_werror(err, ZS_ERR_IO, e.what());
    } catch (const std::exception &e) {
        std::string m = e.what();
        // libzim's AsyncError inserts the mangled type name of what the
        // worker threw: "Asynchronous error: St13runtime_error <what>".
        const std::string async = "Asynchronous error: ";
        if (m.rfind(async, 0) == 0) {
            size_t sp = m.find_first_of(" \n", async.size());
            size_t text = sp == std::string::npos ? sp : m.find_first_not_of(" \n", sp);
            if (text != std::string::npos)
                m = async + m.substr(text);
        }
        err->duplicate = m.rfind("Impossible to add ", 0) == 0;
        if (!err->duplicate) {
            for (char &ch : m)
                if (ch == '\n' || ch == '\r')
                    ch = ' ';
            while (!m.empty() && m.back() == ' ')
                m.pop_back();
        }
        set_werror(err, ZS_ERR_INTERNAL, m);
    } catch (...) {
        set_werror(err, ZS_ERR_INTERNAL, "unknown C++ exception");
    }
}

template <typename F>
int wguarded(zs_werror *err, F &&f) {
    try {
        zs_impl::maybe_fault();
        f();
        return 0;
    } catch (...) {
        fill_werror(err);
        return -1;
    }
}

void remove_tree(const std::string &path) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        if (DIR *d = opendir(path.c_str())) {
            std::vector<std::string> names;
            while (struct dirent *e = readdir(d))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    names.push_back(e->d_name);
            closedir(d);
            for (auto &n : names)
                remove_tree(path + "/" + n);
        }
        rmdir(path.c_str());
    } else {
        unlink(path.c_str());
    }
}

}  // namespace

struct zs_creator {
    Ctx c;
    std::unique_ptr<zim::writer::Creator> creator;
    std::string path;
    bool started = false, finished = false;
    bool written = false;  // libzim renamed the archive into place
    // libzim reported a failure of one of its own threads: its destructor
    // could then wait forever (see Shared), so the creator is leaked.
    bool libzim_failed = false;
};

namespace {

// Every call into the creator: marks the calling thread, refuses to go on
// after a failure, and notes libzim's own asynchronous failures.
template <typename F>
int creator_call(zs_creator *c, zs_werror *err, F &&f) {
    c->c->caller = std::this_thread::get_id();
    int rc = wguarded(err, [&] {
        if (c->c->failed) {
            std::lock_guard<std::mutex> g(c->c->m);
            throw std::runtime_error(c->c->first_failure);
        }
        f();
        if (c->c->failed) {  // a worker failed meanwhile: report it now
            std::lock_guard<std::mutex> g(c->c->m);
            throw std::runtime_error(c->c->first_failure);
        }
    });
    c->c->caller = std::thread::id();
    if (rc < 0 && !c->c->failed) {
        std::string m = err->msg;
        if (m.rfind("Asynchronous error", 0) == 0 || m.find("in error state") != std::string::npos)
            c->libzim_failed = true;
    }
    return rc;
}

// Creator::addAlias exists from libzim 9.0; LIBZIM_VERSION is a string the
// preprocessor cannot compare, so overloading finds out (the int overload
// wins where the call compiles).
template <class C>
auto add_alias(C &w, const std::string &path, const std::string &title,
               const std::string &target, const zim::writer::Hints &hints, int)
    -> decltype(w.addAlias(path, title, target, hints), bool()) {
    w.addAlias(path, title, target, hints);
    return true;
}

template <class C>
bool add_alias(C &, const std::string &, const std::string &, const std::string &,
               const zim::writer::Hints &, long) {
    return false;
}

}  // namespace

extern "C" {

zs_creator *zs_creator_new(const zs_writer_callbacks *cb, void *ctx, zs_werror *err) {
    zs_creator *c = nullptr;
    Ctx shared;
    try {
        shared = std::make_shared<Shared>(cb, ctx);
    } catch (...) {
        cb->ctx_free(ctx);
        set_werror(err, ZS_ERR_MEMORY, "out of memory");
        return nullptr;
    }
    wguarded(err, [&] {
        std::unique_ptr<zs_creator> p(new zs_creator);
        p->c = shared;
        p->creator.reset(new zim::writer::Creator);
        c = p.release();
    });
    return c;
}

void zs_creator_config(zs_creator *c, zs_config which, uint64_t value, const char *language) {
    zim::writer::Creator &w = *c->creator;
    switch (which) {
    case ZS_CFG_VERBOSE:
        w.configVerbose(value != 0);
        break;
    case ZS_CFG_COMPRESSION:
        w.configCompression(value ? zim::Compression::Zstd : zim::Compression::None);
        break;
    case ZS_CFG_CLUSTERSIZE:
        w.configClusterSize(static_cast<zim::size_type>(value));
        break;
    case ZS_CFG_INDEXING:
        w.configIndexing(value != 0, language ? language : "");
        break;
    case ZS_CFG_WORKERS:
        w.configNbWorkers(static_cast<unsigned>(value));
        break;
    }
}

int zs_creator_start(zs_creator *c, const char *path, zs_werror *err) {
    return creator_call(c, err, [&] {
        c->path = path;
        c->started = true;  // even a failed start may leave files to remove
        c->creator->startZimCreation(path);
    });
}

void zs_creator_set_mainpath(zs_creator *c, const char *path, size_t len) {
    c->creator->setMainPath(std::string(path, len));
}

int zs_creator_add_item(zs_creator *c, const zs_entry_def *def, void *item, zs_werror *err) {
    std::shared_ptr<zim::writer::Item> it;
    try {
        it = std::make_shared<Item>(c->c, item, def);
    } catch (...) {
        c->c->cb->release(item, def->provider);
        set_werror(err, ZS_ERR_MEMORY, "out of memory");
        return -1;
    }
    return creator_call(c, err, [&] { c->creator->addItem(std::move(it)); });
}

int zs_creator_add_metadata(zs_creator *c, zs_str name, zs_str content, zs_str mimetype,
                            zs_werror *err) {
    return creator_call(c, err, [&] {
        c->creator->addMetadata(str(name), str(content), str(mimetype));
    });
}

int zs_creator_add_illustration(zs_creator *c, unsigned size, zs_str content,
                                zs_werror *err) {
    return creator_call(c, err, [&] { c->creator->addIllustration(size, str(content)); });
}

int zs_creator_add_redirection(zs_creator *c, const zs_entry_def *def, zs_str target,
                               zs_werror *err) {
    return creator_call(c, err, [&] {
        c->creator->addRedirection(str(def->path), str(def->title), str(target),
                                   hints_of(def));
    });
}

int zs_creator_add_alias(zs_creator *c, const zs_entry_def *def, zs_str target,
                         zs_werror *err) {
    bool supported = true;
    int rc = creator_call(c, err, [&] {
        supported = add_alias(*c->creator, str(def->path), str(def->title), str(target),
                              hints_of(def), 0);
    });
    if (rc == 0 && !supported) {
        set_werror(err, ZS_ERR_ARG, "add_alias needs libzim >= 9.0 (Creator::addAlias); "
                                    "this build links libzim " LIBZIM_VERSION);
        err->unsupported = 1;
        return -1;
    }
    return rc;
}

int zs_creator_finish(zs_creator *c, zs_werror *err) {
    return creator_call(c, err, [&] {
        c->creator->finishZimCreation();
        c->written = true;
        c->finished = !c->c->failed;
    });
}

void zs_creator_free(zs_creator *c) {
    if (!c)
        return;
    if (c->libzim_failed) {
        // Leaked on purpose, with the items libzim still holds: destroying
        // it could hang (see Shared).  Its threads are idle or gone.
        (void)c->creator.release();
    } else {
        try {
            c->creator.reset();  // joins libzim's workers; drops queued items
        } catch (...) {
        }
    }
    if (c->started && !c->finished) {
        // libzim 8.1.1 writes to these and renames the first at the end.
        remove_tree(c->path + ".tmp");
        remove_tree(c->path + "_fulltext.idx.tmp");
        remove_tree(c->path + "_title.idx.tmp");
        if (c->written)  // complete but for data a worker failed to give
            unlink(c->path.c_str());
    }
    delete c;
}

}  // extern "C"
