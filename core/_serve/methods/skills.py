"""Skill methods (``io.modelcontextprotocol/skills``, SEP-2640): ``skills/list``, ``skills/get``
and ``resources/directory/read``, on 2026-07-28 sessions (earlier ones get ``-32601``; they read
the same files with ``resources/read``).

The gate is asked about every skill and every file: a skill is listed only when the caller may
``list`` its ``SKILL.md`` and ``read`` each of its files (an entry is a complete manifest, so a
skill with one hidden file is hidden whole); ``skills/get`` requires ``read`` on each file
(``-32003`` naming only the skill: the audit line names the file refused); a directory lists
only the files the caller may ``read`` and the folders holding at least one, and a directory
with none is answered as no directory at all (``-32602``), as a skill hidden from the list is.
Results carry ``ttlMs``/``cacheScope`` (``public`` only by the reads' rule, ``custody.shareable``)
and ``skills/get`` a receipt over the entry it returns.
"""

import json
from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from mcp_providers._host.assembly import Assembly
from mcp_providers._host.catalog import Catalog, Entry
from mcp_providers._host.skills import Child, Skill
from mcp_providers._serve.steps import wire
from mcp_providers._serve.steps.custody import STATIC_TTL_MS, receipt, shareable
from mcp_providers._serve.steps.exchange import Actor, Exchange
from mcp_providers._serve.steps.gate import Gate
from mcp_providers.errors import Denied, InvalidParams
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.providers import ResourceProvider
from mcp_providers.skills import DIRECTORY_MIME, SKILLS_EXTENSION
from mcp_providers.uris import InvalidUri, canonical

SKILL_METHODS = ("skills/list", "skills/get", "resources/directory/read")


