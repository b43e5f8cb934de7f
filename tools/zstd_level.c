/* LD_PRELOAD'ed by tools/synthetic.py --zstd-level N: libzim compresses every
 * cluster with ZSTD_initCStream(stream, 19) and no API changes the level, and
 * level 19 is most of a big synthetic build's CPU (44% of a full-text build's
 * samples, 62% of a title-only one's).  This definition comes first in the
 * symbol lookup, so libzim's call lands here and gets LIBZIM_C_ZSTD_LEVEL
 * instead.  The body is what libzstd's own ZSTD_initCStream does, through its
 * stable API.  A tool for benchmark fixtures only: the archive's clusters hold
 * the same blobs, compressed at another level. */
#include <stdlib.h>
#include <zstd.h>

size_t ZSTD_initCStream(ZSTD_CStream *zcs, int level) {
    const char *s = getenv("LIBZIM_C_ZSTD_LEVEL");
    size_t r;
    if (s && *s)
        level = atoi(s);
    r = ZSTD_CCtx_reset(zcs, ZSTD_reset_session_only);
    if (ZSTD_isError(r))
        return r;
    r = ZSTD_CCtx_refCDict(zcs, NULL);
    if (ZSTD_isError(r))
        return r;
    return ZSTD_CCtx_setParameter(zcs, ZSTD_c_compressionLevel, level);
}
