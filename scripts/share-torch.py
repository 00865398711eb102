"""Installs one virtual environment's torch into another by hard links, so two environments on one machine keep a
single copy of torch and the CUDA libraries its PyPI wheel depends on (about 5 GB).

    python scripts/share-torch.py FROM_VENV TO_VENV VERSION

Run with TO_VENV's interpreter (it needs `packaging`). Shares torch when FROM_VENV has exactly VERSION, with every
distribution torch requires on this machine that is named triton, cuda-* or nvidia-* (recursively, extras
included). Each distribution's files are linked as its RECORD lists them, so pip sees it installed and can later
upgrade or remove it in either environment without touching the other; its console scripts are written anew for
TO_VENV's interpreter, and compiled bytecode is left for Python to write. Prints what it shared; a distribution
TO_VENV already has is left alone. Does nothing, and says so, when FROM_VENV has no torch or another version.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import sys
from importlib.metadata import Distribution, distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

SHARED_PREFIXES = ("nvidia-", "cuda-")


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3.*/site-packages"))
    if not found:
        raise SystemExit(f"share-torch: no site-packages under {venv}")
    return found[0]


def installed(site: Path) -> dict[str, Distribution]:
    return {canonicalize_name(d.metadata["Name"]): d for d in distributions(path=[str(site)])}


def is_shared(name: str) -> bool:
    return name == "torch" or name == "triton" or name.startswith(SHARED_PREFIXES)


def closure(dists: dict[str, Distribution]) -> list[str]:
    """torch and the shared distributions it requires here, following each requirement's extras."""
    wanted: list[str] = []
    queue: list[tuple[str, frozenset[str]]] = [("torch", frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while queue:
        name, extras = queue.pop()
        if (name, extras) in seen or name not in dists:
            continue
        seen.add((name, extras))
        if name not in wanted:
            wanted.append(name)
        for line in dists[name].requires or []:
            req = Requirement(line)
            child = canonicalize_name(req.name)
            if not is_shared(child):
                continue
            environments = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in environments):
                queue.append((child, frozenset(req.extras)))
    return wanted


def share(dist: Distribution, src_site: Path, dst_site: Path, dst_python: Path) -> int:
    record = dist.read_text("RECORD") or ""
    count = 0
    for row in csv.reader(record.splitlines()):
        if not row or "__pycache__" in row[0]:
            continue
        src = (src_site / row[0]).resolve()
        dst = Path(os.path.normpath(dst_site / row[0]))
        if not src.is_file() or dst.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.parent == dst_python.parent:
            # A console script names its own environment's interpreter on its first line.
            text = src.read_bytes()
            if text.startswith(b"#!"):
                rest = text.split(b"\n", 1)[1] if b"\n" in text else b""
                dst.write_bytes(b"#!" + str(dst_python).encode() + b"\n" + rest)
                dst.chmod(src.stat().st_mode)
                count += 1
                continue
        try:
            os.link(src, dst)
        except OSError:  # another filesystem: a copy, which still saves the download
            shutil.copy2(src, dst)
        count += 1
    return count


def main() -> None:
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    src_venv, dst_venv, version = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3]
    src_site, dst_site = site_packages(src_venv), site_packages(dst_venv)
    src = installed(src_site)
    torch = src.get("torch")
    found = torch.version if torch else None
    if found is None or re.sub(r"\+.*$", "", found) != version:
        print(f"share-torch: {src_venv} has torch {found or 'not installed'}, not {version}: nothing shared")
        return
    dst = installed(dst_site)
    dst_python = dst_venv / "bin" / "python"
    for name in closure(src):
        if name in dst:
            continue
        files = share(src[name], src_site, dst_site, dst_python)
        print(f"share-torch: {name} {src[name].version} ({files} files) from {src_venv.name}")


if __name__ == "__main__":
    main()
