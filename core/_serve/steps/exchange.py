"""The exchange: one request on its way through the pipeline, and the contract of a method's stages.

:class:`Exchange` carries who is asking, the request's :class:`~mcp_providers._serve.steps.gate.Gate`
and how the request ended, from the first stage to the audit line. :class:`Method` is the four
stages every MCP method implements (``route``, ``authorize``, ``invoke``, ``evidence``), run in that
order by :class:`~mcp_providers._serve.pipeline.Pipeline`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from mcp.server import ServerRequestContext

from mcp_providers._serve.steps.gate import Gate
from mcp_providers.identity import ANONYMOUS, LOCAL, Principal, from_access_token

Ctx = ServerRequestContext[Any, Any]

Actor = Literal["application", "model", "user"]
P = TypeVar("P", contravariant=True)
T = TypeVar("T")
R = TypeVar("R", covariant=True)


def subject_of(ctx: Ctx) -> str:
    """Who is asking: the verified bearer token's subject or client id over HTTP, ``"local"`` otherwise."""
    request = ctx.request
    if request is None:
        return "local"
    user = getattr(request, "scope", {}).get("user")
    token = getattr(user, "access_token", None)
    return str(getattr(token, "subject", None) or getattr(token, "client_id", None) or "anonymous")


def principal_of(ctx: Ctx) -> Principal:
    """Who is asking, as a :class:`~mcp_providers.identity.Principal`: the verified bearer token's
    (:func:`~mcp_providers.identity.from_access_token`) over HTTP, :data:`~mcp_providers.identity.LOCAL`
    without an HTTP request (stdio, in memory), :data:`~mcp_providers.identity.ANONYMOUS` over HTTP
    without authentication.

    :raises ValueError: the verified token names neither a subject nor a client id.
    """
    request = ctx.request
    if request is None:
        return LOCAL
    user = getattr(request, "scope", {}).get("user")
    token = getattr(user, "access_token", None)
    return ANONYMOUS if token is None else from_access_token(token)


@dataclass(slots=True)
class Exchange:
    """One request on its way through the pipeline: who, what, and how it ended."""

    method: str
    """The JSON-RPC method, e.g. ``resources/read``; the audit line's ``operation``."""
    actor: Actor
    subject: str
    gate: Gate
    ctx: Ctx
    target: str = ""
    """What the request is about (URI, tool, prompt, template; ``*`` for lists)."""
    decision: str = "allowed"
    reason: str | None = None
    count: int | None = None
    receipt: dict[str, Any] | None = None
    custody: dict[str, Any] = field(default_factory=dict)
    """What the invoker's side-effect scope recorded (``exemptions``, ``violations``), for the receipt."""

    @property
    def version(self) -> str:
        """The protocol version the session negotiated."""
        return str(getattr(self.ctx, "protocol_version", "") or "")


class Method(Protocol, Generic[P, T, R]):
    """The four stages of one MCP method (``P``: its params, ``T``: its routed target, ``R``: its result)."""

    name: str
    actor: Actor

    def route(self, exchange: Exchange, params: P) -> T:
        """Find what the request is about; set ``exchange.target``. Raises NotFound/InvalidParams."""
        ...

    def authorize(self, exchange: Exchange, target: T) -> None:
        """Ask ``exchange.gate`` about the target (canonical and raw; ``expand`` for templates)."""
        ...

    async def invoke(self, exchange: Exchange, target: T) -> Any:
        """Run the provider through the invoker (or nothing, for lists)."""
        ...

    def evidence(self, exchange: Exchange, target: T, produced: Any) -> R:
        """Check budgets, links and embeds; build the result and its receipt."""
        ...
