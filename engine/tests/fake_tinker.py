"""A FAKE of the `tinker` SDK surface the Tinker sidecar uses; Tinker's cloud cannot be reached from tests.

It mirrors the real call shapes (ServiceClient().create_lora_training_client(base_model=, rank=); training
client methods returning futures with `.result()`; types.Datum/ModelInput.from_ints/AdamParams) and keeps a
toy model: one weight per token id. `forward_backward` records the datums it got and accumulates, for every
target token, the sum of its advantages; `optim_step` adds learning_rate × that sum to the token's weight.
Saved states live in memory, and also under $FAKE_TINKER_STORE when set (with a forward_backward.jsonl log of
the calls), so another process can load them and a test in another process can read what was sent.
It checks nothing about real Tinker numerics: only what the sidecar sends and that state round-trips.
"""

from __future__ import annotations

import json
import os
import types as _types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ModelInput:
    tokens: list[int]

    @classmethod
    def from_ints(cls, tokens: list[int]) -> ModelInput:
        return cls(list(tokens))

    def to_ints(self) -> list[int]:
        return list(self.tokens)

    @property
    def length(self) -> int:
        return len(self.tokens)


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


types = _types.SimpleNamespace(
    Datum=Datum, ModelInput=ModelInput, AdamParams=AdamParams, ForwardBackwardOutput=ForwardBackwardOutput
)

_STATES: dict[str, dict[str, Any]] = {}
# Every training client made in this process, so in-process tests can look at what was sent.
CLIENTS: list[FakeTrainingClient] = []


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
            assert len(datum.model_input.tokens) == len(targets) == len(advantages) == len(inputs["logprobs"])
            for token, adv in zip(targets, advantages, strict=True):
                self.pending[token] = self.pending.get(token, 0.0) + adv
                loss -= adv * self.weights.get(token, 0.0)
            recorded.append({"model_input": datum.model_input.to_ints(), **inputs})
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
        state = _STATES.get(path)
        folder = _store_dir()
        if state is None and folder:
            file = folder / f"{path.rsplit('/', 1)[-1]}.json"
            state = json.loads(file.read_text()) if file.is_file() else None
        if state is None:
            raise KeyError(f"fake tinker has no state at {path}")
        self.weights = {int(k): v for k, v in state["weights"].items()}
        self.pending = {}
        return _Done({})

    def save_weights_for_sampler(self, name: str, ttl_seconds: int | None = None) -> _Done:
        self.saves += 1
        path = f"tinker://fake-run/sampler_weights/{name}-{self.saves:06d}"
        _STATES[path] = {"weights": {str(k): v for k, v in self.weights.items()}}
        return _Done(SaveWeightsResponse(path))


class ServiceClient:
    def __init__(self, **_: Any) -> None:
        pass

    def create_lora_training_client(self, base_model: str, rank: int = 32, **_: Any) -> _Done:
        # The real SDK returns a future of the training client here too.
        client = FakeTrainingClient(base_model, rank)
        CLIENTS.append(client)
        return _Done(client)
