"""Start ``python -m mcp_providers ...`` for the tests without paying for the SDK's import each time.

About 180 processes a run are ``python -m mcp_providers serve|check|plugins`` or a test's own
server script, and each spent about 1 s of its 1.5 s of CPU importing the MCP SDK, pydantic,
starlette and uvicorn (measured with process accounting over a whole ``-n 4`` run: 275 s of CPU,
out of 630 s for the run). So each test worker keeps one *fork server*: a process that has
imported those third-party packages once and forks a child for each such run.

What the test spawns is still a real process with the command's own pipes:

- ``python()`` is the argv prefix to use in place of ``[sys.executable]``. It runs this file as a
  small *launcher* (``python -I -S prefork.py launch SOCKET -m mcp_providers serve ...``) that
  hands its stdin, stdout and stderr (the file descriptors themselves), its argv, environment and
  working directory to the fork server, then drops its own copies of the pipes. The forked child
  takes those descriptors as 0, 1 and 2, that environment, directory and ``sys.path`` (the
  ``PYTHONPATH`` entries first, as the interpreter puts them), then runs the module or script as
  ``__main__``. The test talks to the child over its pipes directly; nothing is relayed.
- The launcher forwards the catchable signals it gets (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
  SIGUSR2) to the child and exits the way the child did: the same exit code, or killed by the
  same signal, so ``Popen.returncode`` reads as it would. A launcher killed with SIGKILL (a test's
  ``kill()``, a timeout) closes its connection, and the fork server kills the child then.
- Only third-party packages are imported ahead (:data:`PRELOAD`; none of them reads the
  environment when imported). ``mcp_providers``, the plugins and everything they import lazily are
  imported by the child itself, after it has the test's environment and path. The one cache of
  theirs that depends on the path, pydantic's list of plugins, is emptied in each child, and a
  request whose path adds a pydantic plugin gets a fresh interpreter (the preloaded models would
  lack it).
- Anything this cannot reproduce falls back to the real thing: the launcher ``exec``\\s
  ``sys.executable`` with the same arguments when the fork server is not up (yet), when the
  arguments are other than ``-m MODULE ...`` or ``SCRIPT ...``, or when an interpreter setting in
  the environment differs from the fork server's (a ``PYTHON*`` variable other than those of
  :data:`PER_CHILD`, which each child applies itself, or the locale: the SDKs' stdio clients pass
  a server no ``LANG`` unless told to, and Python then coerces the locale and changes its stdio).

Not for tests whose subject is the process itself: its start-up (``test_startup_laziness``),
``/proc/<pid>`` of the server, or signal dispositions read off the pid (the pid a test gets is the
launcher's). Tested in ``tests/test_prefork.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
# What a `serve` run imports from other distributions; each is imported in the fork server once.
PRELOAD = (
    "mcp",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.server",
    "mcp.server.lowlevel",
    "mcp.server.stdio",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp_types",
    "anyio",
    "pydantic",
    "starlette.applications",
    "uvicorn",
    "httpx2",
    "pluggy",
    "importlib_metadata",
)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# Interpreter settings a child takes from its own environment; any other one read at start-up (the
# rest of PYTHON*, the locale) must be the fork server's, or the launch gets a fresh interpreter.
PER_CHILD = ("PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")
LOCALE = ("LANG", "LC_ALL", "LC_CTYPE")
_HEADER = struct.Struct("!I")


def _settings(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if (k.startswith("PYTHON") and k not in PER_CHILD) or k in LOCALE}


# -- the test side ---------------------------------------------------------------------------------

_SOCKET = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"mcp-prefork-{os.getpid()}", "sock")
_server: object = None  # the fork server's Popen, once started


def python() -> list[str]:
    """The argv prefix standing for ``[sys.executable]``: append ``-m MODULE ...`` or
    ``SCRIPT ...`` as for the interpreter. Works before :func:`start` too (each run then execs
    a fresh interpreter), so a module may build its commands at import."""
    return [sys.executable, "-I", "-S", os.path.join(HERE, "prefork.py"), "launch", _SOCKET]


def ready() -> bool:
    """Whether this process's fork server listens (launches go through it rather than exec)."""
    return os.path.exists(_SOCKET)


