"""Golden-vector tests for openclaw_engine.losses.

Every expected value is recomputed here with plain Python `math` loops over lists, never with the torch
code under test, so a wrong formula cannot agree with itself.
"""

from __future__ import annotations

import math

import pytest
import torch

from openclaw_engine.losses import (
    LossHyperParams,
    combine_advantages,
    compute_loss,
    entropy_from_logits,
    grpo_advantages,
    kl_penalty,
    low_var_kl,
    opd_advantages,
    ppo_clipped_loss,
    sum_of_sample_mean,
    topk_reverse_kl,
    topk_tail,
)

TOL = 1e-9


def t(x: list) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64)


def flat(x: float | list) -> float | list[float]:
    if not isinstance(x, list):
        return x
    return [v for item in x for v in (flat(item) if isinstance(item, list) else [item])]


def close(actual: torch.Tensor | float, expected: float | list, tol: float = TOL) -> None:
    a = actual.tolist() if isinstance(actual, torch.Tensor) else actual
    if isinstance(a, list):
        assert len(a) == len(expected), (a, expected)
    assert flat(a) == pytest.approx(flat(expected), abs=tol, rel=tol), (a, expected)


# ---- plain-Python references -------------------------------------------------------------------------


def ref_sum_of_sample_mean(x: list[list[float]], m: list[list[float]]) -> float:
    total = 0.0
    for row, mrow in zip(x, m, strict=True):
        num = sum(v * w for v, w in zip(row, mrow, strict=True))
        total += num / max(1.0, sum(mrow))
    return total


def ref_ppo(lp: float, old: float, adv: float, lo: float, hi: float) -> tuple[float, float, float]:
    ratio = math.exp(lp - old)
    unclipped = -ratio * adv
    clipped = -min(max(ratio, 1.0 - lo), 1.0 + hi) * adv
    return max(unclipped, clipped), 1.0 if clipped > unclipped else 0.0, old - lp


def ref_k3(lp: float, ref: float) -> float:
    d = ref - lp
    return math.exp(d) - d - 1.0


def ref_entropy(logits: list[float]) -> float:
    mx = max(logits)
    z = sum(math.exp(v - mx) for v in logits)
    probs = [math.exp(v - mx) / z for v in logits]
    return -sum(p * math.log(p) for p in probs)


def ref_tail(xs: list[float]) -> float:
    mx = max(xs)
    lse = mx + math.log(sum(math.exp(v - mx) for v in xs))
    return math.log(1.0 - math.exp(min(lse, -1e-7)))


def ref_topk_rkl(student: list[float], teacher: list[float]) -> float:
    p = student + [ref_tail(student)]
    q = teacher + [ref_tail(teacher)]
    return sum(math.exp(pk) * (pk - qk) for pk, qk in zip(p, q, strict=True))


# ---- reductions and advantages ------------------------------------------------------------------------


def test_sum_of_sample_mean_is_per_sample_token_mean_summed() -> None:
    x = [[1.0, 2.0, 3.0, 4.0], [10.0, -2.0, 7.0, 0.5], [5.0, 5.0, 5.0, 5.0]]
    m = [
        [1, 1, 0, 0],
        [1, 1, 1, 1],
        [0, 0, 0, 0],
    ]  # the all-masked sample contributes 0 (divided by max(1, 0))
    expected = ref_sum_of_sample_mean(x, m)
    assert expected == pytest.approx(1.5 + 15.5 / 4)
    close(sum_of_sample_mean(t(x), t(m)), expected)


def test_grpo_advantage_broadcasts_reward_to_every_response_token() -> None:
    rewards = [1.0, -1.0, 0.0]
    m = [[1, 1, 1], [1, 1, 0], [1, 0, 0]]
    expected = [[r * w for w in row] for r, row in zip(rewards, m, strict=True)]
    close(grpo_advantages(t(rewards), t(m)), expected)


def test_opd_advantage_is_teacher_minus_old() -> None:
    teacher = [[-0.1, -2.0, -5.5], [-1.0, -0.2, -3.0]]
    old = [[-0.5, -1.0, -5.5], [-4.0, -0.1, -0.3]]
    expected = [[a - b for a, b in zip(tr, orow, strict=True)] for tr, orow in zip(teacher, old, strict=True)]
    close(opd_advantages(t(teacher), t(old)), expected)


