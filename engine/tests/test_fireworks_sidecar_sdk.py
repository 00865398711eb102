"""The Fireworks sidecar against the real `fireworks.training.sdk` (no network: Fireworks' cloud is the
DOUBLE in test/support/python/fireworks_cloud_double.py, which replaces only the network).

Scenario: an operator trains with `trainer.backend: fireworks`; the sidecar must send Fireworks datums made of
the exact token ids the policy sampled, compute the project's loss on the log-probs Fireworks returns, and
call the SDK only with methods, arguments and types the SDK has: a renamed method or a wrong type would fail
only in the cloud, after a trainer job had been paid for.

The SDK is an engine extra (`pip install -e 'engine[fireworks]'`, also in `test`).
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest
import torch
from fireworks.training import sdk
from fireworks.training.sdk._core.lib.public_interfaces import training_client

from openclaw_engine.errors import EngineError
from openclaw_engine.fireworks_sidecar.connection import FireworksSettings, connect
from openclaw_engine.fireworks_sidecar.datums import to_datum
from openclaw_engine.fireworks_sidecar.loss import ProjectLoss
from openclaw_engine.fireworks_sidecar.trainer import SAMPLER_FILE, FireworksTrainer
from openclaw_engine.training_schemas import LossRequest, OptimizerRequest, TrainSample, TrainStepRequest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "support" / "python"))
import fireworks_cloud_double as double  # noqa: E402

SAMPLE = TrainSample(
    tokens=[11, 12, 13, 21, 22, 23],
    response_length=3,
    loss_mask=[1, 0, 1],
    rollout_log_probs=[-1.0, -2.0, -0.5],
    teacher_log_probs=[-0.25, -1.0, -1.5],
    reward=1.0,
)


def test_the_datum_is_the_sampled_ids_in_the_sdks_own_type() -> None:
    datum = to_datum(sdk, SAMPLE)
    assert isinstance(datum, sdk.Datum) and isinstance(datum.model_input, sdk.ModelInput)
    assert datum.model_input.to_ints() == [11, 12, 13, 21, 22]
    inputs = datum.loss_fn_inputs
    assert isinstance(inputs["target_tokens"], sdk.TensorData)
    assert (inputs["target_tokens"].dtype, inputs["target_tokens"].data) == ("int64", [12, 13, 21, 22, 23])
    assert (inputs["weights"].dtype, inputs["weights"].data) == ("float32", [0.0, 0.0, 1.0, 0.0, 1.0])
    # The SDK's own custom-loss preparation accepts it as is (it refuses any key but these two).
    surrogate = training_client._CUSTOM_BACKEND_LOSS_FN_BY_INPUT_TYPE["logprobs"]
    assert sdk.FiretitanTrainingClient._get_custom_loss_forward_data(None, [datum], surrogate) == [datum]


def test_the_custom_loss_is_the_projects_ppo_loss() -> None:
    # grpo at ratio 1 (π_old = this forward): ∂L/∂lp_t = −r·m_t / Σm / B on the response, 0 on the prompt.
    loss_fn = ProjectLoss([SAMPLE, SAMPLE.model_copy(update={"reward": -2.0})], LossRequest(method="grpo"))
    rows = [torch.full((5,), -1.0, requires_grad=True) for _ in range(2)]
    loss, metrics = loss_fn([], rows)
    loss.backward()
    assert rows[0].grad is not None and rows[1].grad is not None
    assert rows[0].grad.tolist() == pytest.approx([0, 0, -0.25, 0, -0.25])
    assert rows[1].grad.tolist() == pytest.approx([0, 0, 0.5, 0, 0.5])
    assert metrics["loss"] == pytest.approx((-1 + 2) / 2)

    # Sample weights (group training): Σ w_i·mean_t ℓ_it / Σ w_i, as the reference trainer; weight 0: absent.
    weighted = [SAMPLE.model_copy(update={"weight": 2.0}), SAMPLE.model_copy(update={"weight": 0.0})]
    rows = [torch.full((5,), -1.0, requires_grad=True) for _ in range(2)]
    loss, _ = ProjectLoss(weighted, LossRequest(method="grpo"))([], rows)
    loss.backward()
    assert rows[0].grad is not None and rows[1].grad is not None
    assert rows[0].grad.tolist() == pytest.approx([0, 0, -0.5, 0, -0.5])
    assert rows[1].grad.tolist() == pytest.approx([0, 0, 0, 0, 0])


def _connect(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> FireworksTrainer:
    monkeypatch.setenv("FIREWORKS_DOUBLE_STORE", str(tmp / "cloud"))
    settings = FireworksSettings(
        api_key="fw-test",
        base_model="accounts/fireworks/models/qwen3-8b",
        training_shape="ts-qwen3-8b-policy",
        deployment_id="openclaw-policy",
        lora_rank=16,
    )
    base_model = settings.base_model
    return FireworksTrainer(double, connect(double, settings), base_model=base_model, lora_rank=16)


def _step(step_id: str, method: str = "combine") -> TrainStepRequest:
    return TrainStepRequest(
        step_id=step_id,
        samples=[SAMPLE],
        loss=LossRequest(method=method),
        optimizer=OptimizerRequest(lr=1e-2),
    )


def test_every_sdk_call_exists_with_those_arguments_and_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    double.CALLS.clear()
    trainer = _connect(tmp_path, monkeypatch)
    first = trainer.train_step(_step("s1"))
    assert trainer.train_step(_step("s1"))["duplicate"] is True
    trainer.save_checkpoint(str(tmp_path / "ckpt" / "v1"))
    trainer.reset()
    assert trainer.info()["step_ids"] == []
    trainer.load_checkpoint(str(tmp_path / "ckpt" / "v1"))
    assert trainer.info()["step_ids"] == ["s1"]
    trainer.train_step(_step("s2", "grpo"))
    exported = trainer.export_for_serving(str(tmp_path / "export" / "v2"))
    assert trainer.hot_load(exported["path"], "2")["success"] is True
    loaded = json.loads((tmp_path / "cloud" / "deployment-openclaw-policy.json").read_text())
    assert loaded["identity"] == exported["snapshot_name"]
    assert json.loads((tmp_path / "export" / "v2" / SAMPLER_FILE).read_text())["step_ids"] == ["s1", "s2"]
    assert first["tokens"] == 2 and first["grad_norm"] > 0

    made = {(cls, method) for cls, method, _, _ in double.CALLS}
    for expected in [
        ("TrainerJobManager", "create_and_wait"),
        ("DeploymentManager", "create_or_get"),
        ("DeploymentManager", "hotload_and_wait"),
        ("FiretitanServiceClient", "create_lora_training_client"),
        ("FiretitanTrainingClient", "forward_backward_custom"),
        ("FiretitanTrainingClient", "optim_step"),
        ("FiretitanTrainingClient", "save_state"),
        ("FiretitanTrainingClient", "load_state_with_optimizer"),
        ("FiretitanTrainingClient", "save_weights_for_sampler_ext"),
    ]:
        assert expected in made
    for cls, method, args, kwargs in double.CALLS:
        real = getattr(getattr(sdk, cls), method)
        inspect.signature(real).bind(None, *args, **kwargs)  # raises TypeError on a wrong name or argument
        if method == "forward_backward_custom":
            assert all(isinstance(d, sdk.Datum) for d in args[0]) and callable(args[1])
        if method == "optim_step":
            adam = args[0]
            assert isinstance(adam, sdk.AdamParams)
            assert (adam.learning_rate, adam.beta1, adam.beta2, adam.weight_decay) == (1e-2, 0.9, 0.98, 0.1)
        if method == "create_and_wait":
            config = args[0]
            assert isinstance(config, sdk.TrainerJobConfig) and config.lora_rank == 16
            config.validate()
        if method == "create_or_get":
            assert isinstance(args[0], sdk.DeploymentConfig) and args[0].hot_load_trainer_job
            args[0].validate()


def test_what_fireworks_cannot_train_is_refused_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = _connect(tmp_path, monkeypatch)
    with pytest.raises(EngineError, match="distillTopK"):
        trainer.train_step(_step("topk", "topk_distill"))
    hot = _step("warm").model_copy(update={"samples": [SAMPLE.model_copy(update={"temperature": 0.7})]})
    with pytest.raises(EngineError, match="temperature 1"):
        trainer.train_step(hot)
    # An image sample would train its pads without pixels: refused, naming its images.
    image = {"media_type": "image/png", "data": "iVBORw0KGgo="}
    pictured = _step("pic").model_copy(update={"samples": [SAMPLE.model_copy(update={"images": [image]})]})
    with pytest.raises(EngineError, match="sends token ids only") as refused:
        trainer.train_step(pictured)
    assert refused.value.param == "samples[0].images"
    assert trainer.info()["step_ids"] == []
