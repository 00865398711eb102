"""Continuous batching and prefix caching in-process: requests share forward passes, numbers do not move.

The contract (engine/README.md): batching and cached prefixes change a request's numbers by float rounding
only. Each request's sampled log-probs equal a prefill of its own sequence at its temperature, and the same
seed gives the same tokens alone or in a crowd; the tolerance checked here is 1e-4 (float32; observed ~1e-6).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from openclaw_engine.generation_events import GenerationRequest, TokenStep
from openclaw_engine.generation_result import GenerationResult, collect
from openclaw_engine.model_runner import ModelRunner
from openclaw_engine.sampling import SamplingParams

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def runner(tiny_model_dir: Path) -> ModelRunner:
    return ModelRunner(str(tiny_model_dir))


@pytest.fixture(scope="module")
def chunking_runner(tiny_model_dir: Path) -> ModelRunner:
    """Tiny token budget: every prompt is prefilled in many chunks, interleaved with decodes."""
    return ModelRunner(str(tiny_model_dir), max_batch_tokens=48, max_running=16)


@pytest.fixture(scope="module")
def uncached_runner(tiny_model_dir: Path) -> ModelRunner:
    return ModelRunner(str(tiny_model_dir), prefix_cache_mb=0)


def prompt(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(10, 16000) for _ in range(n)]


def request(ids: list[int], n: int, seed: int, temperature: float = 1.0, **kw: Any) -> GenerationRequest:
    sampling = SamplingParams(max_new_tokens=n, seed=seed, temperature=temperature, ignore_eos=True)
    return GenerationRequest(list(ids), sampling, return_logprob=True, **kw)


def run(runner: ModelRunner, *requests: GenerationRequest) -> list[GenerationResult]:
    async def all_at_once() -> list[GenerationResult]:
        return list(await asyncio.gather(*(collect(runner.generate(r), r.input_ids) for r in requests)))

    return asyncio.run(all_at_once())


def prefill(runner: ModelRunner, ids: list[int], start: int, temperature: float) -> list[float]:
    (result,) = run(runner, request(ids, 0, 0, temperature, logprob_start_len=start))
    return [lp for lp, _ in result.input_token_logprobs]


def close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0) < TOLERANCE


def record_steps(runner: ModelRunner, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Each forward pass's segment sizes (tokens per request), in order."""
    steps: list[list[int]] = []
    original = runner.forward_step

    def recording(input_ids: list[int], positions: list[int], batch: Any, keep: list[int]) -> Any:
        steps.append([seg.count for seg in batch.segments])
        return original(input_ids, positions, batch, keep)

    monkeypatch.setattr(runner, "forward_step", recording)
    return steps


