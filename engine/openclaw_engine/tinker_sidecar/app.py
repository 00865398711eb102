"""HTTP routes of the Tinker sidecar: the reference engine's training routes plus `/export_for_serving`."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool

from ..errors import install_error_handlers
from ..training_schemas import CheckpointRequest, TrainStepRequest
from .trainer import TinkerTrainer


def create_app(trainer: TinkerTrainer) -> FastAPI:
    app = FastAPI(title="openclaw tinker sidecar")
    install_error_handlers(app)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True}

    @app.get("/trainer_info")
    async def trainer_info() -> dict[str, Any]:
        return trainer.info()

    @app.post("/train_step")
    async def train_step(request: TrainStepRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.train_step, request)

    @app.post("/save_checkpoint")
    async def save_checkpoint(request: CheckpointRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.save_checkpoint, request.path)

    @app.post("/load_checkpoint")
    async def load_checkpoint(request: CheckpointRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.load_checkpoint, request.path)

    @app.post("/export_for_serving")
    async def export_for_serving(request: CheckpointRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.export_for_serving, request.path)

    return app
