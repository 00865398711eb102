"""Checks request bodies and server command lines against vLLM's own code (run in .venv-vllm).

stdin: {"calls": [{"method", "path", "body"}], "commands": [[argv after `-m vllm...api_server`]]}
stdout: {"calls": [{"path", "ok", "error"}], "commands": [{"argv", "ok", "error"}]}

A body passes when the route's own request model accepts it and every field it sends is one of the model's
(vLLM accepts unknown fields and only logs them); a command line when vLLM's serve parser
(`make_arg_parser`) takes it and `validate_parsed_serve_args` finds nothing wrong.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

warnings.filterwarnings("ignore")

from checker_io import run  # noqa: E402 (beside this file)
from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.openai.completion.protocol import CompletionRequest  # noqa: E402
from vllm.entrypoints.serve.lora.protocol import LoadLoRAAdapterRequest  # noqa: E402
from vllm.entrypoints.serve.tokenize.protocol import (  # noqa: E402
    TokenizeChatRequest,
    TokenizeCompletionRequest,
)
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402


def model_for(path: str, body: dict[str, Any]) -> Any:
    if path == "/v1/chat/completions":
        return ChatCompletionRequest
    if path == "/v1/completions":
        return CompletionRequest
    if path == "/tokenize":
        return TokenizeChatRequest if "messages" in body else TokenizeCompletionRequest
    if path == "/v1/load_lora_adapter":
        return LoadLoRAAdapterRequest
    return None


# The dev-mode control routes read their bodies by hand (entrypoints/rl/online/api_router.py).
CONTROL_FIELDS = {
    "/update_weight_version": {"new_version"},
    "/collective_rpc": {"method", "args", "kwargs", "timeout"},
    "/abort_requests": {"request_ids"},
    "/pause": set(),
    "/resume": set(),
}
GET_ROUTES = {"/health", "/weight_info", "/v1/models", "/is_paused"}


def check_call(call: dict[str, Any]) -> str | None:
    method, path, body = call["method"], call["path"], call.get("body")
    if method == "GET":
        return None if path in GET_ROUTES else f"vLLM serves no GET {path} the project uses"
    if path in CONTROL_FIELDS:
        unknown = set(body or {}) - CONTROL_FIELDS[path]
        return f"fields {path} does not read: {sorted(unknown)}" if unknown else None
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    model = model_for(path, body)
    if model is None:
        return f"vLLM has no POST {path} the project may use"
    known = set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}
    unknown = set(body) - known
    if unknown:
        return f"fields vLLM's {model.__name__} does not have (ignored): {sorted(unknown)}"
    model.model_validate(body)
    return None


def check_command(argv: list[str]) -> str | None:
    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm.entrypoints.openai.api_server"))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit as error:
        return (err.getvalue().strip() or str(error)).splitlines()[-1]
    validate_parsed_serve_args(args)
    return None


def main() -> None:
    run(check_call, check_command)


if __name__ == "__main__":
    main()
