"""The LM head's product on CPU: the whole vocabulary against a step's rows, in the faster layout for them.

`nn.Linear` computes `x @ W.T` with W stored `[vocab, hidden]` row by row. On this CPU's matrix library (MKL,
two cores) that product's speed depends on the layout and on how many rows there are (the tiny model, 16,393 x
256, docs/benchmarks.md): for one row, `x @ W.T` against a contiguous `[hidden, vocab]` matrix is fastest
(0.4 against 0.8 ms for the row-major one), but for 8 rows MKL runs it on one thread (2.2 ms), while `W @ x.T`
against the row-major W splits the vocabulary over both threads (1.2 ms; 2.3 against 3.5 ms at 32 rows).

So the head's parameter is re-laid column-major in place (its `W.T` is that contiguous matrix; shapes, names
and values are unchanged, so state dicts, LoRA hooks and the architecture check see the same model; with tied
embeddings the input embedding shares the layout and gathers one row per token, which costs microseconds
either way), and a row-major copy is kept beside it for steps of two rows or more when it is at most
`ROW_MAJOR_COPY_LIMIT_BYTES` (16 MiB on the tiny model; a bigger head, e.g. a real 150k-token vocabulary in
float32, is served from the parameter alone rather than doubled in memory). The copy is neither a parameter
nor a buffer; serving weights only change by loading a new model, which is set up again.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from .cpu_threads import StepThreads

ROW_MAJOR_COPY_LIMIT_BYTES = 256 * 1024 * 1024


class VocabHead(torch.nn.Linear):
    """The output embedding, re-laid by `install_vocab_head` (the same module with this class's product)."""

    row_major: torch.Tensor | None
    threads: StepThreads | None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        rows = x.numel() // hidden
        with self.threads.full() if self.threads is not None else nullcontext():
            if rows < 2 or self.row_major is None:
                return F.linear(x, self.weight, self.bias)
            # [vocab, rows] computed, returned as its [rows, vocab] view (the scheduler gathers rows anyway)
            out = torch.mm(self.row_major, x.reshape(rows, hidden).t()).t()
            if self.bias is not None:
                out = out + self.bias
            return out.reshape(*x.shape[:-1], out.shape[-1])


def install_vocab_head(
    model: PreTrainedModel,
    threads: StepThreads | None = None,
    *,
    copy_limit_bytes: int = ROW_MAJOR_COPY_LIMIT_BYTES,
) -> bool:
    """Re-lay the output embedding column-major, a row-major copy if small (CPU only); True if done."""
    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear) or isinstance(head, VocabHead):
        return False  # not a plain linear head, or already set up
    weight = head.weight
    if weight.device.type != "cpu" or weight.dim() != 2:
        return False  # GPUs' matrix libraries take either layout at full speed
    with torch.no_grad():
        row_major = weight.detach().contiguous().clone()
        weight.data = weight.data.t().contiguous().t()
    copy = row_major if row_major.numel() * row_major.element_size() <= copy_limit_bytes else None
    head.__class__ = VocabHead
    head.row_major = copy
    head.threads = threads
    return True
