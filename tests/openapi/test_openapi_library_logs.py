"""No secret the composition holds reaches the log of a library it sends with (issue 40: "Secrets
never appear in output, logs, errors"): httpx2 logs each request's URL at INFO (an API key sent in
the query with it), httpcore2 each answer's headers at DEBUG (a service echoing a credential in a
header, a ``Set-Cookie``). While a composition runs those records have every held secret masked;
against a real loopback service, with those loggers at DEBUG."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.plugins._masking import MASK
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

KEY = "logged-key-4b8d2f6a1c3e"
TOKEN = "logged-token-9e1c5a3f7b2d"
LIBRARIES = ("httpx2", "httpcore2", "httpcore2.http11", "httpcore2.connection")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _echoing() -> FastAPI:
    api = FastAPI(title="echoing", version="1")

    @api.get("/whoami", operation_id="whoami")
    def whoami(request: Request) -> Response:
        """Echoes what it was sent in its answer's headers, as some services do."""
        key, auth = request.query_params.get("key", ""), request.headers.get("authorization", "")
        headers = {"Set-Cookie": f"session={key}", "X-Echoed": auth}
        return Response('{"ok": true}', media_type="application/json", headers=headers)

    return api


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(_echoing()) as found:
        yield found


def _composed(origin: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LOGGED_KEY", KEY)
    monkeypatch.setenv("LOGGED_TOKEN", TOKEN)
    services = [
        {"name": "keyed", "document": f"{origin}/openapi.json",
         "auth": {"type": "api_key", "location": "query", "name": "key", "value_env": "LOGGED_KEY"}},
        {"name": "bearing", "document": f"{origin}/openapi.json",
         "auth": {"type": "bearer", "token_env": "LOGGED_TOKEN"}},
    ]  # fmt: skip
    return compose({"openapi": openapi_plugin}, {"openapi": {"services": services}})


async def test_a_key_in_the_query_or_a_credential_echoed_in_a_header_is_masked_in_library_logs(
    origin: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in LIBRARIES:
        caplog.set_level(logging.DEBUG, name)
    composed = _composed(origin, monkeypatch)
    async with composed.running(), connect(composed) as client:
        for service in ("keyed", "bearing"):
            read = await client.read_resource(f"openapi://{service}/whoami")
            assert '"ok"' in read.contents[0].text  # type: ignore[union-attr]
    said = [r.getMessage() for r in caplog.records if r.name.startswith(("httpx2", "httpcore2"))]
    requests = [s for s in said if s.startswith("HTTP Request: GET") and "/whoami" in s]
    assert len(requests) == 2, said
    assert f"whoami?key={MASK} " in " ".join(requests), requests
    headers = [s for s in said if "receive_response_headers.complete" in s]
    assert headers and any(MASK in s for s in headers), headers
    assert KEY not in caplog.text and TOKEN not in caplog.text
    assert not [f for n in LIBRARIES for f in logging.getLogger(n).filters if type(f).__name__ == "_LibraryLogMask"]
