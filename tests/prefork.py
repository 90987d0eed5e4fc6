"""Start ``python -m mcp_providers ...`` for the tests without paying for the SDK's import each time.

About 180 processes a run are ``python -m mcp_providers serve|check|plugins`` or a test's own
server script, and each spent about 1 s of its 1.5 s of CPU importing the MCP SDK, pydantic,
starlette and uvicorn (measured with process accounting over a whole ``-n 4`` run: 275 s of CPU,
out of 630 s for the run). So each test worker keeps one *fork server*: a process that has
imported those third-party packages once and forks a child for each such run.

What the test spawns is still a real process with the command's own pipes:

- ``python()`` is the argv prefix to use in place of ``[sys.executable]``. It runs this file as a
  small *launcher* (``python -I -S prefork.py launch SOCKET -m mcp_providers serve ...``) that
  hands its stdin, stdout and stderr (the file descriptors themselves), its argv, its environment
  as it was given (``/proc/self/environ``) and its working directory to the fork server, then
  drops its own copies of the pipes. The forked child takes those descriptors as 0, 1 and 2, that
  environment and directory, and a ``sys.path`` made as the interpreter makes it (the script's
  folder or the working directory, then the ``PYTHONPATH`` entries, absolute and without
  repeats), then runs the module as ``python -m`` does (``runpy``) or the script in a new
  ``__main__``. The test talks to the child over its pipes directly; nothing is relayed.
- The launcher forwards the signals sent to it (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGALRM, ...;
  not SIGKILL and SIGSTOP, which no process can catch, nor SIGCHLD, SIGPIPE and the faults) to the
  child and
  exits the way the child did: the same exit code, or killed by the same signal, so
  ``Popen.returncode`` reads as it would. A launcher killed with SIGKILL (a test's ``kill()``, a
  timeout) closes its connection, and the fork server kills the child then.
- Only third-party packages are imported ahead (:data:`PRELOAD`). ``mcp_providers``, the plugins
  and everything they import lazily are imported by the child itself, after it has the test's
  environment and path. pydantic's list of plugins, read from the path at the first model class,
  is emptied in each child so that it is read again from the child's path.

Anything the child could not reproduce gets a fresh interpreter instead: the launcher ``exec``\\s
``sys.executable`` with the same arguments and environment when the fork server is not up (yet),
when the arguments are other than ``-m MODULE ...`` or ``SCRIPT ...``, when descriptors other than
0-2 are open in it (``pass_fds``), or when the fork server finds the request differs from itself
in what the interpreter or a preloaded package reads at start-up:

- a ``PYTHON*`` variable other than those of :data:`PER_CHILD` (which each child applies itself),
  the locale, ``TZ``, ``HOME``, ``OTEL_*`` or ``PYDANTIC_*`` (:func:`_settings`): the SDKs' stdio
  clients, for one, pass a server no ``LANG`` unless told to, and Python then coerces the locale;
- the user, groups, umask, resource limits or CPU affinity;
- a ``PYTHONPATH`` entry holding a module already imported here (it would shadow it), a
  ``sitecustomize``/``usercustomize``, or a distribution that declares a pydantic plugin (the
  preloaded models were built without it).

Left different, and not used by any test: the children share the fork server's hash seed, and
each is a session leader of its own (``setsid``, so a child's ``killpg`` cannot reach its
siblings). Not for tests whose subject is the
process itself: its start-up (``test_startup_laziness``), ``/proc/<pid>`` of the server, or
signal dispositions read off the pid (the pid a test gets is the launcher's). Tested in
``tests/test_prefork.py``.
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
)
# Interpreter settings a child takes from its own environment (the rest must match the server's).
PER_CHILD = ("PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")
# Not forwarded: what no process can catch, what concerns the launcher itself, and the faults that
# only the faulting process receives (a handler for them would loop on the faulting instruction).
UNFORWARDED = {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGPIPE, signal.SIGSEGV, signal.SIGBUS,
               signal.SIGFPE, signal.SIGILL, signal.SIGTRAP, signal.SIGSYS}  # fmt: skip
FORWARDED = tuple(s for s in signal.valid_signals() if s not in UNFORWARDED and s < signal.SIGRTMIN)
_HEADER = struct.Struct("!I")
_SHORT_ENOUGH = 100  # an AF_UNIX path holds 108 bytes on Linux


def start_up_settings() -> dict[str, str]:
    """The variables of this environment a launch must also carry to be forked rather than started
    afresh (the locale, ``HOME``, ``PYTHON*``...: :func:`_settings`): for a test that hands a server
    a reduced environment, as the SDKs' stdio clients do by default."""
    return _settings(dict(os.environ))


