"""The invoker: how the core runs a provider's request-time code, the same way for every method.

For every ``read``, ``complete``, ``render`` and ``call`` it (and, through :meth:`Invoker.check`,
for a provider's read-like hook the pipeline calls itself, ``check_watch``: step 3 only):

1. refuses at once when the provider failed to start (its ``lifespan`` raised);
2. runs the call under the read deadline (``server.read_timeout``), its plain functions' threads
   counted against ``[server.limits] provider_threads`` (:mod:`mcp_providers._threads`);
3. runs reads, completions, prompt renders and tools declared ``effects="none"`` inside the
   side-effect scope (:mod:`mcp_providers._sideeffects`), in the mode the operator chose for
   the plugin (``server.side_effects``);
4. shares one upstream call among identical reads in flight (coalescing, for reads);
5. tells :class:`~.health.UpstreamHealth` how the call ended (``/status``);
6. turns anything unexpected into :class:`~mcp_providers.errors.ProviderFailed` naming the
   provider and plugin (the exception text stays in the log: it may carry secrets), a
   ``BaseException`` such as ``SystemExit`` or ``KeyboardInterrupt`` included
   (:mod:`mcp_providers._host.contain`); only the request's own cancellation passes.

Errors a provider raises on purpose (:class:`~mcp_providers.errors.RequestError`,
:class:`~mcp_providers.errors.ToolFailure`) pass through unchanged.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from mcp_providers._holders import Frozen
from mcp_providers._host.contain import contained
from mcp_providers._serve.state.coalesce import Coalescer
from mcp_providers._serve.steps.deadline import deadline_after, rest_within, stepping_deadline, within
from mcp_providers._serve.steps.health import UpstreamHealth, failure_of
from mcp_providers._sideeffects import Kind, Mode, Scope, enter_scope, exit_scope, stepped, watched_call
from mcp_providers._threads import DEFAULT_BOUND, ProviderThreads, Seat, leave_seat, take_seat
from mcp_providers.errors import (
    ProviderFailed,
    ReadTimeout,
    RequestError,
    SideEffectRefused,
    ToolFailure,
    UpstreamError,
)

log = logging.getLogger("mcp_providers.server")

T = TypeVar("T")


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Work(Frozen):
    """One piece of provider code to run.

    :param plugin: the plugin that contributed the provider.
    :param provider: the provider's name.
    :param what: for messages, e.g. ``"reading documcp://ssgs/hugo"``.
    :param target: the URI, tool or prompt the work is about.
    :param kind: what the side-effect scope calls it (``read``, ``completion``, ``prompt``, ``tool``).
    :param scoped: run inside the side-effect scope.
    """

    __slots__ = ("kind", "plugin", "provider", "scoped", "target", "timeout", "what")

    plugin: str
    provider: str
    what: str
    target: str
    kind: Kind
    scoped: bool
    timeout: float | None
    """Seconds it may take (``None``: ``server.read_timeout``); a task's run has its task's time."""

    def __init__(
        self,
        plugin: str,
        provider: str,
        what: str,
        target: str,
        kind: Kind = "read",
        scoped: bool = True,
        timeout: float | None = None,
    ) -> None:
        object.__setattr__(self, "plugin", plugin)
        object.__setattr__(self, "provider", provider)
        object.__setattr__(self, "what", what)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "scoped", scoped)
        object.__setattr__(self, "timeout", timeout)


class Invoker:
    """Runs provider code (see the module docstring).

    :param coalesce: whether identical reads in flight share one call.
    :param coalescer: what shares them when ``coalesce`` (default: one in this process; with
        ``[cluster]`` the runtime gives :class:`~mcp_providers._serve.state.shared_reads.SharedReads`).
    :param provider_threads: the most threads running provider code at once (``[server.limits]``).
    """

    def __init__(
        self,
        startup_failures: dict[str, str],
        read_timeout: float,
        coalesce: bool,
        modes: dict[str, Mode],
        coalescer: Coalescer[Any] | None = None,
        provider_threads: int = DEFAULT_BOUND,
    ) -> None:
        self._startup_failures = startup_failures
        self._modes = modes
        self._timeout = read_timeout
        self._coalescer: Coalescer[Any] | None = (coalescer or Coalescer()) if coalesce else None
        self.threads = ProviderThreads(provider_threads)
        """The threads provider code runs in, each counted until its function returns."""
        self.health = UpstreamHealth()
        """How each provider's calls ended (``/status``: upstream health)."""

    async def run(
        self,
        work: Work,
        call: Callable[[], Awaitable[T]],
        *,
        share: Hashable | None = None,
        custody: dict[str, Any] | None = None,
    ) -> T:
        """Run ``call()`` for ``work``; identical ``share`` keys in flight share one call. ``custody``
        receives what the side-effect scope recorded (``exemptions``, ``violations``) for the receipt.

        :raises UpstreamError: the provider failed to start.
        :raises ReadTimeout: the deadline passed (while the call waited for a free provider thread,
            the message says so and names who holds them; ``data.limit`` is ``provider_threads``).
        :raises ProviderFailed: the provider raised something other than a RequestError/ToolFailure.
        :raises SideEffectRefused: a step changed a hook, an import list or the locale (undone), or left a cache temp.
        """
        if work.provider in self._startup_failures:
            raise self._not_started(work)
        seconds = self._timeout if work.timeout is None else work.timeout
        deadline = stepping_deadline(seconds)  # counted from here, before the call starts
        scope: Scope | None = None
        left: SideEffectRefused | None = None  # a refusal found when the scope ended (a cache temp left)
        # The guards are entered in this one frame and left in its `finally`: the thread seat, the side-effect
        # scope, the deadline (its first step here), the containment (in the coalescer: reads share its outcome).
        seat, seat_token = take_seat(self.threads, work.plugin)
        try:
            if work.scoped:
                scope, token = enter_scope(work.provider, work.plugin, work.target, work.kind, self._mode(work))
            if share is not None and self._coalescer is not None:
                pending = self._coalescer.run(share, functools.partial(contained, call, work.provider))
            else:
                pending = contained(call, work.provider)  # a provider's SystemExit must not reach the event loop
            pending = pending if scope is None else stepped(pending, scope)  # hooks... compared at each step
            if deadline is None:  # not asyncio (trio): within's cancel scope encloses the call's own
                result: T = await within(pending, deadline_after(seconds))
            else:  # within's first step, in this frame: a timer only for a call that waits
                try:
                    first = pending.send(None)
                except StopIteration as done:
                    result = done.value
                else:
                    result = await rest_within(pending, first, deadline)
        except TimeoutError:  # the deadline, or a provider's own timeout: both read as the deadline
            timeout = self._timed_out(work, seat, seconds)
            self.health.ended(work.plugin, work.provider, failure_of(timeout))
            raise timeout from None
        except (RequestError, ToolFailure) as exc:
            self.health.ended(work.plugin, work.provider, failure_of(exc))
            raise
        except Exception:
            raise self._crashed(work, scope) from None
        finally:
            leave_seat(seat_token)
            if scope is not None:
                left = exit_scope(scope, token)
                if custody is not None and (scope.exemptions or scope.violations):
                    custody.update(scope.receipt_fields())
        self._ended(work, left)
        return result

    def _ended(self, work: Work, left: SideEffectRefused | None) -> None:
        """A call that returned has ended: ``left``, the refusal its scope's end found (a bytecode
        cache temp it left), is raised (enforce mode), else the call counts as healthy.

        :raises SideEffectRefused: ``left``."""
        self.health.ended(work.plugin, work.provider, None if left is None else failure_of(left))
        if left is not None:
            raise left

    def check(self, work: Work, function: Callable[[], None]) -> None:
        """Run ``function()``, a provider's synchronous read-like hook the pipeline calls itself
        (``check_watch``, before a watch is accepted), at once in the side-effect scope ``work``
        names, in the plugin's mode: what a read of the same URI may not do, it may not do either.
        No deadline, thread or coalescing: it runs on the caller's thread, without I/O by contract.

        :raises SideEffectRefused: it attempted a side effect (enforce mode), also when a library
            caught the refusal and raised something of its own, or left a bytecode cache temp.
        :raises BaseException: anything else it raised, unchanged (the wire maps it).
        """
        scope, token = enter_scope(work.provider, work.plugin, work.target, work.kind, self._mode(work))
        try:
            watched_call(scope, function)
        except SideEffectRefused:
            raise
        except BaseException:
            if scope.refused is not None:
                raise scope.refused from None  # a library caught the refusal and failed its own way
            raise
        finally:
            left = exit_scope(scope, token)
        if left is not None:
            raise left  # it left a bytecode cache temp (removed)

    def _mode(self, work: Work) -> Mode:
        """The side-effect mode of ``work``'s plugin (``"enforce"`` unless an operator set ``"warn"``)."""
        return self._modes.get(work.plugin, "enforce")

    def _not_started(self, work: Work) -> UpstreamError:
        self.health.ended(work.plugin, work.provider, "not started")
        return UpstreamError(
            f"provider {work.provider!r} failed to start, so it cannot serve {work.what}; "
            "the server log has the details"
        )

    def _crashed(self, work: Work, scope: Scope | None) -> Exception:
        """What a call that raised something else than a request error ends in (called in the ``except``)."""
        if scope is not None and scope.refused is not None:
            return scope.refused  # a library caught the refusal and failed its own way
        self.health.ended(work.plugin, work.provider, "crashed")
        log.exception("provider %r (plugin %r) failed %s", work.provider, work.plugin, work.what)
        return ProviderFailed(
            f"provider {work.provider!r} (plugin {work.plugin!r}) failed {work.what}; the server log has the details",
            data={"target": work.target},
        )

    def _timed_out(self, work: Work, seat: Seat, seconds: float) -> ReadTimeout:
        """The error for a call whose deadline passed (``seconds`` after it began)."""
        if seat.starved is not None:  # it waited for a thread all along: say so, not "did not finish"
            return ReadTimeout(seat.starved, data={**(seat.data or {}), "target": work.target})
        limit = "server.read_timeout" if work.timeout is None else "a task's time, [server.tasks] ttl_seconds"
        return ReadTimeout(
            f"provider {work.provider!r} did not finish {work.what} within {seconds:g} s "
            f"({limit}); try again later or ask the operator to raise the deadline"
        )
