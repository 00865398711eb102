"""The Tinker sidecar against the FAKE Tinker SDK (tests/fake_tinker.py): datums, idempotency, state."""

from __future__ import annotations

import base64
import sys
import tempfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).parent))
import fake_tinker  # noqa: E402

from openclaw_engine.access import EngineAccess, PathRoots  # noqa: E402
from openclaw_engine.tinker_sidecar.app import create_app  # noqa: E402
from openclaw_engine.tinker_sidecar.trainer import TinkerTrainer  # noqa: E402

# Checkpoints of these tests live in pytest's temporary folders.
TEMP_ROOTS = EngineAccess(roots=PathRoots.of([tempfile.gettempdir()], []))

# 3 prompt tokens + 3 response tokens; the second response token is masked out.
SAMPLE = {
    "tokens": [11, 12, 13, 21, 22, 23],
    "response_length": 3,
    "loss_mask": [1, 0, 1],
    "rollout_log_probs": [-1.0, -2.0, -0.5],
    "teacher_log_probs": [-0.25, -1.0, -1.5],
    "reward": 1.0,
}


@pytest.fixture
def sidecar() -> tuple[TestClient, fake_tinker.FakeTrainingClient]:
    trainer = TinkerTrainer(fake_tinker, base_model="fake/base", lora_rank=8)
    return TestClient(create_app(trainer, access=TEMP_ROOTS)), trainer.client


def step(client: TestClient, step_id: str, loss: dict, samples: list[dict] | None = None, lr: float = 0.1):
    body = {"step_id": step_id, "samples": samples or [SAMPLE], "loss": loss, "optimizer": {"lr": lr}}
    response = client.post("/train_step", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def sent(fake: fake_tinker.FakeTrainingClient, call: int = -1) -> dict:
    return fake.forward_backward_calls[call]["datums"][0]


def test_datum_layout_is_shifted_and_fitted(sidecar) -> None:
    client, fake = sidecar
    step(client, "s1", {"method": "grpo"})
    datum = sent(fake)
    assert datum["model_input"] == [11, 12, 13, 21, 22]
    assert datum["target_tokens"] == [12, 13, 21, 22, 23]
    # P − 1 = 2 leading zeros, then the response's rollout log-probs: T = 5 everywhere.
    assert datum["logprobs"] == [0.0, 0.0, -1.0, -2.0, -0.5]
    call = fake.forward_backward_calls[-1]
    assert call["loss_fn"] == "ppo"
    assert call["loss_fn_config"] == pytest.approx({"clip_low_threshold": 0.8, "clip_high_threshold": 1.28})


def test_rl_advantage_is_the_reward_on_trained_tokens(sidecar) -> None:
    client, fake = sidecar
    step(client, "rl", {"method": "grpo"}, [{**SAMPLE, "reward": -1.0}])
    assert sent(fake)["advantages"] == [0.0, 0.0, -1.0, 0.0, -1.0]


def test_opd_advantage_is_teacher_minus_student_with_coefficient_one(sidecar) -> None:
    client, fake = sidecar
    step(client, "opd", {"method": "opd"})
    # teacher − rollout: 0.75, (masked), −1.0; no reward term and no 0.02 scale.
    assert sent(fake)["advantages"] == [0.0, 0.0, 0.75, 0.0, -1.0]


def test_combine_advantage_weights_both_terms(sidecar) -> None:
    client, fake = sidecar
    step(client, "mix", {"method": "combine", "w_rl": 2.0, "w_opd": 0.5}, [{**SAMPLE, "reward": -1.0}])
    # 0.5·(teacher − rollout) + 2·(−1): 0.5·0.75 − 2 = −1.625; 0.5·(−1) − 2 = −2.5.
    assert sent(fake)["advantages"] == [0.0, 0.0, -1.625, 0.0, -2.5]


def test_step_ids_are_idempotent(sidecar) -> None:
    client, fake = sidecar
    first = step(client, "once", {"method": "grpo"})
    again = step(client, "once", {"method": "grpo"})
    assert len(fake.forward_backward_calls) == 1 and len(fake.optim_steps) == 1
    assert again["duplicate"] is True and again["tokens"] == first["tokens"] == 2.0
    assert client.get("/trainer_info").json()["step_ids"] == ["once"]


def test_optimizer_settings_reach_adam(sidecar) -> None:
    client, fake = sidecar
    client.post(
        "/train_step",
        json={
            "step_id": "a",
            "samples": [SAMPLE],
            "optimizer": {"lr": 0.01, "weight_decay": 0.1, "betas": [0.8, 0.9]},
        },
    ).raise_for_status()
    adam = fake.optim_steps[-1]
    assert (adam.learning_rate, adam.beta1, adam.beta2, adam.weight_decay) == (0.01, 0.8, 0.9, 0.1)


def test_refusals(sidecar) -> None:
    client, _ = sidecar
    no_teacher = {k: v for k, v in SAMPLE.items() if k != "teacher_log_probs"}
    bad = client.post(
        "/train_step", json={"step_id": "x", "samples": [no_teacher], "loss": {"method": "opd"}}
    )
    assert bad.status_code == 400 and "teacher_log_probs" in bad.text
    topk = client.post(
        "/train_step", json={"step_id": "y", "samples": [SAMPLE], "loss": {"method": "topk_distill"}}
    )
    assert topk.status_code == 400 and "not available on Tinker" in topk.text
    missing = f"{tempfile.gettempdir()}/nonexistent-tinker-ckpt"
    assert client.post("/load_checkpoint", json={"path": missing}).status_code == 404
    outside = client.post("/load_checkpoint", json={"path": "/nonexistent/ckpt"})
    assert outside.status_code == 403 and outside.json()["error"]["param"] == "path"


def test_a_combine_row_without_a_teacher_has_teacher_term_zero(sidecar) -> None:
    client, fake = sidecar
    rl_only = {k: v for k, v in SAMPLE.items() if k != "teacher_log_probs"}
    step(client, "rl-only", {"method": "combine", "w_rl": 1.0, "w_opd": 1.0}, [{**rl_only, "reward": -1.0}])
    assert sent(fake)["advantages"] == [0.0, 0.0, -1.0, 0.0, -1.0]
    # The original's RL-only row (teacher = rollout log-probs) trains the same.
    as_original = {**SAMPLE, "teacher_log_probs": SAMPLE["rollout_log_probs"], "reward": -1.0}
    step(client, "rl-only-2", {"method": "combine"}, [as_original])
    assert sent(fake)["advantages"] == [0.0, 0.0, -1.0, 0.0, -1.0]


def test_a_sample_drawn_at_another_temperature_is_refused(sidecar) -> None:
    client, fake = sidecar
    refused = client.post(
        "/train_step",
        json={"step_id": "warm", "samples": [{**SAMPLE, "temperature": 0.6}], "loss": {"method": "grpo"}},
    )
    assert refused.status_code == 400 and "temperature 0.6" in refused.text
    assert fake.forward_backward_calls == []


def test_reset_starts_a_fresh_training_client(sidecar) -> None:
    client, fake = sidecar
    step(client, "before", {"method": "grpo"})
    assert client.post("/reset_to_base", json={}).status_code == 200
    info = client.get("/trainer_info").json()
    assert info["step_ids"] == []
    step(client, "before", {"method": "grpo"})  # the same id trains again: it is a new incarnation's


def test_save_and_load_state_restore_weights_and_step_ids(sidecar, tmp_path: Path) -> None:
    client, fake = sidecar
    step(client, "s1", {"method": "grpo"})
    client.post("/save_checkpoint", json={"path": str(tmp_path / "v1")}).raise_for_status()
    saved_weights = dict(fake.weights)
    assert saved_weights[23] == pytest.approx(0.1)
    step(client, "s2", {"method": "grpo"})
    assert fake.weights[23] == pytest.approx(0.2)

    # A fresh sidecar (a restart) starts from the base and comes back with the checkpoint.
    trainer = TinkerTrainer(fake_tinker, base_model="fake/base", lora_rank=8)
    restarted = TestClient(create_app(trainer, access=TEMP_ROOTS))
    assert restarted.get("/trainer_info").json()["step_ids"] == []
    restarted.post("/load_checkpoint", json={"path": str(tmp_path / "v1")}).raise_for_status()
    assert trainer.client.weights == saved_weights
    assert restarted.get("/trainer_info").json()["step_ids"] == ["s1"]
    assert step(restarted, "s1", {"method": "grpo"})["duplicate"] is True
    assert len(trainer.client.forward_backward_calls) == 0


def test_export_writes_the_sampler_path(sidecar, tmp_path: Path) -> None:
    client, _ = sidecar
    step(client, "s1", {"method": "grpo"})
    out = client.post("/export_for_serving", json={"path": str(tmp_path / "v1")}).json()
    assert out["model_path"].startswith("tinker://fake-run/sampler_weights/")
    assert (tmp_path / "v1" / "tinker-sampler.json").is_file()


# A vision-language sample: `<|vision_start|>` (98), four `<|image_pad|>` (99), `<|vision_end|>` (97).
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 24).decode()
IMAGE_SAMPLE = {
    **SAMPLE,
    "tokens": [11, 98, 99, 99, 99, 99, 97, 12, 21, 22, 23],
    "images": [{"media_type": "image/png", "data": PNG}],
}


