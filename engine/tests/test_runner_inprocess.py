"""The runner and app in-process: failures become 500s and release the lock; retract/cancel are safe."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from openclaw_engine.generation_result import GenerationResult, collect
from openclaw_engine.model_runner import GenerationRequest, ModelRunner, TokenStep
from openclaw_engine.sampling import SamplingParams
from openclaw_engine.server import create_app

PROMPT = [72, 101, 108, 108, 111]


@pytest.fixture(scope="module")
def runner(tiny_model_dir: Path) -> ModelRunner:
    return ModelRunner(str(tiny_model_dir))


def _request(n: int, seed: int = 0) -> GenerationRequest:
    return GenerationRequest(
        PROMPT, SamplingParams(max_new_tokens=n, seed=seed, ignore_eos=True), return_logprob=True
    )


def test_generation_failure_is_a_500_and_releases_the_lock(runner: ModelRunner, monkeypatch: Any) -> None:
    client = TestClient(create_app(runner, max_body_bytes=1 << 20), raise_server_exceptions=False)
    original = runner.forward_step
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:  # fail on the first decode step, after the prefill succeeded
            raise RuntimeError("simulated device failure")
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "forward_step", flaky)
    body = {"input_ids": PROMPT, "sampling_params": {"max_new_tokens": 4}}
    failed = client.post("/generate", json=body)
    assert failed.status_code == 500
    assert "simulated device failure" in failed.json()["error"]["message"]
    assert failed.json()["error"]["type"] == "server_error"

    calls["n"] = 1  # fail again once the SSE stream has started: the error is reported in-band
    chat = client.post(
        "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 4, "stream": True},
    )
    assert chat.status_code == 200
    assert '"type": "server_error"' in chat.text and chat.text.rstrip().endswith("data: [DONE]")

    monkeypatch.setattr(runner, "forward_step", original)
    ok = client.post("/generate", json=body)
    assert ok.status_code == 200 and len(ok.json()["output_ids"]) == 4
    assert runner.gate.active_requests == 0


def test_retract_recomputes_kv_without_changing_the_result(runner: ModelRunner) -> None:
    async def run(retract_after: int | None) -> GenerationResult:
        result = GenerationResult(prompt_ids=PROMPT)
        async for event in runner.generate(_request(20, seed=3)):
            result.add(event)
            if isinstance(event, TokenStep) and len(result.output_ids) == retract_after:
                runner.pause("retract")
                await asyncio.sleep(0.2)
                runner.resume()
        return result

    plain = asyncio.run(run(None))
    retracted = asyncio.run(run(7))
    assert retracted.output_ids == plain.output_ids
    assert retracted.output_logprobs == pytest.approx(plain.output_logprobs, abs=1e-5)


def test_closing_the_stream_cancels_the_worker(runner: ModelRunner) -> None:
    async def run() -> None:
        events = runner.generate(_request(2000))
        seen = 0
        async for event in events:
            if isinstance(event, TokenStep):
                seen += 1
                if seen == 3:
                    break
        await events.aclose()
        for _ in range(100):
            if runner.gate.active_requests == 0:
                return
            await asyncio.sleep(0.02)
        raise AssertionError("worker still running after the consumer left")

    asyncio.run(run())


def test_abort_request_by_rid(runner: ModelRunner) -> None:
    async def run() -> GenerationResult:
        request = _request(2000)
        result = GenerationResult(prompt_ids=PROMPT)
        async for event in runner.generate(request):
            result.add(event)
            if len(result.output_ids) == 2:
                assert runner.abort(request.rid) == 1
        return result

    result = asyncio.run(run())
    assert result.finish_reason == {"type": "abort", "message": "request aborted"}
    assert len(result.output_ids) < 2000


def test_collect_matches_prompt(runner: ModelRunner) -> None:
    result = asyncio.run(collect(runner.generate(_request(3)), PROMPT))
    assert result.prompt_ids == PROMPT and len(result.output_ids) == 3
    assert result.finish_reason == {"type": "length", "length": 3}


def test_token_text_and_bytes_are_the_tokenizers_own_every_time(runner: ModelRunner) -> None:
    """Kept per token after the first ask: the second answer is the first, and a caller's list is its own."""
    tokenizer = runner.tokenizer
    for token in range(len(tokenizer)):
        text = tokenizer.decode([token], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        first = runner.token_bytes(token)
        assert runner.token_text(token) == text and runner.token_text(token) == text
        if token < 256:  # tiny tokenizer: ids 0..255 are the 256 single bytes
            assert len(first) == 1
        else:
            assert bytes(first).decode("utf-8", errors="replace") == text
        first.append(-1)  # the caller's own list: what is kept is not changed by it
        assert runner.token_bytes(token) == first[:-1]
