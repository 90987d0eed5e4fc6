"""A reload that changes what an OpenAPI service's credentials are obtained under never lets a
credential obtained before it be used after it (tester twenty-two, F6).

The runtime's credential broker outlives reloads. Before the fix it kept a credential under the
service's name and the caller only, so a reload that cut ``auth.issuers`` from {corp, partner} to
{corp} went on serving a partner caller with a cached credential (with the same token and a new
one), while a partner caller with none was refused. Now the caller is judged against the current
settings on every use, and a credential is reused only under the very settings it was obtained
under: a moved ``base_url``, token endpoint or scope gets a new one.

Real parts: the OpenAPI test app with its token endpoint (``test_openapi_on_behalf_issuers``) on two
loopback origins, the plugin composed in process with ``[server.auth]``, reloaded by the real
:class:`~mcp_providers._serve.reload.Reloader`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import MCPError
from openapi_support import SEEN, serving
from test_openapi_on_behalf_issuers import (
    ALICE,
    ASKED,
    CLIENT_ID,
    CLIENT_SECRET,
    CORP,
    ISSUED,
    PARTNER,
    PARTNERS_ALICE,
    jwt_auth,
    with_token_endpoint,
)

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers._serve.reload import Attempt, Reloader
from mcp_providers.config import Config, ServerSettings
from mcp_providers.errors import DENIED
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

ITEMS = "openapi://people/items"


@pytest.fixture(scope="module")
def origins() -> Iterator[tuple[str, str]]:
    with serving(with_token_endpoint()) as first, serving(with_token_endpoint()) as second:
        yield first, second


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OA_ISS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("OA_ISS_CLIENT_SECRET", CLIENT_SECRET)


def people(origin: str, kind: str = "on_behalf_of", *, base: str | None = None, **auth: Any) -> dict[str, Any]:
    oauth = {"type": kind, "token_endpoint": f"{origin}/token", "client_id_env": "OA_ISS_CLIENT_ID",
             "client_secret_env": "OA_ISS_CLIENT_SECRET", **auth}  # fmt: skip
    return {"name": "people", "document": f"{origin}/openapi.json", "base_url": base or origin, "auth": oauth}


class Reloading:
    """The openapi plugin composed with ``service``, and a reloader serving the next one given."""

    def __init__(self, server: ServerSettings, service: dict[str, Any]) -> None:
        self.server, self.service = server, service
        self.composition = compose({"openapi": openapi_plugin}, self._config().plugins, server=server)
        self.reloader = Reloader(self.composition, self._config, load_entrypoints=False,
                                 plugins={"openapi": openapi_plugin})  # fmt: skip

    def _config(self) -> Config:
        return Config(plugins={"openapi": {"services": [self.service]}}, server=self.server)

    async def reload(self, service: dict[str, Any]) -> Attempt:
        self.service = service
        attempt = await self.reloader.reload()
        assert attempt.outcome == "applied", attempt
        return attempt


async def read(composition: Any, principal: Any) -> Any:
    async with connect(composition, principal=principal) as client:
        return await client.read_resource(ITEMS)


async def test_a_reload_narrowing_auth_issuers_refuses_a_cached_partner_caller_and_sends_nothing(
    origins: tuple[str, str], env: None
) -> None:
    origin = origins[0]
    both = people(origin, issuers=[CORP, PARTNER], issuers_share_users=True)
    setup = Reloading(jwt_auth(CORP, PARTNER), both)
    async with setup.composition.running():
        await read(setup.composition, PARTNERS_ALICE)  # partner alice's exchanged credential is cached
        await setup.reload(people(origin, issuers=[CORP]))
        seen, asked = len(SEEN), len(ASKED)
        async with connect(setup.composition, principal=PARTNERS_ALICE) as client:
            for _ in range(2):  # the same caller again, and again with the credential still cached
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(ITEMS)
                assert refused.value.error.code == DENIED
                assert refused.value.error.message.startswith(
                    "service 'people' is reached on behalf of each caller; it serves callers "
                    f"of {CORP!r} only (auth.issuers), and this caller's issuer is {PARTNER!r}"
                )
        assert (len(SEEN), len(ASKED)) == (seen, asked), "a request was sent for a caller the settings refuse"
        served = await read(setup.composition, ALICE)  # the issuer still named is served
    assert json.loads(served.contents[0].text)[0]["name"] == "hammer"


@pytest.mark.parametrize("kind", ["on_behalf_of", "client_credentials"])
@pytest.mark.parametrize("moved", ["base_url", "base_url, resource pinned", "token_endpoint", "scope"])
async def test_a_credential_obtained_before_a_reload_that_changed_its_settings_is_never_sent_after_it(
    origins: tuple[str, str], env: None, kind: str, moved: str
) -> None:
    first, second = origins
    pinned = {"resource": f"{first}/api"}  # the resource asked for stays; only where it is sent moves
    initial, changed = {
        "base_url": (people(first, kind), people(first, kind, base=second)),
        "base_url, resource pinned": (people(first, kind, **pinned), people(first, kind, base=second, **pinned)),
        "token_endpoint": (people(first, kind), people(first, kind, token_endpoint=f"{second}/token")),
        "scope": (people(first, kind), people(first, kind, scope="items:read")),
    }[moved]
    setup = Reloading(jwt_auth(CORP), initial)
    async with setup.composition.running():
        await read(setup.composition, ALICE)
        before = set(ISSUED)
        assert SEEN[-1]["headers"]["authorization"] in {f"Bearer {t}" for t in before}
        await setup.reload(changed)
        seen = len(SEEN)
        await read(setup.composition, ALICE)
        await read(setup.composition, ALICE)  # the new one is cached in turn
    sent = [s["headers"]["authorization"].removeprefix("Bearer ") for s in SEEN[seen:] if s["path"] == "/items"]
    assert len(sent) == 2 and sent[0] == sent[1], sent
    assert sent[0] not in before, f"a credential obtained before the reload ({moved} changed) was sent after it"
    if moved.startswith("base_url"):
        assert SEEN[-1]["headers"]["host"] == second.removeprefix("http://")


async def test_a_reload_that_changes_nothing_the_credential_depends_on_keeps_it(
    origins: tuple[str, str], env: None
) -> None:
    first = origins[0]
    setup = Reloading(jwt_auth(CORP), people(first))
    async with setup.composition.running():
        await read(setup.composition, ALICE)
        asked = len(ASKED)
        await setup.reload({**people(first), "timeout_seconds": 12})
        await read(setup.composition, ALICE)
    assert len(ASKED) == asked, "a reload that changed no credential setting asked for a new credential"
