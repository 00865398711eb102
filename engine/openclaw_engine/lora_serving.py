"""Several PEFT LoRA adapters served on one base model at once, chosen per request, batched together.

An adapter is a PEFT folder (`adapter_config.json` + `adapter_model.safetensors`, what the trainer writes with
`save_pretrained`). Its A and B matrices are loaded onto the model's device and dtype; the base weights are
never touched. Each targeted `nn.Linear` of the base gets a forward hook which, for the rows of the packed row
that belong to requests with an adapter, adds `(x[rows] @ A^T @ B^T) * scale` to the base output (scale =
lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora): one product per adapter per module, over all of its
requests' rows (a slice when they are contiguous, else gathered and added back). Rows of requests without an
adapter get nothing added, so their output is exactly the base model's. Hooks (not wrapper modules) keep the
model's parameter names, so weight updates and their architecture check see the same model as before.

The ranges of one forward pass are set by the runner around it (`LoraSet.active`); the scheduler's thread is
the only one running forward passes, and loads/unloads change `LoraSet.adapters` only under the step gate.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

ADAPTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
DEFAULT_MAX_LORAS = 8
_CONFIG = "adapter_config.json"
_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
_KEY = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<which>[AB])(?:\.[^.]+)?\.weight$")
_epochs = itertools.count(1)  # every load gets a new one: the prefix cache keys KV by it


class AdapterError(ValueError):
    """An adapter that cannot be served here (bad folder, unsupported config, shape mismatch)."""


@dataclass(frozen=True)
class LoraAdapter:
    name: str
    path: str
    weight_version: str
    epoch: int  # unique per load: KV built under another epoch is stale
    scale: float
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]]  # module name -> (A [r, in], B [out, r])

    @property
    def nbytes(self) -> int:
        return sum(
            a.numel() * a.element_size() + b.numel() * b.element_size() for a, b in self.weights.values()
        )

    @property
    def cache_key(self) -> tuple[str, int]:
        return (self.name, self.epoch)


Ranges = list[tuple[int, int, LoraAdapter]]  # (start, end) of the packed row, and its adapter
Groups = list[tuple[LoraAdapter, slice | torch.Tensor]]  # each adapter's rows of the packed row


def read_adapter(
    name: str, path: str | Path, weight_version: str, model: torch.nn.Module, dtype: torch.dtype
) -> LoraAdapter:
    """Load and check a PEFT LoRA folder against `model`; raises AdapterError with a readable reason."""
    folder = Path(path)
    if not folder.is_dir():
        raise AdapterError(f"lora_path {str(path)!r} is not a directory")
    try:
        config = json.loads((folder / _CONFIG).read_text())
    except (OSError, ValueError) as exc:
        raise AdapterError(f"cannot read {_CONFIG} in {str(path)!r}: {exc}") from None
    scale = _scale(config)
    weights_file = next((folder / f for f in _WEIGHTS if (folder / f).is_file()), None)
    if weights_file is None:
        raise AdapterError(f"{str(path)!r} has no adapter_model.safetensors")
    try:
        if weights_file.suffix == ".safetensors":
            tensors = load_file(str(weights_file), device="cpu")
        else:
            tensors = torch.load(str(weights_file), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise AdapterError(f"cannot read {weights_file.name}: {exc}") from None
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in tensors.items():
        match = _KEY.match(key)
        if match is None:
            raise AdapterError(f"unsupported tensor {key!r} (only lora_A/lora_B weights can be served)")
        pairs.setdefault(match["module"], {})[match["which"]] = tensor
    if not pairs:
        raise AdapterError("the adapter has no LoRA weights")
    modules = dict(model.named_modules())
    device = next(model.parameters()).device
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for module_name, pair in sorted(pairs.items()):
        if set(pair) != {"A", "B"}:
            raise AdapterError(f"{module_name}: lora_A and lora_B must both be present")
        target = modules.get(module_name)
        if not isinstance(target, torch.nn.Linear):
            raise AdapterError(f"module {module_name!r} is not a linear layer of the base model")
        a, b = pair["A"], pair["B"]
        if a.dim() != 2 or b.dim() != 2 or a.shape[0] != b.shape[1]:
            raise AdapterError(
                f"{module_name}: lora_A {tuple(a.shape)} and lora_B {tuple(b.shape)} do not pair"
            )
        if a.shape[1] != target.in_features or b.shape[0] != target.out_features:
            raise AdapterError(
                f"{module_name}: adapter shape {tuple(b.shape[:1]) + tuple(a.shape[1:])} (out, in) does not "
                f"match the base's ({target.out_features}, {target.in_features})"
            )
        weights[module_name] = (
            a.to(device=device, dtype=dtype).contiguous(),
            b.to(device=device, dtype=dtype).contiguous(),
        )
    return LoraAdapter(name, str(path), weight_version, next(_epochs), scale, weights)


def _scale(config: dict[str, Any]) -> float:
    if str(config.get("peft_type", "LORA")).upper() != "LORA":
        raise AdapterError(f"peft_type {config.get('peft_type')!r} is not supported (LORA only)")
    if config.get("use_dora"):
        raise AdapterError("DoRA adapters (use_dora) are not supported")
    if config.get("bias", "none") != "none":
        raise AdapterError(f"bias {config.get('bias')!r} is not supported (none only)")
    for field in ("modules_to_save", "rank_pattern", "alpha_pattern", "layers_to_transform"):
        if config.get(field):
            raise AdapterError(f"{field} is not supported")
    if config.get("fan_in_fan_out"):
        raise AdapterError("fan_in_fan_out is not supported")
    r, alpha = config.get("r"), config.get("lora_alpha")
    if not isinstance(r, int) or r <= 0 or not isinstance(alpha, int | float):
        raise AdapterError(f"adapter_config.json needs a positive r and a lora_alpha (got r={r!r})")
    return float(alpha) / (math.sqrt(r) if config.get("use_rslora") else r)


class LoraSet:
    """The loaded adapters and the hooks that apply them; `active` holds the current forward pass's ranges."""

    def __init__(self, max_loras: int = DEFAULT_MAX_LORAS) -> None:
        self.max_loras = max_loras
        self.adapters: dict[str, LoraAdapter] = {}
        self.used = False  # an adapter was loaded once
        self.active: Groups = []
        self._hooked: dict[int, set[str]] = {}  # id(model) -> names of its hooked modules
        self._handles: list[Any] = []

    def add(self, adapter: LoraAdapter) -> None:
        self.adapters = {**self.adapters, adapter.name: adapter}  # a new dict: readers see old or new
        self.used = True

    def hook(self, model: torch.nn.Module, names: set[str]) -> None:
        """Hook `names` of `model` (those not hooked yet)."""
        done = self._hooked.setdefault(id(model), set())
        modules = dict(model.named_modules())
        for name in sorted(names - done):
            self._handles.append(modules[name].register_forward_hook(self._hook_for(name)))
            done.add(name)

    def rehook(self, model: torch.nn.Module) -> None:
        """A new base model: hook every module a loaded adapter targets."""
        self._hooked = {}
        self._handles = []
        self.hook(model, {m for a in self.adapters.values() for m in a.weights})

    def _hook_for(self, name: str) -> Any:
        def hook(
            _: torch.nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor
        ) -> torch.Tensor | None:
            groups = self.active
            if not groups:
                return None
            x = inputs[0]
            for adapter, rows in groups:
                pair = adapter.weights.get(name)
                if pair is None:
                    continue
                a, b = pair
                if isinstance(rows, slice):
                    output[..., rows, :] += (x[..., rows, :] @ a.T @ b.T) * adapter.scale
                else:  # the adapter's rows are spread over the packed row: gather, then add back
                    delta = (x[0, rows] @ a.T @ b.T) * adapter.scale
                    output[0].index_add_(0, rows, delta)
            return output

        return hook

    @contextmanager
    def applied(self, ranges: Ranges, device: torch.device) -> Iterator[None]:
        self.active = _groups(ranges, device)
        try:
            yield
        finally:
            self.active = []


def _groups(ranges: Ranges, device: torch.device) -> Groups:
    """One entry per adapter: a slice when its rows are contiguous, else their indices (one product each)."""
    by_adapter: dict[int, tuple[LoraAdapter, list[tuple[int, int]]]] = {}
    for start, end, adapter in ranges:
        by_adapter.setdefault(id(adapter), (adapter, []))[1].append((start, end))
    out: Groups = []
    for adapter, spans in by_adapter.values():
        merged: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and merged[-1][1] == start:
                merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        if len(merged) == 1:
            out.append((adapter, slice(*merged[0])))
        else:
            rows = [i for start, end in merged for i in range(start, end)]
            out.append((adapter, torch.tensor(rows, dtype=torch.long, device=device)))
    return out
