"""HTTP routes of the Tinker sidecar: the reference engine's training routes plus `/export_for_serving`, and,
given a `TinkerRunner`, the reference engine's serving routes over Tinker sampling clients (one process is
then both the trainer and the policy engine the gateway talks to)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI

from ..access import EngineAccess, PathRoots, TokenMiddleware
from ..errors import install_error_handlers
from ..server import create_app as create_serving_app
from ..sidecar_routes import cloud_training_router
from ..tinker_runner import TinkerRunner
from .trainer import TinkerTrainer

# Training batches are larger than chat requests; the reference engine's 64 MiB would be tight.
DEFAULT_MAX_BODY_BYTES = 512 * 1024 * 1024


def training_router(trainer: TinkerTrainer, roots: PathRoots) -> APIRouter:
    return cloud_training_router(trainer, roots)


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
