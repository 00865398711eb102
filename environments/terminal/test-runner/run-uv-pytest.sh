#!/bin/bash
# Offline equivalent of terminal-bench's run-uv-pytest.sh: the task's tests with pytest's -rA summary, through
# the project setup-uv-pytest.sh made when it could, else the image's python3.
if command -v uv >/dev/null 2>&1 && [ -f pyproject.toml ] && UV_OFFLINE=1 uv run --quiet python -c 'import pytest' 2>/dev/null; then
  UV_OFFLINE=1 uv run pytest "$TEST_DIR/test_outputs.py" -rA
else
  python3 -m pytest "$TEST_DIR/test_outputs.py" -rA
fi
