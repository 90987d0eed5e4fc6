"""ServiceNow masks what an instance says by the one rule every plugin follows (tester, round 10).

An instance echoing a configured secret HTML-escaped, URL- or form-encoded, JSON-escaped, re-cased
or base64-encoded leaked it into the caller's error: ServiceNow's own redactor knew two spellings.
Its masking is now :class:`~mcp_providers.plugins._masking.Secrets` (every spelling, the decoded
views), applied *before* a quoted text is cut to 500 characters (a secret straddling the cut left
its head readable), and a secret whose decoded form is shorter than the minimum masks only itself
(``%65%20`` masked every ``e `` of every message).

Every test runs the composed server against the bundled emulator on loopback, through an MCP client.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import quopri
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

import httpx2
import pytest
from jwt_support import obo_env, obo_instance
from mcp import MCPError
from servicenow_support import DEV_USER, compose_servicenow, dev_instance, prod_instance

from mcp_providers.credentials import CredentialRefused
from mcp_providers.identity import Principal
from mcp_providers.plugins._masking import MASK
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.plugins.servicenow.jwt_bearer import JwtBearerUpstream
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import InstanceSettings
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

PASSWORD = "Pa$$ w0rd&<x>/é"  # the tester's: every character some encoding changes
ALICE = Principal("alice", issuer="https://idp.example.test", claims={"email": "alice@example.test"})
QUERY_FAILED = "instance 'dev': query of incident failed with HTTP 500"


def _spellings(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {
        "as written": secret,
        "html": html.escape(secret),
        "html numeric": "".join(f"&#{ord(c)};" for c in secret),
        "url": quote(secret),
        "url every reserved": quote(secret, safe=""),
        "url twice": quote(quote(secret, safe=""), safe=""),
        "form": quote_plus(secret),
        "json": json.dumps(secret)[1:-1],
        "json every char": "".join(f"\\u{ord(c):04x}" for c in secret),
        "php": json.dumps(secret)[1:-1].replace("/", "\\/"),
        "upper": secret.upper(),
        "lower": secret.lower(),
        "base64": base64.b64encode(raw).decode(),
        "base64 url-safe": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "hex": raw.hex(),
        "basic credential": base64.b64encode(f"{DEV_USER}:{secret}".encode()).decode(),
        # round 11: its UTF-8 bytes shown another way, or its Latin-1 bytes encoded
        "utf-8 read as latin-1": raw.decode("latin-1"),
        "utf-8 read as cp1252": raw.decode("cp1252", "replace"),
        "python bytes repr": repr(raw),
        "quoted-printable": quopri.encodestring(raw).decode(),
        "latin-1 base64": base64.b64encode(secret.encode("latin-1")).decode(),
        "latin-1 hex": secret.encode("latin-1").hex(),
        "latin-1 url": quote(secret.encode("latin-1"), safe=""),
        "latin-1 basic credential": base64.b64encode(f"{DEV_USER}:{secret}".encode("latin-1")).decode(),
    }


@pytest.fixture
def dev_with(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """The ``dev`` emulator whose Basic password (in the environment the plugin reads) is the value
    the test passes (``indirect`` parametrization)."""
    password = request.param
    monkeypatch.setenv("SN_TEST_DEV_PASSWORD", password)
    with Emulator("dev", users={DEV_USER: password}) as emulator:
        yield emulator


async def _said(dev: Emulator, caplog: pytest.LogCaptureFixture) -> tuple[str, dict[str, object]]:
    """Everything a client and the logs see of one failed read and one failed tool call of
    ``dev`` (faults queued by the caller), and the read's error data."""
    caplog.set_level(logging.DEBUG)
    async with connect(compose_servicenow(dev_instance(dev))) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://dev/incidents")
        tool = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident"})
    assert tool.is_error, tool
    error = caught.value.error
    seen = error.message + json.dumps(error.data, ensure_ascii=False) + tool.model_dump_json() + caplog.text
    return seen, dict(error.data or {})


@pytest.mark.parametrize("dev_with", [PASSWORD], indirect=True)
@pytest.mark.parametrize(("label", "spelled"), list(_spellings(PASSWORD).items()))
async def test_a_configured_password_echoed_in_any_spelling_reaches_no_one(
    dev_with: Emulator, caplog: pytest.LogCaptureFixture, label: str, spelled: str
) -> None:
    dev_with.fail_next(2, status=500, message=f"Login failed for {spelled}", detail=f"user {DEV_USER}: {spelled}")
    seen, data = await _said(dev_with, caplog)
    assert spelled not in seen and PASSWORD not in seen, (label, seen)
    assert QUERY_FAILED in seen and data["status"] == 500 and MASK in str(data["message"]), seen


HEADED = "Qz7head-of-the-secret-tail"  # its first characters are what a cut would have left


