"""Trainer behaviour: direction of updates, idempotency, checkpoints (full and LoRA), the HTTP routes."""

from __future__ import annotations

import json
import math
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient
from safetensors.torch import load_file
from training_fixtures import VOCAB, make_tiny_model_dir
from transformers import AutoModelForCausalLM, AutoTokenizer

from openclaw_engine.access import PathRoots
from openclaw_engine.errors import EngineError, install_error_handlers
from openclaw_engine.tiny_model import make_tiny_model
from openclaw_engine.trainer import Trainer
from openclaw_engine.training_routes import make_training_router

PROMPT = [11, 12, 13, 14]
LR = {"lr": 1e-3}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def sample(trainer: Trainer, response: list[int], reward: float = 1.0, **extra: Any) -> dict[str, Any]:
    tokens = PROMPT + response
    return {
        "tokens": tokens,
        "response_length": len(response),
        "loss_mask": [1] * len(response),
        "rollout_log_probs": trainer.response_log_probs(tokens, len(response)),
        "reward": reward,
        **extra,
    }


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def merged_lora_state(trainer: Trainer) -> dict[str, torch.Tensor]:
    """W + (alpha / r)·B·A per adapted layer, computed by hand from the live PEFT parameters."""
    scale = trainer.lora_alpha / trainer.lora_rank
    params = dict(trainer.model.named_parameters())
    out: dict[str, torch.Tensor] = {}
    for name, p in params.items():
        if "lora_" in name:
            continue
        clean = name.replace("base_model.model.", "").replace(".base_layer", "")
        prefix = name.replace(".base_layer.weight", "")
        if name.endswith(".base_layer.weight"):
            a = params[f"{prefix}.lora_A.default.weight"]
            b = params[f"{prefix}.lora_B.default.weight"]
            out[clean] = (p + scale * b @ a).detach()
        else:
            out[clean] = p.detach()
    return out


# ---- the direction of an update ------------------------------------------------------------------------


@pytest.mark.parametrize("reward", [1.0, -1.0])
def test_advantage_sign_moves_log_prob_the_same_way(model_dir: Path, reward: float) -> None:
    trainer = Trainer(str(model_dir))
    response = [40, 41, 42]
    s = sample(trainer, response, reward)
    before = sum(s["rollout_log_probs"])
    metrics = trainer.train_step({"step_id": "a", "samples": [s], "optimizer": LR})
    after = sum(trainer.response_log_probs(PROMPT + response, 3))
    assert (after - before) * reward > 0.05, (before, after)
    # Ratio 1 at the single step: the PPO term is exactly -A per token, nothing clipped.
    assert metrics["pg_loss"] == pytest.approx(-reward)
    assert metrics["pg_clipfrac"] == 0.0 and metrics["ppo_kl"] == pytest.approx(0.0, abs=1e-7)
    assert metrics["tokens"] == 3 and metrics["step"] == 1 and metrics["duplicate"] is False
    assert metrics["train_rollout_logprob_abs_diff"] == pytest.approx(0.0, abs=1e-6)


def test_opd_moves_towards_the_teacher_and_masked_tokens_do_not_train(model_dir: Path) -> None:
    trainer = Trainer(str(model_dir))
    response = [50, 51, 52]
    s = sample(trainer, response)
    # Teacher likes token 0 more and token 1 less than the policy; token 2 is masked out.
    teacher = [
        s["rollout_log_probs"][0] + 2.0,
        s["rollout_log_probs"][1] - 2.0,
        s["rollout_log_probs"][2] + 9.0,
    ]
    s = {**s, "loss_mask": [1, 1, 0], "teacher_log_probs": teacher}
    trainer.train_step({"step_id": "o", "samples": [s], "loss": {"method": "opd"}, "optimizer": LR})
    after = trainer.response_log_probs(PROMPT + response, 3)
    assert after[0] > s["rollout_log_probs"][0]
    assert after[1] < s["rollout_log_probs"][1]