def env_options() -> list[str]:
    """:func:`start_up_settings` as ``-e NAME=VALUE`` options: the MCP Inspector's, for the stdio
    server it starts. The Inspector is given a ``HOME`` of its own (it writes state there), which
    its server would inherit, and a different ``HOME`` makes each start a fresh interpreter."""
    return [option for name, value in start_up_settings().items() for option in ("-e", f"{name}={value}")]


def upstream_script(script: str, *args: str) -> dict[str, object]:
    """``command``, ``args`` and ``env`` of an upstream stdio server (``[[plugins.upstream.servers]]``)
    that runs ``python SCRIPT ARGS...`` through the fork server. The upstream is started with the
    SDK's default environment, which lacks the locale: ``env`` passes on, by name, each start-up
    setting it lacks (:func:`start_up_settings`), else each start would be a fresh interpreter."""
    from mcp.client.stdio import get_default_environment

    default = get_default_environment()
    lacking = {name: name for name, value in start_up_settings().items() if default.get(name) != value}
    return {"command": sys.executable, "args": [*python()[1:], script, *args], "env": lacking}


def _settings(env: dict[str, str]) -> dict[str, str]:
    """What of ``env`` the interpreter or a preloaded package reads at start-up, and a child
    cannot apply after the fork."""
    return {
        k: v
        for k, v in env.items()
        if (k.startswith("PYTHON") and k not in PER_CHILD)
        or k.startswith(("LC_", "OTEL_", "PYDANTIC_"))
        or k in ("LANG", "LANGUAGE", "TZ", "HOME")
    }


def _process() -> dict[str, object]:
    """The process settings a child inherits from the fork server rather than from the launcher."""
    import resource

    limits = {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")}
    umask = os.umask(0)
    os.umask(umask)
    return {
        "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
        "umask": umask,
        "limits": {k: list(v) for k, v in sorted(limits.items())},
        "affinity": sorted(os.sched_getaffinity(0)),
    }


# -- the test side ---------------------------------------------------------------------------------

_folder = os.environ.get("TMPDIR", "/tmp")
if len(_folder) > _SHORT_ENOUGH - 30:
    _folder = "/tmp"
_SOCKET = os.path.join(_folder, f"mcp-prefork-{os.getpid()}", "sock")
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
    """Start this process's fork server (once), in a session of its own (a Ctrl-C at the terminal
    is for pytest). It stops at :func:`stop`, or when this process exits: it watches its stdin, a
    pipe whose other end only this process holds. Returns at once; until the server listens (about a second),
    launches exec a fresh interpreter."""
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
        start_new_session=True,
    )


def stop() -> None:
    """Stop this process's fork server, if started (its children are killed), and wait for it."""
    global _server
    import subprocess

    if isinstance(_server, subprocess.Popen):
        assert _server.stdin is not None
        _server.stdin.close()  # what it watches: it stops at end of input
        try:
            _server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _server.kill()
            _server.wait()
    _server = None


# -- the launcher ----------------------------------------------------------------------------------


def _given_environment() -> dict[str, str]:
    """The environment this process was started with: ``os.environ`` may differ from it, as the
    interpreter coerces a C locale by setting ``LC_CTYPE`` (PEP 538), also under ``-I``."""
    try:
        with open("/proc/self/environ", "rb") as file:
            pairs = [item.partition(b"=") for item in file.read().split(b"\0") if item]
    except OSError:
        return dict(os.environ)
    return {os.fsdecode(key): os.fsdecode(value) for key, _, value in pairs}


def _exec_fresh(args: list[str], pending: list[int], env: dict[str, str]) -> None:
    for signum in FORWARDED:
        signal.signal(signum, signal.SIG_DFL)
    for signum in pending:  # what arrived before the handoff: its default action, as for python
        os.kill(os.getpid(), signum)
    os.execve(sys.executable, [sys.executable, *args], env)


_LISTING_FD = 3  # the descriptor os.listdir opens to read /proc/self/fd, in a process with 0-2 only


