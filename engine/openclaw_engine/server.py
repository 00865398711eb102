"""The HTTP server: SGLang's route subset over one `ServedPolicy`, plus the optional training routes.

Every error is OpenAI-shaped JSON (`errors.py`): 400 for bad input naming the field, 413 for
oversized bodies, 500 for generation failures. A failing request never wedges the server: the
model lock is released in `finally`, and worker threads end with their request.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import socket
import sys
from collections.abc import AsyncGenerator
from typing import Any

import uvicorn
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import chat_api, generate_api
from .access import EngineAccess, TokenMiddleware
from .chat import normalize_messages
from .errors import EngineError, error_body, install_error_handlers, send_error
from .generation_events import GenerationRequest
from .generation_result import collect
from .sampling import SamplingParams
from .schemas import (
    AbortIn,
    ChatCompletionIn,
    ContinueIn,
    DetokenizeIn,
    GenerateIn,
    LoadLoraAdapterIn,
    PauseIn,
    TokenizeIn,
    UnloadLoraAdapterIn,
    UpdateWeightsFromDiskIn,
    parse_body,
)
from .served_policy import ServedPolicy

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
HEALTH_GENERATE_TIMEOUT_S = 30.0


class BodyLimitMiddleware:
    """Reject request bodies over `max_bytes` with a 413 JSON error before any route parses them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(send)
            return
        # Read the body here (chunked uploads have no content-length) and replay it to the app.
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # client went away mid-upload
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # afterwards: disconnect notifications for streaming responses

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        message = f"request body exceeds the limit of {self.max_bytes} bytes"
        await send_error(send, message, param="body", status=413, type_="invalid_request_error")


def create_app(
    runner: ServedPolicy,
    *,
    max_body_bytes: int,
    extra_routers: list[APIRouter] | None = None,
    strict: bool = False,
    access: EngineAccess | None = None,
) -> FastAPI:
    access = access or EngineAccess()
    app = FastAPI(title="openclaw-engine", docs_url=None, redoc_url=None)
    install_error_handlers(app)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed", exc_info=exc)
        return JSONResponse(
            error_body(f"internal error: {exc}", param=None, status=500, type_="server_error"),
            status_code=500,
        )

    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    if access.token:  # added last, so it runs first: nothing is read before the token is checked
        app.add_middleware(TokenMiddleware, token=access.token)
    app.include_router(_routes(runner, strict=strict, access=access))
    for router in extra_routers or []:
        app.include_router(router)
    return app


