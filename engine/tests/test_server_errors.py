"""Bad input is a 4xx OpenAI-shaped JSON error naming the field, and the server keeps serving."""

from __future__ import annotations

import httpx
import pytest

from openclaw_engine.tiny_tokenizer import CONTEXT_LENGTH

OK_GENERATE = {"input_ids": [72, 105], "sampling_params": {"max_new_tokens": 2}}
OK_CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}

CASES: list[tuple[str, dict, str]] = [
    ("/generate", {"sampling_params": {"max_new_tokens": 2}}, "text"),
    ("/generate", {"text": "a", "input_ids": [1]}, "text"),
    ("/generate", {"input_ids": []}, "input_ids"),
    ("/generate", {"input_ids": [1, 100000]}, "input_ids[1]"),
    ("/generate", {"input_ids": [1, -3]}, "input_ids[1]"),
    ("/generate", {"input_ids": [1, "2"]}, "input_ids[1]"),
    (
        "/generate",
        {**OK_GENERATE, "sampling_params": {"max_new_tokens": -1}},
        "sampling_params.max_new_tokens",
    ),
    ("/generate", {**OK_GENERATE, "sampling_params": {"temperature": "hot"}}, "sampling_params.temperature"),
    ("/generate", {**OK_GENERATE, "sampling_params": {"temperature": -0.5}}, "sampling_params.temperature"),
    ("/generate", {**OK_GENERATE, "sampling_params": {"top_p": 0}}, "sampling_params.top_p"),
    ("/generate", {**OK_GENERATE, "sampling_params": {"top_k": -2}}, "sampling_params.top_k"),
    (
        "/generate",
        {**OK_GENERATE, "sampling_params": {"stop_token_ids": [999999]}},
        "sampling_params.stop_token_ids[0]",
    ),
    ("/generate", {**OK_GENERATE, "sampling_params": {"ignore_eos": "yes"}}, "sampling_params.ignore_eos"),
    ("/generate", {**OK_GENERATE, "sampling_params": {"bogus": 1}}, "sampling_params.bogus"),
    (
        "/generate",
        {**OK_GENERATE, "sampling_params": {"presence_penalty": 0.5}},
        "sampling_params.presence_penalty",
    ),
    ("/generate", {**OK_GENERATE, "bogus": True}, "bogus"),
    ("/generate", {**OK_GENERATE, "return_logprob": 1}, "return_logprob"),
    ("/generate", {**OK_GENERATE, "logprob_start_len": -2}, "logprob_start_len"),
    ("/generate", {**OK_GENERATE, "logprob_start_len": 2}, "logprob_start_len"),
    ("/generate", {"input_ids": [1] * (CONTEXT_LENGTH + 1)}, "input_ids"),
    ("/v1/chat/completions", {"messages": []}, "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
        "messages[0].content",
    ),
    ("/v1/chat/completions", {**OK_CHAT, "max_tokens": -1}, "max_tokens"),
    ("/v1/chat/completions", {**OK_CHAT, "max_completion_tokens": -5}, "max_completion_tokens"),
    ("/v1/chat/completions", {**OK_CHAT, "n": 2}, "n"),
    # Penalties and min_tokens change what is drawn; the engine does not apply them, so it refuses them.
    ("/v1/chat/completions", {**OK_CHAT, "presence_penalty": 0.5}, "presence_penalty"),
    ("/v1/chat/completions", {**OK_CHAT, "repetition_penalty": 1.1}, "repetition_penalty"),
    ("/v1/chat/completions", {**OK_CHAT, "min_tokens": 3}, "min_tokens"),
    ("/v1/chat/completions", {**OK_CHAT, "temperature": "warm"}, "temperature"),
    ("/v1/chat/completions", {**OK_CHAT, "top_logprobs": 3}, "top_logprobs"),
    ("/v1/chat/completions", {**OK_CHAT, "logprobs": True, "top_logprobs": 50}, "top_logprobs"),
    ("/v1/chat/completions", {**OK_CHAT, "stop": ["ok", ""]}, "stop"),
    ("/v1/chat/completions", {**OK_CHAT, "input_ids": [5, 300000]}, "input_ids[1]"),
    ("/v1/chat/completions", {**OK_CHAT, "stop_token_ids": [300000]}, "stop_token_ids[0]"),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
        "tool_choice",
    ),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "tools": [{"type": "function", "function": {"name": 3}}]},
        "tools[0].function.name",
    ),
    ("/v1/chat/completions", {**OK_CHAT, "stream": "true"}, "stream"),
    # Digits are one token each: this prompt is longer than the context.
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "7" * CONTEXT_LENGTH}]}, "messages"),
    ("/tokenize", {}, "prompt"),
    ("/detokenize", {"tokens": [1, 99999]}, "tokens[1]"),
    ("/pause_generation", {"mode": "sideways"}, "mode"),
    ("/abort_request", {}, "rid"),
]


@pytest.mark.parametrize(("path", "body", "param"), CASES)
def test_bad_requests_name_the_field(client: httpx.Client, path: str, body: dict, param: str) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param, error
    assert error["type"] == "invalid_request_error" and error["code"] == 400
    assert isinstance(error["message"], str) and error["message"]


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b"", b'"text"', b"\xff\xfe"])
def test_malformed_json_is_400(client: httpx.Client, raw: bytes) -> None:
    response = client.post("/generate", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "body"


def test_oversized_body_is_413(client: httpx.Client) -> None:
    big = {"text": "x" * (2 * 1024 * 1024)}  # the test server's limit is 1 MiB
    response = client.post("/generate", json=big)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == 413

    def chunks():  # no content-length: counted while reading
        for _ in range(3):
            yield b"x" * (512 * 1024)

    chunked = client.post(
        "/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"}
    )
    assert chunked.status_code == 413


def test_server_keeps_working_after_errors(client: httpx.Client) -> None:
    for path, body, _ in CASES[:5]:
        client.post(path, json=body)
    assert client.post("/generate", json=OK_GENERATE).status_code == 200
    assert client.post("/v1/chat/completions", json=OK_CHAT).status_code == 200
    assert client.get("/health_generate").status_code == 200
