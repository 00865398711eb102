"""Who may call the engine, and which folders a request may name.

The engine holds the model and writes checkpoints, so it listens on loopback unless told otherwise, and
anywhere else only with a bearer token (`Authorization: Bearer <token>`, what SGLang's and vLLM's `--api-key`
check too); `--allow-no-token` is the explicit way to run open. Every path a request names is resolved
(symlinks included) and must lie inside a configured root: checkpoints, and the folders published to the
policy, inside a checkpoint root; weights loaded from disk inside a checkpoint or model root (the served
model's folder is always one). A refused path is a 403 whose `param` names the field.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import EngineError, send_error

TOKEN_ENV = "OPENCLAW_ENGINE_TOKEN"
TOKEN_FILE_ENV = "OPENCLAW_ENGINE_TOKEN_FILE"
ALLOW_NO_TOKEN_ENV = "OPENCLAW_ENGINE_ALLOW_NO_TOKEN"
CHECKPOINT_ROOTS_ENV = "OPENCLAW_ENGINE_CHECKPOINT_ROOTS"
MODEL_ROOTS_ENV = "OPENCLAW_ENGINE_MODEL_ROOTS"

# Liveness only (status, weight version): container health checks and launchers poll it without the token.
OPEN_PATHS = frozenset({"/health"})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(token_file: str | None, env: os._Environ[str] | dict[str, str] = os.environ) -> str | None:
    """`--token-file`, else OPENCLAW_ENGINE_TOKEN_FILE, else OPENCLAW_ENGINE_TOKEN; None when none is set."""
    path = token_file or env.get(TOKEN_FILE_ENV) or ""
    if path:
        try:
            text = Path(path).read_text().strip()
        except OSError as exc:
            raise SystemExit(f"cannot read the engine token file {path}: {exc}") from exc
        if not text:
            raise SystemExit(f"the engine token file {path} is empty")
        return text
    return env.get(TOKEN_ENV) or None


def refuse_open_beyond_loopback(host: str, token: str | None, allow_no_token: bool) -> None:
    if token or allow_no_token or is_loopback(host):
        return
    raise SystemExit(
        f"refusing to listen on {host} without a token: anyone who reaches it could load weights and "
        f"write checkpoints. Set {TOKEN_ENV} (or {TOKEN_FILE_ENV}, --token-file), listen on 127.0.0.1, "
        f"or pass --allow-no-token ({ALLOW_NO_TOKEN_ENV}=1) if the network is yours alone"
    )


def split_roots(value: str | None) -> list[str]:
    """Roots from an environment variable: separated like PATH (`:` on POSIX)."""
    return [part for part in (value or "").split(os.pathsep) if part]


def _resolved(paths: Iterable[str]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(Path(p).expanduser().resolve() for p in paths))


@dataclass(frozen=True)
class PathRoots:
    """The folders requests may name: checkpoints (read and write) and models (read only)."""

    checkpoints: tuple[Path, ...] = ()
    models: tuple[Path, ...] = ()

    @classmethod
    def of(cls, checkpoints: Sequence[str], models: Sequence[str]) -> PathRoots:
        return cls(checkpoints=_resolved(checkpoints), models=_resolved(models))

    def writable(self, path: str, field_name: str) -> Path:
        """A folder the engine may create or replace: strictly inside a checkpoint root."""
        resolved = self._resolve(path, field_name)
        if any(resolved != root and resolved.is_relative_to(root) for root in self.checkpoints):
            return resolved
        raise self._refusal(path, field_name, self.checkpoints, "checkpoint root")

    def readable(self, path: str, field_name: str) -> Path:
        """A folder the engine may load from: inside a checkpoint root, or a model root or inside one."""
        resolved = self._resolve(path, field_name)
        if any(resolved.is_relative_to(root) for root in (*self.checkpoints, *self.models)):
            return resolved
        raise self._refusal(path, field_name, (*self.checkpoints, *self.models), "checkpoint or model root")

    @staticmethod
    def _resolve(path: str, field_name: str) -> Path:
        if "\x00" in path:
            raise EngineError(f"{field_name}: a path cannot contain NUL", param=field_name)
        # A relative path is the engine's working folder's, as before; it is confined like any other.
        return Path(path).resolve()

    @staticmethod
    def _refusal(path: str, field_name: str, roots: Sequence[Path], kind: str) -> EngineError:
        where = ", ".join(str(r) for r in roots) if roots else "none are configured (--checkpoint-root)"
        return EngineError(
            f"{field_name}: {path!r} is outside every {kind} of this engine ({where})",
            param=field_name,
            status=403,
        )


@dataclass(frozen=True)
class EngineAccess:
    """The token every route but `/health` needs (None: open), and the roots of request paths."""

    token: str | None = None
    roots: PathRoots = field(default_factory=PathRoots)


class TokenMiddleware:
    """Answers 401 (OpenAI error JSON) to any request without `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        message = "missing bearer token" if not given else "wrong bearer token"
        await send_error(
            send,
            f"{message}: send Authorization: Bearer <{TOKEN_ENV}>",
            param="authorization",
            status=401,
            type_="authentication_error",
            headers=[(b"www-authenticate", b"Bearer")],
        )


def add_access_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of who may call a server and which folders its requests may name (engine and sidecar)."""
    parser.add_argument(
        "--token-file",
        default=None,
        help="file holding the bearer token every route but /health needs "
        "(else OPENCLAW_ENGINE_TOKEN_FILE, else OPENCLAW_ENGINE_TOKEN; none: no token)",
    )
    parser.add_argument(
        "--allow-no-token",
        action="store_true",
        default=os.environ.get(ALLOW_NO_TOKEN_ENV, "").lower() in ("1", "true"),
        help=f"listen beyond loopback without a token ({ALLOW_NO_TOKEN_ENV}=1)",
    )
    parser.add_argument(
        "--checkpoint-root",
        action="append",
        default=split_roots(os.environ.get(CHECKPOINT_ROOTS_ENV)),
        help=f"folder checkpoints and published weights may be written and read in; repeatable "
        f"({CHECKPOINT_ROOTS_ENV}, separated by {os.pathsep!r})",
    )
    parser.add_argument(
        "--model-root",
        action="append",
        default=split_roots(os.environ.get(MODEL_ROOTS_ENV)),
        help=f"folder weights may be loaded from (besides --model and the checkpoint roots); repeatable "
        f"({MODEL_ROOTS_ENV})",
    )


def engine_access(args: argparse.Namespace, models: list[str]) -> EngineAccess:
    """The token and roots `args` give, after refusing an open listener beyond loopback."""
    token = read_token(args.token_file)
    refuse_open_beyond_loopback(args.host, token, args.allow_no_token)
    return EngineAccess(token=token, roots=PathRoots.of(args.checkpoint_root, [*models, *args.model_root]))
