"""One epoch of slime under the epoch container contract (docs/slime.md).

`python -m openclaw_engine.slime_plugin.epoch --step-id ID [--train-command CMD] [--convert-command CMD]
[--fsdp-convert-command CMD] -- SLIME_ARGS...`

slime saves into its `--save` folder as it goes, so a killed run could leave half a checkpoint there. This
launcher points `--save` at `slime/` inside a temporary sibling, runs slime (`CMD`, default
`python3 /root/slime/train_async.py`, or `$OPENCLAW_SLIME_TRAIN_COMMAND`), and only when slime exits 0 makes
the temporary folder a Hugging Face model folder (`export_hf`: slime's checkpoint converted or merged into
config.json + safetensors + the base's tokenizer files, slime's own files kept under `slime/`), writes
`trainer_state/state.json` (the step ids of `--load`'s checkpoint plus this one, with its metrics), fsyncs it
and renames it to `--save`. `--load CHECKPOINT` is rewritten to `CHECKPOINT/slime` when that exists, so slime
resumes from its own format (weights, optimizer, RNG). A step id that `--load` already records trains nothing
(exit 0), so the contract's idempotency holds on this side too. A checkpoint that cannot be exported fails the
epoch (exit 65) and publishes nothing. An invalid batch file (a field, a per-method array, a sample drawn at
another temperature than `--rollout-temperature`) is refused before slime starts (exit 66): the caller treats
it as a refusal, not as a failure to retry.

Metrics are read from slime's log lines (`'train/<name>': <number>`); whatever slime does not print is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..checkpoint_state import state_file, step_fingerprint, write_state
from ..durable_files import publish_dir, staged_dir
from ..errors import EngineError
from .batch_loader import (
    BATCH_FILE_ENV,
    check_temperature,
    image_processor_for,
    read_batch_file,
    samples_from_batch,
)
from .export_hf import (
    DEFAULT_FSDP_CONVERT_COMMAND,
    DEFAULT_TORCH_DIST_CONVERT_COMMAND,
    FSDP_CONVERT_COMMAND_ENV,
    TORCH_DIST_CONVERT_COMMAND_ENV,
    TRACKER_FILE,
    ExportError,
    export_hf,
)

SLIME_DIR = "slime"  # slime's own checkpoint inside a published one: what the next epoch's --load reads
EXPORT_FAILED = 65  # slime trained, but its checkpoint could not be made a Hugging Face folder
EPOCH_REFUSED = 66  # the batch file is invalid for this trainer: retrying cannot help (docs/slime.md)
DEFAULT_TRAIN_COMMAND = "python3 /root/slime/train_async.py"
_METRIC = re.compile(
    r"['\"]train/(\w+)['\"]\s*:\s*(?:tensor\()?([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"
)


def _flag_value(args: list[str], name: str) -> str | None:
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def _replace_flag(args: list[str], name: str, value: str) -> list[str]:
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == name and i + 1 < len(args):
            skip = True
            continue
        if arg.startswith(name + "="):
            continue
        out.append(arg)
    return [*out, name, value]


def read_steps(checkpoint: str | None) -> tuple[dict[str, Any], int]:
    """The step records and step count of a contract checkpoint (empty for none or a plain slime folder)."""
    if not checkpoint:
        return {}, 0
    path = state_file(Path(checkpoint))
    if not path.is_file():
        return {}, 0
    state = json.loads(path.read_text())
    return dict(state.get("steps", {})), int(state.get("step_count", 0))


def parse_metrics(lines: list[str]) -> dict[str, float]:
    """`train/*` numbers from slime's log lines; a later value of the same name wins."""
    metrics: dict[str, float] = {}
    for line in lines:
        for name, value in _METRIC.findall(line):
            metrics[name] = float(value)
    return metrics


def _event(name: str, **fields: Any) -> None:
    print(json.dumps({"event": name, "t": round(time.time(), 3), **fields}), flush=True)


def slime_load(load: str | None) -> str | None:
    """Where slime resumes from: a published checkpoint's `slime/` folder, else `--load` as given."""
    if load and (Path(load) / SLIME_DIR).is_dir():
        return str(Path(load) / SLIME_DIR)
    return load


