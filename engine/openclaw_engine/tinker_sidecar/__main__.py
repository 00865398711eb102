"""`python -m openclaw_engine.tinker_sidecar --base-model M [--lora-rank R] [--port 0] [--tokenizer DIR]`.

Needs `pip install tinker` and TINKER_API_KEY. `--sdk-module` swaps the SDK for a module with the same
surface (the tests pass their fake); prints `ready http://HOST:PORT` like the engine. Unless `--no-serve`, the
process also serves the reference engine's routes (`/v1/chat/completions`, `/generate`, `/tokenize`,
`/update_weights_from_disk`, ...) by sampling on Tinker: point OPENCLAW_ENGINE_URL at it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Any

from ..access import add_access_arguments, engine_access


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m openclaw_engine.tinker_sidecar", description=__doc__)
    parser.add_argument("--base-model", default=os.environ.get("MODEL_NAME", "Qwen/Qwen3-4B-Instruct-2507"))
    parser.add_argument("--lora-rank", type=int, default=int(os.environ.get("LORA_RANK", "32")))
    parser.add_argument(
        "--loss-fn", default=os.environ.get("LOSS_FN", "ppo"), choices=["ppo", "importance_sampling", "cispo"]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sdk-module", default="tinker", help="module providing the Tinker SDK surface")
    parser.add_argument("--log-level", default="info")
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="local folder with the base model's tokenizer and chat template (default: the SDK's "
        "get_tokenizer(), which loads the base model's tokenizer from Hugging Face)",
    )
    parser.add_argument(
        "--no-serve", action="store_true", help="training routes only; no policy-engine routes, no tokenizer"
    )
    parser.add_argument(
        "--served-model-name", default=None, help="name reported by /v1/models (default: --base-model)"
    )
    parser.add_argument("--weight-version", default="0", help="weight_version of the base model's sampler")
    parser.add_argument(
        "--context-length",
        type=int,
        default=None,
        help="prompt + completion limit (default: the tokenizer's model_max_length, else 32768)",
    )
    parser.add_argument("--max-body-mb", type=float, default=512, help="request body limit (413)")
    add_access_arguments(parser)
    args = parser.parse_args(argv)
    access = engine_access(args, [])
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    try:
        sdk = importlib.import_module(args.sdk_module)
    except ImportError as error:
        raise SystemExit(
            f"cannot import {args.sdk_module!r} ({error}); install it with `pip install tinker`"
        ) from error

    from ..server import serve
    from .app import create_app
    from .trainer import TinkerTrainer

    # A local tokenizer (--tokenizer) also names the image pad token the trainer lays image samples out by.
    local_tokenizer = None
    if args.tokenizer:
        from transformers import AutoTokenizer

        local_tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    trainer = TinkerTrainer(
        sdk,
        base_model=args.base_model,
        lora_rank=args.lora_rank,
        loss_fn=args.loss_fn,
        image_token_id=image_token_id(local_tokenizer),
    )
    runner = None
    if not args.no_serve:
        from ..tinker_runner import TinkerRunner

        if local_tokenizer is not None:
            tokenizer = local_tokenizer
            tokenizer_path = args.tokenizer
        else:
            try:
                tokenizer = trainer.client.get_tokenizer()
            except Exception as error:
                raise SystemExit(
                    f"cannot load the tokenizer of {args.base_model!r} ({error}); "
                    "pass --tokenizer DIR (a local copy) or --no-serve"
                ) from error
            tokenizer_path = str(getattr(tokenizer, "name_or_path", "") or args.base_model)
            trainer.image_token_id = image_token_id(tokenizer)
        runner = TinkerRunner(
            sdk,
            service=trainer.service,
            base_model=args.base_model,
            tokenizer=tokenizer,
            tokenizer_path=tokenizer_path,
            served_model_name=args.served_model_name,
            context_length=args.context_length,
            weight_version=args.weight_version,
        )
    app = create_app(trainer, runner, max_body_bytes=int(args.max_body_mb * 1024 * 1024), access=access)
    serve(app, host=args.host, port=args.port, log_level=args.log_level)


def image_token_id(tokenizer: Any) -> int | None:
    """The Qwen-VL image pad token's id, where the tokenizer has one (a vision-language model's)."""
    if tokenizer is None:
        return None
    return tokenizer.get_vocab().get("<|image_pad|>")


if __name__ == "__main__":
    main()
