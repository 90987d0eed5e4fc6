"""OpenAPI services reached with OAuth: whose callers a token exchange is made for, and that no
credential this server obtains for a service comes back to a caller through it.

Tester 5, F1: with ``[server.auth]`` trusting two issuers, a caller of issuer B had their token sent
to issuer A's token endpoint (``on_behalf_of``), and B's ``alice`` reached the service as A's. Now
``auth.issuers`` names whose callers are exchanged for (the ServiceNow ``jwt_bearer`` rule,
:mod:`mcp_providers.plugins._issuers`): others are refused (-32003) before anything is sent.

Tester 5, F5: a 2xx answer echoing the ``Authorization`` header reached the caller unmasked (under
``client_credentials`` the server's own service token). Every credential the broker hands for a
service is now masked in every answer of it, success or failure, text or binary.

Real parts: the OpenAPI test app (``openapi_support``) on loopback with a fake token endpoint beside
it that records each token request and issues a fresh opaque token; the plugin composed in-process
with ``[server.auth]`` settings, and callers given as verified principals.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from fastapi import Request, Response
from fastapi.responses import JSONResponse
from mcp import MCPError
from openapi_support import SEEN, app, serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.config import AuthConfig, ServerSettings
from mcp_providers.errors import DENIED, CompositionError
from mcp_providers.identity import Principal
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

CORP, PARTNER = "https://corp.idp.example.test", "https://partner.idp.example.test"
CLIENT_ID, CLIENT_SECRET = "openapi-gw", "gw-secret-7c1d9e3a5b"
CORP_TOKEN, PARTNER_TOKEN = "corp-alice-token-1a2b3c4d", "partner-alice-token-9f8e7d6c"
ALICE = Principal("alice", issuer=CORP, access_token=CORP_TOKEN)
PARTNERS_ALICE = Principal("alice", issuer=PARTNER, access_token=PARTNER_TOKEN)
ASKED: list[dict[str, str]] = []
"""Every token request's form (one value per field)."""
ISSUED: list[str] = []
"""Every access token the fake token endpoint issued, in order."""
_serial = itertools.count(1)


def with_token_endpoint() -> Any:
    """The OpenAPI test app, plus ``POST /token`` (not in its document) issuing a fresh token for
    any grant, and ``GET /mirror`` (in it) that answers 200 with the bearer it was sent, as is,
    base64-encoded and hex-encoded, and the client secret (it is the authorization server too), as
    JSON, or, with ``binary``, the bearer in raw bytes."""
    api = app()

    @api.post("/token", include_in_schema=False)
    async def token(request: Request) -> JSONResponse:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        ASKED.append(form)
        issued = f"issued-{next(_serial)}-{form.get('grant_type', '?')[-14:]}-5e6f7a8b"
        ISSUED.append(issued)
        return JSONResponse({"access_token": issued, "token_type": "Bearer", "expires_in": 300})

    @api.get("/mirror", operation_id="mirror")
    def mirror(request: Request, binary: bool = False) -> Response:
        sent = request.headers.get("authorization", "").removeprefix("Bearer ")
        forms = {"raw": sent, "b64": base64.b64encode(sent.encode()).decode(), "hex": sent.encode().hex(),
                 "client": CLIENT_SECRET}  # fmt: skip
        if binary:
            return Response(b"\x89\xff\x00" + sent.encode() + b"\xfe", media_type="application/octet-stream")
        return JSONResponse(forms)

    return api


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(with_token_endpoint()) as running:
        yield running


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OA_ISS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("OA_ISS_CLIENT_SECRET", CLIENT_SECRET)


def jwt_auth(*issuers: str) -> ServerSettings:
    return ServerSettings(auth=AuthConfig(mode="jwt", issuer=issuers, resource_url="https://mcp.example.test/mcp"))


def service(origin: str, kind: str = "on_behalf_of", name: str = "people", **auth: Any) -> dict[str, Any]:
    oauth = {"type": kind, "token_endpoint": f"{origin}/token", "client_id_env": "OA_ISS_CLIENT_ID",
             "client_secret_env": "OA_ISS_CLIENT_SECRET", **auth}  # fmt: skip
    return {"name": name, "document": f"{origin}/openapi.json", "base_url": origin, "auth": oauth}


def composed(server: ServerSettings | None, *services: dict[str, Any]) -> Any:
    return compose({"openapi": openapi_plugin}, {"openapi": {"services": list(services)}}, server=server)


def sent_tokens() -> list[str]:
    """Every subject token (a caller's own) that reached the token endpoint."""
    return [form["subject_token"] for form in ASKED if "subject_token" in form]


