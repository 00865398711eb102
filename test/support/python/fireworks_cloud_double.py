"""A DOUBLE of Fireworks' cloud behind the real `fireworks.training.sdk` surface, for tests only.

Fireworks cannot be reached from the test machines, so this module replaces the network and nothing else:
the data types (`Datum`, `ModelInput`, `TensorData`, `AdamParams`, `TrainerJobConfig`, `DeploymentConfig`, the
SDK's response types) and the `WeightSyncer` are the real SDK's, re-exported; the trainer job manager, the
deployment manager and the service/training clients are stand-ins whose "trainer" is a tiny local model (one
logit per token id, trained with torch's AdamW), so custom losses really train and checkpoints really restore.
engine/tests/test_fireworks_sidecar_sdk.py checks every call made on these stand-ins against the real classes'
signatures and types.

The deployment serves `/inference/v1/completions` over real HTTP (SSE, the shapes the SDK's
`DeploymentSampler` parses: `raw_output.completion_token_ids`, `logprobs.content[]` with `token_id`,
`logprob`, `sampling_logprob`, `top_logprobs`), on the loopback port of the `inference_url` the
DeploymentManager is given, sampling from the snapshot it last hot-loaded (the base model's logits, all
zeros, before that). Each completion it samples is appended to `<store>/completions.jsonl`.

The cloud's state (trainer jobs, saved states, snapshots, the deployment's loaded snapshot) lives in the
folder FIREWORKS_DOUBLE_STORE, so it outlives a sidecar restart as Fireworks' does; each call is appended to
`<store>/calls.jsonl`, and `CALLS` keeps the call objects of this process for signature checks.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import torch
from fireworks.training.sdk import (  # noqa: F401  (the real SDK's types, re-exported)
    AdamParams,
    Datum,
    DeploymentConfig,
    DeploymentSampler,
    ForwardBackwardOutput,
    ModelInput,
    OptimStepResponse,
    SaveSamplerResult,
    TensorData,
    TrainerJobConfig,
    TrainerServiceEndpoint,
    WeightSyncer,
    types,
)
from fireworks.training.sdk.client import _validate_checkpoint_ref

VOCAB = 4096
ACCOUNT = "double-account"

# (real class name, method, args, kwargs) of every call made in this process.
CALLS: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = []


def _store() -> Path:
    path = Path(os.environ.get("FIREWORKS_DOUBLE_STORE", ".fireworks-double"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _json_safe(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, Datum):
        return {
            "model_input": value.model_input.to_ints(),
            **{k: v.data for k, v in value.loss_fn_inputs.items()},
        }
    if hasattr(value, "model_dump"):
        return _json_safe(value.model_dump())
    return type(value).__name__


def _record(cls: str, method: str, *args: Any, **kwargs: Any) -> None:
    CALLS.append((cls, method, args, kwargs))
    line = {"cls": cls, "method": method, "args": _json_safe(list(args)), "kwargs": _json_safe(kwargs)}
    with (_store() / "calls.jsonl").open("a") as f:
        f.write(json.dumps(line) + "\n")


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


# ------------------------------------------------------------------------------------------ control plane
class TrainerJobManager:
    """Stand-in for `TrainerJobManager`: jobs are folders of the store."""

    def __init__(self, api_key: str, base_url: str = "https://api.fireworks.ai", **kwargs: Any) -> None:
        _record("TrainerJobManager", "__init__", api_key=api_key, base_url=base_url, **kwargs)

    def resolve_training_profile(self, training_shape_id: str, **kwargs: Any) -> Any:
        _record("TrainerJobManager", "resolve_training_profile", training_shape_id, **kwargs)

        class Profile:
            training_shape = f"accounts/fireworks/trainingShapes/{training_shape_id}/versions/1"
            deployment_shape = f"accounts/fireworks/deploymentShapes/{training_shape_id}-rft/versions/1"
            supports_lora = True

        return Profile()

    def create_and_wait(self, config: TrainerJobConfig, **kwargs: Any) -> TrainerServiceEndpoint:
        _record("TrainerJobManager", "create_and_wait", config, **kwargs)
        job_id = f"job-{uuid.uuid4().hex[:12]}"
        (_store() / "jobs").mkdir(exist_ok=True)
        (_store() / "jobs" / f"{job_id}.json").write_text(json.dumps({"base_model": config.base_model}))
        return self._endpoint(job_id)

    def reconnect_and_wait(self, job_id: str, **kwargs: Any) -> TrainerServiceEndpoint:
        _record("TrainerJobManager", "reconnect_and_wait", job_id, **kwargs)
        if not (_store() / "jobs" / f"{job_id}.json").is_file():
            raise RuntimeError(f"no trainer job {job_id}")
        return self._endpoint(job_id)

    @staticmethod
    def _endpoint(job_id: str) -> TrainerServiceEndpoint:
        return TrainerServiceEndpoint(
            job_name=f"accounts/{ACCOUNT}/rlorTrainerJobs/{job_id}",
            job_id=job_id,
            base_url=f"https://double.invalid/training/{job_id}",
        )


class DeploymentManager:
    """Stand-in for `DeploymentManager`: the deployment's loaded snapshot is a file of the store."""

    def __init__(
        self,
        api_key: str,
        base_url: str = "https://api.fireworks.ai",
        inference_url: str | None = None,
        **kwargs: Any,
    ) -> None:
        _record(
            "DeploymentManager",
            "__init__",
            api_key=api_key,
            base_url=base_url,
            inference_url=inference_url,
            **kwargs,
        )
        self.account_id = ACCOUNT
        self.api_key = api_key
        self.inference_url = (inference_url or base_url).rstrip("/")
        _serve_deployments(self.inference_url)
        self.last_hotload_error_message: str | None = None

    def create_or_get(self, config: DeploymentConfig, force_recreate: bool = False) -> Any:
        _record("DeploymentManager", "create_or_get", config, force_recreate=force_recreate)
        return config

    def wait_for_ready(self, deployment_id: str, **kwargs: Any) -> Any:
        _record("DeploymentManager", "wait_for_ready", deployment_id, **kwargs)
        return None

    def _loaded_file(self, deployment_id: str) -> Path:
        return _store() / f"deployment-{deployment_id}.json"

    def hotload_check_status(self, deployment_id: str, base_model: str, timeout: int = 30) -> dict[str, Any]:
        _record(
            "DeploymentManager", "hotload_check_status", deployment_id=deployment_id, base_model=base_model
        )
        file = self._loaded_file(deployment_id)
        current = json.loads(file.read_text())["identity"] if file.is_file() else None
        return {"replicas": [{"current_snapshot_identity": current, "readiness": True}]}

    def hotload_and_wait(
        self, deployment_id: str, base_model: str, snapshot_identity: str, **kwargs: Any
    ) -> bool:
        _record(
            "DeploymentManager",
            "hotload_and_wait",
            deployment_id=deployment_id,
            base_model=base_model,
            snapshot_identity=snapshot_identity,
            **kwargs,
        )
        if not (_store() / "snapshots" / f"{snapshot_identity}.pt").is_file():
            self.last_hotload_error_message = f"no snapshot {snapshot_identity}"
            return False
        # Renamed into place: a completion in flight reads this file, and must never see it half written.
        file = self._loaded_file(deployment_id)
        partial = file.with_suffix(".json.partial")
        partial.write_text(json.dumps({"identity": snapshot_identity}))
        os.replace(partial, file)
        return True

    def warmup(self, model: str, max_retries: int = 30, retry_interval_s: float = 10.0) -> bool:
        _record(
            "DeploymentManager", "warmup", model, max_retries=max_retries, retry_interval_s=retry_interval_s
        )
        return True


