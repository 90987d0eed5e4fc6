"""Errors, and the JSON-RPC codes they become on the wire.

::

    MCPProvidersError                 base of everything raised here
    ├── ConfigError                   the config file or a plugin's settings are wrong
    ├── CompositionError              checks failed; carries the list of Problems
    └── RequestError                  raised while serving one request; has .code and .data
        ├── NotFound                  -32602  no such resource (data.uri)
        ├── InvalidParams             -32602  a URI value, argument or cursor is malformed
        ├── Denied                    -32003  the authorize hook refused
        ├── TooLarge                  -32004  over the read budget; says how to narrow
        ├── ReadTimeout               -32005  the provider missed the read deadline
        ├── UpstreamError             -32006  the provider's data source failed
        │   └── (ClusterUnavailable)  -32010  the cluster backend (Redis) is unreachable: not the upstream
        ├── Stale                     -32007  the request demands fresher data than the provider can give
        ├── SideEffectRefused         -32008  a write was attempted inside a resource read
        ├── RateLimited               -32009  the caller is over its [server.limits] budget (data.retryAfter)
        ├── (TaskLost)                -32010  the cluster backend lost the task with its data (data.rule task-lost)
        └── ProviderFailed            -32603  a provider raised unexpectedly or broke its contract
    ToolFailure                       a tool's expected failure; becomes isError: true

Warnings (plugin authors meet them when their plugin is registered; ``docs/hooks.md`` has the policy)::

    DeprecationWarning
    └── MCPProvidersDeprecationWarning    a hook argument or behaviour of the contract is on its way out
        └── MCPProvidersRemovedIn1Warning  ... and stops working in mcp-providers 1.0

-32602 follows MCP 2026-07-28 (SEP-2164) for unknown resources; the others are in the
implementation-defined range -32000..-32019 that the 2026-07-28 error-code policy sets aside.
Neither the MCP specification (2025-11-25, 2026-07-28) nor the SDK's ``mcp_types`` constants define
a rate-limit code, so :class:`RateLimited` takes the next one free in that range (-32000 and
-32001 are the SDK's connection-closed and request-timeout, -32002 the 2025 resource-not-found).
A cluster backend outage (``mcp_providers._serve.state.cluster.ClusterUnavailable``) is an
``UpstreamError`` to code that catches one, but carries :data:`BACKEND_UNAVAILABLE` on the wire, so
a client, a metric or an alert tells "our Redis is down" from "the provider's upstream failed".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BACKEND_UNAVAILABLE",
    "DENIED",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "MISSING_CAPABILITY",
    "RATE_LIMITED",
    "READ_TIMEOUT",
    "SIDE_EFFECT_REFUSED",
    "STALE",
    "TOO_LARGE",
    "UPSTREAM_ERROR",
    "CompositionError",
    "ConfigError",
    "Denied",
    "InvalidParams",
    "MCPProvidersDeprecationWarning",
    "MCPProvidersError",
    "MCPProvidersRemovedIn1Warning",
    "MissingCapability",
    "NotFound",
    "ProviderFailed",
    "RateLimited",
    "ReadTimeout",
    "RequestError",
    "SideEffectRefused",
    "Stale",
    "TooLarge",
    "ToolFailure",
    "UpstreamError",
]

INVALID_PARAMS = -32602
DENIED = -32003
TOO_LARGE = -32004
READ_TIMEOUT = -32005
UPSTREAM_ERROR = -32006
STALE = -32007
SIDE_EFFECT_REFUSED = -32008
RATE_LIMITED = -32009
BACKEND_UNAVAILABLE = -32010
MISSING_CAPABILITY = -32021
INTERNAL_ERROR = -32603


class MCPProvidersError(Exception):
    """Base class of the errors this package raises."""


class ConfigError(MCPProvidersError):
    """The config file, a plugin selection or a plugin's settings are invalid."""


class CompositionError(MCPProvidersError):
    """One or more checks failed; ``problems`` lists them (``mcp-providers check`` prints them)."""

    def __init__(self, problems: Sequence[Any]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class RequestError(MCPProvidersError):
    """An error answering one request; the server turns it into a JSON-RPC error."""

    code: int = INVALID_PARAMS

    def __init__(self, message: str, *, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class NotFound(RequestError):
    """No resource at this URI. Pass ``data={"uri": uri}``."""

    code = INVALID_PARAMS


class InvalidParams(RequestError):
    """A request value is malformed; the message says what would be right."""

    code = INVALID_PARAMS


class Denied(RequestError):
    """The ``authorize`` hook refused the action."""

    code = DENIED


class TooLarge(RequestError):
    """The content is over the read budget and the provider does not allow truncation."""

    code = TOO_LARGE


class ReadTimeout(RequestError):
    """The provider did not answer within the read deadline."""

    code = READ_TIMEOUT


class UpstreamError(RequestError):
    """The provider's data source failed (HTTP error, timeout, malformed answer)."""

    code = UPSTREAM_ERROR


class ToolFailure(MCPProvidersError):
    """An expected tool failure the model should see and may correct (``isError: true``)."""


class Stale(RequestError):
    """The request demanded content no older than it can be had (rule ``stale-content``)."""

    code = STALE


class SideEffectRefused(RequestError):
    """A provider tried a non-safe HTTP method while reading a resource (``side-effect-in-resource-read``)."""

    code = SIDE_EFFECT_REFUSED


class RateLimited(RequestError):
    """The caller used up its ``[server.limits]`` budget for this kind of request.

    The message names the limit (how many requests per how many seconds) and when to retry;
    ``data`` is ``{"retryAfter": <whole seconds>, "limit": <class>, "allowed": <n>, "windowSeconds": <s>}``.
    """

    code = RATE_LIMITED

    @property
    def retry_after(self) -> int:
        """Whole seconds until the budget has room again (``data["retryAfter"]``)."""
        return int((self.data or {}).get("retryAfter", 1))


class MissingCapability(RequestError):
    """The request needs a client capability the client did not declare on it (2026-07-28: -32021).

    ``data`` is ``{"requiredCapabilities": {...}}``, e.g. ``{"extensions": {"io.modelcontextprotocol/tasks": {}}}``.
    """

    code = MISSING_CAPABILITY


class ProviderFailed(RequestError):
    """A provider raised something unexpected, or returned something its contract does not allow.

    The message names the provider and plugin and what it was doing; the exception's own text stays
    in the server log (it may carry secrets).
    """

    code = INTERNAL_ERROR


class MCPProvidersDeprecationWarning(DeprecationWarning):
    """A part of the plugin contract a plugin uses is deprecated; the message names the replacement.

    Raised through pluggy's ``warn_on_impl_args`` when a hookimpl names a deprecated argument,
    aimed at the hookimpl's own file and line. Subclasses name the release that removes it.
    """


class MCPProvidersRemovedIn1Warning(MCPProvidersDeprecationWarning):
    """What this warns about keeps working through every 0.x release and is removed in 1.0
    (the window is in ``docs/hooks.md``, "Compatibility policy")."""
