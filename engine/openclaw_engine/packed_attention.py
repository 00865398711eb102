"""One forward pass over many sequences: the tokens of every sequence in a step, packed into one row.

The model's own modules (embeddings, norms, rotary embeddings at each token's own position, projections, MLP,
LM head) run once over the packed row, so the matrix products are batched across requests. Only attention is
per sequence: transformers calls the function registered here (`PACKED_ATTENTION`) for every layer with the
packed queries, keys and values; it appends each sequence's new keys and values to that sequence's own cache
(`SequenceKV`) and attends over it with `scaled_dot_product_attention`. This is vLLM's flattened-batch layout
with per-sequence attention in place of a varlen kernel; any Hugging Face decoder whose attention goes through
transformers' attention interface runs unchanged (Qwen2/3, Llama, Mistral, ...).

A sequence's KV cache is contiguous per layer and grows by doubling, so a decode step reads it in place; a
prefix taken from the prefix cache is copied in once (`load`), never gathered again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from transformers import AttentionInterface

PACKED_ATTENTION = "openclaw_packed"
_MIN_CAPACITY = 64


class SequenceKV:
    """One sequence's keys and values per layer: `[kv_heads, capacity, head_dim]` buffers, `length` filled."""

    def __init__(self, num_layers: int) -> None:
        self.length = 0
        self._k: list[torch.Tensor | None] = [None] * num_layers
        self._v: list[torch.Tensor | None] = [None] * num_layers

    @property
    def num_layers(self) -> int:
        return len(self._k)

    def layer(self, index: int, end: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Views of layer `index`'s keys and values for positions [0, end) (default: all filled ones)."""
        k, v = self._k[index], self._v[index]
        assert k is not None and v is not None
        stop = self.length if end is None else end
        return k[:, :stop], v[:, :stop]

    def write(self, index: int, start: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store `k`, `v` (`[kv_heads, n, head_dim]`) at positions [start, start + n) of layer `index`."""
        end = start + k.shape[1]
        buf_k, buf_v = self._k[index], self._v[index]
        if buf_k is None or buf_v is None or buf_k.shape[1] < end:
            capacity = max(_MIN_CAPACITY, end, 2 * (buf_k.shape[1] if buf_k is not None else 0))
            new_k = k.new_empty((k.shape[0], capacity, k.shape[2]))
            new_v = v.new_empty((v.shape[0], capacity, v.shape[2]))
            if buf_k is not None and buf_v is not None and start > 0:
                new_k[:, :start] = buf_k[:, :start]
                new_v[:, :start] = buf_v[:, :start]
            self._k[index], self._v[index] = buf_k, buf_v = new_k, new_v
        buf_k[:, start:end] = k
        buf_v[:, start:end] = v

    def load(self, segments: list[list[tuple[torch.Tensor, torch.Tensor]]]) -> None:
        """Fill positions [0, n) from cached segments (each: per layer `(k, v)` of the same length)."""
        position = 0
        for segment in segments:
            for index, (k, v) in enumerate(segment):
                self.write(index, position, k, v)
            position += segment[0][0].shape[1]
        self.length = position

    def copy_range(self, start: int, end: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per-layer copies of positions [start, end) (what the prefix cache keeps)."""
        return [
            (k[:, start:end].clone(), v[:, start:end].clone())
            for k, v in (self.layer(i) for i in range(self.num_layers))
        ]


@dataclass(frozen=True)
class PackedSegment:
    """Sequence `kv`'s new tokens: packed rows [offset, offset + count), at positions from kv.length on."""

    kv: SequenceKV
    offset: int
    count: int


@dataclass(frozen=True)
class PackedBatch:
    segments: list[PackedSegment]
    # LoRA ranges of the packed row: (start, end, adapter) of requests served with one (lora_serving.py)
    lora: list[tuple[int, int, Any]] = field(default_factory=list)


def _causal_mask(past: int, count: int, window: int | None, device: torch.device) -> torch.Tensor:
    """Query i (position past + i) sees key positions j <= past + i (and > past + i - window)."""
    q_pos = past + torch.arange(count, device=device)[:, None]
    k_pos = torch.arange(past + count, device=device)[None, :]
    mask = k_pos <= q_pos
    if window is not None:
        mask &= k_pos > q_pos - window
    return mask


def packed_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    sliding_window: int | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature; `query` is `[1, heads, T, d]` over the packed row."""
    batch: PackedBatch = kwargs["packed_batch"]
    if kwargs.get("softcap") is not None:
        raise NotImplementedError("attention logit soft-capping is not supported by the packed runner")
    layer = int(module.layer_idx)  # type: ignore[arg-type]
    out = query.new_empty((query.shape[2], query.shape[1], query.shape[3]))
    for seg in batch.segments:
        rows = slice(seg.offset, seg.offset + seg.count)
        past = seg.kv.length
        seg.kv.write(layer, past, key[0, :, rows], value[0, :, rows])
        k, v = seg.kv.layer(layer, past + seg.count)
        q = query[0, :, rows]
        if seg.count == 1:
            if sliding_window is not None and k.shape[1] > sliding_window:
                k, v = k[:, -sliding_window:], v[:, -sliding_window:]
            attended = F.scaled_dot_product_attention(
                q[None], k[None], v[None], scale=scaling, enable_gqa=True
            )
        elif past == 0 and sliding_window is None:
            attended = F.scaled_dot_product_attention(
                q[None], k[None], v[None], scale=scaling, is_causal=True, enable_gqa=True
            )
        else:
            mask = _causal_mask(past, seg.count, sliding_window, q.device)
            attended = F.scaled_dot_product_attention(
                q[None], k[None], v[None], attn_mask=mask, scale=scaling, enable_gqa=True
            )
        out[rows] = attended[0].transpose(0, 1)
    return out[None], None


AttentionInterface.register(PACKED_ATTENTION, packed_attention)