def start() -> None:
    """Start this process's fork server (once). It stops when this process exits: it watches its
    stdin, a pipe whose other end only this process holds. Returns at once; until the server
    listens (about a second), launches exec a fresh interpreter."""
    global _server
    if _server is not None:
        return
    import subprocess

    os.makedirs(os.path.dirname(_SOCKET), mode=0o700, exist_ok=True)
    for stale in (_SOCKET, _SOCKET + ".new"):  # left by an earlier process that had this pid
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _server = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "prefork.py"), "serve", _SOCKET],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
    )


# -- the launcher ----------------------------------------------------------------------------------


def _exec_fresh(args: list[str], pending: list[int]) -> None:
    for signum in FORWARDED:
        signal.signal(signum, signal.SIG_DFL)
    for signum in pending:  # what arrived before the handoff: its default action, as for python
        os.kill(os.getpid(), signum)
    os.execv(sys.executable, [sys.executable, *args])


def _runnable(args: list[str]) -> bool:
    if args[:1] == ["-m"]:
        return len(args) >= 2
    return bool(args) and not args[0].startswith("-")


def launch(path: str, args: list[str]) -> None:
    """The launcher's body (``prefork.py launch SOCKET ARGS...``); does not return."""
    pending: list[int] = []
    child = 0

    def forward(signum: int, _frame: object) -> None:
        if not child:
            pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):  # already gone: its status is on the way
            os.kill(child, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    if not _runnable(args):
        _exec_fresh(args, pending)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        request = json.dumps({"args": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
        message = _HEADER.pack(len(request)) + request
        sent = socket.send_fds(conn, [message], [0, 1, 2])
        conn.sendall(message[sent:])
        replies = conn.makefile("rb")
        reply = replies.readline()
        child = int(json.loads(reply)["pid"]) if reply else 0
    except (OSError, ValueError, KeyError, TypeError):
        child = 0
    if not child:  # not up yet, refused (settings differ), or gone
        conn.close()
        _exec_fresh(args, pending)
    for signum in pending:
        forward(signum, None)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the child holds the pipes now: their ends close when it exits
        os.dup2(devnull, fd)
    status = replies.readline()
    if not status:  # the fork server went away: do not leave the child behind
        os.kill(child, signal.SIGKILL)
        os._exit(1)
    code = int(status)
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


# -- the fork server -------------------------------------------------------------------------------


def _read_request(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    (size,) = _HEADER.unpack_from(data)
    body = bytearray(data[_HEADER.size :])
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise ValueError("request cut short")
        body += more
    return json.loads(body), fds


def serve(path: str) -> dict[str, object] | None:
    """The fork server's loop. Returns only in a forked child, with its request (the child's
    descriptors are in place); in the server itself it returns None when its parent has gone."""
    for name in PRELOAD:
        __import__(name)
    import gc

    gc.freeze()  # the preloaded objects stay put: children do not copy their pages by collecting
    baseline = _settings(dict(os.environ))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)  # connectable only once listening
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(0, selectors.EVENT_READ, "parent")
    children: dict[int, _Child] = {}
    while True:
        for key, _ in selector.select():
            what = key.data
            if what == "parent":  # the test process has gone (EOF on our stdin)
                for pid in children:
                    os.kill(pid, signal.SIGKILL)
                os.unlink(path)
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(path))
                return None
            if what == "accept":
                conn, _ = listener.accept()
                request = _accept(conn, baseline, selector, listener, children)
                if request is not None:
                    return request
            elif what[0] == "exited":
                _report(children.pop(what[1]), selector)
            elif _hung_up(children[what[1]].conn):  # the launcher died (SIGKILL): so does its child
                selector.unregister(children[what[1]].conn)
                children[what[1]].watched = False
                os.kill(what[1], signal.SIGKILL)


class _Child:
    """A forked child: its pid, the launcher's connection and a pidfd that reads ready at exit."""

    def __init__(self, pid: int, conn: socket.socket) -> None:
        self.pid, self.conn, self.pidfd, self.watched = pid, conn, os.pidfd_open(pid), True


def _hung_up(conn: socket.socket) -> bool:
    try:
        return conn.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _accept(
    conn: socket.socket,
    baseline: dict[str, str],
    selector: selectors.BaseSelector,
    listener: socket.socket,
    children: dict[int, _Child],
) -> dict[str, object] | None:
    """Read a launcher's request and fork its child. Returns the request in the child, None in
    the server (also when the request is refused: the launcher then execs a fresh interpreter)."""
    try:
        conn.settimeout(10)
        request, fds = _read_request(conn)
        conn.settimeout(None)
    except (OSError, ValueError):
        conn.close()
        return None
    env = request["env"]
    if len(fds) != 3 or not isinstance(env, dict) or _settings(env) != baseline or _pydantic_plugins(env):
        for fd in fds:
            os.close(fd)
        conn.close()  # the launcher reads no pid and execs a fresh interpreter
        return None
    pid = os.fork()
    if pid == 0:
        selector.close()
        listener.close()
        for other in children.values():
            other.conn.close()
            os.close(other.pidfd)
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        return request
    for fd in fds:
        os.close(fd)
    child = children[pid] = _Child(pid, conn)
    selector.register(child.pidfd, selectors.EVENT_READ, ("exited", pid))
    selector.register(conn, selectors.EVENT_READ, ("launcher", pid))
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return None


def _pydantic_plugins(env: dict[str, str]) -> bool:
    """Whether a distribution on the request's ``PYTHONPATH`` declares a pydantic plugin: the
    preloaded models were built without it, so only a fresh interpreter would apply it to them."""
    for entry in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(entry, name, "entry_points.txt"), "rb") as file:
                        if b"[pydantic]" in file.read():
                            return True
                except OSError:
                    continue
    return False


def _report(child: _Child, selector: selectors.BaseSelector) -> None:
    """Reap an exited child and send its launcher the exit code (negative: the killing signal)."""
    _, status = os.waitpid(child.pid, 0)
    selector.unregister(child.pidfd)
    os.close(child.pidfd)
    if child.watched:
        selector.unregister(child.conn)
    with contextlib.suppress(OSError):  # the launcher is gone already
        child.conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
    child.conn.close()


def _stdio() -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` on descriptors 0-2, made as CPython makes them at
    start-up (``create_stdio``: no newline translation, stderr line-buffered)."""
    import io

    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    for fd, name, mode in ((0, "stdin", "rb"), (1, "stdout", "wb"), (2, "stderr", "wb")):
        old = getattr(sys, name)
        buffered = fd == 0 or not unbuffered
        binary = open(fd, mode, buffering=-1 if buffered else 0, closefd=False)  # noqa: SIM115 (for the process's life)
        raw = binary.raw if buffered else binary
        raw.name = f"<{name}>"
        line = buffered and (fd == 2 or raw.isatty())
        text = io.TextIOWrapper(
            binary, encoding=old.encoding, errors=old.errors, newline="\n", line_buffering=line,
            write_through=not buffered,
        )  # fmt: skip
        setattr(sys, name, text)
        setattr(sys, f"__{name}__", text)


def become(request: dict[str, object]) -> None:
    """In the forked child: take the request's environment, directory, path and arguments."""
    import importlib

    signal.set_wakeup_fd(-1)
    for signum in range(1, signal.NSIG):
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            continue
    signal.signal(signal.SIGINT, signal.default_int_handler)  # what the interpreter installs
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    os.setsid()  # out of the fork server's process group
    env, args, cwd = request["env"], request["args"], request["cwd"]
    assert isinstance(env, dict) and isinstance(args, list) and isinstance(cwd, str)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    _stdio()
    first = os.getcwd() if args[0] == "-m" else os.path.dirname(os.path.realpath(args[0]))
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [first, *extra, *sys.path]
    import pydantic.plugin._loader

    # pydantic reads its plugins' entry points once, at the first model class (in the fork server,
    # from the server's path): read them again from this path when asked, as a fresh process would.
    pydantic.plugin._loader._plugins = None
    sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    importlib.invalidate_caches()


def run(request: dict[str, object]) -> None:
    """Run the request's module or script as ``__main__`` (a SystemExit ends the process)."""
    import runpy

    args = request["args"]
    assert isinstance(args, list)
    if args[0] == "-m":
        sys.argv[:] = ["-m", *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv[:] = list(args)
        runpy.run_path(args[0], run_name="__main__")


def main() -> None:
    if sys.argv[1] == "launch":
        launch(sys.argv[2], sys.argv[3:])
    if sys.path and sys.path[0] == HERE:
        del sys.path[0]  # the fork server's own script folder is not on a child's path
    request = serve(sys.argv[2])
    if request is None:
        return
    become(request)
    run(request)


if __name__ == "__main__":
    main()
