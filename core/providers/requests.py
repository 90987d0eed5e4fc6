"""What providers are called with: one request each (:class:`ReadRequest`, :class:`CompletionRequest`,
:class:`ExtensionRequest`, :class:`ToolCall`), carrying the caller, its upstream credentials and
the way back to the client (:class:`ClientChannel`: log, progress, sampling, elicitation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel

from mcp_providers import credentials, policy
from mcp_providers.credentials import Credential, Upstream
from mcp_providers.errors import ToolFailure
from mcp_providers.identity import LOCAL, Principal
from mcp_providers.models import ExtensionMethod, Resource, ResourceTemplate, Tool
from mcp_providers.policy import Action

__all__ = [
    "LOG_LEVELS",
    "ClientChannel",
    "CompletionRequest",
    "Elicited",
    "ExtensionRequest",
    "LogLevel",
    "ReadRequest",
    "Sampled",
    "ToolCall",
]


LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""Syslog severities as MCP names them, least severe first."""
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)


@dataclass(frozen=True, slots=True)
class Sampled:
    """The client's answer to :meth:`ClientChannel.sample`.

    :param text: the generated text (empty if the client answered with non-text content).
    :param model: the model that answered, as the client names it.
    :param stop_reason: why generation stopped (``"endTurn"``, ``"maxTokens"`` ...), if given.
    """

    text: str
    model: str
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Elicited:
    """The user's answer to :meth:`ClientChannel.elicit`.

    :param action: ``"accept"`` (``content`` holds the form), ``"decline"`` or ``"cancel"``.
    :param content: the submitted values, keyed by the schema's property names (empty unless accepted).
    """

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any]


