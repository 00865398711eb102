"""The training routes a cloud trainer's sidecar serves (Tinker, Fireworks): the reference engine's training
contract (engine/TRAINING.md) plus `/export_for_serving`, each call run off the event loop, paths checked
against the sidecar's roots."""

from __future__ import annotations

from typing import Any, Protocol

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from .access import PathRoots
from .training_schemas import CheckpointRequest, TrainStepRequest


class CloudTrainer(Protocol):
    """What a sidecar's trainer answers; each call blocks on the cloud, so it runs in a thread."""

    def info(self) -> dict[str, Any]: ...
    def train_step(self, request: TrainStepRequest) -> dict[str, Any]: ...
    def save_checkpoint(self, path: str) -> dict[str, Any]: ...
    def load_checkpoint(self, path: str) -> dict[str, Any]: ...
    def reset(self) -> dict[str, Any]: ...
    def export_for_serving(self, path: str) -> dict[str, Any]: ...


def cloud_training_router(trainer: CloudTrainer, roots: PathRoots) -> APIRouter:
    r = APIRouter()

    @r.get("/trainer_info")
    async def trainer_info() -> dict[str, Any]:
        return trainer.info()

    @r.post("/train_step")
    async def train_step(request: TrainStepRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.train_step, request)

    @r.post("/save_checkpoint")
    async def save_checkpoint(request: CheckpointRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.save_checkpoint, str(roots.writable(request.path, "path")))

    @r.post("/load_checkpoint")
    async def load_checkpoint(request: CheckpointRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.load_checkpoint, str(roots.readable(request.path, "path")))

    @r.post("/reset_to_base")
    async def reset_to_base() -> dict[str, Any]:
        return await run_in_threadpool(trainer.reset)

    @r.post("/export_for_serving")
    async def export_for_serving(request: CheckpointRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.export_for_serving, str(roots.writable(request.path, "path")))

    return r
