"""The side-effect scope: no writes while a resource is read, a completion or prompt is rendered,
or a tool declared ``effects="none"`` runs.

Design note
-----------
The core wraps each such call in :func:`side_effect_scope`. The scope is a
:class:`contextvars.ContextVar`, so it holds for the code running in the call's context and for
work that *inherits* that context: coroutines it awaits, asyncio/anyio tasks it starts,
``anyio.to_thread``/``asyncio.to_thread`` workers and anything run through
``contextvars.copy_context()``. Such work stays in the scope even if it outlives the call.
Concurrent requests, and work that was already running outside the call (a task a provider's
``lifespan()`` started, a thread pool fed with ``loop.run_in_executor`` or
``ThreadPoolExecutor.submit``, a bare ``threading.Thread``, which starts with an empty context),
are not in it.

What is refused in the scope (``SideEffectRefused``, -32008, rule ``side-effect-in-resource-read``):

* HTTP: any method but GET, HEAD and OPTIONS, and a GET/HEAD/OPTIONS that carries a body, in
  three layers, each judging before anything is sent. (1) The client libraries, for messages
  that name the URL asked for: the connection pool of ``httpcore2`` (every ``httpx2`` client,
  transport, proxy, ``mounts=`` entry and environment proxy) and of ``httpcore`` (plain
  ``httpx``) when installed, ``http.client.HTTPConnection.putrequest``/``putheader`` (``urllib``,
  ``urllib3``, ``requests``) and ``aiohttp.ClientSession`` when installed. (2) Every ``httpcore2``
  connection class below the pool (``HTTPConnection``, ``HTTP11Connection``, ``HTTP2Connection``,
  sync and async), for a connection used bare. (3) The wire: every HTTP/1.x request head in the
  bytes a ``socket.socket`` (``send``, ``sendall``, ``sendto``, ``sendmsg``: asyncio's
  transports, ``makefile()``, ``http.client``'s raw ``send()``) or TLS object (``ssl.SSLSocket``,
  ``ssl.SSLObject``, the memory-BIO object asyncio's and anyio's TLS write through) sends: a
  request line with another method, any method's case, or a ``Content-Length``/``Transfer-Encoding``
  on a safe one, is refused when its line ends, so a head split over several sends or pipelined
  after a GET never reaches the server whole. ``CONNECT`` (a proxy tunnel) passes; what goes
  through the tunnel is judged in turn. A hand-written HTTP/2 preface is refused (its binary
  frames are not parsed; HTTP/2 is judged in ``httpcore2``'s connection). What a layer judged is
  not judged again below it, so a request let through (:func:`exempt`, warn mode) is recorded once.
* Files, through a PEP 578 audit hook: opens with write, append, create or truncate flags,
  removal, rename/replace, mkdir/rmdir, chmod/chown/chflags, truncate, utime, links, extended
  attributes, ``shutil`` copies/moves/rmtree/archives, and ``os.chdir`` (process-wide). A path is
  judged where the OS will open it: symlinks and ``..`` resolved, a ``dir_fd`` applied (the
  "open" audit event carries none, so ``os.open`` is wrapped to tell it; a relative ``os.open``
  through a reference the wrapper does not cover, ``posix.open`` say, lands in an unknown
  directory and is refused). Allowed, for *what* is written and never for who is on the stack (a
  provider can run any code under any module name): paths under the call's scratch directory
  (:func:`scratch_dir`); the import system's bytecode caches, that is PEP 3147/488 ``.pyc`` paths
  (and the temporary ``<cache>.<id>`` file they are written through) of a source file that
  exists, and ``__pycache__`` folders beside ``.py`` files (or under ``sys.pycache_prefix``); and
  the file of a ``logging.FileHandler`` made outside any scope, opened in the handler's own mode,
  with its rotations (``app.log.1``: renamed and removed by rotating handlers). A handler made in
  the scope is judged like any open.
* Processes: ``subprocess``, ``os.system``, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn*``,
  ``os.fork``/``forkpty``, ``pty.spawn``.

MCP over HTTP is a POST whatever the method, so a POST whose body is a JSON-RPC message (or batch)
of :data:`READ_SAFE_MCP_METHODS` only passes the client-library layer: forwarding a read to an
upstream MCP server (``resources/read``) changes no more than the GET an HTTP provider would make;
MCP defines these methods as reading. Judged on the exact bytes sent (httpx's in-memory body), so
a tool call or anything else in the same POST is refused as before.

A library that catches the refusal and fails its own way (asyncio's transports close the
connection, ``urllib`` wraps it in ``URLError``) does not hide it: :attr:`Scope.refused` keeps it
and the server answers with it.

Not covered: C extensions that write or connect without raising audit events (sqlite3, most
database drivers), bytes sent through ``_socket.socket`` or ``posix.write`` directly (``os.write``,
``os.writev`` and ``os.sendfile`` on a socket are judged: :mod:`._sideeffects_lowlevel`), data
asyncio buffers while a socket is full and sends later outside the call's context, writes through
a file descriptor opened before the scope (logging to an open handler), a symlink swapped between
the check and the open by code outside the scope, HTTP libraries other than those above, and work
outside the call's context (see above). A plugin is trusted code; this catches mistakes and the
usual ways round them, it is not a sandbox.

:func:`exempt` lets HTTP requests that change no served data through (an OAuth token POST); each
is logged at INFO and recorded in :attr:`Scope.exemptions`, which the core puts in the receipt.
In ``mode="warn"`` (an operator's migration switch per plugin) nothing is refused: each attempt is
logged at WARNING and recorded in :attr:`Scope.violations`.

Cost: the audit hook is installed once per process (hooks cannot be removed) and does one dict
lookup for every audited event in the process, plus one ContextVar read for the few events it
judges; the HTTP patches add one ContextVar read per request, per socket send and per ``os.open``
outside a scope (a Python call around the C one). In a scope, bytes sent below a guarded client
are scanned line by line (a few microseconds per send); the project's clients skip the scan. Entering and
leaving a scope is one ContextVar set/reset and a small object; the scratch directory is made
only when asked for. ``benchmarks/sideeffects.py`` measures it against a read without it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from typing import Any, Literal

from mcp_providers import _sideeffects_lowlevel
from mcp_providers.errors import SideEffectRefused

log = logging.getLogger("mcp_providers.sideeffects")

RULE = "side-effect-in-resource-read"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods RFC 9110 (section 9.2.1) defines as safe: allowed in a scope when they carry no body."""
READ_SAFE_MCP_METHODS = frozenset(
    {
        "resources/read", "resources/list", "resources/templates/list", "tools/list", "prompts/list",
        "prompts/get", "completion/complete", "ping", "notifications/cancelled",
    }
)  # fmt: skip
"""MCP methods that read (MCP 2025-11-25 and 2026-07-28): a POST carrying only these passes a scope,
so a provider may forward a read to an upstream MCP server over streamable HTTP."""
_MCP_BODY_LIMIT = 1 << 20

