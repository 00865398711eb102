"""The batched draw: each row's token follows its own distribution and generator, whatever rows it shares a
step with, and a decode step's sampling reuses its memory instead of faulting fresh pages in every step.

Scenario: a person serves 32 conversations at once on CPU. Every step samples 32 rows of the vocabulary; with
a new tensor for each stage of the arithmetic, glibc returned their pages to the kernel at each step and took
them back at the next (sampling 6 ms instead of 1.6 at c32 on the tiny model). A seeded request must still get
the same tokens alone or among others, and a token with no weight must never be drawn.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import torch

from openclaw_engine import sampling
from openclaw_engine.sampling import SamplingParams, sample_tokens

_STEPS = """
import resource, torch
from openclaw_engine.sampling import SamplingParams, sample_tokens

logits = torch.randn(32, 16393)
params = [SamplingParams(temperature=0.7) for _ in range(32)]
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
    # Before the scratch tensor: about four tensors' pages per step, 100,000 faults over these 50 steps.
    assert faults < pages_per_tensor, faults


def _draw(logits: torch.Tensor, params: list[SamplingParams], seeds: list[int]) -> list[int]:
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    return [token for token, _ in sample_tokens(logits, params, generators, original_logprobs=False)]


def test_a_seeded_row_draws_the_same_tokens_alone_or_among_others() -> None:
    torch.manual_seed(0)
    logits = torch.randn(32, 500)
    params = [SamplingParams(temperature=0.8, top_k=50 if i % 3 == 0 else -1) for i in range(32)]
    together = _draw(logits, params, list(range(32)))
    alone = [_draw(logits[i : i + 1], [params[i]], [i])[0] for i in range(32)]
    assert together == alone
    # A smaller batch between two larger ones (the scratch tensor is reused, not resized) changes nothing.
    _draw(logits[:8], params[:8], list(range(8)))
    assert _draw(logits, params, list(range(32))) == together


def test_rows_draw_in_proportion_to_their_weights_and_never_a_zero_weight_token() -> None:
    rows = 4000
    weights = torch.tensor([0.5, 0.3, 0.2, 0.0])
    logits = weights.log().expand(rows, -1).contiguous()  # log 0 = -inf: a token that cannot be drawn
    counts = Counter(_draw(logits, [SamplingParams()] * rows, list(range(rows))))
    assert counts[3] == 0
    for token, expected in enumerate(weights.tolist()[:3]):
        assert abs(counts[token] / rows - expected) < 0.03, counts


def test_a_uniform_at_the_very_top_takes_the_last_token_with_weight(monkeypatch) -> None:
    # u * total may round up to the total itself; the draw must not run past the last token that has weight.
    monkeypatch.setattr(sampling.torch, "rand", lambda *a, **k: torch.ones(1, dtype=k.get("dtype")))
    logits = torch.tensor([[0.0, 0.0, 0.0, float("-inf"), float("-inf")]])
    assert _draw(logits, [SamplingParams()], [0]) == [2]
