"""slime custom loss functions: `func(args, batch, logits, sum_of_sample_mean) -> (loss, metrics)`.

That is how slime's actor calls `--custom-loss-function-path` when `--loss-type custom_loss` (its
`loss_function` then scales the loss by micro-batches / global batch size, as for its built-in losses):
- `args`: slime's argparse namespace (`rollout_temperature`, `eps_clip`, `eps_clip_high`, `use_kl_loss`,
  `kl_loss_coef`, `kl_loss_type`, `entropy_coef`, `use_rollout_logprobs`).
- `batch`: per-sample lists: `unconcat_tokens` ([T_i] prompt+response), `total_lengths`, `response_lengths`,
  `loss_masks` ([R_i]), `advantages` ([R_i], the reward broadcast by the grpo estimator), `log_probs`
  ([R_i] π_old recomputed by the actor), `rollout_log_probs`, `ref_log_probs` (with KL), and the teacher
  fields the rollout put in (`teacher_log_probs` [R_i], `teacher_topk_log_probs` and
  `teacher_topk_indices` [R_i, K]).
- `logits`: [1, Σ T_i, V] for the packed micro-batch, float32.
- `sum_of_sample_mean(x)`: x [Σ R_i] -> scalar, Σ_i mean over sample i's masked tokens.

Every formula comes from `openclaw_engine.losses` (the reference trainer's): the PPO surrogate, the
OPD/combine advantage, the KL estimators, the top-K reverse KL. This module only gathers slime's packed
tensors into the [1, Σ R_i] layout those functions take. Tensor parallelism is not handled: the log-softmax
is over the full vocabulary held by this rank, which is what slime's FSDP backend (LoRA, spec 8.1) gives a
loss.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..losses import (
    entropy_from_logits,
    kl_penalty,
    opd_advantages,
    ppo_clipped_loss,
    teacher_or_old,
    topk_reverse_kl,
    topk_tail,
)

Reducer = Callable[[Tensor], Tensor]


def response_logits(args: Any, batch: dict[str, Any], logits: Tensor) -> list[Tensor]:
    """Per sample, the logits that score its response tokens ([R_i, V]), temperature applied as slime does."""
    assert logits.dim() == 3 and logits.size(0) == 1, (
        f"expected packed logits [1, T, V], got {tuple(logits.shape)}"
    )
    flat = logits[0].float() / float(getattr(args, "rollout_temperature", 1.0) or 1.0)
    chunks = []
    end = 0
    for total, response in zip(batch["total_lengths"], batch["response_lengths"], strict=True):
        end += int(total)
        start = end - int(response)
        # Token t is predicted by the logits at position t - 1.
        chunks.append(flat[start - 1 : end - 1])
    return chunks


def _cat(values: list[Tensor], device: torch.device) -> Tensor:
    return torch.cat([torch.as_tensor(v, device=device).float().reshape(-1) for v in values])[None]


def _response_tokens(batch: dict[str, Any]) -> list[Tensor]:
    return [
        torch.as_tensor(tokens)[-int(r) :]
        for tokens, r in zip(batch["unconcat_tokens"], batch["response_lengths"], strict=True)
    ]


def _policy_log_probs(
    args: Any, batch: dict[str, Any], logits: Tensor
) -> tuple[Tensor, Tensor, list[Tensor]]:
    """log π_θ of each response token and its entropy, both [1, Σ R_i]; plus the log-softmax chunks."""
    lp, ent, log_softmax = [], [], []
    for chunk, tokens in zip(response_logits(args, batch, logits), _response_tokens(batch), strict=True):
        all_lp = torch.log_softmax(chunk, dim=-1)
        log_softmax.append(all_lp)
        lp.append(all_lp.gather(-1, tokens.to(chunk.device).long()[:, None])[:, 0])
        ent.append(entropy_from_logits(chunk))
    return torch.cat(lp)[None], torch.cat(ent)[None], log_softmax


def _kl_term(args: Any, batch: dict[str, Any], log_probs: Tensor, reduce: Reducer) -> Tensor:
    coef = float(getattr(args, "kl_loss_coef", 0.0) or 0.0)
    if not getattr(args, "use_kl_loss", False) or "ref_log_probs" not in batch:
        return log_probs.new_zeros(())
    ref = _cat(batch["ref_log_probs"], log_probs.device)
    kl = reduce(kl_penalty(log_probs, ref, getattr(args, "kl_loss_type", "low_var_kl"))[0])
    return kl if coef != 0.0 else kl.detach()


def _combine_weights() -> tuple[float, float]:
    # spec 7: read per call from the environment, so a run can change them without a restart.
    return (
        float(os.environ.get("OPENCLAW_COMBINE_W_OPD", "1.0")),
        float(os.environ.get("OPENCLAW_COMBINE_W_RL", "1.0")),
    )


def combine_loss_function(
    args: Any, batch: dict[str, Any], logits: Tensor, sum_of_sample_mean: Reducer
) -> tuple[Tensor, dict[str, Tensor]]:
    """Binary RL + OPD (spec 7): A = w_opd·(teacher_lp − old_lp) + w_rl·A_grpo, PPO clipped surrogate."""
    device = logits.device
    log_probs, entropy, _ = _policy_log_probs(args, batch, logits)
    use_rollout = bool(getattr(args, "use_rollout_logprobs", False))
    olds = batch["rollout_log_probs"] if use_rollout else batch["log_probs"]
    old = _cat(olds, device)
    # Per sample: an RL-only row (teacher = its rollout log-probs) takes π_old, so its teacher term is 0.
    teacher = _cat(
        [
            teacher_or_old(torch.as_tensor(t).float(), torch.as_tensor(o).float(), torch.as_tensor(r).float())
            for t, o, r in zip(batch["teacher_log_probs"], olds, batch["rollout_log_probs"], strict=True)
        ],
        device,
    )
    a_grpo = _cat(batch["advantages"], device)
    mask = _cat(batch["loss_masks"], device)
    w_opd, w_rl = _combine_weights()
    advantages = w_opd * opd_advantages(teacher, old) + w_rl * a_grpo

    def reduce(x: Tensor) -> Tensor:
        return sum_of_sample_mean(x.reshape(-1))

    pg_tok, clip_tok, kl_tok = ppo_clipped_loss(
        log_probs,
        old.detach(),
        advantages.detach(),
        mask,
        float(getattr(args, "eps_clip", 0.2)),
        float(getattr(args, "eps_clip_high", getattr(args, "eps_clip", 0.2))),
    )
    pg_loss = reduce(pg_tok)
    entropy_coef = float(getattr(args, "entropy_coef", 0.0) or 0.0)
    entropy_loss = reduce(entropy if entropy_coef != 0.0 else entropy.detach())
    kl_loss = _kl_term(args, batch, log_probs, reduce)
    loss = pg_loss - entropy_coef * entropy_loss + float(getattr(args, "kl_loss_coef", 0.0) or 0.0) * kl_loss
    metrics = {
        "loss": loss.detach(),
        "pg_loss": pg_loss.detach(),
        "entropy_loss": entropy_loss.detach(),
        "pg_clipfrac": reduce(clip_tok).detach(),
        "ppo_kl": reduce(kl_tok).detach(),
        "kl_loss": kl_loss.detach(),
    }
    if "rollout_log_probs" in batch:
        rollout = _cat(batch["rollout_log_probs"], device)
        metrics["train_rollout_logprob_abs_diff"] = reduce((log_probs.detach() - rollout).abs())
    return loss, metrics


def topk_distillation_loss_function(
    args: Any, batch: dict[str, Any], logits: Tensor, sum_of_sample_mean: Reducer
) -> tuple[Tensor, dict[str, Tensor]]:
    """Top-K reverse KL to the teacher (spec 6.6): loss = Σmean(KL_t) − entropy_coef·Σmean(H(p)), no ratio."""
    device = logits.device
    log_probs, _, log_softmax = _policy_log_probs(args, batch, logits)
    student = torch.cat(
        [
            lsm.gather(-1, torch.as_tensor(idx, device=device).long())
            for lsm, idx in zip(log_softmax, batch["teacher_topk_indices"], strict=True)
        ]
    )
    teacher = torch.cat([torch.as_tensor(t, device=device).float() for t in batch["teacher_topk_log_probs"]])

    def reduce(x: Tensor) -> Tensor:
        return sum_of_sample_mean(x.reshape(-1))

    distill = reduce(topk_reverse_kl(student, teacher))
    # H over the same K+1 bins as the KL (the spec's H(p)).
    p = torch.cat([student, topk_tail(student)[..., None]], dim=-1)
    entropy_loss = reduce(-(p.exp() * p).sum(dim=-1))
    entropy_coef = float(getattr(args, "entropy_coef", 0.0) or 0.0)
    loss = distill - entropy_coef * entropy_loss if entropy_coef != 0.0 else distill
    metrics = {
        "loss": loss.detach(),
        "pg_loss": distill.detach(),
        "entropy_loss": entropy_loss.detach(),
        "pg_clipfrac": distill.new_zeros(()),
        "ppo_kl": distill.new_zeros(()),
        "kl_loss": distill.new_zeros(()),
    }
    if "log_probs" in batch:
        old = _cat(batch["log_probs"], device)
        metrics["ppo_kl"] = reduce(old - log_probs.detach())
    return loss, metrics
