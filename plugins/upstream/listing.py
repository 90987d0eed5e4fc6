"""Listing an upstream: every page of every kind its capabilities offer, at composition (in a
worker thread with an event loop of its own, :func:`list_at_start`) and again while serving when it
says its lists changed (:func:`list_all`, compared through :func:`served_view`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp import Client, MCPError

from mcp_providers.plugins._library_logs import library_logs_masked
from mcp_providers.plugins.upstream.connect import client, held_secrets, reason, who
from mcp_providers.plugins.upstream.oauth import BrokeredAuth, ClientCredentials
from mcp_providers.plugins.upstream.settings import OAuthAuth, ServerSettings
from mcp_providers.plugins.upstream.sieve import LEFT_OUT_KEY
from mcp_providers.plugins.upstream.tasks import offered

__all__ = ["MAX_PAGES", "SERVED_KEYS", "Listed", "list_all", "list_at_start", "served_view"]

log = logging.getLogger(__name__)
Listed = dict[str, Any]
"""``{"info": Implementation | None, "protocol": str, "subscribe": bool, "tasks": "extension" |
"core" | None, "resources": [...], "templates": [...], "tools": [...], "prompts": [...], "cut":
[(list, why), ...], "dropped": [(value, message), ...]}`` of ``mcp_types`` records; ``tasks`` is how
the upstream offers tasks (:func:`~mcp_providers.plugins.upstream.tasks.offered`); ``cut`` names each
list that was cut short, ``dropped`` each item that did not parse on its own
(:mod:`~mcp_providers.plugins.upstream.sieve`)."""


MAX_PAGES = 1000
"""Most pages read of one list; an upstream whose cursors never end is cut there, and told."""


async def _pages(
    fetch: Callable[[str | None], Awaitable[Any]],
    field: str,
    cut: list[tuple[str, str]],
    what: str,
    dropped: list[tuple[str, str]] | None = None,
) -> list[Any]:
    """Every page of one list, following ``nextCursor``. Stops, noting ``(what, why)`` in ``cut``,
    after :data:`MAX_PAGES` pages, at a cursor it was given before (it would loop forever), or after
    a page whose ``nextCursor`` the sieve removed. What the sieve took out of a page goes to
    ``dropped`` as ``(value, message)`` (:func:`_noted`).

    :raises MCPError: a page was answered with an error, or was not a page; its message starts
        with ``what`` and the page's number.
    """
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for number in range(1, MAX_PAGES + 1):
        try:
            page = await fetch(cursor)
        except MCPError as exc:
            raise MCPError(exc.code, f"{what} page {number}: {exc.message}", exc.data) from None
        items += getattr(page, field)
        _noted(page, what, number, cut, dropped if dropped is not None else [])
        cursor = page.next_cursor
        if not cursor:
            return items
        if cursor in seen:
            cut.append((what, f"the upstream sent a cursor it had sent before, after {len(seen) + 1} pages"))
            return items
        seen.add(cursor)
    cut.append((what, f"its pages did not end within {MAX_PAGES}"))
    return items


def _noted(page: Any, what: str, number: int, cut: list[tuple[str, str]], dropped: list[tuple[str, str]]) -> None:
    """What the sieve took out of page ``number`` of ``what`` (its ``_meta[LEFT_OUT_KEY]``): an item
    as ``(its name, or "tools/list tools[3]"; the message)`` in ``dropped``, a ``nextCursor`` that
    was no string in ``cut``."""
    meta = getattr(page, "meta", None)
    notes = meta.get(LEFT_OUT_KEY) if isinstance(meta, dict) else None
    for note in notes if isinstance(notes, list) else ():
        field, why, name = note.get("field"), note.get("why"), note.get("name")
        if field == "nextCursor":
            cut.append((what, f"page {number}'s nextCursor {why}"))
        elif "index" in note:
            where = f"{field}[{note['index']}]"
            said = f"{where} {name!r}" if name else where
            dropped.append((name or f"{what} {where}", f"{what} page {number}, {said} {why}; the rest is served"))
        else:
            dropped.append((what, f"{what} page {number}: {field} {why}"))


async def list_all(c: Client) -> Listed:
    """Every component ``c``'s server lists, as its capabilities offer them; ``"cut"`` holds
    ``(list, why)`` for each list that was cut short, ``"dropped"`` ``(value, message)`` for each
    item the sieve took out (see :func:`_pages`).

    :raises MCPError: a page was answered with an error or was not a page (named in the message).
    """
    caps = c.server_capabilities
    cut: list[tuple[str, str]] = []
    dropped: list[tuple[str, str]] = []
    out: Listed = {
        "info": c.server_info, "protocol": c.protocol_version, "subscribe": False, "cut": cut, "dropped": dropped
    }  # fmt: skip
    out["tasks"] = offered(c)
    if caps.resources is not None:
        out["subscribe"] = bool(caps.resources.subscribe)
        out["resources"] = await _pages(
            lambda cur: c.list_resources(cursor=cur), "resources", cut, "resources/list", dropped
        )
        out["templates"] = await _pages(
            lambda cur: c.list_resource_templates(cursor=cur),
            "resource_templates",
            cut,
            "resources/templates/list",
            dropped,
        )
    if caps.tools is not None:
        out["tools"] = await _pages(lambda cur: c.list_tools(cursor=cur), "tools", cut, "tools/list", dropped)
    if caps.prompts is not None:
        out["prompts"] = await _pages(lambda cur: c.list_prompts(cursor=cur), "prompts", cut, "prompts/list", dropped)
    return out


async def _list_one(server: ServerSettings) -> Listed:
    auth = None
    if isinstance(server.auth, OAuthAuth):  # listed as this server's client (the pooled identity)
        service = ClientCredentials(server)
        auth = BrokeredAuth(await service.obtain(service.principal))
    secrets = held_secrets(server)
    with anyio.fail_after(server.read_timeout), library_logs_masked(secrets.masked):
        async with client(server, auth=auth, secrets=secrets) as c:
            listed = await list_all(c)
    for what, why in listed["cut"]:
        log.warning("%s: %s was cut short: %s; the rest is not served", who(server), what, why)
    for _value, message in listed["dropped"]:
        log.warning("%s: %s", who(server), message)
    return listed


def list_at_start(servers: Sequence[ServerSettings]) -> dict[str, Listed | str]:
    """Connect to every server at once, list it and close; per name, the listing or why it failed
    (a failure never raises: that server alone serves nothing). Runs in a worker thread with an
    event loop of its own, so it works whether or not the caller's thread runs a loop."""
    found: dict[str, Listed | str] = {}
    if not servers:  # none configured (the embedded default): no thread, no event loop
        return found

    async def one(server: ServerSettings) -> None:
        try:
            found[server.name] = await _list_one(server)
        except TimeoutError:
            found[server.name] = f"{who(server)} did not list its components within {server.read_timeout} s"
        except Exception as exc:
            found[server.name] = f"{who(server)} could not be listed: {reason(exc, held_secrets(server).masked)}"

    async def every() -> None:
        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(one, server)

    worker = threading.Thread(target=anyio.run, args=(every,), name="mcp-providers-upstream-list")
    worker.start()
    worker.join()
    return found


SERVED_KEYS = ("subscribe", "tasks", "resources", "templates", "tools", "prompts")
"""What of a :data:`Listed` decides what is served (``info`` and ``protocol`` do not)."""


def served_view(listed: Listed | None) -> dict[str, Any] | None:
    """What of ``listed`` decides what is served, comparable with ``==`` (each list as a sorted
    list of its items' JSON, so order alone is no change); ``None`` for no listing at all."""
    if listed is None:
        return None
    view: dict[str, Any] = {"subscribe": bool(listed.get("subscribe")), "tasks": listed.get("tasks")}
    for key in SERVED_KEYS[2:]:
        view[key] = sorted(_as_json(item) for item in listed.get(key, ()))
    return view


def _as_json(item: Any) -> str:
    """``item`` as JSON; one that cannot be (a schema nested too deep: left out when declared) by
    its kind and name alone, so comparing never raises."""
    try:
        return str(item.model_dump_json(by_alias=True, exclude_none=True))
    except Exception:
        name = getattr(item, "uri", None) or getattr(item, "uri_template", None) or getattr(item, "name", "")
        return f"unserializable {type(item).__name__} {name}"
