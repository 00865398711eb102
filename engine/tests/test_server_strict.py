"""Strict mode (`serve --strict`): the engine refuses what SGLang 0.5.23 refuses and answers in its spelling.

The refusals and the `sglext` shapes are SGLang's (serving_chat.py `_convert_to_internal_request` and
`_generate_chat_stream`, protocol.py `SglExt`); the project's conformance suite checks the same bodies
against SGLang's own code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

MESSAGES = [{"role": "user", "content": "Say something."}]


@pytest.fixture(scope="module")
def strict(start_server: Any, tiny_model_dir: Path) -> Iterator[httpx.Client]:
    with start_server(tiny_model_dir, "--strict") as url, httpx.Client(base_url=url, timeout=60.0) as c:
        yield c


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    out = []
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[len("data: ") :]))
    return out


@pytest.mark.parametrize(
    ("flag", "text"),
    [
        ("return_prompt_token_ids", "return_prompt_token_ids is not supported with streaming"),
        ("return_token_ids", "return_token_ids is not supported with streaming"),
        ("return_meta_info", "return_meta_info is not supported with streaming"),
    ],
)
def test_streams_refuse_the_exact_token_flags(strict: httpx.Client, flag: str, text: str) -> None:
    response = strict.post(
        "/v1/chat/completions", json={"messages": MESSAGES, "stream": True, "max_tokens": 3, flag: True}
    )
    assert response.status_code == 400
    assert text in response.json()["error"]["message"]


def test_max_tokens_must_be_positive(strict: httpx.Client) -> None:
    response = strict.post("/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 0})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "max_tokens must be positive"


def test_non_streaming_sglext_and_response_token_ids(strict: httpx.Client) -> None:
    body = {
        "messages": MESSAGES,
        "max_tokens": 4,
        "seed": 3,
        "logprobs": True,
        "return_token_ids": True,
        "return_input_ids_in_sglext": True,
        "return_output_ids_in_sglext": True,
    }
    out = strict.post("/v1/chat/completions", json=body).json()
    choice = out["choices"][0]
    assert "token_ids" not in choice  # SGLang 0.5.23 spells it response_token_ids
    assert out["sglext"]["output_ids"] == [choice["response_token_ids"]]
    assert out["sglext"]["input_ids"] == choice["prompt_token_ids"]
    assert len(choice["logprobs"]["content"]) == len(choice["response_token_ids"])


def test_streamed_sglext_ids_match_the_non_streaming_answer(strict: httpx.Client) -> None:
    body = {
        "messages": MESSAGES,
        "max_tokens": 6,
        "seed": 5,
        "logprobs": True,
        "return_input_ids_in_sglext": True,
        "return_output_ids_in_sglext": True,
        "stream_options": {"include_usage": True},
    }
    whole = strict.post("/v1/chat/completions", json=body).json()
    with strict.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
        assert response.status_code == 200
        events = _events(response)
    ext = [e for e in events if "sglext" in e]
    assert len(ext) == 1 and ext[0]["choices"] == []
    assert ext[0]["sglext"] == whole["sglext"]
    # Usage comes last, after the sglext chunk, as in SGLang.
    assert events[-1]["usage"]["completion_tokens"] == len(whole["sglext"]["output_ids"][0])
    assert events.index(ext[0]) == len(events) - 2
    streamed = [
        item["logprob"]
        for e in events
        for c in e["choices"]
        for item in (c.get("logprobs") or {}).get("content") or []
    ]
    assert streamed == [item["logprob"] for item in whole["choices"][0]["logprobs"]["content"]]
    assert all("token_ids" not in c and "prompt_token_ids" not in c for e in events for c in e["choices"])


def test_model_info_has_sglangs_current_name(strict: httpx.Client) -> None:
    assert strict.get("/model_info").json() == strict.get("/get_model_info").json()
    assert "weight_version" in strict.get("/server_info").json()
