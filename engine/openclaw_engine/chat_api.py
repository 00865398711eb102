"""OpenAI `POST /v1/chat/completions` with SGLang's RL extensions (exact prompt / completion token ids).

The prompt is the model's chat template applied to the messages (or `input_ids` verbatim); output is
split into `reasoning_content`, `content` and `tool_calls` by `chat.py`. Streaming sends one chunk per
generated token (text released by the detokeniser, its token ids and log-probs), so a proxy can
relay the stream while capturing exactly the tokens the policy sampled.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from .chat import StreamDelta, StreamParser, image_urls, normalize_messages, parse_output
from .errors import EngineError, error_body
from .forced_tool_call import already_called, forced_reply
from .generate_api import check_token_ids
from .generation_result import GenerationResult
from .model_runner import Event, Finished, GenerationRequest, RequestError, TokenStep
from .sampling import SamplingParams
from .schemas import ChatCompletionIn, ToolChoiceNamed
from .served_policy import ServedPolicy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatPlan:
    """Everything decided before generation starts."""

    request: GenerationRequest
    prompt_text: str | None  # None when the caller sent input_ids
    parse_tools: bool
    model: str
    completion_id: str
    created: int
    # Strict mode answers as SGLang 0.5.23 does: its refusals, and `response_token_ids` for the sampled ids.
    strict: bool = False


def plan(
    body: ChatCompletionIn, raw: dict[str, Any], runner: ServedPolicy, *, strict: bool = False
) -> ChatPlan:
    if strict and (refusal := body.sglang_refusal()) is not None:
        raise EngineError(refusal, param="max_tokens" if refusal.startswith("max_tokens") else "stream")
    tools_on = bool(body.tools) and body.tool_choice != "none"
    prompt_text: str | None = None
    vision: Any = None
    if body.input_ids is not None:  # SGLang: a pre-tokenised prompt bypasses the chat template
        check_token_ids(body.input_ids, runner, "input_ids")
        prompt_ids = list(body.input_ids)
        # The messages' images fill the ids' pad runs (a rendering of these messages made earlier).
        images = images_of(raw["messages"], runner)
        if images:
            vision = prepare_ids(runner, prompt_ids, images)
    else:
        prompt_text = render_prompt(body, raw, runner, tools_on=tools_on)
        prompt_ids = runner.encode(prompt_text, add_special_tokens=False)
        images = images_of(raw["messages"], runner)
        if images:
            vision = prepare_images(runner, prompt_text, images)
            prompt_ids = vision.input_ids
    stop_ids = body.stop_token_ids or []
    check_token_ids(stop_ids, runner, "stop_token_ids")

    max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens
    sampling = SamplingParams(
        max_new_tokens=max_tokens if max_tokens is not None else runner.context_length,  # clamped to context
        temperature=1.0 if body.temperature is None else body.temperature,
        top_p=1.0 if body.top_p is None else body.top_p,
        top_k=-1 if body.top_k is None else body.top_k,
        min_p=0.0 if body.min_p is None else body.min_p,
        stop=tuple(body.stop_list),
        stop_token_ids=frozenset(stop_ids),
        seed=body.seed,
        ignore_eos=body.ignore_eos,
        # SGLang keeps special tokens when tools are on, so tool-call markup survives decoding.
        skip_special_tokens=body.skip_special_tokens and not tools_on,
        no_stop_trim=body.no_stop_trim,
    )
    request = GenerationRequest(
        input_ids=prompt_ids,
        sampling=sampling,
        return_logprob=body.logprobs,
        top_logprobs_num=(body.top_logprobs or 0) if body.logprobs else 0,
        forced_output=_forced_tool_call(body, raw, runner) if tools_on else (),
        lora_name=lora_of_model(body.model, runner),
        vision=vision,
        **({"rid": body.rid} if body.rid else {}),
    )
    try:
        request = runner.validate(request)
    except RequestError as exc:
        param = "messages" if exc.param == "input_ids" and body.input_ids is None else exc.param
        raise EngineError(str(exc), param=param) from None
    return ChatPlan(
        request=request,
        prompt_text=prompt_text,
        parse_tools=tools_on,
        model=body.model or runner.served_model_name,
        completion_id=f"chatcmpl-{request.rid}",
        created=int(time.time()),
        strict=strict,
    )


def images_of(messages: list[dict[str, Any]], runner: ServedPolicy) -> list[Any]:
    """The decoded images of the messages, in prompt order; a 400 when the model cannot take them."""
    urls = image_urls(messages)
    if not urls:
        return []
    if not getattr(runner, "accepts_images", False):
        raise EngineError(
            f"model '{runner.served_model_name}' does not accept images (it is a text-only model); "
            "send text, or serve a vision-language model",
            param="messages",
        )
    from .vision_processor import ImageError, decode_data_url

    try:
        return [decode_data_url(url) for url in urls]
    except ImageError as exc:
        raise EngineError(str(exc), param="messages") from None


def prepare_images(runner: ServedPolicy, prompt_text: str, images: list[Any]) -> Any:
    """The VLM's model inputs: expanded prompt ids, pixel values and grids (a 400 if they disagree)."""
    from .vision_processor import ImageError

    try:
        return runner.prepare(prompt_text, images)  # type: ignore[attr-defined]
    except ImageError as exc:
        raise EngineError(str(exc), param="messages") from None


