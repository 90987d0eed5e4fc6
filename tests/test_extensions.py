"""Extensions (SEP-2133, issue 27): a plugin offers an extension capability and its methods, which
are served through the same gate, invoker and audit as every other method, in both eras."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, MCPError
from pydantic import BaseModel, TypeAdapter

from mcp_providers import (
    Decision,
    Extension,
    ExtensionMethod,
    ExtensionProvider,
    ExtensionRequest,
    hookimpl,
)
from mcp_providers._serve.composition import compose
from mcp_providers.config import Config
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

FIND = "io.example/search/find"
SECRET = "io.example/search/secret"


class Query(BaseModel):
    query: str
    limit: int = 3


class Search(ExtensionProvider):
    name = "search"

    def extensions(self) -> Sequence[Extension]:
        return [
            Extension(
                identifier="io.example/search",
                settings={"engines": ["notes"]},
                methods=(
                    ExtensionMethod(name=FIND, description="Finds notes.", params_model=Query),
                    ExtensionMethod(name=SECRET, description="Touches guarded data.", params_model=Query),
                ),
            )
        ]

    async def handle(self, request: ExtensionRequest) -> Mapping[str, Any]:
        if request.method.name == SECRET:
            request.require("read", "guarded://data")
        query = request.params
        assert isinstance(query, Query)
        return {"hits": [f"{query.query}-{i}" for i in range(query.limit)], "asked_by": request.principal.subject}


class plugin:
    @hookimpl
    def register_extension_providers(self) -> list[ExtensionProvider]:
        return [Search()]


class guard:
    @hookimpl
    def authorize(self, action: str, target: str) -> Decision | None:
        return Decision(False, "guarded") if target.startswith("guarded://") else None


async def _call(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = types.Request[dict[str, Any], str](method=method, params=params)
    result: dict[str, Any] = await client.session.send_request(request, TypeAdapter(dict[str, Any]))  # type: ignore[arg-type]
    return result


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_extension_is_advertised_and_its_method_served_through_the_pipeline(mode: str) -> None:
    composition = compose(Config(), load_entrypoints=False, plugins={"search": plugin(), "guard": guard()})
    assert composition.failures == []
    async with Client(composition.server, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert client.server_capabilities.extensions == {"io.example/search": {"engines": ["notes"]}}
        found = await _call(client, FIND, {"query": "hugo", "limit": 2})
        assert found["hits"] == ["hugo-0", "hugo-1"] and found["asked_by"] == "local"
        with pytest.raises(MCPError) as bad:
            await _call(client, FIND, {"limit": "many"})
        assert bad.value.code == types.INVALID_PARAMS and "query" in bad.value.message
        with pytest.raises(MCPError) as denied:  # the provider asked the gate; the policy refused
            await _call(client, SECRET, {"query": "x"})
        assert denied.value.code == -32003
        with pytest.raises(MCPError) as unknown:
            await _call(client, "io.example/search/nothing", {})
        assert unknown.value.code == types.METHOD_NOT_FOUND


async def test_the_gate_is_asked_call_on_the_method_and_a_deny_refuses_it() -> None:
    asked: list[tuple[str, str]] = []

    class deny_find:
        @hookimpl
        def authorize(self, action: str, target: str) -> Decision | None:
            asked.append((action, target))
            return Decision(False, "no searching") if target == FIND else None

    composition = compose(Config(), load_entrypoints=False, plugins={"search": plugin(), "deny": deny_find()})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as denied:
            await _call(client, FIND, {"query": "x"})
        assert denied.value.code == -32003 and ("call", FIND) in asked


async def test_a_bad_extension_is_a_check_error_naming_it_and_the_rest_is_served() -> None:
    class Bad(ExtensionProvider):
        name = "bad"

        def extensions(self) -> Sequence[Extension]:
            return [
                Extension(identifier="no-prefix", methods=()),
                Extension(
                    identifier="io.example/shadow",
                    methods=(ExtensionMethod(name="tools/list", description="Shadows.", params_model=Query),),
                ),
            ]

    class bad:
        @hookimpl
        def register_extension_providers(self) -> list[ExtensionProvider]:
            return [Bad()]

    composition = compose(Config(), load_entrypoints=False, plugins={"search": plugin(), "bad": bad()})
    lines = composition.failures
    assert any("extension-invalid" in line and "'no-prefix'" in line for line in lines), lines
    assert any("extension-invalid" in line and "'tools/list'" in line and "spec defines" in line for line in lines)
    async with connect(composition) as client:
        assert client.server_capabilities.extensions == {"io.example/search": {"engines": ["notes"]}}
        assert (await _call(client, FIND, {"query": "a", "limit": 1}))["hits"] == ["a-0"]
        assert (await client.list_tools()).tools == [] if client.server_capabilities.tools else True


async def test_two_plugins_offering_one_method_collide() -> None:
    composition = compose(Config(), load_entrypoints=False, plugins={"one": plugin(), "two": plugin()})
    assert any("duplicate-extension" in line for line in composition.failures)
    assert any("duplicate-method" in line and FIND in line for line in composition.failures)


async def test_an_extension_added_by_a_reload_is_served_and_audited(tmp_path: Any) -> None:
    import json

    from mcp_providers._serve.reload import Reloader
    from mcp_providers.config import ServerSettings

    plugins = {"search": plugin()}
    server = ServerSettings(audit_log=tmp_path / "audit.jsonl")
    config = [Config(deny=("search",), server=server)]
    composition = compose(config[0], load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: config[0], load_entrypoints=False, plugins=plugins)
    async with connect(composition) as client:
        with pytest.raises(MCPError) as before:
            await _call(client, FIND, {"query": "x"})
        assert before.value.code == types.METHOD_NOT_FOUND
        config[0] = Config(server=server)
        assert (await reloader.reload()).outcome == "applied"
        assert (await _call(client, FIND, {"query": "x", "limit": 1}))["hits"] == ["x-0"]
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    served = [line for line in lines if line["operation"] == FIND]
    assert [line["decision"] for line in served] == ["error", "allowed"]  # -32601 before the reload, then served
    assert served[1]["target"] == FIND and served[1]["subject"] == "local"