def test_an_image_sample_sends_its_image_where_its_pads_were() -> None:
    # Scenario: a screenshot turn trained on Tinker must reach it as the image, standing exactly where the
    # served pad tokens stood, or every later position (and every array) would be shifted.
    trainer = TinkerTrainer(fake_tinker, base_model="fake/vl", lora_rank=8, image_token_id=99)
    client = TestClient(create_app(trainer, access=TEMP_ROOTS))
    step(client, "img-1", {"method": "grpo"}, [IMAGE_SAMPLE])
    datum = sent(trainer.client)
    assert datum["model_input_chunks"] == [
        {"tokens": [11, 98]},
        {"image": "png", "bytes": 32, "expected_tokens": 4},
        {"tokens": [97, 12, 21, 22]},
    ]
    assert datum["target_tokens"] == IMAGE_SAMPLE["tokens"][1:]
    assert datum["advantages"][-3:] == [1.0, 0.0, 1.0]

    def refused(sample: dict, sidecar: TestClient = client) -> str:
        out = sidecar.post(
            "/train_step", json={"step_id": "bad", "samples": [sample], "loss": {"method": "grpo"}}
        )
        assert out.status_code == 400 and out.json()["error"]["param"] == "samples[0]"
        return out.json()["error"]["message"]

    webp = {**IMAGE_SAMPLE, "images": [{"media_type": "image/webp", "data": PNG}]}
    assert "image/png and image/jpeg only" in refused(webp)
    two = {**IMAGE_SAMPLE, "images": IMAGE_SAMPLE["images"] * 2}
    assert "1 image runs for 2 images" in refused(two)
    text_only = TinkerTrainer(fake_tinker, base_model="fake/base", lora_rank=8)
    assert "--tokenizer" in refused(IMAGE_SAMPLE, TestClient(create_app(text_only, access=TEMP_ROOTS)))
