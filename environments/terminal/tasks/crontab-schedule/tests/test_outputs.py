"""Parses /home/agent/crontab.txt and runs the scripts it schedules."""

import subprocess
from pathlib import Path

import pytest

CRONTAB = Path("/home/agent/crontab.txt")
DAYS = {"0": "sun", "7": "sun", "1": "mon"}


@pytest.fixture(scope="module")
def jobs():
    lines = [line.split() for line in CRONTAB.read_text().splitlines()]
    entries = [fields for fields in lines if fields and not fields[0].startswith("#") and "=" not in fields[0]]
    return {fields[5]: fields[:5] for fields in entries if len(fields) >= 6}


def normalise(schedule):
    minute, hour, dom, month, dow = schedule
    return [str(int(minute)) if minute.isdigit() else minute, str(int(hour)) if hour.isdigit() else hour,
            dom, month, DAYS.get(dow, dow.lower())]


def test_backup_daily_at_0230(jobs):
    assert normalise(jobs["/home/agent/bin/backup.sh"]) == ["30", "2", "*", "*", "*"]


def test_cleanup_monday_at_0400(jobs):
    assert normalise(jobs["/home/agent/bin/cleanup.sh"]) == ["0", "4", "*", "*", "mon"]


def test_ping_every_15_minutes(jobs):
    assert jobs["/home/agent/bin/ping.sh"] == ["*/15", "*", "*", "*", "*"] or normalise(
        jobs["/home/agent/bin/ping.sh"]
    ) == ["0,15,30,45", "*", "*", "*", "*"]
    assert len(jobs) == 3


@pytest.mark.parametrize("name", ["backup", "cleanup", "ping"])
def test_scripts_print_their_name(name):
    result = subprocess.run([f"/home/agent/bin/{name}.sh"], capture_output=True, text=True, timeout=10)
    assert result.returncode == 0
    assert result.stdout.strip() == name
