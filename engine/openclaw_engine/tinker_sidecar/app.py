"""HTTP routes of the Tinker sidecar: the reference engine's training routes plus `/export_for_serving`, and,
given a `TinkerRunner`, the reference engine's serving routes over Tinker sampling clients (one process is
then both the trainer and the policy engine the gateway talks to)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.concurrency import run_in_threadpool

from ..access import EngineAccess, PathRoots, TokenMiddleware
from ..errors import install_error_handlers
from ..server import create_app as create_serving_app
from ..tinker_runner import TinkerRunner
from ..training_schemas import CheckpointRequest, TrainStepRequest
from .trainer import TinkerTrainer

# Training batches are larger than chat requests; the reference engine's 64 MiB would be tight.
DEFAULT_MAX_BODY_BYTES = 512 * 1024 * 1024


def training_router(trainer: TinkerTrainer, roots: PathRoots) -> APIRouter:
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


def create_app(
    trainer: TinkerTrainer,
    runner: TinkerRunner | None = None,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    access: EngineAccess | None = None,
) -> FastAPI:
    access = access or EngineAccess()
    if runner is not None:
        return create_serving_app(
            runner,
            max_body_bytes=max_body_bytes,
            extra_routers=[training_router(trainer, access.roots)],
            access=access,
        )
    app = FastAPI(title="openclaw tinker sidecar")
    install_error_handlers(app)
    if access.token:
        app.add_middleware(TokenMiddleware, token=access.token)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True}

    app.include_router(training_router(trainer, access.roots))
    return app