# ------------------------------------------------------------------------------------------ training
class _TinyPolicy:
    """The trainer's model: log π(token) = log_softmax(θ)[token], θ one logit per token id."""

    def __init__(self) -> None:
        self.theta = torch.zeros(VOCAB, dtype=torch.float32, requires_grad=True)
        self.optimizer = torch.optim.AdamW([self.theta])

    def target_logprobs(self, datum: Datum) -> torch.Tensor:
        targets = torch.tensor(datum.loss_fn_inputs["target_tokens"].data, dtype=torch.long) % VOCAB
        return torch.log_softmax(self.theta, dim=-1)[targets]

    def state(self) -> dict[str, Any]:
        return {"theta": self.theta.detach().clone(), "optimizer": self.optimizer.state_dict()}

    def load(self, state: dict[str, Any], with_optimizer: bool) -> None:
        with torch.no_grad():
            self.theta.copy_(state["theta"])
        self.optimizer = torch.optim.AdamW([self.theta])
        if with_optimizer:
            self.optimizer.load_state_dict(state["optimizer"])


class FiretitanTrainingClient:
    """Stand-in for `FiretitanTrainingClient` (the methods the sidecar calls)."""

    def __init__(self, job_id: str, base_model: str, lora_rank: int) -> None:
        self.job_id = job_id
        self.base_model = base_model
        self.lora_rank = lora_rank
        self.run_id = f"run-{uuid.uuid4().hex}"
        self.policy = _TinyPolicy()

    def forward_backward_custom(self, data: list[Datum], loss_fn: Any, **kwargs: Any) -> Future[Any]:
        """As the SDK: forward for the target log-probs, the user's loss on detached copies, then the
        gradient w.r.t. those log-probs sent back through the model (here: chained into θ)."""
        _record("FiretitanTrainingClient", "forward_backward_custom", data, loss_fn, **kwargs)
        live = [self.policy.target_logprobs(d) for d in data]
        leaves = [lp.detach().clone().requires_grad_(True) for lp in live]
        loss, metrics = loss_fn(data, leaves)
        loss.backward()
        torch.autograd.backward(live, [leaf.grad for leaf in leaves])
        outputs = [{"logprobs": TensorData.from_torch(lp.detach())} for lp in live]
        return _done(
            ForwardBackwardOutput("TorchLossReturn", outputs, {k: float(v) for k, v in metrics.items()})
        )

    def optim_step(self, adam_params: AdamParams, **kwargs: Any) -> Future[Any]:
        _record("FiretitanTrainingClient", "optim_step", adam_params, **kwargs)
        theta = self.policy.theta
        grad_norm = float(torch.nn.utils.clip_grad_norm_([theta], adam_params.grad_clip_norm or float("inf")))
        for group in self.policy.optimizer.param_groups:
            group.update(
                lr=adam_params.learning_rate,
                betas=(adam_params.beta1, adam_params.beta2),
                eps=adam_params.eps,
                weight_decay=adam_params.weight_decay,
            )
        self.policy.optimizer.step()
        self.policy.optimizer.zero_grad(set_to_none=True)
        return _done(OptimStepResponse(metrics={"grad_norm": grad_norm}))

    def _save(self, folder: str, name: str) -> Path:
        path = _store() / folder / f"{name}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: the deployment may be reading the file while a step saves it.
        partial = path.with_suffix(".pt.partial")
        torch.save(self.policy.state(), partial)
        os.replace(partial, path)
        return path

    def save_state(
        self, name: str, ttl_seconds: int | None = None, overwrite: bool = False, **kw: Any
    ) -> Any:
        _record(
            "FiretitanTrainingClient", "save_state", name, ttl_seconds=ttl_seconds, overwrite=overwrite, **kw
        )
        _validate_checkpoint_ref(name)
        if (_store() / "states" / f"{name}.pt").exists():
            raise ValueError(f"checkpoint {name} exists (the SDK does not overwrite)")
        self._save("states", name)
        return _done(types.SaveWeightsResponse(path=f"{ACCOUNT}/{self.run_id}/{name}"))

    def load_state_with_optimizer(self, path: str, weights_access_token: str | None = None) -> Future[Any]:
        _record("FiretitanTrainingClient", "load_state_with_optimizer", path)
        name = _validate_checkpoint_ref(path).split("/")[-1]
        self.policy.load(torch.load(_store() / "states" / f"{name}.pt"), with_optimizer=True)
        return _done(types.LoadWeightsResponse(path=path))

    def save_weights_for_sampler_ext(self, name: str, checkpoint_type: str | None = None, **kw: Any) -> Any:
        _record(
            "FiretitanTrainingClient",
            "save_weights_for_sampler_ext",
            name,
            checkpoint_type=checkpoint_type,
            **kw,
        )
        snapshot = f"{name}-{self.run_id[-8:]}"
        self._save("snapshots", snapshot)
        return SaveSamplerResult(path=f"{ACCOUNT}/{self.run_id}/{snapshot}", snapshot_name=snapshot)

    def theta(self) -> list[float]:
        return self.policy.theta.detach().tolist()


