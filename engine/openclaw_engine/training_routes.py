"""HTTP routes of the trainer: train_step, save/load checkpoint, reset to the base, trainer_info, sample.

Every blocking call runs in a worker thread (`run_in_threadpool`), so a server that mounts this router
next to its serving routes keeps answering generation requests while a step trains. The Trainer's own
lock serialises the training calls.
"""

from __future__ import annotations

import threading
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from .access import PathRoots
from .adapter_trainer import SharedLoraBase, check_adapter_name
from .step_parts import StepParts
from .trainer import Trainer
from .trainer_sampling import CheckpointSource, SampleRequest, sample_replies
from .training_schemas import CheckpointRequest, TrainStepPartRequest, TrainStepRequest


def make_training_router(trainer: Trainer, roots: PathRoots, max_body_bytes: int | None = None) -> APIRouter:
    """Routes bound to one Trainer; the app must call `errors.install_error_handlers` for JSON 4xx bodies.

    Checkpoints are written only inside a checkpoint root and read only from a checkpoint or model root.
    `max_body_bytes`: the server's request body limit, announced by `/trainer_info` so that a client splits a
    larger step into `/train_step_part` requests.
    """
    router = APIRouter(tags=["training"])
    parts = StepParts()

    @router.post("/train_step")
    async def train_step(request: TrainStepRequest) -> dict[str, Any]:
        return await run_in_threadpool(trainer.train_step, request)

    @router.post("/train_step_part")
    async def train_step_part(request: TrainStepPartRequest) -> dict[str, Any]:
        ready = parts.add(request)
        if isinstance(ready, dict):
            return ready
        return await run_in_threadpool(trainer.train_step, ready)

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

    @router.post("/sample")
    async def sample(request: SampleRequest) -> dict[str, Any]:
        return await run_in_threadpool(sample_replies, trainer, _checked_source(request, roots))

    @router.get("/trainer_info")
    async def trainer_info() -> dict[str, Any]:
        info = trainer.info()
        return info if max_body_bytes is None else {**info, "max_body_bytes": max_body_bytes}

    return router


def make_adapter_router(
    adapters: SharedLoraBase, roots: PathRoots, max_body_bytes: int | None = None
) -> APIRouter:
    """The same seven routes under `/adapters/{name}/`, each bound to that name's adapter trainer.

    A client of the top-level routes works unchanged with the base URL `.../adapters/<name>`. Every adapter
    shares one base model (adapter_trainer.py); an adapter is created on its first use (trainer_info of a
    never-used name answers step_count 0 without creating it).
    """
    router = APIRouter(prefix="/adapters/{name}", tags=["adapter training"])
    parts: dict[str, StepParts] = {}
    parts_lock = threading.Lock()

    def parts_of(name: str) -> StepParts:
        check_adapter_name(name)
        with parts_lock:
            return parts.setdefault(name, StepParts())

    @router.post("/train_step")
    async def train_step(name: str, request: TrainStepRequest) -> dict[str, Any]:
        check_adapter_name(name)
        return await run_in_threadpool(lambda: adapters.trainer(name).train_step(request))

    @router.post("/train_step_part")
    async def train_step_part(name: str, request: TrainStepPartRequest) -> dict[str, Any]:
        ready = parts_of(name).add(request)
        if isinstance(ready, dict):
            return ready
        return await run_in_threadpool(lambda: adapters.trainer(name).train_step(ready))

    @router.post("/save_checkpoint")
    async def save_checkpoint(name: str, request: CheckpointRequest) -> dict[str, Any]:
        check_adapter_name(name)
        path = str(roots.writable(request.path, "path"))
        return await run_in_threadpool(lambda: adapters.trainer(name).save_checkpoint(path))

    @router.post("/load_checkpoint")
    async def load_checkpoint(name: str, request: CheckpointRequest) -> dict[str, Any]:
        check_adapter_name(name)
        path = str(roots.readable(request.path, "path"))
        return await run_in_threadpool(lambda: adapters.trainer(name).load_checkpoint(path))

    @router.post("/reset_to_base")
    async def reset_to_base(name: str) -> dict[str, Any]:
        check_adapter_name(name)
        return await run_in_threadpool(lambda: adapters.trainer(name).reset())

    @router.post("/sample")
    async def sample(name: str, request: SampleRequest) -> dict[str, Any]:
        check_adapter_name(name)
        checked = _checked_source(request, roots)
        return await run_in_threadpool(lambda: sample_replies(adapters.trainer(name), checked))

    @router.get("/trainer_info")
    async def trainer_info(name: str) -> dict[str, Any]:
        info = adapters.info(name)
        return info if max_body_bytes is None else {**info, "max_body_bytes": max_body_bytes}

    return router


def _checked_source(request: SampleRequest, roots: PathRoots) -> SampleRequest:
    """A checkpoint source is read only from a checkpoint or model root, like `/load_checkpoint`."""
    if not isinstance(request.source, CheckpointSource):
        return request
    path = str(roots.readable(request.source.checkpoint, "source.checkpoint"))
    return request.model_copy(update={"source": CheckpointSource(checkpoint=path)})
