"""One error shape for every route: OpenAI's error JSON, naming the offending field in `param`."""

from __future__ import annotations

import json

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import Send


class EngineError(Exception):
    """A request the engine refuses; rendered as `{"error": {...}}` with `status`."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        status: int = 400,
        type_: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.type = type_


def error_body(message: str, *, param: str | None, status: int, type_: str) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": status}}


async def send_error(
    send: Send,
    message: str,
    *,
    param: str | None,
    status: int,
    type_: str,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """The error JSON sent straight from ASGI middleware, before any route runs."""
    payload = json.dumps(error_body(message, param=param, status=status, type_=type_)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _loc_to_param(loc: tuple) -> str:
    # ("body", "samples", 0, "loss_mask") -> "samples[0].loss_mask"
    out = ""
    for part in loc:
        if part == "body" and out == "":
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "body"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(EngineError)
    async def _engine_error(_: Request, exc: EngineError) -> JSONResponse:
        return JSONResponse(
            error_body(exc.message, param=exc.param, status=exc.status, type_=exc.type),
            status_code=exc.status,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid request"}
        param = _loc_to_param(tuple(first.get("loc", ("body",))))
        message = f"{param}: {first.get('msg', 'invalid value')}"
        return JSONResponse(
            error_body(message, param=param, status=400, type_="invalid_request_error"), status_code=400
        )
