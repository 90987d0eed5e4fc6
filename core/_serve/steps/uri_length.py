"""One bound on the length of every URI a request names: ``[server] max_uri_length`` (default 2048).

Routing a URI puts it in canonical form (:func:`mcp_providers.uris.canonical`), and the gate asks
about it: work per character, about 2.5 us each for percent-escapes and characters outside ASCII.
A 4 MB URI in one ``resources/read`` held the event loop ~11 s while every other session waited
(tester 27 F8). So the pipeline asks :func:`refusal` about every request before its method routes
anything, and a URI over the bound is -32602 naming it and the setting, whatever the method:
``resources/read``, ``resources/subscribe`` and ``unsubscribe``, ``subscriptions/listen``,
``completion/complete`` on a template, ``skills/get``, ``resources/directory/read``.

The same rule (:func:`too_long`) bounds the URIs provider code names: those it asks the policy
about (``steps.asking``) and the links and embeds of a tool or prompt result (``steps.evidence``),
which are dropped, saying why, before they are routed (round 18).
"""

from __future__ import annotations

from typing import Any

from mcp_providers.errors import InvalidParams


def _field(params: Any, *names: str) -> Any:
    """``params``' member under the first of ``names`` it has (a model's attribute or a dict's key)."""
    for name in names:
        value = params.get(name) if isinstance(params, dict) else getattr(params, name, None)
        if value is not None:
            return value
    return None


def named_uris(params: Any) -> list[str]:
    """The URIs a request's params name: ``uri``, a completion's ``ref.uri`` and a listen
    stream's ``notifications.resourceSubscriptions``; strings only (the method refuses the rest)."""
    if params is None:
        return []
    found = [_field(params, "uri"), _field(_field(params, "ref"), "uri")]
    notifications = _field(params, "notifications")
    if notifications is not None:
        listed = _field(notifications, "resource_subscriptions", "resourceSubscriptions")
        found += listed if isinstance(listed, list | tuple) else []
    return [uri for uri in found if isinstance(uri, str)]


def too_long(length: int, limit: int) -> str | None:
    """Why a URI of ``length`` characters is not routed, when it is longer than ``limit``
    (``max_uri_length``), else ``None``."""
    if length <= limit:
        return None
    return f"a URI of {length} characters is longer than this server takes: max_uri_length ({limit})"


def refusal(params: Any, limit: int) -> InvalidParams | None:
    """The -32602 refusing a request whose ``params`` name a URI longer than ``limit`` characters,
    else ``None``. Costs a few attribute reads: no URI is scanned."""
    longest = max(map(len, named_uris(params)), default=0)
    if (why := too_long(longest, limit)) is None:
        return None
    return InvalidParams(f"{why} in [server]", data={"length": longest, "max_uri_length": limit})