@pytest.mark.parametrize("dev_with", [HEADED], indirect=True)
@pytest.mark.parametrize("before", [479, 483, 490, 494, 497, 499])
@pytest.mark.parametrize("field", ["message", "detail"])
async def test_a_secret_straddling_the_cut_is_masked_before_the_cut(
    dev_with: Emulator, caplog: pytest.LogCaptureFixture, before: int, field: str
) -> None:
    said = "x" * before + HEADED + " and more after it, enough to be cut " + "y" * 40
    dev_with.fail_next(2, status=500, **{field: said})
    seen, data = await _said(dev_with, caplog)
    assert HEADED[:4] not in seen, seen
    quoted = str(data[field])
    assert quoted.startswith("x" * before + MASK[: 500 - before]) and len(quoted) <= 501, quoted  # masked, then cut


@pytest.mark.parametrize("dev_with", ["%65%20", "%20%74%68", "%C3%A9%65", "%41%42%43", "a%2Fb%2F"], indirect=True)
async def test_a_password_whose_decoded_form_is_short_masks_only_itself(
    dev_with: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    password = str(dev_with.users[DEV_USER])
    words = "the record was updated here; see the reference field ABC a/b/ é"
    dev_with.fail_next(2, status=500, message=words, detail=f"sent {password}")
    seen, data = await _said(dev_with, caplog)
    assert data["message"] == words and data["detail"] == f"sent {MASK}", data
    assert password not in seen


@pytest.mark.parametrize("dev_with", ["abc%20defgh12"], indirect=True)
async def test_a_password_whose_decoded_form_is_long_enough_is_masked_in_both(
    dev_with: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    dev_with.fail_next(2, status=500, message="sent abc defgh12 decoded", detail="sent abc%20defgh12 as written")
    _, data = await _said(dev_with, caplog)
    assert data["message"] == f"sent {MASK} decoded" and data["detail"] == f"sent {MASK} as written", data


@pytest.mark.parametrize("before", [472, 478, 481])
async def test_an_oauth_refusal_is_masked_before_the_cut(
    dev_emulator: Emulator,
    prod_emulator: Emulator,
    secrets_env: dict[str, str],
    caplog: pytest.LogCaptureFixture,
    before: int,
) -> None:
    """The token endpoint's words pass the plugin's masking (every secret it holds, not only those
    the grant sent) before they are cut: the reason quoted is ``{'message': '<before z's><secret>...``,
    cut at 500 characters inside the secret."""
    held = secrets_env["SN_TEST_DEV_PASSWORD"]  # another instance's secret: not in the grant's form
    prod_emulator.fail_next(status=401, scope="oauth", message="z" * before + held + " tail " * 20)
    caplog.set_level(logging.DEBUG)
    composition = compose_servicenow(dev_instance(dev_emulator), prod_instance(prod_emulator))
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://prod/incidents")
    seen = caught.value.error.message + caplog.text
    assert "OAuth token request (client_credentials grant)" in seen and "HTTP 401" in seen, seen
    assert held[:6] not in seen, seen


@pytest.mark.parametrize("before", [470, 476, 480])
async def test_a_jwt_bearer_refusal_is_masked_before_the_cut(monkeypatch: pytest.MonkeyPatch, before: int) -> None:
    """A refused user-token grant quotes the endpoint's words (``invalid_grant <before y's><secret>...``)
    masked by the pool's redactor (a secret it holds that the grant did not send), then cut."""
    for name, value in obo_env().items():
        monkeypatch.setenv(name, value)
    held = "held-by-the-pool-9f3e2a"
    redactor = Redactor()
    redactor.add(held)
    corp = JwtBearerUpstream(InstanceSettings.model_validate(obo_instance("https://corp.example")), redactor)

    def refuse(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            401, json={"error": "invalid_grant", "error_description": "y" * before + held + " t" * 60}
        )

    async with httpx2.AsyncClient(base_url="https://corp.example", transport=httpx2.MockTransport(refuse)) as http:
        assert corp.bind(http) is None
        with pytest.raises(CredentialRefused) as refused:
            await corp.obtain(ALICE)
    message = refused.value.message
    assert "refused a token for ServiceNow user 'alice@example.test'" in message and "HTTP 401" in message, message
    assert held[:6] not in message, message


CYRILLIC = "пароль-секрет-42"
SINGLE_BYTE = ["cp1251", "koi8-r", "cp866", "iso-8859-5", "iso-8859-2", "cp1250", "cp437", "mac_roman", "koi8-u"]


@pytest.mark.parametrize("dev_with", [CYRILLIC], indirect=True)
@pytest.mark.parametrize("charset", SINGLE_BYTE)
async def test_a_password_shown_through_any_single_byte_charset_reaches_no_one(
    dev_with: Emulator, caplog: pytest.LogCaptureFixture, charset: str
) -> None:
    """Round 12: its UTF-8 bytes read in cp1251, KOI8-R... (an instance's mojibake) were shown."""
    shown = CYRILLIC.encode().decode(charset, "replace")
    dev_with.fail_next(2, status=500, message=f"Login failed for {shown}", detail=f"user {DEV_USER}: {shown}")
    seen, data = await _said(dev_with, caplog)
    assert shown not in seen and CYRILLIC not in seen, (charset, seen)
    assert QUERY_FAILED in seen and MASK in str(data["message"]), seen
