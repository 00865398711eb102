"""Checks request bodies and server command lines against SGLang 0.5.23's own code (run in .venv-sglang).

stdin: {"calls": [{"method", "path", "body"}], "commands": [[argv after `-m sglang.launch_server`]]}
stdout: {"calls": [{"path", "ok", "error"}], "commands": [{"argv", "ok", "error"}]}

A body passes when (1) the route's own request model, parsed as FastAPI parses it (pydantic TypeAdapter),
accepts it; (2) every field it sends is a field of that model, since SGLang ignores the rest silently and a
misspelled flag would be a capture that never happens; (3) for chat completions, SGLang's own
`_validate_request` and `_convert_to_internal_request` (serving_chat.py, where the stream restrictions live)
run until they need the tokenizer; (4) for /generate, the JSON contract gate (api_contract.py) and
SamplingParams.verify. A command line passes when ServerArgs' own argparse parser takes it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import warnings
from typing import Any

warnings.filterwarnings("ignore")

import msgspec  # noqa: E402
from checker_io import run  # noqa: E402 (beside this file)
from pydantic import BaseModel, TypeAdapter  # noqa: E402
from sglang.srt.entrypoints.api_contract import generate_contract_error  # noqa: E402
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, TokenizeRequest  # noqa: E402
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat  # noqa: E402
from sglang.srt.managers.io_struct import (  # noqa: E402
    AbortReq,
    ContinueGenerationReqInput,
    GenerateReqInput,
    LoadLoRAAdapterReqInput,
    PauseGenerationReqInput,
    UpdateWeightFromDiskReqInput,
)
from sglang.srt.sampling.sampling_params import SamplingParams  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402

ROUTES: dict[str, Any] = {
    "/v1/chat/completions": ChatCompletionRequest,
    "/v1/tokenize": TokenizeRequest,
    "/tokenize": TokenizeRequest,
    "/generate": GenerateReqInput,
    "/update_weights_from_disk": UpdateWeightFromDiskReqInput,
    "/pause_generation": PauseGenerationReqInput,
    "/continue_generation": ContinueGenerationReqInput,
    "/load_lora_adapter": LoadLoRAAdapterReqInput,
    "/abort_request": AbortReq,
}
GET_ROUTES = {"/health", "/health_generate", "/model_info", "/server_info", "/v1/models"}


class ReachedTokenizer(Exception):
    """SGLang's code went as far as it can without a running tokenizer: the checks before it passed."""


class _NoTokenizer:
    def __getattr__(self, name: str) -> Any:
        raise ReachedTokenizer(name)


def field_names(model: Any) -> set[str]:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return set(model.model_fields)
    if dataclasses.is_dataclass(model):
        return {f.name for f in dataclasses.fields(model)}
    if isinstance(model, type) and issubclass(model, msgspec.Struct):
        return {f.name for f in msgspec.structs.fields(model)}
    raise TypeError(f"unknown model kind {model!r}")


def serving_chat() -> OpenAIServingChat:
    # The parts of a running server that _validate_request and _convert_to_internal_request read before they
    # need the tokenizer; a launch with --tool-call-parser qwen25 --reasoning-parser qwen3 (docs/engines.md).
    serving = object.__new__(OpenAIServingChat)
    serving.tokenizer_manager = _NoTokenizer()
    serving.tool_call_parser = "qwen25"
    serving.reasoning_parser = "qwen3"
    serving.is_gpt_oss = False
    serving.is_minimax_m3 = False
    serving.template_manager = type("Templates", (), {"reasoning_config": None})()
    return serving


def check_chat(body: dict[str, Any]) -> str | None:
    request = ChatCompletionRequest.model_validate(body)
    serving = serving_chat()
    try:
        error = serving._validate_request(request)
        if error:
            return error
    except ReachedTokenizer:
        pass
    try:
        serving._convert_to_internal_request(request, None)
    except ReachedTokenizer:
        return None
    except ValueError as error:
        return str(error)
    return "SGLang's conversion finished without the tokenizer: the check did not run as intended"


def check_generate(body: dict[str, Any]) -> str | None:
    error = generate_contract_error(body)
    if error is not None:
        return f"contract: {error}"
    params = body.get("sampling_params") or {}
    unknown = set(params) - field_names(SamplingParams)
    if unknown:
        return f"sampling_params has fields SamplingParams does not: {sorted(unknown)}"
    sampling = SamplingParams(**params)
    sampling.normalize(None)
    sampling.verify(1_000_000)
    return None


def check_call(call: dict[str, Any]) -> str | None:
    method, path, body = call["method"], call["path"], call.get("body")
    if method == "GET":
        return None if path in GET_ROUTES else f"SGLang 0.5.23 serves no GET {path}"
    model = ROUTES.get(path)
    if model is None:
        return f"SGLang 0.5.23 has no POST {path} the project may use"
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    unknown = set(body) - field_names(model)
    if unknown:
        return f"fields SGLang's {model.__name__} does not have (ignored silently): {sorted(unknown)}"
    TypeAdapter(model).validate_python(body)
    if path == "/v1/chat/completions":
        return check_chat(body)
    if path == "/generate":
        return check_generate(body)
    return None


def check_command(argv: list[str]) -> str | None:
    parser = argparse.ArgumentParser(prog="sglang.launch_server", exit_on_error=False)
    ServerArgs.add_cli_args(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
    except (SystemExit, argparse.ArgumentError) as error:
        return (err.getvalue().strip() or str(error)).splitlines()[-1]
    return None


def main() -> None:
    run(check_call, check_command)


if __name__ == "__main__":
    main()
