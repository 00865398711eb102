"""The one error shape every engine route uses."""

from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

from openclaw_engine.errors import EngineError, install_error_handlers


class _Body(BaseModel):
    samples: list[list[int]]


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/echo")
    def echo(body: _Body) -> dict:
        if not body.samples:
            raise EngineError("samples must not be empty", param="samples")
        return {"n": len(body.samples)}

    return app


def test_validation_error_names_the_nested_field() -> None:
    client = TestClient(_app())
    response = client.post("/echo", json={"samples": [[1, 2], [3, "x"]]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "samples[1][1]"
    assert error["type"] == "invalid_request_error"
    assert error["code"] == 400


def test_engine_error_renders_openai_error_json() -> None:
    client = TestClient(_app())
    response = client.post("/echo", json={"samples": []})
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "samples must not be empty",
            "type": "invalid_request_error",
            "param": "samples",
            "code": 400,
        }
    }
