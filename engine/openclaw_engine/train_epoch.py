"""One training epoch as a process: load the last checkpoint, train one batch, save the next checkpoint, exit.

    python -m openclaw_engine train-epoch --base MODEL --checkpoint-in DIR|none --batch FILE \\
        --checkpoint-out DIR

This is the container contract of the slime trainer backend (docs/slime.md), implemented with the reference
trainer so it runs on CPU. The batch file is a `/train_step` request body (TRAINING.md). The checkpoint
written to `--checkpoint-out` is atomic (temp folder + rename) and records every applied step id with its
metrics in `trainer_state/state.json`, which is where the caller reads the metrics back. A batch whose step
id the input checkpoint already holds trains nothing and writes nothing (exit 0).

Progress goes to stdout as JSON lines `{"event": ..., "t": unix seconds, ...}` so the caller can measure where
the time goes (process start, model ready, trained, saved).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

# Before any heavy import: the caller measures container start -> process start -> training start.
_PROCESS_START = time.time()


def _event(name: str, **fields: Any) -> None:
    print(json.dumps({"event": name, "t": round(time.time(), 3), **fields}), flush=True)


def run_epoch(
    base: str,
    checkpoint_in: str | None,
    batch_file: str,
    checkpoint_out: str,
    lora_rank: int = 0,
    lora_alpha: int | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """Trains the batch in `batch_file` on top of `checkpoint_in` (or the base) and saves `checkpoint_out`."""
    _event("started", process_start=round(_PROCESS_START, 3))
    request = json.loads(Path(batch_file).read_text())
    if not isinstance(request, dict) or not isinstance(request.get("step_id"), str):
        raise ValueError(f"{batch_file}: not a train_step request (an object with a string step_id)")

    from .trainer import Trainer

    trainer = Trainer(base, device=device, lora_rank=lora_rank, lora_alpha=lora_alpha)
    if checkpoint_in:
        trainer.load_checkpoint(checkpoint_in)
    _event("ready", step_count=trainer.step_count)
    metrics = trainer.train_step(request)
    _event("trained", step_id=request["step_id"], duplicate=metrics.get("duplicate", False))
    if not metrics.get("duplicate"):
        trainer.save_checkpoint(checkpoint_out)
        _event("saved", path=checkpoint_out)
    return metrics


# The batch is invalid for the trainer (EngineError 4xx: a field, a non-finite gradient): retrying the same
# batch cannot help, so the caller makes its samples exclusions (docs/slime.md, the epoch contract).
EPOCH_REFUSED = 66


def main(args: Any) -> int:
    from .errors import EngineError

    try:
        metrics = run_epoch(
            args.base,
            None if args.checkpoint_in in (None, "", "none") else args.checkpoint_in,
            args.batch,
            args.checkpoint_out,
            lora_rank=args.lora_rank,
            lora_alpha=args.lora_alpha,
            device=args.device,
        )
    except EngineError as exc:
        if exc.status >= 500:
            _event("failed", error=f"EngineError: {exc}")
            print(f"train-epoch failed: {exc}", file=sys.stderr, flush=True)
            return 1
        _event("refused", error=str(exc), status=exc.status)
        print(f"train-epoch refused the batch: {exc}", file=sys.stderr, flush=True)
        return EPOCH_REFUSED
    except Exception as exc:  # the exit status is the contract; the message goes to the logs
        _event("failed", error=f"{type(exc).__name__}: {exc}")
        print(f"train-epoch failed: {exc}", file=sys.stderr, flush=True)
        return 1
    _event("done", metrics=metrics)
    return 0
