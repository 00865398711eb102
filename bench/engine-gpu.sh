#!/usr/bin/env bash
# The reference engine's serving, training and LoRA paths on a CUDA device, as one run that prints figures:
# generation at concurrency 1/8/32, turns over a 17k-token shared prefix and /train_step (bench/engine_bench.py,
# reference engine only), then LoRA adapters served beside the base (bench/engine_lora_serving.py). For a GPU
# machine whose Python already has torch; the engine's other packages may come as wheels in .whl/
# (installed into /tmp/site). Figures go to stdout and, when OUT is set, to $OUT/*.txt, each bench's with its
# load label (bench/machine_load.py: quiet or LOADED). Never passes or fails on time.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$(pwd)/engine"
else
  export PYTHONPATH="$(pwd)/engine"
fi
OUT="${OUT:-$(mktemp -d)}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__)' | tee -a "$OUT/gpu.txt"
timeout 330 "$PY" bench/engine_bench.py --engines reference --device cuda --concurrency 1,8,32 --train-steps 5 2>&1 | tee "$OUT/engine-bench.txt"
timeout 120 "$PY" bench/engine_lora_serving.py --device cuda --rounds 3 2>&1 | tee "$OUT/lora-serving.txt"
