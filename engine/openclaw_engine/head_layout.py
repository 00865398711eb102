"""The LM head's weight stored column-major on CPU, so a decode step's logits are one plain matrix product.

`nn.Linear` computes `x @ W.T` with W stored `[vocab, hidden]` row by row; on CPU that transposed product of a
few rows against the whole vocabulary ran at about two thirds of the speed of the same product against a
contiguous `[hidden, vocab]` matrix (the tiny model, 16,393 x 256: 3.3 against 2.3 ms for 8 rows, one
thread: docs/benchmarks.md). Storing the same parameter with the other strides makes `W.T` that contiguous
matrix, with no second copy of the weights: shapes, names and values are unchanged, so state dicts, LoRA
hooks and the architecture check see the same model. With tied embeddings the input embedding shares the
layout; it only gathers one row per token, which costs microseconds either way.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel


def store_head_column_major(model: PreTrainedModel) -> bool:
    """Re-lay the output embedding's weight in place (CPU only); True when it was re-laid."""
    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear):
        return False
    weight = head.weight
    if weight.device.type != "cpu" or weight.dim() != 2 or weight.stride(0) != weight.shape[1]:
        return False  # GPUs' matrix libraries take either layout at full speed; already re-laid
    with torch.no_grad():
        weight.data = weight.data.t().contiguous().t()
    return True
