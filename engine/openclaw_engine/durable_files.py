"""Publishing a folder atomically: built in a temporary sibling, flushed to disk, then renamed into place.

A reader of the final path sees the old folder whole or the new one whole, never a half-written one (the
reference trainer's checkpoints, the slime launcher's). Standard library only: the slime plugin imports it
inside slime's image.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """A fresh temporary sibling of `final` to build it in; removed on leaving unless `publish_dir` moved it.

    A sibling, so the rename that publishes it stays on one filesystem and is atomic.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish_dir(tmp: Path, final: Path) -> None:
    """Flushes `tmp` and renames it to `final`; a folder already there moves aside whole, then goes."""
    fsync_tree(tmp)
    if final.exists():
        old = final.parent / f".{final.name}.old-{uuid.uuid4().hex}"
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