def prepare_ids(runner: ServedPolicy, ids: list[int], images: list[Any]) -> Any:
    """The VLM's model inputs for exact ids and the messages' images (a 400 if they disagree)."""
    from .vision_processor import ImageError

    try:
        return runner.prepare_ids(ids, images)  # type: ignore[attr-defined]
    except ImageError as exc:
        raise EngineError(f"input_ids and the messages' images disagree: {exc}", param="input_ids") from None


def lora_of_model(model: str | None, runner: ServedPolicy) -> str | None:
    """The adapter `model` names (`name` or SGLang's `served:name`); None for the base.

    Until an adapter has been loaded any name serves the base, as before (clients name the base freely);
    from then on a name that is neither the base's nor a loaded adapter's is a 404, as in vLLM and SGLang,
    so a request meant for an adapter that is gone never silently samples the base.
    """
    if not model or model in (runner.served_model_name, runner.model_path):
        return None
    adapters = runner.lora_adapters
    if model in adapters:
        return model
    prefix = f"{runner.served_model_name}:"
    if model.startswith(prefix) and model[len(prefix) :] in adapters:
        return model[len(prefix) :]
    if not runner.lora_used and not model.startswith(prefix):
        return None
    raise EngineError(
        f"The model `{model}` does not exist.", param="model", status=404, type_="NotFoundError"
    )


def _forced_tool_call(body: ChatCompletionIn, raw: dict[str, Any], runner: ServedPolicy) -> tuple[int, ...]:
    """A named `tool_choice`: the reply calls that tool, once per user turn (`forced_tool_call.py`)."""
    if not isinstance(body.tool_choice, ToolChoiceNamed) or body.input_ids is not None:
        return ()
    name = body.tool_choice.function.name
    tool = next((t for t in raw["tools"] if t["function"]["name"] == name), None)
    if tool is None or already_called(raw["messages"], name):
        return ()
    end = getattr(getattr(runner, "tokenizer", None), "eos_token", None) or ""
    return tuple(runner.encode(forced_reply(tool) + end, add_special_tokens=False))


def render_prompt(
    body: ChatCompletionIn, raw: dict[str, Any], runner: ServedPolicy, *, tools_on: bool
) -> str:
    # Render the client's own dicts (validated above) so a proxy re-rendering them gets the same text.
    messages = normalize_messages(raw["messages"])
    tools: list[dict[str, Any]] | None = None
    if tools_on:
        tools = list(raw["tools"])
        if isinstance(body.tool_choice, ToolChoiceNamed):  # SGLang: only the named tool is offered
            tools = [t for t in tools if t["function"]["name"] == body.tool_choice.function.name]
    prefix = ""
    add_generation_prompt = True
    if body.continue_final_message and messages and messages[-1]["role"] == "assistant":
        # SGLang: render up to the last assistant turn, then continue its text verbatim.
        last = messages.pop()
        prefix = last["content"] if isinstance(last["content"], str) else ""
    try:
        text = runner.apply_chat_template(
            messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            template_kwargs=dict(body.chat_template_kwargs or {}),
        )
    except Exception as exc:  # jinja raises for inputs the template rejects
        raise EngineError(
            f"the chat template could not render these messages: {exc}", param="messages"
        ) from None
    return text + prefix


