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

_NAMES = ("uri", "ref", "notifications", "resource_subscriptions", "resourceSubscriptions")
"""Every member name :func:`named_uris` reads."""
_ONLY_URI = frozenset({"uri"})
_members_of: dict[type, frozenset[str] | None] = {}
"""Per params class, what :func:`_members` found (at most :data:`_MEMBERS_KEPT` classes: the SDK's
params models are a bounded set, and a class past the bound is worked out again each time)."""
_MEMBERS_KEPT = 256
_UNSEEN = frozenset({""})


def _members(cls: type) -> frozenset[str] | None:
    """Which of :data:`_NAMES` an instance of ``cls`` can have, when ``cls`` is a pydantic model that
    keeps no extra members (its fields, or a class attribute such as a property); ``None`` for any
    other class, whose instances are read by ``getattr``. A ``getattr`` of a name a model lacks goes
    through two exceptions in pydantic's ``__getattr__`` (some 22,000 instructions, callgrind), and
    a ``resources/read``'s params lack two of the names asked for."""
    members = _members_of.get(cls, _UNSEEN)
    if members is not _UNSEEN:
        return members
    fields = getattr(cls, "__pydantic_fields__", None)
    config = getattr(cls, "model_config", None)
    if not isinstance(fields, dict) or not isinstance(config, dict) or config.get("extra") == "allow":
        members = None
    else:
        members = frozenset(name for name in _NAMES if name in fields or hasattr(cls, name))
    if len(_members_of) < _MEMBERS_KEPT:
        _members_of[cls] = members
    return members


def _field(params: Any, *names: str) -> Any:
    """``params``' member under the first of ``names`` it has (a model's attribute or a dict's key)."""
    if params is None:
        return None
    members = None if isinstance(params, dict) else _members(type(params))
    for name in names:
        if members is not None and name not in members:
            continue  # a model without it: getattr would answer None, through two exceptions
        value = params.get(name) if isinstance(params, dict) else getattr(params, name, None)
        if value is not None:
            return value
    return None


def named_uris(params: Any) -> list[str]:
    """The URIs a request's params name: ``uri``, a completion's ``ref.uri`` and a listen
    stream's ``notifications.resourceSubscriptions``; strings only (the method refuses the rest)."""
    if params is None:
        return []
    if not isinstance(params, dict) and (members := _members(type(params))) is not None and members <= _ONLY_URI:
        uri = params.uri if members else None  # a model naming its own URI at most (resources/read)
        return [uri] if isinstance(uri, str) else []
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
    longest = 0
    for uri in named_uris(params):  # not max(..., default=0): its keyword parsing costs more than the loop
        if len(uri) > longest:
            longest = len(uri)
    if (why := too_long(longest, limit)) is None:
        return None
    return InvalidParams(f"{why} in [server]", data={"length": longest, "max_uri_length": limit})
