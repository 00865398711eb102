"""The Fireworks runner against the real `DeploymentSampler` response parsing, the wire answer given.

Scenario: a deployment answers a chat turn; what the runner serves must be exactly its sampled ids and their
behaviour log-probs, and an answer that cannot be exact (log-probs missing for some ids, or only raw
log-probs at a temperature that changes the distribution) must fail the request rather than be recorded.
Needs .venv-fireworks (`fireworks-ai[training-sdk]`); the HTTP round trip itself is in
test/engines/fireworks-serving.test.ts.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

sdk = pytest.importorskip("fireworks.training.sdk")

from transformers import AutoTokenizer  # noqa: E402

from openclaw_engine.fireworks_runner import FireworksRunner  # noqa: E402
from openclaw_engine.generation_events import GenerationRequest  # noqa: E402
from openclaw_engine.sampling import SamplingParams  # noqa: E402

PROMPT = [5, 6, 7]


def runner_answering(tokenizer_dir: Path, choice: dict[str, Any]) -> tuple[FireworksRunner, list[dict]]:
    """A runner whose deployment's (already assembled) stream answer is `choice`; the SDK parses it."""
    sent: list[dict] = []

    class Sampler(sdk.DeploymentSampler):
        async def async_completions_stream(self, prompt: list[int], **kwargs: Any) -> Any:
            sent.append({"prompt": prompt, **kwargs})
            return {"choices": [choice]}, sdk.ServerMetrics()

    fake_sdk = types.SimpleNamespace(DeploymentSampler=Sampler)
    runner = FireworksRunner(
        fake_sdk,
        inference_url="http://127.0.0.1:9",
        model="accounts/a/deployments/d",
        api_key="k",
        base_model="accounts/fireworks/models/m",
        tokenizer=AutoTokenizer.from_pretrained(str(tokenizer_dir)),
        tokenizer_path=str(tokenizer_dir),
        hot_load=lambda path, version: {"snapshot_name": "s"},
    )
    return runner, sent


def request(temperature: float) -> GenerationRequest:
    return GenerationRequest(
        list(PROMPT), SamplingParams(temperature=temperature, max_new_tokens=2), return_logprob=True
    )


def entry(token: int, lp: float, sampling: float | None) -> dict[str, Any]:
    return {"token_id": token, "logprob": lp, "sampling_logprob": sampling}


def test_serves_the_sampled_ids_and_behaviour_logprobs_as_given(tiny_model_dir: Path) -> None:
    choice = {
        "text": "",
        "finish_reason": "length",
        "raw_output": {"prompt_token_ids": PROMPT, "completion_token_ids": [40, 41]},
        "logprobs": {"content": [entry(40, -1.0, -0.5), entry(41, -2.0, -0.25)]},
    }
    runner, sent = runner_answering(tiny_model_dir, choice)
    sample = runner._sample(None, request(0.7))
    assert sample.tokens == [40, 41]
    assert sample.logprobs == [-0.5, -0.25]  # sampling_logprob: the distribution sampled from
    assert sent[0]["prompt"] == PROMPT
    assert sent[0]["raw_output"] is True and sent[0]["logprobs"] is True


def test_refuses_answers_that_cannot_be_exact(tiny_model_dir: Path) -> None:
    raw_only = {
        "text": "",
        "finish_reason": "length",
        "raw_output": {"completion_token_ids": [40, 41]},
        "logprobs": {"content": [entry(40, -1.0, None), entry(41, -2.0, None)]},
    }
    runner, _ = runner_answering(tiny_model_dir, raw_only)
    with pytest.raises(RuntimeError, match="sampling_logprob"):
        runner._sample(None, request(0.7))
    # At temperature 1 with the whole distribution, raw and behaviour log-probs are the same.
    assert runner._sample(None, request(1.0)).logprobs == [-1.0, -2.0]

    short = {**raw_only, "logprobs": {"content": [entry(40, -1.0, -1.0)]}}
    runner, _ = runner_answering(tiny_model_dir, short)
    with pytest.raises(RuntimeError, match="1 log-probs for 2 sampled ids"):
        runner._sample(None, request(1.0))
