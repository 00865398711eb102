"""Samples -> Fireworks datums from the recorded token ids, exactly as sampled (nothing is re-tokenised).

With `all = prompt + response`, the model reads `all[:-1]` and is scored on `target_tokens = all[1:]`, so
position t of the log-probs Fireworks returns is log π(all[t+1] | all[:t+1]); the response's log-probs are the
last `response_length` of them. `weights` marks the trained response tokens (the loss mask) and is what the
SDK's custom-loss forward carries; the loss itself is computed client-side (`loss.py`).
"""

from __future__ import annotations

from typing import Any

from ..training_schemas import TrainSample


def datum_tokens(sample: TrainSample) -> tuple[list[int], list[int], list[float]]:
    """(model input, target tokens, weights) of one sample: the recorded ids, shifted by one."""
    tokens = list(sample.tokens)
    prompt_len = len(tokens) - sample.response_length
    weights = [0.0] * (prompt_len - 1) + [float(m) for m in sample.loss_mask]
    return tokens[:-1], tokens[1:], weights


def to_datum(sdk: Any, sample: TrainSample) -> Any:
    """A `fireworks.training.sdk.Datum` (or the same type of whichever SDK module is given)."""
    model_input, targets, weights = datum_tokens(sample)
    return sdk.Datum(
        model_input=sdk.ModelInput.from_ints(model_input),
        loss_fn_inputs={"target_tokens": targets, "weights": weights},
    )
