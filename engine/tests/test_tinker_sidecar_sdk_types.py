"""The sidecar's datums, optimizer and sampling settings built with the real `tinker` SDK's types, and the
real SDK's sample responses read by the Tinker runner (no network needed).

The SDK is one of the engine's test dependencies (`pip install -e engine[test]`).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
from typing import Any

import numpy as np
import tinker
from tinker.types.topk_logprobs import TopkLogprobs

from openclaw_engine.generation_result import GenerationResult, collect
from openclaw_engine.model_runner import GenerationRequest
from openclaw_engine.sampling import SamplingParams
from openclaw_engine.tinker_runner import TinkerRunner, sdk_sampling_params
from openclaw_engine.tinker_sidecar.datums import datum_arrays, to_datum
from openclaw_engine.tiny_tokenizer import BPE_VOCAB_SIZE, build_tokenizer
from openclaw_engine.training_schemas import LossRequest, TrainSample

TOKENIZER = build_tokenizer()
TOKEN_H, TOKEN_I, END = (TOKENIZER.convert_tokens_to_ids(t) for t in ("h", "i", "<|im_end|>"))


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


# ------------------------------------------------------------------------------------------------ serving
def test_the_sdk_accepts_the_sampling_params_the_runner_builds() -> None:
    eos = frozenset({7, 3})
    plain = sdk_sampling_params(tinker, SamplingParams(temperature=0.5, top_p=0.9, seed=4), eos, 16)
    assert isinstance(plain, tinker.types.SamplingParams)
    assert (plain.max_tokens, plain.temperature, plain.top_p, plain.top_k, plain.seed) == (
        16,
        0.5,
        0.9,
        -1,
        4,
    )
    assert plain.stop is None  # Tinker's implicit EOS
    strings = sdk_sampling_params(tinker, SamplingParams(stop=("END",), top_k=5), eos, 8)
    assert list(strings.stop) == ["END"] and strings.top_k == 5
    ids = sdk_sampling_params(tinker, SamplingParams(stop=("END",), stop_token_ids=frozenset({9})), eos, 8)
    assert list(ids.stop) == [3, 7, 9]  # a list replaces the implicit EOS, so EOS is in it
    no_eos = sdk_sampling_params(tinker, SamplingParams(ignore_eos=True), eos, 8)
    assert list(no_eos.stop) == []


def test_the_runner_calls_match_the_sdk_signatures() -> None:
    prompt = tinker.types.ModelInput.from_ints([1, 2, 3])
    params = tinker.types.SamplingParams(max_tokens=4)
    inspect.signature(tinker.SamplingClient.sample).bind(
        None,
        prompt=prompt,
        num_samples=1,
        sampling_params=params,
        include_prompt_logprobs=True,
        topk_prompt_logprobs=2,
        topk_sample_logprobs=2,
        prompt_logprobs_last_n=2,
    )
    inspect.signature(tinker.SamplingClient.compute_logprobs).bind(None, prompt, prompt_logprobs_last_n=2)
    create = inspect.signature(tinker.ServiceClient.create_sampling_client)
    create.bind(None, base_model="Qwen/Qwen3-8B")
    create.bind(None, model_path="tinker://run/sampler_weights/x")
    inspect.signature(tinker.TrainingClient.get_tokenizer).bind(None)


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _RealResponses:
    """Answers with the real SDK's response types, as Tinker's sampler would send them."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def create_sampling_client(self, **_: Any) -> _Done:
        return _Done(self)

    def sample(self, **kwargs: Any) -> _Done:
        self.calls.append(kwargs)
        sequence = tinker.types.SampledSequence(
            stop_reason="stop",
            sequence_id="seq-0",
            tokens_np=np.array([TOKEN_H, TOKEN_I, END], dtype=np.int32),
            logprobs_np=np.array([-0.5, -1.25, -0.125], dtype=np.float32),
            topk_logprobs_np=TopkLogprobs(
                token_ids=np.array([[TOKEN_H, 1], [TOKEN_I, 2], [END, 3]], dtype=np.int32),
                logprobs=np.array([[-0.5, -2.0], [-1.25, -3.0], [-0.125, -4.0]], dtype=np.float32),
            ),
        )
        prompt_lps = np.array([np.nan, -2.5, -0.75], dtype=np.float32)
        return _Done(tinker.types.SampleResponse(sequences=[sequence], prompt_logprobs_np=prompt_lps))


def test_the_runner_reads_the_sdks_sample_response() -> None:
    service = _RealResponses()
    runner = TinkerRunner(
        tinker, service=service, base_model="tiny", tokenizer=TOKENIZER, tokenizer_path="(built)"
    )
    end = runner.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert end == END == BPE_VOCAB_SIZE + 2 and end in runner.eos_token_ids
    request = GenerationRequest(
        input_ids=[10, 20, 30],
        sampling=SamplingParams(max_new_tokens=5, seed=1),
        return_logprob=True,
        logprob_start_len=0,
        top_logprobs_num=2,
    )

    async def run() -> GenerationResult:
        return await collect(runner.generate(runner.validate(request)), request.input_ids)

    result = asyncio.run(run())
    sent = service.calls[-1]
    assert isinstance(sent["prompt"], tinker.types.ModelInput) and sent["prompt"].to_ints() == [10, 20, 30]
    assert isinstance(sent["sampling_params"], tinker.types.SamplingParams)
    assert sent["topk_sample_logprobs"] == 2 and sent["include_prompt_logprobs"] is True
    assert result.output_ids == [TOKEN_H, TOKEN_I, END]
    assert result.output_logprobs == [-0.5, -1.25, -0.125]
    assert result.output_top[1] == [(-1.25, TOKEN_I), (-3.0, 2)]
    assert result.text == "hi"  # the EOS ends the text, as on the reference engine
    assert result.finish_reason == {"type": "stop", "matched": END}
    assert result.input_token_logprobs == [(None, 10), (-2.5, 20), (-0.75, 30)]


def test_the_sdk_accepts_an_image_datum(tiny_vlm_dir) -> None:
    """An image sample's datum in the real SDK's types: an ImageChunk where the pad run was, whose
    expected_tokens keep the model input as long as the targets."""
    from transformers import AutoTokenizer

    from openclaw_engine.tinker_sidecar.__main__ import image_token_id
    from openclaw_engine.vision_processor import load_processor

    pad = image_token_id(AutoTokenizer.from_pretrained(tiny_vlm_dir))
    assert pad == load_processor(tiny_vlm_dir).image_token_id
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
    sample = TrainSample(
        tokens=[11, 12, pad, pad, pad, pad, 13, 21, 22],
        response_length=2,
        loss_mask=[1, 1],
        rollout_log_probs=[-1.0, -2.0],
        reward=1.0,
        images=[{"media_type": "image/png", "data": base64.b64encode(png).decode()}],
    )
    datum = to_datum(tinker, datum_arrays(sample, LossRequest(method="grpo"), pad))
    chunks = datum.model_input.chunks
    assert [type(c).__name__ for c in chunks] == ["EncodedTextChunk", "ImageChunk", "EncodedTextChunk"]
    assert chunks[0].tokens == [11, 12] and chunks[2].tokens == [13, 21]
    image = chunks[1]
    assert (image.data, image.format, image.expected_tokens) == (png, "png", 4)
    assert datum.model_input.length == len(datum.loss_fn_inputs["target_tokens"].data) == 8
    # The wire form (what the SDK sends) carries the image as base64.
    assert image.model_dump(mode="json")["data"] == base64.b64encode(png).decode()
