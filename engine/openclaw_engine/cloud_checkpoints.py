"""The record a cloud trainer's sidecar (Tinker, Fireworks) keeps in a checkpoint or export folder: the JSON
file that names where the cloud holds the weights. Written atomically: a crash mid-write leaves the previous
record or none, never half of one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .errors import EngineError


def write_record(folder: str, file_name: str, record: dict[str, Any]) -> None:
    path = Path(folder) / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(record, indent=2))
    os.replace(tmp, path)


def read_record(folder: str, file_name: str, kind: str) -> dict[str, Any]:
    """The folder's record; a 404 naming the file when it has none (`kind`: "a Tinker checkpoint")."""
    path = Path(folder) / file_name
    if not path.is_file():
        raise EngineError(f"{path} does not exist (not {kind})", param="path", status=404)
    return json.loads(path.read_text())