class FiretitanServiceClient:
    """Stand-in for `FiretitanServiceClient` pointed at a trainer job's endpoint."""

    def __init__(self, *args: Any, api_key: str | None = None, **kwargs: Any) -> None:
        _record("FiretitanServiceClient", "__init__", *args, api_key=api_key, **kwargs)
        self.job_id = str(kwargs.get("base_url", "")).rsplit("/", 1)[-1]

    def create_lora_training_client(self, base_model: str, rank: int = 32, **kwargs: Any) -> Any:
        _record(
            "FiretitanServiceClient",
            "create_lora_training_client",
            base_model=base_model,
            rank=rank,
            **kwargs,
        )
        return FiretitanTrainingClient(self.job_id, base_model, rank)

    def create_training_client(self, base_model: str | None = None, **kwargs: Any) -> Any:
        _record("FiretitanServiceClient", "create_training_client", base_model=base_model, **kwargs)
        return FiretitanTrainingClient(self.job_id, base_model or "", int(kwargs.get("lora_rank", 0)))


# ------------------------------------------------------------------------------------------ inference
_SERVERS: dict[int, ThreadingHTTPServer] = {}
DEPLOYMENT_MODEL_PREFIX = f"accounts/{ACCOUNT}/deployments/"


def _deployment_theta(deployment_id: str) -> torch.Tensor:
    """The logits the deployment serves: its hot-loaded snapshot's, else the base model's (zeros)."""
    file = _store() / f"deployment-{deployment_id}.json"
    if file.is_file():
        identity = json.loads(file.read_text())["identity"]
        return torch.load(_store() / "snapshots" / f"{identity}.pt")["theta"].detach().float()
    return torch.zeros(VOCAB)


