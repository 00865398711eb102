"""What the batch scheduler needs from the model it drives: one packed forward pass, and the state around it.

`ModelRunner` provides it; the scheduler depends on this protocol only, so the runner (which owns the
scheduler) and the scheduler do not import each other.
"""

from __future__ import annotations

from typing import Protocol

import torch

from .lora_serving import LoraSet
from .packed_attention import PackedBatch
from .step_gate import StepGate


class StepModel(Protocol):
    device: torch.device
    num_layers: int
    eos_token_ids: frozenset[int]
    original_logprobs: bool  # log-probs at temperature 1 rather than the sampling temperature
    weight_version: str  # the weights the next step runs with
    cache_epoch: int  # bumped when KV built so far is stale (new weights, or a retract)
    gate: StepGate  # each step is taken under it; pauses and weight swaps hold it between steps
    lora: LoraSet  # the loaded LoRA adapters (changed only between steps, under the gate)

    def decode(self, ids: list[int], *, skip_special_tokens: bool = False) -> str: ...

    def forward_step(
        self, input_ids: list[int], positions: list[int], batch: PackedBatch, keep: list[int]
    ) -> torch.Tensor:
        """One packed forward pass; the float32 logits of the rows in `keep` (indices into the packed row)."""
        ...