def _runnable(args: list[str]) -> bool:
    """Whether the fork server can run these interpreter arguments, and no descriptor beyond
    stdio was passed to this process (``pass_fds``: only an exec keeps them)."""
    if not (len(args) >= 2 if args[:1] == ["-m"] else bool(args) and not args[0].startswith("-")):
        return False
    with contextlib.suppress(OSError):
        return {int(fd) for fd in os.listdir("/proc/self/fd")} <= {0, 1, 2, _LISTING_FD}
    return True


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
    env = _given_environment()
    if not _runnable(args):
        _exec_fresh(args, pending, env)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        request = {"args": args, "env": env, "cwd": os.getcwd(), "process": _process()}
        body = json.dumps(request).encode()
        message = _HEADER.pack(len(body)) + body
        sent = socket.send_fds(conn, [message], [0, 1, 2])
        conn.sendall(message[sent:])
        replies = conn.makefile("rb")
        reply = replies.readline()
        child = int(json.loads(reply)["pid"]) if reply else 0
    except (OSError, ValueError, KeyError, TypeError):
        child = 0
    if not child:  # not up yet, refused (settings differ), or gone
        conn.close()
        _exec_fresh(args, pending, env)
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
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's disposition cannot be set
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


# -- the fork server -------------------------------------------------------------------------------


class _Child:
    """A forked child: its pid, the launcher's connection and a pidfd that reads ready at exit."""

    def __init__(self, pid: int, conn: socket.socket) -> None:
        self.pid, self.conn, self.pidfd, self.watched = pid, conn, os.pidfd_open(pid), False


class _Server:
    """The fork server's state: its socket, what it checks requests against, and its children."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.settings = _settings(dict(os.environ))
        self.process = _process()
        self.loaded = {name.partition(".")[0] for name in sys.modules} - set(sys.builtin_module_names)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + ".new")
        self.listener.bind(path + ".new")
        self.listener.listen(64)
        os.rename(path + ".new", path)  # connectable only once listening
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", 0))
        self.selector.register(0, selectors.EVENT_READ, ("parent", 0))
        self.children: dict[int, _Child] = {}

    def fresh_needed(self, request: dict[str, object], fds: list[int]) -> bool:
        """Whether a fresh interpreter is needed to run ``request`` as ``python`` would."""
        env = request.get("env")
        if len(fds) != 3 or not isinstance(env, dict) or not isinstance(request.get("args"), list):
            return True
        if _settings(env) != self.settings or request.get("process") != self.process:
            return True
        cwd = request.get("cwd")
        return not isinstance(cwd, str) or any(self._path_entry_differs(p) for p in _python_path(env, cwd))

    def _path_entry_differs(self, entry: str) -> bool:
        try:
            names = os.listdir(entry)
        except OSError:
            return False
        for name in names:
            module = name.partition(".")[0]
            if module in self.loaded or module in ("sitecustomize", "usercustomize"):
                return True  # it would shadow what is imported here, or run at start-up
            if name.endswith((".dist-info", ".egg-info")) and _declares_pydantic_plugin(os.path.join(entry, name)):
                return True
        return False

    def close_in_child(self) -> None:
        self.selector.close()
        self.listener.close()
        for other in self.children.values():
            other.conn.close()
            os.close(other.pidfd)

    def stop(self) -> None:
        for pid in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(self.path))


def _python_path(env: dict[str, str], cwd: str) -> list[str]:
    """``PYTHONPATH`` as the interpreter puts it on ``sys.path`` for a process in ``cwd``
    (``site`` makes the entries absolute, an empty one the working directory, and drops repeats)."""
    entries: list[str] = []
    for entry in env["PYTHONPATH"].split(os.pathsep) if env.get("PYTHONPATH") else []:
        absolute = os.path.normpath(os.path.join(cwd, entry))
        if absolute not in entries:
            entries.append(absolute)
    return entries


def _declares_pydantic_plugin(info: str) -> bool:
    try:
        with open(os.path.join(info, "entry_points.txt"), "rb") as file:
            return b"[pydantic]" in file.read()
    except OSError:
        return False


def _read_request(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    try:
        (size,) = _HEADER.unpack_from(data)
        body = bytearray(data[_HEADER.size :])
        while len(body) < size:
            more = conn.recv(size - len(body))
            if not more:
                raise ValueError("request cut short")
            body += more
        request = json.loads(body)
        if not isinstance(request, dict):
            raise ValueError("not a request")
    except Exception:
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


def serve(path: str) -> dict[str, object] | None:
    """The fork server's loop. Returns only in a forked child, with its request (the child's
    descriptors are in place); in the server itself it returns None when its parent has gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # it ends when the test process does, not before
    for name in PRELOAD:
        __import__(name)
    import gc

    gc.freeze()  # the preloaded objects stay put: children do not copy their pages by collecting
    server = _Server(path)
    while True:
        for key, _ in server.selector.select():
            what, pid = key.data
            if what == "parent":  # the test process has gone (EOF on our stdin)
                server.stop()
                return None
            if what == "accept":
                request = _accept(server)
                if request is not None:
                    return request
            elif what == "exited" and pid in server.children:
                _report(server.children.pop(pid), server.selector)
            elif what == "launcher" and pid in server.children and _hung_up(server.children[pid].conn):
                child = server.children[pid]  # the launcher died (SIGKILL): so does its child
                server.selector.unregister(child.conn)
                child.watched = False
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _hung_up(conn: socket.socket) -> bool:
    try:
        return conn.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _accept(server: _Server) -> dict[str, object] | None:
    """Read a launcher's request and fork its child. Returns the request in the child, None in
    the server (also when the request is refused: the launcher then execs a fresh interpreter).
    A launcher that goes away at any point costs nothing but its own request."""
    try:
        conn, _ = server.listener.accept()
    except OSError:
        return None
    try:
        conn.settimeout(2)  # a launcher sends at once; one that stalls must not hold the others
        request, fds = _read_request(conn)
        conn.settimeout(None)
    except Exception:
        conn.close()
        return None
    if server.fresh_needed(request, fds):
        for fd in fds:
            os.close(fd)
        conn.close()  # the launcher reads no pid and execs a fresh interpreter
        return None
    pid = os.fork()
    if pid == 0:
        server.close_in_child()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        return request
    for fd in fds:
        os.close(fd)
    child = server.children[pid] = _Child(pid, conn)
    server.selector.register(child.pidfd, selectors.EVENT_READ, ("exited", pid))
    try:
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    except OSError:  # the launcher is gone before it learnt the pid: nobody waits for the child
        os.kill(pid, signal.SIGKILL)
        return None
    server.selector.register(conn, selectors.EVENT_READ, ("launcher", pid))
    child.watched = True
    return None


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


