"""The Fireworks training client behind the sidecar: idempotent steps, checkpoints, exports, hot-loads.

Every SDK call goes through `sdk` (the imported `fireworks.training.sdk`, or a module with the same surface),
with the synchronous API (`.result()` on the returned futures); the HTTP layer runs it in a worker thread.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from pathlib import Path
from typing import Any

from ..cloud_checkpoints import read_record, write_record
from ..errors import EngineError
from ..training_schemas import TrainStepRequest
from .connection import FireworksConnection
from .datums import to_datum
from .loss import ProjectLoss, unsupported

CHECKPOINT_FILE = "fireworks-checkpoint.json"
SAMPLER_FILE = "fireworks-sampler.json"
# The reference trainer clips the gradient norm at 1 and uses torch AdamW's eps: the same optimizer here.
GRAD_CLIP = 1.0
ADAM_EPS = 1e-8


def _snapshot_name(path: str) -> str:
    """A fresh Fireworks name from the folder (`<runId>/v3` -> `<runid>-v3-<8 hex>`), a DNS label as the SDK
    requires; it refuses to overwrite a checkpoint name, so a retried save never reuses the one before."""
    p = Path(path)
    stem = re.sub(r"[^a-z0-9]+", "-", f"{p.parent.name}-{p.name}".lower()).strip("-")[:50].strip("-")
    return f"{stem or 'checkpoint'}-{uuid.uuid4().hex[:8]}"


class FireworksTrainer:
    def __init__(self, sdk: Any, connection: FireworksConnection, *, base_model: str, lora_rank: int) -> None:
        self.sdk = sdk
        self.connection = connection
        self.base_model = base_model
        self.lora_rank = lora_rank
        self.client = self._new_client()
        self.syncer = self._new_syncer()
        # Step ids trained since the base (or since the loaded checkpoint), with their metrics, in order.
        self.steps: dict[str, dict[str, Any]] = {}
        self.last_checkpoint: str | None = None
        self.served: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def _new_client(self) -> Any:
        service = self.connection.service
        if self.lora_rank > 0:
            return service.create_lora_training_client(base_model=self.base_model, rank=self.lora_rank)
        return service.create_training_client(base_model=self.base_model)

    def _new_syncer(self) -> Any:
        return self.sdk.WeightSyncer(
            policy_client=self.client,
            deploy_mgr=self.connection.deploy_mgr,
            deployment_id=self.connection.deployment_id,
            base_model=self.base_model,
            lora_rank=self.lora_rank,
        )

    def reset(self) -> dict[str, Any]:
        """A fresh training client on the base model: no trained steps, no optimizer state."""
        with self._lock:
            self.client = self._new_client()
            self.syncer = self._new_syncer()
            self.steps = {}
            self.last_checkpoint = None
            return {"step_count": 0, "steps_seen": 0}

    def info(self) -> dict[str, Any]:
        return {
            "backend": "fireworks",
            "base_model": self.base_model,
            "lora_rank": self.lora_rank,
            "trainer_job_id": self.connection.trainer_job_id,
            "deployment_id": self.connection.deployment_id,
            "step_ids": list(self.steps),
            "last_checkpoint": self.last_checkpoint,
            "served": self.served,
        }

    def train_step(self, request: TrainStepRequest) -> dict[str, Any]:
        with self._lock:
            done = self.steps.get(request.step_id)
            if done is not None:
                return {**done, "duplicate": True}
            refusal = unsupported(request.loss, request.samples)
            if refusal is not None:
                raise EngineError(refusal[0], param=refusal[1])
            datums = [to_datum(self.sdk, s) for s in request.samples]
            loss_fn = ProjectLoss(request.samples, request.loss)
            output = self.client.forward_backward_custom(datums, loss_fn).result()
            opt = request.optimizer
            adam = self.sdk.AdamParams(
                learning_rate=opt.lr,
                beta1=opt.betas[0],
                beta2=opt.betas[1],
                eps=ADAM_EPS,
                weight_decay=opt.weight_decay,
                grad_clip_norm=GRAD_CLIP,
            )
            # The loss is already a mean (compute_loss divides by the batch size): no server normalisation.
            stepped = self.client.optim_step(adam).result()
            remote = {
                **{k: float(v) for k, v in (getattr(output, "metrics", None) or {}).items()},
                **{k: float(v) for k, v in (getattr(stepped, "metrics", None) or {}).items()},
            }
            ours = loss_fn.metrics
            metrics: dict[str, Any] = {
                "loss": ours.get("loss", 0.0),
                "pg_loss": ours.get("pg_loss", 0.0),
                "pg_clipfrac": ours.get("pg_clipfrac", 0.0),
                "ppo_kl": ours.get("ppo_kl", 0.0),
                "kl_loss": ours.get("kl_loss", 0.0),
                "entropy": 0.0,
                "grad_norm": remote.get("grad_norm", remote.get("grad_norm:mean", 0.0)),
                "tokens": float(sum(sum(s.loss_mask) for s in request.samples)),
                "train_rollout_logprob_abs_diff": ours.get("train_rollout_logprob_abs_diff", 0.0),
                **{f"fireworks/{k}": v for k, v in remote.items()},
            }
            self.steps[request.step_id] = metrics
            return metrics

    def save_checkpoint(self, path: str) -> dict[str, Any]:
        """Saves weights and optimizer state on Fireworks; `<path>/fireworks-checkpoint.json` names them."""
        with self._lock:
            saved = self.client.save_state(_snapshot_name(path)).result()
            record = {
                "fireworks_path": saved.path,
                "base_model": self.base_model,
                "lora_rank": self.lora_rank,
                "trainer_job_id": self.connection.trainer_job_id,
                "steps": self.steps,
            }
            write_record(path, CHECKPOINT_FILE, record)
            self.last_checkpoint = path
            return record

    def load_checkpoint(self, path: str) -> dict[str, Any]:
        record = read_record(path, CHECKPOINT_FILE, "a Fireworks checkpoint")
        with self._lock:
            self.client.load_state_with_optimizer(record["fireworks_path"]).result()
            self.steps = dict(record.get("steps", {}))
            self.last_checkpoint = path
            return record

    def export_for_serving(self, path: str) -> dict[str, Any]:
        """Saves the current weights as a sampler snapshot the deployment can hot-load, and writes
        `<path>/fireworks-sampler.json`. Every snapshot is a `base` one (whole weights, or the whole LoRA
        adapter), never a delta, so any published version can be hot-loaded again on its own (a rollback)."""
        with self._lock:
            saved = self.client.save_weights_for_sampler_ext(_snapshot_name(path), checkpoint_type="base")
            record = {
                "snapshot_name": saved.snapshot_name,
                "sampler_path": saved.path,
                "base_model": self.base_model,
                "deployment_id": self.connection.deployment_id,
                "step_ids": list(self.steps),
            }
            write_record(path, SAMPLER_FILE, record)
            return {"path": path, **record}

    def hot_load(self, path: str, version: str) -> dict[str, Any]:
        """Hot-loads the snapshot an export folder names into the deployment (publish and rollback)."""
        file = Path(path) / SAMPLER_FILE
        if not file.is_file():
            raise EngineError(f"{file} does not exist (not a Fireworks export)", param="model_path")
        record = json.loads(file.read_text())
        with self._lock:
            if self.connection.deployment_id is None:
                raise EngineError(
                    "no Fireworks deployment to hot-load into: set trainer.fireworksDeployment "
                    "(OPENCLAW_FIREWORKS_DEPLOYMENT)",
                    param="model_path",
                )
            if not self.syncer.hotload(record["snapshot_name"], "base"):
                raise EngineError(
                    f"the deployment {self.connection.deployment_id} did not hot-load "
                    f"{record['snapshot_name']}",
                    param="model_path",
                    status=502,
                )
            self.served = {"snapshot_name": record["snapshot_name"], "weight_version": version, "path": path}
            return {"success": True, "message": f"hot-loaded {record['snapshot_name']}", **self.served}
