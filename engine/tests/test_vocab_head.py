"""The LM head on CPU: column-major, a row-major copy for steps of several rows; the same model and logits.

Scenario: a person serves the tiny model on CPU; the engine re-lays the output embedding's weight at load and
keeps a row-major copy for batched steps, so a decode step's logits are the faster product for its number of
rows. Nothing a user or a checkpoint sees may change: the weights' names, shapes and values, the tie between
input and output embeddings, and the logits (to float32 rounding) for one row and for many. What could go
wrong: a weight update that serves logits from the old head's copy, or a big head doubled in memory.
"""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM

from openclaw_engine.model_runner import ModelRunner
from openclaw_engine.packed_attention import PackedBatch, PackedSegment, SequenceKV
from openclaw_engine.tiny_model import make_tiny_model
from openclaw_engine.vocab_head import VocabHead, install_vocab_head


def test_the_head_is_re_laid_with_the_same_values_and_logits(tmp_path) -> None:
    make_tiny_model(str(tmp_path))
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path), dtype=torch.float32).eval()
    one, many = torch.randint(0, 1000, (1, 1)), torch.randint(0, 1000, (1, 12))
    with torch.inference_mode():
        before = [model(input_ids=ids).logits for ids in (one, many)]
    state = {k: v.clone() for k, v in model.state_dict().items()}

    assert install_vocab_head(model)
    head = model.get_output_embeddings()
    assert isinstance(head, VocabHead)
    assert head.weight.stride() == (1, head.weight.shape[0])  # W.T is contiguous
    assert head.weight is model.get_input_embeddings().weight  # still tied
    assert head.row_major is not None and head.row_major.is_contiguous()
    assert torch.equal(head.row_major, head.weight)
    after_state = model.state_dict()
    assert after_state.keys() == state.keys()  # the copy is neither a parameter nor a buffer
    for name, value in state.items():
        assert torch.equal(after_state[name], value), name
    with torch.inference_mode():
        after = [model(input_ids=ids).logits for ids in (one, many)]
    for a, b in zip(after, before, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert not install_vocab_head(model)  # once is enough


def test_a_head_over_the_limit_is_not_copied_and_gives_the_same_logits(tmp_path) -> None:
    make_tiny_model(str(tmp_path))
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path), dtype=torch.float32).eval()
    ids = torch.randint(0, 1000, (1, 9))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    assert install_vocab_head(model, copy_limit_bytes=1024)
    assert model.get_output_embeddings().row_major is None
    with torch.inference_mode():
        torch.testing.assert_close(model(input_ids=ids).logits, before, rtol=1e-5, atol=1e-5)


def _decode_logits(runner: ModelRunner, rows: int) -> torch.Tensor:
    """A 5-token prompt per sequence, then one decode step of `rows` sequences: its [rows, vocab] logits."""
    kvs = [SequenceKV(runner.num_layers) for _ in range(rows)]
    for kv in kvs:
        runner.forward_step([3, 4, 5, 6, 7], list(range(5)), PackedBatch([PackedSegment(kv, 0, 5)]), [4])
        kv.length = 5
    batch = PackedBatch([PackedSegment(kv, i, 1) for i, kv in enumerate(kvs)])
    return runner.forward_step([8 + i for i in range(rows)], [5] * rows, batch, list(range(rows)))


def test_the_runner_serves_the_new_head_after_a_weight_update(tmp_path) -> None:
    first, second = tmp_path / "v0", tmp_path / "v1"
    make_tiny_model(str(first), seed=0)
    make_tiny_model(str(second), seed=1)
    runner = ModelRunner(str(first))
    head = runner.model.get_output_embeddings()
    assert isinstance(head, VocabHead) and head.weight.stride() == (1, head.weight.shape[0])
    served_v0 = _decode_logits(runner, 8)

    ok, message, _ = runner.update_weights_from_disk(str(second), "v1")
    assert ok, message
    head = runner.model.get_output_embeddings()
    assert isinstance(head, VocabHead) and torch.equal(head.row_major, head.weight)
    served_v1 = _decode_logits(runner, 8)
    reference = AutoModelForCausalLM.from_pretrained(str(second), dtype=torch.float32).eval()
    with torch.inference_mode():
        expected = reference(input_ids=torch.tensor([[3, 4, 5, 6, 7, 8 + i] for i in range(8)])).logits[:, -1]
    torch.testing.assert_close(served_v1, expected, rtol=1e-4, atol=1e-4)
    assert not torch.allclose(served_v1, served_v0, atol=1e-3)  # not the old head's copy