def _completion(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One completion as the deployment answers it: the final choice and the per-token logprob entries."""
    model = body.get("model")
    if not isinstance(model, str) or not model.startswith(DEPLOYMENT_MODEL_PREFIX):
        raise ValueError(f"model {model!r} is not a deployment of {ACCOUNT}")
    prompt = body.get("prompt")
    if not isinstance(prompt, list) or not all(isinstance(t, int) for t in prompt):
        raise ValueError("prompt must be token ids here (token in, token out)")
    if body.get("raw_output") is not True:
        raise ValueError("raw_output must be true (the completion's token ids come back there)")
    max_tokens, temperature = int(body.get("max_tokens", 16)), float(body.get("temperature", 1.0))
    k = int(body.get("top_logprobs") or 0)
    raw = torch.log_softmax(_deployment_theta(model[len(DEPLOYMENT_MODEL_PREFIX) :]), dim=-1)
    behaviour = raw if temperature in (0.0, 1.0) else torch.log_softmax(raw / temperature, dim=-1)
    generator = torch.Generator().manual_seed(
        int(body["seed"]) if "seed" in body else uuid.uuid4().int % 2**31
    )
    sampled: list[int] = []
    for _ in range(max_tokens):
        if temperature == 0.0:
            sampled.append(int(torch.argmax(raw)))
        else:
            sampled.append(int(torch.multinomial(behaviour.exp(), 1, generator=generator)))
    echo = bool(body.get("echo"))
    scored = (list(prompt) if echo else []) + sampled
    top = torch.topk(raw, k) if k > 0 else None

    def entry(token: int, is_sampled: bool) -> dict[str, Any]:
        e: dict[str, Any] = {
            "token_id": token,
            # Ids past the tiny model's vocabulary share a logit, as in the trainer (`% VOCAB`).
            "logprob": float(raw[token % VOCAB]),
            "sampling_logprob": float(behaviour[token % VOCAB]) if is_sampled else None,
        }
        if top is not None:
            e["top_logprobs"] = [
                {"token_id": int(t), "logprob": float(lp)}
                for lp, t in zip(top.values, top.indices, strict=True)
            ]
        return e

    entries = [entry(t, i >= len(scored) - len(sampled)) for i, t in enumerate(scored)]
    with (_store() / "completions.jsonl").open("a") as f:
        f.write(json.dumps({"model": model, "prompt": prompt, "completion_token_ids": sampled}) + "\n")
    choice = {
        "index": 0,
        "text": "",
        "finish_reason": "length",
        "raw_output": {"prompt_token_ids": list(prompt), "completion_token_ids": scored},
    }
    return choice, entries


class _DeploymentHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        if self.path != "/inference/v1/completions":
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        try:
            choice, entries = _completion(body)
        except ValueError as error:
            data = json.dumps({"error": {"message": str(error)}}).encode()
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        # As the real stream: a chunk per token with its logprob entry, then finish_reason and raw_output.
        for e in entries:
            chunk = {"choices": [{"index": 0, "text": "", "logprobs": {"content": [e]}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        usage = {"prompt_tokens": len(body["prompt"]), "completion_tokens": len(entries), "total_tokens": 0}
        self.wfile.write(f"data: {json.dumps({'choices': [choice], 'usage': usage})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


def _serve_deployments(inference_url: str) -> None:
    """Starts the double's inference gateway on the loopback port of `inference_url` (once per port)."""
    url = urlsplit(inference_url)
    if url.hostname != "127.0.0.1" or url.port is None or url.port in _SERVERS:
        return
    server = ThreadingHTTPServer(("127.0.0.1", url.port), _DeploymentHandler)
    _SERVERS[url.port] = server
    threading.Thread(target=server.serve_forever, name="fireworks-double-deployment", daemon=True).start()
