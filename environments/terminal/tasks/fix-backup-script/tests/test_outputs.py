"""Runs the fixed /app/backup.sh on a clean /app/backup and checks what it copied and printed."""

import shutil
import subprocess
from pathlib import Path

import pytest

BACKUP = Path("/app/backup")


@pytest.fixture(scope="module")
def run():
    shutil.rmtree(BACKUP, ignore_errors=True)
    return subprocess.run(["bash", "/app/backup.sh"], capture_output=True, text=True, timeout=30)


def test_script_exits_zero(run):
    assert run.returncode == 0, run.stderr


def test_copies_plain_txt_files(run):
    assert (BACKUP / "a.txt").read_text() == "alpha\n"
    assert (BACKUP / "c.txt").read_text() == "gamma\n"
    assert not (BACKUP / "image.png").exists()


def test_copies_file_with_space(run):
    assert (BACKUP / "my notes.txt").read_text() == "beta\n"


def test_reports_count(run):
    assert run.stdout.strip() == "copied 3 files"
