"""A FAKE of the `tinker` SDK surface the Tinker sidecar uses; Tinker's cloud cannot be reached from tests.

It mirrors the real call shapes (ServiceClient().create_lora_training_client(base_model=, rank=); training
client methods returning futures with `.result()`; types.Datum/ModelInput.from_ints/AdamParams) and keeps a
toy model: one weight per token id. `forward_backward` records the datums it got and accumulates, for every
target token, the sum of its advantages; `optim_step` adds learning_rate × that sum to the token's weight.
Saved states live in memory, and also under $FAKE_TINKER_STORE when set (with a forward_backward.jsonl log of
the calls), so another process can load them and a test in another process can read what was sent.
It checks nothing about real Tinker numerics: only what the sidecar sends and that state round-trips.

Sampling (ServiceClient().create_sampling_client(base_model= | model_path=), SamplingClient.sample and
compute_logprobs) runs a real tiny torch model (openclaw_engine.tiny_model, seed 0; $FAKE_TINKER_MODEL names
another folder) so token ids and log-probs are real numbers. Sampler weights saved by the training client add
their per-token weights to that model's logits, so what was trained changes what is sampled; every sample call
is recorded (SAMPLE_CALLS, and sample.jsonl under $FAKE_TINKER_STORE) with the sampler path that served it.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import threading
import types as _types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class EncodedTextChunk:
    tokens: list[int]
    type: str = "encoded_text"

    @property
    def length(self) -> int:
        return len(self.tokens)


@dataclass
class ImageChunk:
    data: bytes
    format: str
    expected_tokens: int | None = None
    type: str = "image"

    @property
    def length(self) -> int:
        if self.expected_tokens is None:
            raise ValueError("ImageChunk expected_tokens needs to be set in order to compute the length")
        return self.expected_tokens


@dataclass
class ModelInput:
    """The real shape: a list of chunks (token runs, images)."""

    chunks: list[EncodedTextChunk | ImageChunk]

    @classmethod
    def from_ints(cls, tokens: list[int]) -> ModelInput:
        return cls([EncodedTextChunk(list(tokens))])

    def to_ints(self) -> list[int]:
        if not all(isinstance(chunk, EncodedTextChunk) for chunk in self.chunks):
            raise ValueError("to_ints only supported for ModelInput with EncodedTextChunks")
        return [token for chunk in self.chunks for token in chunk.tokens]  # type: ignore[union-attr]

    @property
    def length(self) -> int:
        return sum(chunk.length for chunk in self.chunks)


@dataclass
class Datum:
    model_input: ModelInput
    loss_fn_inputs: dict[str, Any] = field(default_factory=dict)


@dataclass
class AdamParams:
    learning_rate: float = 0.0001
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-12
    weight_decay: float = 0.0
    grad_clip_norm: float = 0.0


@dataclass
class ForwardBackwardOutput:
    loss_fn_output_type: str
    loss_fn_outputs: list[dict[str, Any]]
    metrics: dict[str, float]


@dataclass
class SaveWeightsResponse:
    path: str


@dataclass
class SamplingParams:
    max_tokens: int | None = None
    seed: int | None = None
    stop: str | list[str] | list[int] | None = None
    temperature: float = 1
    top_k: int = -1
    top_p: float = 1


@dataclass
class SampledSequence:
    stop_reason: str  # "length" | "stop"
    tokens: list[int]
    logprobs: list[float] | None
    topk_logprobs: list[list[tuple[int, float]] | None] | None = None
    sequence_id: str = ""


@dataclass
class SampleResponse:
    sequences: list[SampledSequence]
    prompt_logprobs: list[float | None] | None = None
    topk_prompt_logprobs: list[list[tuple[int, float]] | None] | None = None


types = _types.SimpleNamespace(
    Datum=Datum,
    ModelInput=ModelInput,
    EncodedTextChunk=EncodedTextChunk,
    ImageChunk=ImageChunk,
    AdamParams=AdamParams,
    ForwardBackwardOutput=ForwardBackwardOutput,
    SamplingParams=SamplingParams,
    SampledSequence=SampledSequence,
    SampleResponse=SampleResponse,
)

_STATES: dict[str, dict[str, Any]] = {}
# Every training client made in this process, so in-process tests can look at what was sent.
CLIENTS: list[FakeTrainingClient] = []
# Every sample / compute_logprobs call in this process: which sampler served it, and with what.
SAMPLE_CALLS: list[dict[str, Any]] = []


class _Done:
    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self, timeout: float | None = None) -> Any:
        return self._value


def _store_dir() -> Path | None:
    folder = os.environ.get("FAKE_TINKER_STORE")
    return Path(folder) if folder else None


class FakeTrainingClient:
    def __init__(self, base_model: str, rank: int) -> None:
        self.base_model = base_model
        self.rank = rank
        self.weights: dict[int, float] = {}
        self.pending: dict[int, float] = {}
        self.forward_backward_calls: list[dict[str, Any]] = []
        self.optim_steps: list[AdamParams] = []
        self.saves = 0

    def forward_backward(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> _Done:
        recorded = []
        loss = 0.0
        for datum in data:
            inputs = {k: list(v) for k, v in datum.loss_fn_inputs.items()}
            targets, advantages = inputs["target_tokens"], inputs["advantages"]
            assert datum.model_input.length == len(targets) == len(advantages) == len(inputs["logprobs"])
            for token, adv in zip(targets, advantages, strict=True):
                self.pending[token] = self.pending.get(token, 0.0) + adv
                loss -= adv * self.weights.get(token, 0.0)
            chunks = datum.model_input.chunks
            if all(isinstance(chunk, EncodedTextChunk) for chunk in chunks):
                recorded.append({"model_input": datum.model_input.to_ints(), **inputs})
            else:  # images: each chunk as sent (an image as its format, size and token count)
                shown = [
                    {"tokens": c.tokens}
                    if isinstance(c, EncodedTextChunk)
                    else {"image": c.format, "bytes": len(c.data), "expected_tokens": c.expected_tokens}
                    for c in chunks
                ]
                recorded.append({"model_input_chunks": shown, **inputs})
        call = {"datums": recorded, "loss_fn": loss_fn, "loss_fn_config": loss_fn_config}
        self.forward_backward_calls.append(call)
        folder = _store_dir()
        if folder:  # lets a test in another process read what was sent
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / "forward_backward.jsonl").open("a") as log:
                log.write(json.dumps(call) + "\n")
        return _Done(ForwardBackwardOutput("ArrayRecord", [], {"loss:sum": loss}))

    def optim_step(self, adam_params: AdamParams) -> _Done:
        for token, grad in self.pending.items():
            self.weights[token] = self.weights.get(token, 0.0) + adam_params.learning_rate * grad
        self.pending = {}
        self.optim_steps.append(adam_params)
        return _Done({})

    def save_state(self, name: str, ttl_seconds: int | None = None, overwrite: bool = False) -> _Done:
        if not overwrite and f"tinker://fake-run/weights/{name}" in _STATES:
            raise ValueError(f"a checkpoint named {name} exists (as on Tinker without overwrite=True)")
        path = f"tinker://fake-run/weights/{name}"
        state = {
            "weights": {str(k): v for k, v in self.weights.items()},
            "optim_steps": len(self.optim_steps),
        }
        _STATES[path] = state
        folder = _store_dir()
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.json").write_text(json.dumps(state))
        return _Done(SaveWeightsResponse(path))

    def load_state_with_optimizer(self, path: str) -> _Done:
        state = _load_state(path)
        self.weights = {int(k): v for k, v in state["weights"].items()}
        self.pending = {}
        return _Done({})

    def save_weights_for_sampler(self, name: str, ttl_seconds: int | None = None) -> _Done:
        self.saves += 1
        path = f"tinker://fake-run/sampler_weights/{name}-{self.saves:06d}"
        state = {"weights": {str(k): v for k, v in self.weights.items()}, "base_model": self.base_model}
        _STATES[path] = state
        folder = _store_dir()
        if folder:  # a serving process elsewhere can open a sampling client on it
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{path.rsplit('/', 1)[-1]}.json").write_text(json.dumps(state))
        return _Done(SaveWeightsResponse(path))

    def save_weights_and_get_sampling_client(self, name: str | None = None, **_: Any) -> _Done:
        saved = self.save_weights_for_sampler(name or "sampler").result()
        return _Done(FakeSamplingClient(self.base_model, saved.path, _load_state(saved.path)["weights"]))

    def get_tokenizer(self) -> Any:
        return _tokenizer()


def _load_state(path: str) -> dict[str, Any]:
    state = _STATES.get(path)
    folder = _store_dir()
    if state is None and folder:
        file = folder / f"{path.rsplit('/', 1)[-1]}.json"
        state = json.loads(file.read_text()) if file.is_file() else None
    if state is None:
        raise KeyError(f"fake tinker has no state at {path}")
    return state


# ---------------------------------------------------------------------------------------------- sampling
_MODEL_LOCK = threading.RLock()
_MODEL: dict[str, Any] = {}


def _model_dir() -> Path:
    with _MODEL_LOCK:
        if "dir" not in _MODEL:
            given = os.environ.get("FAKE_TINKER_MODEL")
            if given:
                _MODEL["dir"] = Path(given)
            else:
                from openclaw_engine.tiny_model import make_tiny_model

                folder = tempfile.mkdtemp(prefix="fake-tinker-model-")
                atexit.register(shutil.rmtree, folder, ignore_errors=True)
                _MODEL["dir"] = make_tiny_model(folder, seed=0)
        return _MODEL["dir"]


def _tokenizer() -> Any:
    """The tiny model's tokenizer (built in memory unless $FAKE_TINKER_MODEL names a folder)."""
    from transformers import AutoTokenizer

    from openclaw_engine.tiny_tokenizer import build_tokenizer

    given = _MODEL.get("dir") or os.environ.get("FAKE_TINKER_MODEL")
    return AutoTokenizer.from_pretrained(given) if given else build_tokenizer()


