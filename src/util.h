/* Helpers every type family of libzim._libzim uses: raising shim errors,
 * argument parsing, strings, handle guards, locks and the GIL-release macros. */
#ifndef LIBZIM_C_UTIL_H
#define LIBZIM_C_UTIL_H

#include "module.h"

#include <pythread.h>
#include <stdatomic.h>
#include <time.h>

#include "zimshim.h"

/* Raise the Python exception for a shim error; `what` (usually the archive's
 * file name) starts the one-line message.  Always returns NULL. */
PyObject *zc_raise(zc_state *st, const zs_error *err, PyObject *what);
/* Raises exc("what: msg"); returns NULL. */
PyObject *zc_raise_as(PyObject *exc, const char *msg, PyObject *what);
/* Closed-object error naming the file. */
PyObject *zc_raise_closed(zc_state *st, const char *kind, PyObject *what);

/* Arguments of a METH_FASTCALL | METH_KEYWORDS method, taken by position or
 * by name as python-libzim's (Cython) methods take them: names[0..n) are the
 * parameters, the first npos may be positional, the first nreq are
 * required.  out[i] is borrowed, or NULL when not given. */
int zc_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
            const char *const *names, int n, int npos, int nreq, PyObject **out);

/* A METH_FASTCALL | METH_KEYWORDS wrapper around a METH_O function whose one
 * parameter may also be passed by name. */
#define ZC_KEYWORD_ARG(fn, pyname, param) ZC_KEYWORD_ARG_LINKAGE(static, fn, pyname, param)
/* The same wrapper for a method table in another file (archive_metadata.c). */
#define ZC_KEYWORD_ARG_EXTERN(fn, pyname, param) ZC_KEYWORD_ARG_LINKAGE(, fn, pyname, param)
#define ZC_KEYWORD_ARG_LINKAGE(linkage, fn, pyname, param)                         \
    linkage PyObject *fn##_kw(PyObject *self, PyObject *const *args, Py_ssize_t nargs, \
                              PyObject *kwnames) {                                   \
        static const char *const names_[] = {param};                               \
        PyObject *arg_;                                                            \
        if (zc_args(pyname, args, nargs, kwnames, names_, 1, 1, 1, &arg_) < 0)     \
            return NULL;                                                           \
        return fn(self, arg_);                                                     \
    }
#define ZC_KW_METHOD(fn) ((PyCFunction)(void (*)(void))fn##_kw), METH_FASTCALL | METH_KEYWORDS

/* tp_dealloc of a GC type whose tp_clear drops every reference it holds
 * (Query, Search, the result types of both search families). */
void zc_plain_dealloc(PyObject *self);

/* module.attr, imported on first use and kept in *slot (module state) for the
 * module's lifetime: importing uuid and pathlib at init doubled the time of
 * `import libzim`.  Borrowed; NULL with an exception set on failure. */
PyObject *zc_lazy_import(PyObject **slot, const char *module, const char *attr);

/* The type's name after the module prefix ("Archive"), as reprs show it: what
 * CPython's private _PyType_Name does, from the public tp_name. */
static inline const char *zc_type_name(PyTypeObject *tp) {
    const char *dot = strrchr(tp->tp_name, '.');
    return dot ? dot + 1 : tp->tp_name;
}

/* UTF-8 of a str argument, refusing embedded NULs where libzim would cut. */
const char *zc_utf8(PyObject *s, Py_ssize_t *len, const char *argname);

/* A str from archive bytes; invalid UTF-8 is replaced, never an error,
 * because corrupt archives must still be walkable. */
static inline PyObject *zc_str(zs_str s) {
    if (s.len == 0)  /* every snippet of a snippet-less page */
        return PyUnicode_New(0, 0);
    return PyUnicode_DecodeUTF8(s.ptr, (Py_ssize_t)s.len, "replace");
}

/* A str from a buffer the shim built (its own UTF-8 output), freed here. */
static inline PyObject *zc_take_str(char *buf, size_t len) {
    PyObject *r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "strict");
    zs_buffer_free(buf);
    return r;
}

/*
 * Keeps a native handle alive while calls that released the GIL use it, so
 * that close() from another thread never frees it under them: close() marks
 * the guard closed and the last user out frees the handle.  Atomics, not
 * the GIL, make this correct, so it also holds without a GIL.
 *
 * One word holds both the closed flag (bit 0) and the number of users (the
 * rest, in steps of ZC_GUARD_USER), so that every step sees both at once.
 * enter() adds a user only by a compare-and-swap from a value whose closed
 * bit is clear: once close() has set the bit the count can only fall, so it
 * reaches zero exactly once after close(), and exactly one party sees that:
 * close() itself (the bit set on a count of zero) or the leave() that takes
 * the last user away from a closed guard (the word was ZC_GUARD_USER|closed).
 * That one frees the handle.  With separate words (users, then closed), a
 * use counted just before close() read the count and dropped just after,
 * on finding the guard closed, was a use that freed nothing: nobody did.
 */
#define ZC_GUARD_CLOSED 1L
#define ZC_GUARD_USER 2L
typedef struct {
    _Atomic(void *) handle;
    atomic_long state;
} zc_guard;

/* Testing hook: while nonzero, enter() sleeps that many microseconds (GIL
 * released) between reading the state and taking its use, so that tests can
 * land a close() in that window (libzim._libzim._test_guard_pause). */
extern atomic_long zc_guard_pause_us;
void zc_guard_pause(void);