# ------------------------------------------------------------------------------------------ rendering
def _logprob_items(result: GenerationResult, start: int, runner: ServedPolicy) -> list[dict[str, Any]]:
    items = []
    for i in range(start, len(result.output_ids)):
        token = result.output_ids[i]
        items.append(
            {
                "token": runner.token_text(token),
                "logprob": result.output_logprobs[i],
                "bytes": runner.token_bytes(token),
                "top_logprobs": [
                    {"token": runner.token_text(t), "logprob": lp, "bytes": runner.token_bytes(t)}
                    for lp, t in result.output_top[i]
                ],
            }
        )
    return items


def _finish(result: GenerationResult, has_tool_calls: bool) -> tuple[str | None, Any]:
    reason = result.finish_reason or {}
    kind = reason.get("type")
    if kind == "stop" and has_tool_calls:
        return "tool_calls", None
    return kind, reason.get("matched")


def _usage(result: GenerationResult) -> dict[str, Any]:
    prompt, completion = len(result.prompt_ids), len(result.output_ids)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        # As SGLang with --enable-cache-report (and OpenAI): prompt tokens served from the prefix cache.
        # Clients show it (OpenClaw's usage.cacheRead), so a broken shared prefix is visible from outside.
        "prompt_tokens_details": {"cached_tokens": result.cached_tokens},
    }


def _meta_info(result: GenerationResult, plan_: ChatPlan) -> dict[str, Any]:
    return {
        "id": plan_.request.rid,
        "finish_reason": result.finish_reason,
        "prompt_tokens": len(result.prompt_ids),
        "completion_tokens": len(result.output_ids),
        "weight_version": result.weight_version,
    }


def _sglext(result: GenerationResult, body: ChatCompletionIn) -> dict[str, Any] | None:
    """SGLang's response-level extension object: prompt ids and one list of sampled ids per choice."""
    out: dict[str, Any] = {}
    if body.return_input_ids_in_sglext:
        out["input_ids"] = list(result.prompt_ids)
    if body.return_output_ids_in_sglext:
        out["output_ids"] = [list(result.output_ids)]
    return out or None


def response(result: GenerationResult, body: ChatCompletionIn, plan_: ChatPlan, runner: ServedPolicy) -> dict:
    parsed = parse_output(
        result.text, separate_reasoning=body.separate_reasoning, parse_tools=plan_.parse_tools
    )
    finish_reason, matched = _finish(result, bool(parsed.tool_calls))
    message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
    if parsed.reasoning_content is not None:
        message["reasoning_content"] = parsed.reasoning_content
    if parsed.tool_calls:
        message["tool_calls"] = parsed.tool_calls
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "logprobs": {"content": _logprob_items(result, 0, runner)} if body.logprobs else None,
        "finish_reason": finish_reason,
        "matched_stop": matched,
    }
    # SGLang: return_token_ids implies the prompt ids too.
    if body.return_prompt_token_ids or (plan_.strict and body.return_token_ids):
        choice["prompt_token_ids"] = list(result.prompt_ids)
    if body.return_token_ids:
        # SGLang 0.5.23 names the sampled ids `response_token_ids`; the engine (like vLLM) says `token_ids`.
        choice["response_token_ids" if plan_.strict else "token_ids"] = list(result.output_ids)
    if body.return_meta_info:
        choice["meta_info"] = _meta_info(result, plan_)
    out: dict[str, Any] = {
        "id": plan_.completion_id,
        "object": "chat.completion",
        "created": plan_.created,
        "model": plan_.model,
        "choices": [choice],
        "usage": _usage(result),
        "metadata": {"weight_version": result.weight_version},
    }
    if (sglext := _sglext(result, body)) is not None:
        out["sglext"] = sglext
    return out


