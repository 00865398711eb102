"""SGLang's native `POST /generate`: body -> GenerationRequest, result -> `{text, output_ids, meta_info}`."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

from .errors import EngineError, error_body
from .generation_events import Event, GenerationRequest, RequestError
from .generation_result import GenerationResult
from .sampling import SamplingParams
from .schemas import GenerateIn
from .served_policy import ServedPolicy

log = logging.getLogger(__name__)


def check_token_ids(ids: list[int], runner: ServedPolicy, param: str) -> None:
    for i, token in enumerate(ids):
        if token >= runner.vocab_size:
            raise EngineError(
                f"{param}[{i}] = {token} is outside the vocabulary (size {runner.vocab_size})",
                param=f"{param}[{i}]",
            )


def check_lora(name: str | None, runner: ServedPolicy, param: str) -> str | None:
    """`name` if it is a loaded adapter (None stays None: the base); else a 404 naming `param`."""
    if name is None or name in runner.lora_adapters:
        return name
    raise EngineError(f"LoRA adapter `{name}` is not loaded.", param=param, status=404, type_="NotFoundError")


def vision_inputs(body: GenerateIn, runner: ServedPolicy) -> Any:
    """The prompt's model inputs with its `image_data`: the text's image markup expanded by the processor,
    or exact ids whose pad tokens the images must fill (a teacher scoring a captured image turn)."""
    if not getattr(runner, "accepts_images", False):
        raise EngineError(
            f"model '{runner.served_model_name}' does not accept images (it is a text-only model)",
            param="image_data",
        )
    from .vision_processor import ImageError, decode_data_url

    try:
        images = [decode_data_url(url) for url in body.image_data or []]
        if body.input_ids is not None:
            check_token_ids(body.input_ids, runner, "input_ids")
            return runner.prepare_ids(list(body.input_ids), images)  # type: ignore[attr-defined]
        return runner.prepare(body.text or "", images)  # type: ignore[attr-defined]
    except ImageError as exc:
        raise EngineError(str(exc), param="image_data") from None


def build_request(body: GenerateIn, runner: ServedPolicy) -> GenerationRequest:
    vision = None
    if body.image_data:
        vision = vision_inputs(body, runner)
        prompt_ids = list(vision.input_ids)
    elif body.input_ids is not None:
        check_token_ids(body.input_ids, runner, "input_ids")
        prompt_ids = list(body.input_ids)
    else:
        assert body.text is not None
        prompt_ids = runner.encode(body.text, add_special_tokens=True)
    sp = body.sampling_params
    stop_ids = sp.stop_token_ids or []
    check_token_ids(stop_ids, runner, "sampling_params.stop_token_ids")
    if body.top_logprobs_num > runner.vocab_size:
        raise EngineError(f"top_logprobs_num must be <= {runner.vocab_size}", param="top_logprobs_num")
    max_new = sp.max_new_tokens if sp.max_new_tokens is not None else runner.context_length
    sampling = SamplingParams(
        max_new_tokens=max_new,
        temperature=sp.temperature,
        top_p=sp.top_p,
        top_k=sp.top_k,
        min_p=sp.min_p,
        stop=tuple(sp.stop_list),
        stop_token_ids=frozenset(stop_ids),
        seed=sp.effective_seed,
        ignore_eos=sp.ignore_eos,
        skip_special_tokens=sp.skip_special_tokens,
        no_stop_trim=sp.no_stop_trim,
    )
    request = GenerationRequest(
        input_ids=prompt_ids,
        sampling=sampling,
        return_logprob=body.return_logprob,
        logprob_start_len=body.logprob_start_len,
        top_logprobs_num=body.top_logprobs_num if body.return_logprob else 0,
        lora_name=check_lora(body.lora_path, runner, "lora_path"),
        vision=vision,
        **({"rid": body.rid} if body.rid else {}),
    )
    try:
        return runner.validate(request)
    except RequestError as exc:
        raise EngineError(str(exc), param=exc.param) from None


def render(
    result: GenerationResult, req: GenerationRequest, body: GenerateIn, runner: ServedPolicy
) -> dict[str, Any]:
    """SGLang's response shape; works for finished results and in-flight stream snapshots."""
    meta: dict[str, Any] = {
        "id": req.rid,
        "finish_reason": result.finish_reason,
        "prompt_tokens": len(req.input_ids),
        "completion_tokens": len(result.output_ids),
        "cached_tokens": result.cached_tokens,
        "weight_version": result.weight_version or runner.weight_version,
    }
    if body.return_logprob:
        with_text = body.return_text_in_logprobs

        def entry(logprob: float | None, token: int) -> list[Any]:
            return [logprob, token, runner.token_text(token) if with_text else None]

        meta["input_token_logprobs"] = [entry(lp, t) for lp, t in result.input_token_logprobs]
        meta["output_token_logprobs"] = [
            entry(lp, t) for lp, t in zip(result.output_logprobs, result.output_ids, strict=True)
        ]
        if req.top_logprobs_num > 0:
            tops = result.prompt_logprobs.top if result.prompt_logprobs else []
            meta["input_top_logprobs"] = [
                None if row is None else [entry(lp, t) for lp, t in row] for row in tops
            ]
            meta["output_top_logprobs"] = [[entry(lp, t) for lp, t in row] for row in result.output_top]
    return {"text": result.text, "output_ids": list(result.output_ids), "meta_info": meta}


async def stream(
    events: AsyncGenerator[Event, None], req: GenerationRequest, body: GenerateIn, runner: ServedPolicy
) -> AsyncIterator[str]:
    """SGLang's stream: one `data:` event per token with the cumulative state, then `data: [DONE]`."""
    result = GenerationResult(prompt_ids=req.input_ids)
    try:
        async with aclosing(events):  # closing the stream cancels the worker promptly
            async for event in events:
                result.add(event)
                if result.output_ids or result.finish_reason is not None:
                    yield f"data: {json.dumps(render(result, req, body, runner))}\n\n"
    except Exception as exc:  # headers are sent: report in-band, like SGLang
        log.exception("generation failed mid-stream")
        yield f"data: {json.dumps(error_body(str(exc), param=None, status=500, type_='server_error'))}\n\n"
    yield "data: [DONE]\n\n"
