"""Builds libzim._libzim with flags from `pkg-config libzim`."""
import glob
import shlex
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def pkg_config(*args: str) -> list[str]:
    try:
        out = subprocess.run(
            # The shim decodes zstd and xz clusters itself (zimshim_cluster*.cpp) and
            # gzips the server's answers with libdeflate (zimshim_gzip.cpp).
            ["pkg-config", *args, "libzim", "libzstd", "liblzma", "libdeflate"], check=True, capture_output=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            "libzim-c needs libzim's development files: "
            "apt-get install libzim-dev libxapian-dev libzstd-dev liblzma-dev libdeflate-dev pkg-config"
        ) from exc
    return shlex.split(out)


class BuildExt(build_ext):
    """C sources get C flags, the shim gets C++17; one compiler each."""

    def build_extension(self, ext):
        original = self.compiler._compile

        def compile_one(obj, src, ext_, cc_args, extra_postargs, pp_opts):
            if src.endswith(".cpp"):
                extra_postargs = [a for a in extra_postargs if a != "-std=c11"] + ["-std=c++17"]
            return original(obj, src, ext_, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = compile_one
        try:
            super().build_extension(ext)
        finally:
            self.compiler._compile = original


cflags = pkg_config("--cflags")
libs = pkg_config("--libs")

setup(
    ext_modules=[
        Extension(
            "libzim._libzim",
            # Every C and C++ file of src/: a new type family needs no edit here.
            sources=sorted(glob.glob("src/*.c")) + sorted(glob.glob("src/*.cpp")),
            # Without them, an edit to a header or to a table the sources include
            # (src/*.inc, written by tools/gen_entities.py) leaves an in-place build stale.
            depends=sorted(glob.glob("src/*.h") + glob.glob("src/*.hpp") + glob.glob("src/*.inc")),
            include_dirs=["src"],
            extra_compile_args=cflags + ["-std=c11", "-Wall", "-Wextra", "-O2"],
            extra_link_args=libs,
            language="c++",
        )
    ],
    cmdclass={"build_ext": BuildExt},
)