class ClientChannel:
    """A channel with no client behind it: progress and logs go nowhere, requests fail.

    This is what a :class:`~mcp_providers.providers.ToolCall` built outside a server (a unit
    test, an embedding application calling a provider directly) carries.
    """

    @property
    def connection(self) -> object | None:
        """The downstream connection the call came over: one object for every call of one client
        connection (a 2025-era HTTP session, a stdio process), another for another's; ``None``
        when the call has no client behind it (always, here). Compared by identity only."""
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress of this call (``progress`` should never decrease). No-op here."""

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message about this call (``data``: any JSON-serializable value). No-op here."""

    async def sample(
        self,
        prompt: str | Sequence[tuple[Literal["user", "assistant"], str]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
    ) -> Sampled:
        """Ask the client's model for a completion.

        :param prompt: a user message, or ``(role, text)`` pairs for a conversation.
        :param max_tokens: the most tokens the client may generate.
        :param system_prompt: an optional system prompt.
        :raises ToolFailure: there is no client to ask (always, on this channel).
        """
        raise ToolFailure("sampling needs a connected client; this call has none")

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicited:
        """Ask the user to fill in a form.

        :param message: what to ask, shown to the user.
        :param schema: a flat JSON Schema object (``{"type": "object", "properties": {...}}``) of
            primitive properties, as MCP's elicitation allows.
        :raises ToolFailure: there is no client to ask (always, on this channel).
        """
        raise ToolFailure("elicitation needs a connected client; this call has none")


class _ActsForCaller:
    """Upstream credentials of the request's caller (:mod:`mcp_providers.credentials`), for every
    request type that carries a ``principal``."""

    __slots__ = ()
    principal: Principal

    async def credential(self, upstream: Upstream) -> Credential:
        """A credential of this request's caller for ``upstream``, from the server's broker
        (cached per issuer, subject and upstream; concurrent calls share one obtain), recorded
        in this request's receipt and audit line as ``upstream: {name, subject, grant}``.

        :raises ~mcp_providers.credentials.CredentialRefused: the upstream will not grant one.
        """
        return await credentials.credential_for(upstream, self.principal)

    async def forget_credential(self, upstream: Upstream, stale: Credential | None = None) -> None:
        """Drop the caller's cached credential for ``upstream`` (the upstream rejected it, e.g. a
        401); the next :meth:`credential` obtains a new one. Pass the rejected credential as
        ``stale``: it is then dropped only while still cached, so requests refused together cause
        one refresh, not one each."""
        await credentials.forget_for(upstream, self.principal, stale)


@dataclass(frozen=True, slots=True)
class ReadRequest(_ActsForCaller):
    """One ``resources/read``, routed to the provider that owns the URI.

    :param uri: the URI the router matched, in canonical form (lower-case scheme, escapes of
        unreserved characters decoded: ``DOCUMCP://ssgs/%61vailable`` arrives as
        ``documcp://ssgs/available``), so comparing it with a declared URI holds for every spelling.
    :param resource: the fixed resource or template that matched.
    :param params: template variables, percent-decoded exactly once (empty for a fixed URI). No
        value holds a ``.`` or ``..`` path segment, a NUL or a leading ``/``, and a ``{name}``
        value no ``/`` or ``\\``, in any spelling: the router refuses those with -32602.
        A query variable (``{?q}``) of a template declaring ``opaque_query`` is held only to
        holding no NUL.
    :param requested_uri: the URI exactly as the client sent it (for messages); ``None`` when no
        client sent one (a unit test, ``mcp-providers check``).
    :param principal: who is asking (:data:`~mcp_providers.identity.LOCAL` on stdio; the verified
        token's principal on HTTP).
    """

    uri: str
    resource: Resource | ResourceTemplate
    params: Mapping[str, str] = field(default_factory=dict)
    requested_uri: str | None = None
    principal: Principal = LOCAL

    @property
    def subject(self) -> str:
        """``principal.subject`` (unique only within ``principal.issuer``)."""
        return self.principal.subject


@dataclass(frozen=True, slots=True)
class CompletionRequest(_ActsForCaller):
    """One ``completion/complete`` for a template variable or prompt argument.

    :param argument: the variable or argument name.
    :param value: what the user has typed so far.
    :param context: values of the other arguments already chosen.
    :param principal: who is asking (as on :class:`ReadRequest`).
    """

    argument: str
    value: str
    context: Mapping[str, str] = field(default_factory=dict)
    principal: Principal = LOCAL


@dataclass(frozen=True, slots=True)
class ExtensionRequest(_ActsForCaller):
    """One request of an extension method, its params validated against the method's model.

    :param method: the declaration requested.
    :param params: an instance of ``method.params_model``.
    :param principal: who asks.
    """

    method: ExtensionMethod
    params: BaseModel
    principal: Principal = LOCAL

    def require(self, action: Action, target: str) -> None:
        """Ask the policy about the data this request touches (as :meth:`ToolCall.require`).

        :raises mcp_providers.errors.Denied: the policy refuses (the client gets -32003).
        """
        policy.require(action, target, asked_by=f"method {self.method.name}")


@dataclass(frozen=True, slots=True)
class ToolCall(_ActsForCaller):
    """One ``tools/call``: the declaration and the arguments already validated against its model.

    :param tool: the declaration that was called.
    :param arguments: an instance of ``tool.input_model``.
    :param principal: who is calling (:data:`~mcp_providers.identity.LOCAL` on stdio; the verified
        token's principal on HTTP).
    :param channel: the way back to the calling client (see :class:`ClientChannel`). The
        default has no client behind it: progress and logs go nowhere, and ``sample``/``elicit``
        raise :class:`~mcp_providers.errors.ToolFailure`.
    """

    tool: Tool
    arguments: BaseModel
    principal: Principal = LOCAL
    channel: ClientChannel = field(default_factory=ClientChannel)

    @property
    def subject(self) -> str:
        """``principal.subject`` (unique only within ``principal.issuer``)."""
        return self.principal.subject

    def require(self, action: Action, target: str) -> None:
        """Ask the policy about the data this call touches; raise if it refuses.

        The core authorizes the call by the tool's name. A tool that reads or changes data also
        served as resources should ask about that data too, so a rule on its URIs holds for the
        tool as it does for reads: e.g. ``call.require("read", "servicenow://prod/incident")``
        before querying prod, ``call.require("call", "servicenow://prod/incident")`` before
        changing it. The same gate answers as for every other request (see
        :func:`mcp_providers.policy.require`).

        :raises mcp_providers.errors.Denied: the policy refuses (the client gets -32003).
        """
        policy.require(action, target, asked_by=f"tool {self.tool.name}")

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress, e.g. ``progress(50, 100)``; sent only if the client asked for progress."""
        await self.channel.progress(progress, total, message)

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send the client a log message at ``level`` (``"debug"`` ... ``"emergency"``).

        :raises ValueError: ``level`` is not an MCP log level.
        """
        await self.channel.log(level, data, logger)

    async def sample(
        self,
        prompt: str | Sequence[tuple[Literal["user", "assistant"], str]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
    ) -> Sampled:
        """Ask the client's model for a completion (``sampling/createMessage``).

        The same code serves every protocol version: before 2026-07-28 the question is a
        server-to-client request; on 2026-07-28 (no such requests) the call ends with an
        ``InputRequiredResult`` at the first question not yet answered and runs again from the
        start when the client retries with the answer, so keep what a tool does before its
        questions free of side effects (ask first, act after). See ``docs/protocol-versions.md``.

        :returns: the generated text, the model's name and the stop reason.
        :raises ~mcp_providers.errors.ToolFailure: the client cannot be asked (it did not declare
            the sampling capability, or the connection carries no server-to-client requests), or
            refused.
        """
        return await self.channel.sample(prompt, max_tokens=max_tokens, system_prompt=system_prompt)

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicited:
        """Ask the user to fill in a form described by a flat JSON Schema (``elicitation/create``).

        Both eras from the same code, as for :meth:`sample`: a server-to-client request before
        2026-07-28; an input round (``InputRequiredResult``, then the tool runs again with the
        answer) on 2026-07-28. Do not catch ``BaseException`` around it: the end of a round is one.

        :returns: the action (``accept``/``decline``/``cancel``) and the submitted values.
        :raises ~mcp_providers.errors.ToolFailure: the client cannot be asked (it did not declare
            the elicitation capability, or the connection carries no server-to-client requests),
            or refused.
        """
        return await self.channel.elicit(message, schema)
