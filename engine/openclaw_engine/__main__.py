"""Command line: `python -m openclaw_engine make-tiny-model DIR`, `serve ...` and `train-epoch ...`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

_DEFAULT_MAX_BODY_MB = 64
# Before torch starts its OpenMP threads: idle threads sleep instead of spinning. On a machine whose cores are
# shared (other processes, the asyncio thread, the trainer), spinning waits made small batched ops 10-100x
# slower in measurements here; a dedicated machine loses next to nothing.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m openclaw_engine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    tiny = sub.add_parser("make-tiny-model", help="write a tiny random Qwen3-architecture model folder")
    tiny.add_argument("dir", help="output folder (created if missing)")
    tiny.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    tiny.add_argument(
        "--head-dim",
        type=int,
        default=64,
        choices=[32, 64, 128],
        help="attention head size (vLLM's CPU sizes)",
    )

    vlm = sub.add_parser("make-tiny-vlm", help="write a tiny random Qwen2.5-VL model folder (images)")
    vlm.add_argument("dir", help="output folder (created if missing)")
    vlm.add_argument("--seed", type=int, default=0, help="weight initialisation seed")

    serve = sub.add_parser("serve", help="serve a model folder over SGLang's HTTP API subset")
    serve.add_argument("--model", required=True, help="Hugging Face model folder")
    serve.add_argument("--port", type=int, required=True, help="TCP port; 0 picks a free one")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    serve.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    serve.add_argument(
        "--served-model-name", default=None, help="name reported by /v1/models (default: --model)"
    )
    serve.add_argument("--weight-version", default="0", help="initial weight_version")
    serve.add_argument(
        "--max-body-mb", type=float, default=_DEFAULT_MAX_BODY_MB, help="request body limit (413)"
    )
    serve.add_argument(
        "--return-original-logprob",
        action="store_true",
        default=os.environ.get("SGLANG_RETURN_ORIGINAL_LOGPROB", "").lower() in ("1", "true"),
        help="report log_softmax(logits) instead of log_softmax(logits / temperature) (SGLang's env flag)",
    )
    serve.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    serve.add_argument(
        "--max-batch-tokens",
        type=int,
        default=1024,
        help="tokens per forward pass: one per decoding request, the rest for prompt chunks",
    )
    serve.add_argument(
        "--max-running-requests", type=int, default=256, help="requests batched at once (others wait)"
    )
    serve.add_argument(
        "--prefix-cache-mb", type=float, default=1024, help="KV memory for cached prompt prefixes (0: none)"
    )
    serve.add_argument(
        "--max-loras", type=int, default=8, help="LoRA adapters loaded at once (/load_lora_adapter)"
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--strict",
        action="store_true",
        default=os.environ.get("OPENCLAW_ENGINE_STRICT", "").lower() in ("1", "true"),
        help="refuse what SGLang 0.5.23 refuses (OPENCLAW_ENGINE_STRICT=1; on in the project's tests)",
    )
    from .access import add_access_arguments

    add_access_arguments(serve)
    serve.add_argument("--trainer", action="store_true", help="also mount the training routes")
    serve.add_argument("--lora-rank", type=int, default=0, help="trainer LoRA rank (0: full fine-tuning)")
    serve.add_argument("--lora-alpha", type=int, default=None, help="trainer LoRA alpha")
    serve.add_argument(
        "--adapter-rank", type=int, default=8, help="LoRA rank of the per-tenant /adapters/{name}/ trainers"
    )
    serve.add_argument("--adapter-alpha", type=int, default=None, help="their LoRA alpha (default 2 x rank)")
    epoch = sub.add_parser("train-epoch", help="train one batch file from a checkpoint into the next one")
    epoch.add_argument("--base", required=True, help="base Hugging Face model folder")
    epoch.add_argument("--checkpoint-in", required=True, help="checkpoint to resume from, or none")
    epoch.add_argument("--batch", required=True, help="JSON /train_step request file")
    epoch.add_argument("--checkpoint-out", required=True, help="checkpoint folder to write (atomically)")
    epoch.add_argument("--device", default="cpu")
    epoch.add_argument("--lora-rank", type=int, default=0)
    epoch.add_argument("--lora-alpha", type=int, default=None)
    return parser


def _serve(args: argparse.Namespace) -> None:
    import torch

    from .model_runner import ModelRunner
    from .server import create_app, serve

    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    from .access import engine_access

    access = engine_access(args, [args.model])
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from .vision_processor import is_vision_model

    runner: Any
    if is_vision_model(args.model):  # a VLM: images served one request per step (vision_runner.py)
        from .vision_runner import VisionRunner

        runner = VisionRunner(
            args.model,
            device=args.device,
            dtype=args.dtype,
            weight_version=args.weight_version,
            original_logprobs=args.return_original_logprob,
            served_model_name=args.served_model_name,
        )
    else:
        runner = ModelRunner(
            args.model,
            device=args.device,
            dtype=args.dtype,
            weight_version=args.weight_version,
            original_logprobs=args.return_original_logprob,
            served_model_name=args.served_model_name,
            max_batch_tokens=args.max_batch_tokens,
            max_running=args.max_running_requests,
            prefix_cache_mb=args.prefix_cache_mb,
            max_loras=args.max_loras,
        )
    routers = []
    if args.trainer:
        # Imported only on demand: the serving half must not depend on the training half.
        from .adapter_trainer import SharedLoraBase
        from .trainer import Trainer
        from .training_routes import make_adapter_router, make_training_router

        trainer = Trainer(
            args.model, device=args.device, lora_rank=args.lora_rank, lora_alpha=args.lora_alpha
        )
        routers.append(make_training_router(trainer, access.roots, int(args.max_body_mb * 1024 * 1024)))
        # The adapters share one base model of their own, loaded on the first adapter's first use.
        adapters = SharedLoraBase(
            args.model, device=args.device, lora_rank=args.adapter_rank, lora_alpha=args.adapter_alpha
        )
        routers.append(make_adapter_router(adapters, access.roots, int(args.max_body_mb * 1024 * 1024)))
    app = create_app(
        runner,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        extra_routers=routers,
        strict=args.strict,
        access=access,
    )
    serve(app, host=args.host, port=args.port, log_level=args.log_level)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "make-tiny-model":
        from .tiny_model import make_tiny_model

        out = make_tiny_model(args.dir, seed=args.seed, head_dim=args.head_dim)
        print(out)
    elif args.command == "make-tiny-vlm":
        from .tiny_vlm import make_tiny_vlm

        print(make_tiny_vlm(args.dir, seed=args.seed))
    elif args.command == "train-epoch":
        from .train_epoch import main as train_epoch

        sys.exit(train_epoch(args))
    else:
        _serve(args)


if __name__ == "__main__":
    main()
