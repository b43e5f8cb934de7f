"""``python -m libzim``: the ``zim`` command line (libzim/cli/)."""

import sys

from libzim.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
