"""Build ZIM fixtures from HTML trees (shared by tests, the CLI demo and bench/).

Not part of the installed package: import it with tools/ on sys.path, or run
``python3 tools/corpus.py PACKAGE...`` to build documentation archives by hand.
Pure stdlib on purpose: it must work before the extension is built, and
under any interpreter (the benchmark runs it from Debian's python too).
zimwriterfs (Debian package ``zim-tools``) does the actual writing.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

__all__ = [
    "write_png",
    "build_zim_from_dir",
    "ensure_debian_doc_zim",
    "debian_doc_html_dir",
    "package_version",
    "DEFAULT_CACHE_DIR",
]

DEFAULT_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "libzim-c"

# Bump when the way fixtures are built changes, so stale caches are not reused.
_BUILD_FORMAT = 1

_ILLUSTRATION = "_libzim_c_illustration_48.png"


def write_png(path: str | os.PathLike[str], size: int = 48) -> Path:
    """Write a size x size opaque RGB PNG (zimwriterfs insists on 48x48)."""
    path = Path(path)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + tag
            + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    # A simple diagonal gradient: deterministic bytes, so rebuilt ZIMs stay identical.
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # filter type "None" for this scanline
        for x in range(size):
            rows += bytes(((x * 5) & 0xFF, (y * 5) & 0xFF, 0x80))
    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    data = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )
    path.write_bytes(data)
    return path


def _copy_tree(src: Path, dst: Path) -> None:
    # Debian doc trees contain symlinks into /usr/share/javascript (sometimes
    # dangling when the target package is absent); zimwriterfs would store a
    # link it cannot resolve, so materialise real files and drop dangling ones.
    shutil.copytree(src, dst, symlinks=False, ignore_dangling_symlinks=True)


def build_zim_from_dir(
    src_dir: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    title: str,
    welcome: str = "index.html",
    language: str = "eng",
    description: str = "Test content",
    fulltext: bool = True,
    name: str | None = None,
    creator: str = "libzim-c",
    publisher: str = "libzim-c",
    threads: int | None = None,
) -> Path:
    """Pack ``src_dir`` into ``out_path`` with zimwriterfs and return the path.

    The output only appears once complete (written under a temporary name, then
    renamed), so an interrupted build never leaves a truncated ZIM in a cache.
    """
    src = Path(src_dir)
    out = Path(out_path)
    if not src.is_dir():
        raise FileNotFoundError(f"source directory not found: {src}")
    if not (src / welcome).is_file():
        raise FileNotFoundError(f"welcome page {welcome!r} not found in {src}")
    exe = shutil.which("zimwriterfs")
    if exe is None:
        raise RuntimeError("zimwriterfs not found; install it with: apt-get install -y zim-tools")
    out.parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="libzim-c-corpus-", dir=out.parent) as tmp:
        tree = Path(tmp) / "html"
        _copy_tree(src, tree)
        write_png(tree / _ILLUSTRATION)
        # zimwriterfs refuses to overwrite and derives nothing from the name,
        # so a temporary name in the same directory makes the rename atomic.
        tmp_out = Path(tmp) / ("build-" + out.name)
        cmd = [
            exe,
            f"--welcome={welcome}",
            f"--illustration={_ILLUSTRATION}",
            f"--language={language}",
            f"--title={title}",
            f"--description={description[:80]}",  # libzim rejects longer descriptions
            f"--creator={creator}",
            f"--publisher={publisher}",
            f"--name={name or re.sub(r'[^A-Za-z0-9_.-]+', '_', title).lower()}",
        ]
        if threads:
            cmd.append(f"--threads={threads}")
        if not fulltext:
            cmd.append("--withoutFTIndex")
        cmd += [str(tree), str(tmp_out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        if proc.returncode != 0 or not tmp_out.is_file():
            raise RuntimeError(
                f"zimwriterfs failed (exit {proc.returncode}) building {out}:\n"
                f"command: {' '.join(cmd)}\n"
                f"stderr:\n{proc.stderr.strip()[-4000:]}\n"
                f"stdout (tail):\n{proc.stdout.strip()[-2000:]}"
            )
        os.replace(tmp_out, out)
    return out


def package_version(package: str) -> str | None:
    """Installed version of a Debian package, or None if it is not installed."""
    try:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}\t${Version}", package],
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        return None
    if proc.returncode != 0:
        return None
    status, _, version = proc.stdout.partition("\t")
    if not status.endswith(" installed"):
        return None
    return version.strip() or None


def _package_depends(package: str) -> list[str]:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Depends}", package], capture_output=True, text=True
    )
    if proc.returncode != 0:
        return []
    return [d.strip().split()[0] for d in proc.stdout.split(",") if d.strip()]


def _package_files(package: str) -> list[str]:
    proc = subprocess.run(["dpkg-query", "-L", package], capture_output=True, text=True)
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def _welcome_in(html: Path) -> str | None:
    for candidate in ("index.html", "contents.html"):
        if (html / candidate).is_file():
            return candidate
    return None


def debian_doc_html_dir(package: str) -> tuple[Path, str]:
    """Return (html_dir, owning_package) for an installed documentation package.

    Metapackages such as ``linux-doc`` only depend on the versioned package that
    holds the files (``linux-doc-6.1``), so dependencies are searched too.
    """
    for pkg in [package, *_package_depends(package)]:
        direct = Path("/usr/share/doc") / pkg / "html"
        if direct.is_dir() and _welcome_in(direct):
            return direct, pkg
        # Otherwise the shallowest directory named html with a welcome page.
        dirs = sorted(
            {Path(f) for f in _package_files(pkg) if f.rstrip("/").endswith("/html")},
            key=lambda p: (len(p.parts), str(p)),
        )
        for d in dirs:
            if d.is_dir() and _welcome_in(d):
                return d, pkg
    raise FileNotFoundError(f"no HTML documentation directory found for package {package!r}")


def _apt_install(package: str) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", package]
    if subprocess.run(cmd, env=env).returncode == 0:
        return
    # A fresh machine has no package lists yet; refresh once and retry.
    subprocess.run(["apt-get", "update"], env=env, check=True)
    subprocess.run(cmd, env=env, check=True)


def ensure_debian_doc_zim(
    package: str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    install: bool = False,
) -> Path:
    """Return a full-text-indexed ZIM of a Debian documentation package, building it if needed.

    Cached by package version, so upgrading the package rebuilds the fixture.
    """
    version = package_version(package)
    if version is None:
        if not install:
            raise RuntimeError(
                f"Debian package {package!r} is not installed; install it with: "
                f"apt-get install -y {package}  (or pass install=True)"
            )
        _apt_install(package)
        version = package_version(package)
        if version is None:
            raise RuntimeError(f"apt-get install {package} did not install it")

    html, owner = debian_doc_html_dir(package)
    owner_version = package_version(owner) or version
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    safe_version = re.sub(r"[^A-Za-z0-9.+-]+", "_", f"{owner}_{owner_version}")
    out = cache / f"{package}__{safe_version}__f{_BUILD_FORMAT}.zim"
    if out.is_file() and out.stat().st_size > 0:
        return out

    welcome = _welcome_in(html)
    assert welcome is not None  # debian_doc_html_dir only returns dirs that have one
    return build_zim_from_dir(
        html,
        out,
        title=f"{package} documentation",
        welcome=welcome,
        description=f"HTML documentation from Debian package {owner} {owner_version}",
        name=f"debian_{package}",
        fulltext=True,
    )


if __name__ == "__main__":  # handy for building fixtures by hand
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("packages", nargs="+")
    parser.add_argument("--cache-dir")
    parser.add_argument("--install", action="store_true")
    args = parser.parse_args()
    for pkg in args.packages:
        print(ensure_debian_doc_zim(pkg, args.cache_dir, install=args.install))
