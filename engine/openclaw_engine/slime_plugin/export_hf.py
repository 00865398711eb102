"""Turning what slime saved into the Hugging Face model folder the epoch contract publishes (docs/slime.md).

slime's `--save` folder is not what the serving engine loads with `/update_weights_from_disk`. What it is
depends on the backend (read from slime's sources, docs/slime.md "What slime saves"):

- Megatron: `latest_checkpointed_iteration.txt` + `iter_NNNNNNN/` in torch_dist format (`common.pt`,
  `.metadata`, `*.distcp`); slime's `tools/convert_torch_dist_to_hf.py` turns one `iter_*` folder into HF.
- FSDP: the same tracker file + `iter_NNNNNNN/{model,optimizer,lr_scheduler}/` (torch.distributed.checkpoint),
  `rng.pt`, `meta.json`; `tools/convert_fsdp_to_hf.py` converts `model/`.
- FSDP with LoRA (OpenClaw-RL's slime, spec 8.1): `iter_NNNNNNN/model/` holds only the adapter,
  `adapter_weights.pt` (the PEFT model's `lora_` tensors) + `adapter_config.json`; merged into the base here
  with peft. A PEFT `save_pretrained` adapter (`adapter_model.safetensors`) is merged the same way.
- A folder that already is a Hugging Face model is taken as it is.

`export_hf(raw, out, base_model, ...)` detects the format in `raw`, writes the model folder's files at the top
of `out` (config.json, safetensors weights, and every non-weight file of the base: tokenizer, chat template,
generation config) and checks the result. `out` is the epoch's temporary folder, so a failure publishes
nothing. Anything it cannot recognise is an `ExportError` that names what it found.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DEFAULT_TORCH_DIST_CONVERT_COMMAND = "python3 /root/slime/tools/convert_torch_dist_to_hf.py"
DEFAULT_FSDP_CONVERT_COMMAND = "python3 /root/slime/tools/convert_fsdp_to_hf.py"
TORCH_DIST_CONVERT_COMMAND_ENV = "OPENCLAW_SLIME_CONVERT_COMMAND"
FSDP_CONVERT_COMMAND_ENV = "OPENCLAW_SLIME_FSDP_CONVERT_COMMAND"

TRACKER_FILE = "latest_checkpointed_iteration.txt"
ADAPTER_CONFIG = "adapter_config.json"
# The adapter's weights: OpenClaw-RL's slime (lora_utils.save_lora_checkpoint), then PEFT's save_pretrained.
ADAPTER_WEIGHTS = ("adapter_weights.pt", "adapter_model.safetensors", "adapter_model.bin")
# Files that are weights, never copied from the base next to converted weights.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".h5")
_WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_STAGE = ".hf-export"

Format = Literal["hf", "lora_adapter", "torch_dist", "fsdp_dcp"]


class ExportError(Exception):
    """slime's checkpoint could not be made a Hugging Face model folder."""


@dataclass(frozen=True)
class SlimeCheckpoint:
    format: Format
    path: Path  # the folder holding that format's files


def _listing(folder: Path) -> str:
    if not folder.is_dir():
        return "nothing"
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    return ", ".join(names[:20]) + (f" ... ({len(names)} entries)" if len(names) > 20 else "") or "nothing"


