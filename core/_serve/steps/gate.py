"""The gate: the only place the ``authorize`` hook is consulted.

Every implementation is asked, each through pluggy on its own with its plugin's settings, and the
answers combine: **any deny wins**, so the order plugins load in never changes a decision. An
implementation that raises or answers with anything but a ``Decision`` (with a boolean ``allow``)
or ``None`` denies, and so does a plugin whose ``authorize`` is only a hook wrapper.

One :class:`Gate` serves one request: it knows who is asking (the request's
:class:`~mcp_providers.identity.Principal`, resolved once), asks about URIs in
canonical form and as sent, asks ``expand`` for a URI of a template, and remembers the first
denial so the request's single audit line can say what was refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from mcp_providers._holders import Frozen
from mcp_providers._host.contain import cancels_this_task
from mcp_providers.errors import Denied
from mcp_providers.identity import Principal
from mcp_providers.models import ResourceTemplate
from mcp_providers.policy import Action, Decision
from mcp_providers.uris import InvalidUri, canonical, path_problem

if TYPE_CHECKING:
    from mcp_providers._host.assembly import AuthorizeImpl
    from mcp_providers._host.catalog import Route

log = logging.getLogger("mcp_providers.policy")

_ALLOW = Decision(True)
_CANONICAL_GROWTH = 12
"""The most characters one character of a URI becomes in canonical form (4 UTF-8 bytes, ``%XX``
each): a URI within ``max_uri_length`` is never longer than this many times it in canonical form."""


class Authorizer:
    """Combines every served plugin's ``authorize`` implementation (any deny wins).

    Fail closed, whatever the implementation does: a raise (any ``BaseException`` but the
    request's own cancellation), an answer that is not a :class:`Decision` or ``None``, a
    ``Decision`` whose ``allow`` is not the boolean ``True``, and a plugin whose only
    ``authorize`` implementations are hook wrappers (they cannot answer) all deny, naming the plugin.
    """

    def __init__(self, impls: tuple[AuthorizeImpl, ...]) -> None:
        self._impls = impls
        self._answering = {i.plugin: _answers(i) for i in impls}
        self.active = bool(impls)
        """Whether any policy is installed (if not, everything is allowed without asking)."""

    @property
    def order(self) -> list[str]:
        """Plugin names of the implementations, in the order they are asked."""
        return [i.plugin for i in self._impls]

    def ask(self, impl: AuthorizeImpl, principal: Principal, action: Action, target: str) -> Decision | None:
        """One plugin's answer (``None``: it defers); any failure is a deny naming it."""
        if not self._answering[impl.plugin]:
            return Decision(False, f"the authorize hook of plugin {impl.plugin!r} is only a hook wrapper")
        try:
            answers = impl.caller(
                subject=principal.subject, action=action, target=target, settings=impl.settings, principal=principal
            )
        except BaseException as exc:  # SystemExit or KeyboardInterrupt from plugin code: a deny, not the end
            if cancels_this_task(exc):
                raise
            log.exception("authorize hook of plugin %r raised; denying", impl.plugin)
            return Decision(False, f"the authorize hook of plugin {impl.plugin!r} failed")
        verdict: Decision | None = None
        for answer in answers if isinstance(answers, list) else [answers]:
            if not isinstance(answer, Decision) or not isinstance(answer.allow, bool):
                log.error("authorize hook of plugin %r returned %r; denying", impl.plugin, type(answer).__name__)
                return Decision(False, f"the authorize hook of plugin {impl.plugin!r} returned no Decision")
            if answer.allow is not True:
                return answer
            verdict = answer
        return verdict

    def __call__(self, principal: Principal, action: Action, target: str) -> Decision:
        for impl in self._impls:
            answer = self.ask(impl, principal, action, target)
            if answer is not None and answer.allow is not True:
                return answer
        return _ALLOW


def _answers(impl: AuthorizeImpl) -> bool:
    """Whether the plugin has an ``authorize`` implementation that answers (not only wrappers)."""
    get = getattr(impl.caller, "get_hookimpls", None)
    if get is None:  # not a pluggy hook caller (a test double): it answers when called
        return True
    return any(not (h.hookwrapper or h.wrapper) for h in get())


def _canonical(target: str) -> str:
    if ":" not in target:
        return target  # a tool or prompt name
    try:
        return canonical(target)
    except InvalidUri:
        return target


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Denial(Frozen):
    """What the gate refused: recorded on the request's audit line."""

    __slots__ = ("action", "reason", "target")

    action: Action
    target: str
    reason: str

    def __init__(self, action: Action, target: str, reason: str) -> None:
        object.__setattr__(self, "action", action)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "reason", reason)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Gate:
    """The authorization of one request (see the module docstring)."""

    __slots__ = ("authorizer", "denials", "max_uri_length", "principal")

    authorizer: Authorizer
    principal: Principal
    denials: list[Denial]
    max_uri_length: int
    """``[server] max_uri_length``: a URI asked about that is longer (in canonical form: longer than
    :data:`_CANONICAL_GROWTH` times it) is denied without being read (tester 27 F8)."""

    def __init__(self, authorizer: Authorizer, principal: Principal, max_uri_length: int = 2048) -> None:
        self.authorizer = authorizer
        self.principal = principal
        self.denials = []
        self.max_uri_length = max_uri_length

    @property
    def subject(self) -> str:
        """The caller's subject (unique only within :attr:`Principal.issuer`)."""
        return self.principal.subject

    def decide(self, action: Action, target: str) -> Decision:
        """The combined decision about ``target`` in canonical form and, when it differs, as given.

        A URI whose path a server could read as another path (a ``.`` or ``..`` segment in any
        spelling, a trailing dot, an NTFS stream, ...: :func:`~mcp_providers.uris.path_problem`) is
        denied without asking: no glob can tell where it leads (round 4 item 17, round 8).
        """
        if not self.authorizer.active:
            return _ALLOW
        if ":" in target and len(target) > _CANONICAL_GROWTH * self.max_uri_length:  # before any per-character work
            return Decision(False, f"a URI of {len(target)} characters is longer than any this server reads")
        if ":" in target and (problem := path_problem(target)) is not None:
            # A rule on a/private/* cannot see a/public/../private/x, nor a/private./x: refuse what no rule can judge.
            return Decision(False, f"the URI {problem}; ask about the path as its owner names it")
        canon = _canonical(target)
        decision = self.authorizer(self.principal, action, canon)
        if decision.allow is True and canon != target:
            decision = self.authorizer(self.principal, action, target)
        return decision

    def allowed(self, action: Action, target: str) -> bool:
        """Whether the caller may; for filtering lists and values (nothing is recorded)."""
        return self.decide(action, target).allow is True

    @property
    def listable(self) -> Callable[[str], bool] | None:
        """What the caller may list, for not-found hints (``None`` when no policy is installed)."""
        if not self.authorizer.active:
            return None
        return lambda target: self.allowed("list", target)

    def require(self, action: Action, target: str, *, asked_by: str | None = None) -> None:
        """Refuse unless the caller may perform ``action`` on ``target``.

        :raises Denied: the policy refuses; the denial is remembered for the audit line.
        """
        decision = self.decide(action, target)
        if decision.allow is True:
            return
        self.deny(action, target, decision.reason, asked_by=asked_by)

    def deny(self, action: Action, target: str, reason: str | None, *, asked_by: str | None = None) -> NoReturn:
        """Refuse ``action`` on ``target`` for ``reason``, remembered for the audit line.

        :raises Denied: always.
        """
        self.denials.append(Denial(action, target, reason or ""))
        why = f": {reason}" if reason else ""
        who = f"{asked_by} may not {action} {target}" if asked_by else f"{action} on {target} is not allowed"
        data = {"target": target, "action": action, "rule": "permission-denied"}
        if asked_by:
            data["by"] = asked_by
        raise Denied(f"permission-denied: {who} for {self.subject}{why}", data=data)

    def require_route(self, action: Action, route: Route, raw: str, *, asked_by: str | None = None) -> None:
        """Authorize a routed URI: ``expand`` on its template (if any), then ``action`` on the URI
        in canonical form and as sent.

        :raises Denied: any of them is refused.
        """
        if not self.authorizer.active:
            return  # no policy: everything is allowed (what decide() answers), nothing to record
        for asked, target in _route_questions(action, route, raw):
            self.require(asked, target, asked_by=asked_by)

    def allows_route(self, action: Action, route: Route, raw: str) -> bool:
        """What :meth:`require_route` would allow, as a yes or no (for dropping, not refusing)."""
        if not self.authorizer.active:
            return True
        return all(self.allowed(asked, target) for asked, target in _route_questions(action, route, raw))


def _route_questions(action: Action, route: Route, raw: str) -> list[tuple[Action, str]]:
    """The questions a routed URI takes, in order: ``expand`` on its template, then ``action`` on
    the URI in canonical form and, when it differs, as sent."""
    questions: list[tuple[Action, str]] = []
    if isinstance(route.declaration, ResourceTemplate):
        questions.append(("expand", route.declaration.uri_template))
    questions.append((action, route.canonical))
    if raw != route.canonical:
        questions.append((action, raw))
    return questions