@pytest.mark.parametrize(
    ("server", "auth"),
    [(jwt_auth(CORP, PARTNER), {"issuers": [CORP]}), (jwt_auth(CORP), {}), (None, {"issuers": [CORP]})],
    ids=["two trusted, one named", "one trusted", "no server config, one named"],
)
async def test_a_caller_of_another_issuer_is_refused_and_nothing_is_sent(
    origin: str, env: None, server: ServerSettings | None, auth: dict[str, Any]
) -> None:
    composition = composed(server, service(origin, **auth))
    async with composition.running():
        seen, asked, exchanged = len(SEEN), len(ASKED), len(sent_tokens())
        async with connect(composition, principal=PARTNERS_ALICE) as client:
            for ask in (
                lambda: client.read_resource("openapi://people/items"),
                lambda: client.call_tool("people_createItem", {"body": {"name": "drill", "price": 1.0}}),
            ):
                with pytest.raises(MCPError) as refused:
                    await ask()
                assert refused.value.error.code == DENIED
                message = refused.value.error.message
                assert message.startswith(
                    "service 'people' is reached on behalf of each caller; it serves callers "
                    f"of {CORP!r} only (auth.issuers), and this caller's issuer is {PARTNER!r}"
                )
                assert PARTNER_TOKEN not in message
        assert (len(SEEN), len(ASKED)) == (seen, asked), "a request was sent for a caller of another issuer"
        async with connect(composition, principal=ALICE) as client:  # the issuer named is served
            read = await client.read_resource("openapi://people/items")
        assert json.loads(read.contents[0].text)[0]["name"] == "hammer"  # type: ignore[union-attr]
    # sliced by the tokens sent before (ASKED, shared by a worker's files, also holds other grants' forms)
    assert sent_tokens()[exchanged:] == [CORP_TOKEN]  # and no partner token among them
    assert SEEN[-1]["headers"]["authorization"] == f"Bearer {ISSUED[-1]}"


async def test_issuers_said_to_share_users_are_both_exchanged_for(origin: str, env: None) -> None:
    both = {"issuers": [CORP, PARTNER], "issuers_share_users": True}
    composition = composed(jwt_auth(CORP, PARTNER), service(origin, **both))
    async with composition.running(), connect(composition, principal=PARTNERS_ALICE) as client:
        await client.read_resource("openapi://people/items")
    assert sent_tokens()[-1] == PARTNER_TOKEN  # the operator said so


@pytest.mark.parametrize(
    ("server", "auth", "why"),
    [
        (
            jwt_auth(CORP, PARTNER),
            {},
            "[server.auth] trusts 2 issuers ('https://corp.idp.example.test', "
            "'https://partner.idp.example.test'), and each caller's own token is sent to "
            "auth.token_endpoint to be exchanged",
        ),
        (jwt_auth(CORP, PARTNER), {"issuers": [CORP, PARTNER]}, "set auth.issuers_share_users = true"),
        (None, {"issuers": [CORP, PARTNER]}, "set auth.issuers_share_users = true"),
        (jwt_auth(CORP), {"issuers": [PARTNER]}, f"auth.issuers: {PARTNER!r} is not trusted by [server.auth]"),
        (jwt_auth(CORP), {"issuers": [CORP, CORP]}, "auth.issuers: name each issuer once"),
    ],
    ids=["two trusted, none named", "two named, not shared", "two named, no server config", "untrusted", "twice"],
)
def test_settings_that_leave_whose_callers_ambiguous_are_refused(
    origin: str, server: ServerSettings | None, auth: dict[str, Any], why: str
) -> None:
    with pytest.raises(CompositionError) as refused:
        composed(server, service(origin, **auth))
    assert why in str(refused.value), str(refused.value)


def test_the_setting_is_on_behalf_of_only(origin: str) -> None:
    with pytest.raises(CompositionError, match="Extra inputs are not permitted"):
        composed(jwt_auth(CORP), service(origin, "client_credentials", issuers=[CORP]))


@pytest.mark.parametrize("kind", ["on_behalf_of", "client_credentials"])
async def test_no_credential_obtained_for_a_service_comes_back_through_it(origin: str, env: None, kind: str) -> None:
    composition = composed(jwt_auth(CORP), service(origin, kind, name="svc"))
    async with composition.running(), connect(composition, principal=ALICE) as client:
        echoed = await client.read_resource("openapi://svc/echo?ok=true")
        mirrored = await client.read_resource("openapi://svc/mirror")
        binary = await client.read_resource("openapi://svc/mirror?binary=true")
        with pytest.raises(MCPError) as refused:  # a 403 quoting it
            await client.read_resource("openapi://svc/echo")
    sent = {s["headers"].get("authorization") for s in SEEN[-4:]}
    assert sent == {f"Bearer {ISSUED[-1]}"}, "the service was not sent the credential obtained"
    token = ISSUED[-1]
    assert json.loads(echoed.contents[0].text) == {"detail": ["you sent Bearer [redacted]"]}  # type: ignore[union-attr]
    masked = dict.fromkeys(("raw", "b64", "hex", "client"), "[redacted]")
    assert json.loads(mirrored.contents[0].text) == masked  # type: ignore[union-attr]
    got = base64.b64decode(binary.contents[0].blob)  # type: ignore[union-attr]
    assert got == b"\x89\xff\x00[redacted]\xfe", got
    assert token not in refused.value.error.message and "refused credential Bearer [redacted]" in (
        refused.value.error.message
    )
