"""Cluster-level editing of ZIM archives, for the cluster fuzzer and the damage tests.

Works on the file's bytes only (no libzim): reads the header and the cluster
pointer table, decodes and re-encodes zstd clusters through libzstd (ctypes;
any library exporting the ZSTD_ streaming API, so also the one inside
python-libzim's wheel) and xz clusters through the standard lzma module, and
writes a changed cluster at the archive's end, re-pointing the cluster to it
and rewriting the MD5 checksum, so nothing else moves.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import lzma
import struct

ZSTD, XZ = 5, 4
SYSTEM_ZSTD = ctypes.util.find_library("zstd") or "libzstd.so.1"


class _Buffer(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


_libs: dict[str, ctypes.CDLL] = {}


def _zstd(path: str) -> ctypes.CDLL:
    if path not in _libs:
        lib = ctypes.CDLL(path)
        lib.ZSTD_createDStream.restype = ctypes.c_void_p
        lib.ZSTD_freeDStream.argtypes = [ctypes.c_void_p]
        lib.ZSTD_initDStream.argtypes = [ctypes.c_void_p]
        lib.ZSTD_initDStream.restype = ctypes.c_size_t
        lib.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Buffer), ctypes.POINTER(_Buffer)]
        lib.ZSTD_decompressStream.restype = ctypes.c_size_t
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_getErrorName.argtypes = [ctypes.c_size_t]
        lib.ZSTD_getErrorName.restype = ctypes.c_char_p
        lib.ZSTD_versionString.restype = ctypes.c_char_p
        _libs[path] = lib
    return _libs[path]


def zstd_version(lib: str = SYSTEM_ZSTD) -> str:
    return _zstd(lib).ZSTD_versionString().decode()


def zstd_decode(data: bytes, lib: str = SYSTEM_ZSTD, limit: int = 1 << 30) -> tuple[bytes, str | None]:
    """The first frame of data decoded, and the error that stopped it (None: the frame ended).

    Bytes after the frame are ignored, as libzim ignores them.
    """
    z = _zstd(lib)
    ds = z.ZSTD_createDStream()
    try:
        z.ZSTD_initDStream(ds)
        src = ctypes.create_string_buffer(data, len(data))
        inb = _Buffer(ctypes.cast(src, ctypes.c_void_p), len(data), 0)
        out = bytearray()
        chunk = ctypes.create_string_buffer(1 << 16)
        while len(out) < limit:
            outb = _Buffer(ctypes.cast(chunk, ctypes.c_void_p), len(chunk), 0)
            r = z.ZSTD_decompressStream(ds, ctypes.byref(outb), ctypes.byref(inb))
            if z.ZSTD_isError(r):
                return bytes(out), "zstd: " + z.ZSTD_getErrorName(r).decode()
            out += chunk.raw[: outb.pos]
            if r == 0:
                return bytes(out), None
            if outb.pos == 0 and inb.pos == inb.size:
                return bytes(out), "zstd: truncated"
        return bytes(out), "too large"
    finally:
        z.ZSTD_freeDStream(ds)


def zstd_encode(data: bytes, level: int = 19) -> bytes:
    z = _zstd(SYSTEM_ZSTD)
    z.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    z.ZSTD_compressBound.restype = ctypes.c_size_t
    z.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
    z.ZSTD_compress.restype = ctypes.c_size_t
    dst = ctypes.create_string_buffer(z.ZSTD_compressBound(len(data)))
    n = z.ZSTD_compress(dst, len(dst), data, len(data), level)
    assert not z.ZSTD_isError(n)
    return dst.raw[:n]


def xz_decode(data: bytes) -> tuple[bytes, str | None]:
    d = lzma.LZMADecompressor(lzma.FORMAT_XZ)
    try:
        out = d.decompress(data)
    except lzma.LZMAError as e:
        return b"", f"xz: {e}"
    return out, None if d.eof else "xz: truncated"


def xz_encode(data: bytes) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32, preset=6)


def parse_table(plain: bytes, width: int) -> list[int]:
    """The offset table at the start of a decoded cluster (its first entry is its size)."""
    fmt = "<Q" if width == 8 else "<I"
    first, = struct.unpack_from(fmt, plain, 0)
    return [struct.unpack_from(fmt, plain, i)[0] for i in range(0, first, width)]


def pack_table(offsets: list[int], width: int) -> bytes:
    fmt = "<Q" if width == 8 else "<I"
    return b"".join(struct.pack(fmt, v % (1 << (8 * width))) for v in offsets)


class Zim:
    """A ZIM archive's bytes, with its cluster table."""

    def __init__(self, data: bytes):
        self.data = bytearray(data)
        self.entries, self.clusters = struct.unpack_from("<II", data, 24)
        self.cluster_ptr_pos, = struct.unpack_from("<Q", data, 48)
        self.checksum_pos, = struct.unpack_from("<Q", data, 72)

    def ptr(self, i: int) -> int:
        return struct.unpack_from("<Q", self.data, self.cluster_ptr_pos + 8 * i)[0]

    def set_ptr(self, i: int, pos: int) -> None:
        struct.pack_into("<Q", self.data, self.cluster_ptr_pos + 8 * i, pos)

    def info(self, i: int) -> int:
        return self.data[self.ptr(i)]

    def extent(self, i: int) -> tuple[int, int]:
        """(start, end) of cluster i: up to the next cluster or the checksum."""
        start = self.ptr(i)
        later = [p for p in (self.ptr(j) for j in range(self.clusters)) if p > start]
        return start, min(later + [self.checksum_pos])

    def raw(self, i: int) -> bytes:
        start, end = self.extent(i)
        return bytes(self.data[start + 1:end])

    def decoded(self, i: int) -> bytes:
        """Cluster i decoded (its offset table and blobs); raises on a bad stream."""
        codec = self.info(i) & 0x0F
        if codec in (0, 1):
            return self.raw(i)
        out, err = zstd_decode(self.raw(i)) if codec == ZSTD else xz_decode(self.raw(i))
        if err:
            raise ValueError(f"cluster {i}: {err}")
        return out

    def put_cluster(self, i: int, info: int, payload: bytes) -> None:
        """Writes cluster i anew (its info byte and payload) at the end, re-pointed there."""
        del self.data[self.checksum_pos:]
        self.set_ptr(i, len(self.data))
        self.data += bytes([info]) + payload
        self.checksum_pos = len(self.data)
        struct.pack_into("<Q", self.data, 72, self.checksum_pos)

    def encode(self, i: int, plain: bytes, codec: int | None = None) -> None:
        """Cluster i replaced by plain, compressed with codec (default: its own)."""
        info = self.info(i)
        codec = info & 0x0F if codec is None else codec
        payload = {ZSTD: zstd_encode, XZ: xz_encode}.get(codec, bytes)(plain)
        self.put_cluster(i, (info & 0xF0) | codec, payload)

    def finish(self) -> bytes:
        del self.data[self.checksum_pos:]
        self.data += hashlib.md5(self.data).digest()
        return bytes(self.data)


