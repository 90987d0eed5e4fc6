"""Asking about a URI wherever it comes from: exactly the questions a read of that URI is asked.

A read of a URI this composition serves asks ``expand`` on its template (if it has one), then the
action on the URI in canonical form and as sent (:meth:`Gate.require_route
<mcp_providers._serve.steps.gate.Gate.require_route>`). A URI that reaches the gate another way
must be asked the same, or a rule on a template is undercut by a side door: a prompt argument
naming a resource, a completion value, a member of a listing, a tool's ``ToolCall.require``.
So each of them routes the URI first; one this composition does not serve is asked about as
given (there is no template to ask about).

While provider code runs (:func:`provider_asks`), :func:`mcp_providers.policy.require` and
:func:`mcp_providers.policy.allowed` go through a :class:`RoutingAsker`, so a provider filtering
a listing with ``policy.allowed("read", uri)`` leaves out a member whose template is denied.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mcp_providers._holders import Frozen
from mcp_providers._host.catalog import Catalog, Route
from mcp_providers._serve.steps.gate import Gate
from mcp_providers._serve.steps.uri_length import too_long
from mcp_providers.identity import Principal
from mcp_providers.policy import Action, current_gate

_URI_ACTIONS: frozenset[Action] = frozenset({"read", "subscribe", "call"})
"""Actions whose target may be a served URI (the others name templates, tools or prompts)."""


def served(catalog: Catalog, uri: str) -> Route | None:
    """The route of ``uri`` if this composition serves it, else ``None`` (never raises)."""
    return catalog.find(uri)


def require_uri(gate: Gate, catalog: Catalog, action: Action, uri: str, *, asked_by: str | None = None) -> None:
    """Refuse unless the caller may perform ``action`` on ``uri``, asked as a read of it is.

    :raises mcp_providers.errors.Denied: any of the questions is refused, or ``uri`` is longer than
        ``max_uri_length`` (denied before it is routed: routing reads every character).
    """
    if gate.authorizer.active and (why := too_long(len(uri), gate.max_uri_length)) is not None:
        gate.deny(action, uri, why, asked_by=asked_by)
    route = served(catalog, uri) if gate.authorizer.active else None
    if route is None:
        gate.require(action, uri, asked_by=asked_by)
    else:
        gate.require_route(action, route, uri, asked_by=asked_by)


def uri_allowed(gate: Gate, catalog: Catalog, action: Action, uri: str) -> bool:
    """What :func:`require_uri` would allow, as a yes or no (nothing is recorded)."""
    if not gate.authorizer.active:
        return True
    # not routed past the bound (routing reads every character): routed_allowed refuses it
    too = too_long(len(uri), gate.max_uri_length) is not None
    return routed_allowed(gate, action, uri, None if too else served(catalog, uri))


def routed_allowed(gate: Gate, action: Action, uri: str, route: Route | None) -> bool:
    """What :func:`uri_allowed` answers for ``uri`` routed beforehand (``route``: what
    :func:`served` gave for it, the same for every caller of one catalog)."""
    if not gate.authorizer.active:
        return True
    if too_long(len(uri), gate.max_uri_length) is not None:
        return False
    return gate.allowed(action, uri) if route is None else gate.allows_route(action, route, uri)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class RoutingAsker(Frozen):
    """The :class:`~mcp_providers.policy.Asker` provider code talks to: the request's gate, with
    URIs of read, subscribe and call asked as :func:`require_uri` asks them."""

    __slots__ = ("catalog", "gate")

    gate: Gate
    catalog: Catalog

    def __init__(self, gate: Gate, catalog: Catalog) -> None:
        object.__setattr__(self, "gate", gate)
        object.__setattr__(self, "catalog", catalog)

    @property
    def principal(self) -> Principal:
        """The request's caller (:func:`mcp_providers.policy.principal` reads it)."""
        return self.gate.principal

    def require(self, action: Action, target: str, *, asked_by: str | None = None) -> None:
        if action in _URI_ACTIONS and ":" in target:
            require_uri(self.gate, self.catalog, action, target, asked_by=asked_by)
        else:
            self.gate.require(action, target, asked_by=asked_by)

    def allowed(self, action: Action, target: str) -> bool:
        if action in _URI_ACTIONS and ":" in target:
            return uri_allowed(self.gate, self.catalog, action, target)
        return self.gate.allowed(action, target)


@contextlib.contextmanager
def provider_asks(gate: Gate, catalog: Catalog) -> Iterator[None]:
    """While provider code runs in this block, answer its policy questions through a
    :class:`RoutingAsker` (nothing changes when no policy is installed)."""
    if not gate.authorizer.active:
        yield
        return
    token = current_gate.set(RoutingAsker(gate, catalog))
    try:
        yield
    finally:
        current_gate.reset(token)