Mode = Literal["enforce", "warn"]
Kind = Literal["read", "completion", "prompt", "tool"]

_scratch_lock = threading.Lock()  # scratch directories are rare: one lock for all scopes
_current: ContextVar[Scope | None] = ContextVar("mcp_providers_side_effect_scope", default=None)
_exempt: ContextVar[str | None] = ContextVar("mcp_providers_side_effect_exempt", default=None)

_DOING = {"read": "reading", "completion": "completing", "prompt": "rendering prompt", "tool": "running tool"}
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
    """

    __slots__ = (
        "_passed",
        "_scratch",
        "exemptions",
        "kind",
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
        self.refused: SideEffectRefused | None = None  # the last refusal, even if a library swallowed it
        self._passed: list[tuple[str, str]] | None = None  # (verb, path) http.client let through, made when needed
        self.lock = threading.RLock()
        """Held by a write-open or a file-tree change of the call from its check to its end, so the
        call's own threads cannot swap a checked path for a symlink in between (:mod:`._sideeffects_lowlevel`)."""

    def scratch_dir(self) -> str:
        """This call's private temporary directory (absolute, resolved), made on first use.

        Anything under it may be written in the scope; it is deleted when the scope ends.
        """
        with _scratch_lock:
            if self._scratch is None:
                token = _current.set(None)  # making it is the core's write, not the provider's
                try:
                    self._scratch = os.path.realpath(tempfile.mkdtemp(prefix="mcp-providers-scratch-"))
                finally:
                    _current.reset(token)
            return self._scratch

    def receipt_fields(self) -> dict[str, list[dict[str, Any]]]:
        """``{"exemptions": [...], "violations": [...]}`` for a receipt, each key only when non-empty."""
        out = {}
        if self.exemptions:
            out["exemptions"] = list(self.exemptions)
        if self.violations:
            out["violations"] = list(self.violations)
        return out

    def _close(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def _under_scratch(self, path: str) -> bool:
        s = self._scratch
        return s is not None and (path == s or path.startswith(s + os.sep))

    def attempt(
        self, attempted: str, category: str, *, error: type[SideEffectRefused] = SideEffectRefused, **extra: Any
    ) -> None:
        """Refuse ``attempted`` (enforce) or record and log it (warn).

        :param attempted: what was tried, for people: ``"a POST to http://host/path"``.
        :param category: ``"http"``, ``"file"`` or ``"process"``.
        :raises SideEffectRefused: in enforce mode, with ``data`` = provider, plugin, kind,
            target (also under ``uri``/``tool``/``prompt``/``ref``), attempted, rule and ``extra``.
        """
        refused = self.mode == "enforce"
        self.violations.append({"attempted": attempted, "category": category, "refused": refused, **extra})
        where = f"provider {self.provider!r} (plugin {self.plugin!r}) is {_DOING[self.kind]} {self.target}"
        if not refused:
            log.warning("%s: %s allowed (warn mode) while %s", RULE, attempted, where)
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
        self.refused = error(f"{RULE}: {attempted} was refused while {where}; {advice}", data=data)
        raise self.refused


@contextlib.contextmanager
def side_effect_scope(
    *, provider: str, plugin: str, target: str, kind: Kind = "read", mode: Mode = "enforce"
) -> Iterator[Scope]:
    """Run the body (sync or async code, ``await`` included) in a side-effect scope.

    :param provider: the provider's name, for errors and logs (``"ssg-catalog"``).
    :param plugin: the plugin's entry-point name (``"ssg_catalog"``).
    :param target: the URI read, the template or prompt completed, the prompt or tool name.
    :param kind: ``"read"``, ``"completion"``, ``"prompt"`` or ``"tool"`` (effects="none").
    :param mode: ``"enforce"`` refuses; ``"warn"`` logs and records in ``Scope.violations``.
    :returns: the :class:`Scope`; read ``exemptions`` and ``violations`` after the body.
    :raises ValueError: for an unknown ``mode``.
    """
    scope, token = enter_scope(provider, plugin, target, kind, mode)
    try:
        yield scope
    finally:
        exit_scope(scope, token)


def enter_scope(provider: str, plugin: str, target: str, kind: Kind, mode: Mode) -> tuple[Scope, Token[Scope | None]]:
    """Enter a side-effect scope without a context manager (the server's per-read path); pair
    every call with :func:`exit_scope` in a ``finally``. :func:`side_effect_scope` is the same."""
    if not _installed:
        install()
    scope = Scope(provider, plugin, target, kind, mode)
    return scope, _current.set(scope)


def exit_scope(scope: Scope, token: Token[Scope | None]) -> None:
    """Leave the scope :func:`enter_scope` entered (and delete its scratch directory, if made)."""
    _current.reset(token)
    if scope._scratch is not None:
        scope._close()


def _scope_lock() -> threading.RLock | None:
    scope = _current.get()
    return scope.lock if scope is not None else None


def current_scope() -> Scope | None:
    """The scope the calling context is in, or ``None``."""
    return _current.get()


def scratch_dir() -> str:
    """The current call's scratch directory (see :meth:`Scope.scratch_dir`).

    :raises RuntimeError: outside a scope (nothing limits writes there, so use any directory).
    """
    scope = _current.get()
    if scope is None:
        raise RuntimeError("scratch_dir() is only available inside a read, completion, prompt or effects='none' tool")
    return scope.scratch_dir()


@contextlib.contextmanager
def exempt(reason: str) -> Iterator[None]:
    """Let non-safe HTTP requests through in the body, for requests that change no served data.

    The one legitimate use is authentication (an OAuth token POST). Each request let through is
    logged at INFO and recorded in the scope's ``exemptions`` (``{"reason", "method", "host"}``).
    Files and processes stay refused. Outside a scope it changes nothing.
    """
    token = _exempt.set(reason)
    try:
        yield
    finally:
        _exempt.reset(token)


class _RefusedOnTheWire(SideEffectRefused, ConnectionError):
    """The socket guard's refusal. Also a ``ConnectionError``, so a library that takes a failed send
    for a lost connection (asyncio's transports) closes it quietly; the read fails with the refusal
    all the same (the invoker raises :attr:`Scope.refused` whatever the provider then raised)."""


def check_http(method: str, url: str, *, has_body: bool) -> bool:
    """Judge one HTTP request about to be sent; a no-op outside a scope.

    :param method: the request method, any case.
    :param url: the absolute URL (its query is left out of messages and records).
    :param has_body: whether the request carries a body (Content-Length > 0 or chunked).
    :returns: ``True`` when a non-safe request (or a body on a safe one) was let through, by
        :func:`exempt` or in ``mode="warn"``, and recorded; ``False`` when nothing needed judging.
    :raises SideEffectRefused: a non-safe method, or a body on a safe one, in enforce mode.
    """
    return _judge_http(method, url, has_body, SideEffectRefused)


def _judge_http(method: str, url: str, has_body: bool, error: type[SideEffectRefused]) -> bool:
    scope = _current.get()
    if scope is None:
        return False
    verb = method.upper()
    if verb in SAFE_METHODS and not has_body:
        return False
    shown = url.split("?", 1)[0]
    host = shown.split("://", 1)[-1].split("/", 1)[0]
    reason = _exempt.get()
    if reason is not None:
        scope.exemptions.append({"reason": reason, "method": verb, "host": host})
        log.info(
            "provider %r %s %s: %s to %s exempted: %s",
            scope.provider,
            _DOING[scope.kind],
            scope.target,
            verb,
            host,
            reason,
        )
        return True
    attempted = f"a {verb} with a body to {shown}" if verb in SAFE_METHODS else f"a {verb} to {shown}"
    if error is _RefusedOnTheWire:  # below every client: say so, it is where the client's guard was missed
        scope.attempt(attempted, "http", error=error, method=verb, host=host, layer="wire")
    else:
        scope.attempt(attempted, "http", error=error, method=verb, host=host)
    return True


# -- the audit hook (files and processes) -------------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.spawn",
        "os.posix_spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
        "os.startfile",
    }
)
# event -> ((index of a written path, index of its dir_fd or -1), ...)
_FILE_EVENTS: dict[str, tuple[tuple[int, int], ...]] = {
    "open": ((0, -1),),
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),),
    "os.rename": ((0, 2), (1, 3)),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.chflags": ((0, -1),),
    "os.truncate": ((0, -1),),
    "os.utime": ((0, 3),),
    "os.symlink": ((1, 2),),
    "os.link": ((0, 2), (1, 3)),  # the source too: a hard link into the scratch folder writes through
    "os.setxattr": ((0, -1),),
    "os.removexattr": ((0, -1),),
    "os.chdir": ((0, -1),),
    "shutil.rmtree": ((0, 1),),
    "shutil.move": ((0, -1), (1, -1)),
    "shutil.copyfile": ((1, -1),),
    "shutil.copymode": ((1, -1),),
    "shutil.copystat": ((1, -1),),
    "shutil.copytree": ((1, -1),),
    "shutil.chown": ((0, -1),),
    "shutil.make_archive": ((0, -1),),
    "shutil.unpack_archive": ((1, -1),),
}
_JUDGED = frozenset(_FILE_EVENTS) | _PROCESS_EVENTS
_os_open_call = threading.local()  # .pending = (path object, dir_fd) while the guarded os.open runs
_log_files: dict[str, str] = {}  # resolved path -> mode, of logging.FileHandlers made outside any scope


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Runs for every audited event in the process: one set lookup when it is not ours.
    if event not in _JUDGED:
        return
    scope = _current.get()
    if scope is None:
        return
    if event in _PROCESS_EVENTS:
        detail = _short(args[:2])
        scope.attempt(f"starting a process ({event}{' ' + detail if detail else ''})", "process", event=event)
        return
    if event == "open" and not _opens_for_writing(args):
        return  # read-only open: the common case
    _judge_file(scope, event, args)


