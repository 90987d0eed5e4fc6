"""Update events between replicas and within one: the JSON text an event is carried as on the cluster
channel (:func:`encode`, :func:`decode`), and the in-process bus whose listeners fail one at a time
(:class:`LocalBus`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

log = logging.getLogger("mcp_providers.cluster")


_SIMPLE: dict[str, Any] = {
    "tools_list_changed": ToolsListChanged,
    "prompts_list_changed": PromptsListChanged,
    "resources_list_changed": ResourcesListChanged,
}


def encode(event: ServerEvent) -> str:
    """One event as the JSON text carried on the channel."""
    if isinstance(event, ResourceUpdated):
        return json.dumps({"kind": "resource_updated", "uri": event.uri})
    kind = next(k for k, cls in _SIMPLE.items() if isinstance(event, cls))
    return json.dumps({"kind": kind})


def reload_from(text: str | bytes) -> str | None:
    """The replica that announced a reload in ``text`` (``{"kind": "reload", "from": ...}``), else ``None``."""
    if b'"reload"' not in (text if isinstance(text, bytes) else text.encode()):
        return None  # the common case, an update: not parsed twice
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return str(data.get("from", "")) if isinstance(data, dict) and data.get("kind") == "reload" else None


def decode(text: str | bytes) -> ServerEvent | None:
    """The event in ``text``, or ``None`` for anything not understood (logged).

    Not understood: not UTF-8 or not JSON (``ValueError``), not an object (``TypeError``), an
    unknown ``kind`` or no ``uri`` (``KeyError``).
    """
    try:
        data = json.loads(text)
        if data["kind"] == "resource_updated" and isinstance(data["uri"], str):
            return ResourceUpdated(uri=data["uri"])
        return _SIMPLE[data["kind"]]()  # type: ignore[no-any-return]
    except (ValueError, KeyError, TypeError):
        log.warning("ignored a malformed event on the cluster channel: %.200r", text)
        return None


def _name(listener: Callable[..., Any]) -> str:
    owner = getattr(listener, "__self__", None)
    qualname = getattr(listener, "__qualname__", None) or type(listener).__qualname__
    module = getattr(listener, "__module__", None) or type(owner).__module__
    return f"{module}.{qualname}"


class LocalBus(InMemorySubscriptionBus):
    """The SDK's in-process bus, whose listeners fail one at a time and by name.

    A listener that raises is logged with its traceback and its name (``module.qualname``); the
    other listeners still get the event and the publisher never sees the error.
    """

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        name = _name(listener)

        def guarded(event: ServerEvent) -> None:
            try:
                listener(event)
            except Exception:  # one listener's bug: logged, the others still served
                log.exception("listener %s failed on %r; the other listeners still get it", name, event)

        return super().subscribe(guarded)
