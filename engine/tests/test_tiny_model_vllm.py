"""vLLM serves the tiny default model folder as it is, and agrees with the reference engine about it.

The real vLLM (`.venv-vllm`, made by `scripts/vllm-setup.sh`: vLLM's CPU build) loads the folder that
`make-tiny-model` writes: its tokenizer renders and tokenises a chat prompt with tools to the same ids as the
reference engine, and its prompt log-probs of those ids equal the reference engine's prefill (float32 on both;
different attention kernels, so to 1e-3).
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from weather_tool import TOOLS

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = Path(os.environ.get("OPENCLAW_VLLM_PYTHON", ROOT / ".venv-vllm" / "bin" / "python"))
READY_TIMEOUT_S = 600.0

MESSAGES = [
    {"role": "system", "content": "You are a personal assistant. Use tools when they help."},
    {"role": "user", "content": "What is the weather in Paris today?"},
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def vllm(tiny_model_dir: Path) -> Iterator[str]:
    assert VLLM_PYTHON.exists(), f"{VLLM_PYTHON} is missing: run `bash scripts/vllm-setup.sh`"
    port = _free_port()
    cmd = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_model_dir)]
    cmd += ["--served-model-name", "tiny", "--dtype", "float32", "--enforce-eager", "--host", "127.0.0.1"]
    cmd += ["--port", str(port)]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
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


def test_vllm_tokenises_the_chat_prompt_as_the_reference_engine_does(vllm: str, client: httpx.Client) -> None:
    ours = client.post("/tokenize", json={"messages": MESSAGES, "tools": TOOLS}).json()["tokens"]
    theirs = httpx.post(
        f"{vllm}/tokenize",
        json={"model": "tiny", "messages": MESSAGES, "tools": TOOLS, "add_generation_prompt": True},
        timeout=60,
    )
    assert theirs.status_code == 200, theirs.text
    assert theirs.json()["tokens"] == ours
    assert theirs.json()["max_model_len"] >= 131072


def test_vllm_prompt_logprobs_equal_the_reference_prefill(vllm: str, client: httpx.Client) -> None:
    ids = client.post("/tokenize", json={"messages": MESSAGES, "tools": TOOLS}).json()["tokens"]
    ours = client.post(
        "/generate",
        json={
            "input_ids": ids,
            "sampling_params": {"max_new_tokens": 0},
            "return_logprob": True,
            "logprob_start_len": 0,
        },
    ).json()["meta_info"]["input_token_logprobs"]
    response = httpx.post(
        f"{vllm}/v1/completions",
        json={"model": "tiny", "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 1.0},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    theirs = response.json()["choices"][0]["prompt_logprobs"]
    assert theirs[0] is None and ours[0][0] is None and len(theirs) == len(ours) == len(ids)
    worst = max(
        abs(entry[str(token)]["logprob"] - lp)
        for entry, (lp, token, _) in zip(theirs[1:], ours[1:], strict=True)
    )
    assert worst < 1e-3, worst