def _is_hf_model(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def _is_adapter(folder: Path) -> bool:
    return (folder / ADAPTER_CONFIG).is_file() and any((folder / w).is_file() for w in ADAPTER_WEIGHTS)


def _iteration_folder(raw: Path) -> Path:
    """The `iter_*` folder the tracker file names (Megatron and slime's FSDP save write the same tracker)."""
    text = (raw / TRACKER_FILE).read_text().strip()
    if text == "release":
        folder = raw / "release"
    elif text.isdigit():
        folder = raw / f"iter_{int(text):07d}"
    else:
        raise ExportError(f"{raw / TRACKER_FILE} holds {text!r}, not an iteration number")
    if not folder.is_dir():
        raise ExportError(f"{raw / TRACKER_FILE} names {folder.name}, which slime did not write")
    return folder


def detect_format(raw: Path) -> SlimeCheckpoint:
    """Which of the formats slime wrote into `raw` (its `--save` folder)."""
    if not raw.is_dir() or not any(raw.iterdir()):
        raise ExportError(f"slime wrote nothing into its --save folder {raw}")
    if _is_hf_model(raw):
        return SlimeCheckpoint("hf", raw)
    if _is_adapter(raw):
        return SlimeCheckpoint("lora_adapter", raw)
    if (raw / TRACKER_FILE).is_file():
        it = _iteration_folder(raw)
        if _is_adapter(it / "model"):
            return SlimeCheckpoint("lora_adapter", it / "model")
        if (it / "model" / ".metadata").is_file():
            return SlimeCheckpoint("fsdp_dcp", it)
        if (it / "common.pt").is_file() and (it / ".metadata").is_file():
            return SlimeCheckpoint("torch_dist", it)
        if _is_hf_model(it):
            return SlimeCheckpoint("hf", it)
        raise ExportError(
            f"{it} is neither a Megatron torch_dist checkpoint (common.pt + .metadata), an FSDP checkpoint "
            f"(model/.metadata) nor a LoRA adapter (model/{ADAPTER_CONFIG} + one of "
            f"{', '.join(ADAPTER_WEIGHTS)}); it holds: {_listing(it)}"
        )
    raise ExportError(
        f"unknown checkpoint format in {raw}: no config.json with safetensors, no {ADAPTER_CONFIG} with "
        f"adapter weights, no {TRACKER_FILE}; it holds: {_listing(raw)}"
    )


def _vocab_size(base_model: Path) -> int | None:
    config = json.loads((base_model / "config.json").read_text())
    size = config.get("vocab_size") or config.get("text_config", {}).get("vocab_size")
    return int(size) if size else None


def fsdp_convert_args(input_dir: Path, output_dir: Path, base_model: Path) -> list[str]:
    """The arguments of slime's `tools/convert_fsdp_to_hf.py` for one `iter_*` folder."""
    return [
        "--input-dir",
        str(input_dir),
        "--output-dir",
        str(output_dir),
        "--origin-hf-dir",
        str(base_model),
    ]


def torch_dist_convert_args(input_dir: Path, output_dir: Path, base_model: Path) -> list[str]:
    """The arguments of slime's `tools/convert_torch_dist_to_hf.py` for one `iter_*` folder.

    The FSDP converter's arguments, plus `--vocab-size`, which cuts Megatron's padded embedding/output rows
    back to the model's vocabulary (a no-op when nothing was padded); `--origin-hf-dir` names the parameters
    and supplies config and tokenizer files.
    """
    args = fsdp_convert_args(input_dir, output_dir, base_model)
    vocab = _vocab_size(base_model)
    return [*args, "--vocab-size", str(vocab)] if vocab else args


def _run_converter(command: list[str], args: list[str], what: str) -> None:
    print(json.dumps({"event": "converting", "format": what, "command": [*command, *args]}), flush=True)
    proc = subprocess.run([*command, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail = "\n".join(proc.stdout.splitlines()[-20:])
    if proc.stdout:
        print(proc.stdout, end="" if proc.stdout.endswith("\n") else "\n", flush=True)
    if proc.returncode != 0:
        raise ExportError(f"the {what} converter {' '.join(command)} exited {proc.returncode}:\n{tail}")


def _load_adapter_state(adapter_dir: Path) -> dict:
    import torch

    for name in ADAPTER_WEIGHTS:
        path = adapter_dir / name
        if not path.is_file():
            continue
        if name.endswith(".safetensors"):
            from safetensors.torch import load_file

            return load_file(str(path))
        return torch.load(path, map_location="cpu", weights_only=True)
    raise ExportError(f"{adapter_dir} has no adapter weights ({', '.join(ADAPTER_WEIGHTS)})")


# Module wrappers FSDP, activation checkpointing and torch.compile put into parameter names.
_WRAPPERS = re.compile(r"(?:_fsdp_wrapped_module|_checkpoint_wrapped_module|_orig_mod)\.")


def _peft_saved_key(key: str, adapter_name: str) -> str:
    """A key as PEFT's save_pretrained writes it: no wrappers, no adapter name (`lora_A.weight`)."""
    key = _WRAPPERS.sub("", key)
    return re.sub(rf"(\.lora_\w+?)\.{re.escape(adapter_name)}(?=\.|$)", r"\1", key)


def merge_lora_adapter(adapter_dir: Path, base_model: Path, out_dir: Path) -> None:
    """Merge a LoRA adapter into the base model (W + B·A·alpha/r, by peft's merge_and_unload) and save it.

    Every `lora_` tensor of the adapter must land on a parameter of the model built from its config and every
    LoRA parameter of that model must be in the file; anything else means adapter and base do not belong
    together, which is an error rather than a silently unmerged model.
    """
    import torch
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        lora_config = LoraConfig.from_pretrained(str(adapter_dir))
    except Exception as exc:
        raise ExportError(f"{adapter_dir / ADAPTER_CONFIG} is not a LoRA config: {exc}") from exc
    hf_config = AutoConfig.from_pretrained(base_model, trust_remote_code=True)
    model_cls = AutoModelForCausalLM
    if hasattr(hf_config, "vision_config"):
        from transformers import AutoModelForImageTextToText as model_cls
    base = model_cls.from_pretrained(base_model, dtype="auto", trust_remote_code=True)
    lora_config.inference_mode = True
    model = get_peft_model(base, lora_config)

    state = {_peft_saved_key(k, "default"): v for k, v in _load_adapter_state(adapter_dir).items()}
    if not state:
        raise ExportError(f"the adapter in {adapter_dir} holds no tensors")
    result = set_peft_model_state_dict(model, state, adapter_name="default")
    unexpected = list(result.unexpected_keys)
    missing = [k for k in result.missing_keys if "lora_" in k]
    if unexpected or missing:
        raise ExportError(
            f"the adapter in {adapter_dir} does not fit {base_model}: "
            f"{len(unexpected)} unknown tensors (e.g. {unexpected[:3]}), "
            f"{len(missing)} LoRA parameters missing (e.g. {missing[:3]})"
        )
    with torch.no_grad():
        merged = model.merge_and_unload()
    merged.save_pretrained(out_dir, safe_serialization=True)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)  # same file system: no second copy of multi-GB weights
    except OSError:
        shutil.copy2(src, dst)


def copy_base_assets(base_model: Path, out_dir: Path) -> None:
    """Every non-weight file of the base (tokenizer, chat template, configs) `out_dir` does not have yet."""
    for src in base_model.iterdir():
        if not src.is_file() or src.name in _WEIGHT_INDEXES or src.name.endswith(_WEIGHT_SUFFIXES):
            continue
        if not (out_dir / src.name).exists():
            shutil.copy2(src, out_dir / src.name)


def check_hf_folder(folder: Path) -> None:
    if not (folder / "config.json").is_file():
        raise ExportError(f"the exported folder {folder} has no config.json")
    shards = sorted(p.name for p in folder.glob("*.safetensors"))
    if not shards:
        raise ExportError(
            f"the exported folder {folder} has no safetensors weights; it holds: {_listing(folder)}"
        )
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        wanted = set(json.loads(index.read_text()).get("weight_map", {}).values())
        absent = sorted(wanted - set(shards))
        if absent:
            raise ExportError(f"{index} names shards that were not written: {absent}")


def export_hf(
    raw: Path,
    out: Path,
    base_model: Path | None,
    *,
    torch_dist_convert_command: list[str],
    fsdp_convert_command: list[str],
) -> SlimeCheckpoint:
    """Writes the Hugging Face model folder for slime's checkpoint `raw` at the top of `out`; returns it."""
    found = detect_format(raw)
    if found.format != "hf" and (base_model is None or not (base_model / "config.json").is_file()):
        raise ExportError(
            f"converting a {found.format} checkpoint needs --hf-checkpoint, a model folder: {base_model}"
        )
    stage = out / _STAGE  # converters refuse an existing output folder; the stage is moved up afterwards
    shutil.rmtree(stage, ignore_errors=True)
    try:
        if found.format == "hf":
            stage.mkdir()
            for src in found.path.iterdir():
                if src.is_file() and src.name != TRACKER_FILE:
                    _link_or_copy(src, stage / src.name)
        elif found.format == "lora_adapter":
            assert base_model is not None
            merge_lora_adapter(found.path, base_model, stage)
        elif found.format == "torch_dist":
            assert base_model is not None
            args = torch_dist_convert_args(found.path, stage, base_model)
            _run_converter(torch_dist_convert_command, args, "torch_dist")
        else:
            assert base_model is not None
            _run_converter(fsdp_convert_command, fsdp_convert_args(found.path, stage, base_model), "fsdp")
        if base_model is not None:
            copy_base_assets(base_model, stage)
        check_hf_folder(stage)
        for src in stage.iterdir():
            if (out / src.name).exists():
                raise ExportError(f"the exported file {src.name} would replace {out / src.name}")
            os.rename(src, out / src.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return found
