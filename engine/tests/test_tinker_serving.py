"""The Tinker sidecar as the policy engine, against the FAKE Tinker SDK (tests/fake_tinker.py).

The fake samples from the tiny model (real token ids and log-probs), so the sidecar's answers are compared
with the reference engine's `ModelRunner` on the same model and seed; trained sampler weights bias the fake's
logits, so a swap to an export shows in what is sampled.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).parent))
import fake_tinker  # noqa: E402

from openclaw_engine.access import EngineAccess, PathRoots  # noqa: E402
from openclaw_engine.generation_result import collect  # noqa: E402
from openclaw_engine.model_runner import GenerationRequest, ModelRunner  # noqa: E402
from openclaw_engine.sampling import SamplingParams  # noqa: E402
from openclaw_engine.tinker_runner import TinkerRunner  # noqa: E402
from openclaw_engine.tinker_sidecar.app import create_app  # noqa: E402
from openclaw_engine.tinker_sidecar.trainer import TinkerTrainer  # noqa: E402
from openclaw_engine.tiny_tokenizer import CONTEXT_LENGTH  # noqa: E402

# Checkpoints of these tests live in pytest's temporary folders.
TEMP_ROOTS = EngineAccess(roots=PathRoots.of([tempfile.gettempdir()], []))

MESSAGES = [{"role": "user", "content": "Say something."}]
B = 66  # the byte-level token for "B"


@pytest.fixture
def served(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, TinkerRunner]]:
    monkeypatch.setenv("FAKE_TINKER_MODEL", str(tiny_model_dir))
    fake_tinker._MODEL.setdefault("dir", tiny_model_dir)
    trainer = TinkerTrainer(fake_tinker, base_model="fake/base", lora_rank=8)
    runner = TinkerRunner(
        fake_tinker,
        service=trainer.service,
        base_model="fake/base",
        tokenizer=AutoTokenizer.from_pretrained(tiny_model_dir),
        tokenizer_path=str(tiny_model_dir),
    )
    with TestClient(create_app(trainer, runner, access=TEMP_ROOTS)) as client:
        yield client, runner


@pytest.fixture(scope="module")
def reference(tiny_model_dir: Path) -> ModelRunner:
    return ModelRunner(str(tiny_model_dir))


def chat(client: TestClient, **extra: object) -> dict:
    body = {"messages": MESSAGES, "max_tokens": 12, "seed": 7, "logprobs": True, "return_token_ids": True}
    response = client.post("/v1/chat/completions", json={**body, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def stream_chunks(client: TestClient, body: dict) -> list[dict]:
    chunks = []
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    for line in lines[:-1]:
        chunks.append(json.loads(line.removeprefix("data: ")))
    return chunks


def test_chat_before_training_samples_the_base_model_like_the_reference_engine(served, reference) -> None:
    client, runner = served
    out = chat(client)
    choice = out["choices"][0]
    ids = choice["token_ids"]
    assert out["usage"]["completion_tokens"] == len(ids) > 0
    assert out["metadata"]["weight_version"] == "0"
    assert fake_tinker.SAMPLE_CALLS[-1]["model_path"] is None  # the base model's sampler
    # Same tiny model, same seed, same sampler: the reference engine draws the same tokens.
    prompt = runner.encode(
        runner.apply_chat_template(MESSAGES, tools=None, add_generation_prompt=True, template_kwargs={})
    )
    request = GenerationRequest(
        input_ids=prompt, sampling=SamplingParams(max_new_tokens=12, seed=7), return_logprob=True
    )
    expected = asyncio.run(collect(reference.generate(request), prompt))
    assert ids == expected.output_ids
    assert [item["logprob"] for item in choice["logprobs"]["content"]] == pytest.approx(
        expected.output_logprobs, abs=1e-4
    )
    assert choice["message"]["content"] == expected.text
    assert choice["finish_reason"] == expected.finish_reason["type"]


def test_streaming_chat_carries_the_same_tokens(served) -> None:
    client, _ = served
    whole = chat(client)["choices"][0]
    body = {"messages": MESSAGES, "max_tokens": 12, "seed": 7, "logprobs": True, "return_token_ids": True}
    chunks = stream_chunks(client, body)
    ids = [t for c in chunks for choice in c["choices"] for t in choice.get("token_ids", [])]
    text = "".join(choice["delta"].get("content", "") for c in chunks for choice in c["choices"])
    logprobs = [
        item["logprob"]
        for c in chunks
        for choice in c["choices"]
        for item in ((choice.get("logprobs") or {}).get("content") or [])
    ]
    assert ids == whole["token_ids"]
    assert text == whole["message"]["content"]
    assert logprobs == pytest.approx([item["logprob"] for item in whole["logprobs"]["content"]])
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["finish_reason"]
    assert chunks[-1]["metadata"]["weight_version"] == "0"


def test_generate_scores_prompts_like_the_reference_engine(served, reference) -> None:
    client, runner = served
    body = {
        "text": "the cat sat on the mat",
        "sampling_params": {"max_new_tokens": 0},
        "return_logprob": True,
        "logprob_start_len": 0,
        "top_logprobs_num": 3,
    }
    got = client.post("/generate", json=body)
    assert got.status_code == 200, got.text
    meta = got.json()["meta_info"]
    prompt = runner.encode("the cat sat on the mat", add_special_tokens=True)
    request = GenerationRequest(
        input_ids=prompt,
        sampling=SamplingParams(max_new_tokens=0),
        return_logprob=True,
        logprob_start_len=0,
        top_logprobs_num=3,
    )
    expected = asyncio.run(collect(reference.generate(request), prompt))
    assert [t for _, t, _ in meta["input_token_logprobs"]] == prompt
    assert meta["input_token_logprobs"][0][0] is None
    want = [lp for lp, _ in expected.input_token_logprobs[1:]]
    assert [lp for lp, _, _ in meta["input_token_logprobs"][1:]] == pytest.approx(want, abs=1e-4)
    assert [[t for _, t, _ in row] for row in meta["input_top_logprobs"][1:]] == [
        [t for _, t in row] for row in expected.prompt_logprobs.top[1:]
    ]
    # Without top-k, scoring goes through compute_logprobs, from logprob_start_len on.
    body = {**body, "top_logprobs_num": 0, "logprob_start_len": 3}
    meta = client.post("/generate", json=body).json()["meta_info"]
    assert [lp for lp, _, _ in meta["input_token_logprobs"]] == pytest.approx(want[2:], abs=1e-4)
    assert fake_tinker.SAMPLE_CALLS[-1]["prompt_logprobs_last_n"] == len(prompt) - 3


def test_generate_samples_with_stop_token_ids(served) -> None:
    client, runner = served
    first = client.post(
        "/generate",
        json={"input_ids": [10, 20, 30], "sampling_params": {"max_new_tokens": 6, "temperature": 0}},
    ).json()
    stop_at = first["output_ids"][2]
    out = client.post(
        "/generate",
        json={
            "input_ids": [10, 20, 30],
            "sampling_params": {"max_new_tokens": 6, "temperature": 0, "stop_token_ids": [stop_at]},
            "return_logprob": True,
        },
    ).json()
    index = first["output_ids"].index(stop_at)
    assert out["output_ids"] == first["output_ids"][: index + 1]
    assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop_at}
    # Tinker got the full stop list: the asked id plus the EOS ids (a list replaces its implicit EOS).
    sent = fake_tinker.SAMPLE_CALLS[-1]["sampling_params"]
    assert sent["stop"] == sorted({stop_at, *runner.eos_token_ids})
    assert sent["temperature"] == 0 and sent["max_tokens"] == 6


def test_train_export_and_update_switch_the_sampler(served, tmp_path: Path) -> None:
    client, runner = served
    before = chat(client, temperature=0, max_tokens=6)["choices"][0]["token_ids"]
    assert before != [B] * 6

    # One step that rewards "B" strongly: the fake adds lr × Σ advantages to the token's logit.
    sample = {
        "tokens": [10, 20, 30] + [B] * 20,
        "response_length": 20,
        "loss_mask": [1] * 20,
        "rollout_log_probs": [-1.0] * 20,
        "reward": 1.0,
    }
    step = {"step_id": "s1", "samples": [sample], "loss": {"method": "grpo"}, "optimizer": {"lr": 1.0}}
    response = client.post("/train_step", json=step)
    assert response.status_code == 200, response.text
    # Training alone does not change what is served.
    assert chat(client, temperature=0, max_tokens=6)["choices"][0]["token_ids"] == before

    export = tmp_path / "exports" / "v1"
    exported = client.post("/export_for_serving", json={"path": str(export)}).json()
    update = client.post(
        "/update_weights_from_disk", json={"model_path": str(export), "weight_version": "v1"}
    )
    assert update.status_code == 200, update.text
    assert update.json()["success"] is True and update.json()["weight_version"] == "v1"
    info = client.get("/get_model_info").json()
    assert info["weight_version"] == "v1"
    assert info["sampler_path"] == exported["model_path"] and info["model_path"] == str(export)

    after = chat(client, temperature=0, max_tokens=6)
    assert after["choices"][0]["token_ids"] == [B] * 6
    assert after["metadata"]["weight_version"] == "v1"
    assert fake_tinker.SAMPLE_CALLS[-1]["model_path"] == exported["model_path"]

    # Without a weight_version the version is bumped, as the reference engine does.
    client.post("/update_weights_from_disk", json={"model_path": str(export)}).raise_for_status()
    assert client.get("/get_model_info").json()["weight_version"] == "v1+1"


def test_update_refuses_folders_that_are_not_tinker_exports(
    served, tiny_model_dir: Path, tmp_path: Path
) -> None:
    client, _ = served
    hf_folder = client.post("/update_weights_from_disk", json={"model_path": str(tiny_model_dir)})
    assert hf_folder.status_code == 400
    body = hf_folder.json()
    assert body["success"] is False and "tinker-sampler.json" in body["message"]
    assert body["error"]["type"] == "invalid_request_error" and body["error"]["param"] == "model_path"

    missing = client.post("/update_weights_from_disk", json={"model_path": str(tmp_path / "nope")})
    assert missing.status_code == 400 and "not a directory" in missing.json()["message"]

    unknown = tmp_path / "unknown"
    unknown.mkdir()
    record = {"model_path": "tinker://fake-run/sampler_weights/never-saved", "base_model": "fake/base"}
    (unknown / "tinker-sampler.json").write_text(json.dumps(record))
    refused = client.post("/update_weights_from_disk", json={"model_path": str(unknown)})
    assert refused.status_code == 400 and "could not open a sampling client" in refused.json()["message"]

    other_base = tmp_path / "other-base"
    other_base.mkdir()
    (other_base / "tinker-sampler.json").write_text(json.dumps({**record, "base_model": "other/model"}))
    mismatch = client.post("/update_weights_from_disk", json={"model_path": str(other_base)})
    assert mismatch.status_code == 400 and "other/model" in mismatch.json()["message"]
    assert client.get("/get_model_info").json()["weight_version"] == "0"


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/chat/completions", {"max_tokens": 4}, "messages"),
        ("/v1/chat/completions", {"messages": MESSAGES, "min_p": 0.1}, "min_p"),
        ("/v1/chat/completions", {"messages": MESSAGES, "temperature": "hot"}, "temperature"),
        ("/generate", {"input_ids": [10, 999999]}, "input_ids[1]"),
        (
            "/generate",
            {"input_ids": [10, 20], "return_logprob": True, "logprob_start_len": 5},
            "logprob_start_len",
        ),
        ("/update_weights_from_disk", {"model_path": ""}, "model_path"),
    ],
)
def test_bad_requests_get_openai_shaped_errors(served, path: str, body: dict, param: str) -> None:
    client, _ = served
    response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param and error["message"]


def test_tokenizer_routes_and_model_info(served, tiny_model_dir: Path) -> None:
    client, runner = served
    ids = client.post("/tokenize", json={"prompt": "hello there"}).json()["tokens"]
    assert ids == runner.encode("hello there")
    assert client.post("/detokenize", json={"tokens": ids}).json()["text"] == "hello there"
    rendered = client.post("/tokenize", json={"messages": MESSAGES}).json()
    assert rendered["prompt"].endswith("<|im_start|>assistant\n")
    info = client.get("/get_model_info").json()
    assert info["backend"] == "tinker" and info["base_model"] == "fake/base" and info["sampler_path"] is None
    assert info["tokenizer_path"] == str(tiny_model_dir) and info["max_context_length"] == CONTEXT_LENGTH
    assert client.get("/health").json()["status"] == "ok"
    assert client.get("/v1/models").json()["data"][0]["id"] == "fake/base"
    assert client.get("/trainer_info").json()["backend"] == "tinker"


def test_paused_generation_waits_for_continue(served) -> None:
    client, _ = served
    assert client.post("/pause_generation", json={"mode": "in_place"}).json()["success"] is True
    done: dict[str, object] = {}

    def request() -> None:
        done["response"] = client.post(
            "/generate", json={"input_ids": [10, 20], "sampling_params": {"max_new_tokens": 2}}
        )

    thread = threading.Thread(target=request)
    thread.start()
    time.sleep(0.5)
    assert "response" not in done
    assert client.post("/continue_generation", json={}).json()["success"] is True
    thread.join(10)
    assert done["response"].status_code == 200  # type: ignore[union-attr]


def test_the_cli_serves_with_the_sdks_tokenizer(tiny_model_dir: Path, tmp_path: Path) -> None:
    """`python -m openclaw_engine.tinker_sidecar` with the fake SDK and no --tokenizer."""
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).parent),
        "FAKE_TINKER_MODEL": str(tiny_model_dir),
        "FAKE_TINKER_STORE": str(tmp_path / "fake-cloud"),
    }
    cmd = [sys.executable, "-m", "openclaw_engine.tinker_sidecar", "--sdk-module", "fake_tinker"]
    cmd += ["--base-model", "fake/base", "--port", "0", "--weight-version", "base"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("ready "), line
        url = line.removeprefix("ready ")
        out = httpx.post(
            f"{url}/v1/chat/completions",
            json={"messages": MESSAGES, "max_tokens": 4, "return_token_ids": True},
            timeout=60,
        ).json()
        assert out["metadata"]["weight_version"] == "base" and len(out["choices"][0]["token_ids"]) <= 4
        calls = (tmp_path / "fake-cloud" / "sample.jsonl").read_text().splitlines()
        assert json.loads(calls[-1])["model_path"] is None
    finally:
        proc.terminate()
        proc.wait(15)


def test_stop_strings_go_to_tinker_and_trim_the_text(served) -> None:
    client, _ = served
    greedy = {"input_ids": [10, 20, 30], "sampling_params": {"max_new_tokens": 8, "temperature": 0}}
    text = client.post("/generate", json=greedy).json()["text"]
    stop = text[3:5]
    assert len(stop) == 2
    body = {**greedy, "sampling_params": {**greedy["sampling_params"], "stop": [stop]}}
    out = client.post("/generate", json=body).json()
    assert fake_tinker.SAMPLE_CALLS[-1]["sampling_params"]["stop"] == [stop]
    assert out["text"] == text[: text.index(stop)]
    assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop}


def test_abort_ends_a_waiting_request(served) -> None:
    client, runner = served
    client.post("/pause_generation", json={"mode": "in_place"}).raise_for_status()
    done: dict[str, httpx.Response] = {}
    thread = threading.Thread(
        target=lambda: done.update(
            response=client.post(
                "/generate", json={"input_ids": [10, 20], "sampling_params": {"max_new_tokens": 2}}
            )
        )
    )
    thread.start()
    deadline = time.monotonic() + 5
    while runner.gate.active_requests == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.post("/abort_request", json={"abort_all": True}).json()["num_aborted"] == 1
    thread.join(10)
    client.post("/continue_generation", json={}).raise_for_status()
    assert done["response"].json()["meta_info"]["finish_reason"]["type"] == "abort"


def test_lora_adapter_loads_are_refused(served, tmp_path: Path) -> None:
    client, runner = served
    answer = client.post("/load_lora_adapter", json={"lora_name": "a", "lora_path": str(tmp_path)})
    assert answer.status_code == 400 and answer.json()["success"] is False
    assert "Tinker" in answer.json()["message"]
    assert client.post("/unload_lora_adapter", json={"lora_name": "a"}).status_code == 400
    assert runner.lora_adapters == {}
    assert runner.lora_used is False  # any model name still serves the base