def _opens_for_writing(args: tuple[Any, ...]) -> bool:
    flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
    mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
    return bool(flags & _WRITE_FLAGS) or any(c in mode for c in "wax+")


def _judge_file(scope: Scope, event: str, args: tuple[Any, ...]) -> None:
    paths = []
    for index, dir_fd_index in _FILE_EVENTS[event]:
        raw = args[index] if index < len(args) else None
        if raw is None or (isinstance(raw, int) and event == "open"):
            continue  # open(fd): a descriptor opened before, not a new file-system write
        if event == "open" and args[1] is None:  # os.open: its event has no dir_fd, the guarded call does
            paths.append(_resolve_os_open(raw))
            continue
        dir_fd = args[dir_fd_index] if dir_fd_index >= 0 and dir_fd_index < len(args) else None
        paths.append(_resolve(raw, dir_fd))
    if not paths:
        return
    if event != "os.chdir" and all(scope._under_scratch(p) for p in paths):
        return
    if _expected_write(event, args, paths):
        return
    shown = " -> ".join(paths)
    if event == "open":
        attempted = f"opening {shown} for writing (mode {args[1] or 'os.open'!s}, flags {args[2]:#o})"
    elif event == "os.chdir":
        attempted = f"changing the working directory to {shown} (process-wide)"
    else:
        attempted = f"{event} of {shown}"
    scope.attempt(attempted, "file", event=event, paths=paths)


