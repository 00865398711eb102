"""Shared fixtures: tiny model folders built with `make-tiny-model`, and real `serve` subprocesses."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import pytest

READY_TIMEOUT_S = 90.0


def _make_model(out: Path, seed: int) -> Path:
    subprocess.run(
        [sys.executable, "-m", "openclaw_engine", "make-tiny-model", str(out), "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen3 model folder (seed 0), built through the CLI."""
    return _make_model(tmp_path_factory.mktemp("tiny-model-seed0"), seed=0)


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen2.5-VL folder (`make-tiny-vlm`, seed 0): the vision-language tests' model."""
    out = tmp_path_factory.mktemp("tiny-vlm")
    subprocess.run(
        [sys.executable, "-m", "openclaw_engine", "make-tiny-vlm", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


@pytest.fixture(scope="session")
def other_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Same architecture, different weights (seed 1): the target of weight-update tests."""
    return _make_model(tmp_path_factory.mktemp("tiny-model-seed1"), seed=1)


@pytest.fixture(scope="session")
def eos_prone_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed-0 model with `<|im_end|>`'s (tied) embedding scaled up, so sampling emits eos often.

    With a 16k-token vocabulary a random model draws eos about once in 16k tokens; tests of what eos does
    need it within a few hundred.
    """
    import shutil

    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("tiny-model-eos-prone")
    shutil.copytree(tiny_model_dir, out, dirs_exist_ok=True)
    eos = AutoTokenizer.from_pretrained(tiny_model_dir).convert_tokens_to_ids("<|im_end|>")
    weights = load_file(out / "model.safetensors")
    embed = weights["model.embed_tokens.weight"].clone()
    embed[eos] *= 6.0
    weights["model.embed_tokens.weight"] = embed
    save_file(
        {k: v.contiguous() for k, v in weights.items()}, out / "model.safetensors", metadata={"format": "pt"}
    )
    return out


@contextmanager
def running_server(model_dir: Path, *extra: str) -> Iterator[str]:
    """Start `python -m openclaw_engine serve` on a free port, wait for its `ready` line, yield the URL."""
    device = os.environ.get("OPENCLAW_ENGINE_TEST_DEVICE", "cpu")  # set to "cuda" on a GPU machine
    cmd = [
        sys.executable,
        "-m",
        "openclaw_engine",
        "serve",
        "--model",
        str(model_dir),
        "--port",
        "0",
        "--device",
        device,
        # The tests' checkpoints live in pytest's temporary folders, unless a test sets roots of its own.
        *([] if "--checkpoint-root" in extra else ["--checkpoint-root", tempfile.gettempdir()]),
        *extra,
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    stderr_tail: list[str] = []

    def pump_stdout() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    def pump_stderr() -> None:  # drained so the server never blocks on a full pipe
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr_tail.append(line)
            del stderr_tail[:-200]

    threading.Thread(target=pump_stdout, daemon=True).start()
    threading.Thread(target=pump_stderr, daemon=True).start()
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{''.join(stderr_tail)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready in {READY_TIMEOUT_S}s:\n{''.join(stderr_tail)}")
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            assert line.startswith("ready http://"), f"unexpected stdout line: {line!r}"
            break
        yield line.split(" ", 1)[1].strip()
        assert lines.empty(), "the server must print exactly one line on stdout"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def start_server() -> Callable[..., AbstractContextManager[str]]:
    """`with start_server(model_dir, *cli_args) as url:` for tests that need their own server."""
    return running_server


@pytest.fixture(scope="session")
def server(tiny_model_dir: Path) -> Iterator[str]:
    """The shared serving process (1 MiB body limit so the 413 path is cheap to test)."""
    with running_server(tiny_model_dir, "--max-body-mb", "1") as url:
        yield url


@pytest.fixture()
def client(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=60.0) as c:
        yield c
