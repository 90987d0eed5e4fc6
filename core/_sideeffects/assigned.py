"""Process state a read changes by assignment, which raises no audit event and calls nothing a
guard could wrap: judged by comparing it before and after the read's own code runs (both levels).

What is compared (:func:`snapshot`), and what counts as a change:

- The process's hooks, each by identity: ``sys.excepthook``, ``sys.unraisablehook``,
  ``sys.displayhook``, ``sys.breakpointhook`` and ``threading.excepthook``. Each sees every later
  failure (or ``breakpoint()``) of the process, whoever's.
- The import system's lists ``sys.meta_path``, ``sys.path_hooks`` and ``sys.path``: the list
  object (replaced by one with other entries; an equal copy changes nothing), and its entries.
  Entries added at the end pass: they are searched last, so they take no
  import from the finder, hook or folder that served it before (``six`` appends its importer to
  ``sys.meta_path`` when first imported, and a read may be its first user). Any other change (an
  entry inserted before others, replaced or removed) makes later imports load other code.
- ``sys.path_importer_cache``: the dict object (replaced by one with other entries). Its entries
  are the import system's own (it adds one per folder it searches; ``importlib.invalidate_caches()``
  drops some), so they are not compared: a finder put in by hand under a cached folder is not seen.
- The locale, process-wide only: ``locale.setlocale`` (``_locale.setlocale``) is wrapped
  (:func:`patch_locale`); the first call in a scope that sets it records the locale it had
  (``LC_ALL``), and the comparison asks whether it is back. ``locale.getpreferredencoding()`` sets
  and restores it within one call, so it passes. Querying the locale costs about 9,000
  instructions (glibc builds the composite name), so it is asked only after such a call.

When, and whose: a change is the read's when it happens while the read's own code runs on its
thread: each step of the read's coroutine on the event loop (:func:`stepped`, between two
``send``/``throw`` of it: nothing else runs on the loop meanwhile), and a plain-function provider's
whole call in its worker thread (:func:`watched_call`). What changes while the read waits (the
host's code, a concurrent read, on the loop) is not its doing: the next step compares from there.
So the host may set its hooks whenever it likes, and two reads on one loop never blame each
other. Not told apart: code on another thread (the host's; the loop itself, while a plain
function runs in its worker; a concurrent read's worker) that changes the same state while a step
or such a function runs is blamed on that read; a task or thread the read starts, whose own steps
run outside the read's, is not followed.

Cost: each step pays two probes of ``sys``'s dict (one C call each) and a comparison, about
9,000 instructions together; the lists are copied only after they changed. A served read of two
steps went from 959,000 to 977,000 instructions (+1.8 %; cachegrind, in-memory client).

A change is restored (in ``enforce`` mode; ``warn`` only records it) before the read is refused:
the hook set back, the list given back its entries (and put back in ``sys`` if replaced), the
locale set back. A read that sets a hook and puts it back within one step passes.
"""

from __future__ import annotations

import _locale
import locale
import operator
import sys
import threading
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

from mcp_providers._sideeffects import lowlevel
from mcp_providers._sideeffects.scope import Scope, scope_var

T = TypeVar("T")

HOOKS = ("excepthook", "unraisablehook", "displayhook", "breakpointhook")
"""``sys`` hooks compared by identity (``threading.excepthook`` too, see :func:`snapshot`)."""
LISTS = ("meta_path", "path_hooks", "path")
"""``sys`` lists whose entries may only grow at their end."""

_SYS, _THREADING = vars(sys), vars(threading)  # read from the dicts: a module attribute costs a type lookup first
_probe = operator.itemgetter(*HOOKS, *LISTS, "path_importer_cache", *LISTS)
"""``_probe(_SYS)``: the ``sys`` objects, then the three lists again (compared by their entries), in one C call."""

State = tuple[tuple[Any, ...], Any]
"""``(probe with each list's entries copied at its end, threading.excepthook)``: what
:func:`snapshot` saw; ``_probe(_SYS) == state[0]`` compares the objects by identity (equal ones
pass) and the lists by their entries."""

_last: State = ((), None)
"""The last snapshot made: handed out again while nothing changed (no copy, no allocation)."""


def snapshot() -> State:
    """The watched state now: one ``sys`` probe and one comparison (the lists are copied only
    when they changed since the last snapshot, whoever changed them)."""
    global _last
    now, hook, last = _probe(_SYS), _THREADING["excepthook"], _last
    if now != last[0] or hook is not last[1]:
        last = _last = ((*now[:8], *(list(entries) for entries in now[8:])), hook)
    return last


