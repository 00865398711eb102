"""OpenClaw-RL losses and advantages in plain torch (spec sections 5, 6.5, 6.6 and 7).

No I/O and no model code: the reference Trainer and the slime plugin both import this module, so the two
backends train with the same arithmetic.

Shape conventions (B = samples, T = padded response length, K = top-K width, V = vocabulary):
  per-token tensors  [B, T]   (log-probs, advantages, KL, entropy), float
  mask               [B, T]   1 for a trained response token, 0 for masked or padding
  rewards            [B]
  top-K log-probs    [B, T, K]
  logits             [..., V]
Every reduction goes through `sum_of_sample_mean`, which ignores masked positions, so padding never matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

LossMethod = Literal["grpo", "opd", "combine", "topk_distill"]
KLType = Literal["low_var_kl", "k1", "k2", "k3"]
LOSS_METHODS: tuple[str, ...] = ("grpo", "opd", "combine", "topk_distill")
KL_TYPES: tuple[str, ...] = ("low_var_kl", "k1", "k2", "k3")


def _f32(x: Tensor) -> Tensor:
    """Upcast half/bfloat16 to float32 (exp/log of log-probs lose too much below it); float64 stays."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


@dataclass(frozen=True)
class LossHyperParams:
    """Loss hyper-parameters; the defaults are those of the OpenClaw-RL Track-1 scripts (spec 5, 7)."""

    eps_clip: float = 0.2
    eps_clip_high: float = 0.28
    kl_coef: float = 0.0
    kl_type: KLType = "low_var_kl"
    entropy_coef: float = 0.0
    w_rl: float = 1.0
    w_opd: float = 1.0


