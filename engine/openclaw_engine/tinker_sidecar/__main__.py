"""`python -m openclaw_engine.tinker_sidecar --base-model M [--lora-rank R] [--port 0]`.

Needs `pip install tinker` and TINKER_API_KEY. `--sdk-module` swaps the SDK for a module with the same
surface (the tests pass their fake); prints `ready http://HOST:PORT` like the engine.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys


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
    args = parser.parse_args(argv)
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

    trainer = TinkerTrainer(sdk, base_model=args.base_model, lora_rank=args.lora_rank, loss_fn=args.loss_fn)
    serve(create_app(trainer), host=args.host, port=args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
