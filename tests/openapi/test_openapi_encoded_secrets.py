"""Secrets a service or its token endpoint quote back in a spelling of their own (tester, round 10).

H5: a token endpoint's refusal was masked by replacing the plain client secret only; an
authorization server echoing what it was sent showed it URL-encoded (``client_secret=Kx9%21p...``)
and inside ``Basic <base64>``. Its text now passes one ``Secrets`` holding the client secret (and
any token sent), with every spelling and decoded view (``plugins/_masking.py``).

MEDIUM: an answer declared ``charset=utf-16`` was searched as UTF-8 or latin-1 bytes, so the key it
quoted reached the client; the declared charset (or a byte-order mark) decodes it for the search.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote_plus

import httpx2
import pytest
from fastapi import FastAPI, Request, Response
from mcp import MCPError
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.plugins._masking import MASK, body_text
from mcp_providers.plugins._oauth import ClientCredentialsAuth, CredentialRefused, TokenEndpoint
from mcp_providers.plugins.openapi.client import Answer, Service
from mcp_providers.plugins.openapi.settings import ServiceSettings
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

CLIENT_ID = "gateway-client"
CLIENT_SECRET = "Kx9!p~Qz/w+Tq=Lm"
API_KEY = "Pa55!word/2026+xyz-0123"
OK = {"200": {"description": "ok"}}
OPERATIONS = ("plain", "utf16", "utf16le", "utf16json")
DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Echoes", "version": "1"},
    "paths": {f"/{op}": {"get": {"operationId": op, "responses": OK}} for op in OPERATIONS},
}


def _words(text: str) -> str:
    """What a reader recovers from ``text``: it URL-decoded, and each long word base64-decoded."""
    decoded = [unquote_plus(text)]
    for word in text.replace(",", " ").replace('"', " ").split():
        word = word.rstrip("=)")
        for start in range(4):
            chunk = word[start:][: len(word[start:]) // 4 * 4]
            with contextlib.suppress(ValueError):
                decoded.append(base64.b64decode(chunk, altchars=b"+/").decode("latin-1"))
    return " ".join(decoded)


def _app() -> FastAPI:
    api = FastAPI(openapi_url=None)

    @api.get("/openapi.json")
    def document() -> dict[str, Any]:
        return DOCUMENT

    @api.post("/token")
    async def token(request: Request) -> Response:  # echoes what it was sent, refusing it
        form = (await request.body()).decode()
        said = f"invalid_client: got {form} authorization={request.headers.get('authorization')}"
        return Response(json.dumps({"error": "invalid_client", "error_description": said}), 400,
                        media_type="application/json")  # fmt: skip

    @api.get("/plain")
    def plain() -> dict[str, str]:
        return {"ok": "yes"}

    @api.get("/utf16")
    def utf16(request: Request) -> Response:
        said = f"error: bad key {request.headers.get('x-api-key')}"
        return Response(said.encode("utf-16"), media_type="text/plain; charset=utf-16")

    @api.get("/utf16le")
    def utf16le(request: Request) -> Response:  # no byte-order mark: only the declared charset tells
        said = f"error: bad key {request.headers.get('x-api-key')}"
        return Response(said.encode("utf-16-le"), media_type="text/plain; charset=utf-16le")

    @api.get("/utf16json")
    def utf16json(request: Request) -> Response:
        said = json.dumps({"key": request.headers.get("x-api-key")})
        return Response(said.encode("utf-16"), headers={"content-type": "application/json; charset=utf-16"})

    return api


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(_app()) as served:
        yield served


def _composed(origin: str, auth: dict[str, Any]) -> Any:
    service = {"name": "echo", "document": f"{origin}/openapi.json", "base_url": origin, "auth": auth}
    return compose({"openapi": openapi_plugin}, {"openapi": {"services": [service]}})


@pytest.mark.parametrize("client_auth", ["client_secret_post", "client_secret_basic"])
async def test_a_token_endpoint_echoing_the_client_secret_encoded_never_shows_it(
    origin: str, client_auth: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("ECHO_CLIENT_SECRET", CLIENT_SECRET)
    auth = {"type": "client_credentials", "token_endpoint": f"{origin}/token", "client_id_env": "ECHO_CLIENT_ID",
            "client_secret_env": "ECHO_CLIENT_SECRET", "client_auth": client_auth}  # fmt: skip
    composed = _composed(origin, auth)
    async with composed.running(), connect(composed) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("openapi://echo/plain")
    said = refused.value.error.message
    assert "the authorization server refused a client credentials grant (HTTP 400" in said, said
    assert CLIENT_SECRET not in _words(said) and MASK in said, said


def _endpoint(monkeypatch: pytest.MonkeyPatch) -> TokenEndpoint:
    monkeypatch.setenv("ECHO_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("ECHO_CLIENT_SECRET", CLIENT_SECRET)
    auth = ClientCredentialsAuth(token_endpoint="https://idp.example.com/token", client_id_env="ECHO_CLIENT_ID",
                                 client_secret_env="ECHO_CLIENT_SECRET")  # fmt: skip
    return TokenEndpoint(auth, owner="service 'echo'", who="service 'echo'", resource="https://s", timeout=5)


BASIC = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
ECHOED = {
    "form-encoded": "client_secret=Kx9%21p%7EQz%2Fw%2BTq%3DLm&grant_type=client_credentials",
    "JavaScript-encoded": "client_secret=Kx9!p~Qz%2Fw%2BTq%3DLm",
    "Basic credential without its scheme": f"credentials {BASIC} rejected",
    "PHP JSON": json.dumps({"secret": CLIENT_SECRET}).replace("/", "\\/"),
    "re-cased": f"secret {CLIENT_SECRET.swapcase()} unknown",
    "the subject token form-encoded": "subject_token=eyJ.sub%2Fject%2Btoken",
}


@pytest.mark.parametrize("how", sorted(ECHOED))
def test_a_refusal_quoting_a_secret_sent_in_any_spelling_is_masked(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """H5: ``_granted`` replaced the plain client secret only (``str.replace``)."""
    endpoint = _endpoint(monkeypatch)
    answer = httpx2.Response(400, json={"error": "invalid_client", "error_description": ECHOED[how]})
    with pytest.raises(CredentialRefused) as refused:
        endpoint._granted(answer, "a client credentials grant", (CLIENT_SECRET, "eyJ.sub/ject+token"))
    said = str(refused.value)
    assert "refused a client credentials grant (HTTP 400: " in said and MASK in said, said
    assert CLIENT_SECRET not in _words(said) and "sub/ject+token" not in _words(said), said


def test_a_token_type_quoting_the_secret_is_masked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = _endpoint(monkeypatch)
    answer = httpx2.Response(200, json={"access_token": "t", "token_type": f"mac {CLIENT_SECRET}"})
    with pytest.raises(CredentialRefused) as refused:
        endpoint._granted(answer, "a client credentials grant", (CLIENT_SECRET,))
    assert CLIENT_SECRET.lower() not in str(refused.value).lower() and MASK in str(refused.value)


CODECS = {"utf16": "utf-16", "utf16le": "utf-16-le", "utf16json": "utf-16"}


@pytest.mark.parametrize("path", sorted(CODECS))
async def test_an_answer_in_a_declared_charset_is_searched_decoded_and_masked(
    origin: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEDIUM: a UTF-16 answer quoting the key reached the client (as a blob) unmasked."""
    monkeypatch.setenv("ECHO_KEY", API_KEY)
    composed = _composed(origin, {"type": "api_key", "value_env": "ECHO_KEY", "name": "X-API-Key"})
    async with composed.running(), connect(composed) as client:
        read = (await client.read_resource(f"openapi://echo/{path}")).contents[0]
    raw = read.text.encode() if hasattr(read, "text") else base64.b64decode(read.blob)
    text = raw.decode(CODECS[path])
    assert API_KEY not in text and MASK in text, text


