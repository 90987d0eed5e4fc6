"""A loopback endpoint answers the loopback names with or without a port (tester 30 F4): a client
of ``http://localhost/mcp`` (the default port) sends ``Host: localhost`` and ``Origin:
http://localhost``; it was answered 421 while ``localhost:8000`` was served. A mounted app is
asked through Starlette's test client, as a browser or SDK client would ask it."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from mcp_providers import compose
from mcp_providers._serve.transport.http_policy import transport_policy
from mcp_providers.embedding import mount

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t30", "version": "1"}}})  # fmt: skip
NAMES = ["localhost", "127.0.0.1", "[::1]"]


@pytest.fixture(scope="module")
def app() -> Starlette:
    made = Starlette()
    mount(made, compose(), "/mcp")
    return made


def _status(app: Starlette, base: str, origin: str | None = None) -> int:
    headers = HEADERS | ({"origin": origin} if origin else {})
    with TestClient(app, base_url=base) as client:
        return client.post("/mcp", headers=headers, content=INITIALIZE).status_code


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("port", ["", ":80", ":8000"])
def test_each_loopback_name_is_answered_with_or_without_a_port(app: Starlette, name: str, port: str) -> None:
    assert _status(app, f"http://{name}{port}") == 200
    assert _status(app, f"http://{name}{port}", origin=f"http://{name}{port}") == 200


@pytest.mark.parametrize("host", ["localhost.evil.example", "127.0.0.1.evil.example", "evil.example", "[::2]"])
def test_other_names_are_still_refused(app: Starlette, host: str) -> None:
    assert _status(app, f"http://{host}") == 421
    assert _status(app, "http://localhost", origin=f"http://{host}") == 403


@pytest.mark.parametrize("bind", ["127.0.0.1", "localhost", "::1", "127.1", "0.0.0.0", "::"])
def test_every_policy_that_answers_loopback_names_answers_them_without_a_port(bind: str) -> None:
    policy = transport_policy(bind)
    for name in NAMES:
        assert name in policy.allowed_hosts and f"{name}:*" in policy.allowed_hosts, (bind, policy.allowed_hosts)
        assert f"http://{name}" in (policy.allowed_origins or []), (bind, policy.allowed_origins)
    own = "127.1" if bind == "127.1" else None
    if own:
        assert own in policy.allowed_hosts and f"http://{own}" in (policy.allowed_origins or [])
