#!/usr/bin/env bash
# Makes .venv-sglang: SGLang 0.5.23's wheel installed with --no-deps, so the conformance suite
# (test/conformance/) can import SGLang's own request models, serving code and argument parser. No GPU and
# no SGLang server: only what those imports need, pinned below and installed --no-deps. torch and the other
# large packages are borrowed from .venv (a .pth file adds its site-packages), which saves a second torch.
# Safe to run again: a run that finds the imports working does nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${SGLANG_VENV:-.venv-sglang}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
CHECK='import sglang.srt.entrypoints.openai.serving_chat, sglang.srt.managers.io_struct, sglang.srt.server_args'

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -W ignore -c "$CHECK" >/dev/null 2>&1; then
  echo "== SGLang conformance environment: $VENV"
  exit 0
fi
[ -x .venv/bin/python ] || { echo "run scripts/setup.sh first (.venv is missing)" >&2; exit 1; }

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
.venv/bin/python -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("site-packages")))' \
  >"$site/openclaw-base.pth"
"$VENV/bin/python" -m pip install --quiet --no-deps -r scripts/sglang-conformance-requirements.txt
"$VENV/bin/python" -W ignore -c "$CHECK" >/dev/null
echo "== SGLang $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("sglang"))') conformance environment: $VENV"
