"""`/sample` and `/adapters/{name}/sample`: replies from the trainer's weights, the base, or a checkpoint."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from openclaw_engine.access import PathRoots
from openclaw_engine.adapter_trainer import SharedLoraBase
from openclaw_engine.errors import install_error_handlers
from openclaw_engine.trainer import Trainer
from openclaw_engine.training_routes import make_adapter_router, make_training_router

CONVERSATIONS = [
    [{"role": "user", "content": "Say hello."}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is two and two?"}],
]


@pytest.fixture(scope="module")
def http(tiny_model_dir: Path) -> tuple[TestClient, Trainer]:
    trainer = Trainer(str(tiny_model_dir))
    adapters = SharedLoraBase(str(tiny_model_dir), lora_rank=4)
    app = FastAPI()
    install_error_handlers(app)
    roots = PathRoots.of([tempfile.gettempdir()], [])
    app.include_router(make_training_router(trainer, roots))
    app.include_router(make_adapter_router(adapters, roots))
    return TestClient(app), trainer


def ask(client: TestClient, prefix: str = "", **changes: Any) -> Any:
    body = {
        "conversations": CONVERSATIONS,
        "max_tokens": 8,
        "temperature": 1.0,
        "seed": 7,
        "samples_per_conversation": 2,
        **changes,
    }
    return client.post(f"{prefix}/sample", json=body)


def train_once(client: TestClient, step_id: str, prefix: str = "") -> None:
    sample = {
        "tokens": [100, 101, 102, 103, 104],
        "response_length": 2,
        "loss_mask": [1, 1],
        "rollout_log_probs": [-5.0, -5.0],
        "reward": 1.0,
    }
    payload = {"step_id": step_id, "samples": [sample], "optimizer": {"lr": 5e-2}}
    answer = client.post(f"{prefix}/train_step", json=payload)
    assert answer.status_code == 200, answer.text


def test_replies_have_the_asked_shape_and_repeat_for_a_seed(http: tuple[TestClient, Trainer]) -> None:
    client, _ = http
    first = ask(client)
    assert first.status_code == 200, first.text
    replies = first.json()["replies"]
    assert [len(r) for r in replies] == [2, 2]
    assert all(isinstance(text, str) for r in replies for text in r)
    assert ask(client).json() == first.json()
    assert ask(client, seed=8).json() != first.json()
    greedy = ask(client, temperature=0.0).json()["replies"]
    assert greedy[0][0] == greedy[0][1]


def test_current_base_and_checkpoint_sources(http: tuple[TestClient, Trainer], tmp_path: Path) -> None:
    client, trainer = http
    base = ask(client, source="base").json()
    assert ask(client, source="current").json() == base  # nothing trained yet
    train_once(client, "sample-step-1")
    checkpoint = tmp_path / "v1"
    assert client.post("/save_checkpoint", json={"path": str(checkpoint)}).status_code == 200
    current = ask(client).json()
    assert current != base
    assert ask(client, source={"checkpoint": str(checkpoint)}).json() == current
    # The scratch copy leaves the trainer alone: the base again after a reset, the checkpoint still itself.
    trainer.reset()
    assert ask(client).json() == base
    assert ask(client, source={"checkpoint": str(checkpoint)}).json() == current


@pytest.mark.parametrize(
    ("changes", "param"),
    [
        ({"conversations": []}, "conversations"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"temperature": -1}, "temperature"),
        ({"samples_per_conversation": 0}, "samples_per_conversation"),
        ({"source": "served"}, "source"),
        ({"conversations": [[{"role": "robot", "content": "x"}]]}, "conversations"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_requests_are_400(http: tuple[TestClient, Trainer], changes: dict[str, Any], param: str) -> None:
    client, _ = http
    answer = ask(client, **changes)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"].startswith(param), answer.json()


def test_a_checkpoint_outside_the_roots_or_missing_is_refused(
    http: tuple[TestClient, Trainer], tmp_path: Path
) -> None:
    client, _ = http
    outside = ask(client, source={"checkpoint": "/etc"})
    assert outside.status_code in (400, 403) and outside.json()["error"]["param"] == "source.checkpoint"
    missing = ask(client, source={"checkpoint": str(tmp_path / "nope")})
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "source.checkpoint"


def test_an_adapter_samples_its_own_weights(http: tuple[TestClient, Trainer], tmp_path: Path) -> None:
    client, _ = http
    prefix = "/adapters/alice"
    base = ask(client, prefix, source="base").json()
    train_once(client, "alice-step-1", prefix)
    current = ask(client, prefix).json()
    assert current != base
    checkpoint = tmp_path / "alice-v1"
    assert client.post(f"{prefix}/save_checkpoint", json={"path": str(checkpoint)}).status_code == 200
    assert ask(client, prefix, source={"checkpoint": str(checkpoint)}).json() == current
    assert ask(client, "/adapters/bob").json() == base  # a fresh adapter is the base (LoRA B starts at 0)
