"""The sidecar's datums and optimizer settings built with the real `tinker` SDK's types (no network needed).

The SDK is one of the engine's test dependencies (`pip install -e engine[test]`).
"""

from __future__ import annotations

import tinker

from openclaw_engine.tinker_sidecar.datums import datum_arrays, to_datum
from openclaw_engine.training_schemas import LossRequest, TrainSample


def test_the_sdk_accepts_the_datums_the_sidecar_builds() -> None:
    sample = TrainSample(
        tokens=[11, 12, 13, 21, 22, 23],
        response_length=3,
        loss_mask=[1, 0, 1],
        rollout_log_probs=[-1.0, -2.0, -0.5],
        teacher_log_probs=[-0.25, -1.0, -1.5],
        reward=1.0,
    )
    datum = to_datum(tinker, datum_arrays(sample, LossRequest(method="combine")))
    assert isinstance(datum, tinker.types.Datum)
    assert datum.model_input.to_ints() == [11, 12, 13, 21, 22]
    inputs = datum.loss_fn_inputs
    assert (inputs["target_tokens"].dtype, inputs["target_tokens"].data) == ("int64", [12, 13, 21, 22, 23])
    assert inputs["logprobs"].dtype == "float32" and inputs["logprobs"].data == [0.0, 0.0, -1.0, -2.0, -0.5]
    # 1·(teacher − rollout) + 1·reward: 0.75 + 1, (masked), −1 + 1.
    assert inputs["advantages"].data == [0.0, 0.0, 1.75, 0.0, 0.0]


def test_the_sdk_accepts_the_optimizer_settings() -> None:
    adam = tinker.types.AdamParams(learning_rate=1e-5, beta1=0.9, beta2=0.98, weight_decay=0.1)
    assert (adam.learning_rate, adam.beta2, adam.weight_decay) == (1e-5, 0.98, 0.1)
