"""A reload that changes what a ServiceNow instance's credentials are obtained under never lets a
credential obtained before it be used after it (tester twenty-two, F6).

The runtime's credential broker outlives reloads and kept a ``jwt_bearer`` user token under
``servicenow:<instance>`` and the caller only. So a reload changing ``user_claim`` from ``email``
to ``upn`` went on serving alice (upn = bob's) as ServiceNow user alice, while carol, with nothing
cached, was mapped to bob; and a reload moving the instance's ``url`` sent the bearer token the old
instance issued to the new host. Each kind is checked here: ``jwt_bearer`` (the broker) and the
service account's ``oauth`` grants (the instance client's own token), plus ``auth.issuers`` cut
by a reload.

Real parts: the emulator granting the JWT bearer grant and OAuth clients, a capture server on
loopback that records every request and answers 401, the plugin composed in process with
``[server.auth]``, reloaded by the real :class:`~mcp_providers._serve.reload.Reloader`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from jwt_support import OBO_CLIENT, OBO_SECRET, key_pair, obo_env, obo_instance
from mcp import Client, MCPError
from servicenow_support import ENV, PROD_CLIENT, PROD_SECRET, prod_instance

import mcp_providers.plugins.servicenow as servicenow_plugin
from mcp_providers import RECEIPT_KEY
from mcp_providers._serve.reload import Reloader
from mcp_providers.config import AuthConfig, Config, ServerSettings
from mcp_providers.errors import DENIED
from mcp_providers.identity import Principal
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

CORP, PARTNER = "https://corp.idp.example.test", "https://partner.idp.example.test"
ALICE_SEES = ["INC0010001", "INC0010002", "INC0010004", "INC0010007", "INC0010008", "INC0010010"]
BOB_SEES = ["INC0010001", "INC0010003", "INC0010004", "INC0010007", "INC0010009", "INC0010010"]
SERVER = ServerSettings(auth=AuthConfig(mode="jwt", issuer=(CORP, PARTNER), resource_url="https://mcp.example.test/mcp",
                                        claims=("email", "upn")))  # fmt: skip


def caller(name: str, upn: str, issuer: str = CORP) -> Principal:
    return Principal(name, issuer=issuer, claims={"email": f"{name}@example.test", "upn": upn})


ALICE = caller("alice", upn="bob@example.test")
SVC_PASSWORD = "svc-Pa55w0rd-f6a1"
CAROL = caller("carol", upn="bob@example.test")


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    for name, value in {**obo_env(), **ENV}.items():
        monkeypatch.setenv(name, value)
    grant = {"client_id": OBO_CLIENT, "client_secret": OBO_SECRET, "public_key_pem": key_pair()[1],
             "user_field": "email"}  # fmt: skip
    monkeypatch.setenv("SN_TEST_F6_PASSWORD", SVC_PASSWORD)
    clients = {PROD_CLIENT: PROD_SECRET}
    with Emulator("dev", jwt_bearer=grant, oauth_clients=clients, users={"svc": SVC_PASSWORD}) as running:
        yield running


class Capture(BaseHTTPRequestHandler):
    """Records each request's method, path and Authorization header; answers 401 to all."""

    seen: list[tuple[str, str, str]]

    def _any(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, self.headers.get("Authorization") or ""))
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PATCH = _any

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    seen: list[tuple[str, str, str]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Recording", (Capture,), {"seen": seen}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


class Reloading:
    """The servicenow plugin composed with ``instance``, and a reloader serving the next one given."""

    def __init__(self, instance: dict[str, Any]) -> None:
        self.instance = instance
        plugins = {"servicenow": servicenow_plugin}
        self.composition = compose(plugins, self._config().plugins, server=SERVER)
        self.reloader = Reloader(self.composition, self._config, load_entrypoints=False, plugins=plugins)

    def _config(self) -> Config:
        return Config(plugins={"servicenow": {"instances": [self.instance]}}, server=SERVER)

    async def reload(self, instance: dict[str, Any]) -> None:
        self.instance = instance
        attempt = await self.reloader.reload()
        assert attempt.outcome == "applied", attempt


async def incidents(client: Client, instance: str = "corp") -> tuple[Any, list[str]]:
    result = await client.read_resource(f"servicenow://{instance}/incidents")
    data = json.loads(result.contents[0].text)["data"]  # type: ignore[union-attr]
    return (result.meta or {})[RECEIPT_KEY].get("upstream"), sorted(r["number"] for r in data)


def per_user(url: str, **auth: Any) -> dict[str, Any]:
    return obo_instance(url, auth={"issuers": [CORP, PARTNER], "issuers_share_users": True, **auth})


async def test_a_reload_changing_user_claim_serves_a_cached_caller_as_the_newly_mapped_user(emulator: Emulator) -> None:
    setup = Reloading(per_user(emulator.base_url))
    async with setup.composition.running():
        async with connect(setup.composition, principal=ALICE) as client:
            upstream, seen = await incidents(client)
        assert (upstream["subject"], seen) == ("alice@example.test", ALICE_SEES)
        await setup.reload(per_user(emulator.base_url, user_claim="upn"))
        for who in (ALICE, CAROL):  # alice had a credential cached; carol none: one rule for both
            async with connect(setup.composition, principal=who) as client:
                upstream, seen = await incidents(client)
            assert upstream == {"name": "servicenow:corp", "subject": "bob@example.test", "grant": "jwt_bearer"}
            assert seen == BOB_SEES, who.subject


def service_account(grant: str, emulator: Emulator) -> Any:
    """An OAuth service-account instance (the instance client's own token, not the broker's)."""
    password = {"username": "svc", "password_env": "SN_TEST_F6_PASSWORD"} if grant == "password" else {}
    made = prod_instance(emulator)
    return lambda url: {**made, "url": url, "auth": {**made["auth"], "grant_type": grant, **password}}


@pytest.mark.parametrize("kind", ["jwt_bearer", "client_credentials", "password"])
async def test_a_reload_moving_the_url_never_sends_the_old_instances_token_to_the_new_host(
    emulator: Emulator, capture: tuple[str, list[tuple[str, str, str]]], kind: str
) -> None:
    url, seen = capture
    name = "corp" if kind == "jwt_bearer" else "prod"
    instance = per_user if kind == "jwt_bearer" else service_account(kind, emulator)
    setup = Reloading(instance(emulator.base_url))
    async with setup.composition.running():
        async with connect(setup.composition, principal=ALICE) as client:
            await incidents(client, name)
        issued = emulator.issued_tokens()
        assert issued, "the emulator issued no token"
        await setup.reload(instance(url))
        async with connect(setup.composition, principal=ALICE) as client:
            with pytest.raises(MCPError):
                await incidents(client, name)  # the new host grants nothing
    assert seen, "the new host was never asked"
    sent = [auth for _, _, auth in seen]
    assert not any(token in auth for auth in sent for token in issued), "an old instance's token reached the new host"
    assert not any(auth.startswith("Bearer ") for auth in sent), sent


async def test_a_reload_narrowing_auth_issuers_refuses_a_cached_caller_and_sends_nothing(emulator: Emulator) -> None:
    partner = caller("bob", upn="bob@example.test", issuer=PARTNER)
    setup = Reloading(per_user(emulator.base_url))
    async with setup.composition.running():
        async with connect(setup.composition, principal=partner) as client:
            await incidents(client)
        await setup.reload(obo_instance(emulator.base_url, auth={"issuers": [CORP]}))
        requests = len(emulator.table_requests())
        async with connect(setup.composition, principal=partner) as client:
            with pytest.raises(MCPError) as refused:
                await incidents(client)
        assert refused.value.error.code == DENIED
        assert f"it serves callers of {CORP!r} only (auth.issuers)" in refused.value.error.message
        assert len(emulator.table_requests()) == requests
