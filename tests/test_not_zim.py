"""Opening a file that is not a ZIM archive at all says so first, then libzim's detail.

libzim's own words ("Invalid magic number", "zim-file is too small to contain a
header") do not tell someone who passed the wrong file what is wrong.
"""

from __future__ import annotations

import pytest

import libzim
from libzim.reader import Archive

NOT_ZIM = {
    "text.txt": (b"This is a text file, long enough to hold a ZIM header's 80 bytes. " * 4,
                 "Invalid magic number"),
    "empty.zim": (b"", "too small to contain a header"),
    "short.zim": (b"ZIM", "too small to contain a header"),  # 3 of the 4 magic bytes
}


@pytest.mark.parametrize("name", sorted(NOT_ZIM))
def test_not_a_zim_archive(tmp_path, name):
    data, detail = NOT_ZIM[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(RuntimeError) as info:  # python-libzim raises RuntimeError
        Archive(path)
    assert type(info.value) is libzim.ArchiveError
    message = str(info.value)
    assert message.startswith(f"{path}: not a ZIM archive: "), message
    assert detail in message  # libzim's detail follows
    assert "\n" not in message


def test_truncated_zim_is_not_called_not_a_zim(tmp_path):
    """A file that starts like a ZIM archive is one, however broken."""
    path = tmp_path / "truncated.zim"
    path.write_bytes(b"ZIM\x04" + b"\0" * 20)
    with pytest.raises(libzim.ArchiveError) as info:
        Archive(path)
    assert "not a ZIM archive" not in str(info.value)
    assert str(info.value).startswith(f"{path}: ")
