"""Several LoRA adapters on one base, chosen per request and batched together (lora_serving.py)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from fastapi.testclient import TestClient
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from openclaw_engine.access import EngineAccess, PathRoots
from openclaw_engine.generation_result import GenerationResult, collect
from openclaw_engine.model_runner import GenerationRequest, ModelRunner, TokenStep
from openclaw_engine.sampling import SamplingParams
from openclaw_engine.server import create_app

PROMPT = [72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
SERVED = "tiny"


def _make_adapter(base: Path, out: Path, seed: int, *, r: int = 4, alpha: int = 8, **extra: Any) -> Path:
    """A PEFT adapter as the trainer saves it, with random non-zero lora_B so it changes the output."""
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    config = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=0.0,
        target_modules=TARGETS,
        bias="none",
        task_type="CAUSAL_LM",
        **extra,
    )
    peft_model = get_peft_model(model, config)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.1)
    peft_model.save_pretrained(out)
    return out


def _merge(base: Path, adapter: Path, out: Path) -> Path:
    """The adapter merged into the base (peft merge_and_unload): what an adapter request must match."""
    from peft import PeftModel

    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    merged.save_pretrained(out)
    for src in base.iterdir():
        if src.is_file() and not src.name.endswith(".safetensors"):
            shutil.copy2(src, out / src.name)
    return out


@pytest.fixture(scope="module")
def adapters(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapters")
    return {
        "a": _make_adapter(tiny_model_dir, root / "a", seed=1),
        "b": _make_adapter(tiny_model_dir, root / "b", seed=2, r=8, alpha=16, use_rslora=True),
        "c": _make_adapter(tiny_model_dir, root / "c", seed=3),
    }


@pytest.fixture(scope="module")
def runner(tiny_model_dir: Path) -> ModelRunner:
    return ModelRunner(str(tiny_model_dir), served_model_name=SERVED, max_loras=2)


@pytest.fixture(scope="module")
def client(runner: ModelRunner, adapters: dict[str, Path]) -> TestClient:
    roots = PathRoots.of([], [str(adapters["a"].parent)])
    app = create_app(runner, max_body_bytes=1 << 20, access=EngineAccess(roots=roots))
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture(autouse=True)
def _no_adapters_left(runner: ModelRunner) -> Any:
    yield
    for name in list(runner.lora_adapters):
        runner.unload_lora_adapter(name)


def _req(lora: str | None = None, n: int = 12, temperature: float = 1.0, seed: int = 5) -> GenerationRequest:
    return GenerationRequest(
        PROMPT,
        SamplingParams(max_new_tokens=n, temperature=temperature, seed=seed, ignore_eos=True),
        return_logprob=True,
        logprob_start_len=0,
        lora_name=lora,
    )


def _run(runner: ModelRunner, *reqs: GenerationRequest) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        return list(await asyncio.gather(*(collect(runner.generate(r), r.input_ids) for r in reqs)))

    return asyncio.run(go())


def _prompt_lps(result: GenerationResult) -> list[float]:
    return [lp for lp, _ in result.input_token_logprobs[1:]]


def _load(runner: ModelRunner, name: str, path: Path, version: str | None = None) -> None:
    ok, message = runner.load_lora_adapter(name, str(path), version)
    assert ok, message


def test_base_requests_are_identical_with_adapters_loaded(
    runner: ModelRunner, adapters: dict[str, Path]
) -> None:
    (before,) = _run(runner, _req())
    _load(runner, "a", adapters["a"])
    _load(runner, "b", adapters["b"])
    (after,) = _run(runner, _req())
    assert after.output_ids == before.output_ids
    assert after.output_logprobs == before.output_logprobs  # bit-identical: nothing is added to base rows
    assert after.input_token_logprobs == before.input_token_logprobs
    (adapted,) = _run(runner, _req("a"))
    assert adapted.output_logprobs != before.output_logprobs  # the adapter matters


def test_adapter_matches_the_merged_model(
    runner: ModelRunner, adapters: dict[str, Path], tiny_model_dir: Path, tmp_path: Path
) -> None:
    for name in ("a", "b"):  # b: rank 8 with use_rslora (scale alpha / sqrt(r))
        merged = ModelRunner(str(_merge(tiny_model_dir, adapters[name], tmp_path / f"merged-{name}")))
        _load(runner, name, adapters[name])
        for temperature in (0.0, 1.0):
            (want,) = _run(merged, _req(temperature=temperature))
            (got,) = _run(runner, _req(name, temperature=temperature))
            assert got.output_ids == want.output_ids
            assert got.output_logprobs == pytest.approx(want.output_logprobs, abs=1e-4)
            assert _prompt_lps(got) == pytest.approx(_prompt_lps(want), abs=1e-4)
        merged.scheduler  # noqa: B018 - keeps the merged runner alive until here


def test_mixed_batch_gives_each_request_its_own_numbers(
    runner: ModelRunner, adapters: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(runner, "a", adapters["a"])
    _load(runner, "b", adapters["b"])
    names = [None, "a", "b", "a", None]
    alone = [_run(runner, _req(name, seed=i))[0] for i, name in enumerate(names)]
    seen: list[int] = []
    original = runner.forward_step

    def spy(input_ids: list[int], positions: list[int], batch: Any, keep: list[int]) -> torch.Tensor:
        seen.append(len(batch.segments))
        return original(input_ids, positions, batch, keep)

    monkeypatch.setattr(runner, "forward_step", spy)
    together = _run(runner, *[_req(name, seed=i) for i, name in enumerate(names)])
    assert max(seen) == len(names)  # all five went through one forward pass together
    for one, many in zip(alone, together, strict=True):
        assert many.output_ids == one.output_ids
        assert many.output_logprobs == pytest.approx(one.output_logprobs, abs=1e-5)
        assert _prompt_lps(many) == pytest.approx(_prompt_lps(one), abs=1e-5)


def test_prefix_cache_is_never_shared_across_adapters(runner: ModelRunner, adapters: dict[str, Path]) -> None:
    _load(runner, "a", adapters["a"])
    _load(runner, "b", adapters["b"])
    runner.flush_cache()

    def cached(name: str | None) -> int:
        req = GenerationRequest(PROMPT, SamplingParams(max_new_tokens=2, temperature=0.0), lora_name=name)
        (result,) = _run(runner, req)
        return result.cached_tokens

    assert cached("a") == 0
    assert cached("b") == 0 and cached(None) == 0
    assert cached("a") > 0 and cached("b") > 0 and cached(None) > 0
    _load(runner, "a", adapters["c"])  # replaced: its old KV must not serve the new weights
    assert cached("a") == 0


def test_replace_while_running_reprefills_under_the_new_weights(
    runner: ModelRunner, adapters: dict[str, Path]
) -> None:
    _load(runner, "a", adapters["a"])

    async def go() -> tuple[GenerationResult, GenerationResult]:
        result = GenerationResult(prompt_ids=PROMPT)
        base = asyncio.ensure_future(collect(runner.generate(_req(None, n=30, seed=9)), PROMPT))
        async for event in runner.generate(_req("a", n=30)):
            result.add(event)
            if isinstance(event, TokenStep) and len(result.output_ids) == 5:
                ok, message = await asyncio.to_thread(runner.load_lora_adapter, "a", str(adapters["c"]), None)
                assert ok, message
        return result, await base

    (base_alone,) = _run(runner, _req(None, n=30, seed=9))
    replaced, base = asyncio.run(go())
    assert replaced.weight_version == "2" and len(replaced.output_ids) == 30
    assert base.output_ids == base_alone.output_ids  # other requests are unaffected
    assert base.weight_version == runner.weight_version
    # Tokens after the swap are the new adapter's: the same ids prefilled under c give the same log-probs.
    _load(runner, "c", adapters["c"])
    tail = GenerationRequest(
        PROMPT + replaced.output_ids[:-1],
        SamplingParams(max_new_tokens=0),
        return_logprob=True,
        logprob_start_len=len(PROMPT) + 10,
        lora_name="c",
    )
    (check,) = _run(runner, tail)
    after_swap = [lp for lp, _ in check.input_token_logprobs]  # output tokens 10 .. 28, under c
    assert replaced.output_logprobs[10:29] == pytest.approx(after_swap, abs=1e-4)


def test_model_names_before_any_adapter_serve_the_base(tiny_model_dir: Path) -> None:
    fresh = ModelRunner(str(tiny_model_dir), served_model_name=SERVED)
    client = TestClient(create_app(fresh, max_body_bytes=1 << 20))
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    assert client.post("/v1/chat/completions", json={**chat, "model": "anything"}).status_code == 200
    assert client.post("/v1/chat/completions", json={**chat, "model": f"{SERVED}:x"}).status_code == 404
    assert client.post("/generate", json={"input_ids": PROMPT, "lora_path": "x"}).status_code == 404


def test_adapter_routes(
    client: TestClient, runner: ModelRunner, adapters: dict[str, Path], tmp_path: Path
) -> None:
    loaded = client.post("/load_lora_adapter", json={"lora_name": "a", "lora_path": str(adapters["a"])})
    assert loaded.status_code == 200 and loaded.json()["success"] is True
    assert runner.lora_adapters["a"]["weight_version"] == "1"

    chat = {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 6,
        "temperature": 0,
        "logprobs": True,
    }
    base = client.post("/v1/chat/completions", json=chat).json()
    by_name = client.post("/v1/chat/completions", json={**chat, "model": "a"}).json()
    by_sglang = client.post("/v1/chat/completions", json={**chat, "model": f"{SERVED}:a"}).json()
    served = client.post("/v1/chat/completions", json={**chat, "model": SERVED}).json()
    assert by_name["metadata"]["weight_version"] == "1"
    assert base["metadata"]["weight_version"] == runner.weight_version
    lps = [
        [t["logprob"] for t in r["choices"][0]["logprobs"]["content"]]
        for r in (base, by_name, by_sglang, served)
    ]
    # Equal up to the prefix cache's float rounding (a second request prefills only its uncached tail).
    assert lps[1] == pytest.approx(lps[2], abs=1e-5) and lps[0] == pytest.approx(lps[3], abs=1e-5)
    assert lps[0] != pytest.approx(lps[1], abs=1e-3)

    generate = {
        "input_ids": PROMPT,
        "sampling_params": {"max_new_tokens": 4, "temperature": 0},
        "return_logprob": True,
    }
    gen_a = client.post("/generate", json={**generate, "lora_path": "a"}).json()
    gen_base = client.post("/generate", json={**generate, "lora_path": None}).json()
    assert gen_a["meta_info"]["weight_version"] == "1"
    assert gen_a["meta_info"]["output_token_logprobs"] != gen_base["meta_info"]["output_token_logprobs"]
    assert gen_base["meta_info"]["weight_version"] == runner.weight_version

    # Replace: the version bumps and the output changes.
    replaced = client.post("/load_lora_adapter", json={"lora_name": "a", "lora_path": str(adapters["c"])})
    assert replaced.json()["success"] is True and runner.lora_adapters["a"]["weight_version"] == "2"
    gen_a2 = client.post("/generate", json={**generate, "lora_path": "a"}).json()
    assert gen_a2["meta_info"]["weight_version"] == "2"
    assert gen_a2["meta_info"]["output_token_logprobs"] != gen_a["meta_info"]["output_token_logprobs"]
    explicit = client.post(
        "/load_lora_adapter",
        json={"lora_name": "a", "lora_path": str(adapters["c"]), "weight_version": "step-7"},
    )
    assert explicit.json()["success"] is True
    assert (
        client.post("/generate", json={**generate, "lora_path": "a"}).json()["meta_info"]["weight_version"]
        == "step-7"
    )

    # Listed by /v1/models (after the base) and /get_model_info.
    assert client.post("/load_lora_adapter", json={"lora_name": "b", "lora_path": str(adapters["b"])}).json()[
        "success"
    ]
    cards = client.get("/v1/models").json()["data"]
    assert [c["id"] for c in cards] == [SERVED, "a", "b"]
    assert (
        cards[2]["root"] == str(adapters["b"])
        and cards[2]["parent"] == SERVED
        and cards[2]["object"] == "model"
    )
    info = client.get("/get_model_info").json()["lora_adapters"]
    assert info == {
        "a": {"path": str(adapters["a"].parent / "c"), "weight_version": "step-7"},
        "b": {"path": str(adapters["b"]), "weight_version": "1"},
    }

    # Over --max-loras (2 here): refused naming the limit; a replace does not count.
    over = client.post("/load_lora_adapter", json={"lora_name": "c", "lora_path": str(adapters["c"])})
    assert over.status_code == 400 and over.json()["success"] is False and "2" in over.json()["message"]
    assert "max-loras" in over.json()["message"]

    # Unload, then the name is unknown everywhere.
    assert client.post("/unload_lora_adapter", json={"lora_name": "b"}).json()["success"] is True
    again = client.post("/unload_lora_adapter", json={"lora_name": "b"})
    assert again.status_code == 400 and again.json()["success"] is False
    missing = client.post("/v1/chat/completions", json={**chat, "model": "b"})
    assert missing.status_code == 404
    assert missing.json()["error"] == {
        "message": "The model `b` does not exist.",
        "type": "NotFoundError",
        "param": "model",
        "code": 404,
    }
    assert client.post("/v1/chat/completions", json={**chat, "model": f"{SERVED}:b"}).status_code == 404
    assert client.post("/v1/chat/completions", json={**chat, "model": "never-loaded"}).status_code == 404
    assert client.post("/generate", json={**generate, "lora_path": "b"}).status_code == 404
    assert [c["id"] for c in client.get("/v1/models").json()["data"]] == [SERVED, "a"]


def test_bad_adapters_are_refused(
    client: TestClient, adapters: dict[str, Path], tiny_model_dir: Path
) -> None:
    root = adapters["a"].parent

    def load(name: str, path: Path | str) -> Any:
        return client.post("/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)})

    missing = load("x", root / "nope")
    assert missing.status_code == 400 and missing.json()["success"] is False
    assert "not a directory" in missing.json()["message"]
    outside = load("x", tiny_model_dir)  # not under this app's roots: refused like update_weights_from_disk
    assert outside.status_code == 403 and outside.json()["success"] is False
    assert load("-bad", adapters["a"]).status_code == 400  # name pattern

    dora = root / "dora"
    shutil.copytree(adapters["a"], dora)
    config = json.loads((dora / "adapter_config.json").read_text())
    (dora / "adapter_config.json").write_text(json.dumps({**config, "use_dora": True}))
    assert "DoRA" in load("x", dora).json()["message"]
    (dora / "adapter_config.json").write_text(json.dumps({**config, "bias": "all"}))
    assert "bias" in load("x", dora).json()["message"]

    from safetensors.torch import load_file, save_file

    shapes = root / "shapes"
    shutil.copytree(adapters["a"], shapes)
    tensors = load_file(shapes / "adapter_model.safetensors")
    key = next(k for k in tensors if k.endswith("q_proj.lora_A.weight"))
    tensors[key] = torch.zeros(tensors[key].shape[0], 7)
    save_file(tensors, shapes / "adapter_model.safetensors")
    shaped = load("x", shapes)
    assert shaped.status_code == 400 and "does not match" in shaped.json()["message"]

    renamed = root / "renamed"
    shutil.copytree(adapters["a"], renamed)
    tensors = load_file(renamed / "adapter_model.safetensors")
    save_file(
        {k.replace("q_proj", "qq_proj"): v for k, v in tensors.items()}, renamed / "adapter_model.safetensors"
    )
    assert "not a linear layer" in load("x", renamed).json()["message"]
    assert client.get("/get_model_info").json()["lora_adapters"] == {}


def test_weight_update_keeps_adapters(
    tiny_model_dir: Path, other_model_dir: Path, adapters: dict[str, Path], tmp_path: Path
) -> None:
    runner = ModelRunner(str(tiny_model_dir))
    _load(runner, "a", adapters["a"])
    ok, message, _ = runner.update_weights_from_disk(str(other_model_dir), None)
    assert ok, message
    assert set(runner.lora_adapters) == {"a"}
    merged = ModelRunner(str(_merge(other_model_dir, adapters["a"], tmp_path / "merged")))
    (want,) = _run(merged, _req(temperature=0.0))
    (got,) = _run(runner, _req("a", temperature=0.0))
    assert got.output_ids == want.output_ids
    assert got.output_logprobs == pytest.approx(want.output_logprobs, abs=1e-4)
