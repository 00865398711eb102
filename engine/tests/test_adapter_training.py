"""Per-tenant LoRA adapters over one shared base: the `/adapters/{name}/` routes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient
from peft import PeftModel
from training_fixtures import make_tiny_model_dir
from transformers import AutoModelForCausalLM

from openclaw_engine.access import PathRoots
from openclaw_engine.adapter_trainer import SharedLoraBase
from openclaw_engine.errors import install_error_handlers
from openclaw_engine.trainer import Trainer
from openclaw_engine.training_routes import make_adapter_router, make_training_router

PROMPT = [11, 12, 13, 14]
RESPONSE = [33, 34, 35]
PROBE = PROMPT + RESPONSE
LR = {"lr": 1e-2}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def http(model_dir: Path) -> tuple[TestClient, SharedLoraBase]:
    adapters = SharedLoraBase(str(model_dir), lora_rank=4)
    app = FastAPI()
    install_error_handlers(app)
    roots = PathRoots.of([tempfile.gettempdir()], [])
    app.include_router(make_adapter_router(adapters, roots, max_body_bytes=1234))
    return TestClient(app), adapters


def step(step_id: str, reward: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {
        "step_id": step_id,
        "samples": [
            {
                "tokens": PROBE,
                "response_length": len(RESPONSE),
                "loss_mask": [1] * len(RESPONSE),
                "rollout_log_probs": [-5.0] * len(RESPONSE),
                "reward": reward,
                **extra,
            }
        ],
        "optimizer": LR,
    }


def snapshot(adapters: SharedLoraBase) -> dict[str, torch.Tensor]:
    assert adapters.model is not None
    return {k: v.detach().clone() for k, v in adapters.model.state_dict().items()}


def changed(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> set[str]:
    assert before.keys() == after.keys()
    return {k for k in before if not torch.equal(before[k], after[k])}


def log_probs(adapters: SharedLoraBase, name: str) -> list[float]:
    return adapters.trainer(name).response_log_probs(PROBE, len(RESPONSE))


def test_a_step_changes_its_adapter_only(http: tuple[TestClient, SharedLoraBase]) -> None:
    client, adapters = http
    info = client.get("/adapters/a/trainer_info").json()
    assert info["step_count"] == 0 and info["step_ids"] == [] and info["max_body_bytes"] == 1234
    assert adapters.model is None  # trainer_info of a never-used adapter loads nothing
    assert client.post("/adapters/b/reset_to_base").status_code == 200
    assert client.get("/adapters/a/trainer_info").json()["step_count"] == 0
    before = snapshot(adapters)
    assert len(adapters.adapter_names()) == 1  # a is not created by b's use or by a's trainer_info

    r = client.post("/adapters/a/train_step", json=step("s1"))
    assert r.status_code == 200, r.text
    assert r.json()["duplicate"] is False and r.json()["step"] == 1
    after = snapshot(adapters)
    new = set(after) - set(before)
    slot = adapters.trainer("a")._adapter_name
    assert new and all(f".{slot}." in k for k in new)
    # Against the state just before: nothing of b and nothing of the base moved, bit for bit.
    assert changed(before, {k: after[k] for k in before}) == set()
    # a itself moved away from its initial weights (which equal b's, the same seeded initialisation).
    a_b = {k for k in new if "lora_B" in k}
    assert a_b and any(after[k].abs().sum() > 0 for k in a_b)
    assert log_probs(adapters, "a") != log_probs(adapters, "b")

    # A duplicate step id answers the recorded metrics and changes nothing.
    again = client.post("/adapters/a/train_step", json=step("s1"))
    assert again.json()["duplicate"] is True and again.json()["loss"] == r.json()["loss"]
    assert changed(after, snapshot(adapters)) == set()
    # The same step id under b is b's own first step.
    assert client.post("/adapters/b/train_step", json=step("s1")).json()["duplicate"] is False
    info_a = client.get("/adapters/a/trainer_info").json()
    assert info_a["step_ids"] == ["s1"] and info_a["step_count"] == 1 and info_a["adapter"] == "a"
    assert info_a["lora"] == {"rank": 4, "alpha": 8, "target_modules": adapters.lora_target_modules}
    conflict = client.post("/adapters/a/train_step", json=step("s1", reward=-1.0))
    assert conflict.status_code == 409


def test_step_parts_assemble_per_adapter(http: tuple[TestClient, SharedLoraBase]) -> None:
    client, adapters = http
    whole = step("p1")
    sample = whole["samples"][0]
    part = {**whole, "samples": [sample], "part": {"index": 0, "count": 2}}
    r = client.post("/adapters/a/train_step_part", json=part)
    assert r.json() == {"step_id": "p1", "pending": True, "received": [0], "missing": [1]}
    # A part of another adapter does not disturb a's assembly.
    client.post("/adapters/b/train_step_part", json={**part, "step_id": "other"})
    last = {**whole, "samples": [{**sample, "weight": 0.5}], "part": {"index": 1, "count": 2}}
    done = client.post("/adapters/a/train_step_part", json=last)
    assert done.status_code == 200, done.text
    assert done.json()["samples"] == 2 and done.json()["duplicate"] is False
    assert client.get("/adapters/a/trainer_info").json()["step_ids"] == ["p1"]
    assert client.get("/adapters/b/trainer_info").json()["step_ids"] == []


def test_save_load_reset_round_trip(
    http: tuple[TestClient, SharedLoraBase], model_dir: Path, tmp_path: Path
) -> None:
    client, adapters = http
    for i in range(2):
        assert client.post("/adapters/a/train_step", json=step(f"t{i}")).status_code == 200
    client.post("/adapters/b/train_step", json=step("b0", reward=-1.0))
    trained_a = log_probs(adapters, "a")
    out = tmp_path / "ckpt-a"
    r = client.post("/adapters/a/save_checkpoint", json={"path": str(out)})
    assert r.status_code == 200, r.text
    assert r.json()["step_count"] == 2
    # Small: the adapter and the training state, no merged model and no tokenizer files.
    assert sorted(p.name for p in out.iterdir()) == ["adapter", "trainer_state"]
    assert sorted(p.name for p in (out / "adapter").iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
    state = json.loads((out / "trainer_state" / "state.json").read_text())
    assert state["kind"] == "adapter" and list(state["steps"]) == ["t0", "t1"]
    assert (out / "trainer_state" / "optimizer.pt").is_file()

    # The adapter folder loads with PEFT on the base and gives the trainer's log-probs.
    base = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    peft_model = PeftModel.from_pretrained(base, str(out / "adapter")).eval()
    with torch.no_grad():
        logits = peft_model(input_ids=torch.tensor([PROBE[:-1]])).logits[0, -len(RESPONSE) :].float()
    lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(RESPONSE)[:, None]).squeeze(-1)
    assert lp.tolist() == pytest.approx(trained_a, abs=1e-5)

    # Reset: a is its initial adapter again (the base's log-probs), b untouched.
    b_before = log_probs(adapters, "b")
    reset = client.post("/adapters/a/reset_to_base").json()
    assert reset["step_count"] == 0
    assert client.get("/adapters/a/trainer_info").json()["step_ids"] == []
    base = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)  # PEFT changed the other
    with torch.no_grad():
        base_logits = base(input_ids=torch.tensor([PROBE[:-1]])).logits[0, -len(RESPONSE) :]
    base_lp = torch.log_softmax(base_logits, -1).gather(-1, torch.tensor(RESPONSE)[:, None]).squeeze(-1)
    assert log_probs(adapters, "a") == pytest.approx(base_lp.tolist(), abs=1e-6)
    assert log_probs(adapters, "b") == b_before

    # Load into a third adapter: a's weights, step ids and optimizer; the next step continues bitwise.
    loaded = client.post("/adapters/c/load_checkpoint", json={"path": str(out)})
    assert loaded.status_code == 200, loaded.text
    assert log_probs(adapters, "c") == trained_a
    assert client.get("/adapters/c/trainer_info").json()["step_ids"] == ["t0", "t1"]
    assert client.post("/adapters/c/train_step", json=step("t1")).json()["duplicate"] is True
    client.post("/adapters/a/load_checkpoint", json={"path": str(out)})
    next_a = client.post("/adapters/a/train_step", json=step("t2")).json()
    next_c = client.post("/adapters/c/train_step", json=step("t2")).json()
    assert next_a["loss"] == next_c["loss"] and next_a["grad_norm"] == next_c["grad_norm"]
    assert log_probs(adapters, "a") == log_probs(adapters, "c")
    assert log_probs(adapters, "b") == b_before


def test_foreign_checkpoints_are_refused(
    http: tuple[TestClient, SharedLoraBase], model_dir: Path, tmp_path: Path
) -> None:
    client, _ = http
    # A checkpoint of the top-level LoRA trainer (same LoRA settings) is not an adapter checkpoint.
    full = tmp_path / "toplevel"
    Trainer(str(model_dir), lora_rank=4).save_checkpoint(str(full))
    r = client.post("/adapters/a/load_checkpoint", json={"path": str(full)})
    assert r.status_code == 400 and "adapter checkpoint" in r.json()["error"]["message"]
    # An adapter checkpoint of another rank.
    other = SharedLoraBase(str(model_dir), lora_rank=2)
    other_ckpt = tmp_path / "rank2"
    other.trainer("x").save_checkpoint(str(other_ckpt))
    r = client.post("/adapters/a/load_checkpoint", json={"path": str(other_ckpt)})
    assert r.status_code == 400 and "LoRA settings" in r.json()["error"]["message"]
    assert client.get("/adapters/a/trainer_info").json()["step_count"] == 0


@pytest.mark.parametrize("name", ["-a", ".hidden", "a" * 65, "a b", "a+b", "é", "a:b"])
def test_bad_names_are_400(http: tuple[TestClient, SharedLoraBase], name: str) -> None:
    client, adapters = http
    for method, route, body in [
        ("get", "trainer_info", None),
        ("post", "reset_to_base", None),
        ("post", "train_step", step("x")),
        ("post", "save_checkpoint", {"path": tempfile.gettempdir() + "/x"}),
    ]:
        r = client.request(method, f"/adapters/{name}/{route}", json=body)
        assert r.status_code == 400, (name, route, r.text)
        assert r.json()["error"]["param"] == "name"
    assert adapters.model is None


def test_good_names_with_dots_and_at(http: tuple[TestClient, SharedLoraBase]) -> None:
    client, _ = http
    name = "tenant-1@org.example_" + "x" * 10
    assert client.get(f"/adapters/{name}/trainer_info").status_code == 200


def test_no_trainer_means_404(model_dir: Path) -> None:
    app = FastAPI()
    install_error_handlers(app)
    client = TestClient(app)
    assert client.get("/adapters/a/trainer_info").status_code == 404
    assert client.post("/adapters/a/train_step", json=step("s")).status_code == 404
    # The top-level training routes do not bring the adapter routes with them.
    app.include_router(make_training_router(Trainer(str(model_dir)), PathRoots.of([], [])))
    assert client.get("/trainer_info").status_code == 200
    assert client.get("/adapters/a/trainer_info").status_code == 404


def test_kl_reference_is_the_base_for_every_adapter(http: tuple[TestClient, SharedLoraBase]) -> None:
    client, adapters = http
    kl = {"loss": {"method": "grpo", "kl_coef": 0.5, "entropy_coef": 0.01}}
    client.post("/adapters/a/train_step", json=step("a0"))
    client.post("/adapters/b/reset_to_base")  # creates b
    a_weights = snapshot(adapters)
    # b has never trained: it is the base, so its KL to the reference (the base) is 0 even while a has moved.
    first = client.post("/adapters/b/train_step", json={**step("b0"), **kl}).json()
    assert first["kl_loss"] == pytest.approx(0.0, abs=1e-7)
    second = client.post("/adapters/b/train_step", json={**step("b1"), **kl}).json()
    assert second["kl_loss"] > 0
    after = snapshot(adapters)
    slot_b = adapters.trainer("b")._adapter_name
    assert {k for k in changed(a_weights, after) if f".{slot_b}." not in k} == set()