def test_kl_and_topk_and_rollout_logprob_options_train(model_dir: Path) -> None:
    for lora_rank in (0, 4):
        trainer = Trainer(str(model_dir), lora_rank=lora_rank)
        s = sample(trainer, [60, 61])
        m1 = trainer.train_step({"step_id": "1", "samples": [s], "optimizer": LR})
        # Second step with the *old* rollout log-probs as π_old, a KL to the base and an entropy bonus.
        loss = {"kl_coef": 0.5, "entropy_coef": 0.01, "use_rollout_logprobs": True, "kl_type": "k2"}
        m2 = trainer.train_step({"step_id": "2", "samples": [s], "loss": loss, "optimizer": LR})
        assert m1["kl_loss"] == 0.0
        assert m2["kl_loss"] > 0.0 and m2["ppo_kl"] != 0.0 and m2["train_rollout_logprob_abs_diff"] > 0.0
        assert m2["loss"] == pytest.approx(
            m2["pg_loss"] - 0.01 * m2["entropy"] + 0.5 * m2["kl_loss"], rel=1e-5
        )
        topk = {
            "teacher_topk_log_probs": [[-0.5, -1.5], [-0.2, -3.0]],
            "teacher_topk_indices": [[60, 7], [61, 8]],
        }
        m3 = trainer.train_step(
            {"step_id": "3", "samples": [{**s, **topk}], "loss": {"method": "topk_distill"}, "optimizer": LR}
        )
        assert m3["pg_loss"] > 0.0 and math.isfinite(m3["grad_norm"])
        assert trainer.step_count == 3


# ---- idempotency ------------------------------------------------------------------------------------


def test_repeated_step_id_changes_nothing(model_dir: Path) -> None:
    trainer = Trainer(str(model_dir))
    request = {"step_id": "step-7", "samples": [sample(trainer, [70, 71])], "optimizer": LR}
    first = trainer.train_step(request)
    w = weights(trainer.model)
    again = trainer.train_step(request)
    assert again["duplicate"] is True
    assert {k: v for k, v in again.items() if k != "duplicate"} == {
        k: v for k, v in first.items() if k != "duplicate"
    }
    assert_same_weights(w, weights(trainer.model))
    assert trainer.step_count == 1
    # The same id with a different batch is a caller bug, refused instead of silently ignored.
    other = {**request, "samples": [sample(trainer, [72, 73])]}
    with pytest.raises(EngineError) as err:
        trainer.train_step(other)
    assert err.value.status == 409 and err.value.param == "step_id"
    assert_same_weights(w, weights(trainer.model))


def test_unit_weights_train_bit_identically_and_hash_as_before(model_dir: Path) -> None:
    plain, weighted = Trainer(str(model_dir)), Trainer(str(model_dir))
    samples = [sample(plain, [70, 71]), sample(plain, [72, 73, 74], reward=-1.0)]
    loss = {"method": "grpo", "kl_coef": 0.1, "entropy_coef": 0.01}
    request = {"step_id": "w1", "samples": samples, "loss": loss, "optimizer": LR}
    first = plain.train_step(request)
    second = weighted.train_step({**request, "samples": [{**s, "weight": 1.0} for s in samples]})
    assert first == second
    assert_same_weights(weights(plain.model), weights(weighted.model))
    # An explicit weight of 1 is the same batch as no weight: the same step id is a duplicate, not a 409.
    assert plain.train_step({**request, "samples": [{**s, "weight": 1} for s in samples]})["duplicate"]


def test_weight_two_is_the_sample_twice_and_zero_leaves_it_out(model_dir: Path) -> None:
    probe = Trainer(str(model_dir))
    s0, s1 = sample(probe, [70, 71]), sample(probe, [72, 73, 74], reward=-1.0)
    loss = {"method": "grpo", "kl_coef": 0.1}
    cases = [
        ([{**s0, "weight": 2.0}, s1], [s0, s0, s1]),
        ([s0, {**s1, "weight": 0.0}], [s0]),
    ]
    for weighted_samples, plain_samples in cases:
        a, b = Trainer(str(model_dir)), Trainer(str(model_dir))
        ma = a.train_step({"step_id": "w", "samples": weighted_samples, "loss": loss, "optimizer": LR})
        mb = b.train_step({"step_id": "w", "samples": plain_samples, "loss": loss, "optimizer": LR})
        for key in ("loss", "pg_loss", "kl_loss", "entropy", "grad_norm"):
            assert ma[key] == pytest.approx(mb[key], rel=1e-5, abs=1e-7), key
        wa, wb = weights(a.model), weights(b.model)
        for key in wa:
            assert torch.allclose(wa[key], wb[key], atol=1e-6), key
        assert not torch.equal(
            wa["model.embed_tokens.weight"], weights(probe.model)["model.embed_tokens.weight"]
        )


