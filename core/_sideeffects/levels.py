"""Which guards are in place, and entering a scope with them.

Two levels, each installed at most once per process (idempotent, thread-safe):

- **Scoped** (:func:`install_scoped`): the PEP 578 audit hook, which judges files and processes
  for code running in a scope (the context variable) and returns after one set lookup for any other
  event; and the files of the host's ``logging.FileHandler``\\ s, recorded as expected writes by
  looking at the loggers when guarded calls start and stop (:mod:`.logfiles`).
  It patches nothing: no module, class or loop changes. An embedded composition (``mount()``,
  ``attach()``, ``compose()`` run by a host) gets this by default; HTTP is then judged by the
  client the framework hands providers (:func:`mcp_providers.http.client`).
- **Process-wide** (:func:`install`): the scoped level plus every patch: ``socket``/``ssl`` send
  methods, ``os.write``/``writev``/``sendfile``, ``os.open``, ``open``/``io.open`` and the
  file-tree calls (held under the scope's lock), ``os.mkfifo``/``mknod``,
  ``_posixsubprocess.fork_exec``, ``logging.FileHandler.__init__``, ``threading.Thread.start``
  and ``ThreadPoolExecutor.submit`` (work a call hands to a thread follows its scope:
  :mod:`.threads`), the event loops' settings (:mod:`.loops`), ``http.client``, the
  ``httpcore2``/``httpcore``/``aiohttp`` clients, and a ``sys.meta_path`` finder that patches those
  when first imported; references to the replaced functions that modules saved before are
  given the guards too (:mod:`.saved`). ``serve`` installs it (the CLI owns its process), and so does an embedder
  who opts in (``mount(..., side_effects="enforce")``, ``[server] embedded_side_effects``).
  Hooks and patches cannot be removed; nothing here ever undoes them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextvars import Token
from typing import Any

from mcp_providers._sideeffects import assigned, bytecode, logfiles, lowlevel
from mcp_providers._sideeffects.clients import patch_aiohttp, patch_http_client, patch_httpcore
from mcp_providers._sideeffects.files import audit_hook, guarded_os_open, judge_open, patch_unaudited
from mcp_providers._sideeffects.imports import note_guarded, patch_on_import
from mcp_providers._sideeffects.logfiles import call_began, call_ended, patch_logging, record_log_files, settle
from mcp_providers._sideeffects.loops import patch_loops
from mcp_providers._sideeffects.process import guarded_homes, patch_process_state
from mcp_providers._sideeffects.saved import redirect_saved
from mcp_providers._sideeffects.scope import Kind, Mode, Scope, scope_lock, scope_var
from mcp_providers._sideeffects.threads import patch_threads
from mcp_providers._sideeffects.wire import patch_wire
from mcp_providers.errors import SideEffectRefused

_OPTIONAL: dict[str, Callable[[Any], None]] = {
    "httpcore": patch_httpcore,
    "aiohttp": patch_aiohttp,
}

_hooked = False  # the audit hook is in place
_installed = False  # every process-wide guard is in place
_install_lock = threading.Lock()


def install_scoped() -> None:
    """Install the audit hook once and record the log files configured now; patch nothing.

    A host's own code pays one set lookup per audited event (``open``, ``socket.connect`` ...) and
    nothing per socket send. Called at each composition's start: the host's log handlers attached
    since are recorded (and so are those attached later, when the next guarded call starts, see
    :mod:`.logfiles`).
    """
    global _hooked
    with _install_lock:
        record_log_files()
        if _hooked:
            return
        tempfile.gettempdir()  # its first call writes a probe file: never let that happen in a scope
        bytecode.record_prefix()  # the cache folders' prefix as the process has it now, never the live one
        sys.addaudithook(audit_hook)
        _hooked = True


def install() -> None:
    """Install every process-wide guard, once per process: the audit hook and all the patches.

    The HTTP libraries (``httpcore2``, and ``httpcore`` and ``aiohttp`` where installed) are patched
    now if imported, else the moment they first are (:func:`patch_on_import`), so an import inside
    a read finds them guarded. ``serve`` calls it at start-up (through the runtime), and so does an
    embedding that opted in; :func:`side_effect_scope` calls it on first use.
    """
    global _installed
    install_scoped()
    with _install_lock:
        if _installed:
            return
        patch_on_import("httpcore2", patch_httpcore, optional=False)  # the SDK's own client: must be guarded
        patch_http_client()
        patch_wire()
        patch_unaudited()
        patch_process_state()
        assigned.patch_locale()
        patch_logging(judge_open)
        patch_threads()
        patch_loops()
        lowlevel.serialize_tree_changes(scope_lock)
        if not getattr(os.open, "__mcp_providers_guarded__", False):
            guarded_os_open.__wrapped__ = os.open  # type: ignore[attr-defined]
            guarded_os_open.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
            lowlevel.replace("open", os.open, guarded_os_open)  # os.open and posix.open
        for name, patch in _OPTIONAL.items():
            patch_on_import(name, patch)
        note_guarded(_GUARDED_MODULES)
        _installed = True
        _saved_pending[0] = True  # redirected at the first scope: not on serve's way to its first answer


_GUARDED_MODULES = (
    "os", "posix", "io", "socket", "_socket", "ssl", "http.client", "urllib.request", "subprocess",
    "_posixsubprocess", "threading", "_thread", "signal", "_signal", "logging", "logging.handlers",
    "asyncio.events", "asyncio.base_events", "faulthandler", "fcntl", "termios", "resource",
    "tracemalloc", "_locale", "locale", "ctypes", "_ctypes", "concurrent.futures.thread",
)  # fmt: skip
"""Modules the guards patch at install whose ``sys.modules`` entry a read may not drop and import
again (:func:`~mcp_providers._sideeffects.imports.note_guarded` keeps those holding a guard)."""

_saved_pending = [False]
"""Whether references saved before :func:`install` still wait to be redirected (:func:`_redirect`):
about 70 ms of heap walking on ``serve``'s start-up heap, done where it matters, before the first
provider code runs in a scope, rather than before the first answer (issue 43)."""


def _redirect() -> None:
    with _install_lock:
        if _saved_pending[0]:
            redirect_saved(_guarded_homes())
            _saved_pending[0] = False


def _guarded_homes() -> tuple[Any, ...]:
    """The modules and classes whose functions :func:`install` replaced, for :func:`.saved.redirect_saved`."""
    import _posixsubprocess
    import builtins
    import io
    import socket
    import ssl

    return (
        *lowlevel.HOMES,
        io,
        sys.modules["_io"],
        builtins,
        _posixsubprocess,
        socket.socket,
        ssl.SSLSocket,
        ssl.SSLObject,
        *guarded_homes(),
    )


def process_wide() -> bool:
    """Whether :func:`install` has run in this process (every patch is in place)."""
    return _installed


def enter_scope(provider: str, plugin: str, target: str, kind: Kind, mode: Mode) -> tuple[Scope, Token[Scope | None]]:
    """Enter a side-effect scope without a context manager (the server's per-read path); pair
    every call with :func:`exit_scope` in a ``finally``. Installs the scoped level if
    nothing is installed yet (a composition's start normally has); never the process-wide one."""
    if not _hooked:
        install_scoped()
    if _saved_pending[0]:
        _redirect()
    scope = Scope(provider, plugin, target, kind, mode)
    if not _installed:  # process-wide, the count is never read (logfiles.call_began): not called
        call_began()  # before the provider's code runs: the host's log handlers made since are recorded
    if logfiles.unsettled[0]:  # one list read per call when no handler was recorded since (most calls)
        settle()  # the rollover settings of host log handlers recorded since, before the call's code runs
    return scope, scope_var.set(scope)


def exit_scope(scope: Scope, token: Token[Scope | None]) -> SideEffectRefused | None:
    """Leave the scope :func:`enter_scope` entered: remove the bytecode cache temps the call left
    (:func:`.bytecode.sweep`), delete its scratch directory, if made.

    :returns: the refusal the call must be answered with when it left a cache temp (enforce
        mode), else None. Raised by nothing here: the caller raises it once its own clean-up ran
        (unless the call failed already)."""
    try:
        scope_var.reset(token)
        left = bytecode.sweep(scope) if scope.cache_temps else None  # most calls make none: no call
        scope.close()
    finally:
        if not _installed:  # as in enter_scope (a call begun before install leaves the unread count)
            call_ended()
    return left


@contextlib.contextmanager
def side_effect_scope(
    *, provider: str, plugin: str, target: str, kind: Kind = "read", mode: Mode = "enforce"
) -> Iterator[Scope]:
    """Run the body (sync or async code, ``await`` included) in a side-effect scope, with every
    process-wide guard installed (:func:`install`): for tests, which own their process and want
    to see provider code refused as ``serve`` refuses it.

    :param provider: the provider's name, for errors and logs (``"ssg-catalog"``).
    :param plugin: the plugin's entry-point name (``"ssg_catalog"``).
    :param target: the URI read, the template or prompt completed, the prompt or tool name.
    :param kind: ``"read"``, ``"completion"``, ``"prompt"`` or ``"tool"`` (effects="none").
    :param mode: ``"enforce"`` refuses; ``"warn"`` logs and records in ``Scope.violations``.
    :returns: the :class:`Scope`; read ``exemptions`` and ``violations`` after the body.
    :raises ValueError: for an unknown ``mode``.
    :raises SideEffectRefused: the body left a bytecode cache temp (enforce mode; removed), or
        changed a hook, an import list or the locale (undone: :mod:`.assigned`).
    """
    if not _installed:
        install()
    scope, token = enter_scope(provider, plugin, target, kind, mode)
    try:
        before = assigned.snapshot()
        try:
            yield scope
        finally:
            assigned.judge(scope, before)  # the body is the read's own code: compared as one step
    finally:
        left = exit_scope(scope, token)
    if left is not None:
        raise left
