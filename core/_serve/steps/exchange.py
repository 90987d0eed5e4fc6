"""The exchange: one request on its way through the pipeline, and the contract of a method's stages.

:class:`Exchange` carries who is asking, the request's :class:`~mcp_providers._serve.steps.gate.Gate`
and how the request ended, from the first stage to the audit line. :class:`Method` is the four
stages every MCP method implements (``route``, ``authorize``, ``invoke``, ``evidence``), run in that
order by :class:`~mcp_providers._serve.pipeline.Pipeline`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Generic, Literal, Protocol, TypeVar

from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from mcp_providers._serve.state.tasks import RunningTask
from mcp_providers._serve.steps.gate import Gate
from mcp_providers.errors import DENIED
from mcp_providers.identity import (
    ANONYMOUS,
    Principal,
    UnreadableIdentity,
    from_access_token,
    transportless,
    user_principal,
)

Ctx = ServerRequestContext[Any, Any]

Actor = Literal["application", "model", "user"]
P = TypeVar("P", contravariant=True)
T = TypeVar("T")
R = TypeVar("R", covariant=True)


def principal_of(ctx: Ctx) -> Principal:
    """Who is asking: the verified bearer token's principal over HTTP (:data:`ANONYMOUS` without
    ``[server.auth]``), :data:`LOCAL` when no HTTP request crosses (stdio, in memory) unless an
    embedder chose another (:func:`~mcp_providers.identity.serving_as`).

    :raises MCPError: -32003 when the request's user carries an identity that cannot be read
        (:func:`~mcp_providers.identity.user_principal`)."""
    request = ctx.request
    if request is None:
        return transportless()
    return request_principal(request)


def request_principal(request: Any) -> Principal:
    """Who sent an HTTP ``request`` (a Starlette request), as :func:`principal_of` reads it.

    :raises MCPError: -32003 when its user carries an identity that cannot be read."""
    user = getattr(request, "scope", {}).get("user")
    token = getattr(user, "access_token", None)
    if token is None:
        return ANONYMOUS
    if type(token) is AccessToken and type(user) is AuthenticatedUser:  # the usual case, without the checks' cost
        return from_access_token(token)
    try:
        principal = user_principal(user) or ANONYMOUS
    except UnreadableIdentity as exc:  # refused, never served as someone (nor a 500)
        raise MCPError(DENIED, str(exc)) from None
    if not isinstance(user, AuthenticatedUser) and _in_session(request):  # served as one, its session open to all
        raise MCPError(
            DENIED,
            f"the request's authenticated user is a {type(user).__name__}, not the SDK's AuthenticatedUser, so the "
            "SDK's session manager cannot bind its session to it (another caller knowing the session id could use "
            "it); have your authentication backend return AuthenticatedUser(access_token), serve with mount() "
            "(which does so), or serve stateless",
        )
    return principal


def _in_session(request: Any) -> bool:
    """Whether an HTTP request belongs to a session (it names one: ``Mcp-Session-Id``)."""
    headers = getattr(request, "headers", None)
    return headers is not None and headers.get("mcp-session-id") is not None


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Exchange:
    """One request on its way through the pipeline: who, what, and how it ended."""

    __slots__ = (
        "actor",
        "count",
        "ctx",
        "custody",
        "decision",
        "gate",
        "method",
        "principal",
        "reason",
        "receipt",
        "target",
        "task",
        "upstreams",
    )

    method: str
    """The JSON-RPC method, e.g. ``resources/read``; the audit line's ``operation``."""
    actor: Actor
    gate: Gate
    ctx: Ctx
    principal: Principal
    """Who is asking: the gate's principal (one per request), kept here as a field, not a property:
    a read asks for it four times."""
    target: str
    """What the request is about (URI, tool, prompt, template; ``*`` for lists)."""
    decision: str
    reason: str | None
    count: int | None
    receipt: dict[str, Any] | None
    custody: dict[str, Any]
    """What the invoker's side-effect scope recorded (``exemptions``, ``violations``), for the receipt."""
    upstreams: list[dict[str, str]]
    """The upstream identities the provider's credentials were for, ``{"name", "subject", "grant"}``
    each (never a token), in order of first use; receipts and the audit line carry them."""
    task: RunningTask | None
    """The task whose body this request is (``None``: a client's own request): not rate-counted
    again, not made a task again, its tool asks through the task (:mod:`.methods.tasks`)."""

    def __init__(
        self,
        method: str,
        actor: Actor,
        gate: Gate,
        ctx: Ctx,
        principal: Principal,
        target: str = "",
        decision: str = "allowed",
        reason: str | None = None,
        count: int | None = None,
        receipt: dict[str, Any] | None = None,
        task: RunningTask | None = None,
    ) -> None:
        self.method = method
        self.actor = actor
        self.gate = gate
        self.ctx = ctx
        self.principal = principal
        self.target = target
        self.decision = decision
        self.reason = reason
        self.count = count
        self.receipt = receipt
        self.custody = {}
        self.upstreams = []
        self.task = task

    @property
    def subject(self) -> str:
        """The caller's subject (unique only within its issuer)."""
        return self.gate.principal.subject

    @property
    def version(self) -> str:
        """The protocol version the session negotiated."""
        return version_of(self.ctx)


def version_of(ctx: Any) -> str:
    """The protocol version ``ctx``'s session negotiated (``""`` when none was)."""
    return str(getattr(ctx, "protocol_version", "") or "")


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

    def invoke(self, exchange: Exchange, target: T) -> Awaitable[Any]:
        """Run the provider through the invoker (or nothing, for lists): a coroutine method, or a
        plain one handing back the invoker's awaitable (one frame fewer)."""
        ...

    def evidence(self, exchange: Exchange, target: T, produced: Any) -> R:
        """Check budgets, links and embeds; build the result and its receipt."""
        ...