# ------------------------------------------------------------------------------------------ streaming
def _chunk(plan_: ChatPlan, choice: dict[str, Any] | None, **extra: Any) -> str:
    payload: dict[str, Any] = {
        "id": plan_.completion_id,
        "object": "chat.completion.chunk",
        "created": plan_.created,
        "model": plan_.model,
        "choices": [] if choice is None else [choice],
        **extra,
    }
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


async def stream(
    events: AsyncGenerator[Event, None], body: ChatCompletionIn, plan_: ChatPlan, runner: ServedPolicy
) -> AsyncIterator[str]:
    result = GenerationResult(prompt_ids=plan_.request.input_ids)
    parser = StreamParser(separate_reasoning=body.separate_reasoning, parse_tools=plan_.parse_tools)
    first: dict[str, Any] = {
        "index": 0,
        "delta": {"role": "assistant", "content": ""},
        "logprobs": None,
        "finish_reason": None,
    }
    if body.return_prompt_token_ids:
        first["prompt_token_ids"] = list(plan_.request.input_ids)
    yield _chunk(plan_, first)
    sent_tokens = 0
    last = StreamDelta()
    try:
        async with aclosing(events):
            async for event in events:
                released = result.add(event)
                delta = parser.feed(released) if released else StreamDelta()
                if isinstance(event, Finished):
                    last = delta  # sent together with whatever the parser still holds
                    break
                if isinstance(event, TokenStep):
                    choice = _delta_choice(result, body, delta, sent_tokens, runner)
                    sent_tokens = len(result.output_ids)
                    if choice is not None:
                        yield _chunk(plan_, choice)
    except Exception as exc:  # headers already sent: report in-band, then end the stream
        log.exception("chat generation failed mid-stream")
        yield f"data: {json.dumps(error_body(str(exc), param=None, status=500, type_='server_error'))}\n\n"
        yield "data: [DONE]\n\n"
        return

    # Text released at the end (held-back bytes / partial markers), then the parsed tool calls.
    tail, calls = parser.finish()
    last.reasoning_content += tail.reasoning_content
    last.content += tail.content
    tail_choice = _delta_choice(result, body, last, sent_tokens, runner)
    if tail_choice is not None:
        yield _chunk(plan_, tail_choice)
    if calls:
        yield _chunk(
            plan_, {"index": 0, "delta": {"tool_calls": calls}, "logprobs": None, "finish_reason": None}
        )
    finish_reason, matched = _finish(result, bool(calls))
    yield _chunk(
        plan_,
        {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish_reason, "matched_stop": matched},
        metadata={"weight_version": result.weight_version},
    )
    if (sglext := _sglext(result, body)) is not None:  # as SGLang: after the finish chunk, before usage
        yield _chunk(plan_, None, sglext=sglext)
    if body.stream_options is not None and body.stream_options.include_usage:
        yield _chunk(plan_, None, usage=_usage(result))
    yield "data: [DONE]\n\n"


def _delta_choice(
    result: GenerationResult,
    body: ChatCompletionIn,
    delta: StreamDelta,
    sent_tokens: int,
    runner: ServedPolicy,
) -> dict[str, Any] | None:
    """A chunk for the tokens since `sent_tokens` and the text they released; None if there is nothing."""
    message: dict[str, Any] = {}
    if delta.reasoning_content:
        message["reasoning_content"] = delta.reasoning_content
    if delta.content:
        message["content"] = delta.content
    new_ids = result.output_ids[sent_tokens:]
    wants_ids = body.return_token_ids and bool(new_ids)
    wants_logprobs = body.logprobs and bool(new_ids)
    if not message and not wants_ids and not wants_logprobs:
        return None
    choice: dict[str, Any] = {
        "index": 0,
        "delta": message,
        "logprobs": {"content": _logprob_items(result, sent_tokens, runner)} if wants_logprobs else None,
        "finish_reason": None,
    }
    if body.return_token_ids:
        choice["token_ids"] = list(new_ids)
    return choice
