"""Principals from real tokens in policy, receipts, audit lines and shared reads.

A group rule decides between two users of one identity provider on the same URI; two identity
providers issuing the same ``sub`` are two subjects everywhere the server keys on a caller.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from identity_support import IdentityProvider, Login, authorization_code_token, jwt_server_config, mcp_server
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ReadResourceResult

from mcp_providers import RECEIPT_KEY

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CATALOG = "documcp://ssgs/available"

GROUP_POLICY = """
[plugins.policy]
[[plugins.policy.rules]]
effect = "allow"
groups = ["itil"]
actions = ["read"]
targets = ["documcp://ssgs/*"]

[[plugins.policy.rules]]
effect = "deny"
actions = ["read"]
targets = ["documcp://ssgs/*"]
reason = "only the itil group may read the catalog"
"""


def reads(audit: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    return [line for line in lines if line["operation"] == "resources/read"]


async def read_as(http: httpx2.AsyncClient, url: str, uri: str) -> ReadResourceResult:
    async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
        return await client.read_resource(uri)


async def refusal_as(http: httpx2.AsyncClient, url: str, uri: str) -> MCPError:
    """The error reading ``uri`` answers (caught inside the session, so it is not wrapped in a group)."""
    async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
    return refused.value


async def test_a_group_rule_allows_alice_and_denies_bob_on_the_same_uri(
    idp: IdentityProvider,
    tmp_path: Path,
) -> None:
    with mcp_server(tmp_path, jwt_server_config([idp.issuer], GROUP_POLICY)) as server:
        alice, bob = Login("alice"), Login("bob")
        async with httpx2.AsyncClient(auth=alice.provider(server.url)) as http:
            allowed = await read_as(http, server.url, CATALOG)
        async with httpx2.AsyncClient(auth=bob.provider(server.url)) as http:
            denied = await refusal_as(http, server.url, CATALOG)
    assert allowed.meta is not None and allowed.meta[RECEIPT_KEY]["subject"] == "alice"
    assert denied.code == -32003 and "only the itil group may read the catalog" in denied.message
    lines = reads(server.audit)
    assert [(line["issuer"], line["subject"], line["decision"]) for line in lines] == [
        (idp.issuer, "alice", "allowed"),
        (idp.issuer, "bob", "denied"),
    ]
    audit_text = server.audit.read_text()
    for login in (alice, bob):
        assert login.storage.tokens is not None and login.storage.tokens.access_token not in audit_text


ISSUER_POLICY = """
[plugins.policy]
[[plugins.policy.rules]]
effect = "allow"
issuers = ["{first}"]
actions = ["read"]
targets = ["documcp://ssgs/*"]

[[plugins.policy.rules]]
effect = "deny"
actions = ["read"]
targets = ["documcp://ssgs/*"]
reason = "the catalog is for the first identity provider's users"
"""


async def test_the_same_sub_from_two_issuers_is_two_subjects_in_policy_receipts_and_audit(
    start_identity_provider: Callable[[str], IdentityProvider],
    tmp_path: Path,
) -> None:
    first, second = start_identity_provider("a"), start_identity_provider("b")
    config = jwt_server_config([first.issuer, second.issuer], ISSUER_POLICY.replace("{first}", first.issuer))
    with mcp_server(tmp_path, config) as server:
        ours = await authorization_code_token(first, server.url, "alice")
        theirs = await authorization_code_token(second, server.url, "alice")
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {ours}"}) as http:
            allowed = await read_as(http, server.url, CATALOG)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {theirs}"}) as http:
            denied = await refusal_as(http, server.url, CATALOG)
    assert allowed.meta is not None
    assert (allowed.meta[RECEIPT_KEY]["issuer"], allowed.meta[RECEIPT_KEY]["subject"]) == (first.issuer, "alice")
    assert denied.code == -32003 and "first identity provider" in denied.message
    assert [(line["issuer"], line["subject"], line["decision"]) for line in reads(server.audit)] == [
        (first.issuer, "alice", "allowed"),
        (second.issuer, "alice", "denied"),
    ]


async def test_the_same_sub_from_two_issuers_never_shares_a_read(
    start_identity_provider: Callable[[str], IdentityProvider],
    tmp_path: Path,
    whoami_env: dict[str, str],
) -> None:
    # whoami://me answers after 0.5 s with the principal it was read for; two identical reads in
    # flight at once are coalesced only when they are for the same (issuer, subject).
    first, second = start_identity_provider("a"), start_identity_provider("b")
    config = jwt_server_config([first.issuer, second.issuer], allow=["whoami"])
    with mcp_server(tmp_path, config, env=whoami_env) as server:
        tokens = [await authorization_code_token(idp, server.url, "alice") for idp in (first, second)]
        results: dict[int, ReadResourceResult] = {}

        async def read(number: int) -> None:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens[number]}"}) as http:
                results[number] = await read_as(http, server.url, "whoami://me")

        async with anyio.create_task_group() as group:
            for number in (0, 1):
                group.start_soon(read, number)
    texts = [results[n].contents[0].text for n in (0, 1)]  # type: ignore[union-attr]
    assert texts == [f"{first.issuer} alice", f"{second.issuer} alice"]
    receipts = [results[n].meta[RECEIPT_KEY] for n in (0, 1)]  # type: ignore[index]
    assert [(r["issuer"], r["subject"]) for r in receipts] == [(first.issuer, "alice"), (second.issuer, "alice")]
    assert receipts[0]["sha256"] != receipts[1]["sha256"]
