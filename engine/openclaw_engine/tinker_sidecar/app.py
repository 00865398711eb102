"""HTTP routes of the Tinker sidecar: the reference engine's training routes plus `/export_for_serving`, and,
given a `TinkerRunner`, the reference engine's serving routes over Tinker sampling clients (one process is
then both the trainer and the policy engine the gateway talks to)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from ..access import EngineAccess, PathRoots
from ..sidecar_routes import DEFAULT_MAX_BODY_BYTES, cloud_training_router, create_sidecar_app
from ..tinker_runner import TinkerRunner
from .trainer import TinkerTrainer


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
    return create_sidecar_app(
        "openclaw tinker sidecar",
        training_router(trainer, access.roots),
        runner,
        max_body_bytes=max_body_bytes,
        access=access,
    )
