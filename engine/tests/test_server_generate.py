"""SGLang-native routes against a real `serve` subprocess: /generate, log-probs, info, tokenize."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest
from transformers import AutoTokenizer

PROMPT = "The quick brown fox jumps over the lazy dog."


def generate(client: httpx.Client, **body: object) -> dict:
    response = client.post("/generate", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_health_and_info(client: httpx.Client, tiny_model_dir: Path) -> None:
    assert client.get("/health").status_code == 200
    assert client.get("/health_generate").json()["status"] == "ok"
    info = client.get("/get_model_info").json()
    assert info["model_path"] == str(tiny_model_dir)
    assert info["tokenizer_path"] == str(tiny_model_dir)
    assert info["is_generation"] is True
    assert isinstance(info["weight_version"], str)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert info["vocab_size"] == len(tokenizer)
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == str(tiny_model_dir)


def test_tokenize_and_detokenize(client: httpx.Client, tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    out = client.post("/tokenize", json={"prompt": PROMPT}).json()
    assert out["tokens"] == tokenizer.encode(PROMPT) and out["count"] == len(out["tokens"])
    assert out["max_model_len"] > 0
    batch = client.post("/tokenize", json={"text": ["a b", "c"]}).json()
    expected = [tokenizer.encode("a b"), tokenizer.encode("c")]
    assert batch["tokens"] == expected and batch["count"] == [len(ids) for ids in expected]
    messages = [{"role": "user", "content": "hi"}]
    chat = client.post("/tokenize", json={"messages": messages}).json()
    expected = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert chat["prompt"] == expected and chat["tokens"] == tokenizer.encode(expected)
    assert client.post("/detokenize", json={"tokens": out["tokens"]}).json()["text"] == PROMPT


def test_generate_shape_and_seed_determinism(client: httpx.Client) -> None:
    params = {"max_new_tokens": 12, "temperature": 1.0, "seed": 11}
    a = generate(client, text=PROMPT, sampling_params=params)
    b = generate(client, text=PROMPT, sampling_params=params)
    c = generate(client, text=PROMPT, sampling_params={**params, "seed": 12})
    assert a["output_ids"] == b["output_ids"] and a["text"] == b["text"]
    assert a["output_ids"] != c["output_ids"]
    meta = a["meta_info"]
    assert meta["completion_tokens"] == len(a["output_ids"]) <= 12
    assert meta["prompt_tokens"] == len(client.post("/tokenize", json={"prompt": PROMPT}).json()["tokens"])
    assert meta["finish_reason"]["type"] in ("length", "stop") and meta["weight_version"]
    greedy = [
        generate(client, text=PROMPT, sampling_params={"max_new_tokens": 8, "temperature": 0})["output_ids"]
        for _ in range(2)
    ]
    assert greedy[0] == greedy[1]


def test_stop_strings_and_stop_token_ids(client: httpx.Client) -> None:
    base = {"max_new_tokens": 40, "temperature": 1.0, "seed": 3, "ignore_eos": True}
    full = generate(client, input_ids=[72, 105], sampling_params=base)
    assert full["meta_info"]["finish_reason"] == {"type": "length", "length": 40}
    ids = full["output_ids"]
    # Stop on the id of the 5th generated token: generation ends at its first occurrence, id kept.
    target = ids[4]
    cut = ids.index(target)
    stopped = generate(client, input_ids=[72, 105], sampling_params={**base, "stop_token_ids": [target]})
    assert stopped["output_ids"] == ids[: cut + 1]
    assert stopped["meta_info"]["finish_reason"] == {"type": "stop", "matched": target}
    # Stop string: an ASCII character the unconstrained run produced; the text is trimmed before it.
    text = full["text"]
    stop = next(ch for ch in text[2:] if ch.isascii() and ch.isprintable())
    at = text.index(stop)
    by_string = generate(client, input_ids=[72, 105], sampling_params={**base, "stop": [stop, "never-seen"]})
    assert by_string["text"] == text[:at]
    assert by_string["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop}
    assert ids[: len(by_string["output_ids"])] == by_string["output_ids"]
    kept = generate(client, input_ids=[72, 105], sampling_params={**base, "stop": stop, "no_stop_trim": True})
    assert kept["text"] == text[: at + 1]


def test_eos_ends_generation_and_is_trimmed_from_text(
    eos_prone_model_dir: Path, start_server: Callable[..., AbstractContextManager[str]]
) -> None:
    tokenizer = AutoTokenizer.from_pretrained(eos_prone_model_dir)
    with start_server(eos_prone_model_dir) as url, httpx.Client(base_url=url, timeout=60) as client:
        eos_ids = set(client.get("/get_model_info").json()["eos_token_ids"])
        # The model emits eos now and then: find a seed whose ignore_eos run contains one.
        for seed in range(20):
            params = {"max_new_tokens": 300, "seed": seed, "temperature": 1.0}
            run = generate(client, input_ids=[72, 105], sampling_params={**params, "ignore_eos": True})[
                "output_ids"
            ]
            hits = [i for i, t in enumerate(run) if t in eos_ids]
            if hits:
                break
        else:
            pytest.fail("no eos in 20 x 300 sampled tokens")
        out = generate(client, input_ids=[72, 105], sampling_params=params)
        assert out["output_ids"] == run[: hits[0] + 1]  # the eos id is kept in output_ids ...
        assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": run[hits[0]]}
        assert out["text"] == tokenizer.decode(
            run[: hits[0]], skip_special_tokens=True
        )  # ... not in the text


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_logprobs_equal_prefill_logprobs(client: httpx.Client, temperature: float) -> None:
    """The RL invariant: what the sampler reports is what a prefill of the same tokens reports."""
    prompt_ids = client.post("/tokenize", json={"prompt": PROMPT}).json()["tokens"]
    out = generate(
        client,
        input_ids=prompt_ids,
        sampling_params={"max_new_tokens": 16, "temperature": temperature, "seed": 5, "ignore_eos": True},
        return_logprob=True,
    )
    sampled = out["meta_info"]["output_token_logprobs"]
    assert [t for _, t, _ in sampled] == out["output_ids"] and len(sampled) == 16
    full = prompt_ids + out["output_ids"]
    prefill = generate(
        client,
        input_ids=full,
        sampling_params={"max_new_tokens": 0, "temperature": temperature},
        return_logprob=True,
        logprob_start_len=len(prompt_ids),
    )
    assert prefill["output_ids"] == [] and prefill["text"] == ""
    assert prefill["meta_info"]["finish_reason"]["type"] == "length"
    recomputed = prefill["meta_info"]["input_token_logprobs"]
    assert [t for _, t, _ in recomputed] == out["output_ids"]
    for (lp_sampled, _, _), (lp_prefill, _, _) in zip(sampled, recomputed, strict=True):
        assert lp_prefill == pytest.approx(lp_sampled, abs=1e-4)


def test_logprob_start_len_alignment(client: httpx.Client) -> None:
    ids = client.post("/tokenize", json={"prompt": PROMPT}).json()["tokens"]
    everything = generate(
        client, input_ids=ids, sampling_params={"max_new_tokens": 0}, return_logprob=True, logprob_start_len=0
    )["meta_info"]["input_token_logprobs"]
    assert len(everything) == len(ids)
    assert everything[0][0] is None and everything[0][1] == ids[0]
    assert all(isinstance(lp, float) and lp <= 0 for lp, _, _ in everything[1:])
    for start in (1, 5, len(ids) - 1):
        entries = generate(
            client,
            input_ids=ids,
            sampling_params={"max_new_tokens": 0},
            return_logprob=True,
            logprob_start_len=start,
        )["meta_info"]["input_token_logprobs"]
        assert len(entries) == len(ids) - start
        for i, (lp, token, _) in enumerate(entries):
            assert token == ids[start + i]  # entry i is position start + i ...
            assert lp == pytest.approx(everything[start + i][0], abs=1e-5)  # ... including the first one
    # Default (-1): output tokens only.
    default = generate(client, input_ids=ids, sampling_params={"max_new_tokens": 2}, return_logprob=True)
    assert default["meta_info"]["input_token_logprobs"] == []
    assert len(default["meta_info"]["output_token_logprobs"]) == 2


def test_top_logprobs(client: httpx.Client, tiny_model_dir: Path) -> None:
    ids = client.post("/tokenize", json={"prompt": "abc"}).json()["tokens"]
    out = generate(
        client,
        input_ids=ids,
        sampling_params={"max_new_tokens": 4, "seed": 1, "ignore_eos": True},
        return_logprob=True,
        logprob_start_len=0,
        top_logprobs_num=3,
        return_text_in_logprobs=True,
    )
    meta = out["meta_info"]
    assert meta["input_top_logprobs"][0] is None and len(meta["input_top_logprobs"]) == len(ids)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    for rows in (meta["input_top_logprobs"][1:], meta["output_top_logprobs"]):
        for row in rows:
            assert len(row) == 3
            values = [lp for lp, _, _ in row]
            assert values == sorted(values, reverse=True)
            assert all(text == tokenizer.decode([t]) for _, t, text in row)
    for (lp, token, text), row in zip(
        meta["output_token_logprobs"], meta["output_top_logprobs"], strict=True
    ):
        assert lp <= row[0][0] + 1e-6 and text == tokenizer.decode([token])
        if token == row[0][1]:
            assert lp == pytest.approx(row[0][0])


def test_generate_stream(client: httpx.Client) -> None:
    body = {
        "text": PROMPT,
        "sampling_params": {"max_new_tokens": 10, "seed": 9, "ignore_eos": True},
        "stream": True,
    }
    events = []
    with client.stream("POST", "/generate", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(line[len("data: ") :])
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert len(chunks) >= 10
    assert [len(c["output_ids"]) for c in chunks[:10]] == list(range(1, 11))  # one event per token
    final = chunks[-1]
    assert final["meta_info"]["finish_reason"]["type"] == "length"
    plain = generate(
        client, text=PROMPT, sampling_params={"max_new_tokens": 10, "seed": 9, "ignore_eos": True}
    )
    assert final["output_ids"] == plain["output_ids"] and final["text"] == plain["text"]
