"""Pause/continue, token-by-token concurrency and weight updates against real server processes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
from transformers import Qwen3Config, Qwen3ForCausalLM

ServerFactory = Callable[..., AbstractContextManager[str]]

PROMPT_IDS = [72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100]


class Streamer(threading.Thread):
    """Runs one streaming /generate request in the background, timestamping every event."""

    def __init__(self, url: str, max_new_tokens: int, seed: int, logprobs: bool = False) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.body = {
            "input_ids": PROMPT_IDS,
            "sampling_params": {"max_new_tokens": max_new_tokens, "seed": seed, "ignore_eos": True},
            "return_logprob": logprobs,
            "stream": True,
        }
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.url, timeout=120) as client:
                with client.stream("POST", "/generate", json=self.body) as response:
                    for line in response.iter_lines():
                        if line.startswith("data: {"):
                            self.events.append((time.monotonic(), json.loads(line[len("data: ") :])))
        except BaseException as exc:
            self.error = exc

    def wait_for_tokens(self, n: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.events) < n:
            assert time.monotonic() < deadline, f"only {len(self.events)} events"
            time.sleep(0.01)

    @property
    def final(self) -> dict[str, Any]:
        return self.events[-1][1]


def test_request_sent_while_paused_completes_after_continue(client: httpx.Client, server: str) -> None:
    assert client.post("/pause_generation", json={}).json()["success"] is True
    try:
        result: dict[str, Any] = {}

        def send() -> None:
            with httpx.Client(base_url=server, timeout=60) as c:
                result["response"] = c.post(
                    "/generate", json={"input_ids": PROMPT_IDS, "sampling_params": {"max_new_tokens": 5}}
                )

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        time.sleep(1.0)
        assert sender.is_alive(), "a request must wait while generation is paused"
        assert client.get("/health").json()["paused"] is True
        assert client.get("/health_generate").status_code == 200  # paused is not dead
    finally:
        assert client.post("/continue_generation").json()["success"] is True
    sender.join(30)
    response = result["response"]
    assert response.status_code == 200
    assert len(response.json()["output_ids"]) == 5


def test_running_request_freezes_in_place_and_resumes(server: str, client: httpx.Client) -> None:
    streamer = Streamer(server, max_new_tokens=120, seed=1)
    streamer.start()
    streamer.wait_for_tokens(5)
    paused = client.post("/pause_generation", json={"mode": "in_place"}).json()
    assert paused["num_paused_requests"] == 1
    try:
        time.sleep(0.3)
        frozen = len(streamer.events)
        time.sleep(0.7)
        assert len(streamer.events) == frozen, "no tokens while paused"
    finally:
        client.post("/continue_generation", json={})
    streamer.join(60)
    assert streamer.error is None
    assert len(streamer.final["output_ids"]) == 120
    assert streamer.final["meta_info"]["finish_reason"]["type"] == "length"


def test_pause_abort_mode_ends_running_requests(server: str, client: httpx.Client) -> None:
    streamer = Streamer(server, max_new_tokens=2000, seed=2)
    streamer.start()
    streamer.wait_for_tokens(3)
    client.post("/pause_generation", json={"mode": "abort"})
    try:
        streamer.join(30)
        assert not streamer.is_alive()
        assert streamer.final["meta_info"]["finish_reason"]["type"] == "abort"
    finally:
        client.post("/continue_generation", json={})
    assert (
        len(
            client.post(
                "/generate", json={"input_ids": PROMPT_IDS, "sampling_params": {"max_new_tokens": 2}}
            ).json()["output_ids"]
        )
        == 2
    )


def test_concurrent_requests_interleave(server: str) -> None:
    a = Streamer(server, max_new_tokens=60, seed=3)
    b = Streamer(server, max_new_tokens=60, seed=4)
    a.start()
    b.start()
    a.join(60)
    b.join(60)
    assert a.error is None and b.error is None
    assert len(a.final["output_ids"]) == 60 and len(b.final["output_ids"]) == 60
    # Both made progress at the same time: each one's first token came before the other's last.
    assert a.events[0][0] < b.events[-1][0] and b.events[0][0] < a.events[-1][0]
    timeline = sorted([(t, "a") for t, _ in a.events] + [(t, "b") for t, _ in b.events])
    switches = sum(1 for x, y in zip(timeline, timeline[1:], strict=False) if x[1] != y[1])
    assert switches > 20, "token-by-token interleaving expected"


def test_client_disconnect_stops_generation(server: str, client: httpx.Client) -> None:
    body = {
        "input_ids": PROMPT_IDS,
        "sampling_params": {"max_new_tokens": 3000, "ignore_eos": True},
        "stream": True,
    }
    with (
        httpx.Client(base_url=server, timeout=60) as other,
        other.stream("POST", "/generate", json=body) as r,
    ):
        for i, _ in enumerate(r.iter_lines()):
            if i > 5:
                break
    deadline = time.monotonic() + 10
    while client.get("/get_server_info").json()["active_requests"]:
        assert time.monotonic() < deadline, "generation kept running after the client left"
        time.sleep(0.05)


def _prefill(client: httpx.Client, ids: list[int], start: int) -> list[float]:
    out = client.post(
        "/generate",
        json={
            "input_ids": ids,
            "sampling_params": {"max_new_tokens": 0},
            "return_logprob": True,
            "logprob_start_len": start,
        },
    ).json()
    return [lp for lp, _, _ in out["meta_info"]["input_token_logprobs"]]


def _update(client: httpx.Client, path: Path, version: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {"model_path": str(path)}
    if version is not None:
        body["weight_version"] = version
    return client.post("/update_weights_from_disk", json=body)


def test_update_weights_from_disk(
    tiny_model_dir: Path, other_model_dir: Path, tmp_path: Path, start_server: ServerFactory
) -> None:
    with start_server(tiny_model_dir) as url, httpx.Client(base_url=url, timeout=60) as client:
        assert client.get("/get_model_info").json()["weight_version"] == "0"
        before = _prefill(client, PROMPT_IDS, 1)

        response = _update(client, other_model_dir)
        assert response.status_code == 200, response.text
        assert response.json()["success"] is True and response.json()["num_paused_requests"] == 0
        info = client.get("/get_model_info").json()
        assert info["weight_version"] == "1" and info["model_path"] == str(other_model_dir)
        after = _prefill(client, PROMPT_IDS, 1)
        assert max(abs(x - y) for x, y in zip(before, after, strict=True)) > 1e-3, (
            "new weights must be served"
        )
        out = client.post(
            "/generate", json={"input_ids": PROMPT_IDS, "sampling_params": {"max_new_tokens": 1}}
        )
        assert out.json()["meta_info"]["weight_version"] == "1"

        assert _update(client, tiny_model_dir, "policy-7").json()["success"] is True
        assert client.get("/get_model_info").json()["weight_version"] == "policy-7"
        assert _prefill(client, PROMPT_IDS, 1) == pytest.approx(before, abs=1e-6)

        # Failures leave the served model alone and answer 400 with SGLang's fields.
        missing = _update(client, tmp_path / "nope")
        assert missing.status_code == 400 and missing.json()["success"] is False
        assert missing.json()["error"]["param"] == "model_path"
        wider = tmp_path / "wider"
        config = Qwen3Config(
            vocab_size=277,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            tie_word_embeddings=True,
        )
        Qwen3ForCausalLM(config).save_pretrained(wider)
        mismatch = _update(client, wider)
        assert mismatch.status_code == 400 and "architecture mismatch" in mismatch.json()["message"]
        assert client.get("/get_model_info").json()["weight_version"] == "policy-7"
        assert _prefill(client, PROMPT_IDS, 1) == pytest.approx(before, abs=1e-6)

        _swap_during_paused_stream(url, client, tiny_model_dir, other_model_dir)


def _swap_during_paused_stream(url: str, client: httpx.Client, old_dir: Path, new_dir: Path) -> None:
    """slime's loop: pause, update weights, continue. The running request finishes on the new weights."""
    streamer = Streamer(url, max_new_tokens=40, seed=6, logprobs=True)
    streamer.start()
    streamer.wait_for_tokens(5)
    client.post("/pause_generation", json={"mode": "in_place"})
    try:
        response = _update(client, new_dir, "swapped")
        assert response.json()["success"] is True and response.json()["num_paused_requests"] == 1
    finally:
        client.post("/continue_generation", json={})
    streamer.join(60)
    assert streamer.error is None
    final = streamer.final
    assert final["meta_info"]["weight_version"] == "swapped"
    ids = final["output_ids"]
    sampled = [lp for lp, _, _ in final["meta_info"]["output_token_logprobs"]]
    new = _prefill(client, PROMPT_IDS + ids, len(PROMPT_IDS))
    assert _update(client, old_dir).json()["success"] is True
    old = _prefill(client, PROMPT_IDS + ids, len(PROMPT_IDS))
    # Each token's log-prob is from the weights that sampled it: old ones first, then new ones.
    source = [
        "old" if abs(s - o) < 1e-4 else "new" if abs(s - n) < 1e-4 else "?"
        for s, o, n in zip(sampled, old, new, strict=True)
    ]
    assert "?" not in source, source
    k = source.index("new")
    assert k >= 5 and source == ["old"] * k + ["new"] * (len(source) - k), source


def test_weight_update_request_validation(client: httpx.Client) -> None:
    bad = client.post("/update_weights_from_disk", json={"model_path": 3})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "model_path"
    assert client.post("/update_weights_from_disk", json={}).json()["error"]["param"] == "model_path"
    assert client.get("/flush_cache").status_code == 200
    assert client.post("/flush_cache").json()["success"] is True
