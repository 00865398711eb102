"""The LM head re-laid column-major on CPU: the same model, the same logits, a faster decode product.

Scenario: a person serves the tiny model on CPU; the engine re-lays the output embedding's weight at load so a
decode step's logits are one plain matrix product. Nothing a user or a checkpoint sees may change: the
weights' names, shapes and values, the tie between input and output embeddings, and the logits (to float32
rounding), and a model loaded again (a weight update) is re-laid too.
"""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM

from openclaw_engine.head_layout import store_head_column_major
from openclaw_engine.model_runner import ModelRunner
from openclaw_engine.tiny_model import make_tiny_model


def test_the_head_is_re_laid_with_the_same_values_and_logits(tmp_path) -> None:
    make_tiny_model(str(tmp_path))
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path), dtype=torch.float32).eval()
    ids = torch.randint(0, 1000, (1, 12))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    state = {k: v.clone() for k, v in model.state_dict().items()}

    assert store_head_column_major(model)
    head = model.get_output_embeddings().weight
    assert head.stride() == (1, head.shape[0])  # W.T is contiguous
    assert head is model.get_input_embeddings().weight  # still tied
    after_state = model.state_dict()
    assert after_state.keys() == state.keys()
    for name, value in state.items():
        assert torch.equal(after_state[name], value), name
    with torch.inference_mode():
        after = model(input_ids=ids).logits
    torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-5)
    assert not store_head_column_major(model)  # once is enough


def test_the_runner_serves_a_re_laid_head_after_loading_and_after_a_weight_update(tmp_path) -> None:
    make_tiny_model(str(tmp_path))
    runner = ModelRunner(str(tmp_path))
    weight = runner.model.get_output_embeddings().weight
    assert weight.stride() == (1, weight.shape[0])
    ok, message, _ = runner.update_weights_from_disk(str(tmp_path), "v1")
    assert ok, message
    weight = runner.model.get_output_embeddings().weight
    assert weight.stride() == (1, weight.shape[0])