def _model() -> Any:
    folder = _model_dir()
    with _MODEL_LOCK:
        if "model" not in _MODEL:
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_pretrained(folder)
            model.eval()
            _MODEL["model"] = model
            _MODEL["decode"] = _tokenizer().decode
            eos = model.generation_config.eos_token_id
            _MODEL["eos"] = set(eos if isinstance(eos, list) else [eos])
        return _MODEL["model"]


class FakeSamplingClient:
    """The tiny model plus a per-token logit bias (the sampler weights' toy model), sampled locally."""

    def __init__(self, base_model: str, model_path: str | None, weights: dict[str, float]) -> None:
        self.base_model = base_model
        self.model_path = model_path
        self.bias = {int(k): float(v) for k, v in weights.items()}

    def get_base_model(self) -> str:
        return self.base_model

    def get_tokenizer(self) -> Any:
        return _tokenizer()

    def _logits(self, ids: list[int], cache: Any, keep: int) -> tuple[Any, Any]:
        import torch

        model = _model()
        with torch.inference_mode():
            out = model(input_ids=torch.tensor([ids]), cache=cache, use_cache=True, logits_to_keep=keep)
        logits = out.logits[0].float().clone()  # a normal tensor: the bias is added in place
        for token, weight in self.bias.items():
            if token < logits.shape[-1]:
                logits[:, token] += weight
        return logits, out.cache

    def _record(self, call: dict[str, Any]) -> None:
        call = {"model_path": self.model_path, "base_model": self.base_model, **call}
        SAMPLE_CALLS.append(call)
        folder = _store_dir()
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / "sample.jsonl").open("a") as log:
                log.write(json.dumps(call) + "\n")

    def _prompt_logprobs(
        self, ids: list[int], logits: Any, k: int, last_n: int | None
    ) -> tuple[list[float | None], list[list[tuple[int, float]] | None] | None]:
        import torch

        logprobs = torch.log_softmax(logits, dim=-1)  # row r predicts position r + 1, at temperature 1
        first = len(ids) - last_n if last_n is not None else 1
        values: list[float | None] = [None] * len(ids)
        tops: list[list[tuple[int, float]] | None] = [None] * len(ids)
        for pos in range(max(first, 1), len(ids)):
            row = logprobs[pos - 1]
            values[pos] = float(row[ids[pos]].item())
            if k > 0:
                top = torch.topk(row, k)
                tops[pos] = list(zip(top.indices.tolist(), top.values.tolist(), strict=True))
        return values, tops if k > 0 else None

    def sample(
        self,
        prompt: ModelInput,
        num_samples: int,
        sampling_params: SamplingParams,
        include_prompt_logprobs: bool = False,
        topk_prompt_logprobs: int = 0,
        topk_sample_logprobs: int = 0,
        target_prompt_logprobs: Any = None,
        prompt_alt_tokens_k: int = 0,
        prompt_logprobs_last_n: int | None = None,
    ) -> _Done:
        from openclaw_engine import sampling

        assert isinstance(sampling_params, SamplingParams), type(sampling_params)
        assert prompt_logprobs_last_n is None or include_prompt_logprobs
        ids = prompt.to_ints()
        self._record(
            {
                "prompt": ids,
                "num_samples": num_samples,
                "sampling_params": asdict(sampling_params),
                "include_prompt_logprobs": include_prompt_logprobs,
                "topk_prompt_logprobs": topk_prompt_logprobs,
                "topk_sample_logprobs": topk_sample_logprobs,
                "prompt_logprobs_last_n": prompt_logprobs_last_n,
            }
        )
        p = sampling_params
        params = sampling.SamplingParams(temperature=p.temperature, top_p=p.top_p, top_k=p.top_k, seed=p.seed)
        with _MODEL_LOCK:  # one sequence at a time keeps a seeded sample reproducible
            _model()
            decode = _MODEL["decode"]
            # None: the model's EOS; a list replaces it ([] stops on nothing), as on Tinker.
            stop_ids: set[int] = set(_MODEL["eos"]) if p.stop is None else set()
            stop_strings: list[str] = []
            for item in [p.stop] if isinstance(p.stop, str) else list(p.stop or []):
                if isinstance(item, str):
                    stop_strings.append(item)
                else:
                    stop_ids.add(int(item))
            sequences = []
            prompt_lps = prompt_tops = None
            for n in range(num_samples):
                seed = None if p.seed is None else p.seed + n
                generator = sampling.make_generator(seed, _model().device)
                logits, cache = self._logits(ids, None, 0 if include_prompt_logprobs else 1)
                if include_prompt_logprobs and n == 0:
                    prompt_lps, prompt_tops = self._prompt_logprobs(
                        ids, logits, topk_prompt_logprobs, prompt_logprobs_last_n
                    )
                out: list[int] = []
                lps: list[float] = []
                tops: list[list[tuple[int, float]] | None] = []
                reason = "length"
                while len(out) < (p.max_tokens if p.max_tokens is not None else 16):
                    token, logprobs = sampling.sample_token(
                        logits[-1], params, generator, original_logprobs=False
                    )
                    out.append(token)
                    lps.append(float(logprobs[token].item()))
                    top = sampling.top_logprobs(logprobs, topk_sample_logprobs)
                    tops.append([(t, lp) for lp, t in top])
                    if token in stop_ids or any(s in decode(out) for s in stop_strings):
                        reason = "stop"
                        break
                    logits, cache = self._logits([token], cache, 1)
                sequences.append(
                    SampledSequence(
                        reason,
                        out,
                        lps,
                        tops if topk_sample_logprobs > 0 else None,
                        f"fake-{len(SAMPLE_CALLS)}",
                    )
                )
        return _Done(SampleResponse(sequences, prompt_lps, prompt_tops))

    def compute_logprobs(self, prompt: ModelInput, prompt_logprobs_last_n: int | None = None) -> _Done:
        response = self.sample(
            prompt,
            1,
            SamplingParams(max_tokens=1),
            include_prompt_logprobs=True,
            prompt_logprobs_last_n=prompt_logprobs_last_n,
        ).result()
        return _Done(response.prompt_logprobs)


class ServiceClient:
    def __init__(self, **_: Any) -> None:
        pass

    def create_sampling_client(
        self, model_path: str | None = None, base_model: str | None = None, **_: Any
    ) -> _Done:
        if model_path is not None:
            state = _load_state(model_path)  # a path Tinker does not know is an error there too
            return _Done(
                FakeSamplingClient(state.get("base_model", "fake/base"), model_path, state["weights"])
            )
        if base_model is None:
            raise ValueError("either model_path or base_model must be provided")
        return _Done(FakeSamplingClient(base_model, None, {}))

    def create_lora_training_client(self, base_model: str, rank: int = 32, **_: Any) -> _Done:
        # The real SDK returns a future of the training client here too.
        client = FakeTrainingClient(base_model, rank)
        CLIENTS.append(client)
        return _Done(client)