@pytest.mark.parametrize(
    ("body", "content_type", "codec"),
    [
        ("clé".encode("utf-16"), "text/plain; charset=utf-16", "utf-16"),
        ("clé".encode("utf-16-be"), 'application/json; Charset="UTF-16BE"', "utf-16-be"),
        ("clé".encode("utf-32"), "application/json", "utf-32"),  # no charset: the byte-order mark
        ("clé".encode("utf-16"), None, "utf-16"),
        ("clé".encode("latin-1"), "text/plain; charset=iso-8859-1", "iso8859-1"),
        ("clé".encode(), "text/plain; charset=no-such-charset", "utf-8"),  # unknown: passed over
        ("clés".encode(), "text/plain; charset=utf-16", "utf-8"),  # 5 bytes: does not decode as declared: passed over
        (b"\xff\xd8\xffcl\xc3", "image/jpeg", "latin-1"),  # binary: byte for byte
    ],
)
def test_a_body_is_read_in_its_declared_charset_else_its_mark_else_utf8_else_bytes(
    body: bytes, content_type: str | None, codec: str
) -> None:
    text, used = body_text(body, content_type)
    assert used == codec and text == body.decode(codec)


def test_binary_that_only_looks_like_utf16_is_still_searched_byte_for_byte(origin: str) -> None:
    settings = ServiceSettings.model_validate({"name": "echo", "document": f"{origin}/openapi.json"})
    service = Service(settings, None, "not loaded: only its masking is used")
    service._secrets.add(API_KEY)
    body = codecs.BOM_UTF16_LE + b"\x00\x01 key " + API_KEY.encode() + b" \x00"
    masked = service._masked(Answer(200, "application/octet-stream", body, "application/octet-stream"))
    assert API_KEY.encode() not in masked.body and MASK.encode() in masked.body
