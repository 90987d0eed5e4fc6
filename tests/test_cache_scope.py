"""Cache hints never let a shared cache serve one caller's answer to another (round 4 item 2).

A result is marked ``cacheScope: "public"`` (shareable across authorization contexts, SEP-2549)
only when it cannot differ between callers: a static resource, no ``authorize`` hook in force,
and a caller nobody vouched for (anonymous HTTP, or the one local account of stdio). With
``[server.auth]``, an authenticated caller or any policy, every result is ``private``: the
receipt names the caller, and a policy may deny another caller what this one was served. The
lists (resources, templates, tools, prompts) are always ``private``: the gate filters them.

The first test drives the Python SDK v2's own response cache as a multi-user host would
(one store, a partition per user, ``share_public=True``).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client import CacheConfig, InMemoryResponseCacheStore
from pydantic import TypeAdapter

from mcp_providers import Decision, hookimpl
from mcp_providers._serve.steps.custody import LIST_CACHE_HINT, cache_hint, cache_hint_parts, shareable
from mcp_providers.config import ServerSettings
from mcp_providers.identity import LOCAL, Principal, serving_as
from mcp_providers.models import Freshness
from mcp_providers.plugins import policy
from mcp_providers.plugins.documcp import config_templates, prompts, ssg_catalog, workflows
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

DOCUMCP = {
    "ssg_catalog": ssg_catalog,
    "config_templates": config_templates,
    "workflows": workflows,
    "documcp_prompts": prompts,
}
ALICE = Principal("alice", issuer="https://idp.example.test/", client_id="host")
BOB = Principal("bob", issuer="https://idp.example.test/", client_id="host")
ANONYMOUS = Principal("anonymous")
STATIC_URI = "documcp://ssgs/hugo"  # static, served by a template


def _deny_bob(*targets: str) -> dict[str, Any]:
    rule = {"effect": "deny", "actions": ["read"], "targets": list(targets), "subjects": ["bob"]}
    return {"policy": {"rules": [rule]}}


class _GroupsOnly:
    """A third-party policy plugin (not the built-in one): allows everything, so only its presence counts."""

    @hookimpl
    def authorize(self, subject: str, action: str, target: str) -> Decision | None:
        return None


async def _read_as(composition: Any, principal: Principal, uri: str) -> Any:
    async with connect(composition, principal=principal) as client:
        return await client.read_resource(uri)


# -- the SDK's shared response cache ---------------------------------------------------------------


@pytest.mark.parametrize("uri", [STATIC_URI, "documcp://templates/hugo-config"])
async def test_a_shared_sdk_cache_never_serves_bob_what_the_policy_denies_him(uri: str) -> None:
    composition = compose({**DOCUMCP, "policy": policy}, _deny_bob(uri))
    store = InMemoryResponseCacheStore()

    def cache(user: str) -> CacheConfig:
        return CacheConfig(store=store, partition=f"user:{user}", share_public=True, target_id="server-under-test")

    with serving_as(ALICE):
        async with Client(composition.server, cache=cache("alice")) as alice:
            served = await alice.read_resource(uri)
    assert served.contents  # alice may read it (and her answer went into the shared store)
    with serving_as(BOB):
        async with Client(composition.server, cache=cache("bob")) as bob:
            with pytest.raises(MCPError) as refused:
                await bob.read_resource(uri)
    assert refused.value.error.code == -32003  # asked the server, which refused


async def test_a_shared_sdk_cache_still_shares_what_no_caller_can_see_differently() -> None:
    """The rule is not "always private": with no policy and no identity, a static read is shared."""
    composition = compose(DOCUMCP)
    store = InMemoryResponseCacheStore()
    config = dict(store=store, share_public=True, target_id="server-under-test")
    with serving_as(ANONYMOUS):
        async with Client(composition.server, cache=CacheConfig(partition="one", **config)) as one:  # type: ignore[arg-type]
            first = await one.read_resource(STATIC_URI)
        async with Client(composition.server, cache=CacheConfig(partition="two", **config)) as two:  # type: ignore[arg-type]
            second = await two.read_resource(STATIC_URI)
    assert first.cache_scope == "public"
    assert second.contents == first.contents


# -- reads: every way a read becomes per-caller ---------------------------------------------------


@pytest.mark.parametrize(
    ("plugins", "settings", "principal"),
    [
        pytest.param({**DOCUMCP, "policy": policy}, _deny_bob(STATIC_URI), ALICE, id="policy-with-rules"),
        pytest.param({**DOCUMCP, "policy": policy}, None, ANONYMOUS, id="policy-without-rules"),
        pytest.param({**DOCUMCP, "gate": _GroupsOnly()}, None, ANONYMOUS, id="third-party-authorize-hook"),
        pytest.param(DOCUMCP, None, ALICE, id="authenticated-caller-no-policy"),
        pytest.param(DOCUMCP, None, Principal("svc", issuer="static"), id="static-token-caller"),
        # named by an embedder (serving_as) with no issuer, or as another account of issuer "local":
        # their receipts name them, so they are no unknown caller (tester ten)
        pytest.param(DOCUMCP, None, Principal("alice"), id="named-without-issuer"),
        pytest.param(DOCUMCP, None, Principal("anonymous", client_id="an-app"), id="anonymous-with-a-client"),
        pytest.param(DOCUMCP, None, Principal("carol", issuer="local"), id="another-local-account"),
    ],
)
async def test_a_static_read_is_private_when_callers_are_known_or_a_policy_is_in_force(
    plugins: dict[str, Any], settings: dict[str, Any] | None, principal: Principal
) -> None:
    result = await _read_as(compose(plugins, settings), principal, STATIC_URI)
    assert (result.ttl_ms, result.cache_scope) == (cache_hint_parts(Freshness(kind="static"))[0], "private")


@pytest.mark.parametrize("principal", [ANONYMOUS, LOCAL], ids=["anonymous-http", "stdio-local"])
async def test_a_static_read_is_public_for_an_unknown_caller_without_a_policy(principal: Principal) -> None:
    result = await _read_as(compose(DOCUMCP), principal, STATIC_URI)
    assert result.cache_scope == "public"


def test_the_rule_in_one_place() -> None:
    static = Freshness(kind="static")
    assert cache_hint(static, shareable=True).scope == "public"
    assert cache_hint(static, shareable=False).scope == "private"
    assert cache_hint(Freshness(kind="max_age", max_age_seconds=5), shareable=True).scope == "private"
    assert cache_hint(Freshness(kind="live"), shareable=True) == LIST_CACHE_HINT
    assert (LIST_CACHE_HINT.ttl_ms, LIST_CACHE_HINT.scope) == (0, "private")
    assert shareable(ANONYMOUS, policy=False, authenticated=False)
    assert not shareable(ANONYMOUS, policy=False, authenticated=True)  # [server.auth] on: never shared
    assert not shareable(LOCAL, policy=True, authenticated=False)
    assert not shareable(ALICE, policy=False, authenticated=False)


# -- lists ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("principal", [ANONYMOUS, ALICE])
async def test_every_list_is_private_and_stale_at_once(principal: Principal) -> None:
    composition = compose({**DOCUMCP, "policy": policy}, _deny_bob(STATIC_URI))
    async with connect(composition, principal=principal) as client:
        results = [
            await client.list_resources(),
            await client.list_resource_templates(),
            await client.list_prompts(),
        ]
    for result in results:
        assert (result.ttl_ms, result.cache_scope) == (0, "private")


# -- skills (SEP-2640): the same rule as reads -----------------------------------------------------

SKILL_URI = "skill://notes/daily-review/SKILL.md"
SKILL_METHODS = [
    ("skills/get", {"uri": SKILL_URI}),
    ("skills/list", {}),
    ("resources/directory/read", {"uri": "skill://notes/daily-review"}),
]


async def _skill_results(principal: Principal, server: ServerSettings | None = None) -> dict[str, dict[str, Any]]:
    from skills_fixture import notes

    composition = compose({"notes": notes}, server=server)
    out: dict[str, dict[str, Any]] = {}
    async with connect(composition, principal=principal) as client:
        for method, params in SKILL_METHODS:
            request = types.Request[dict[str, Any], str](method=method, params=params)
            out[method] = await client.session.send_request(request, TypeAdapter(dict[str, Any]))  # type: ignore[arg-type]
    return out


AUTH_ON = ServerSettings(
    auth={
        "mode": "jwt",
        "issuer": "https://idp.example.test/",
        "audience": "mcp",
        "jwks_url": "https://idp.example.test/jwks",
    }
)


@pytest.mark.parametrize(
    ("principal", "server"),
    [
        pytest.param(ALICE, None, id="authenticated-caller-no-policy"),
        pytest.param(ANONYMOUS, AUTH_ON, id="server-auth-on"),
        pytest.param(Principal("alice", client_id="alice-app"), None, id="named-without-issuer"),
        pytest.param(Principal("carol", issuer="local"), None, id="another-local-account"),
    ],
)
async def test_a_skill_result_is_private_when_the_caller_is_known_or_auth_is_on(
    principal: Principal, server: ServerSettings | None
) -> None:
    """``skills/get`` carries a receipt naming its caller, as a read does: never ``public`` then
    (a tester saw Alice's receipt marked public with ``[server.auth]`` on and no policy)."""
    results = await _skill_results(principal, server)
    assert results["skills/get"]["_meta"]  # the receipt, naming whoever asked
    assert {method: result["cacheScope"] for method, result in results.items()} == dict.fromkeys(results, "private")


@pytest.mark.parametrize("principal", [ANONYMOUS, LOCAL], ids=["anonymous-http", "stdio-local"])
async def test_a_skill_result_is_public_for_an_unknown_caller_without_a_policy(principal: Principal) -> None:
    results = await _skill_results(principal)
    assert {method: result["cacheScope"] for method, result in results.items()} == dict.fromkeys(results, "public")
