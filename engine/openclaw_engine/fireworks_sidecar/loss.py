"""The project's losses (grpo / opd / combine) as a Fireworks custom loss: `forward_backward_custom` hands
the policy's log-probs of every datum's target tokens to `ProjectLoss`, which computes exactly what the
reference trainer computes (`losses.compute_loss`, one sample at a time, divided by the batch size or the sum
of the sample weights) and returns it; the SDK sends the gradient back to the trainer.

What Fireworks' log-prob forward cannot give is refused by `unsupported`, naming the option: top-K
distillation needs the student's log-probs of the teacher's top-K tokens, the entropy term needs the whole
distribution, a KL term needs a reference model's log-probs, and a sample drawn at a temperature other than 1
would compare two distributions (Fireworks scores at temperature 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from ..losses import compute_loss, sum_of_sample_mean, teacher_or_old
from ..training_schemas import LossRequest, TrainSample

SUPPORTED_METHODS = ("grpo", "opd", "combine")


def unsupported(loss: LossRequest, samples: Sequence[TrainSample]) -> tuple[str, str] | None:
    """(message, param) of the first thing this step asks that Fireworks cannot train, else None."""
    if loss.method == "topk_distill":
        return (
            "Fireworks' forward returns the log-probs of the target tokens only, not of the teacher's top-K "
            "tokens: train opd with training.distillTopK 0 (teacher.topK 0), or use the reference or slime "
            "trainer",
            "loss.method",
        )
    if loss.method not in SUPPORTED_METHODS:
        names = ", ".join(SUPPORTED_METHODS)
        return f"method {loss.method!r} is not available on Fireworks ({names})", "loss.method"
    if loss.kl_coef > 0:
        return (
            "the Fireworks trainer trains no KL term: set loss.klCoef 0, or use the reference or slime "
            "trainer",
            "loss.kl_coef",
        )
    if loss.entropy_coef != 0:
        return (
            "the Fireworks trainer has no entropy term (its forward returns target log-probs only): set "
            "loss.entropyCoef 0, or use the reference or slime trainer",
            "loss.entropy_coef",
        )
    for i, sample in enumerate(samples):
        if sample.images:
            # Sent as plain ids, the image pads would train with no pixels: refused, never dropped.
            return (
                "the sample has images, and the Fireworks trainer sends token ids only: train image samples "
                "with the reference, slime or Tinker trainer",
                f"samples[{i}].images",
            )
        if sample.temperature != 1.0:
            return (
                f"the sample was drawn at temperature {sample.temperature:g}; Fireworks computes log-probs "
                "at temperature 1 only, so serve at temperature 1 to train with Fireworks",
                f"samples[{i}].temperature",
            )
        if loss.method == "opd" and sample.teacher_log_probs is None:
            return "method opd needs teacher_log_probs on every sample", f"samples[{i}].teacher_log_probs"
    return None


class ProjectLoss:
    """`loss_fn(data, logprobs_list) -> (loss, metrics)` for `forward_backward_custom`; keeps its metrics."""

    def __init__(self, samples: Sequence[TrainSample], loss: LossRequest) -> None:
        self.samples = list(samples)
        self.loss = loss
        self.metrics: dict[str, float] = {}

    def __call__(self, _data: list[Any], logprobs_list: list[Tensor]) -> tuple[Tensor, dict[str, float]]:
        if len(logprobs_list) != len(self.samples):
            raise ValueError(f"{len(logprobs_list)} log-prob rows for {len(self.samples)} samples")
        hp = self.loss.hyper_params()
        n = len(self.samples)
        weighted = any(s.weight != 1.0 for s in self.samples)
        denom = sum(s.weight for s in self.samples) if weighted else n
        total: Tensor | None = None
        totals: dict[str, float] = {}
        abs_diff = 0.0
        for sample, row in zip(self.samples, logprobs_list, strict=True):
            r = sample.response_length
            if row.shape[-1] != len(sample.tokens) - 1:
                raise ValueError(f"{row.shape[-1]} log-probs for {len(sample.tokens) - 1} target tokens")
            lp = row.reshape(-1)[-r:].to(torch.float64)[None]
            rollout = torch.tensor([sample.rollout_log_probs], dtype=torch.float64)
            mask = torch.tensor([sample.loss_mask], dtype=torch.float64)
            # π_old: one optimizer update per step, so this forward's detached log-probs are the pre-update
            # policy's (as the reference trainer and slime); a too-old sample uses its rollout log-probs.
            old = rollout if self.loss.rollout_old(sample) else lp.detach()
            given = sample.teacher_log_probs
            teacher = None if given is None else torch.tensor([given], dtype=torch.float64)
            if self.loss.method == "combine":
                teacher = teacher_or_old(teacher, old, rollout)
            loss, m = compute_loss(
                self.loss.method,
                log_probs=lp,
                old_log_probs=old,
                mask=mask,
                rewards=torch.tensor([sample.reward], dtype=torch.float64),
                teacher_log_probs=teacher,
                config=hp,
                batch_size=denom,
                weights=torch.tensor([sample.weight], dtype=torch.float64) if weighted else None,
            )
            total = loss if total is None else total + loss
            for key, value in m.items():
                totals[key] = totals.get(key, 0.0) + float(value)
            abs_diff += float(sum_of_sample_mean((lp.detach() - rollout).abs(), mask)) / max(1, n)
        assert total is not None
        self.metrics = {**totals, "train_rollout_logprob_abs_diff": abs_diff}
        return total.to(logprobs_list[0].dtype), dict(self.metrics)