# -- the child -------------------------------------------------------------------------------------


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
    import importlib.metadata

    import pydantic.plugin._loader

    signal.set_wakeup_fd(-1)
    for signum in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            signal.signal(signum, signal.SIG_DFL)
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
    extra = _python_path(env, cwd)
    sys.path[:] = [first, *extra, *(p for p in sys.path if p not in extra)]
    sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    # pydantic reads its plugins' entry points once, at the first model class (in the fork server,
    # from the server's path): read them again from this path when asked, as a fresh process would.
    pydantic.plugin._loader._plugins = None
    importlib.invalidate_caches()
    importlib.metadata.MetadataPathFinder().invalidate_caches()  # folder listings: 3.11's call above keeps them


def _without_these_frames(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """``sys.excepthook`` for the child: this file's frames are not the command's."""
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:  # type: ignore[attr-defined]
        tb = tb.tb_next  # type: ignore[attr-defined]
    # The default hook prints the exception's own traceback, not the one it is given.
    sys.__excepthook__(kind, value.with_traceback(tb), tb)  # type: ignore[arg-type]


def run(request: dict[str, object]) -> None:
    """Run the request's module as ``python -m`` does, or its script in a new ``__main__`` (a
    SystemExit ends the process)."""
    import importlib.machinery
    import runpy
    import types

    args = request["args"]
    assert isinstance(args, list)
    sys.excepthook = _without_these_frames
    main = sys.modules["__main__"] = types.ModuleType("__main__")
    if args[0] == "-m":
        sys.argv[:] = ["-m", *args[2:]]
        runpy._run_module_as_main(args[1])  # type: ignore[attr-defined]  # what `python -m` calls
        return
    sys.argv[:] = list(args)
    path = os.path.abspath(args[0])  # a script's __file__ is absolute (Python 3.9 and later)
    main.__file__ = path
    main.__cached__ = None  # type: ignore[attr-defined]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    with open(path, "rb") as file:
        code = compile(file.read(), path, "exec")
    exec(code, main.__dict__)


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
