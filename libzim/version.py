"""Versions of libzim and the libraries it was built with."""
import sys

from libzim._libzim import _versions


def get_versions() -> dict[str, str]:
    """Library name to version, libzim first, as libzim reports them."""
    return dict(_versions())


def get_libzim_version() -> str:
    """The version of the libzim this extension is linked against."""
    return get_versions()["libzim"]


# A string annotation: importing typing for it would cost milliseconds at import.
def print_versions(out: "TextIO" = sys.stdout) -> None:  # noqa: F821
    """Print one library per line, as python-libzim does."""
    for library, version in get_versions().items():
        print(f"- {library} {version}", file=out)


__all__ = ["get_libzim_version", "get_versions", "print_versions"]
