"""Over streamable HTTP, each bearer token's subject sees ``generate_config``'s ``ssg`` values
filtered for itself, and a call naming one it may not read is refused (testers 26 and 27): two
callers of one server, one denied ``read`` on ``documcp://ssgs/hugo``, statefully and statelessly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from test_clients import _http_server

pytestmark = pytest.mark.anyio

ALICE = "alice-token-3b5d7f9a"
BOB = "bob-token-2c4e6a8b"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "config.toml"
    path.write_text("""
allow = ["ssg_catalog", "workflows", "policy"]

[server.auth]
tokens = [{subject = "alice", token_env = "TEST_ALICE_TOKEN"}, {subject = "bob", token_env = "TEST_BOB_TOKEN"}]

[[plugins.policy.rules]]
effect = "deny"
subjects = ["bob"]
actions = ["read"]
targets = ["documcp://ssgs/hugo"]
""")
    monkeypatch.setenv("MCP_PROVIDERS_CONFIG", str(path))
    monkeypatch.setenv("TEST_ALICE_TOKEN", ALICE)
    monkeypatch.setenv("TEST_BOB_TOKEN", BOB)
    yield path


async def _ssgs(url: str, token: str) -> tuple[list[str], bool]:
    """The ``ssg`` values ``generate_config`` offers the caller, and whether calling it with hugo is refused."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        values = list(tools["generate_config"].input_schema["properties"]["ssg"]["enum"])
        try:
            await client.call_tool("generate_config", {"ssg": "hugo", "site_name": "Docs"})
        except MCPError as exc:
            assert exc.code == -32003
            return values, True
        return values, False


@pytest.mark.parametrize("extra", [(), ("--stateless", "--json-response")], ids=["sessions", "stateless"])
async def test_each_subject_is_offered_and_may_call_only_what_it_may_read(config: Path, extra: tuple[str, ...]) -> None:
    with _http_server(*extra) as url:
        alice, alice_refused = await _ssgs(url, ALICE)
        bob, bob_refused = await _ssgs(url, BOB)
        again, _ = await _ssgs(url, ALICE)  # bob's view is never kept for the next caller
    assert "hugo" in alice and set(alice) - set(bob) == {"hugo"} and again == alice
    assert not alice_refused and bob_refused