def sum_of_sample_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Σ_i (Σ_t x_it·m_it) / max(1, Σ_t m_it): each sample's token mean, summed over samples.

    x, mask: [B, T] -> scalar. slime divides this by the global batch size in the train step, so a long
    response weighs as much as a short one.
    """
    mask = mask.to(x.dtype)
    per_sample = (x * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1.0)
    return per_sample.sum()


def grpo_advantages(rewards: Tensor, mask: Tensor) -> Tensor:
    """A_it = r_i for every response token (rewards [B], mask [B, T] -> [B, T]); masked tokens get 0."""
    r = rewards if rewards.is_floating_point() else rewards.float()
    return r[:, None] * mask.to(r.dtype)


def opd_advantages(teacher_log_probs: Tensor, old_log_probs: Tensor) -> Tensor:
    """A_t = log π_teacher(a_t | s ⊕ hint) − log π_old(a_t | s); [B, T] -> [B, T], no normalisation."""
    return teacher_log_probs - old_log_probs


def teacher_or_old(
    teacher_log_probs: Tensor | None, old_log_probs: Tensor, rollout_log_probs: Tensor
) -> Tensor:
    """The teacher of one sample's OPD term: its own, or π_old when it has none (combine's RL-only rows).

    The original builds an RL-only row with teacher = rollout log-probs, so its term is `rollout − old`,
    which is 0 only when π_old is exactly the sampling policy (and a systematic bias when the trainer's π_old
    is at another temperature). A row without a teacher, or whose teacher *is* its rollout log-probs, gets
    π_old instead, which makes its OPD term exactly 0. Tensors are one sample's, any matching shape.
    """
    if teacher_log_probs is None or torch.equal(teacher_log_probs, rollout_log_probs):
        return old_log_probs
    return teacher_log_probs


def tempered(logits: Tensor, temperature: float) -> Tensor:
    """Logits of the distribution a sample was drawn from: `logits / T` (engines report log_softmax of it)."""
    return logits if temperature == 1.0 else logits / temperature


def combine_advantages(
    teacher_log_probs: Tensor, old_log_probs: Tensor, rewards: Tensor, w_opd: float = 1.0, w_rl: float = 1.0
) -> Tensor:
    """A = w_opd·(teacher_lp − old_lp) + w_rl·r (spec 7); [B, T], [B, T], [B] -> [B, T]."""
    return w_opd * opd_advantages(teacher_log_probs, old_log_probs) + w_rl * rewards[:, None].to(
        old_log_probs.dtype
    )


def ppo_clipped_loss(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    eps_clip: float = 0.2,
    eps_clip_high: float = 0.28,
) -> tuple[Tensor, Tensor, Tensor]:
    """PPO clipped surrogate per token, as slime's `compute_policy_loss`.

    ρ = exp(lp − old), ℓ = max(−ρA, −clip(ρ, 1−eps_clip, 1+eps_clip_high)·A).
    Returns per-token (ℓ, clipfrac = 1 where the clipped branch is the larger, ppo_kl = old − lp), each
    [B, T], unreduced and zero where mask is 0 (reduce with sum_of_sample_mean).
    """
    mask = mask.to(log_probs.dtype)
    ppo_kl = old_log_probs - log_probs
    ratio = torch.exp(-ppo_kl)
    loss_unclipped = -ratio * advantages
    loss_clipped = -ratio.clamp(1.0 - eps_clip, 1.0 + eps_clip_high) * advantages
    clipfrac = (loss_clipped > loss_unclipped).to(log_probs.dtype)
    return torch.maximum(loss_unclipped, loss_clipped) * mask, clipfrac * mask, ppo_kl * mask


def kl_penalty(log_probs: Tensor, ref_log_probs: Tensor, kl_type: str = "low_var_kl") -> Tensor:
    """Per-token KL estimate between the policy and the reference (slime's `compute_approx_kl`).

    k1 = lp − ref; k2 = (lp − ref)²/2; k3 = exp(ref − lp) − (ref − lp) − 1 (unbiased, always ≥ 0);
    low_var_kl = k3 clamped to [−10, 10] so one very unlikely token cannot dominate the batch.
    """
    log_ratio = _f32(log_probs) - _f32(ref_log_probs)
    if kl_type == "k1":
        return log_ratio
    if kl_type == "k2":
        return log_ratio.pow(2) / 2.0
    if kl_type in ("k3", "low_var_kl"):
        neg = -log_ratio
        k3 = torch.exp(neg) - neg - 1.0
        return k3.clamp(min=-10.0, max=10.0) if kl_type == "low_var_kl" else k3
    raise ValueError(f"unknown kl_type {kl_type!r}; expected one of {KL_TYPES}")


def low_var_kl(log_probs: Tensor, ref_log_probs: Tensor) -> Tensor:
    """k3 estimator clamped to [−10, 10]; [B, T] -> [B, T]."""
    return kl_penalty(log_probs, ref_log_probs, "low_var_kl")


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Shannon entropy of softmax(logits) over the last axis: [..., V] -> [...], computed in float32."""
    logits = _f32(logits)
    log_p = torch.log_softmax(logits, dim=-1)
    return -(log_p.exp() * log_p).sum(dim=-1)


def topk_tail(topk_log_probs: Tensor) -> Tensor:
    """log of the mass outside the top-K: log(1 − exp(min(logsumexp(x), −1e-7))); [..., K] -> [...].

    The clamp keeps the tail finite when the top-K already holds (numerically) all the mass; log(−expm1(·))
    is the stable form of log(1 − exp(·)).
    """
    lse = torch.logsumexp(_f32(topk_log_probs), dim=-1).clamp(max=-1e-7)
    return torch.log(-torch.expm1(lse))


def _with_tail(topk_log_probs: Tensor) -> Tensor:
    """[..., K] log-probs -> [..., K+1]: the K bins plus the tail bin (`topk_tail`)."""
    return torch.cat([_f32(topk_log_probs), topk_tail(topk_log_probs)[..., None]], dim=-1)


def topk_reverse_kl(student_topk_log_probs: Tensor, teacher_topk_log_probs: Tensor) -> Tensor:
    """Reverse KL D(student ‖ teacher) over the K teacher-chosen tokens plus one tail bin (spec 6.6).

    Inputs [..., K] (student log-probs gathered at the teacher's top-K indices, and the teacher's own
    log-probs); output [...]: Σ_{k=1}^{K+1} exp(p_k)·(p_k − q_k), with p, q extended by `topk_tail`.
    """
    p = _with_tail(student_topk_log_probs)
    q = _with_tail(teacher_topk_log_probs)
    return (p.exp() * (p - q)).sum(dim=-1)


def topk_entropy(student_topk_log_probs: Tensor) -> Tensor:
    """H(p) of top-K distillation (spec 6.6): −Σ_{k=1}^{K+1} exp(p_k)·p_k over the same K+1 bins as the KL.

    Not the entropy over the whole vocabulary: the top-K loss sees only the K teacher-chosen tokens and the
    tail, and both trainers (the reference and the slime plugin) use this term. [..., K] -> [...].
    """
    p = _with_tail(student_topk_log_probs)
    return -(p.exp() * p).sum(dim=-1)


def topk_distillation_terms(
    student_topk_log_probs: Tensor, teacher_topk_log_probs: Tensor
) -> tuple[Tensor, Tensor]:
    """Per position, the two terms of the top-K loss: (reverse KL, entropy H(p)); [..., K] -> [...] each."""
    return (
        topk_reverse_kl(student_topk_log_probs, teacher_topk_log_probs),
        topk_entropy(student_topk_log_probs),
    )


def compute_loss(
    method: LossMethod,
    *,
    log_probs: Tensor,
    old_log_probs: Tensor,
    mask: Tensor,
    rewards: Tensor | None = None,
    teacher_log_probs: Tensor | None = None,
    ref_log_probs: Tensor | None = None,
    entropy: Tensor | None = None,
    student_topk_log_probs: Tensor | None = None,
    teacher_topk_log_probs: Tensor | None = None,
    config: LossHyperParams | None = None,
    batch_size: float | None = None,
    weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Total loss L = L_main − entropy_coef·H + kl_coef·KL for one (micro-)batch, plus detached metrics.

    L_main is the PPO clipped surrogate with the method's advantage (grpo: r; opd: teacher − old;
    combine: w_opd·(teacher − old) + w_rl·r), or for topk_distill the top-K reverse KL (no ratio).
    Every term is `sum_of_sample_mean(·) / batch_size`; pass the *global* batch size when accumulating
    gradients over micro-batches so the sum of the micro-batch losses equals the full-batch loss (as slime).
    `entropy` [B, T] is required only when entropy_coef != 0 (otherwise it is just logged when given);
    `ref_log_probs` only when kl_coef != 0. For topk_distill the entropy term is `topk_entropy` of the
    student's top-K log-probs (spec 6.6), and `entropy` is not used.
    Metrics (all divided by batch_size, so they add up over micro-batches): loss, pg_loss, pg_clipfrac,
    ppo_kl, kl_loss, entropy.
    `weights` [B] (optional): each sample's loss weight; every per-token term of sample i is multiplied by
    w_i before the reduction, and the caller passes batch_size = Σ w over the whole batch, so that
    L = Σ_i w_i·mean_t(ℓ_it) / Σ_i w_i (weight 2 = the sample twice, weight 0 = the sample absent).
    None is weight 1 everywhere and leaves the arithmetic exactly as without it.
    """
    config = config if config is not None else LossHyperParams()
    denom = float(batch_size if batch_size is not None else log_probs.shape[0])
    mask = mask.to(log_probs.dtype)
    zero = log_probs.new_zeros(())

    def reduce(x: Tensor) -> Tensor:
        if weights is not None:
            x = x * weights.to(x.dtype)[:, None]
        return sum_of_sample_mean(x, mask) / denom

    ppo_kl_tok = old_log_probs - log_probs
    if method == "topk_distill":
        if student_topk_log_probs is None or teacher_topk_log_probs is None:
            raise ValueError("topk_distill needs student_topk_log_probs and teacher_topk_log_probs")
        kl_tok, entropy_tok = topk_distillation_terms(student_topk_log_probs, teacher_topk_log_probs)
        pg_loss = reduce(kl_tok)
        entropy = entropy_tok
        clipfrac = zero
    else:
        if method == "grpo":
            if rewards is None:
                raise ValueError("grpo needs rewards")
            advantages = grpo_advantages(rewards, mask)
        elif method == "opd":
            if teacher_log_probs is None:
                raise ValueError("opd needs teacher_log_probs")
            advantages = opd_advantages(teacher_log_probs, old_log_probs)
        elif method == "combine":
            if teacher_log_probs is None or rewards is None:
                raise ValueError("combine needs teacher_log_probs and rewards")
            advantages = combine_advantages(
                teacher_log_probs, old_log_probs, rewards, w_opd=config.w_opd, w_rl=config.w_rl
            )
        else:
            raise ValueError(f"unknown loss method {method!r}; expected one of {LOSS_METHODS}")
        # Advantages are constants of the step: no gradient may flow through old or teacher log-probs.
        pg_tok, clip_tok, _ = ppo_clipped_loss(
            log_probs,
            old_log_probs.detach(),
            advantages.detach(),
            mask,
            config.eps_clip,
            config.eps_clip_high,
        )
        pg_loss = reduce(pg_tok)
        clipfrac = reduce(clip_tok)

    loss = pg_loss
    if entropy is not None:
        entropy_term = reduce(entropy)
    elif config.entropy_coef != 0.0:
        raise ValueError("entropy_coef != 0 needs the per-token entropy")
    else:
        entropy_term = zero
    if config.entropy_coef != 0.0:
        loss = loss - config.entropy_coef * entropy_term
    if config.kl_coef != 0.0:
        if ref_log_probs is None:
            raise ValueError("kl_coef != 0 needs ref_log_probs")
        kl_term = reduce(kl_penalty(log_probs, ref_log_probs.detach(), config.kl_type))
        loss = loss + config.kl_coef * kl_term
    elif ref_log_probs is not None:
        kl_term = reduce(kl_penalty(log_probs, ref_log_probs, config.kl_type)).detach()
    else:
        kl_term = zero

    metrics = {
        "loss": loss.detach(),
        "pg_loss": pg_loss.detach(),
        "pg_clipfrac": clipfrac.detach(),
        "ppo_kl": reduce(ppo_kl_tok).detach(),
        "kl_loss": kl_term.detach(),
        "entropy": entropy_term.detach(),
    }
    return loss, metrics
