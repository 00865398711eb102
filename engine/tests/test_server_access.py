"""Who may call the real engine process, and which folders its requests may name (access.py).

One engine listens beyond loopback with a token and the training routes, its checkpoints confined to one
root: every request without the token is refused, and every path outside the roots is a 403 naming the
field, with nothing outside touched (the save route replaces and removes folders, so a hole there deletes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest

TOKEN = "engine-test-token-6f2a"


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("access")
    inside = base / "checkpoints"
    outside = base / "elsewhere"
    inside.mkdir()
    (outside / "precious").mkdir(parents=True)
    (outside / "precious" / "keep.txt").write_text("not the engine's")
    # A link inside the root that leads out of it.
    (inside / "link-out").symlink_to(outside)
    return {"inside": inside, "outside": outside}


@pytest.fixture(scope="module")
def guarded(
    start_server: Callable[..., AbstractContextManager[str]],
    tiny_model_dir: Path,
    roots: dict[str, Path],
) -> Iterator[str]:
    os.environ["OPENCLAW_ENGINE_TOKEN"] = TOKEN  # the child inherits it; removed below
    try:
        with start_server(
            tiny_model_dir,
            "--host",
            "0.0.0.0",
            "--trainer",
            "--checkpoint-root",
            str(roots["inside"]),
        ) as url:
            yield url.replace("0.0.0.0", "127.0.0.1")
    finally:
        del os.environ["OPENCLAW_ENGINE_TOKEN"]


@pytest.fixture()
def authed(guarded: str) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=guarded, timeout=120.0, headers=headers) as client:
        yield client


def _serve(tiny_model_dir: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "openclaw_engine", "serve", "--model", str(tiny_model_dir), "--port", "0"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60, env=env, check=False)


def test_refuses_to_listen_beyond_loopback_without_a_token(tiny_model_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_ENGINE_")}
    done = _serve(tiny_model_dir, "--host", "0.0.0.0", env=env)
    assert done.returncode != 0
    assert "refusing to listen on 0.0.0.0 without a token" in done.stderr
    assert "OPENCLAW_ENGINE_TOKEN" in done.stderr and "--allow-no-token" in done.stderr
    assert done.stdout == ""  # never printed `ready`


def test_every_route_but_health_needs_the_token(guarded: str) -> None:
    assert httpx.get(f"{guarded}/health", timeout=30).status_code == 200
    for method, path in [
        ("GET", "/v1/models"),
        ("GET", "/trainer_info"),
        ("POST", "/generate"),
        ("POST", "/save_checkpoint"),
        ("POST", "/update_weights_from_disk"),
    ]:
        for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}]:
            response = httpx.request(method, f"{guarded}{path}", headers=headers, json={}, timeout=30)
            assert response.status_code == 401, (path, headers)
            assert response.headers["www-authenticate"] == "Bearer"
            error = response.json()["error"]
            assert error["type"] == "authentication_error" and error["param"] == "authorization"
    ok = httpx.get(f"{guarded}/v1/models", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert ok.status_code == 200


def test_checkpoints_are_written_inside_the_root_only(authed: httpx.Client, roots: dict[str, Path]) -> None:
    inside, outside = roots["inside"], roots["outside"]
    refused = [
        str(outside / "precious"),  # an existing folder the save would replace
        str(inside / ".." / "elsewhere" / "precious"),  # out through ..
        str(inside / "link-out" / "precious"),  # out through a symlink
        str(inside),  # the root itself
        "/",
        "checkpoints/v1",  # relative: the engine's working folder's, not the root's
    ]
    for path in refused:
        response = authed.post("/save_checkpoint", json={"path": path})
        assert response.status_code == 403, path
        error = response.json()["error"]
        assert error["param"] == "path" and "outside every checkpoint root" in error["message"], error
    assert (outside / "precious" / "keep.txt").read_text() == "not the engine's"
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]

    saved = authed.post("/save_checkpoint", json={"path": str(inside / "run" / "v1")})
    assert saved.status_code == 200, saved.text
    assert (inside / "run" / "v1" / "config.json").is_file()
    assert authed.post("/load_checkpoint", json={"path": str(inside / "run" / "v1")}).status_code == 200
    away = authed.post("/load_checkpoint", json={"path": str(outside / "precious")})
    assert away.status_code == 403 and away.json()["error"]["param"] == "path"


def test_weights_load_from_a_root_or_the_served_model_only(
    authed: httpx.Client, roots: dict[str, Path], tiny_model_dir: Path, other_model_dir: Path
) -> None:
    # other_model_dir is a real model folder, but not under any root of this engine.
    away = authed.post("/update_weights_from_disk", json={"model_path": str(other_model_dir)})
    assert away.status_code == 403
    error = away.json()["error"]
    assert error["param"] == "model_path" and "outside every checkpoint or model root" in error["message"]
    assert authed.get("/health").json()["weight_version"] == "0"

    saved = authed.post("/save_checkpoint", json={"path": str(roots["inside"] / "run" / "v2")})
    assert saved.status_code == 200, saved.text
    published = authed.post(
        "/update_weights_from_disk",
        json={"model_path": str(roots["inside"] / "run" / "v2"), "weight_version": "2"},
    )
    assert published.status_code == 200 and published.json()["weight_version"] == "2", published.text
    base = authed.post(
        "/update_weights_from_disk", json={"model_path": str(tiny_model_dir), "weight_version": "base"}
    )
    assert base.status_code == 200, base.text
