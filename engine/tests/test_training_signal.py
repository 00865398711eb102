"""What the trainer trains is what was sampled: the sample's temperature, combine's RL-only rows, per-sample
π_old, and a reset to the base for a run that starts anew.

The model is initialised with a wide spread (init_range 0.2) so its logits are far from uniform and a
temperature of 0.6 changes every log-prob noticeably.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from training_fixtures import make_tiny_model_dir

from openclaw_engine.trainer import Trainer

PROMPT = [11, 12, 13, 14]
RESPONSE = [40, 41, 42, 43, 44]
T = 0.6


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model_dir(tmp_path_factory.mktemp("signal") / "model", seed=3, init_range=0.2)


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def drawn_at(trainer: Trainer, temperature: float, **extra: Any) -> dict[str, Any]:
    """A sample whose rollout log-probs are what an engine reports at `temperature`: log_softmax(logits/T)."""
    tokens = PROMPT + RESPONSE
    return {
        "tokens": tokens,
        "response_length": len(RESPONSE),
        "loss_mask": [1] * len(RESPONSE),
        "rollout_log_probs": trainer.response_log_probs(tokens, len(RESPONSE), temperature),
        "reward": 1.0,
        "temperature": temperature,
        **extra,
    }


def step(trainer: Trainer, step_id: str, samples: list[dict[str, Any]], **loss: Any) -> dict[str, Any]:
    return trainer.train_step(
        {"step_id": step_id, "samples": samples, "loss": loss, "optimizer": {"lr": 1e-2}}
    )


def test_log_probs_are_computed_at_the_temperature_the_sample_was_drawn_at(model_dir: Path) -> None:
    trainer = Trainer(str(model_dir))
    sample = drawn_at(trainer, T)
    # π_old = the rollout log-probs: at the sample's temperature the ratio is 1 on every token.
    at_t = step(trainer, "t", [sample], method="grpo", use_rollout_logprobs=True)
    assert at_t["train_rollout_logprob_abs_diff"] < 1e-5
    assert abs(at_t["ppo_kl"]) < 1e-5
    # Scored at temperature 1 instead, the same sample looks off-policy (what training at T = 1 did).
    fresh = Trainer(str(model_dir))
    untold = {k: v for k, v in drawn_at(fresh, T).items() if k != "temperature"}
    at_1 = step(fresh, "one", [untold], method="grpo", use_rollout_logprobs=True)
    assert at_1["train_rollout_logprob_abs_diff"] > 0.05


def test_an_rl_only_combine_row_has_a_teacher_term_of_exactly_zero(model_dir: Path) -> None:
    """combine at T = 0.6: no teacher, or teacher = rollout log-probs, trains exactly like grpo."""
    results = []
    for case in ("grpo", "no-teacher", "rollout-teacher"):
        trainer = Trainer(str(model_dir))
        sample = drawn_at(trainer, T, reward=-1.0)
        if case == "rollout-teacher":
            sample["teacher_log_probs"] = list(sample["rollout_log_probs"])
        metrics = step(trainer, case, [sample], method="grpo" if case == "grpo" else "combine")
        results.append((metrics, weights(trainer)))
    (grpo, grpo_w), (none, none_w), (rollout, rollout_w) = results
    assert same(grpo_w, none_w) and same(grpo_w, rollout_w)
    assert grpo["pg_loss"] == none["pg_loss"] == rollout["pg_loss"]


def test_only_the_flagged_sample_uses_its_rollout_log_probs(model_dir: Path) -> None:
    trainer = Trainer(str(model_dir))
    fresh = drawn_at(trainer, 1.0)
    stale = drawn_at(trainer, 1.0)
    # Both carry rollout log-probs from "another policy" (shifted); only the stale one may use them.
    fresh["rollout_log_probs"] = [v - 0.5 for v in fresh["rollout_log_probs"]]
    stale["rollout_log_probs"] = [v - 0.3 for v in stale["rollout_log_probs"]]
    stale["use_rollout_logprobs"] = True
    metrics = step(trainer, "mixed", [fresh, stale], method="grpo")
    # ppo_kl = mean(old − lp) summed over samples / batch: 0 for the fresh one, −0.3 for the stale one.
    assert metrics["ppo_kl"] == pytest.approx(-0.3 / 2, abs=1e-5)
    whole = Trainer(str(model_dir))
    both = step(
        whole,
        "whole",
        [fresh, {**stale, "use_rollout_logprobs": None}],
        method="grpo",
        use_rollout_logprobs=True,
    )
    assert both["ppo_kl"] == pytest.approx(-(0.5 + 0.3) / 2, abs=1e-5)


def test_reset_returns_to_the_base_and_forgets_step_ids(model_dir: Path) -> None:
    trainer = Trainer(str(model_dir))
    base = weights(trainer)
    step(trainer, "a:v1", [drawn_at(trainer, 1.0)], method="grpo")
    assert not same(base, weights(trainer))
    assert trainer.info()["step_ids"] == ["a:v1"]
    trainer.reset()
    assert same(base, weights(trainer))
    assert trainer.info()["step_ids"] == [] and trainer.step_count == 0
    # The same step id trains again (it is a new incarnation's), from the base.
    again = step(trainer, "a:v1", [drawn_at(trainer, 1.0)], method="grpo")
    assert again["duplicate"] is False


def test_lora_reset_starts_a_fresh_adapter(model_dir: Path) -> None:
    trainer = Trainer(str(model_dir), lora_rank=4)
    base = weights(trainer)
    step(trainer, "l:v1", [drawn_at(trainer, 1.0)], method="grpo")
    trainer.reset()
    assert same(base, weights(trainer))