def test_combine_advantage_weights_both_terms() -> None:
    teacher = [[-0.1, -2.0], [-1.0, -0.2]]
    old = [[-0.5, -1.0], [-4.0, -0.1]]
    rewards = [1.0, -1.0]
    w_opd, w_rl = 0.5, 2.0
    expected = [
        [w_opd * (a - b) + w_rl * r for a, b in zip(tr, orow, strict=True)]
        for tr, orow, r in zip(teacher, old, rewards, strict=True)
    ]
    close(combine_advantages(t(teacher), t(old), t(rewards), w_opd=w_opd, w_rl=w_rl), expected)
    # Defaults are w_opd = w_rl = 1.0 (spec 7).
    default = [
        [(a - b) + r for a, b in zip(tr, orow, strict=True)]
        for tr, orow, r in zip(teacher, old, rewards, strict=True)
    ]
    close(combine_advantages(t(teacher), t(old), t(rewards)), default)


# ---- PPO surrogate ------------------------------------------------------------------------------------

# (log-ratio, advantage) pairs that hit every branch of the asymmetric clip with eps 0.2 / eps_high 0.28.
PPO_CASES = [
    (math.log(1.0), 1.0),  # ratio 1: nothing clipped
    (math.log(1.25), 1.0),  # inside 1 + 0.28: NOT clipped (it would be with a symmetric 0.2)
    (math.log(1.5), 1.0),  # above 1.28 with A > 0: clipped
    (math.log(1.5), -1.0),  # above with A < 0: the unclipped term is the larger, not clipped
    (math.log(0.5), -2.0),  # below 0.8 with A < 0: clipped
    (math.log(0.5), 2.0),  # below with A > 0: not clipped
    (math.log(0.9), -0.5),  # inside
    (math.log(1.1), 0.0),  # zero advantage
]


def test_ppo_clipped_loss_asymmetric_clip_and_clipfrac() -> None:
    old = [-1.0 - 0.1 * i for i in range(len(PPO_CASES))]
    lp = [o + lr for o, (lr, _) in zip(old, PPO_CASES, strict=True)]
    adv = [a for _, a in PPO_CASES]
    mask = [1.0] * len(PPO_CASES)
    loss, clipfrac, ppo_kl = ppo_clipped_loss(t([lp]), t([old]), t([adv]), t([mask]), 0.2, 0.28)
    ref = [ref_ppo(a, b, c, 0.2, 0.28) for a, b, c in zip(lp, old, adv, strict=True)]
    close(loss[0], [r[0] for r in ref])
    close(clipfrac[0], [r[1] for r in ref])
    close(ppo_kl[0], [r[2] for r in ref])
    assert [r[1] for r in ref] == [0, 0, 1, 0, 1, 0, 0, 0]
    # The high side really is asymmetric: with eps_clip_high = eps_clip = 0.2 the 1.25 ratio is clipped.
    _, symmetric, _ = ppo_clipped_loss(t([lp]), t([old]), t([adv]), t([mask]), 0.2, 0.2)
    assert symmetric[0].tolist()[1] == 1.0
    close(loss[0][2], -1.28)
    close(loss[0][4], 2.0 * 0.8)


def test_ppo_clipped_loss_zeroes_masked_tokens() -> None:
    loss, clipfrac, ppo_kl = ppo_clipped_loss(
        t([[-1.0, -0.5]]), t([[-2.0, -1.0]]), t([[1.0, 1.0]]), t([[1, 0]])
    )
    assert loss[0][1].item() == 0.0 and clipfrac[0][1].item() == 0.0 and ppo_kl[0][1].item() == 0.0
    close(loss[0][0], -1.28)  # ratio e ≈ 2.72 clipped to 1.28 with the default eps_clip_high


# ---- KL and entropy -----------------------------------------------------------------------------------


