"""The side-effect scope itself: which guarded call the calling context is in, what it attempted,
and what it may do (its scratch directory, :func:`exempt` requests).

A :class:`Scope` lives in a :class:`contextvars.ContextVar` (see the package docstring for what
inherits it). Every guard asks :data:`scope_var` and judges nothing outside a scope.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextvars import ContextVar, Token
from typing import Any, Literal

from mcp_providers.errors import SideEffectRefused

log = logging.getLogger("mcp_providers.sideeffects")

RULE = "side-effect-in-resource-read"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods RFC 9110 (section 9.2.1) defines as safe: allowed in a scope when they carry no body."""

Mode = Literal["enforce", "warn"]
Kind = Literal["read", "completion", "prompt", "tool"]

_scratch_lock = threading.Lock()  # scratch directories are rare: one lock for all scopes
scope_var: ContextVar[Scope | None] = ContextVar("mcp_providers_side_effect_scope", default=None)
exempt_reason: ContextVar[str | None] = ContextVar("mcp_providers_side_effect_exempt", default=None)

DOING = {"read": "reading", "completion": "completing", "prompt": "rendering prompt", "tool": "running tool"}
_TARGET_KEY = {"read": "uri", "completion": "ref", "prompt": "prompt", "tool": "tool"}
_ADVICE = {
    "tool": 'the tool is declared effects="none"; declare "additive" or "destructive" if it changes anything',
    "other": (
        "resources, completions and prompts are read-only: do writes in a tool, write files under "
        "mcp_providers.http.scratch_dir(), or wrap an authentication request in mcp_providers.http.exempt(reason)"
    ),
}


class Scope:
    """One guarded call: who runs it, what it serves, and what it attempted.

    ``exemptions`` holds one ``{"reason", "method", "host"}`` dict per request let through by
    :func:`exempt`; ``violations`` one ``{"attempted", "category", "refused", ...}`` dict per
    attempt, refused (``mode="enforce"``) or let through (``mode="warn"``). ``category`` is
    ``"http"``, ``"file"`` or ``"process"``. Both lists are JSON-ready, for the receipt.
    ``refused`` is the last :class:`SideEffectRefused` raised, kept because some libraries catch
    it and fail with an error of their own (asyncio's transports close the connection).
    ``ended`` is set when the call has ended (:meth:`close`): work the call started that outlives
    it (a task, a thread) is still judged by it, and refused in ``enforce`` mode, but may no
    longer write under the deleted scratch directory, and what it attempts is logged, not recorded
    (no receipt will carry it).
    """

    __slots__ = (
        "_passed",
        "_scratch",
        "cache_temps",
        "ended",
        "exemptions",
        "kind",
        "locale",
        "lock",
        "mode",
        "plugin",
        "provider",
        "refused",
        "target",
        "violations",
    )

    def __init__(self, provider: str, plugin: str, target: str, kind: Kind, mode: Mode) -> None:
        if mode not in ("enforce", "warn"):
            raise ValueError(f"side-effect mode must be 'enforce' or 'warn', not {mode!r}")
        self.provider, self.plugin, self.target, self.kind, self.mode = provider, plugin, target, kind, mode
        self.exemptions: list[dict[str, Any]] = []
        self.violations: list[dict[str, Any]] = []
        self._scratch: str | None = None
        self.cache_temps: list[str] = []
        """Bytecode cache temps (resolved paths) the call created: any left at its end are removed
        and refuse it (:func:`~.bytecode.sweep`)."""
        self.ended = False
        self.locale: str | None = None
        """The process's locale (``LC_ALL``) before the call's current step first set it, else None
        (:mod:`.assigned`)."""
        self.refused: SideEffectRefused | None = None  # the last refusal, even if a library swallowed it
        self._passed: list[tuple[str, str]] | None = None  # (verb, path) http.client let through, made when needed
        self.lock = threading.RLock()
        """Held by a write-open or a file-tree change of the call from its check to its end, so the
        call's own threads cannot swap a checked path for a symlink in between (:mod:`._sideeffects_lowlevel`)."""

    def scratch_dir(self) -> str:
        """This call's private temporary directory (absolute, resolved), made on first use.

        Anything under it may be written in the scope; it is deleted when the scope ends.

        :raises RuntimeError: the call has ended (work it started asks too late).
        """
        with _scratch_lock:
            if self.ended:
                raise RuntimeError(f"the call on {self.target} has ended: its scratch directory is gone")
            if self._scratch is None:
                token = scope_var.set(None)  # making it is the core's write, not the provider's
                try:
                    self._scratch = os.path.realpath(tempfile.mkdtemp(prefix="mcp-providers-scratch-"))
                finally:
                    scope_var.reset(token)
                if self._has_ended():  # close() ran meanwhile, maybe before it saw the folder: remove it here
                    shutil.rmtree(self._scratch, ignore_errors=True)
                    raise RuntimeError(f"the call on {self.target} has ended: its scratch directory is gone")
            return self._scratch

    def _has_ended(self) -> bool:
        return self.ended  # read afresh: another thread's close() may have set it since the last read

    def receipt_fields(self) -> dict[str, list[dict[str, Any]]]:
        """``{"exemptions": [...], "violations": [...]}`` for a receipt, each key only when non-empty."""
        out = {}
        if self.exemptions:
            out["exemptions"] = list(self.exemptions)
        if self.violations:
            out["violations"] = list(self.violations)
        return out

    def close(self) -> None:
        """Delete the scratch directory, if one was made (the scope has ended)."""
        self.ended = True  # set before _scratch is read: scratch_dir() checks again after making one
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def under_scratch(self, path: str) -> bool:
        """Whether ``path`` (absolute, resolved) is the scratch directory or inside it."""
        s = self._scratch
        return s is not None and not self.ended and (path == s or path.startswith(s + os.sep))

    def let_through(self, verb: str, path: str) -> None:
        """Remember that ``http.client`` judged and let ``verb path`` through, so the socket-level
        guard does not judge that request a second time (:meth:`passed`)."""
        self._passed = [*(self._passed or ()), (verb, path)]

    def passed(self, verb: str, path: str) -> bool:
        """Whether ``verb path`` was let through by :meth:`let_through`; a yes is used up."""
        if self._passed and (verb, path) in self._passed:
            self._passed.remove((verb, path))
            return True
        return False

    def attempt(
        self, attempted: str, category: str, *, error: type[SideEffectRefused] = SideEffectRefused, **extra: Any
    ) -> None:
        """Refuse ``attempted`` (enforce) or record and log it (warn); once the call has ended,
        log it either way and record nothing.

        :param attempted: what was tried, for people: ``"a POST to http://host/path"``.
        :param category: ``"http"``, ``"file"`` or ``"process"``.
        :raises SideEffectRefused: in enforce mode, with ``data`` = provider, plugin, kind,
            target (also under ``uri``/``tool``/``prompt``/``ref``), attempted, rule and ``extra``.
        """
        refused = self.mode == "enforce"
        who = f"provider {self.provider!r} (plugin {self.plugin!r})"
        if self.ended:  # work the call started, outliving it: no answer or receipt will carry this
            where = f"after the call ended, in work started while {who} was {DOING[self.kind]} {self.target}"
            log.warning("%s: %s %s %s", RULE, attempted, "refused" if refused else "allowed (warn mode)", where)
        else:
            where = f"while {who} is {DOING[self.kind]} {self.target}"
            self.violations.append({"attempted": attempted, "category": category, "refused": refused, **extra})
            if not refused:
                log.warning("%s: %s allowed (warn mode) %s", RULE, attempted, where)
        if not refused:
            return
        advice = _ADVICE["tool" if self.kind == "tool" else "other"]
        data = {
            "provider": self.provider,
            "plugin": self.plugin,
            "kind": self.kind,
            "target": self.target,
            _TARGET_KEY[self.kind]: self.target,
            "attempted": attempted,
            "rule": RULE,
            **extra,
        }
        self.refused = error(f"{RULE}: {attempted} was refused {where}; {advice}", data=data)
        raise self.refused


