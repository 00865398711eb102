"""slime custom loss functions: `func(args, batch, logits, sum_of_sample_mean) -> (loss, metrics)`.

That is how slime's actor calls `--custom-loss-function-path` when `--loss-type custom_loss` (its
`loss_function` then scales the loss by micro-batches / global batch size, as for its built-in losses):
- `args`: slime's argparse namespace (`rollout_temperature`, `eps_clip`, `eps_clip_high`, `use_kl_loss`,
  `kl_loss_coef`, `kl_loss_type`, `entropy_coef`, `use_rollout_logprobs`).
- the epoch's batch file (`$OPENCLAW_BATCH_FILE`, as for the batch loader): which samples are stale, so that
  π_old is chosen per sample as the reference trainer does (`old_log_probs`).
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
from functools import lru_cache
from typing import Any

import torch
from torch import Tensor

from ..losses import (
    entropy_from_logits,
    kl_penalty,
    opd_advantages,
    ppo_clipped_loss,
    teacher_or_old,
    topk_distillation_terms,
)
from .batch_loader import BATCH_FILE_ENV, read_batch_file

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


@lru_cache(maxsize=4)
def _stale_token_sequences(batch_file: str) -> frozenset[tuple[int, ...]]:
    request = read_batch_file(batch_file)
    return frozenset(tuple(s.tokens) for s in request.samples if request.loss.rollout_old(s))


def stale_rows(args: Any, batch: dict[str, Any]) -> list[bool]:
    """Per row: whether its π_old is its rollout log-probs (a sample too many policy versions old).

    `--use-rollout-logprobs` makes every row stale. Otherwise a row is stale when the batch file flags the
    sample with its tokens (`use_rollout_logprobs`, as the reference trainer's `LossRequest.rollout_old`);
    slime's micro-batches carry no sample ids, and two samples with the same tokens are the same trajectory.
    """
    rows = len(batch["response_lengths"])
    if getattr(args, "use_rollout_logprobs", False):
        return [True] * rows
    path = os.environ.get(BATCH_FILE_ENV)
    if not path:
        return [False] * rows
    stale = _stale_token_sequences(path)
    return [
        tuple(int(t) for t in torch.as_tensor(tokens).reshape(-1).tolist()) in stale
        for tokens in batch["unconcat_tokens"]
    ]


def old_log_probs(args: Any, batch: dict[str, Any]) -> list[Any]:
    """Per row, π_old of the ratio: a stale row's rollout log-probs, else slime's recomputed ones."""
    return [
        rollout if stale else recomputed
        for stale, recomputed, rollout in zip(
            stale_rows(args, batch), batch["log_probs"], batch["rollout_log_probs"], strict=True
        )
    ]


AdvantagesOf = Callable[[list[Any], Tensor], Tensor]


def _clipped_policy_loss(
    args: Any,
    batch: dict[str, Any],
    logits: Tensor,
    sum_of_sample_mean: Reducer,
    advantages_of: AdvantagesOf,
) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO clipped surrogate − entropy_coef·H + kl_coef·KL, with π_old per row and the method's advantage.

    `advantages_of(olds, old)` gets π_old per row and concatenated ([1, Σ R_i]) and returns the advantage.
    """
    device = logits.device
    log_probs, entropy, _ = _policy_log_probs(args, batch, logits)
    olds = old_log_probs(args, batch)
    old = _cat(olds, device)
    mask = _cat(batch["loss_masks"], device)
    advantages = advantages_of(olds, old)

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


def grpo_loss_function(
    args: Any, batch: dict[str, Any], logits: Tensor, sum_of_sample_mean: Reducer
) -> tuple[Tensor, dict[str, Tensor]]:
    """GRPO (spec 5) with π_old per row: A = the reward slime's grpo estimator broadcast."""
    return _clipped_policy_loss(
        args, batch, logits, sum_of_sample_mean, lambda _olds, old: _cat(batch["advantages"], old.device)
    )


def opd_loss_function(
    args: Any, batch: dict[str, Any], logits: Tensor, sum_of_sample_mean: Reducer
) -> tuple[Tensor, dict[str, Tensor]]:
    """OPD (spec 6.5) with π_old per row: A = teacher_lp − old_lp, old being each row's own π_old."""
    return _clipped_policy_loss(
        args,
        batch,
        logits,
        sum_of_sample_mean,
        lambda _olds, old: opd_advantages(_cat(batch["teacher_log_probs"], old.device), old),
    )


def combine_loss_function(
    args: Any, batch: dict[str, Any], logits: Tensor, sum_of_sample_mean: Reducer
) -> tuple[Tensor, dict[str, Tensor]]:
    """Binary RL + OPD (spec 7): A = w_opd·(teacher_lp − old_lp) + w_rl·A_grpo, PPO clipped surrogate."""
    w_opd, w_rl = _combine_weights()

    def advantages_of(olds: list[Any], old: Tensor) -> Tensor:
        # Per sample: an RL-only row (teacher = its rollout log-probs) takes π_old, so its teacher term is 0.
        teacher = _cat(
            [
                teacher_or_old(
                    torch.as_tensor(t).float(), torch.as_tensor(o).float(), torch.as_tensor(r).float()
                )
                for t, o, r in zip(batch["teacher_log_probs"], olds, batch["rollout_log_probs"], strict=True)
            ],
            old.device,
        )
        return w_opd * opd_advantages(teacher, old) + w_rl * _cat(batch["advantages"], old.device)

    return _clipped_policy_loss(args, batch, logits, sum_of_sample_mean, advantages_of)


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

    # The reference trainer's terms exactly (losses.topk_distillation_terms): H over the same K+1 bins.
    kl_tok, entropy_tok = topk_distillation_terms(student, teacher)
    distill = reduce(kl_tok)
    entropy_loss = reduce(entropy_tok)
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