def test_low_var_kl_is_k3_clamped_to_ten() -> None:
    lp = [-1.0, -2.0, -0.5, -20.0, -3.0]
    ref = [-1.0, -1.5, -2.5, -1.0, -3.5]  # the 4th pair has ref − lp = 19: k3 ≈ e^19, clamped to 10
    expected = [min(max(ref_k3(a, b), -10.0), 10.0) for a, b in zip(lp, ref, strict=True)]
    assert expected[3] == 10.0 and expected[0] == 0.0
    close(low_var_kl(t([lp]), t([ref]))[0], expected)
    close(kl_penalty(t([lp]), t([ref]), "low_var_kl")[0], expected)
    close(
        kl_penalty(t([lp]), t([ref]), "k3")[0], [ref_k3(a, b) for a, b in zip(lp, ref, strict=True)], tol=1e-6
    )
    close(kl_penalty(t([lp]), t([ref]), "k1")[0], [a - b for a, b in zip(lp, ref, strict=True)])
    close(kl_penalty(t([lp]), t([ref]), "k2")[0], [(a - b) ** 2 / 2 for a, b in zip(lp, ref, strict=True)])
    with pytest.raises(ValueError):
        kl_penalty(t([lp]), t([ref]), "k9")


def test_entropy_from_logits_matches_shannon_entropy() -> None:
    rows = [[0.0, 0.0, 0.0, 0.0], [3.0, -1.0, 0.5, 2.0], [100.0, 0.0, -100.0, 1.0]]
    expected = [ref_entropy(r) for r in rows]
    assert expected[0] == pytest.approx(math.log(4))
    close(entropy_from_logits(t(rows)), expected)


# ---- top-K distillation -------------------------------------------------------------------------------


def test_topk_tail_bin_and_clamp() -> None:
    partial = [math.log(0.5), math.log(0.2)]  # 0.3 of the mass is outside the top-K
    complete = [math.log(0.5), math.log(0.5)]  # all the mass inside: logsumexp = 0 is clamped to -1e-7
    close(topk_tail(t([partial, complete])), [ref_tail(partial), ref_tail(complete)], tol=1e-7)
    assert ref_tail(partial) == pytest.approx(math.log(0.3))
    assert math.isfinite(topk_tail(t([complete])).item())


def test_topk_reverse_kl_over_k_plus_one_bins() -> None:
    student = [[math.log(0.4), math.log(0.3), math.log(0.1)], [math.log(0.5), math.log(0.5), math.log(1e-9)]]
    teacher = [[math.log(0.6), math.log(0.1), math.log(0.2)], [math.log(0.7), math.log(0.2), math.log(0.05)]]
    expected = [ref_topk_rkl(s, q) for s, q in zip(student, teacher, strict=True)]
    close(topk_reverse_kl(t(student), t(teacher)), expected, tol=1e-7)
    # Identical distributions: zero divergence; it is a KL so it is never negative.
    close(topk_reverse_kl(t(teacher), t(teacher)), [0.0, 0.0])
    assert all(v > 0 for v in expected)


# ---- the assembled loss -------------------------------------------------------------------------------

# Two samples, padded to T = 3; the second has one real token masked out and one padding position.
LP = [[-1.0, -0.7, -2.0], [-0.3, -1.2, 0.0]]
OLD = [[-1.1, -0.5, -2.0], [-0.2, -1.0, 0.0]]
MASK = [[1, 1, 1], [1, 0, 0]]
REWARDS = [1.0, -1.0]
TEACHER = [[-0.4, -0.9, -1.0], [-2.0, -0.5, 0.0]]
REF = [[-1.0, -0.4, -2.5], [-0.6, -1.0, 0.0]]
ENTROPY = [[2.0, 1.5, 1.0], [0.5, 3.0, 9.0]]