def test_concurrent_requests_share_steps_and_keep_their_own_numbers(
    runner: ModelRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = record_steps(runner, monkeypatch)
    crowd = [request(prompt(i, 20 + 7 * i), 24, seed=i, temperature=(1.0, 0.7)[i % 2]) for i in range(6)]
    results = run(runner, *crowd)
    assert max(len(s) for s in steps) >= 3, "concurrent requests should decode in the same forward pass"
    assert len(steps) < sum(r.sampling.max_new_tokens for r in crowd), "fewer passes than tokens"
    monkeypatch.undo()
    for req, result in zip(crowd, results, strict=True):
        assert len(result.output_ids) == 24
        sequence = req.input_ids + result.output_ids
        again = prefill(runner, sequence, len(req.input_ids), req.sampling.temperature)
        assert close(result.output_logprobs, again), "sampled log-probs must equal a prefill of the sequence"
        (alone,) = run(runner, req)
        assert alone.output_ids == result.output_ids, "a seed gives the same tokens with or without company"
        assert close(alone.output_logprobs, result.output_logprobs)


def test_chunked_prefill_gives_the_same_prompt_logprobs_and_interleaves_decodes(
    runner: ModelRunner, chunking_runner: ModelRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = prompt(99, 300)
    whole = prefill(runner, ids, 0, 1.0)
    steps = record_steps(chunking_runner, monkeypatch)
    chunked = prefill(chunking_runner, ids, 0, 1.0)
    assert whole[0] is None and chunked[0] is None
    assert close(whole[1:], chunked[1:])
    assert len(steps) >= 300 // 48 and max(max(s) for s in steps) <= 48

    async def decode_during_a_long_prefill() -> GenerationResult:
        short = request(prompt(1, 8), 60, seed=1)
        long = request(prompt(2, 600), 2, seed=2)
        events = chunking_runner.generate(short)
        result = GenerationResult(prompt_ids=short.input_ids)
        other: asyncio.Task[GenerationResult] | None = None
        async for event in events:
            result.add(event)
            if isinstance(event, TokenStep) and len(result.output_ids) == 3:
                other = asyncio.ensure_future(collect(chunking_runner.generate(long), long.input_ids))
        assert other is not None
        await other
        return result

    steps.clear()
    result = asyncio.run(decode_during_a_long_prefill())
    assert len(result.output_ids) == 60
    mixed = [s for s in steps if 1 in s and any(n > 1 for n in s)]
    assert mixed, f"the decoding request should keep stepping while the prompt is prefilled: {steps}"


def test_a_shared_prefix_is_computed_once(
    runner: ModelRunner, uncached_runner: ModelRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = prompt(7, 500)  # what every turn of an agent starts with
    first_turn = system + prompt(8, 30)
    (first,) = run(runner, request(first_turn, 16, seed=3))
    assert first.cached_tokens == 0

    second_turn = first_turn + first.output_ids + prompt(9, 40)  # the conversation goes on
    steps = record_steps(runner, monkeypatch)
    (second,) = run(runner, request(second_turn, 16, seed=4))
    monkeypatch.undo()
    assert second.cached_tokens >= len(first_turn) + 15  # the prompt and the tokens sampled after it
    assert sum(steps[0]) == len(second_turn) - second.cached_tokens, "only the new part is prefilled"
    (fresh,) = run(uncached_runner, request(second_turn, 16, seed=4))
    assert fresh.cached_tokens == 0 and fresh.output_ids == second.output_ids
    assert close(fresh.output_logprobs, second.output_logprobs)

    other_user = system + prompt(10, 25)  # another conversation with the same system prompt
    (third,) = run(runner, request(other_user, 4, seed=5))
    assert third.cached_tokens == len(system)

    # Prompt log-probs need the logits of the positions asked for: those are never taken from the cache.
    start = 300
    (scored,) = run(runner, request(second_turn, 0, seed=0, logprob_start_len=start))
    assert scored.cached_tokens == start - 1
    (unscored,) = run(uncached_runner, request(second_turn, 0, seed=0, logprob_start_len=start))
    assert close(
        [lp for lp, _ in scored.input_token_logprobs], [lp for lp, _ in unscored.input_token_logprobs]
    )


def test_new_weights_empty_the_prefix_cache(tiny_model_dir: Path, other_model_dir: Path) -> None:
    local = ModelRunner(str(tiny_model_dir))
    ids = prompt(11, 200)
    run(local, request(ids, 2, seed=0))
    (cached,) = run(local, request(ids, 2, seed=0))
    assert cached.cached_tokens == len(ids) - 1 and local.prefix_cache.tokens > 0
    ok, _, _ = local.update_weights_from_disk(str(other_model_dir), "new")
    assert ok
    (after,) = run(local, request(ids, 2, seed=0))
    assert after.cached_tokens == 0 and after.weight_version == "new"
    fresh = ModelRunner(str(other_model_dir), prefix_cache_mb=0)
    (expected,) = run(fresh, request(ids, 2, seed=0))
    assert after.output_ids == expected.output_ids and close(after.output_logprobs, expected.output_logprobs)