/* Must be called with the GIL held (the testing pause releases it). */
static inline void *zc_guard_enter(zc_guard *g) {
    long s = atomic_load(&g->state);
    for (;;) {
        if (s & ZC_GUARD_CLOSED)
            return NULL;
        if (atomic_load_explicit(&zc_guard_pause_us, memory_order_relaxed))
            zc_guard_pause();
        /* On failure s is reloaded: a close() meanwhile is seen above. */
        if (atomic_compare_exchange_weak(&g->state, &s, s + ZC_GUARD_USER))
            break;
    }
    void *h = atomic_load(&g->handle);
    if (!h)  /* not opened yet: nothing to free either way */
        atomic_fetch_sub(&g->state, ZC_GUARD_USER);
    return h;
}

static inline void zc_guard_leave(zc_guard *g, void (*free_fn)(void *)) {
    if (atomic_fetch_sub(&g->state, ZC_GUARD_USER) == (ZC_GUARD_USER | ZC_GUARD_CLOSED)) {
        void *h = atomic_exchange(&g->handle, NULL);
        if (h)
            free_fn(h);
    }
}

static inline void zc_guard_close(zc_guard *g, void (*free_fn)(void *)) {
    if (atomic_fetch_or(&g->state, ZC_GUARD_CLOSED) == 0) {
        void *h = atomic_exchange(&g->handle, NULL);
        if (h)
            free_fn(h);
    }
}

static inline int zc_guard_closed(zc_guard *g) {
    return (atomic_load(&g->state) & ZC_GUARD_CLOSED) || !atomic_load(&g->handle);
}

/*
 * Per-object lock for state libzim does not let two threads touch at once
 * (an iterator's position).  As in CPython's _bz2module.c: try without
 * blocking, else wait with the GIL released so the holder can finish.
 */
#define ZC_LOCK(lock)                                   \
    do {                                                \
        if (!PyThread_acquire_lock((lock), 0)) {        \
            Py_BEGIN_ALLOW_THREADS                      \
            PyThread_acquire_lock((lock), 1);           \
            Py_END_ALLOW_THREADS                        \
        }                                               \
    } while (0)
#define ZC_UNLOCK(lock) PyThread_release_lock(lock)

/* Per-object critical sections for the little mutable state (an item's
 * cached content, a Query's fields, a Searcher's archive list): real locks on
 * free-threaded builds (3.13t), where the module declares Py_MOD_GIL_NOT_USED;
 * with a GIL, which already serialises them, plain blocks. */
#ifdef Py_BEGIN_CRITICAL_SECTION
#define ZC_BEGIN_CS(o) Py_BEGIN_CRITICAL_SECTION(o)
#define ZC_END_CS() Py_END_CRITICAL_SECTION()
#else
#define ZC_BEGIN_CS(o) {
#define ZC_END_CS() }
#endif

/* Runs a native call with the GIL released; stmt touches no Python object. */
#define NOGIL(stmt)                \
    do {                           \
        Py_BEGIN_ALLOW_THREADS     \
        stmt;                      \
        Py_END_ALLOW_THREADS       \
    } while (0)

/*
 * Adaptive GIL release, for calls that are usually a few microseconds (a
 * lookup answered from libzim's dirent caches, a read from a cached cluster)
 * but touch the disk or decompress when the data is cold.  Releasing the GIL
 * around a 1 us call lets another thread that runs Python take it, and
 * getting it back then waits for that thread's switch interval: measured
 * here, lookups fell from 950,000/s to 1,100-1,700/s while a second thread
 * ran a Python loop.  Holding it through a cold read stalls every thread for
 * that read instead.  So each archive keeps a moving average of the native
 * time of each kind of call, starting high (a fresh archive is cold), and the
 * GIL is released only while that average is above ZC_ADAPTIVE_NS.
 */
#define ZC_ADAPTIVE_NS 20000LL
#define ZC_ADAPTIVE_START_NS 1000000LL
typedef atomic_llong zc_cost;

static inline long long zc_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void zc_cost_note(zc_cost *c, long long ns) {
    /* Races lose an update at worst; the average stays meaningful. */
    long long avg = atomic_load_explicit(c, memory_order_relaxed);
    atomic_store_explicit(c, avg + (ns - avg) / 4, memory_order_relaxed);
}

#define ZC_ADAPTIVE(cost, stmt)                                              \
    do {                                                                     \
        long long t0_ = zc_now_ns(), t1_;                                    \
        if (atomic_load_explicit((cost), memory_order_relaxed) > ZC_ADAPTIVE_NS) { \
            Py_BEGIN_ALLOW_THREADS                                           \
            stmt;                                                            \
            t1_ = zc_now_ns();                                               \
            Py_END_ALLOW_THREADS                                             \
        } else {                                                             \
            stmt;                                                            \
            t1_ = zc_now_ns();                                               \
        }                                                                    \
        zc_cost_note((cost), t1_ - t0_);                                     \
    } while (0)

/* Creates a heap type bound to the module; with public, also adds it to the
 * module under the last part of its dotted name. */
int zc_add_type(PyObject *m, PyTypeObject **slot, PyType_Spec *spec, int public);

/* __reduce__ of every picklable type: libzim._pickle.reduce(self).  The
 * reconstructors live in Python; the types expose only the state it needs. */
PyObject *zc_reduce(PyObject *self, PyObject *noargs);
#define ZC_REDUCE_METHOD \
    {"__reduce__", zc_reduce, METH_NOARGS,                                            \
     "__reduce__($self, /)\n--\n\n"                                                   \
     "Pickle support: the object travels without content and is rebuilt on\n"        \
     "the other side, its archive reopened once per process (libzim._pickle)."}

#endif