def ref_total(method: str, hp: LossHyperParams, batch: float) -> dict[str, float]:
    """The whole loss of spec 5/6.5/7 for the constants above, in plain Python."""
    adv = []
    for i in range(2):
        row = []
        for j in range(3):
            teach = TEACHER[i][j] - OLD[i][j]
            row.append(
                {"grpo": REWARDS[i], "opd": teach, "combine": hp.w_opd * teach + hp.w_rl * REWARDS[i]}[method]
            )
        adv.append(row)
    ppo = [
        [ref_ppo(LP[i][j], OLD[i][j], adv[i][j], hp.eps_clip, hp.eps_clip_high) for j in range(3)]
        for i in range(2)
    ]
    pg = ref_sum_of_sample_mean([[c[0] for c in r] for r in ppo], MASK) / batch
    clip = ref_sum_of_sample_mean([[c[1] for c in r] for r in ppo], MASK) / batch
    kl_tok = [[min(max(ref_k3(LP[i][j], REF[i][j]), -10), 10) for j in range(3)] for i in range(2)]
    kl = ref_sum_of_sample_mean(kl_tok, MASK) / batch
    ent = ref_sum_of_sample_mean(ENTROPY, MASK) / batch
    ppo_kl = ref_sum_of_sample_mean([[c[2] for c in r] for r in ppo], MASK) / batch
    return {
        "loss": pg - hp.entropy_coef * ent + hp.kl_coef * kl,
        "pg_loss": pg,
        "pg_clipfrac": clip,
        "kl_loss": kl,
        "entropy": ent,
        "ppo_kl": ppo_kl,
    }


@pytest.mark.parametrize("method", ["grpo", "opd", "combine"])
@pytest.mark.parametrize("batch_size", [None, 8])
def test_compute_loss_matches_reference(method: str, batch_size: int | None) -> None:
    hp = LossHyperParams(kl_coef=0.05, entropy_coef=0.01, w_opd=0.7, w_rl=1.3)
    loss, metrics = compute_loss(
        method,
        log_probs=t(LP),
        old_log_probs=t(OLD),
        mask=t(MASK),
        rewards=t(REWARDS),
        teacher_log_probs=t(TEACHER),
        ref_log_probs=t(REF),
        entropy=t(ENTROPY),
        config=hp,
        batch_size=batch_size,
    )
    expected = ref_total(method, hp, float(batch_size or 2))
    close(loss, expected["loss"])
    for key, value in expected.items():
        close(metrics[key], value)


def test_compute_loss_defaults_are_the_spec_defaults() -> None:
    hp = LossHyperParams()
    assert (hp.eps_clip, hp.eps_clip_high, hp.kl_coef, hp.kl_type, hp.entropy_coef, hp.w_rl, hp.w_opd) == (
        0.2,
        0.28,
        0.0,
        "low_var_kl",
        0.0,
        1.0,
        1.0,
    )
    # With kl_coef = entropy_coef = 0 the total is the policy-gradient term alone (KL/entropy only logged).
    loss, metrics = compute_loss(
        "grpo", log_probs=t(LP), old_log_probs=t(OLD), mask=t(MASK), rewards=t(REWARDS), entropy=t(ENTROPY)
    )
    close(loss, ref_total("grpo", hp, 2.0)["pg_loss"])
    assert metrics["entropy"].item() > 0


def ref_topk_entropy(student: list[float]) -> float:
    p = student + [ref_tail(student)]
    return -sum(math.exp(pk) * pk for pk in p)


def test_compute_loss_topk_distill_is_reverse_kl_without_ratio() -> None:
    student = [
        [[math.log(0.4), math.log(0.3)], [math.log(0.2), math.log(0.1)], [math.log(0.9), math.log(0.05)]],
        [[math.log(0.6), math.log(0.3)], [math.log(0.5), math.log(0.1)], [math.log(0.5), math.log(0.5)]],
    ]
    teacher = [
        [[math.log(0.5), math.log(0.1)], [math.log(0.6), math.log(0.3)], [math.log(0.2), math.log(0.2)]],
        [[math.log(0.3), math.log(0.3)], [math.log(0.1), math.log(0.8)], [math.log(0.4), math.log(0.4)]],
    ]
    hp = LossHyperParams(entropy_coef=0.02)
    loss, metrics = compute_loss(
        "topk_distill",
        log_probs=t(LP),
        old_log_probs=t(OLD),
        mask=t(MASK),
        entropy=t(ENTROPY),
        student_topk_log_probs=t(student),
        teacher_topk_log_probs=t(teacher),
        config=hp,
    )
    kl_tok = [[ref_topk_rkl(student[i][j], teacher[i][j]) for j in range(3)] for i in range(2)]
    distill = ref_sum_of_sample_mean(kl_tok, MASK) / 2
    # H(p) over the K+1 bins (spec 6.6), not the full-vocabulary entropy passed in.
    ent_tok = [[ref_topk_entropy(student[i][j]) for j in range(3)] for i in range(2)]
    ent = ref_sum_of_sample_mean(ent_tok, MASK) / 2
    close(metrics["entropy"], ent, tol=1e-7)
    close(metrics["pg_loss"], distill, tol=1e-7)
    close(loss, distill - 0.02 * ent, tol=1e-7)
    assert metrics["pg_clipfrac"].item() == 0.0


