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
    "ensure_combined_doc_zim",
    "build_combined_zim",
    "combined_doc_zim_path",
    "COMBINED_ARCHIVES",
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


def _link_tree(src: Path, dst: Path, skip: tuple[str, ...] = ()) -> None:
    """Materialise ``src`` at ``dst`` as hard links (copies across filesystems).

    Unlike _copy_tree, relative symlinks are resolved against their own
    directory: Python 3.11's copytree tests a link's target relative to the
    current directory, so with ignore_dangling_symlinks it silently dropped
    openjdk-17-doc's whole api/ (a relative link to ../openjdk-17-jre-headless).
    Hard links cost no time or disk for the 870 MB of the combined archive.
    """
    seen: set[str] = set()
    for root, dirs, files in os.walk(src, followlinks=True):
        real_root = os.path.realpath(root)
        if real_root in seen:  # a symlink loop, or the same tree twice
            dirs[:] = []
            continue
        seen.add(real_root)
        out = dst / os.path.relpath(root, src)
        out.mkdir(parents=True, exist_ok=True)
        for name in files:
            if root == str(src) and name in skip:
                continue
            real = os.path.realpath(os.path.join(root, name))
            if not os.path.isfile(real):
                continue  # dangling
            try:
                os.link(real, out / name)
            except OSError:
                shutil.copy2(real, out / name)


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
    if not src.is_dir():
        raise FileNotFoundError(f"source directory not found: {src}")
    if not (src / welcome).is_file():
        raise FileNotFoundError(f"welcome page {welcome!r} not found in {src}")
    return _build(lambda tree: _copy_tree(src, tree), out_path, title=title, welcome=welcome,
                  language=language, description=description, fulltext=fulltext, name=name,
                  creator=creator, publisher=publisher, threads=threads)


def _build(fill, out_path, *, title, welcome, language, description, fulltext, name,
           creator, publisher, threads) -> Path:
    """Let ``fill(tree)`` create the HTML tree in a temporary directory, then pack it."""
    out = Path(out_path)
    exe = shutil.which("zimwriterfs")
    if exe is None:
        raise RuntimeError("zimwriterfs not found; install it with: apt-get install -y zim-tools")
    out.parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="libzim-c-corpus-", dir=out.parent) as tmp:
        tree = Path(tmp) / "html"
        fill(tree)
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
        # openjdk-17-doc keeps its welcome page in the doc directory itself.
        root = direct.parent
        if (root / "index.html").is_file():
            return root, pkg
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


def _installed_version(package: str, install: bool) -> str:
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
    return version


def ensure_debian_doc_zim(
    package: str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    install: bool = False,
) -> Path:
    """Return a full-text-indexed ZIM of a Debian documentation package, building it if needed.

    Cached by package version, so upgrading the package rebuilds the fixture.
    """
    version = _installed_version(package, install)
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


# Named multi-package archives.  "rustjava" is the ~42,000-page benchmark
# archive of issue 19 (about ten times the largest single-package one); it
# takes minutes to build, so only bench/size_scaling.py asks for it, and only
# when told to (CI never builds it).
COMBINED_ARCHIVES = {"rustjava": ("rust-doc", "openjdk-17-doc")}

# A package's doc root (openjdk-17-doc) also holds Debian's packaging files.
_PACKAGING_FILES = ("changelog.Debian.gz", "changelog.gz", "NEWS.Debian.gz", "copyright")

