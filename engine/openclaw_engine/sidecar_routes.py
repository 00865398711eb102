"""The training routes a cloud trainer's sidecar serves (Tinker, Fireworks): the reference engine's training
contract (engine/TRAINING.md) plus `/export_for_serving`, each call run off the event loop, paths checked
against the sidecar's roots; and the sidecar's app, with or without serving routes beside them."""

from __future__ import annotations

from typing import Any, Protocol

from fastapi import APIRouter, FastAPI
from fastapi.concurrency import run_in_threadpool

from .access import EngineAccess, PathRoots, TokenMiddleware
from .errors import install_error_handlers
from .served_policy import ServedPolicy
from .server import create_app as create_serving_app
from .training_schemas import CheckpointRequest, TrainStepRequest

# Training batches are larger than chat requests; the reference engine's 64 MiB would be tight.
DEFAULT_MAX_BODY_BYTES = 512 * 1024 * 1024


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


def create_sidecar_app(
    title: str,
    training: APIRouter,
    runner: ServedPolicy | None,
    *,
    max_body_bytes: int,
    access: EngineAccess,
) -> FastAPI:
    """Given a runner, the reference engine's serving app with the training routes beside it (one process is
    the trainer and the policy engine the gateway talks to); else the training routes and `/health` alone."""
    if runner is not None:
        return create_serving_app(
            runner, max_body_bytes=max_body_bytes, extra_routers=[training], access=access
        )
    app = FastAPI(title=title)
    install_error_handlers(app)
    if access.token:
        app.add_middleware(TokenMiddleware, token=access.token)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True}

    app.include_router(training)
    return app
