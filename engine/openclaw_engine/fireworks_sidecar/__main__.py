"""`python -m openclaw_engine.fireworks_sidecar --base-model accounts/fireworks/models/M --training-shape S
[--deployment D] [--trainer-job J] [--lora-rank R] [--port 0]`.

Needs `pip install 'openclaw-engine[fireworks]'` and FIREWORKS_API_KEY (a training-scoped key; the SDK
resolves the account from it). Creates a trainer job on the training shape (or reconnects to `--trainer-job`),
creates or reuses the deployment `--deployment` that hot-loads each published step, and prints
`ready http://HOST:PORT` like the engine. With `--tokenizer DIR` (the base model's tokenizer and chat
template) it also serves the reference engine's chat routes, sampling on the deployment (the gateway's
policy engine). `--sdk-module` swaps the SDK for a module with the same surface (the
tests pass their double, whose network is local).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from ..access import add_access_arguments, engine_access


def main(argv: list[str] | None = None) -> None:
    env = os.environ.get
    parser = argparse.ArgumentParser(prog="python -m openclaw_engine.fireworks_sidecar", description=__doc__)
    parser.add_argument("--base-model", default=env("OPENCLAW_FIREWORKS_BASE_MODEL", ""))
    parser.add_argument("--training-shape", default=env("OPENCLAW_FIREWORKS_TRAINING_SHAPE", ""))
    parser.add_argument("--deployment", default=env("OPENCLAW_FIREWORKS_DEPLOYMENT", ""))
    parser.add_argument(
        "--trainer-job",
        default=env("OPENCLAW_FIREWORKS_TRAINER_JOB", ""),
        help="id of a running trainer job to reconnect to (after a restart) instead of creating one",
    )
    parser.add_argument("--lora-rank", type=int, default=int(env("OPENCLAW_LORA_RANK") or "0"))
    parser.add_argument("--api-url", default=env("OPENCLAW_FIREWORKS_API_URL", "https://api.fireworks.ai"))
    parser.add_argument(
        "--inference-url",
        default=env("OPENCLAW_FIREWORKS_INFERENCE_URL", ""),
        help="the deployment's inference gateway (default: the SDK's, --api-url)",
    )
    parser.add_argument(
        "--tokenizer",
        default=env("OPENCLAW_FIREWORKS_TOKENIZER", ""),
        help="the base model's tokenizer and chat template (a local folder or a Hugging Face id): serve "
        "chat through the deployment; without it only the training and hot-load routes are served",
    )
    parser.add_argument("--served-model-name", default=env("OPENCLAW_SERVED_MODEL_NAME") or None)
    parser.add_argument("--context-length", type=int, default=None)
    parser.add_argument(
        "--weight-version", default="0", help="the version the deployment serves until the first hot-load"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--sdk-module", default="fireworks.training.sdk", help="module providing the SDK surface"
    )
    parser.add_argument("--log-level", default="info")
    add_access_arguments(parser)
    args = parser.parse_args(argv)
    access = engine_access(args, [])
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    if not args.base_model:
        raise SystemExit(
            "--base-model (OPENCLAW_FIREWORKS_BASE_MODEL) is required "
            "(e.g. accounts/fireworks/models/qwen3-8b)"
        )
    api_key = env("FIREWORKS_API_KEY", "")
    if not api_key:
        raise SystemExit("FIREWORKS_API_KEY is not set (a training-scoped Fireworks API key)")
    try:
        sdk = importlib.import_module(args.sdk_module)
    except ImportError as error:
        raise SystemExit(
            f"cannot import {args.sdk_module!r} ({error}); install it with "
            "`pip install 'fireworks-ai[training-sdk]==1.2.30'`"
        ) from error

    from ..server import serve
    from .app import create_app
    from .connection import FireworksSettings, connect
    from .trainer import FireworksTrainer

    settings = FireworksSettings(
        api_key=api_key,
        base_model=args.base_model,
        training_shape=args.training_shape,
        deployment_id=args.deployment,
        trainer_job_id=args.trainer_job,
        lora_rank=args.lora_rank,
        api_url=args.api_url,
        inference_url=args.inference_url,
    )
    connection = connect(sdk, settings)
    trainer = FireworksTrainer(sdk, connection, base_model=args.base_model, lora_rank=args.lora_rank)
    runner = None
    if args.tokenizer:
        if connection.deploy_mgr is None or connection.deployment_id is None:
            raise SystemExit("--tokenizer serves chat through the deployment: set --deployment too")
        from transformers import AutoTokenizer

        from ..fireworks_runner import FireworksRunner

        runner = FireworksRunner(
            sdk,
            inference_url=connection.deploy_mgr.inference_url,
            model=f"accounts/{connection.deploy_mgr.account_id}/deployments/{connection.deployment_id}",
            api_key=api_key,
            base_model=args.base_model,
            tokenizer=AutoTokenizer.from_pretrained(args.tokenizer),
            tokenizer_path=args.tokenizer,
            hot_load=trainer.hot_load,
            served_model_name=args.served_model_name,
            context_length=args.context_length,
            weight_version=args.weight_version,
        )
    serve(
        create_app(trainer, runner, access=access), host=args.host, port=args.port, log_level=args.log_level
    )


if __name__ == "__main__":
    main()