def test_compute_loss_gradient_flows_only_through_current_log_probs() -> None:
    lp = t(LP).requires_grad_(True)
    old = t(OLD).requires_grad_(True)
    teacher = t(TEACHER).requires_grad_(True)
    loss, _ = compute_loss(
        "combine",
        log_probs=lp,
        old_log_probs=old,
        mask=t(MASK),
        rewards=t(REWARDS),
        teacher_log_probs=teacher,
    )
    loss.backward()
    assert lp.grad is not None and lp.grad.abs().sum() > 0
    assert old.grad is None and teacher.grad is None
    # Padding and masked tokens get no gradient.
    assert lp.grad[1, 1].item() == 0.0 and lp.grad[1, 2].item() == 0.0
    # d(-ρA)/dlp = -ρA at an unclipped token; sample 0 has 3 tokens, batch 2: scale 1/(3·2).
    rho = math.exp(LP[0][0] - OLD[0][0])
    a = (TEACHER[0][0] - OLD[0][0]) + REWARDS[0]
    close(lp.grad[0, 0], -rho * a / 6)


def test_compute_loss_rejects_missing_inputs() -> None:
    base = {"log_probs": t(LP), "old_log_probs": t(OLD), "mask": t(MASK)}
    with pytest.raises(ValueError):
        compute_loss("grpo", **base)
    with pytest.raises(ValueError):
        compute_loss("opd", **base)
    with pytest.raises(ValueError):
        compute_loss("topk_distill", **base)
    with pytest.raises(ValueError):
        compute_loss("bogus", **base, rewards=t(REWARDS))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        compute_loss("grpo", **base, rewards=t(REWARDS), config=LossHyperParams(kl_coef=0.1))


# ---- per-sample weights -------------------------------------------------------------------------------


def _loss_of(rows: list[int], weights: list[float] | None = None) -> tuple[torch.Tensor, dict]:
    pick = lambda x: t([x[i] for i in rows])  # noqa: E731
    hp = LossHyperParams(kl_coef=0.05, entropy_coef=0.01)
    return compute_loss(
        "combine",
        log_probs=pick(LP),
        old_log_probs=pick(OLD),
        mask=pick(MASK),
        rewards=pick(REWARDS),
        teacher_log_probs=pick(TEACHER),
        ref_log_probs=pick(REF),
        entropy=pick(ENTROPY),
        config=hp,
        batch_size=sum(weights) if weights is not None else None,
        weights=t(weights) if weights is not None else None,
    )


def test_weight_two_is_the_sample_twice_and_weight_zero_is_the_sample_absent() -> None:
    loss, metrics = _loss_of([0, 1], [2.0, 1.0])
    twice, twice_metrics = _loss_of([0, 0, 1])
    close(loss, float(twice))
    for key, value in twice_metrics.items():
        close(metrics[key], float(value))
    loss, metrics = _loss_of([0, 1], [0.0, 1.0])
    alone, alone_metrics = _loss_of([1])
    close(loss, float(alone))
    for key, value in alone_metrics.items():
        close(metrics[key], float(value))
    # Fractional weights: Σ_i w_i·mean_t ℓ_it / Σ_i w_i, against the per-sample losses.
    (l0, _), (l1, _) = _loss_of([0]), _loss_of([1])
    close(_loss_of([0, 1], [0.25, 1.5])[0], (0.25 * float(l0) + 1.5 * float(l1)) / 1.75)


def test_unit_weights_are_bit_identical_to_no_weights() -> None:
    loss, metrics = _loss_of([0, 1], [1.0, 1.0])
    plain, plain_metrics = _loss_of([0, 1])
    assert torch.equal(loss, plain)
    for key, value in plain_metrics.items():
        assert torch.equal(metrics[key], value), key
