#!/bin/bash
# Offline equivalent of terminal-bench's setup-uv-pytest.sh, sourced by run-tests.sh in the task's working
# directory: terminal-bench's downloads curl and uv and runs `uv init` and `uv add pytest==8.4.1`; sandboxes here
# have no network, so this uses the uv and pytest the image already has (terminal-bench's base images' local
# equivalents carry uv with pytest in its cache; other images need python3 with pytest).
if [ "$PWD" = "/" ]; then
  echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
  exit 1
fi
if command -v uv >/dev/null 2>&1; then
  export UV_OFFLINE=1 UV_PYTHON_DOWNLOADS=never
  [ -f pyproject.toml ] || uv init --quiet
  uv add --quiet pytest==8.4.1 || echo "uv could not add pytest 8.4.1 offline; using the image's Python" >&2
fi