def test_non_finite_gradient_is_refused_and_not_recorded(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = Trainer(str(model_dir))
    request = {"step_id": "nan", "samples": [sample(trainer, [3, 4])], "optimizer": LR}
    w = weights(trainer.model)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda *a, **k: torch.tensor(float("nan")))
    with pytest.raises(EngineError) as err:
        trainer.train_step(request)
    assert err.value.status == 422
    assert_same_weights(w, weights(trainer.model))
    assert trainer.step_count == 0 and trainer.info()["step_ids"] == []
    monkeypatch.undo()
    assert trainer.train_step(request)["duplicate"] is False  # a retry after the fault trains normally


def test_concurrent_duplicates_train_once(model_dir: Path) -> None:
    trainer = Trainer(str(model_dir))
    request = {"step_id": "racy", "samples": [sample(trainer, [80, 81, 82])], "optimizer": LR}
    results: list[dict[str, Any]] = []
    barrier = threading.Barrier(4)

    def run() -> None:
        barrier.wait()
        results.append(trainer.train_step(request))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(r["duplicate"] for r in results) == [False, True, True, True]
    assert trainer.step_count == 1


# ---- checkpoints ------------------------------------------------------------------------------------


def test_full_checkpoint_is_a_loadable_hf_model(model_dir: Path, tmp_path: Path) -> None:
    trainer = Trainer(str(model_dir))
    trainer.train_step({"step_id": "s1", "samples": [sample(trainer, [90, 91])], "optimizer": LR})
    out = tmp_path / "ckpt"
    info = trainer.save_checkpoint(str(out))
    assert info["steps_seen"] == 1 and info["path"] == str(out.resolve())
    loaded = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    assert_same_weights(weights(trainer.model), weights(loaded))
    # Tokenizer and template travel with the weights; no temp folders are left behind.
    assert (out / "chat_template.jinja").read_text() == (model_dir / "chat_template.jinja").read_text()
    assert (out / "tokenizer_config.json").is_file()
    assert (out / "trainer_state" / "state.json").is_file() and (
        out / "trainer_state" / "optimizer.pt"
    ).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
    # Saving again over the same path replaces it whole.
    trainer.train_step({"step_id": "s2", "samples": [sample(trainer, [92])], "optimizer": LR})
    trainer.save_checkpoint(str(out))
    assert_same_weights(weights(trainer.model), weights(AutoModelForCausalLM.from_pretrained(str(out))))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
    with pytest.raises(EngineError):
        trainer.save_checkpoint(str(model_dir))


def test_checkpoint_of_the_engine_tiny_model_is_servable(tmp_path: Path) -> None:
    """From the real tiny model folder (tokenizer, chat template) a LoRA checkpoint is a whole HF folder."""
    src = make_tiny_model(tmp_path / "tiny", seed=3)
    trainer = Trainer(str(src), lora_rank=2)
    tok = AutoTokenizer.from_pretrained(str(src))
    tokens = tok("hello there")["input_ids"]
    s = {
        "tokens": tokens,
        "response_length": 3,
        "loss_mask": [1, 1, 1],
        "rollout_log_probs": trainer.response_log_probs(tokens, 3),
        "reward": 1.0,
    }
    trainer.train_step({"step_id": "t", "samples": [s], "optimizer": {"lr": 1e-2}})
    out = trainer.save_checkpoint(str(tmp_path / "ck"))["path"]
    ck_tok = AutoTokenizer.from_pretrained(out)
    assert ck_tok("hello there")["input_ids"] == tokens
    assert ck_tok.chat_template == tok.chat_template
    messages = [{"role": "user", "content": "hi"}]
    assert ck_tok.apply_chat_template(messages, tokenize=False) == tok.apply_chat_template(
        messages, tokenize=False
    )
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=torch.tensor([tokens[:-1]])).logits[0, -3:], -1)
    lp = lp.gather(-1, torch.tensor(tokens[-3:])[:, None]).squeeze(-1).tolist()
    assert lp == pytest.approx(trainer.response_log_probs(tokens, 3), abs=1e-5)


