"""Authorization: the vocabulary of the ``authorize`` hook, and how provider code asks it.

The policy itself is a plugin (the built-in ``policy`` plugin reads rules from config). The core
asks every ``authorize`` implementation at every boundary of every request (list, read, template
expansion, completion, subscription, tool call, prompt, embed and link) and combines the answers:

- **any deny wins**; order never matters (the hook is not ``firstresult``);
- an implementation returning ``None`` defers; when all defer, the action is allowed;
- an implementation that raises or returns something other than a :class:`Decision` denies
  (fail closed), with its plugin named in the reason.

Provider code running inside a request (a tool, a prompt render, a completion) asks about the
data it is about to use with :func:`require` or :func:`allowed`; both go to the same gate the core
uses, so a rule on a URI holds however the data is reached::

    from mcp_providers import policy

    async def render(self, prompt, arguments):
        policy.require("read", f"documcp://ssgs/{arguments['ssg']}")     # raises Denied
        visible = [s for s in SSGS if policy.allowed("read", f"documcp://ssgs/{s}")]

A URI this composition serves is asked what a read of it asks (``expand`` on the template that
serves it, then the action), so a listing filtering its members with :func:`allowed` leaves out a
member whose template is denied too. Outside a request (a unit test calling a provider directly)
there is no gate: both allow.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, Protocol

from mcp_providers import credentials
from mcp_providers.credentials import Credential, Upstream
from mcp_providers.identity import LOCAL, Principal

__all__ = [
    "Action",
    "Decision",
    "allowed",
    "credential",
    "forget_credential",
    "principal",
    "require",
]

Action = Literal["list", "read", "expand", "complete", "subscribe", "call", "prompt"]
"""The operations the ``authorize`` hook is asked about."""


@dataclass(frozen=True, slots=True)
class Decision:
    """An answer from the ``authorize`` hook.

    :param allow: ``True`` to permit, ``False`` to refuse.
    :param reason: shown to the client on refusal, e.g. ``"rule 3 denies read on servicenow://prod/*"``.
    :raises TypeError: ``allow`` is not a ``bool`` or ``reason`` not a ``str``.
    """

    allow: bool
    reason: str = ""

    def __post_init__(self) -> None:
        # A truthy non-bool (``Decision("no")``) must never read as an allow.
        if not isinstance(self.allow, bool):
            raise TypeError(f"Decision.allow must be True or False, not {self.allow!r}")
        if not isinstance(self.reason, str):
            raise TypeError(f"Decision.reason must be a string, not {type(self.reason).__name__}")


class Asker(Protocol):
    """What :func:`require` and :func:`allowed` talk to: the current request's gate (set by the core)."""

    @property
    def principal(self) -> Principal: ...

    def require(self, action: Action, target: str, *, asked_by: str | None = None) -> None: ...

    def allowed(self, action: Action, target: str) -> bool: ...


current_gate: ContextVar[Asker | None] = ContextVar("mcp_providers_gate", default=None)
"""The gate of the request running in this context; ``None`` outside one. Set by the core only."""


def require(action: Action, target: str, *, asked_by: str | None = None) -> None:
    """Refuse unless the current caller may perform ``action`` on ``target``.

    :param action: e.g. ``"read"`` before using data also served as a resource, ``"call"`` before
        changing it.
    :param target: a URI (asked about in canonical form too), template, tool or prompt name.
    :param asked_by: who asks, for the message, e.g. ``"tool servicenow_query_table"``.
    :raises mcp_providers.errors.Denied: the policy refuses (the client gets -32003; the denial is
        audited once, on the request's audit line).
    """
    gate = current_gate.get()
    if gate is not None:
        gate.require(action, target, asked_by=asked_by)


def allowed(action: Action, target: str) -> bool:
    """Whether the current caller may perform ``action`` on ``target`` (for filtering; never raises)."""
    gate = current_gate.get()
    return True if gate is None else gate.allowed(action, target)


def principal() -> Principal:
    """Who the current request is served for (:data:`~mcp_providers.identity.LOCAL` outside one).

    For provider code that is not handed a request object (a prompt's ``render``); reads and tool
    calls also carry it as ``ReadRequest.principal`` and ``ToolCall.principal``.
    """
    gate = current_gate.get()
    return LOCAL if gate is None else gate.principal


async def credential(upstream: Upstream) -> Credential:
    """A credential of the current request's caller (:func:`principal`) for ``upstream``: what
    ``request.credential(upstream)`` gives reads, tools and completions, for provider code handed
    no request (a prompt's ``render``). Cached, single-flight and recorded in the request's receipt
    and audit line (see :mod:`mcp_providers.credentials`).

    :raises ~mcp_providers.credentials.CredentialRefused: the upstream will not grant one.
    """
    return await credentials.credential_for(upstream, principal())


async def forget_credential(upstream: Upstream, stale: Credential | None = None) -> None:
    """Drop the current caller's cached credential for ``upstream`` (the upstream rejected it);
    with ``stale``, only if that is still the one cached (see :meth:`CredentialBroker.forget`)."""
    await credentials.forget_for(upstream, principal(), stale)