_META_REFRESH = re.compile(rb"<meta\b[^>]*http-equiv\s*=\s*[\"']?refresh[\"']?[^>]*>", re.I)
_CONTENT = re.compile(rb"content\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.I)
_TARGET = re.compile(rb"^\s*\d*\s*;?\s*(?:url\s*=\s*)?[\"']?([^\"']*)[\"']?\s*$", re.I)


def _redirect_target(tree: Path, page: Path, target: str) -> str | None:
    """``target`` (relative to ``page``) as a link to a file of ``tree``, or None."""
    from urllib.parse import unquote

    # zimwriterfs takes the URL as a path: no fragment, query or %-escapes.
    bare = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not bare or "://" in bare or bare.startswith("/"):
        return None
    dest = Path(os.path.normpath(page.parent / bare))
    if tree not in dest.parents:
        return None
    if dest.is_dir() and (dest / "index.html").is_file():
        return bare.rstrip("/") + "/index.html"
    return bare if dest.is_file() else None


def _fix_meta_refreshes(tree: Path) -> int:
    """Make every HTML redirect zimwriterfs will see well-formed; return how many changed.

    zimwriterfs turns a page with <meta http-equiv="refresh" content="0;url=X">
    into a redirect to X and gives up on the whole build when X is not a file
    of the tree.  rust-doc 1.63 has 108 pages with a quoted URL ("0;URL='x'"),
    which zimwriterfs reads as a path starting with a quote, and 36 with a
    fragment ("x.html#part"), which it reads as part of the file name;
    openjdk has a refresh without "url=".  Such a target is rewritten to the plain form; one
    that is not in the tree loses its refresh and stays an ordinary page.  The
    tree is made of hard links to the installed files, so a changed page is
    written as a new file, never in place.
    """
    changed = 0
    for page in tree.rglob("*.html"):
        data = page.read_bytes()
        head = data[: data.lower().find(b"</head>") % (len(data) + 1) or len(data)]
        match = _META_REFRESH.search(head)
        if match is None:
            continue
        content = _CONTENT.search(match.group(0))
        raw = (content.group(1) or content.group(2)) if content else b""
        target = _TARGET.match(raw)
        url = target.group(1).decode("utf-8", "replace").strip() if target else ""
        good = _redirect_target(tree, page, url) if url else None
        plain = good is not None and good == url and re.match(rb"^\s*\d+\s*;\s*(url|URL)=[^\"' ]", raw)
        if plain:
            continue
        tag = f'<meta http-equiv="refresh" content="0;url={good}">'.encode() if good else b""
        fixed = data[: match.start()] + tag + data[match.end():]
        tmp = page.with_name(page.name + ".tmp-libzim-c")
        tmp.write_bytes(fixed)
        os.replace(tmp, page)
        changed += 1
    return changed


def _combined_parts(packages) -> list[tuple[str, Path, str, str]]:
    """(package, html dir, welcome page, "owner version") per package, in order."""
    parts = []
    for pkg in packages:
        html, owner = debian_doc_html_dir(pkg)
        welcome = _welcome_in(html)
        assert welcome is not None
        parts.append((pkg, html, welcome, f"{owner} {package_version(owner) or package_version(pkg)}"))
    return parts


def combined_doc_zim_path(name: str, packages=None, cache_dir=None) -> Path:
    """Where ensure_combined_doc_zim caches ``name`` for the installed package versions
    (whether or not it is built yet); raises if a package is not installed."""
    packages = tuple(packages or COMBINED_ARCHIVES[name])
    versions = []
    for pkg in packages:
        version = package_version(pkg)
        if version is None:
            raise RuntimeError(f"Debian package {pkg!r} is not installed; install it with: "
                               f"apt-get install -y {pkg}  (or pass install=True / --install)")
        versions.append(f"{pkg}_{version}")
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    safe = re.sub(r"[^A-Za-z0-9.+-]+", "_", "+".join(versions))
    return cache / f"{name}__{safe}__f{_BUILD_FORMAT}.zim"


def _write_main_page(tree: Path, title: str, parts) -> None:
    from html import escape
    from urllib.parse import quote

    links = "\n".join(
        f'<li><a href="{quote(pkg)}/{quote(welcome)}">{escape(pkg)}</a> ({escape(what)})</li>'
        for pkg, _h, welcome, what in parts
    )
    title = escape(title)
    (tree / "index.html").write_text(
        f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{title}</title></head>\n<body><h1>{title}</h1>\n"
        f"<p>Documentation from Debian packages, one directory each:</p>\n<ul>\n{links}\n</ul>\n"
        f"</body></html>\n",
        encoding="utf-8",
    )


def ensure_combined_doc_zim(
    name: str,
    packages=None,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    install: bool = False,
    threads: int | None = None,
) -> Path:
    """One full-text-indexed ZIM holding several Debian documentation packages.

    Each package's HTML tree goes under a directory named after the package
    (``rust-doc/std/index.html``), and a generated main page links them.
    ``packages`` defaults to COMBINED_ARCHIVES[name].  Cached by name and
    package versions, like ensure_debian_doc_zim.
    """
    packages = tuple(packages or COMBINED_ARCHIVES[name])
    for pkg in packages:
        _installed_version(pkg, install)
    out = combined_doc_zim_path(name, packages, cache_dir)
    if out.is_file() and out.stat().st_size > 0:
        return out
    title = " + ".join(packages)
    if len(title) > 30:  # libzim warns about longer titles
        title = f"{name} documentation"[:30]
    return build_combined_zim(
        _combined_parts(packages),
        out,
        title=title,
        name=f"libzim-c_{name}",
        description="HTML documentation from Debian packages " + ", ".join(packages),
        threads=threads,
    )


def build_combined_zim(parts, out_path, *, title: str, name: str, description: str,
                       threads: int | None = None) -> Path:
    """Pack several HTML trees into one full-text-indexed ZIM.

    ``parts`` is a list of (directory name in the archive, source directory,
    its welcome page, a line for the main page).  Each tree is linked in
    under its name; a generated index.html, the main page, links the welcome
    pages.  Broken HTML redirects are repaired (see _fix_meta_refreshes).
    """
    def fill(tree: Path) -> None:
        tree.mkdir()
        for prefix, html, _welcome, _what in parts:
            _link_tree(Path(html), tree / prefix, _PACKAGING_FILES)
        _write_main_page(tree, title, parts)
        _fix_meta_refreshes(tree)

    return _build(
        fill,
        out_path,
        title=title,
        welcome="index.html",
        language="eng",
        description=description[:80],
        fulltext=True,
        name=name,
        creator="libzim-c",
        publisher="libzim-c",
        threads=threads,
    )

if __name__ == "__main__":  # handy for building fixtures by hand
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__,
        epilog="python3 tools/corpus.py --install --combined rustjava  builds the ~42,000-page "
               "rust-doc + openjdk-17-doc archive (minutes); extra PACKAGES after the name "
               "override COMBINED_ARCHIVES.",
    )
    parser.add_argument("packages", nargs="*")
    parser.add_argument("--cache-dir")
    parser.add_argument("--install", action="store_true")
    parser.add_argument("--combined", metavar="NAME",
                        help="build ONE archive named NAME from all PACKAGES (default: "
                             + "; ".join(f"{k}: {' '.join(v)}" for k, v in COMBINED_ARCHIVES.items()) + ")")
    parser.add_argument("--threads", type=int, help="zimwriterfs --threads")
    args = parser.parse_args()
    if args.combined:
        print(ensure_combined_doc_zim(args.combined, args.packages or None, args.cache_dir,
                                      install=args.install, threads=args.threads))
    elif not args.packages:
        parser.error("give PACKAGES, or --combined NAME")
    for pkg in [] if args.combined else args.packages:
        print(ensure_debian_doc_zim(pkg, args.cache_dir, install=args.install))