def run_epoch(
    step_id: str,
    train_command: list[str],
    slime_args: list[str],
    *,
    torch_dist_convert_command: list[str] | None = None,
    fsdp_convert_command: list[str] | None = None,
) -> int:
    _event("started")
    save = _flag_value(slime_args, "--save")
    if not save:
        raise ValueError("the slime arguments have no --save")
    batch_file = os.environ.get(BATCH_FILE_ENV)
    if not batch_file:
        raise ValueError(f"${BATCH_FILE_ENV} is not set")
    try:
        request = read_batch_file(batch_file)
        rollout_temperature = _flag_value(slime_args, "--rollout-temperature")
        check_temperature(request, float(rollout_temperature or 1.0))
        # Images are checked against their tokens here, so a bad one is a refusal before slime starts.
        processor = image_processor_for(request, _flag_value(slime_args, "--hf-checkpoint"))
        if processor is not None:
            samples_from_batch(request, processor=processor)
    except (EngineError, ValueError) as exc:
        # The batch itself is wrong: it would fail the same way on every attempt.
        print(f"batch refused: {exc}", file=sys.stderr, flush=True)
        _event("refused", error=str(exc))
        return EPOCH_REFUSED
    if request.step_id != step_id:
        raise ValueError(f"{batch_file} holds step {request.step_id!r}, not {step_id!r}")
    load = _flag_value(slime_args, "--load")
    steps, step_count = read_steps(load)
    if step_id in steps:
        _event("duplicate", step_id=step_id)
        return 0
    hf_checkpoint = _flag_value(slime_args, "--hf-checkpoint")
    run_args = slime_args
    resume = slime_load(load)
    if resume is not None and resume != load:
        run_args = _replace_flag(run_args, "--load", resume)
    elif load and not (Path(load) / TRACKER_FILE).is_file():
        # slime (raw Megatron or FSDP mode) then falls back to --ref-load, i.e. starts from the base.
        print(
            f"warning: --load {load} holds no slime checkpoint; slime may start from the base",
            file=sys.stderr,
        )

    final = Path(save)
    lines: list[str] = []
    with staged_dir(final) as tmp:
        proc = subprocess.Popen(
            [*train_command, *_replace_flag(run_args, "--save", str(tmp / SLIME_DIR))],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if "train/" in line:
                lines.append(line)
        code = proc.wait()
        if code != 0:
            return code
        _event("trained")
        try:
            found = export_hf(
                tmp / SLIME_DIR,
                tmp,
                Path(hf_checkpoint) if hf_checkpoint else None,
                torch_dist_convert_command=torch_dist_convert_command
                or shlex.split(DEFAULT_TORCH_DIST_CONVERT_COMMAND),
                fsdp_convert_command=fsdp_convert_command or shlex.split(DEFAULT_FSDP_CONVERT_COMMAND),
            )
        except ExportError as exc:
            print(f"checkpoint export failed: {exc}", file=sys.stderr, flush=True)
            return EXPORT_FAILED
        _event("exported", format=found.format)
        metrics: dict[str, Any] = {
            "step_id": step_id,
            "step": step_count + 1,
            "samples": len(request.samples),
            "tokens": sum(sum(s.loss_mask) for s in request.samples),
            **parse_metrics(lines),
        }
        state = {
            "format": 1,
            "source": "slime",
            "step_count": step_count + 1,
            "steps": {**steps, step_id: {"metrics": metrics, "fingerprint": step_fingerprint(request)}},
        }
        write_state(tmp, state)
        publish_dir(tmp, final)
    _event("saved", path=str(final), metrics=metrics)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print(
            "usage: ... --step-id ID [--train-command CMD] [--convert-command CMD]"
            " [--fsdp-convert-command CMD] -- SLIME_ARGS...",
            file=sys.stderr,
        )
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m openclaw_engine.slime_plugin.epoch")
    parser.add_argument("--step-id", required=True)
    parser.add_argument(
        "--train-command", default=os.environ.get("OPENCLAW_SLIME_TRAIN_COMMAND", DEFAULT_TRAIN_COMMAND)
    )
    parser.add_argument(
        "--convert-command",
        default=os.environ.get(TORCH_DIST_CONVERT_COMMAND_ENV, DEFAULT_TORCH_DIST_CONVERT_COMMAND),
        help="slime's torch_dist->HF converter (given --input-dir --output-dir --origin-hf-dir --vocab-size)",
    )
    parser.add_argument(
        "--fsdp-convert-command",
        default=os.environ.get(FSDP_CONVERT_COMMAND_ENV, DEFAULT_FSDP_CONVERT_COMMAND),
        help="slime's FSDP checkpoint -> HF converter (--input-dir/--output-dir/--origin-hf-dir added)",
    )
    args = parser.parse_args(argv[:split])
    return run_epoch(
        args.step_id,
        shlex.split(args.train_command),
        argv[split + 1 :],
        torch_dist_convert_command=shlex.split(args.convert_command),
        fsdp_convert_command=shlex.split(args.fsdp_convert_command),
    )


if __name__ == "__main__":
    sys.exit(main())