def _resolve(raw: Any, dir_fd: Any) -> str:
    """An absolute, symlink-resolved path for an audited path argument (an fd becomes its target)."""
    try:
        if isinstance(raw, int):
            return os.readlink(f"/proc/self/fd/{raw}")
        path = os.fsdecode(raw)
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(path):
            path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
        return os.path.realpath(path)
    except (OSError, TypeError, ValueError):
        return repr(raw)  # unresolvable: never under the scratch directory


def _resolve_os_open(raw: Any) -> str:
    """Where an ``os.open`` event's path lands: the "open" audit event carries no ``dir_fd``, so a
    relative path is only resolvable when the guarded ``os.open`` (:func:`_guarded_os_open`) said
    which directory it is relative to; through an unguarded reference it lands somewhere unknown."""
    pending = getattr(_os_open_call, "pending", None)
    if pending is not None and pending[0] is raw:
        return _resolve(raw, pending[1])
    try:
        relative = not os.path.isabs(os.fsdecode(raw))
    except (TypeError, ValueError):
        relative = True
    if relative:
        cache = _resolve(raw, None)  # the import system writes caches through posix.open, unguarded
        if _is_bytecode_cache(cache):
            return cache
        return f"{os.fsdecode(raw)!s} (relative to a directory descriptor that cannot be known)"
    return _resolve(raw, None)


_real_os_open = getattr(os.open, "__wrapped__", os.open)  # the builtin, even when this module is reloaded


def _guarded_os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    scope = _current.get()
    if scope is None:
        return _real_os_open(path, flags, mode, dir_fd=dir_fd)
    _os_open_call.pending = (path, dir_fd)
    try:
        if flags & _WRITE_FLAGS:  # checked and opened with no swap of the path between (see Scope.lock)
            with scope.lock:
                return _real_os_open(path, flags, mode, dir_fd=dir_fd)
        return _real_os_open(path, flags, mode, dir_fd=dir_fd)
    finally:
        _os_open_call.pending = None


def _expected_write(event: str, args: tuple[Any, ...], paths: list[str]) -> bool:
    """The writes a read may make because of *what* is written, never who asks: the import
    system's bytecode cache (PEP 3147) and the log files configured outside any scope."""
    if all(_is_bytecode_cache(p) for p in paths):
        return True
    if event == "os.mkdir" and all(_is_cache_dir(p) for p in paths):
        return True
    if event == "open":  # a log handler's own file, in the mode it was made with (os.open has none)
        return args[1] is not None and _log_files.get(paths[0]) == args[1]
    return event in ("os.rename", "os.remove") and all(_in_log_family(p) for p in paths)  # rotation


def _is_bytecode_cache(path: str) -> bool:
    """Whether ``path`` is a ``.pyc`` cache (or the import system's ``<cache>.<id>`` temporary file
    for it, see ``importlib._bootstrap_external._write_atomic``) of a source file that exists."""
    stem, _, tail = path.rpartition(".")
    if tail.isdigit() and stem.endswith(".pyc"):
        path = stem
    try:
        return os.path.isfile(importlib.util.source_from_cache(path))
    except (ValueError, NotImplementedError):
        return False  # not a PEP 3147/488 cache path for this interpreter


def _is_cache_dir(path: str) -> bool:
    prefix = sys.pycache_prefix
    if prefix is not None:
        root = os.path.realpath(prefix)
        return path == root or path.startswith(root + os.sep)
    parent, name = os.path.split(path)
    try:
        return name == "__pycache__" and any(n.endswith(".py") for n in os.listdir(parent))
    except OSError:
        return False


