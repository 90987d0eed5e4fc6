"""An OpenAPI service's body holding a non-ASCII secret's UTF-8 bytes under a declared single-byte
charset is masked, answer and error alike (tester, round 12, M4).

A body ``rejected credential <UTF-8 bytes of the password>`` declared ``charset=cp1251`` (or KOI8-R,
ISO-8859-5...) is read in that charset, so the text holds the password's mojibake; round 11 found it
through Latin-1 and cp1252 only, and an error body (``Service._failure``) was not read with the
Latin-1 fallback an answer had. Both now read a body alike (``Service._read``), and the mojibake view
(``plugins/_single_byte.py``) undoes any single-byte charset.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from mcp import MCPError
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.plugins._masking import MASK
from mcp_providers.plugins.openapi.client import Service
from mcp_providers.plugins.openapi.settings import ServiceSettings
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

PASSWORD = "пароль-секрет-42"
CHARSETS = ["windows-1251", "koi8-r", "cp866", "iso-8859-2", "iso-8859-5", "cp1250", "cp437", "mac_roman",
            "koi8-u", "iso-8859-7", "cp1257", "latin-1", "cp1252", "utf-8"]  # fmt: skip
PARAMETER = {"in": "path", "required": True, "schema": {"type": "string"}}
DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Charsets", "version": "1"},
    "paths": {
        "/docs/{kind}/{charset}": {
            "get": {
                "operationId": "doc",
                "parameters": [{"name": "kind", **PARAMETER}, {"name": "charset", **PARAMETER}],
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


def _app() -> FastAPI:
    api = FastAPI(openapi_url=None)

    @api.get("/openapi.json")
    def document() -> dict[str, Any]:
        return DOCUMENT

    @api.get("/docs/{kind}/{charset}")
    def doc(kind: str, charset: str, request: Request) -> Response:  # echoes the Basic password's bytes
        sent = base64.b64decode(request.headers["authorization"].split()[1]).partition(b":")[2]
        body = b"rejected credential " + sent + b" for you"
        return Response(body, 400 if kind == "err" else 200, headers={"content-type": f"text/plain; charset={charset}"})

    return api


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(_app()) as served:
        yield served


def _leaked(text: str) -> list[str]:
    return [c for c in CHARSETS if PASSWORD.encode().decode(c, "replace") in text]


async def test_a_body_showing_the_password_through_any_single_byte_charset_is_masked(
    origin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHARSET_PASSWORD", PASSWORD)
    service = {"name": "svc", "document": f"{origin}/openapi.json", "base_url": origin,
               "auth": {"type": "basic", "username": "bob", "password_env": "CHARSET_PASSWORD"}}  # fmt: skip
    composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": [service]}})
    async with composed.running(), connect(composed) as client:
        for charset in CHARSETS:
            read = (await client.read_resource(f"openapi://svc/docs/ok/{charset}")).contents[0]
            text = read.text if hasattr(read, "text") else base64.b64decode(read.blob).decode("latin-1")
            assert not _leaked(text) and MASK in text, (charset, text)  # a view found it: masked whole
            with pytest.raises(MCPError) as failed:
                await client.read_resource(f"openapi://svc/docs/err/{charset}")
            said = failed.value.error.message
            assert "HTTP 400" in said and not _leaked(said) and MASK in said, (charset, said)


def test_an_error_body_is_read_as_an_answer_is_latin1_when_only_that_holds_the_secret() -> None:
    """A body that decodes as its declared UTF-16 but holds the secret only byte for byte."""
    settings = ServiceSettings.model_validate({"name": "svc", "document": "http://127.0.0.1:9/openapi.json"})
    service = Service(settings, None, "not loaded: only its masking is used")
    service._secrets.add(PASSWORD)
    body = b"rejected " + PASSWORD.encode() + b"!"  # an even length: decodes as UTF-16 too
    assert len(body) % 2 == 0
    failure = service._failure("reading doc", 400, body, "text/plain; charset=utf-16-le")
    assert "секрет" not in str(failure) and MASK in str(failure), str(failure)
