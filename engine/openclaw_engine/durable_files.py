"""Making a folder durable before a rename publishes it."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_tree(root: Path) -> None:
    """Flushes every file and folder under `root` to disk.

    Data must be on disk before the rename publishes the folder, or a crash could publish empty files.
    """
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as fh:
                os.fsync(fh.fileno())
        fd = os.open(dirpath, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
