"""/v1/chat/completions against a real server: OpenAI shape, SGLang token-id extensions, streaming."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerBase
from weather_tool import TOOLS

from openclaw_engine.tiny_tokenizer import bytes_to_unicode

# The byte-level alphabet: the tiny tokenizer's first 256 ids are these characters (sorted), one per byte.
BYTE_OF = {char: byte for byte, char in bytes_to_unicode().items()}

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say something."}]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def chat(client: httpx.Client, **body: Any) -> dict:
    response = client.post("/v1/chat/completions", json={"messages": MESSAGES, **body})
    assert response.status_code == 200, response.text
    return response.json()


def stream_chat(client: httpx.Client, **body: Any) -> list[dict]:
    chunks: list[dict] = []
    with client.stream(
        "POST", "/v1/chat/completions", json={"messages": MESSAGES, "stream": True, **body}
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        done = False
        for line in r.iter_lines():
            if not line:
                continue
            assert line.startswith("data: ") and not done
            if line == "data: [DONE]":
                done = True
            else:
                chunks.append(json.loads(line[len("data: ") :]))
    assert done
    return chunks


def visible(tokenizer: PreTrainedTokenizerBase, token_ids: list[int], eos_ids: set[int]) -> str:
    ids = token_ids[:-1] if token_ids and token_ids[-1] in eos_ids else token_ids
    return tokenizer.decode(ids, skip_special_tokens=True)


def test_non_streaming_shape_and_token_ids(client: httpx.Client, tokenizer: PreTrainedTokenizerBase) -> None:
    out = chat(
        client,
        max_tokens=12,
        seed=4,
        logprobs=True,
        top_logprobs=2,
        return_prompt_token_ids=True,
        return_token_ids=True,
        model="my-policy",
    )
    assert (
        out["object"] == "chat.completion"
        and out["id"].startswith("chatcmpl-")
        and out["model"] == "my-policy"
    )
    choice = out["choices"][0]
    expected_prompt = tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    assert choice["prompt_token_ids"] == tokenizer.encode(expected_prompt, add_special_tokens=False)
    token_ids = choice["token_ids"]
    assert 1 <= len(token_ids) <= 12
    eos = set(client.get("/get_model_info").json()["eos_token_ids"])
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == visible(tokenizer, token_ids, eos)
    assert choice["finish_reason"] in ("stop", "length")
    content = choice["logprobs"]["content"]
    assert len(content) == len(token_ids)
    for item, token in zip(content, token_ids, strict=True):
        assert item["token"] == tokenizer.decode([token])
        assert isinstance(item["logprob"], float) and item["logprob"] <= 0
        assert len(item["top_logprobs"]) == 2 and item["top_logprobs"][0]["logprob"] >= item["logprob"] - 1e-6
        assert bytes(item["bytes"]).decode("utf-8", errors="replace") == item["token"]
        if token < 256:  # tiny tokenizer: ids 0..255 are the 256 single bytes, reported exactly (not U+FFFD)
            assert item["bytes"] == [BYTE_OF[tokenizer.convert_ids_to_tokens(token)]]
    assert out["usage"] == {
        "prompt_tokens": len(choice["prompt_token_ids"]),
        "completion_tokens": len(token_ids),
        "total_tokens": len(choice["prompt_token_ids"]) + len(token_ids),
        "prompt_tokens_details": {"cached_tokens": out["usage"]["prompt_tokens_details"]["cached_tokens"]},
    }
    assert out["metadata"]["weight_version"] == client.get("/get_model_info").json()["weight_version"]


def test_chat_logprobs_match_generate_prefill(client: httpx.Client) -> None:
    out = chat(
        client,
        max_tokens=10,
        seed=8,
        temperature=1.0,
        logprobs=True,
        return_prompt_token_ids=True,
        return_token_ids=True,
        ignore_eos=True,
    )
    choice = out["choices"][0]
    prompt, tokens = choice["prompt_token_ids"], choice["token_ids"]
    prefill = client.post(
        "/generate",
        json={
            "input_ids": prompt + tokens,
            "sampling_params": {"max_new_tokens": 0},
            "return_logprob": True,
            "logprob_start_len": len(prompt),
        },
    ).json()["meta_info"]["input_token_logprobs"]
    for item, (lp, _, _) in zip(choice["logprobs"]["content"], prefill, strict=True):
        assert item["logprob"] == pytest.approx(lp, abs=1e-4)


def test_streaming_is_incremental_and_reassembles(
    client: httpx.Client, tokenizer: PreTrainedTokenizerBase
) -> None:
    params = {"max_tokens": 24, "seed": 21, "ignore_eos": True}
    chunks = stream_chat(
        client,
        return_prompt_token_ids=True,
        return_token_ids=True,
        logprobs=True,
        stream_options={"include_usage": True},
        **params,
    )
    first = chunks[0]["choices"][0]
    assert first["delta"]["role"] == "assistant"
    body = [c for c in chunks if c["choices"]]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    token_chunks = [c["choices"][0] for c in body if c["choices"][0].get("token_ids")]
    content_chunks = [c for c in body if c["choices"][0]["delta"].get("content")]
    assert len(token_chunks) == 24, "one chunk per generated token"
    assert len(content_chunks) > 1, "content must arrive incrementally"
    token_ids = [t for c in token_chunks for t in c["token_ids"]]
    logprob_items = [i for c in token_chunks for i in c["logprobs"]["content"]]
    assert len(logprob_items) == 24
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in body)
    assert text == tokenizer.decode(token_ids, skip_special_tokens=True)
    final = [c for c in body if c["choices"][0]["finish_reason"]]
    assert len(final) == 1 and final[0]["choices"][0]["finish_reason"] == "length"
    assert final[0]["metadata"]["weight_version"]
    usage = chunks[-1]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 24
    # Same seed, non-streaming: identical tokens, prompt ids and text.
    plain = chat(client, return_prompt_token_ids=True, return_token_ids=True, **params)["choices"][0]
    assert plain["token_ids"] == token_ids
    assert plain["prompt_token_ids"] == first["prompt_token_ids"]
    assert plain["message"]["content"] == text


def test_input_ids_bypass_the_template(client: httpx.Client) -> None:
    ids = client.post("/tokenize", json={"prompt": "raw prompt"}).json()["tokens"]
    out = chat(client, input_ids=ids, max_tokens=3, return_prompt_token_ids=True, seed=1)
    assert out["choices"][0]["prompt_token_ids"] == ids
    assert out["usage"]["prompt_tokens"] == len(ids)


def test_usage_counts_the_prompt_tokens_served_from_the_prefix_cache(client: httpx.Client) -> None:
    system = {"role": "system", "content": "A system prompt only this test sends, long enough to cache. " * 8}

    def usage(user: str) -> dict:
        body = {"messages": [system, {"role": "user", "content": user}], "max_tokens": 2, "seed": 3}
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        return response.json()["usage"]

    first, second = usage("The first question."), usage("Another question entirely.")
    cached = [u["prompt_tokens_details"]["cached_tokens"] for u in (first, second)]
    # The first may share only the template's opening with earlier tests; the second shares the whole system
    # prompt with the first, not its user message.
    assert cached[0] + 40 < cached[1] < second["prompt_tokens"]


def test_tools_are_rendered_and_tool_choice_none_hides_them(
    client: httpx.Client, tokenizer: PreTrainedTokenizerBase
) -> None:
    out = chat(client, tools=TOOLS, max_tokens=4, seed=2, return_prompt_token_ids=True)
    prompt = tokenizer.decode(out["choices"][0]["prompt_token_ids"])
    assert prompt == tokenizer.apply_chat_template(
        MESSAGES, tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    assert '"name": "get_weather"' in prompt
    hidden = chat(client, tools=TOOLS, tool_choice="none", max_tokens=4, seed=2, return_prompt_token_ids=True)
    assert "get_weather" not in tokenizer.decode(hidden["choices"][0]["prompt_token_ids"])
    # A multi-turn history with an assistant tool call (arguments as a JSON string) and a tool result.
    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
    ]
    turn = client.post(
        "/v1/chat/completions",
        json={"messages": history, "tools": TOOLS, "max_tokens": 3, "return_prompt_token_ids": True},
    )
    assert turn.status_code == 200, turn.text
    rendered = tokenizer.decode(turn.json()["choices"][0]["prompt_token_ids"])
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>' in rendered
    assert "<tool_response>\nrain\n</tool_response>" in rendered


def test_chat_template_kwargs_reach_the_template(client: httpx.Client) -> None:
    out = chat(
        client, max_tokens=1, chat_template_kwargs={"enable_thinking": False}, return_prompt_token_ids=True
    )
    text = client.post(
        "/detokenize", json={"tokens": out["choices"][0]["prompt_token_ids"], "skip_special_tokens": False}
    ).json()["text"]
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_stop_in_chat(client: httpx.Client) -> None:
    base = {"max_tokens": 30, "seed": 5, "ignore_eos": True}
    full = chat(client, **base)["choices"][0]["message"]["content"]
    stop = next(ch for ch in full[1:] if ch.isascii() and ch.isprintable())
    out = chat(client, stop=stop, **base)["choices"][0]
    assert out["message"]["content"] == full[: full.index(stop)]
    assert out["finish_reason"] == "stop" and out["matched_stop"] == stop


def test_a_named_tool_choice_is_called_once_per_user_turn(client: httpx.Client) -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    body = {
        "tools": TOOLS,
        "tool_choice": named,
        "max_tokens": 64,
        "logprobs": True,
        "return_token_ids": True,
    }
    out = chat(client, **body)
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": ""}  # the schema's minimal arguments
    # The forced tokens carry the model's own log-probs: a prefill of the sequence gives the same numbers.
    prompt = client.post("/tokenize", json={"messages": MESSAGES, "tools": TOOLS}).json()["tokens"]
    sampled = [item["logprob"] for item in choice["logprobs"]["content"]]
    prefill = client.post(
        "/generate",
        json={
            "input_ids": prompt + choice["token_ids"],
            "sampling_params": {"max_new_tokens": 0},
            "return_logprob": True,
            "logprob_start_len": len(prompt),
        },
    ).json()["meta_info"]["input_token_logprobs"]
    assert sampled == pytest.approx([lp for lp, _, _ in prefill], abs=1e-4)

    # Once the tool has answered, the same tool_choice no longer forces a call (an agent's loop ends).
    history = [
        *MESSAGES,
        {"role": "assistant", "content": None, "tool_calls": [{**call, "type": "function"}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny"},
    ]
    after = client.post(
        "/v1/chat/completions", json={"messages": history, **body, "max_tokens": 8, "seed": 1}
    ).json()["choices"][0]
    assert after["finish_reason"] in ("length", "stop") and not after["message"].get("tool_calls")
    # OpenClaw appends a user-role context message after the tool's result on every call: still no new call.
    context = {"role": "user", "content": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> runtime <<<END>>>"}
    again = client.post(
        "/v1/chat/completions", json={"messages": [*history, context], **body, "max_tokens": 8, "seed": 1}
    ).json()["choices"][0]
    assert not again["message"].get("tool_calls")
    # After a plain reply, the next user message is a new user turn: the call is forced again.
    next_turn = [*history, {"role": "assistant", "content": "done"}, {"role": "user", "content": "again"}]
    forced = client.post("/v1/chat/completions", json={"messages": next_turn, **body}).json()["choices"][0]
    assert [c["function"]["name"] for c in forced["message"]["tool_calls"]] == ["get_weather"]