def changes(before: State) -> list[tuple[str, Callable[[], None]]]:
    """``[(what was attempted, how to undo it)]`` since ``before`` (empty: nothing changed)."""
    if _probe(_SYS) == before[0] and _THREADING["excepthook"] is before[1]:
        return []
    objects, entries, excepthook = before[0][:8], before[0][8:], before[1]
    now = _probe(_SYS)
    found: list[tuple[str, Callable[[], None]]] = []
    for i, name in enumerate(HOOKS):
        if now[i] is not objects[i]:
            found.append((f"setting sys.{name} (a hook of the whole process)", _setter(sys, name, objects[i])))
    if threading.excepthook is not excepthook:
        found.append(
            ("setting threading.excepthook (a hook of every thread)", _setter(threading, "excepthook", excepthook))
        )
    for i, name in enumerate(LISTS, start=len(HOOKS)):
        kept, was = now[i], entries[i - len(HOOKS)]
        if kept is not objects[i]:
            found.append(
                (f"replacing sys.{name} (later imports would load other code)", _relist(name, objects[i], was))
            )
        elif kept[: len(was)] != was:
            found.append(
                (f"changing entries of sys.{name} (later imports would load other code)", _relist(name, kept, was))
            )
    if now[7] is not objects[7]:
        cache = objects[7]
        found.append(("replacing sys.path_importer_cache", _setter(sys, "path_importer_cache", cache)))
    return found


def _setter(module: Any, name: str, value: Any) -> Callable[[], None]:
    return lambda: setattr(module, name, value)


def _relist(name: str, original: list[Any], entries: list[Any]) -> Callable[[], None]:
    def undo() -> None:
        original[:] = entries
        setattr(sys, name, original)

    return undo


def judge(scope: Scope, before: State) -> None:
    """Refuse (enforce: after undoing every one) or record (warn) what changed since ``before``,
    and the locale the scope set (:func:`patch_locale`).

    :raises SideEffectRefused: something changed (enforce mode)."""
    if scope.locale is None and _probe(_SYS) == before[0] and _THREADING["excepthook"] is before[1]:
        return  # the common case, in as few instructions as it takes
    found = changes(before)
    if scope.locale is not None:
        found += _locale_changed(scope)
    if not found:
        return
    if scope.mode == "enforce":
        for _, undo in found:
            undo()
    for attempted, _ in found:
        scope.attempt(f"{attempted}; restored" if scope.mode == "enforce" else attempted, "process")


def _locale_changed(scope: Scope) -> list[tuple[str, Callable[[], None]]]:
    was, scope.locale = scope.locale, None  # the next step records afresh
    now = _original_setlocale[0](_locale.LC_ALL, None)
    if now == was:
        return []

    def undo() -> None:
        _original_setlocale[0](_locale.LC_ALL, was)

    return [(f"setting the locale to {now!r} (the whole process's)", undo)]


def watched_call(scope: Scope | None, function: Callable[[], T]) -> T:
    """``function()`` with the state compared around it, when ``scope`` is a scope.

    :raises SideEffectRefused: it changed the state (enforce mode), whatever it returned or raised."""
    if scope is None:
        return function()
    before = snapshot()
    try:
        return function()
    finally:
        judge(scope, before)


def in_scope(function: Callable[[], T]) -> T:
    """:func:`watched_call` in the calling context's scope (a worker thread's, say), if any."""
    return watched_call(scope_var.get(), function)


@types.coroutine
def stepped(coroutine: Coroutine[Any, Any, T], scope: Scope) -> Generator[Any, Any, T]:
    """Await ``coroutine`` with the state compared around each of its steps (see the module
    docstring); a refusal closes it.

    :raises SideEffectRefused: a step changed the state (enforce mode)."""
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        before = snapshot()
        try:
            value = coroutine.send(sent) if thrown is None else coroutine.throw(thrown)
        except StopIteration as done:  # its last step, judged too
            judge(scope, before)
            return done.value  # type: ignore[no-any-return]
        except BaseException:
            judge(scope, before)
            raise
        try:
            judge(scope, before)
        except BaseException:
            coroutine.close()
            raise
        try:
            sent, thrown = (yield value), None
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:  # thrown in by the task (a cancellation): passed on
            sent, thrown = None, exc


_original_setlocale: list[Callable[..., str]] = []


def patch_locale() -> None:
    """Wrap ``_locale.setlocale`` (``locale.setlocale`` calls it as ``locale._setlocale``): the
    first call in a scope that sets the locale records the one it had; once per process."""
    original = _locale.setlocale
    if getattr(original, "__mcp_providers_guarded__", False):
        return
    _original_setlocale.append(original)

    def guarded(category: int, value: Any = None) -> str:
        scope = scope_var.get()
        if scope is not None and value is not None and scope.locale is None:
            scope.locale = original(_locale.LC_ALL, None)
        return original(category, value)

    guarded.__name__, guarded.__doc__ = "setlocale", original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    guarded.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    lowlevel.replace("setlocale", original, guarded, (_locale,))
    lowlevel.replace("_setlocale", original, guarded, (locale,))
