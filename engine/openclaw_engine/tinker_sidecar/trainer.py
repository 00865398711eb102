"""The Tinker training client behind the sidecar: idempotent steps, checkpoints, exports.

Every SDK call goes through `sdk` (the imported `tinker` module, or a stand-in with the same surface), using
the synchronous API (`.result()` on the returned futures); the HTTP layer runs it in a worker thread.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from ..cloud_checkpoints import read_record, write_record
from ..errors import EngineError
from ..training_schemas import TrainStepRequest
from .datums import SUPPORTED_METHODS, datum_arrays, to_datum

CHECKPOINT_FILE = "tinker-checkpoint.json"
SAMPLER_FILE = "tinker-sampler.json"


def _state_name(path: str) -> str:
    """Tinker checkpoint name from the folder: `<runId>/v3` -> `<runId>_v3`, other characters as `-`."""
    p = Path(path)
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{p.parent.name}_{p.name}".strip("_")) or "checkpoint"


class TinkerTrainer:
    def __init__(
        self,
        sdk: Any,
        *,
        base_model: str,
        lora_rank: int = 32,
        loss_fn: str = "ppo",
        image_token_id: int | None = None,
    ) -> None:
        self.sdk = sdk
        # The base model's `<|image_pad|>` id (from its tokenizer): image samples need it; None refuses them.
        self.image_token_id = image_token_id
        self.base_model = base_model
        self.lora_rank = lora_rank
        self.loss_fn = loss_fn
        self.service = sdk.ServiceClient()
        self.client = self._new_client()
        # Step ids trained since the base (or since the loaded checkpoint), with their metrics, in order.
        self.steps: dict[str, dict[str, Any]] = {}
        self.last_checkpoint: str | None = None
        self._lock = threading.Lock()

    def _new_client(self) -> Any:
        return self.service.create_lora_training_client(
            base_model=self.base_model, rank=self.lora_rank
        ).result()

    def reset(self) -> dict[str, Any]:
        """A fresh LoRA training client on the base model: no trained steps, no optimizer state."""
        with self._lock:
            self.client = self._new_client()
            self.steps = {}
            self.last_checkpoint = None
            return {"step_count": 0, "steps_seen": 0}

    def info(self) -> dict[str, Any]:
        return {
            "backend": "tinker",
            "base_model": self.base_model,
            "lora_rank": self.lora_rank,
            "loss_fn": self.loss_fn,
            "image_token_id": self.image_token_id,
            "step_ids": list(self.steps),
            "last_checkpoint": self.last_checkpoint,
        }

    def train_step(self, request: TrainStepRequest) -> dict[str, Any]:
        with self._lock:
            done = self.steps.get(request.step_id)
            if done is not None:
                return {**done, "duplicate": True}
            loss = request.loss
            if loss.method not in SUPPORTED_METHODS:
                raise EngineError(
                    f"method {loss.method!r} is not available on Tinker "
                    f"(supported: {', '.join(SUPPORTED_METHODS)})",
                    param="loss.method",
                )
            arrays = []
            for i, sample in enumerate(request.samples):
                try:
                    arrays.append(datum_arrays(sample, loss, self.image_token_id))
                except ValueError as error:
                    raise EngineError(str(error), param=f"samples[{i}]") from error
            datums = [to_datum(self.sdk, a) for a in arrays]
            # Tinker's ppo loss takes the clip range as ratio thresholds (1 − ε_low, 1 + ε_high).
            config = (
                {"clip_low_threshold": 1.0 - loss.eps_clip, "clip_high_threshold": 1.0 + loss.eps_clip_high}
                if self.loss_fn == "ppo"
                else None
            )
            output = self.client.forward_backward(datums, self.loss_fn, loss_fn_config=config).result()
            opt = request.optimizer
            adam = self.sdk.types.AdamParams(
                learning_rate=opt.lr, beta1=opt.betas[0], beta2=opt.betas[1], weight_decay=opt.weight_decay
            )
            self.client.optim_step(adam).result()
            remote = {k: float(v) for k, v in (getattr(output, "metrics", None) or {}).items()}
            tokens = sum(sum(s.loss_mask) for s in request.samples)
            advantages = [a for arr in arrays for a in arr.advantages]
            metrics: dict[str, Any] = {
                "loss": remote.get("loss:sum", 0.0),
                "pg_loss": remote.get("loss:sum", 0.0),
                "pg_clipfrac": 0.0,
                "ppo_kl": 0.0,
                "kl_loss": 0.0,
                "entropy": 0.0,
                "grad_norm": remote.get("grad_norm:mean", 0.0),
                "tokens": float(tokens),
                "mean_advantage": sum(advantages) / max(1, tokens),
                **{f"tinker/{k}": v for k, v in remote.items()},
            }
            self.steps[request.step_id] = metrics
            return metrics

    def save_checkpoint(self, path: str) -> dict[str, Any]:
        """Saves weights and optimizer state on Tinker; `<path>/tinker-checkpoint.json` points at them."""
        with self._lock:
            # A repeated save to the same folder (an activity retry) replaces the state saved under its name.
            saved = self.client.save_state(name=_state_name(path), overwrite=True).result()
            record = {"tinker_path": saved.path, "base_model": self.base_model, "steps": self.steps}
            write_record(path, CHECKPOINT_FILE, record)
            self.last_checkpoint = path
            return record

    def load_checkpoint(self, path: str) -> dict[str, Any]:
        record = read_record(path, CHECKPOINT_FILE, "a Tinker checkpoint")
        with self._lock:
            self.client.load_state_with_optimizer(record["tinker_path"]).result()
            self.steps = dict(record.get("steps", {}))
            self.last_checkpoint = path
            return record

    def export_for_serving(self, path: str) -> dict[str, Any]:
        """Saves the current weights as sampler weights and writes `<path>/tinker-sampler.json`.

        `save_weights_for_sampler` is the half of `save_weights_and_get_sampling_client` that returns the
        `tinker://` path (the SDK's sampling client does not keep it); any process can then serve the weights
        with `ServiceClient().create_sampling_client(model_path=...)`.
        """
        with self._lock:
            saved = self.client.save_weights_for_sampler(name=_state_name(path)).result()
            record = {"model_path": saved.path, "base_model": self.base_model, "step_ids": list(self.steps)}
            write_record(path, SAMPLER_FILE, record)
            return {"path": path, **record}
