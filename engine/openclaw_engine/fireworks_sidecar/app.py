"""HTTP routes of the Fireworks sidecar: the reference engine's training routes, `/export_for_serving`, and
`/update_weights_from_disk`, which the publish step calls on the serving engine: here it hot-loads the
export's snapshot into the Fireworks deployment that serves the policy. Given a `FireworksRunner`, the
sidecar is also the policy engine the gateway talks to: the reference engine's serving routes, sampling on
the deployment (and `/update_weights_from_disk` is then the runner's, which hot-loads the same way)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict

from ..access import EngineAccess
from ..fireworks_runner import FireworksRunner
from ..sidecar_routes import DEFAULT_MAX_BODY_BYTES, cloud_training_router, create_sidecar_app
from .trainer import FireworksTrainer


class HotLoadRequest(BaseModel):
    """The serving engines' publish body (engines/sglang-adapter.ts `publishWeights`)."""

    model_config = ConfigDict(extra="ignore")
    model_path: str
    weight_version: str = ""


def training_router(trainer: FireworksTrainer, roots: Any, *, hot_load_route: bool) -> APIRouter:
    app = cloud_training_router(trainer, roots)

    if hot_load_route:

        @app.post("/update_weights_from_disk")
        async def update_weights_from_disk(request: HotLoadRequest) -> dict[str, Any]:
            path = str(roots.readable(request.model_path, "model_path"))
            return await run_in_threadpool(trainer.hot_load, path, request.weight_version)

    return app


def create_app(
    trainer: FireworksTrainer,
    runner: FireworksRunner | None = None,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    access: EngineAccess | None = None,
) -> FastAPI:
    access = access or EngineAccess()
    # With a runner, the runner's own /update_weights_from_disk hot-loads (it also swaps the served version).
    return create_sidecar_app(
        "openclaw fireworks sidecar",
        training_router(trainer, access.roots, hot_load_route=runner is None),
        runner,
        max_body_bytes=max_body_bytes,
        access=access,
    )
