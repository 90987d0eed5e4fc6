"""A ServiceNow token endpoint's refusal never quotes what it was sent, in any spelling (tester, round 10, H5).

An endpoint echoing its input showed the client secret form-encoded (``client_secret=Kx9%21p...``);
the refusal's words now pass a :class:`~mcp_providers.plugins._masking.Secrets` holding the client
secret and every secret the form carried (password, refresh token, assertion).
"""

from __future__ import annotations

import json
from urllib.parse import unquote_plus

import httpx2
import pytest

from mcp_providers.plugins._masking import MASK
from mcp_providers.plugins.servicenow.token_endpoint import TokenEndpoint, TokenRefused

pytestmark = pytest.mark.anyio

CLIENT_SECRET = "Kx9!p~Qz/w+Tq=Lm"
PASSWORD = "Pa55!word/2026+xyz"


def _echoing(request: httpx2.Request) -> httpx2.Response:
    form = request.content.decode()
    if request.url.path.endswith("/php"):  # PHP's json_encode of what it read: a spelling cut out whole
        form = json.dumps(unquote_plus(form)).replace("/", "\\/")
    return httpx2.Response(401, json={"error": "access_denied", "error_description": f"got {form}"})


GRANTS = [
    ("client_credentials", {}),
    ("password", {"username": "u", "password": PASSWORD}),
    ("refresh_token", {"refresh_token": "rt/" + PASSWORD}),
]


@pytest.mark.parametrize("echo", ["form", "php"])
@pytest.mark.parametrize(("grant", "form"), GRANTS)
async def test_a_refusal_echoing_the_form_shows_none_of_its_secrets(
    echo: str, grant: str, form: dict[str, str]
) -> None:
    async with httpx2.AsyncClient(base_url="https://dev.example", transport=httpx2.MockTransport(_echoing)) as http:
        endpoint = TokenEndpoint(http, instance="dev", client_id="gateway", client_secret=CLIENT_SECRET)
        with pytest.raises(TokenRefused) as refused:
            await endpoint.grant(f"/oauth_token.do/{echo}", grant, **form)
    reason = refused.value.reason
    assert refused.value.status == 401 and MASK in reason, reason
    if echo == "form":  # form-encoded: each secret cut out, the rest kept
        assert reason.startswith("access_denied got ") and "client_id=gateway" in reason, reason
    else:  # JSON-escaped inside a view only: the whole text
        assert reason == MASK
    for secret in (CLIENT_SECRET, PASSWORD):
        assert secret not in unquote_plus(reason), reason