def test_failed_save_leaves_no_checkpoint_and_keeps_the_previous_one(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = Trainer(str(model_dir))
    out = tmp_path / "ck"
    trainer.save_checkpoint(str(out))
    before = sorted(p.name for p in out.iterdir())
    real_write = trainer._write_checkpoint

    def crash_midway(folder: Path) -> None:
        real_write(folder)
        (folder / "model.safetensors").write_bytes(b"half")
        raise RuntimeError("simulated crash while writing")

    monkeypatch.setattr(trainer, "_write_checkpoint", crash_midway)
    with pytest.raises(RuntimeError):
        trainer.save_checkpoint(str(out))
    with pytest.raises(RuntimeError):
        trainer.save_checkpoint(str(tmp_path / "new"))
    # The previous checkpoint is intact, the new path never appeared, no temp folder is left.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]
    assert sorted(p.name for p in out.iterdir()) == before
    assert_same_weights(weights(trainer.model), weights(AutoModelForCausalLM.from_pretrained(str(out))))
    # A path that cannot be created is a JSON-able EngineError naming the path.
    (tmp_path / "file").write_text("x")
    with pytest.raises(EngineError) as err:
        trainer.save_checkpoint(str(tmp_path / "file" / "ck"))
    assert err.value.param == "path"


def test_mismatched_checkpoint_is_refused_without_touching_the_trainer(
    model_dir: Path, tmp_path: Path
) -> None:
    other = Trainer(str(make_tiny_model(tmp_path / "other", seed=0)))  # vocabulary 277, not 300
    other.save_checkpoint(str(tmp_path / "other_ck"))
    trainer = Trainer(str(model_dir))
    trainer.train_step({"step_id": "keep", "samples": [sample(trainer, [5, 6])], "optimizer": LR})
    w = weights(trainer.model)
    with pytest.raises(EngineError) as err:
        trainer.load_checkpoint(str(tmp_path / "other_ck"))
    assert err.value.param == "path" and "shape" in err.value.message
    assert_same_weights(w, weights(trainer.model))
    assert trainer.info()["step_ids"] == ["keep"] and trainer.step_count == 1


def test_load_checkpoint_restores_optimizer_and_continues_bitwise(model_dir: Path, tmp_path: Path) -> None:
    a = Trainer(str(model_dir))
    batch = [sample(a, [20, 21, 22], 1.0), sample(a, [23, 24], -1.0)]
    for i in range(2):
        a.train_step({"step_id": f"s{i}", "samples": batch, "optimizer": {"lr": 1e-3, "weight_decay": 0.05}})
    a.save_checkpoint(str(tmp_path / "ck"))

    b = Trainer(str(model_dir))
    info = b.load_checkpoint(str(tmp_path / "ck"))
    assert info["step_count"] == 2 and b.info()["step_ids"] == ["s0", "s1"]
    assert_same_weights(weights(a.model), weights(b.model))
    sa, sb = a._optimizer.state_dict(), b._optimizer.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    assert sa["state"].keys() == sb["state"].keys() and len(sa["state"]) > 0
    for key in sa["state"]:
        for field in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(sa["state"][key][field], sb["state"][key][field])
    # With Adam's moments restored, the next step is bitwise the one the original trainer takes.
    nxt = {"step_id": "s2", "samples": batch, "optimizer": {"lr": 1e-3, "weight_decay": 0.05}}
    ma, mb = a.train_step(nxt), b.train_step(nxt)
    assert ma == mb
    assert_same_weights(weights(a.model), weights(b.model))
    # Steps trained before the checkpoint are still recognised after the resume.
    assert b.train_step({"step_id": "s0", "samples": batch, "optimizer": {"lr": 1e-3, "weight_decay": 0.05}})[
        "duplicate"
    ]


def test_lora_checkpoint_merged_weights_and_round_trip(model_dir: Path, tmp_path: Path) -> None:
    trainer = Trainer(str(model_dir), lora_rank=4, seed=1)
    assert trainer.lora_alpha == 8  # default alpha = 2r
    probe = PROMPT + [33, 34, 35]
    for i in range(2):
        trainer.train_step({"step_id": f"l{i}", "samples": [sample(trainer, [33, 34, 35])], "optimizer": LR})
    live_before = trainer.response_log_probs(probe, 3)
    out = tmp_path / "lora"
    trainer.save_checkpoint(str(out))
    # Saving merged a *copy*: the live adapter is untouched and still a PEFT model.
    assert trainer.response_log_probs(probe, 3) == live_before
    assert any("lora_B" in n for n, _ in trainer.model.named_parameters())

    # The top-level folder is a plain HF model whose weights are W + (alpha/r)·B·A.
    loaded = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    expected = merged_lora_state(trainer)
    got = weights(loaded)
    for key, value in expected.items():
        assert torch.allclose(got[key], value, atol=1e-6), key
    assert (out / "adapter" / "adapter_config.json").is_file()
    adapter = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert adapter and all("lora_" in k for k in adapter)
    ids = torch.tensor([probe[:-1]])
    with torch.no_grad():
        merged_lp = torch.log_softmax(loaded(input_ids=ids).logits[0, -3:], -1)
    merged_lp = merged_lp.gather(-1, torch.tensor(probe[-3:])[:, None]).squeeze(-1).tolist()
    assert merged_lp == pytest.approx(live_before, abs=1e-5)

    # A fresh trainer (different seed, so a different random LoRA A) resumes the exact adapter.
    resumed = Trainer(str(model_dir), lora_rank=4, seed=2)
    assert resumed.response_log_probs(probe, 3) != live_before
    resumed.load_checkpoint(str(out))
    assert resumed.response_log_probs(probe, 3) == live_before
    assert resumed.info()["step_ids"] == ["l0", "l1"] and resumed.step_count == 2
    # A full fine-tune trainer refuses a LoRA checkpoint instead of loading it half.
    with pytest.raises(EngineError) as err:
        Trainer(str(model_dir)).load_checkpoint(str(out))
    assert err.value.param == "path"


# ---- HTTP routes ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http(model_dir: Path) -> tuple[TestClient, Trainer]:
    trainer = Trainer(str(model_dir))
    app = FastAPI()
    install_error_handlers(app)
    # Checkpoints of these tests live in pytest's temporary folders.
    app.include_router(make_training_router(trainer, PathRoots.of([tempfile.gettempdir()], [])))
    return TestClient(app), trainer


def good_sample() -> dict[str, Any]:
    return {
        "tokens": [1, 2, 3, 4],
        "response_length": 2,
        "loss_mask": [1, 1],
        "rollout_log_probs": [-5.0, -5.5],
    }


def body(**changes: Any) -> dict[str, Any]:
    s = good_sample()
    s.update(changes.pop("sample", {}))
    return {"step_id": "http-bad", "samples": [good_sample(), s], **changes}


BAD_REQUESTS = [
    ("mask length", body(sample={"loss_mask": [1, 1, 1]}), "samples[1].loss_mask"),
    ("rollout length", body(sample={"rollout_log_probs": [-1.0]}), "samples[1].rollout_log_probs"),
    (
        "teacher length",
        body(sample={"teacher_log_probs": [-1.0, -1.0, -1.0]}),
        "samples[1].teacher_log_probs",
    ),
    (
        "topk rows",
        body(sample={"teacher_topk_log_probs": [[-1.0]], "teacher_topk_indices": [[1]]}),
        "samples[1].teacher_topk_log_probs",
    ),
    (
        "topk shapes disagree",
        body(sample={"teacher_topk_log_probs": [[-1.0], [-1.0]], "teacher_topk_indices": [[1, 2], [1, 2]]}),
        "samples[1].teacher_topk_indices",
    ),
    ("response too long", body(sample={"response_length": 5}), "samples[1].response_length"),
    ("whole sequence is response", body(sample={"response_length": 4}), "samples[1].response_length"),
    ("response empty", body(sample={"response_length": 0}), "samples[1].response_length"),
    ("token out of vocab", body(sample={"tokens": [1, 2, VOCAB, 4]}), "samples[1].tokens"),
    ("negative token", body(sample={"tokens": [1, -2, 3, 4]}), "samples[1].tokens[1]"),
    (
        "topk index out of vocab",
        {
            "step_id": "x",
            "samples": [
                {
                    **good_sample(),
                    "teacher_topk_log_probs": [[-1.0], [-1.0]],
                    "teacher_topk_indices": [[1], [VOCAB]],
                }
            ],
            "loss": {"method": "topk_distill"},
        },
        "samples[0].teacher_topk_indices",
    ),
    ("unknown method", body(loss={"method": "ppo2"}), "loss.method"),
    ("unknown loss field", body(loss={"kl_coeff": 0.1}), "loss.kl_coeff"),
    (
        "nan log-prob",
        body(sample={"rollout_log_probs": [-1.0, float("nan")]}),
        "samples[1].rollout_log_probs[1]",
    ),
    ("inf reward", body(sample={"reward": float("inf")}), "samples[1].reward"),
    ("bad mask value", body(sample={"loss_mask": [1, 2]}), "samples[1].loss_mask[1]"),
    ("empty samples", {"step_id": "x", "samples": []}, "samples"),
    ("missing step id", {"samples": [good_sample()]}, "step_id"),
    ("opd without teacher", body(loss={"method": "opd"}), "samples[0].teacher_log_probs"),
    ("topk without arrays", body(loss={"method": "topk_distill"}), "samples[0].teacher_topk_log_probs"),
    ("bad lr", body(optimizer={"lr": -1.0}), "optimizer.lr"),
    ("bad betas", body(optimizer={"betas": [0.9, 1.5]}), "optimizer.betas[1]"),
    ("negative weight", body(sample={"weight": -1.0}), "samples[1].weight"),
    (
        "all weights zero",
        body(sample={"weight": 0.0}) | {"samples": [good_sample() | {"weight": 0}] * 2},
        "samples",
    ),
]


@pytest.mark.parametrize(("case", "payload", "param"), BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_http_bad_inputs_are_4xx_naming_the_field(
    http: tuple[TestClient, Trainer], case: str, payload: dict[str, Any], param: str
) -> None:
    client, trainer = http
    before = trainer.step_count
    # json.dumps (not httpx's json=) so NaN/Infinity reach the server as Python's json module writes them.
    response = client.post(
        "/train_step", content=json.dumps(payload), headers={"content-type": "application/json"}
    )
    assert 400 <= response.status_code < 500, response.text
    error = response.json()["error"]
    assert error["param"] == param, error
    assert error["message"]
    assert trainer.step_count == before


def test_http_train_save_load_info(http: tuple[TestClient, Trainer], tmp_path: Path) -> None:
    client, trainer = http
    payload = {"step_id": "http-ok", "samples": [good_sample()], "loss": {"method": "grpo"}, "optimizer": LR}
    first = client.post("/train_step", json=payload)
    assert first.status_code == 200, first.text
    assert first.json()["duplicate"] is False and first.json()["step_id"] == "http-ok"
    again = client.post("/train_step", json=payload).json()
    assert again["duplicate"] is True and again["loss"] == first.json()["loss"]
    conflict = client.post("/train_step", json={**payload, "samples": [good_sample(), good_sample()]})
    assert conflict.status_code == 409 and conflict.json()["error"]["param"] == "step_id"

    info = client.get("/trainer_info").json()
    assert "http-ok" in info["step_ids"] and info["lora"] is None and info["device"] == "cpu"
    saved = client.post("/save_checkpoint", json={"path": str(tmp_path / "c")})
    assert saved.status_code == 200 and saved.json()["steps_seen"] == info["steps_seen"]
    loaded = client.post("/load_checkpoint", json={"path": str(tmp_path / "c")})
    assert loaded.status_code == 200 and loaded.json()["step_count"] == info["step_count"]
    missing = client.post("/load_checkpoint", json={"path": str(tmp_path / "nope")})
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "path"
    not_ckpt = client.post("/load_checkpoint", json={"path": str(tmp_path)})
    assert not_ckpt.status_code == 400 and not_ckpt.json()["error"]["param"] == "path"
    assert client.post("/save_checkpoint", json={}).json()["error"]["param"] == "path"


def test_http_info_answers_while_a_step_holds_the_trainer(http: tuple[TestClient, Trainer]) -> None:
    client, trainer = http
    # Hold the trainer's lock as a long step would; the info route must not wait for it and a
    # train_step (run in the threadpool) must wait, then complete.
    trainer._lock.acquire()
    result: dict[str, Any] = {}
    try:
        assert client.get("/trainer_info").json()["training"] is True

        def post() -> None:
            payload = {"step_id": "after-lock", "samples": [good_sample()], "optimizer": LR}
            result["response"] = client.post("/train_step", json=payload)

        th = threading.Thread(target=post)
        th.start()
        th.join(timeout=0.5)
        assert th.is_alive()  # blocked on the lock, not failed
    finally:
        trainer._lock.release()
    th.join(timeout=30)
    assert result["response"].status_code == 200
    assert client.get("/trainer_info").json()["training"] is False
