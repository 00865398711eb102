"""HTTP routes of the trainer: train_step, save/load checkpoint, reset to the base, trainer_info.

Every blocking call runs in a worker thread (`run_in_threadpool`), so a server that mounts this router
next to its serving routes keeps answering generation requests while a step trains. The Trainer's own
lock serialises the training calls.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from .access import PathRoots
from .trainer import Trainer
from .training_schemas import CheckpointRequest, TrainStepRequest


def make_training_router(trainer: Trainer, roots: PathRoots) -> APIRouter:
    """Routes bound to one Trainer; the app must call `errors.install_error_handlers` for JSON 4xx bodies.

    Checkpoints are written only inside a checkpoint root and read only from a checkpoint or model root.
    """
    router = APIRouter(tags=["training"])

    @router.post("/train_step")
    async def train_step(request: TrainStepRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.train_step, request)

    @router.post("/save_checkpoint")
    async def save_checkpoint(request: CheckpointRequest) -> dict[str, Any]:
        path = str(roots.writable(request.path, "path"))
        return await run_in_threadpool(trainer.save_checkpoint, path)

    @router.post("/load_checkpoint")
    async def load_checkpoint(request: CheckpointRequest) -> dict[str, Any]:
        path = str(roots.readable(request.path, "path"))
        return await run_in_threadpool(trainer.load_checkpoint, path)

    @router.post("/reset_to_base")
    async def reset_to_base() -> dict[str, Any]:
        return await run_in_threadpool(trainer.reset)

    @router.get("/trainer_info")
    async def trainer_info() -> dict[str, Any]:
        return trainer.info()

    return router