def exit_scope(scope: Scope, token: Token[Scope | None]) -> None:
    """Leave the scope :func:`~.levels.enter_scope` entered (and delete its scratch directory, if made)."""
    scope_var.reset(token)
    scope.close()


def carried(context: contextvars.Context) -> contextvars.Context:
    """``context``, or, when the caller is in a scope ``context`` lacks, a copy of it in that
    scope: work a call starts in a context it made (``loop.create_task(coro,
    context=contextvars.Context())``) stays the call's. The object given is never changed (the
    host may hold it), so what the work sets is seen in the copy only.

    :returns: the context the work should run in."""
    scope = scope_var.get()
    if scope is None or context.get(scope_var) is scope:
        return context
    context = context.copy()
    context.run(scope_var.set, scope)
    return context


def scope_lock() -> threading.RLock | None:
    scope = scope_var.get()
    return scope.lock if scope is not None else None


def current_scope() -> Scope | None:
    """The scope the calling context is in, or ``None``."""
    return scope_var.get()


def scratch_dir() -> str:
    """The current call's scratch directory (see :meth:`Scope.scratch_dir`).

    :raises RuntimeError: outside a scope (nothing limits writes there, so use any directory).
    """
    scope = scope_var.get()
    if scope is None:
        raise RuntimeError("scratch_dir() is only available inside a read, completion, prompt or effects='none' tool")
    return scope.scratch_dir()


@contextlib.contextmanager
def outside_scope() -> Iterator[None]:
    """Run the body outside any scope: for the core's own work that a call asks for (a task the
    runtime starts copies the context it is started in, and so, process-wide, does a thread)."""
    token = scope_var.set(None)
    try:
        yield
    finally:
        scope_var.reset(token)


@contextlib.contextmanager
def exempt(reason: str) -> Iterator[None]:
    """Let non-safe HTTP requests through in the body, for requests that change no served data.

    The one legitimate use is authentication (an OAuth token POST). Each request let through is
    logged at INFO and recorded in the scope's ``exemptions`` (``{"reason", "method", "host"}``).
    Files and processes stay refused. Outside a scope it changes nothing.
    """
    token = exempt_reason.set(reason)
    try:
        yield
    finally:
        exempt_reason.reset(token)
