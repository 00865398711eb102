"""Learning checks: the trainer, fed its own on-policy samples, actually learns a verifiable toy task.

Task: after a fixed prompt the reply's FIRST token should lie in TARGET, 30 of the 300 vocabulary ids. A
random tiny model puts about 10% of its mass there, so a group of 16 replies usually holds a success or
two (GRPO signal) without the task being solved already. Reward +1 on success, −1 otherwise, normalised
within the group as in spec 10.0: (r − mean) / (std + 1e-6), all zero when the group is unanimous.

Progress is measured without sampling noise as the exact probability of TARGET at the first reply
position; the per-step sampled success rate is printed too (`pytest -s` shows the curves; pytest also
prints them when a check fails).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from training_fixtures import VOCAB, make_tiny_model_dir
from transformers import AutoModelForCausalLM

from openclaw_engine.trainer import Trainer

PROMPT = [1, 2, 3, 4, 5]
TARGET = torch.arange(100, 130)
IN_TARGET = torch.zeros(VOCAB, dtype=torch.bool)
IN_TARGET[TARGET] = True
GROUP = 16  # replies per step, all to the same prompt: one GRPO group
REPLY_LEN = 3
STEPS = 30
TEACHER_BOOST = 3.0  # the synthetic teacher's logit bonus on TARGET tokens


def target_mass(model: torch.nn.Module, temperature: float = 1.0) -> float:
    """P(first reply token ∈ TARGET | PROMPT) under the model sampled at `temperature`, exactly."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([PROMPT])).logits[0, -1].float()
    return torch.softmax(logits / temperature, -1)[TARGET].sum().item()


def sample_group(
    model: torch.nn.Module, gen: torch.Generator, temperature: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """GROUP replies by ancestral sampling at `temperature`; token ids and the engine-style log-probs
    log_softmax(logits / T) of the sampled tokens."""
    ids = torch.tensor([PROMPT] * GROUP)
    log_probs = []
    with torch.no_grad():
        for _ in range(REPLY_LEN):
            lp = torch.log_softmax(model(input_ids=ids).logits[:, -1].float() / temperature, -1)
            tok = torch.multinomial(lp.exp(), 1, generator=gen)
            log_probs.append(lp.gather(-1, tok))
            ids = torch.cat([ids, tok], dim=1)
    return ids, torch.cat(log_probs, dim=1)


def group_normalised(rewards: torch.Tensor) -> torch.Tensor:
    std = rewards.std()
    return (rewards - rewards.mean()) / (std + 1e-6) if std > 0 else torch.zeros_like(rewards)


def teacher_log_probs(teacher: torch.nn.Module, ids: torch.Tensor, temperature: float = 1.0) -> list[float]:
    """A stand-in for the hint-conditioned teacher: the frozen base model with TARGET tokens boosted, at the
    temperature the reply was drawn at (as the teacher prefill is asked for)."""
    with torch.no_grad():
        logits = teacher(input_ids=ids[None, :-1]).logits[0, -REPLY_LEN:].float()
        logits[:, TARGET] += TEACHER_BOOST
        lp = torch.log_softmax(logits / temperature, -1)
        return lp.gather(-1, ids[-REPLY_LEN:, None]).squeeze(-1).tolist()


def run_training(
    trainer: Trainer, method: str, lr: float, model_dir: Path, temperature: float = 1.0
) -> tuple[float, list[dict[str, Any]]]:
    gen = torch.Generator().manual_seed(1)
    teacher = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    baseline = target_mass(trainer.model, temperature)
    curve = []
    for step in range(STEPS):
        ids, rollout_lp = sample_group(trainer.model, gen, temperature)
        hits = IN_TARGET[ids[:, len(PROMPT)]]
        advantages = group_normalised(hits.float() * 2.0 - 1.0)
        samples = []
        for g in range(GROUP):
            s: dict[str, Any] = {
                "tokens": ids[g].tolist(),
                "response_length": REPLY_LEN,
                "loss_mask": [1] * REPLY_LEN,
                "rollout_log_probs": rollout_lp[g].tolist(),
                "reward": float(advantages[g]) if method != "opd" else 0.0,
                "temperature": temperature,
            }
            # Off T = 1, every other combine row is RL-only (no hint accepted), built as sample assembly
            # does: no teacher. Its teacher term must be 0, not the bias rollout_T − π_old.
            rl_only = method == "combine" and temperature != 1.0 and g % 2 == 1
            if method in ("opd", "combine") and not rl_only:
                s["teacher_log_probs"] = teacher_log_probs(teacher, ids[g], temperature)
            samples.append(s)
        metrics = trainer.train_step(
            {
                "step_id": f"{method}-{step}",
                "samples": samples,
                "loss": {"method": method},
                "optimizer": {"lr": lr},
            }
        )
        curve.append(
            {
                "step": step,
                "sampled_rate": hits.float().mean().item(),
                "target_mass": target_mass(trainer.model, temperature),
                "loss": metrics["loss"],
                "grad_norm": metrics["grad_norm"],
            }
        )
    return baseline, curve


def report(name: str, baseline: float, curve: list[dict[str, Any]]) -> str:
    lines = [f"{name}: baseline P(target) = {baseline:.3f}"]
    for row in curve:
        lines.append(
            f"  step {row['step']:2d}  sampled success {row['sampled_rate']:.3f}"
            f"  P(target) {row['target_mass']:.3f}  loss {row['loss']:+.3f}  grad_norm {row['grad_norm']:.2f}"
        )
    text = "\n".join(lines)
    print(text)
    return text


CASES = [
    # name, method, lora_rank, init_range, lr, temperature, required gain in P(target)
    ("grpo full fine-tune", "grpo", 0, 0.02, 1e-2, 1.0, 0.5),
    ("opd full fine-tune (teacher only)", "opd", 0, 0.02, 1e-2, 1.0, 0.3),
    ("combine full fine-tune", "combine", 0, 0.02, 1e-2, 1.0, 0.4),
    # Sampled at T = 0.6, half the rows RL-only: reaches the T = 1 combine result.
    ("combine full fine-tune at T=0.6", "combine", 0, 0.02, 1e-2, 0.6, 0.4),
    # LoRA cannot move a 0.02-init tiny model's logits far (they are bounded by the tiny tied embeddings),
    # so its check uses a model initialised with a larger spread.
    ("combine LoRA r=8", "combine", 8, 0.2, 1e-2, 1.0, 0.3),
]


@pytest.mark.parametrize(
    ("name", "method", "lora_rank", "init_range", "lr", "temperature", "gain"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_learns_verifiable_task(
    tmp_path: Path,
    name: str,
    method: str,
    lora_rank: int,
    init_range: float,
    lr: float,
    temperature: float,
    gain: float,
) -> None:
    model_dir = make_tiny_model_dir(tmp_path / "model", seed=0, init_range=init_range)
    trainer = Trainer(str(model_dir), lora_rank=lora_rank, seed=0)
    baseline, curve = run_training(trainer, method, lr, model_dir, temperature)
    text = report(name, baseline, curve)
    assert 0.03 <= baseline <= 0.25, text  # the task is neither solved nor hopeless at the start
    final = curve[-1]["target_mass"]
    assert final >= baseline + gain, text
    # The sampled success rate of the last five steps agrees with the exact measure.
    late = sum(row["sampled_rate"] for row in curve[-5:]) / 5
    assert late >= baseline + gain - 0.15, text