def to_xz(data: bytes) -> bytes:
    """The archive with every zstd cluster re-encoded as xz."""
    z = Zim(data)
    for i in range(z.clusters):
        if z.info(i) & 0x0F == ZSTD:
            z.encode(i, z.decoded(i), XZ)
    return z.finish()


def dirents(data: bytes) -> dict[str, tuple[int, int]]:
    """Path (without namespace) -> (cluster, blob) of every content entry."""
    entries, = struct.unpack_from("<I", data, 24)
    path_ptrs, = struct.unpack_from("<Q", data, 32)
    out = {}
    for i in range(entries):
        pos, = struct.unpack_from("<Q", data, path_ptrs + 8 * i)
        mime, = struct.unpack_from("<H", data, pos)
        if mime >= 0xFFFD:
            continue  # redirect or deleted
        cluster, blob = struct.unpack_from("<II", data, pos + 8)
        end = data.index(b"\0", pos + 16)
        out[data[pos + 16:end].decode()] = (cluster, blob)
    return out


def set_dirent(data: bytearray, path: str, cluster: int, blob: int) -> None:
    """Points the content entry path (without namespace) at cluster and blob, in place."""
    entries, = struct.unpack_from("<I", data, 24)
    path_ptrs, = struct.unpack_from("<Q", data, 32)
    for i in range(entries):
        pos, = struct.unpack_from("<Q", data, path_ptrs + 8 * i)
        end = data.index(b"\0", pos + 16)
        if struct.unpack_from("<H", data, pos)[0] < 0xFFFD and data[pos + 16:end].decode() == path:
            struct.pack_into("<II", data, pos + 8, cluster, blob)
            return
    raise KeyError(path)