def _in_log_family(path: str) -> bool:
    """A configured log file or one of its rotations (``app.log.1``, ``app.log.2026-12-01``)."""
    if path in _log_files:
        return True
    return any(path.startswith(base + ".") and os.sep not in path[len(base) :] for base in _log_files)


def _register_log_file(handler: logging.FileHandler) -> None:
    _log_files[os.path.realpath(handler.baseFilename)] = handler.mode


def _patch_logging() -> None:
    """Record every ``logging.FileHandler`` made outside a scope: its file, in its mode, is an
    expected write (a handler made with ``delay=True`` opens its file on the first record)."""
    original = logging.FileHandler.__init__
    if getattr(original, "_mcp_providers_guarded", False):
        return

    def __init__(self: logging.FileHandler, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)  # opens the file now unless delay=True: judged as any open
        if _current.get() is None:
            _register_log_file(self)

    __init__._mcp_providers_guarded = True  # type: ignore[attr-defined]
    logging.FileHandler.__init__ = __init__  # type: ignore[method-assign]
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if isinstance(handler, logging.FileHandler):
                _register_log_file(handler)


def _short(args: tuple[Any, ...]) -> str:
    text = " ".join(os.fsdecode(a) if isinstance(a, str | bytes) else repr(a) for a in args)
    return text if len(text) <= 200 else text[:197] + "..."


# -- HTTP library patches -------------------------------------------------------------------------

# Set while a guard that judged a whole request runs the real call: what it sends below (the
# connection under a pool, the socket under a connection) was judged already and is not again.
_judged_above: ContextVar[bool] = ContextVar("mcp_providers_side_effect_judged_above", default=False)


def _core_request_has_body(headers: Any) -> bool:
    for name, value in headers:
        lowered = name.lower()
        if (lowered == b"content-length" and value.strip() != b"0") or lowered == b"transfer-encoding":
            return True
    return False


def _mcp_read_only(request: Any) -> bool:
    """Whether ``request``'s in-memory body is JSON-RPC of :data:`READ_SAFE_MCP_METHODS` only."""
    body = getattr(getattr(request, "stream", None), "_stream", None)  # httpx's ByteStream: the bytes sent
    if not isinstance(body, bytes) or len(body) > _MCP_BODY_LIMIT:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    messages = message if isinstance(message, list) else [message]
    return bool(messages) and all(
        isinstance(m, dict) and m.get("jsonrpc") == "2.0" and m.get("method") in READ_SAFE_MCP_METHODS for m in messages
    )


def _core_check(request: Any, *, tunnel_ok: bool = False) -> None:
    method = request.method.decode("ascii", "replace")
    has_body = _core_request_has_body(request.headers)
    if method.upper() == "POST" and has_body and _mcp_read_only(request):
        return  # an MCP read forwarded upstream (see the module docstring)
    if tunnel_ok and method.upper() == "CONNECT" and not has_body:
        return  # a connection opening a proxy tunnel: the requests inside it are judged on their own
    url = request.url
    target = url.target.decode("ascii", "replace")
    if "://" in target:  # absolute-form, to a forward proxy
        full = target
    else:
        port = f":{url.port}" if url.port else ""
        full = f"{url.scheme.decode()}://{url.host.decode('ascii', 'replace')}{port}{target}"
    check_http(method, full, has_body=has_body)


def _guard(cls: type, name: str, check: Callable[..., None], *, is_async: bool) -> None:
    """Wrap ``cls.name`` so a scope runs ``check`` (which may raise) on its arguments first, once
    per request however many guarded layers it passes through."""
    original = getattr(cls, name)
    if getattr(original, "__mcp_providers_guarded__", False):
        return
    if is_async:

        async def guarded_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            if _current.get() is None or _judged_above.get():
                return await original(self, *args, **kwargs)
            check(self, *args, **kwargs)
            token = _judged_above.set(True)
            try:
                return await original(self, *args, **kwargs)
            finally:
                _judged_above.reset(token)

        wrapper: Any = guarded_async
    else:

        def guarded_sync(self: Any, *args: Any, **kwargs: Any) -> Any:
            if _current.get() is None or _judged_above.get():
                return original(self, *args, **kwargs)
            check(self, *args, **kwargs)
            token = _judged_above.set(True)
            try:
                return original(self, *args, **kwargs)
            finally:
                _judged_above.reset(token)

        wrapper = guarded_sync
    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = original.__name__, original.__qualname__, original.__doc__
    wrapper.__wrapped__ = original
    wrapper.__mcp_providers_guarded__ = True
    setattr(cls, name, wrapper)


def _patch_httpcore(module: Any) -> None:
    """The pool (good messages: the URL asked for) and every connection class below it (a bare
    ``HTTPConnection``/``HTTP11Connection``/``HTTP2Connection`` or proxy connection)."""
    _guard(module.ConnectionPool, "handle_request", lambda _s, request: _core_check(request), is_async=False)
    _guard(module.AsyncConnectionPool, "handle_async_request", lambda _s, request: _core_check(request), is_async=True)
    conn = lambda _s, request: _core_check(request, tunnel_ok=True)  # noqa: E731
    for name in ("HTTPConnection", "HTTP11Connection", "HTTP2Connection"):
        for prefix, method, is_async in (("", "handle_request", False), ("Async", "handle_async_request", True)):
            cls = _optional_attr(module, prefix + name)
            if cls is not None and hasattr(cls, method):  # without h2, HTTP2Connection is a stub
                _guard(cls, method, conn, is_async=is_async)


