"""Over streamable HTTP, each bearer token's subject sees the catalog filtered for itself (issue 24,
item 3): two callers of one server, one of them denied ``read`` on ``documcp://ssgs/hugo``, read
``documcp://ssgs/available`` in turn and at once, statefully and statelessly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_clients import _http_server

from mcp_providers import RECEIPT_KEY

pytestmark = pytest.mark.anyio

ALICE = "alice-token-7d1e2f3a"
BOB = "bob-token-9c8b7a6d"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "config.toml"
    path.write_text("""
allow = ["ssg_catalog", "policy"]

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


async def _ids(url: str, token: str, times: int = 1) -> list[list[str]]:
    seen: list[list[str]] = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        for _ in range(times):
            result = await client.read_resource("documcp://ssgs/available")
            text = result.contents[0].text  # type: ignore[union-attr]
            assert "hugo" not in json.dumps((result.meta or {})[RECEIPT_KEY]).lower()
            seen.append([s["id"] for s in json.loads(text)["ssgs"]])
    return seen


@pytest.mark.parametrize("extra", [(), ("--stateless", "--json-response")], ids=["sessions", "stateless"])
async def test_each_subject_gets_its_own_view_of_the_catalog(config: Path, extra: tuple[str, ...]) -> None:
    with _http_server(*extra) as url:
        (alice,) = await _ids(url, ALICE)
        (bob,) = await _ids(url, BOB)
        assert "hugo" in alice and "hugo" not in bob and set(alice) - set(bob) == {"hugo"}
        views: dict[str, list[list[str]]] = {}

        async def read(name: str, token: str) -> None:
            views[name] = await _ids(url, token, times=5)

        async with anyio.create_task_group() as tg:  # at once: no shared read may carry one's view to the other
            tg.start_soon(read, "alice", ALICE)
            tg.start_soon(read, "bob", BOB)
        assert views["alice"] == [alice] * 5 and views["bob"] == [bob] * 5
