"""Inspects the repository in /home/agent/project with git."""

import subprocess

REPO = "/home/agent/project"


def git(*args):
    result = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", REPO, *args], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_is_a_repository_on_main():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_readme_is_committed():
    assert git("show", "HEAD:README.md") == "# Project"


def test_commit_message_and_author():
    assert git("log", "-1", "--format=%s|%an|%ae") == "Initial commit|Agent|agent@example.com"
    assert git("rev-list", "--count", "HEAD") == "1"


def test_feature_branch_at_head():
    assert git("rev-parse", "feature") == git("rev-parse", "HEAD")
