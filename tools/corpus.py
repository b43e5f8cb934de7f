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
    "page_references",
    "archive_paths",
    "missing_references",
    "DEFAULT_CACHE_DIR",
]

DEFAULT_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "libzim-c"

# Bump when the way fixtures are built changes, so stale caches are not reused.
# 2: symlinks followed wherever they point (python3-doc's jquery.js, underscore.js).
_BUILD_FORMAT = 2

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


def _copy_tree(src: Path, dst: Path, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Materialise ``src`` at ``dst`` with every symlink followed, as hard links (copies
    across filesystems); returns (path in the tree, why) for each file left out.

    Debian's doc trees link into other packages: python3-doc's _static/jquery.js
    and underscore.js point into /usr/share/javascript, openjdk-17-doc's api/ to
    ../openjdk-17-jre-headless. zimwriterfs stores a symlink as nothing useful, so
    each link becomes the file or tree it points to, wherever that is. A relative
    link resolves against its own directory: Python 3.11's copytree tested it
    against the current directory, and with ignore_dangling_symlinks silently
    dropped python3-doc's scripts (the served pages lost their sidebar layout)
    and openjdk-17-doc's whole api/. Left out, and returned: dangling links, a
    link back to a directory it is inside (a loop), anything but files and
    directories; and the top-level names in ``skip``. Hard links cost no time or
    disk for the 870 MB of the combined archive; nothing here writes into them.
    """
    left_out: list[tuple[str, str]] = []

    def walk(real_dir: str, rel: str, ancestors: frozenset[str]) -> None:
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for entry in sorted(os.scandir(real_dir), key=lambda e: e.name):
            name = f"{rel}/{entry.name}" if rel else entry.name
            if not rel and entry.name in skip:
                continue
            real = os.path.realpath(entry.path)  # relative links resolve against real_dir
            if os.path.isdir(real):
                if real in ancestors:
                    left_out.append((name, f"a symlink back to its own parent {real} (a loop)"))
                else:
                    walk(real, name, ancestors | {real})
            elif os.path.isfile(real):
                try:
                    os.link(real, dst / name)
                except OSError:
                    shutil.copy2(real, dst / name)
            elif entry.is_symlink():
                left_out.append((name, f"a dangling symlink to {os.readlink(entry.path)}"))
            else:
                left_out.append((name, "not a regular file"))

    top = os.path.realpath(src)
    walk(top, "", frozenset({top}))
    return left_out


_link_tree = _copy_tree  # the name bench/ and older code use


# href= and src= values in a page's tags (quoted or not), as bytes: a regex, not an
# HTML parser, for speed (python3-doc's 530 pages: 6.5 s on a 2-core machine at load 20).
# Only inside tags: a code sample's escaped "href=&quot;x&quot;" is text. One per tag
# (the first href or src): no element the pages use needs both.
_REFERENCE = re.compile(rb"""<[A-Za-z][^>]*?\s(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.I)


def page_references(tree: Path) -> dict[str, set[str]]:
    """Every same-origin file a page of ``tree`` references (its links and the
    ``src`` of its scripts, images, frames), as a path relative to the tree,
    mapped to the pages that reference it.

    Same-origin: no scheme, no host, not only a fragment. A path that leaves
    the tree (``../`` past its root, or starting with ``/``) is kept as it is
    written, prefixed with ``/`` or ``../``, so the report can say why it cannot
    be in the archive.
    """
    from html import unescape
    from urllib.parse import unquote, urlsplit

    refs: dict[str, set[str]] = {}
    for page in sorted(tree.rglob("*.htm*")):
        if page.suffix.lower() not in (".html", ".htm") or not page.is_file():
            continue
        page_rel = page.relative_to(tree).as_posix()
        for m in _REFERENCE.finditer(page.read_bytes()):
            raw = unescape((m.group(1) or m.group(2) or m.group(3) or b"").decode("utf-8", "replace")).strip()
            parts = urlsplit(raw)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # another origin, mailto:/javascript:/data:, or a fragment of this page
            path = unquote(parts.path)
            if path.startswith("/"):
                target = path
            else:
                target = os.path.normpath(os.path.join(os.path.dirname(page_rel), path)).replace(os.sep, "/")
                if target == "." or path.endswith("/"):
                    target = f"{target}/index.html" if target != "." else "index.html"
            refs.setdefault(target, set()).add(page_rel)
    return refs


def archive_paths(zim: Path) -> set[str]:
    """The paths of an archive's entries (zimdump list, from zim-tools like zimwriterfs)."""
    exe = shutil.which("zimdump")
    if exe is None:
        raise RuntimeError("zimdump not found; install it with: apt-get install -y zim-tools")
    proc = subprocess.run([exe, "list", str(zim)], capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"zimdump list {zim} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return set(proc.stdout.splitlines())


def missing_references(tree: Path, in_archive: set[str],
                       left_out: list[tuple[str, str]] = ()) -> list[tuple[str, str, str]]:
    """(referenced path, a page referencing it, why it is missing) for every file the
    pages of ``tree`` reference that ``in_archive`` lacks, sorted by path."""
    dropped = dict(left_out)
    missing = []
    for target, pages in sorted(page_references(tree).items()):
        if target in in_archive:
            continue
        if target.startswith("/"):
            why = "an absolute path: a ZIM has no server root to resolve it against"
        elif target.startswith("../") or target == "..":
            why = "outside the tree the archive is built from"
        elif target in dropped:
            why = f"left out of the tree: {dropped[target]}"
        elif (tree / target).is_file():
            why = "in the tree, but zimwriterfs did not store it"
        elif (tree / target).is_dir():
            why = "a directory without index.html"
        else:
            why = "not in the tree (the source never had it)"
        missing.append((target, min(pages), why))
    return missing


def _report_missing(out: Path, missing: list[tuple[str, str, str]]) -> Path:
    """Write the missing references beside the archive (NAME.zim.missing.txt, one per
    line); one line on stderr says how many and where."""
    import sys

    report = out.with_name(out.name + ".missing.txt")
    lines = [f"{target}\treferenced by {page}\t{why}" for target, page, why in missing]
    report.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    if missing:
        sys.stderr.write(f"corpus: {out.name}: {len(missing)} referenced files are not in the archive "
                         f"(first: {missing[0][0]}: {missing[0][2]}); all in {report}\n")
    return report


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
    Symlinks in ``src_dir`` are followed (see _copy_tree). Every file the pages
    reference is checked for in the archive: the ones missing, with the reason,
    go to ``NAME.zim.missing.txt`` beside it (empty when none), and one line on
    stderr says how many.
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
    """Let ``fill(tree)`` create the HTML tree in a temporary directory (returning what it
    left out, as _copy_tree does), pack it, and report the pages' references the archive
    lacks (_report_missing)."""
    out = Path(out_path)
    exe = shutil.which("zimwriterfs")
    if exe is None:
        raise RuntimeError("zimwriterfs not found; install it with: apt-get install -y zim-tools")
    out.parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="libzim-c-corpus-", dir=out.parent) as tmp:
        tree = Path(tmp) / "html"
        left_out = fill(tree)
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
        _report_missing(out, missing_references(tree, archive_paths(tmp_out), left_out))
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
    # tools/apt.sh: one lock for our concurrent scripts, waits for a foreign apt.
    apt_sh = Path(__file__).resolve().parent / "apt.sh"
    subprocess.run(["bash", str(apt_sh), "install", "--no-install-recommends", package], check=True)


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


def _cached_zim(cache: Path, key: str, stem: str) -> Path:
    """Where a built archive is cached: ``CACHE/KEY/STEM.zim``.

    The key (package, version, build format) names the folder, so the file keeps a
    short, readable name: zim serve and zim mcp take a book's name from its file
    name (``python3-doc``, not ``python3-doc__python3-doc_3.11.2-1__f2``). A file
    cached under the older flat name ``CACHE/KEY.zim`` is moved into place.
    """
    out = cache / key / f"{stem}.zim"
    old = cache / f"{key}.zim"
    if not out.exists() and old.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(old, out)
    return out


def ensure_debian_doc_zim(
    package: str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    install: bool = False,
    announce=None,
) -> Path:
    """Return a full-text-indexed ZIM of a Debian documentation package, building it if needed.

    Cached by package version, so upgrading the package rebuilds the fixture.
    ``announce(line)``, when given, is told before a long step (an apt-get
    install, a build) what it is and roughly how long it takes.
    """
    if announce is not None and package_version(package) is None and install:
        announce(f"installing the Debian package {package} (apt-get; a minute or so)")
    version = _installed_version(package, install)
    html, owner = debian_doc_html_dir(package)
    owner_version = package_version(owner) or version
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    safe_version = re.sub(r"[^A-Za-z0-9.+-]+", "_", f"{owner}_{owner_version}")
    out = _cached_zim(cache, f"{package}__{safe_version}__f{_BUILD_FORMAT}", package)
    if out.is_file() and out.stat().st_size > 0:
        return out

    welcome = _welcome_in(html)
    assert welcome is not None  # debian_doc_html_dir only returns dirs that have one
    if announce is not None:
        announce(f"building {out} from {html} with zimwriterfs, once (about a minute on 2 idle "
                 "cores, a few on a busy machine; the full-text index is most of it)")
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
    return _cached_zim(cache, f"{name}__{safe}__f{_BUILD_FORMAT}", name)


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
    def fill(tree: Path) -> list[tuple[str, str]]:
        tree.mkdir()
        left_out = []
        for prefix, html, _welcome, _what in parts:
            left_out += [(f"{prefix}/{name}", why) for name, why in _copy_tree(Path(html), tree / prefix, _PACKAGING_FILES)]
        _write_main_page(tree, title, parts)
        _fix_meta_refreshes(tree)
        return left_out

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
