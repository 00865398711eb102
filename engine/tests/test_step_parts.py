"""A step sent in parts (its body is over the request body limit): held until whole, then one request."""

from __future__ import annotations

import pytest

from openclaw_engine.errors import EngineError
from openclaw_engine.step_parts import StepParts
from openclaw_engine.training_schemas import TrainStepPartRequest, TrainStepRequest


def sample(first_token: int) -> dict:
    return {
        "tokens": [first_token, 2, 3],
        "response_length": 1,
        "loss_mask": [1],
        "rollout_log_probs": [-1.0],
    }


def part(step_id: str, index: int, count: int, first_token: int, **loss) -> TrainStepPartRequest:
    return TrainStepPartRequest.model_validate(
        {
            "step_id": step_id,
            "samples": [sample(first_token)],
            "loss": loss,
            "part": {"index": index, "count": count},
        }
    )


def test_the_parts_of_a_step_in_any_order_make_the_step_sent_whole() -> None:
    parts = StepParts()
    assert parts.add(part("s", 2, 3, 12)) == {
        "step_id": "s",
        "pending": True,
        "received": [2],
        "missing": [0, 1],
    }
    assert parts.add(part("s", 0, 3, 10))["missing"] == [1]
    whole = parts.add(part("s", 1, 3, 11))
    expected = TrainStepRequest.model_validate(
        {"step_id": "s", "samples": [sample(10), sample(11), sample(12)]}
    )
    assert whole == expected


def test_a_part_of_another_step_drops_the_parts_held_and_a_disagreeing_part_is_refused() -> None:
    parts = StepParts()
    parts.add(part("s", 0, 2, 10))
    assert parts.add(part("t", 1, 2, 11))["missing"] == [0]  # a restarted client resends every part
    with pytest.raises(EngineError, match="disagrees with its earlier parts"):
        parts.add(part("t", 0, 2, 10, method="opd"))
    with pytest.raises(ValueError, match="part index 2 must be below count 2"):
        part("t", 2, 2, 10)
