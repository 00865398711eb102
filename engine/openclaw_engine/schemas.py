"""Request bodies, validated strictly (wrong types are 400s, not coercions) with SGLang/OpenAI field names.

Checks that need the model (token ids inside the vocabulary, context length) live in the API modules;
`parse_body` turns malformed JSON and pydantic errors into `EngineError`s naming the offending field.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .chat import IMAGE_PART_TYPES
from .errors import EngineError

MAX_STOP_STRINGS = 32
MAX_STOP_LEN = 512
MAX_TOP_LOGPROBS_CHAT = 20  # OpenAI's limit

TokenId = Annotated[int, Field(ge=0)]
Stop = (
    str
    | Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_STOP_LEN)]], Field(max_length=MAX_STOP_STRINGS)
    ]
    | None
)


class _Strict(BaseModel):
    # Strict: "1" is not an int and 1 is not a bool; unknown fields are rejected (like SGLang's dataclasses).
    model_config = ConfigDict(strict=True, extra="forbid")


class _Lenient(_Strict):
    # OpenAI clients send many optional fields; unknown ones are ignored, known ones still strictly typed.
    model_config = ConfigDict(strict=True, extra="ignore")


def _stop_list(stop: str | list[str] | None) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


class FieldProblem(ValueError):
    """A cross-field check that knows which field is at fault (pydantic would report the whole body)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def _unsupported(name: str, value: Any, default: Any) -> None:
    if value is not None and value != default:
        raise FieldProblem(name, f"{name}={value!r} is not supported by this engine")


# ------------------------------------------------------------------------------------------ /generate
class SamplingParamsIn(_Strict):
    max_new_tokens: int | None = Field(128, ge=0)
    temperature: float = Field(1.0, ge=0.0, le=100.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int = Field(-1, ge=-1)
    min_p: float = Field(0.0, ge=0.0, le=1.0)
    stop: Stop = None
    stop_token_ids: list[TokenId] | None = None
    seed: int | None = Field(None, ge=0, lt=2**63)
    sampling_seed: int | None = Field(None, ge=0, lt=2**63)  # SGLang's name for the seed
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False
    n: int = Field(1, ge=1)
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    json_schema: str | None = None
    regex: str | None = None
    ebnf: str | None = None

    @model_validator(mode="after")
    def _supported(self) -> SamplingParamsIn:
        _unsupported("n", self.n, 1)
        _unsupported("frequency_penalty", self.frequency_penalty, 0.0)
        _unsupported("presence_penalty", self.presence_penalty, 0.0)
        _unsupported("repetition_penalty", self.repetition_penalty, 1.0)
        for name in ("json_schema", "regex", "ebnf"):
            _unsupported(name, getattr(self, name), None)
        if isinstance(self.stop, str) and not self.stop:
            raise FieldProblem("stop", "stop must not be an empty string")
        if self.seed is not None and self.sampling_seed is not None and self.seed != self.sampling_seed:
            raise FieldProblem("sampling_seed", "seed and sampling_seed disagree")
        return self

    @property
    def stop_list(self) -> list[str]:
        return _stop_list(self.stop)

    @property
    def effective_seed(self) -> int | None:
        return self.seed if self.seed is not None else self.sampling_seed


class GenerateIn(_Strict):
    text: str | None = None
    input_ids: list[TokenId] | None = None
    sampling_params: SamplingParamsIn = Field(default_factory=SamplingParamsIn)
    return_logprob: bool = False
    logprob_start_len: int = Field(-1, ge=-1)
    top_logprobs_num: int = Field(0, ge=0)
    return_text_in_logprobs: bool = False
    stream: bool = False
    rid: str | None = Field(None, max_length=256)
    lora_path: str | None = None  # SGLang's field: the name of a loaded LoRA adapter (None: the base)
    # SGLang's field: the prompt's images in order, as base64 data URLs (a vision-language model only).
    image_data: list[str] | None = Field(None, max_length=64)

    @field_validator("image_data", mode="before")
    @classmethod
    def _image_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_prompt(self) -> GenerateIn:
        if (self.text is None) == (self.input_ids is None):
            raise FieldProblem("text", "exactly one of text and input_ids is required")
        if self.text is not None and not self.text:
            raise FieldProblem("text", "text must not be empty")
        if self.input_ids is not None and not self.input_ids:
            raise FieldProblem("input_ids", "input_ids must not be empty")
        return self


# ------------------------------------------------------------------------------------------ chat
class ToolFunction(_Lenient):
    name: str = Field(min_length=1, max_length=256)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Lenient):
    type: Literal["function"] = "function"
    function: ToolFunction


