"""vLLM serves the tiny VLM folder as it is, and agrees with the reference engine about an image turn.

Scenario: a policy served by vLLM (its CPU build, `.venv-vllm`) is asked about an image; the turn is then
trained by the reference trainer. That only works if vLLM consumed the same ids (each image's pad tokens
expanded the same way) and its sampled tokens' log-probs are the ones the trainer computes from the same
image bytes (3-D positions included); a mismatch would make every importance ratio wrong.
"""

from __future__ import annotations

import base64
import io
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image
from test_tiny_model_vllm import READY_TIMEOUT_S, VLLM_PYTHON, _free_port

from openclaw_engine.trainer import Trainer


def _png_b64() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (56, 84), (30, 60, 200)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


@pytest.fixture(scope="module")
def vllm_vlm(tiny_vlm_dir: Path) -> Iterator[str]:
    assert VLLM_PYTHON.exists(), f"{VLLM_PYTHON} is missing: run `bash scripts/vllm-setup.sh`"
    port = _free_port()
    cmd = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_vlm_dir)]
    cmd += ["--served-model-name", "tinyvlm", "--dtype", "float32", "--enforce-eager", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--max-model-len", "4096", "--kv-cache-memory-bytes", str(2**30)]
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"vLLM exited with {proc.returncode}:\n{log.read()[-4000:]}")
                assert time.monotonic() < deadline, "vLLM was not ready in time"
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(1)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_vllm_serves_an_image_turn_the_reference_trainer_scores_alike(
    vllm_vlm: str,
    tiny_vlm_dir: Path,
) -> None:
    image = _png_b64()
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What colour?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
            ],
        }
    ]
    response = httpx.post(
        f"{vllm_vlm}/v1/chat/completions",
        json={
            "model": "tinyvlm",
            "messages": messages,
            "max_tokens": 5,
            "logprobs": True,
            "seed": 3,
            "return_token_ids": True,
        },
        timeout=300,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    prompt, tokens = body["prompt_token_ids"], body["choices"][0]["token_ids"]
    trainer = Trainer(str(tiny_vlm_dir))
    pad = trainer._processor.image_token_id
    assert prompt.count(pad) == 6  # 84x56 -> 3x2 merged patches, expanded as the reference processor does
    theirs = [item["logprob"] for item in body["choices"][0]["logprobs"]["content"]]
    ours = trainer.response_log_probs(
        prompt + tokens, len(tokens), images=[{"media_type": "image/png", "data": image}]
    )
    assert max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) < 1e-3