class UriParams(types.RequestParams):
    """``{"uri": ..., "cursor"?: ...}`` (``skills/get``, ``resources/directory/read``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built at the first such request
    uri: str
    cursor: str | None = None


PARAMS: dict[str, type[Any]] = {
    "skills/list": types.PaginatedRequestParams,
    "skills/get": UriParams,
    "resources/directory/read": UriParams,
}


def advertised(catalog: Catalog) -> dict[str, dict[str, Any]]:
    """``capabilities.extensions`` for skills: the extension with ``directoryRead`` when any
    served plugin has a skill, else nothing."""
    return {SKILLS_EXTENSION: {"directoryRead": True}} if catalog.skills else {}


def _modern(exchange: Exchange) -> None:
    version = exchange.version
    if version and version not in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(
            types.METHOD_NOT_FOUND,
            f"Method not found: {exchange.method} is served on 2026-07-28 sessions; this one negotiated {version} "
            "(read the skill files with resources/read)",
        )


def _visible(gate: Gate, skill: Skill) -> bool:
    if not gate.authorizer.active:
        return True
    return gate.allowed("list", skill.uri) and all(gate.allowed("read", u) for f in skill.files for u in f.judged_on)


def _cache(exchange: Exchange, authenticated: bool) -> dict[str, Any]:
    """``ttlMs``/``cacheScope`` by the reads' rule (:func:`shareable`): ``public`` only when no
    caller could be answered differently, or be named by the receipt."""
    public = shareable(exchange.principal, policy=exchange.gate.authorizer.active, authenticated=authenticated)
    return {"ttlMs": STATIC_TTL_MS, "cacheScope": "public" if public else "private"}


class ListSkills:
    """``skills/list``: every skill the caller may see, paged."""

    name = "skills/list"
    actor: Actor = "application"

    def __init__(self, catalog: Catalog, page_size: int, authenticated: bool) -> None:
        self._catalog, self._page_size, self._authenticated = catalog, page_size, authenticated

    def route(self, exchange: Exchange, params: types.PaginatedRequestParams | None) -> str | None:
        exchange.target = "*"
        _modern(exchange)
        return params.cursor if params else None

    def authorize(self, exchange: Exchange, cursor: str | None) -> None:
        """Listing is allowed; each skill is filtered in :meth:`invoke`."""

    async def invoke(self, exchange: Exchange, cursor: str | None) -> Any:
        shown = [e.declaration for e in self._catalog.skills if _visible(exchange.gate, e.declaration)]
        return self._catalog.page("skills", shown, cursor, self._page_size)

    def evidence(self, exchange: Exchange, cursor: str | None, page: Any) -> dict[str, Any]:
        exchange.count = len(page.items)
        out: dict[str, Any] = {"skills": [s.entry() for s in page.items], **_cache(exchange, self._authenticated)}
        if page.next_cursor is not None:
            out["nextCursor"] = page.next_cursor
        return {**out, "resultType": "complete"}


SkillTarget = Entry[Skill, ResourceProvider]


class GetSkill:
    """``skills/get``: one skill's entry, by its ``SKILL.md`` URI."""

    name = "skills/get"
    actor: Actor = "application"

    def __init__(self, assembly: Assembly) -> None:
        self._assembly, self._catalog = assembly, assembly.catalog
        self._authenticated = assembly.config.server.auth is not None

    def route(self, exchange: Exchange, params: UriParams) -> SkillTarget:
        exchange.target = params.uri
        _modern(exchange)
        entry = self._catalog.skill(_canonical(params.uri))
        if entry is None:
            raise InvalidParams(f"No skill is served at {params.uri}", data={"uri": params.uri})
        return entry

    def authorize(self, exchange: Exchange, target: SkillTarget) -> None:
        skill = target.declaration
        exchange.gate.require("list", skill.uri)
        for file in skill.files:
            for uri in file.judged_on:
                try:
                    exchange.gate.require("read", uri)
                except Denied:  # audited with the file's URI; the refusal names only the skill asked for
                    raise Denied(
                        f"permission-denied: {skill.uri} may not be read by {exchange.gate.subject}: "
                        "one of its files is refused",
                        data={"target": skill.uri, "action": "read", "rule": "permission-denied"},
                    ) from None

    async def invoke(self, exchange: Exchange, target: SkillTarget) -> dict[str, Any]:
        return target.declaration.entry()

    def evidence(self, exchange: Exchange, target: SkillTarget, entry: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(entry, separators=(",", ":"), sort_keys=True).encode()
        distribution, version = self._assembly.origins.get(target.plugin, (None, None))
        exchange.receipt = receipt(
            actor="application",
            operation=self.name,
            principal=exchange.principal,
            provider=target.provider.name,
            plugin=target.plugin,
            distribution=distribution,
            version=version,
            data=data,
            mime_type="application/json",
            uri=target.declaration.uri,
            extra=exchange.custody or None,
        )
        return {
            "skill": entry,
            **_cache(exchange, self._authenticated),
            "_meta": {RECEIPT_KEY: exchange.receipt},
            "resultType": "complete",
        }


class ReadDirectory:
    """``resources/directory/read``: the direct children of a skill folder, paged."""

    name = "resources/directory/read"
    actor: Actor = "application"

    def __init__(self, catalog: Catalog, page_size: int, authenticated: bool) -> None:
        self._catalog, self._page_size, self._authenticated = catalog, page_size, authenticated
        self._below: dict[str, tuple[str, ...]] = {}
        self._judged = {f.uri: f.judged_on for e in catalog.skills for f in e.declaration.files}
        for skill in (e.declaration for e in catalog.skills):
            for directory in catalog.directories:
                if directory == skill.root or directory.startswith(skill.root + "/"):
                    files = tuple(f.uri for f in skill.files if f.uri.startswith(directory + "/"))
                    self._below[directory] = (*self._below.get(directory, ()), *files)

    def route(self, exchange: Exchange, params: UriParams) -> tuple[str, str | None]:
        exchange.target = params.uri
        _modern(exchange)
        uri = _canonical(params.uri)
        if uri not in self._catalog.directories:
            raise InvalidParams(f"{params.uri} is not a directory resource", data={"uri": params.uri})
        return uri, params.cursor

    def authorize(self, exchange: Exchange, target: tuple[str, str | None]) -> None:
        """A directory shows what the caller may read in it; one holding nothing readable is none."""
        uri = target[0]
        if not any(self._readable(exchange.gate, f) for f in self._below.get(uri, ())):
            raise InvalidParams(f"{uri} is not a directory resource", data={"uri": uri})

    async def invoke(self, exchange: Exchange, target: tuple[str, str | None]) -> Any:
        uri, cursor = target
        gate = exchange.gate
        shown = [c for c in self._catalog.directories[uri] if self._shown(gate, c)]
        return self._catalog.page("directory:" + uri, shown, cursor, self._page_size)

    def evidence(self, exchange: Exchange, target: tuple[str, str | None], page: Any) -> dict[str, Any]:
        exchange.count = len(page.items)
        # ttlMs/cacheScope as resources/list carries them (clients such as the Inspector expect both)
        out: dict[str, Any] = {
            "resources": [_child_wire(c) for c in page.items],
            **_cache(exchange, self._authenticated),
        }
        if page.next_cursor is not None:
            out["nextCursor"] = page.next_cursor
        return {**out, "resultType": "complete"}

    def _readable(self, gate: Gate, uri: str) -> bool:
        """Whether the caller may read the file at ``uri`` (and the resource it copies)."""
        return not gate.authorizer.active or all(gate.allowed("read", u) for u in self._judged.get(uri, (uri,)))

    def _shown(self, gate: Gate, child: Child) -> bool:
        if child.file is not None:
            return self._readable(gate, child.uri)
        return any(self._readable(gate, f) for f in self._below.get(child.uri, ()))


def _child_wire(child: Child) -> dict[str, Any]:
    if child.file is None:
        return {"uri": child.uri, "name": child.name, "mimeType": DIRECTORY_MIME}
    dumped: dict[str, Any] = wire.resource_wire(child.file).model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def _canonical(uri: str) -> str:
    try:
        return canonical(uri)
    except InvalidUri as exc:
        raise InvalidParams(f"{uri!r} is not a URI: {exc}", data={"uri": uri}) from None


def skill_methods(assembly: Assembly) -> Sequence[Any]:
    """The three methods, when ``assembly`` serves a skill; none otherwise."""
    catalog = assembly.catalog
    if not catalog.skills:
        return []
    size, authenticated = assembly.config.server.page_size, assembly.config.server.auth is not None
    return [ListSkills(catalog, size, authenticated), GetSkill(assembly), ReadDirectory(catalog, size, authenticated)]