def _routes(runner: ServedPolicy, *, strict: bool, access: EngineAccess) -> APIRouter:
    r = APIRouter()

    # ---------------------------------------------------------------- health / info
    @r.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "weight_version": runner.weight_version, "paused": runner.gate.paused}

    @r.get("/health_generate")
    async def health_generate() -> Response:
        if runner.gate.paused:  # paused for a weight update is not dead
            return JSONResponse({"status": "paused", "weight_version": runner.weight_version})
        request = GenerationRequest(
            input_ids=runner.encode("ping") or [0], sampling=SamplingParams(max_new_tokens=1, temperature=0.0)
        )
        try:
            await asyncio.wait_for(
                collect(runner.generate(request), request.input_ids), HEALTH_GENERATE_TIMEOUT_S
            )
        except TimeoutError:
            raise EngineError(
                "generation did not complete in time", status=503, type_="server_error"
            ) from None
        return JSONResponse({"status": "ok", "weight_version": runner.weight_version})

    @r.get("/model_info")  # SGLang 0.5.23's name; /get_model_info is its deprecated alias
    @r.get("/get_model_info")
    async def get_model_info() -> dict[str, Any]:
        return runner.info()

    @r.get("/server_info")
    @r.get("/get_server_info")
    async def get_server_info() -> dict[str, Any]:
        return {**runner.info(), "active_requests": runner.gate.active_requests}

    @r.get("/v1/models")
    async def models() -> dict[str, Any]:
        info = runner.info()
        card = {
            "id": runner.served_model_name,
            "object": "model",
            "created": int(info["started_at"]),
            "owned_by": "openclaw-engine",
            "root": runner.model_path,
            "max_model_len": runner.context_length,
        }
        cards = [card]
        for name, adapter in runner.lora_adapters.items():  # as vLLM lists LoRA modules
            cards.append(
                {
                    "id": name,
                    "object": "model",
                    "created": int(info["started_at"]),
                    "owned_by": "openclaw-engine",
                    "root": adapter["path"],
                    "parent": runner.served_model_name,
                    "max_model_len": runner.context_length,
                    "weight_version": adapter["weight_version"],
                }
            )
        return {"object": "list", "data": cards}

    # ---------------------------------------------------------------- tokenizer
    @r.post("/tokenize")
    @r.post("/v1/tokenize")
    async def tokenize(request: Request) -> dict[str, Any]:
        body = await parse_body(request, TokenizeIn)
        raw = json.loads(await request.body())
        if body.messages is not None:
            prompt = runner.apply_chat_template(
                normalize_messages(raw["messages"]),
                tools=raw.get("tools"),
                add_generation_prompt=body.add_generation_prompt,
                template_kwargs=dict(body.chat_template_kwargs or {}),
            )
            ids = runner.encode(prompt, add_special_tokens=False)
            images = chat_api.images_of(raw["messages"], runner)  # a text model refuses them (400)
            if images:  # the ids the model consumes: each image's pads expanded
                ids = chat_api.prepare_images(runner, prompt, images).input_ids
            return {
                "tokens": ids,
                "count": len(ids),
                "max_model_len": runner.context_length,
                "prompt": prompt,
            }
        text = body.prompt if body.prompt is not None else body.text
        if isinstance(text, list):
            lists = [runner.encode(t, add_special_tokens=body.add_special_tokens) for t in text]
            return {"tokens": lists, "count": [len(x) for x in lists], "max_model_len": runner.context_length}
        assert text is not None
        ids = runner.encode(text, add_special_tokens=body.add_special_tokens)
        return {"tokens": ids, "count": len(ids), "max_model_len": runner.context_length}

    @r.post("/detokenize")
    @r.post("/v1/detokenize")
    async def detokenize(request: Request) -> dict[str, Any]:
        body = await parse_body(request, DetokenizeIn)
        nested = bool(body.tokens) and isinstance(body.tokens[0], list)
        rows: list[list[int]] = body.tokens if nested else [body.tokens]  # type: ignore[assignment,list-item]
        for i, row in enumerate(rows):
            generate_api.check_token_ids(row, runner, f"tokens[{i}]" if nested else "tokens")
        texts = [runner.decode(row, skip_special_tokens=body.skip_special_tokens) for row in rows]
        return {"text": texts if nested else texts[0]}

    # ---------------------------------------------------------------- generation
    @r.post("/generate")
    async def generate(request: Request) -> Response:
        body = await parse_body(request, GenerateIn)
        req = generate_api.build_request(body, runner)
        if body.stream:
            events = runner.generate(req)
            return StreamingResponse(
                generate_api.stream(events, req, body, runner),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        result = await collect(runner.generate(req), req.input_ids)
        return JSONResponse(generate_api.render(result, req, body, runner))

    @r.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body = await parse_body(request, ChatCompletionIn)
        raw = json.loads(await request.body())
        plan = chat_api.plan(body, raw, runner, strict=strict)
        if body.stream:
            events: AsyncGenerator[Any, None] = runner.generate(plan.request)
            return StreamingResponse(
                chat_api.stream(events, body, plan, runner),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        result = await collect(runner.generate(plan.request), plan.request.input_ids)
        return JSONResponse(chat_api.response(result, body, plan, runner))

    # ---------------------------------------------------------------- control
    @r.post("/update_weights_from_disk")
    async def update_weights_from_disk(request: Request) -> JSONResponse:
        body = await parse_body(request, UpdateWeightsFromDiskIn)
        model_path = str(access.roots.readable(body.model_path, "model_path"))
        if body.abort_all_requests:
            runner.abort(None)
        ok, message, paused = await asyncio.to_thread(
            runner.update_weights_from_disk, model_path, body.weight_version
        )
        content: dict[str, Any] = {"success": ok, "message": message, "num_paused_requests": paused}
        if ok:
            content["weight_version"] = runner.weight_version
            return JSONResponse(content)
        # SGLang answers 400 with {success: false, message}; the error object is added for our clients.
        content.update(error_body(message, param="model_path", status=400, type_="invalid_request_error"))
        return JSONResponse(content, status_code=400)

    @r.post("/load_lora_adapter")
    async def load_lora_adapter(request: Request) -> JSONResponse:
        body = await parse_body(request, LoadLoraAdapterIn)
        try:
            lora_path = str(access.roots.readable(body.lora_path, "lora_path"))
        except EngineError as exc:
            # Outside the roots: update_weights_from_disk's refusal (403), with SGLang's success field.
            content = {"success": False, "message": exc.message}
            content.update(error_body(exc.message, param=exc.param, status=exc.status, type_=exc.type))
            return JSONResponse(content, status_code=exc.status)
        ok, message = await asyncio.to_thread(
            runner.load_lora_adapter, body.lora_name, lora_path, body.weight_version
        )
        return _lora_answer(ok, message, "lora_path")

    @r.post("/unload_lora_adapter")
    async def unload_lora_adapter(request: Request) -> JSONResponse:
        body = await parse_body(request, UnloadLoraAdapterIn)
        ok, message = await asyncio.to_thread(runner.unload_lora_adapter, body.lora_name)
        return _lora_answer(ok, message, "lora_name")

    def _lora_answer(ok: bool, message: str, param: str) -> JSONResponse:
        content: dict[str, Any] = {"success": ok, "message": message}
        if ok:
            content["lora_adapters"] = runner.lora_adapters
            return JSONResponse(content)
        content.update(error_body(message, param=param, status=400, type_="invalid_request_error"))
        return JSONResponse(content, status_code=400)

    @r.get("/flush_cache")
    @r.post("/flush_cache")
    async def flush_cache() -> dict[str, Any]:
        await asyncio.to_thread(runner.flush_cache)
        return {"success": True, "message": "Cache flushed."}

    @r.post("/pause_generation")
    async def pause_generation(request: Request) -> dict[str, Any]:
        body = await parse_body(request, PauseIn, allow_empty=True)
        held = runner.pause(body.mode)
        return {
            "success": True,
            "message": "Generation paused successfully.",
            "mode": body.mode,
            "num_paused_requests": held,
        }

    @r.post("/continue_generation")
    async def continue_generation(request: Request) -> dict[str, Any]:
        await parse_body(request, ContinueIn, allow_empty=True)
        runner.resume()
        return {"success": True, "message": "Generation continued successfully."}

    @r.post("/abort_request")
    async def abort_request(request: Request) -> dict[str, Any]:
        body = await parse_body(request, AbortIn)
        if not body.abort_all and body.rid is None:
            raise EngineError("give rid or abort_all=true", param="rid")
        hit = runner.abort(None if body.abort_all else body.rid)
        return {"success": True, "num_aborted": hit}

    return r


# -------------------------------------------------------------------------------------------- serve
def _log_config() -> dict[str, Any]:
    # stdout carries exactly one line ("ready ..."); uvicorn's access log would otherwise go there.
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def _bind(host: str, port: int) -> socket.socket:
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets whose proto says TCP; without it
    # small streamed writes wait on the client's delayed ACK (~40 ms each).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def serve(app: FastAPI, *, host: str, port: int, log_level: str = "info") -> None:
    """Run uvicorn on an already-bound socket (port 0 works) and print `ready http://HOST:PORT` once up."""
    sock = _bind(host, port)
    real_port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=_log_config(), log_level=log_level, timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                await task  # startup failed: surface the error
                raise SystemExit("server stopped before it was ready")
            await asyncio.sleep(0.02)
        shown = f"[{host}]" if ":" in host else host
        sys.stdout.write(f"ready http://{shown}:{real_port}\n")
        sys.stdout.flush()
        await task

    asyncio.run(main())
