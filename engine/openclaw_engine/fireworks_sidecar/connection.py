"""Connecting to Fireworks: the trainer job (on a training shape), the deployment that hot-loads the
published weights, and the service client that creates training clients on the trainer job.

`connect` follows the SDK's documented lifecycle (its README): resolve the training shape's profile, create
the trainer job (or reconnect to a running one after a restart, so a crash does not pay for a second job),
create or reuse the deployment pinned to the shape's deployment shape with `hot_load_trainer_job` set to
the job, and point a `FiretitanServiceClient` at the job's endpoint. Every call goes through `sdk`
(the imported `fireworks.training.sdk`, or a module with the same surface: the tests pass their double).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("openclaw.fireworks")


@dataclass(frozen=True)
class FireworksSettings:
    api_key: str
    base_model: str
    training_shape: str = ""
    deployment_id: str = ""
    # A running trainer job to reconnect to (its id); empty creates one.
    trainer_job_id: str = ""
    lora_rank: int = 32
    api_url: str = "https://api.fireworks.ai"
    # The deployment's inference gateway; empty: the SDK's default (the API URL).
    inference_url: str = ""
    display_name: str = "openclaw-rl"


@dataclass
class FireworksConnection:
    service: Any
    deploy_mgr: Any | None
    deployment_id: str | None
    trainer_job_id: str
    base_url: str


def connect(sdk: Any, settings: FireworksSettings) -> FireworksConnection:
    jobs = sdk.TrainerJobManager(api_key=settings.api_key, base_url=settings.api_url)
    profile = None
    if settings.trainer_job_id:
        endpoint = jobs.reconnect_and_wait(settings.trainer_job_id)
    else:
        if not settings.training_shape:
            raise ValueError("a new Fireworks trainer job needs a training shape (--training-shape)")
        profile = jobs.resolve_training_profile(settings.training_shape)
        endpoint = jobs.create_and_wait(
            sdk.TrainerJobConfig(
                base_model=settings.base_model,
                lora_rank=settings.lora_rank,
                training_shape_ref=profile.training_shape,
                display_name=settings.display_name,
            )
        )
    log.info("Fireworks trainer job %s at %s", endpoint.job_id, endpoint.base_url)
    deploy_mgr = None
    deployment_id = settings.deployment_id or None
    if deployment_id:
        deploy_mgr = sdk.DeploymentManager(
            api_key=settings.api_key, base_url=settings.api_url, inference_url=settings.inference_url or None
        )
        if profile is None and settings.training_shape:
            profile = jobs.resolve_training_profile(settings.training_shape)
        if profile is not None:
            deploy_mgr.create_or_get(
                sdk.DeploymentConfig.from_training_profile(
                    deployment_id=deployment_id,
                    base_model=settings.base_model,
                    profile=profile,
                    hot_load_trainer_job=endpoint.job_name,
                )
            )
        deploy_mgr.wait_for_ready(deployment_id)
    service = sdk.FiretitanServiceClient(base_url=endpoint.base_url, api_key=settings.api_key)
    return FireworksConnection(
        service=service,
        deploy_mgr=deploy_mgr,
        deployment_id=deployment_id,
        trainer_job_id=endpoint.job_id,
        base_url=endpoint.base_url,
    )