class ToolChoiceFunction(_Strict):
    name: str


class ToolChoiceNamed(_Strict):
    type: Literal["function"] = "function"
    function: ToolChoiceFunction


class ToolCallFunctionIn(_Lenient):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCallIn(_Lenient):
    id: str | None = None
    type: Literal["function"] = "function"
    function: ToolCallFunctionIn


class ContentPart(_Lenient):
    type: str
    text: str | None = None


class ChatMessageIn(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    @model_validator(mode="after")
    def _text_and_images(self) -> ChatMessageIn:
        if isinstance(self.content, list):
            for part in self.content:
                # Images are parsed here; chat_api serves them to a vision-language model and refuses
                # them (400) for a text-only one.
                if part.type in IMAGE_PART_TYPES:
                    continue
                if part.type != "text" or part.text is None:
                    raise FieldProblem(
                        "content",
                        f"only text and image content parts are supported (got type {part.type!r})",
                    )
        return self


class StreamOptions(_Lenient):
    include_usage: bool = False
    continuous_usage_stats: bool = False


class ChatCompletionIn(_Lenient):
    messages: list[ChatMessageIn] = Field(default_factory=list)
    model: str | None = None
    temperature: float | None = Field(None, ge=0.0, le=100.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=-1)
    min_p: float | None = Field(None, ge=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=0)
    max_completion_tokens: int | None = Field(None, ge=0)
    stop: Stop = None
    stop_token_ids: list[TokenId] | None = None
    seed: int | None = Field(None, ge=0, lt=2**63)
    n: int = Field(1, ge=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS_CHAT)
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | ToolChoiceNamed | None = None
    parallel_tool_calls: bool | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    separate_reasoning: bool = True
    continue_final_message: bool = False
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False
    # SGLang extensions for RL: exact prompt / completion tokens, and a pre-tokenised prompt.
    return_prompt_token_ids: bool = False
    return_token_ids: bool = False
    return_meta_info: bool = False
    # SGLang 0.5.23's exact-token channel that also works when streaming: the prompt ids and the sampled ids
    # in a response-level `sglext` object (the last chunk of a stream, or the response).
    return_input_ids_in_sglext: bool = False
    return_output_ids_in_sglext: bool = False
    input_ids: list[TokenId] | None = None
    rid: str | None = Field(None, max_length=256)
    # Accepted only at their no-op values, so a client relying on them gets a clear 400.
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    min_tokens: int | None = None
    logit_bias: dict[str, float] | None = None
    response_format: dict[str, Any] | None = None
    # SGLang's grammar extensions: this engine has no grammar sampler.
    json_schema: str | None = None
    regex: str | None = None
    ebnf: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ChatCompletionIn:
        _unsupported("n", self.n, 1)
        _unsupported("frequency_penalty", self.frequency_penalty, 0.0)
        _unsupported("presence_penalty", self.presence_penalty, 0.0)
        _unsupported("repetition_penalty", self.repetition_penalty, 1.0)
        _unsupported("min_tokens", self.min_tokens, 0)
        for name in ("json_schema", "regex", "ebnf"):
            _unsupported(name, getattr(self, name), None)
        if any(bias != 0 for bias in (self.logit_bias or {}).values()):
            raise FieldProblem("logit_bias", "logit_bias is not supported by this engine")
        if self.response_format is not None and self.response_format.get("type", "text") != "text":
            raise FieldProblem(
                "response_format", "response_format other than text is not supported by this engine"
            )
        if not self.messages and self.input_ids is None:
            raise FieldProblem("messages", "messages must be a non-empty list")
        if self.input_ids is not None and not self.input_ids:
            raise FieldProblem("input_ids", "input_ids must not be empty")
        if self.top_logprobs and not self.logprobs:
            raise FieldProblem("top_logprobs", "top_logprobs requires logprobs=true")
        if isinstance(self.stop, str) and not self.stop:
            raise FieldProblem("stop", "stop must not be an empty string")
        if self.tool_choice == "required" and not self.tools:
            raise FieldProblem("tool_choice", "tool_choice 'required' needs tools")
        if isinstance(self.tool_choice, ToolChoiceNamed):
            names = {t.function.name for t in self.tools or []}
            if self.tool_choice.function.name not in names:
                raise FieldProblem("tool_choice", f"tool {self.tool_choice.function.name!r} is not in tools")
        return self

    @property
    def stop_list(self) -> list[str]:
        return _stop_list(self.stop)

    def sglang_refusal(self) -> str | None:
        """What SGLang 0.5.23 refuses in this body (strict mode): its own message, or None.

        serving_chat.py `_convert_to_internal_request` refuses the exact-token flags on streams (use the
        sglext flags instead), and protocol.py's `validate_max_tokens_positive` a max_tokens of 0.
        """
        if self.max_tokens is not None and self.max_tokens <= 0:
            return "max_tokens must be positive"
        if not self.stream:
            return None
        if self.return_prompt_token_ids:
            return (
                "return_prompt_token_ids is not supported with streaming. "
                "Please set stream=false when using return_prompt_token_ids=true."
            )
        if self.return_token_ids:
            return (
                "return_token_ids is not supported with streaming on /v1/chat/completions. "
                "Please set stream=false when using return_token_ids=true."
            )
        if self.return_meta_info:
            return (
                "return_meta_info is not supported with streaming. "
                "Please set stream=false when using return_meta_info=true."
            )
        return None


# ------------------------------------------------------------------------------------------ misc routes
class TokenizeIn(_Lenient):
    prompt: str | list[str] | None = None
    text: str | list[str] | None = None  # alias of prompt
    messages: list[ChatMessageIn] | None = None
    tools: list[Tool] | None = None
    add_generation_prompt: bool = True
    chat_template_kwargs: dict[str, Any] | None = None
    add_special_tokens: bool = True
    model: str | None = None

    @model_validator(mode="after")
    def _one_input(self) -> TokenizeIn:
        given = [x for x in (self.prompt, self.text, self.messages) if x is not None]
        if len(given) != 1:
            raise FieldProblem("prompt", "exactly one of prompt, text and messages is required")
        return self


class DetokenizeIn(_Lenient):
    tokens: list[TokenId] | list[list[TokenId]]
    skip_special_tokens: bool = True
    model: str | None = None


class UpdateWeightsFromDiskIn(_Strict):
    model_path: str = Field(min_length=1)
    weight_version: str | None = Field(None, min_length=1, max_length=256)
    load_format: str | None = None
    abort_all_requests: bool = False
    flush_cache: bool = True
    # SGLang knobs that have no meaning here; accepted so SGLang clients work unchanged.
    is_async: bool = False
    torch_empty_cache: bool = False
    keep_pause: bool = False
    recapture_cuda_graph: bool = False
    token_step: int = 0

    @model_validator(mode="after")
    def _format(self) -> UpdateWeightsFromDiskIn:
        if self.load_format not in (None, "auto", "safetensors"):
            raise FieldProblem("load_format", f"load_format {self.load_format!r} is not supported")
        return self


class LoadLoraAdapterIn(_Lenient):
    lora_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
    lora_path: str = Field(min_length=1)
    weight_version: str | None = Field(None, min_length=1, max_length=256)


class UnloadLoraAdapterIn(_Lenient):
    lora_name: str = Field(min_length=1)


class PauseIn(_Strict):
    mode: Literal["abort", "retract", "in_place"] = "in_place"


class ContinueIn(_Strict):
    torch_empty_cache: bool = True


class AbortIn(_Strict):
    rid: str | None = None
    abort_all: bool = False


# ------------------------------------------------------------------------------------------ parsing
M = TypeVar("M", bound=BaseModel)

# Pydantic puts union-branch tags ("int", "list[str]", ...) into error locations; they are not fields.
_UNION_TAGS = {"int", "str", "float", "bool", "none", "dict", "list"}


def error_param(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or "[" in part or part.startswith("function-")):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "body"


async def parse_body(request: Request, model: type[M], *, allow_empty: bool = False) -> M:
    """Read JSON (400 if malformed or not an object) and validate it (400 naming the first bad field)."""
    raw = await request.body()
    if not raw.strip():
        if not allow_empty:
            raise EngineError("request body is empty; a JSON object is required", param="body")
        data: Any = {}
    else:
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise EngineError(f"malformed JSON body: {exc}", param="body") from None
    if not isinstance(data, dict):
        raise EngineError("the JSON body must be an object", param="body")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = error_param(tuple(first.get("loc", ())))
        cause = (first.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):  # cross-field check: name the field it is about
            param = f"{param}.{cause.param}" if param != "body" else cause.param
        message = first.get("msg", "invalid value").removeprefix("Value error, ")
        raise EngineError(f"{param}: {message}", param=param) from None