def _optional_attr(module: Any, name: str) -> Any:
    try:
        return getattr(module, name)
    except (AttributeError, ImportError, RuntimeError):  # httpcore's HTTP2Connection needs h2
        return None


def _path_of(url: str) -> str:
    rest = url.split("://", 1)[1] if "://" in url else url
    return "/" + rest.split("/", 1)[1] if "/" in rest else "/"


def _http_client_judge(conn: Any, method: str, full: str, *, has_body: bool) -> None:
    if check_http(method, full, has_body=has_body):  # let through: the socket below must not judge it again
        scope = _current.get()
        if scope is not None:
            scope._passed = [*(scope._passed or ()), (method.upper(), _path_of(full))]


def _http_client_putrequest(conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> None:
    scheme = "https" if getattr(conn, "default_port", 80) == 443 else "http"
    full = url if "://" in url else f"{scheme}://{conn.host}:{conn.port}{url}"
    conn.__dict__["_mcp_providers_request"] = (method, full)
    _http_client_judge(conn, method, full, has_body=False)


def _http_client_putheader(conn: Any, header: str | bytes, *values: Any) -> None:
    name = (header.decode("latin-1") if isinstance(header, bytes) else header).lower()
    if name not in ("content-length", "transfer-encoding"):
        return
    texts = [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in values]
    if name == "content-length" and all(t.strip() == "0" for t in texts):
        return
    method, full = conn.__dict__.get("_mcp_providers_request", ("GET", f"http://{conn.host}:{conn.port}/"))
    if method.upper() in SAFE_METHODS:  # an unsafe method was judged (and recorded) by putrequest
        _http_client_judge(conn, method, full, has_body=True)


def _aiohttp_check(_session: Any, method: str, url: Any, *args: Any, **kwargs: Any) -> None:
    has_body = kwargs.get("data") is not None or kwargs.get("json") is not None
    check_http(method, str(url), has_body=has_body)


def _patch_http_client() -> None:
    import http.client

    # Not through _guard: putrequest only buffers, and what the connection then sends must still
    # reach the socket guard (a raw send() after a GET's head is judged there).
    for name, check in (("putrequest", _http_client_putrequest), ("putheader", _http_client_putheader)):
        original = getattr(http.client.HTTPConnection, name)
        if getattr(original, "__mcp_providers_guarded__", False):
            continue
        setattr(http.client.HTTPConnection, name, _checked_first(original, check))


def _checked_first(original: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _current.get() is not None:
            check(self, *args, **kwargs)
        return original(self, *args, **kwargs)

    guarded.__name__, guarded.__qualname__, guarded.__doc__ = original.__name__, original.__qualname__, original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    guarded.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    return guarded


# -- the wire: HTTP/1.x request heads in the bytes a socket or TLS object sends -------------------

_WIRE_SAFE = SAFE_METHODS | {"CONNECT"}  # CONNECT opens a proxy tunnel; what goes through it is judged
_WS = rb"[ \t\x0b\x0c\r\x1c-\x1f\x85\xa0]"
"""Whitespace a lenient server splits a request line on: what Python's ``str.split()`` splits
latin-1 on (``http.server`` takes ``" POST /x HTTP/1.1"`` or tab-separated words as a request)."""
_REQUEST_LINE = re.compile(
    rb"%s*([!#$%%&'*+.^_`|~0-9A-Za-z-]+)%s+(\S*).*%sHTTP/[0-9](?:\.[0-9])?%s*" % (_WS, _WS, _WS, _WS), re.S | re.I
)
"""An HTTP/1.x request line in any spelling a server may take: whitespace around and between its
words, a method or version in any case (RFC 9112 section 3 is stricter; lenient servers are not)."""
_LONG_LINE = 8192  # longer unfinished lines keep their start and end (method, version), not the middle


class _Wire:
    """What one socket or TLS object has sent in one scope: the unfinished line, the request
    head being sent (``(verb, target, judged, body length)``) and body bytes still to skip."""

    __slots__ = ("carry", "head", "scope", "skip")

    def __init__(self, scope: Scope) -> None:
        self.scope, self.carry, self.head, self.skip = scope, b"", None, 0


_wires: weakref.WeakKeyDictionary[Any, _Wire] = weakref.WeakKeyDictionary()


def _scan(wire: _Wire, data: bytes, sender: Any, scheme: str) -> None:
    """Judge every complete line ``data`` finishes; refusing raises before anything is sent.

    A request line is refused when its line ends (``\\n``), so a head split over several sends
    never reaches the server whole; a body header on a safe method is refused the same way."""
    buf, pos = wire.carry + data, 0
    head, skip = wire.head, wire.skip
    while True:
        if skip:
            take = min(skip, len(buf) - pos)
            pos, skip = pos + take, skip - take
            if skip:
                break
        end = buf.find(b"\n", pos)
        if end < 0:
            break
        head, skip = _judge_line(wire.scope, buf[pos:end], head, sender, scheme)
        pos = end + 1
    carry = buf[pos:]
    if len(carry) > _LONG_LINE:
        carry = carry[: _LONG_LINE // 2] + b"~" + carry[-64:]
    wire.carry, wire.head, wire.skip = carry, head, skip


def _judge_line(scope: Scope, line: bytes, head: Any, sender: Any, scheme: str) -> tuple[Any, int]:
    if head is not None:
        verb, target, judged, length = head
        if not line.strip(b"\r \t"):
            return None, length if judged else 0  # end of the head; skip a let-through body
        name, colon, value = line.partition(b":")
        lowered = name.strip().lower()
        if colon and lowered in (b"content-length", b"transfer-encoding"):
            if lowered == b"content-length" and value.strip() == b"0":
                return head, 0
            if not judged:
                judged = _judge_wire(scope, verb, target, sender, scheme, has_body=True)
            length = int(value) if lowered == b"content-length" and value.strip().isdigit() else 0
            return (verb, target, judged, length), 0
        return head, 0
    match = _REQUEST_LINE.fullmatch(line)
    if match is None:
        return None, 0  # not an HTTP/1.x request line: another protocol's bytes, or TLS
    verb, target = match.group(1).decode("ascii").upper(), match.group(2).decode("latin-1")
    judged = verb not in _WIRE_SAFE and _judge_wire(scope, verb, target, sender, scheme, has_body=False)
    return (verb, target, judged, 0), 0


def _judge_wire(scope: Scope, verb: str, target: str, sender: Any, scheme: str, *, has_body: bool) -> bool:
    key = (verb, _path_of(target) if "://" in target else target)
    if scope._passed and key in scope._passed:  # http.client judged and let this very request through above
        scope._passed.remove(key)
        return True
    url = target if "://" in target else f"{scheme}://{_peer(sender)}{target}"
    if verb == "PRI":  # HTTP/2's preface: its binary frames are judged only in httpcore2's connection
        attempted = f"an HTTP/2 connection written by hand to {url.removesuffix('*')}"
        scope.attempt(attempted, "http", error=_RefusedOnTheWire, method=verb, layer="wire")
        return True
    return _judge_http(verb, url, has_body, _RefusedOnTheWire)


def _peer(sender: Any) -> str:
    """``host:port`` a socket is connected to (the TLS server name for the host, when there is
    one); an ``ssl.SSLObject`` knows only its server name."""
    name = getattr(sender, "server_hostname", None)
    try:
        address = sender.getpeername()
    except (AttributeError, OSError):
        return str(name) if name else "an unknown host"
    if not isinstance(address, tuple):
        return str(name or address)
    host = str(name or address[0])
    return f"[{host}]:{address[1]}" if ":" in host else f"{host}:{address[1]}"


def _wire_guard(cls: type, name: str, data_of: Callable[[tuple[Any, ...]], bytes], scheme: str) -> None:
    """Wrap a send method so a scope judges the HTTP heads in what it sends (and only then sends)."""
    original = getattr(cls, name)
    if getattr(original, "__mcp_providers_guarded__", False):
        return

    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        scope = _current.get()
        if scope is None or _judged_above.get():
            return original(self, *args, **kwargs)
        wire = _wires.get(self)
        if wire is None or wire.scope is not scope:
            wire = _wires[self] = _Wire(scope)
        _scan(wire, data_of(args), self, scheme)
        token = _judged_above.set(True)  # an SSLSocket's send may call the plain socket's
        try:
            return original(self, *args, **kwargs)
        finally:
            _judged_above.reset(token)

    guarded.__name__, guarded.__qualname__, guarded.__doc__ = original.__name__, original.__qualname__, original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    guarded.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    setattr(cls, name, guarded)


def _first_bytes(args: tuple[Any, ...]) -> bytes:
    return bytes(args[0]) if args else b""


def _joined_buffers(args: tuple[Any, ...]) -> bytes:
    return b"".join(bytes(b) for b in args[0]) if args else b""


class _Descriptor:
    """A socket known only by its descriptor (``os.write``, ``os.sendfile``): its peer, for messages."""

    __slots__ = ("__weakref__", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def getpeername(self) -> Any:
        import socket

        sock = socket.socket(fileno=self.fd)
        try:
            return sock.getpeername()
        finally:
            sock.detach()  # the descriptor stays its owner's


_descriptors: dict[int, _Descriptor] = {}


def _descriptor_judge() -> Callable[[int, bytes], None] | None:
    """The judge of bytes written to a socket descriptor in this scope, ``None`` outside one."""
    scope = _current.get()
    if scope is None or _judged_above.get():
        return None

    def judge(fd: int, data: bytes) -> None:
        sender = _descriptors.get(fd)
        if sender is None:
            sender = _descriptors[fd] = _Descriptor(fd)
        wire = _wires.get(sender)
        if wire is None or wire.scope is not scope:
            wire = _wires[sender] = _Wire(scope)
        _scan(wire, data, sender, "http")

    return judge


def _patch_wire() -> None:
    """Plain sockets (``send``, ``sendall``, ``sendto``, ``sendmsg``: asyncio's transports and
    ``loop.sock_sendall`` use them) and TLS plaintext (``ssl.SSLSocket`` and ``ssl.SSLObject``,
    the memory-BIO object asyncio's and anyio's TLS streams write through)."""
    import socket
    import ssl

    for name in ("send", "sendall", "sendto"):
        _wire_guard(socket.socket, name, _first_bytes, "http")
    _wire_guard(socket.socket, "sendmsg", _joined_buffers, "http")
    for name in ("send", "sendall", "write"):
        _wire_guard(ssl.SSLSocket, name, _first_bytes, "https")
    _wire_guard(ssl.SSLObject, "write", _first_bytes, "https")
    _sideeffects_lowlevel.guard_descriptor_sends(_descriptor_judge)


def _unaudited(module: Any, name: str, category: str, describe: Callable[[tuple[Any, ...]], str]) -> None:
    """Wrap ``module.name`` (a call that raises no audit event) so a scope judges it first."""
    original = getattr(module, name, None)
    if original is None or getattr(original, "_mcp_providers_guarded", False):
        return

    def guarded(*args: Any, **kwargs: Any) -> Any:
        scope = _current.get()
        if scope is not None:
            attempted = describe(args)
            if category == "file" and args and scope._under_scratch(_resolve(args[0], kwargs.get("dir_fd"))):
                return original(*args, **kwargs)
            scope.attempt(attempted, category, event=f"{module.__name__}.{name}")
        return original(*args, **kwargs)

    guarded._mcp_providers_guarded = True  # type: ignore[attr-defined]
    setattr(module, name, guarded)


def _patch_unaudited() -> None:
    """Calls that create files or start processes without a PEP 578 event of their own."""
    import _posixsubprocess

    _unaudited(os, "mkfifo", "file", lambda a: f"creating a FIFO at {_short(a[:1])}")
    _unaudited(os, "mknod", "file", lambda a: f"creating a device node at {_short(a[:1])}")
    _unaudited(_posixsubprocess, "fork_exec", "process", lambda a: f"starting a process ({_short(a[:1])})")


_OPTIONAL: dict[str, Callable[[Any], None]] = {
    "httpcore": _patch_httpcore,
    "aiohttp": lambda module: _guard(module.ClientSession, "_request", _aiohttp_check, is_async=True),
}

_installed = False
_install_lock = threading.Lock()


def _patch_on_import(name: str, patch: Callable[[Any], None], *, optional: bool = True) -> None:
    """Run ``patch`` on module ``name`` now if it is imported, else the moment it first is.

    Importing the HTTP libraries only to patch them cost a start-up a tenth of a second (httpcore2
    brings h11, ssl and, where installed, trio); a read that imports one later still finds it
    guarded, since the patch runs before the import statement returns.

    :param optional: a patch that raises is logged and the module left unpatched; otherwise the
        error propagates (from this call, or from the import that ran the patch).
    """
    module = sys.modules.get(name)
    if module is not None:
        _apply(name, patch, module, optional)
        return
    finder = next((f for f in sys.meta_path if isinstance(f, _PatchingFinder)), None)
    if finder is None:
        finder = _PatchingFinder()
        sys.meta_path.insert(0, finder)
    finder.patches[name] = (patch, optional)


def _apply(name: str, patch: Callable[[Any], None], module: Any, optional: bool) -> None:
    if not optional:
        patch(module)
        return
    try:
        patch(module)
    except Exception:  # a broken optional install must not stop serving
        log.warning("could not guard %s against side effects in reads", name, exc_info=True)


class _PatchingFinder:
    """A ``sys.meta_path`` finder that finds nothing itself: for the modules in ``patches`` it asks
    the finders after it and wraps the loader they found, so the patch runs right after the
    module's own code (the post-import hook of PEP 369, withdrawn, done with PEP 451 specs)."""

    def __init__(self) -> None:
        self.patches: dict[str, tuple[Callable[[Any], None], bool]] = {}
        """Module name -> its patch and whether the patch is optional (see :func:`_patch_on_import`)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        patch = self.patches.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, name, *patch)
        return spec


class _PatchingLoader:
    """Loads with ``inner``, then patches; anything else (resource readers, ``get_source``) is the
    inner loader's."""

    def __init__(self, inner: Any, name: str, patch: Callable[[Any], None], optional: bool) -> None:
        self._inner, self._name, self._patch, self._optional = inner, name, patch, optional

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = module.__spec__.loader = self._inner  # as if never wrapped
        # Outside any scope, as when install() imported it: the library's own import-time work
        # (trio, under httpcore2, runs ldconfig) is not the read's, whichever read imports it first.
        token = _current.set(None)
        try:
            self._inner.exec_module(module)
            _apply(self._name, self._patch, module, self._optional)
        finally:
            _current.reset(token)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._inner, attribute)


def install() -> None:
    """Install the audit hook and the HTTP patches, once per process (idempotent, thread-safe).

    The HTTP libraries (``httpcore2``, and ``httpcore`` and ``aiohttp`` where installed) are patched
    now if imported, else the moment they first are (:func:`_patch_on_import`), so an import inside
    a read finds them guarded. :func:`side_effect_scope` calls this on first
    use; a server may call it at start-up to keep that cost out of the first read.
    """
    global _installed
    with _install_lock:
        if _installed:
            return
        tempfile.gettempdir()  # its first call writes a probe file: never let that happen in a scope
        _patch_on_import("httpcore2", _patch_httpcore, optional=False)  # the SDK's own client: must be guarded
        _patch_http_client()
        _patch_wire()
        _patch_unaudited()
        _patch_logging()
        _sideeffects_lowlevel.serialize_tree_changes(_scope_lock)
        if not getattr(os.open, "__mcp_providers_guarded__", False):
            _guarded_os_open.__wrapped__ = os.open  # type: ignore[attr-defined]
            _guarded_os_open.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
            os.open = _guarded_os_open
        for name, patch in _OPTIONAL.items():
            _patch_on_import(name, patch)
        sys.addaudithook(_audit)
        _installed = True
