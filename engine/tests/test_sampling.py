"""The batched draw: a seeded request gets exactly the tokens `torch.multinomial` drew for it, whatever rows
it shares a step with, and a decode step's sampling reuses its memory instead of faulting pages in every step.

Scenario: a person serves 32 conversations at once on CPU and replays one with its seed. Every step samples
32 rows of the vocabulary at once; drawn one row at a time that was a third of a decode step, and with a new
tensor for each stage of the arithmetic glibc returned their pages to the kernel at each step and took them
back at the next. The replay must still give the same reply as before the draw was batched (the same tokens,
the generator advanced alike), alone or among others, and a token with no weight must never be drawn.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
import torch

from openclaw_engine import sampling
from openclaw_engine.sampling import SamplingParams, _filter, sample_tokens

_STEPS = """
import resource, torch
from openclaw_engine.sampling import SamplingParams, sample_tokens

logits = torch.randn(32, 16393)
params = [SamplingParams(temperature=0.7, seed=i if i % 2 else None) for i in range(32)]
generators = [torch.Generator().manual_seed(i) for i in range(32)]
for _ in range(5):
    sample_tokens(logits, params, generators, original_logprobs=False)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    sample_tokens(logits, params, generators, original_logprobs=False)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_fifty_c32_steps_fault_in_less_than_one_tensor() -> None:
    out = subprocess.run([sys.executable, "-c", _STEPS], capture_output=True, text=True, check=True)
    faults = int(out.stdout.strip().splitlines()[-1])
    pages_per_tensor = 32 * 16393 * 4 // 4096
    # With fresh tensors at every stage: several tensors' pages per step, about 100,000 faults over 50 steps.
    assert faults < pages_per_tensor, faults


def _one_row_at_a_time(
    logits: torch.Tensor, params: list[SamplingParams], generators: list[torch.Generator], original: bool
) -> list[int]:
    """What the engine drew before the draw was batched: one `torch.multinomial` per row."""
    temperatures = torch.tensor([p.logprob_temperature(original) for p in params])
    logprobs = torch.log_softmax(logits / temperatures[:, None], dim=-1)
    probs = logprobs.clamp(min=torch.finfo(logprobs.dtype).min).exp()
    tokens = []
    for row, (p, generator) in enumerate(zip(params, generators, strict=True)):
        if p.greedy:
            tokens.append(int(torch.argmax(logits[row]).item()))
            continue
        row_probs = probs[row]
        if original and p.temperature != 1.0:
            row_probs = torch.softmax(logits[row] / p.temperature, dim=-1)
        tokens.append(int(torch.multinomial(_filter(row_probs, p), 1, generator=generator).item()))
    return tokens


def _mixed_params(rows: int) -> list[SamplingParams]:
    return [
        SamplingParams(
            temperature=(1.0, 0.7, 1.3, 0.0)[i % 4],
            top_k=40 if i % 5 == 1 else -1,
            top_p=0.9 if i % 6 == 2 else 1.0,
            min_p=0.05 if i % 7 == 3 else 0.0,
            seed=100 + i,
        )
        for i in range(rows)
    ]


def test_a_seed_draws_the_tokens_torch_multinomial_drew_and_advances_its_generator_alike() -> None:
    torch.manual_seed(0)
    for rows, vocab, original in ((1, 16393, False), (8, 16393, False), (32, 16393, True), (13, 700, False)):
        params = _mixed_params(rows)
        batched = [torch.Generator().manual_seed(100 + i) for i in range(rows)]
        alone = [torch.Generator().manual_seed(100 + i) for i in range(rows)]
        for _ in range(25):
            logits = torch.randn(rows, vocab) * 4
            drawn = [t for t, _ in sample_tokens(logits, params, batched, original_logprobs=original)]
            assert drawn == _one_row_at_a_time(logits, params, alone, original), (rows, vocab)
        # The generators stand where per-row draws left them: the next reply continues alike.
        assert [g.initial_seed() for g in batched] == [g.initial_seed() for g in alone]
        for mine, theirs in zip(batched, alone, strict=True):
            assert torch.equal(torch.rand(4, generator=mine), torch.rand(4, generator=theirs))


def _draw(logits: torch.Tensor, params: list[SamplingParams], seeds: list[int]) -> list[int]:
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    return [token for token, _ in sample_tokens(logits, params, generators, original_logprobs=False)]


@pytest.mark.parametrize("seeded", [True, False], ids=["seeded", "unseeded"])
def test_a_row_draws_the_same_tokens_alone_or_among_others(seeded: bool) -> None:
    torch.manual_seed(0)
    logits = torch.randn(32, 500)
    params = [
        SamplingParams(temperature=0.8, top_k=50 if i % 3 == 0 else -1, seed=i if seeded else None)
        for i in range(32)
    ]
    together = _draw(logits, params, list(range(32)))
    alone = [_draw(logits[i : i + 1], [params[i]], [i])[0] for i in range(32)]
    assert together == alone
    # A smaller batch between two larger ones (the scratch memory is reused, not resized) changes nothing.
    _draw(logits[:8], params[:8], list(range(8)))
    assert _draw(logits, params, list(range(32))) == together


@pytest.mark.parametrize("seeded", [True, False], ids=["seeded", "unseeded"])
def test_rows_draw_in_proportion_to_their_weights_and_never_a_zero_weight_token(seeded: bool) -> None:
    rows = 4000
    weights = torch.tensor([0.5, 0.3, 0.2, 0.0])
    logits = weights.log().expand(rows, -1).contiguous()  # log 0 = -inf: a token that cannot be drawn
    params = [SamplingParams(seed=i if seeded else None) for i in range(rows)]
    counts = Counter(_draw(logits, params, list(range(rows))))
    assert counts[3] == 0
    for token, expected in enumerate(weights.tolist()[:3]):
        assert abs(counts[token] / rows - expected) < 0.03, counts


def test_an_unseeded_uniform_at_the_very_top_takes_the_last_token_with_weight(monkeypatch) -> None:
    # u * total may round up to the total itself; the draw must not run past the last token that has weight.
    monkeypatch.setattr(sampling.torch, "rand", lambda *a, **k: torch.ones(1, dtype=k.get("dtype")))
    logits = torch.tensor([[0.0, 0.0, 0.0, float("-inf"), float("-inf")]])
    assert _draw(logits, [SamplingParams()], [0]) == [2]
