"""Ways round the side-effect scope found by tester twenty-nine, in a read (process-wide guards,
as ``serve`` installs them, unless a test says otherwise):

- F5 the server's event loop: its task factory (the runtime's containment of tasks raising
  ``SystemExit``), debug mode, handlers and executor set, the loop stopped or closed, are refused;
  a loop the read made itself is its own; a SystemExit from a task or callback a read scheduled
  past the task factory (``asyncio.Task``, ``call_soon``) is contained all the same.
- F1 a path given as any bytes-like object (``bytearray``, ``memoryview``, ``array``), which a Unix
  socket's ``bind`` takes and ``os`` still takes (deprecated), is judged as its bytes name it;
- F2 the standard library's C writers that raise no "open" audit event: ``readline``'s history
  files, a SQLite database created by ``sqlite3.connect`` (or, tester 32 F6, by ``ATTACH`` or
  ``VACUUM INTO`` on a connection made in the read), a Tcl interpreter (``tkinter``: its
  code writes files and starts processes unseen);
- F4 a standard descriptor's mode changed by ``fcntl.ioctl`` (``FIONBIO``...) or ``termios``
  (``tcsetattr``, ``tcflush``...), and input pushed into a terminal (``TIOCSTI``) on any descriptor;
- F6 process settings every later request meets: ``tracemalloc`` started or stopped, ``logging``
  disabled, its logger class, record factory or warnings capture replaced;
- F7 a native library loaded through the import system from where it would not find it
  (``ExtensionFileLoader(name, path)``: a ``dlopen`` whose initialisers run unjudged), at both
  levels; a first import of an extension module passes;
- F8 a guarded module's code run again (``importlib.reload``, ``exec_module``) is refused: it
  would re-make its classes unguarded for every later read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import warnings
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sink_support import _scope

from mcp_providers import _sideeffects
from mcp_providers.errors import SideEffectRefused

# -- F5: the server's event loop -----------------------------------------------------------------

_POOL = concurrent.futures.ThreadPoolExecutor(1)
LOOP_SETTINGS: dict[str, Callable[[asyncio.AbstractEventLoop], Any]] = {
    "set_task_factory": lambda loop: loop.set_task_factory(loop.get_task_factory()),
    "set_debug": lambda loop: loop.set_debug(loop.get_debug()),
    "set_exception_handler": lambda loop: loop.set_exception_handler(loop.get_exception_handler()),
    "set_default_executor": lambda loop: loop.set_default_executor(_POOL),
    "add_signal_handler": lambda loop: loop.add_signal_handler(signal.SIGWINCH, lambda: None),
    "remove_signal_handler": lambda loop: loop.remove_signal_handler(signal.SIGWINCH),
    "stop": lambda loop: loop.stop(),
    "close": lambda loop: loop.close(),
    "shutdown_default_executor": lambda loop: loop.shutdown_default_executor().close(),
    "shutdown_asyncgens": lambda loop: loop.shutdown_asyncgens().close(),
}


@pytest.mark.parametrize("name", LOOP_SETTINGS)
def test_a_setting_of_the_servers_event_loop_is_refused_in_a_read(name: str) -> None:
    loop = asyncio.new_event_loop()  # made outside any read: the host's
    try:
        with _scope() as scope, pytest.raises(SideEffectRefused, match=f"loop.{name} on the server's event loop"):
            LOOP_SETTINGS[name](loop)
        assert [v["category"] for v in scope.violations] == ["process"]
        assert not loop.is_closed()
    finally:
        loop.close()


def test_a_loop_the_read_made_is_its_own() -> None:
    results: list[int] = []

    async def answer() -> int:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: 42)

    def library_call() -> None:  # a sync library running its own loop in a worker thread
        results.append(asyncio.run(answer(), debug=False))

    with _scope() as scope:
        loop = asyncio.new_event_loop()
        for name, change in LOOP_SETTINGS.items():
            if name not in ("add_signal_handler", "remove_signal_handler"):  # signal.signal: refused by its own rule
                change(loop)
        worker = threading.Thread(target=library_call)
        worker.start()
        worker.join()
    assert results == [42] and loop.is_closed() and scope.violations == []


class _Stdin:
    def fileno(self) -> int:  # a file object, as asyncio takes one
        return 0


def test_a_reader_or_writer_of_a_standard_descriptor_is_refused_on_any_loop() -> None:
    host = asyncio.new_event_loop()
    read, write = os.pipe()
    try:
        with _scope() as scope:
            own = asyncio.new_event_loop()
            for loop in (host, own):
                for fd in (0, _Stdin()):
                    with pytest.raises(SideEffectRefused, match="add_reader of the standard descriptor 0"):
                        loop.add_reader(fd, lambda: None)
                with pytest.raises(SideEffectRefused, match="remove_writer of the standard descriptor 1"):
                    loop.remove_writer(1)
                loop.add_reader(read, lambda: None)  # its own descriptor: its own business
                assert loop.remove_reader(read)
            own.close()
        assert len(scope.violations) == 6
    finally:
        host.close()
        os.close(read)
        os.close(write)


_TASK_FACTORY_RESET = """
import asyncio, sys
from types import SimpleNamespace
import anyio
from mcp import MCPError
from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.testing import compose, connect

class P(ResourceProvider):
    name = "probe"
    prefixes = ("probe://",)

    def resources(self):
        return [Resource(uri="probe://reset", name="reset"), Resource(uri="probe://task", name="task")]

    async def read(self, request: ReadRequest) -> Content:
        if request.uri.endswith("reset"):
            asyncio.get_running_loop().set_task_factory(None)
        else:
            async def boom() -> None:
                raise SystemExit(3)
            asyncio.get_running_loop().create_task(boom())
            await asyncio.sleep(0.1)
        return Content(text="ok")

comp = compose({"probe": SimpleNamespace(register_resource_providers=hookimpl(lambda: [P()]))})
comp.runtime.process_guards = True

async def main() -> None:
    async with connect(comp) as client:
        try:
            await client.read_resource("probe://reset")
            print("reset served")
        except MCPError as e:
            print("reset", e.error.code)
        await client.read_resource("probe://task")
        print("server still answers")

anyio.run(main, backend="asyncio")
"""


_BYPASSES = {
    "asyncio.Task": "asyncio.Task(boom())",
    "asyncio.Task on a loop": "asyncio.Task(boom(), loop=asyncio.get_running_loop())",
    "loop.call_soon": "asyncio.get_running_loop().call_soon(sys.exit, 3)",
    "loop.call_later": "asyncio.get_running_loop().call_later(0, sys.exit, 3)",
    "loop.call_soon_threadsafe": "asyncio.get_running_loop().call_soon_threadsafe(sys.exit, 3)",
}


@pytest.mark.parametrize("how", _BYPASSES)
def test_a_systemexit_from_work_a_read_scheduled_past_the_task_factory_is_contained(how: str) -> None:
    """The task factory sees only ``loop.create_task``: a task made by its class, or a callback,
    raising SystemExit out of the loop ended the server the same way."""
    script = _TASK_FACTORY_RESET.replace(
        "asyncio.get_running_loop().create_task(boom())", _BYPASSES[how] + "; boom().close()"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
    assert done.stdout == "reset -32008\nserver still answers\n", done.stderr[-2000:]
    # contained where it was scheduled, the provider named (asyncio's Handle._run would contain it unnamed)
    assert "work provider 'probe' scheduled raised SystemExit" in done.stderr, done.stderr[-2000:]


def test_a_read_cannot_take_the_task_containment_off_the_servers_loop() -> None:
    """Tester twenty-nine F5: a read reset the task factory, then a task raising SystemExit ended serve."""
    done = subprocess.run([sys.executable, "-c", _TASK_FACTORY_RESET], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
    assert done.stdout == "reset -32008\nserver still answers\n", done.stderr[-2000:]


# -- F8: a guarded module's code run again ---------------------------------------------------------

_RELOADS = """
import importlib, json, socket, sys
from mcp_providers import _sideeffects
from mcp_providers.errors import SideEffectRefused

def attempt(call):
    try:
        with _sideeffects.side_effect_scope(provider="p", plugin="plugin", target="mem://x"):
            call()
    except SideEffectRefused as exc:
        return "refused: " + str(exc)
    return "served"

seen = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    seen[name] = attempt(lambda: importlib.reload(module))
    loader = module.__spec__.loader  # the same code run again without reload's name
    seen[name + " exec_module"] = attempt(lambda: loader.exec_module(module))
seen["a first import"] = attempt(lambda: importlib.import_module("colorsys"))
seen["an unguarded module reloaded"] = attempt(lambda: importlib.reload(sys.modules["colorsys"]))
guarded = (sys.modules["socket"].socket.sendall, sys.modules["threading"].Thread.start)
seen["still guarded"] = all(hasattr(g, "__wrapped__") for g in guarded)
print(json.dumps(seen))
"""
GUARDED_MODULES = (
    "socket", "threading", "ssl", "http.client", "logging", "os", "asyncio.base_events",
    "concurrent.futures.thread",
)  # fmt: skip


def test_a_guarded_modules_code_is_not_run_again_in_a_read() -> None:
    """Tester twenty-nine F8: ``importlib.reload(socket)`` made a plain socket class, unguarded,
    for every later read; ``reload(threading)`` a ``Thread`` whose threads left the read's scope."""
    import json

    done = subprocess.run(
        [sys.executable, "-c", _RELOADS, *GUARDED_MODULES], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    for name in GUARDED_MODULES:
        for how in (name, f"{name} exec_module"):
            assert seen[how].startswith("refused: side-effect-in-resource-read"), (how, seen[how])
            assert f"the code of the module {name!r} again" in seen[how], seen[how]
    assert seen["a first import"] == seen["an unguarded module reloaded"] == "served"
    assert seen["still guarded"] is True


# -- F1: a path given as bytes-like ---------------------------------------------------------------

BYTES_LIKE: dict[str, Callable[[str], Any]] = {
    "bytearray": lambda path: bytearray(path.encode()),
    "memoryview": lambda path: memoryview(path.encode()),
    "array": lambda path: array("b", path.encode()),
}


@pytest.mark.parametrize("kind", BYTES_LIKE)
def test_a_unix_socket_bound_at_a_bytes_like_path_is_judged_where_it_lands(kind: str, tmp_path: Path) -> None:
    outside = str(tmp_path / "made-by-a-read.sock")
    with _scope() as scope:
        with socket_unix() as sock, pytest.raises(SideEffectRefused, match="binding a Unix socket at"):
            sock.bind(BYTES_LIKE[kind](outside))
        with socket_unix() as sock:  # in the scratch folder: the read's own
            sock.bind(BYTES_LIKE[kind](os.path.join(_sideeffects.scratch_dir(), "own.sock")))
        with socket_unix() as sock:  # an abstract name (a NUL first): no file
            sock.bind(BYTES_LIKE[kind]("\0mcp-providers-t29-" + kind))
    assert not os.path.exists(outside) and len(scope.violations) == 1


def socket_unix() -> Any:
    import socket

    return socket.socket(socket.AF_UNIX)


@pytest.mark.parametrize("kind", BYTES_LIKE)
def test_an_os_path_given_as_bytes_like_is_judged_where_it_lands(kind: str, tmp_path: Path) -> None:
    as_given = BYTES_LIKE[kind]
    with _scope(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # os still takes them, deprecated
        scratch = _sideeffects.scratch_dir()
        os.mkdir(as_given(os.path.join(scratch, "own")))  # the read's own folder: made
        with pytest.raises(SideEffectRefused, match=r"os\.mkdir of"):
            os.mkdir(as_given(str(tmp_path / "out")))
        with pytest.raises(SideEffectRefused, match=r"making a symlink at .* \(out of the scratch folder"):
            os.symlink(as_given(str(tmp_path)), os.path.join(scratch, "leads-out"))
        os.mkdir(as_given(os.path.join(scratch, "own", "..", "stays")))  # a '..' under the lock: stays inside
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", BYTES_LIKE)
def test_a_relative_bytes_like_path_through_an_unguarded_os_open_is_refused_in_words(kind: str) -> None:
    posix_open = os.open.__wrapped__  # the builtin, as a reference saved elsewhere would be
    with _scope(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(SideEffectRefused, match="relative to a directory descriptor that cannot be known"):
            posix_open(BYTES_LIKE[kind]("t29-relative"), os.O_WRONLY | os.O_CREAT)
    assert not os.path.exists("t29-relative")


# -- F2: C writers with no "open" audit event ----------------------------------------------------

READLINE_WRITERS: dict[str, Callable[[Any, str], Any]] = {
    "write_history_file": lambda readline, path: readline.write_history_file(path),
    "append_history_file": lambda readline, path: readline.append_history_file(1, path),
}


@pytest.mark.parametrize("name", READLINE_WRITERS)
def test_readlines_history_writers_are_judged_as_the_writes_they_are(name: str, tmp_path: Path) -> None:
    import readline

    victim, new = tmp_path / "precious.conf", tmp_path / "new-history"
    victim.write_text("setting = 1\n")
    readline.add_history("written by a read")
    with _scope() as scope:
        for path in (victim, new):
            with pytest.raises(SideEffectRefused, match=f"readline.{name}"):
                READLINE_WRITERS[name](readline, str(path))
        own = os.path.join(_sideeffects.scratch_dir(), "history")
        open(own, "w").close()  # append_history_file appends to a file that exists
        READLINE_WRITERS[name](readline, own)  # the read's own file
        assert "written by a read" in Path(own).read_text()
    assert victim.read_text() == "setting = 1\n" and not new.exists() and len(scope.violations) == 2


def test_a_sqlite_database_created_in_a_read_is_refused_and_one_opened_passes(tmp_path: Path) -> None:
    import sqlite3

    existing = tmp_path / "catalog.db"
    sqlite3.connect(existing).close()  # the host's database
    with _scope() as scope:
        with pytest.raises(SideEffectRefused, match="creating the SQLite database"):
            sqlite3.connect(tmp_path / "new.db")
        with pytest.raises(SideEffectRefused, match="creating the SQLite database"):
            sqlite3.connect(f"file:{tmp_path / 'new-by-uri.db'}?mode=rwc", uri=True)
        for database in (
            existing,
            ":memory:",
            "",
            f"file:{existing}?mode=ro",
            f"file:{tmp_path / 'none.db'}?mode=memory",
        ):
            sqlite3.connect(database, uri=str(database).startswith("file:")).close()
        sqlite3.connect(os.path.join(_sideeffects.scratch_dir(), "own.db")).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.db"] and len(scope.violations) == 2


@pytest.mark.parametrize("first", [":memory:", "", "existing"])
def test_a_sqlite_connection_made_in_a_read_attaches_or_vacuums_into_no_new_file(tmp_path: Path, first: str) -> None:
    """Tester 32 (F6): a connection that creates nothing (in memory, temporary, or a database that
    exists) then ``ATTACH DATABASE 'new.db'`` or ``VACUUM INTO 'new.db'`` created files no event
    named; both are refused (SQLite's authorizer reports them as ATTACH), an existing database
    attached and one in the scratch folder still pass."""
    import sqlite3

    existing = tmp_path / "catalog.db"
    sqlite3.connect(existing).close()
    database = str(existing) if first == "existing" else first
    with _scope() as scope:
        connection = sqlite3.connect(database)
        for statement in (
            f"ATTACH DATABASE '{tmp_path / 'attached.db'}' AS a",
            f"ATTACH DATABASE 'file:{tmp_path / 'by-uri.db'}?mode=rwc' AS u",
            f"VACUUM INTO '{tmp_path / 'vacuumed.db'}'",
        ):
            with pytest.raises(sqlite3.DatabaseError, match=r"not authorized|authorization denied"):
                connection.execute(statement)
        connection.execute(f"ATTACH DATABASE '{existing}' AS host")  # one that exists is opened
        connection.execute("ATTACH DATABASE ':memory:' AS scratch")
        connection.execute(f"VACUUM INTO '{os.path.join(_sideeffects.scratch_dir(), 'copy.db')}'")
        connection.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.db"], sorted(tmp_path.iterdir())
    assert len(scope.violations) == 3 and all("SQLite database" in v["attempted"] for v in scope.violations)
    assert isinstance(scope.refused, SideEffectRefused)  # the read is refused though SQLite's own error was raised


def test_a_sqlite_connection_made_past_sqlite3_connect_in_a_read_is_refused() -> None:
    """Tester 32 (F6): the authorizer is given where ``sqlite3.connect`` returns; a connection made
    by its class (or another name of ``connect``) would have none, so it is refused."""
    import sqlite3

    with _scope() as scope, pytest.raises(SideEffectRefused, match=r"past sqlite3\.connect"):
        sqlite3.Connection(":memory:")
    assert len(scope.violations) == 1
    with _scope() as scope:
        sqlite3.dbapi2.connect(":memory:").close()
    assert scope.violations == []


def test_a_tcl_interpreter_is_not_made_in_a_read(tmp_path: Path) -> None:
    import tkinter

    written = tmp_path / "by-tcl"
    with _scope(), pytest.raises(SideEffectRefused, match="a Tcl interpreter"):
        tkinter.Tcl().eval(f"set f [open {written} w]; puts $f x; close $f")
    assert not written.exists()


# -- F4: ioctl and termios on the standard descriptors --------------------------------------------


def _ioctl_calls() -> dict[str, Callable[[], Any]]:
    import fcntl
    import struct
    import termios

    same = struct.pack("i", 0)  # blocking, not async: what the test process's descriptors are
    return {
        "ioctl FIONBIO": lambda: fcntl.ioctl(0, termios.FIONBIO, same),
        "ioctl FIOASYNC": lambda: fcntl.ioctl(2, termios.FIOASYNC, same),
        "ioctl TIOCSWINSZ": lambda: fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0)),
        "termios.tcsetattr": lambda: termios.tcsetattr(0, termios.TCSANOW, [0, 0, 0, 0, 0, 0, [b"\0"] * 32]),
        "termios.tcsetattr of a file object": lambda: termios.tcsetattr(_Stdin(), termios.TCSANOW, []),
        "termios.tcflush": lambda: termios.tcflush(0, termios.TCIFLUSH),
        "termios.tcflow": lambda: termios.tcflow(1, termios.TCOON),
        "termios.tcsendbreak": lambda: termios.tcsendbreak(1, 0),
        "termios.tcsetwinsize": lambda: termios.tcsetwinsize(1, (24, 80)),
        "os.set_inheritable": lambda: os.set_inheritable(2, os.get_inheritable(2)),
    }


@pytest.mark.parametrize("name", _ioctl_calls())
def test_a_standard_descriptors_mode_is_not_changed_in_a_read(name: str) -> None:
    """Tester twenty-nine F4: ``os.set_blocking(0, False)`` was refused, ``ioctl(0, FIONBIO)`` not."""
    with _scope() as scope, pytest.raises(SideEffectRefused, match="standard descriptor"):
        _ioctl_calls()[name]()
    assert [v["category"] for v in scope.violations] == ["process"]


def test_input_pushed_into_a_terminal_is_refused_on_any_descriptor() -> None:
    import fcntl
    import termios

    main, tty = os.openpty()  # the read's own terminal: still a terminal another process may read
    try:
        with _scope(), pytest.raises(SideEffectRefused, match="TIOCSTI"):
            fcntl.ioctl(tty, termios.TIOCSTI, b"x")
    finally:
        os.close(main)
        os.close(tty)


def test_what_asks_a_terminal_or_changes_the_reads_own_passes() -> None:
    import fcntl
    import struct
    import termios

    main, tty = os.openpty()
    try:
        with _scope() as scope:
            for fd in (0, 1, 2):
                try:
                    fcntl.ioctl(fd, termios.TIOCGWINSZ, struct.pack("HHHH", 0, 0, 0, 0))  # a question
                    fcntl.ioctl(fd, termios.FIONREAD, struct.pack("i", 0))
                except OSError:
                    pass  # not a terminal here
            termios.tcsetattr(tty, termios.TCSANOW, termios.tcgetattr(tty))  # its own terminal
            fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
            termios.tcflush(tty, termios.TCIFLUSH)
        assert scope.violations == []
    finally:
        os.close(main)
        os.close(tty)


# -- F6: process settings every later request meets ----------------------------------------------


def _start_tracing() -> None:  # stopped after the test, should a broken guard let it through
    import tracemalloc

    tracemalloc.start()


def _settings() -> dict[str, Callable[[], Any]]:
    import logging
    import tracemalloc

    return {  # each sets what is set already: a missing guard shows as a missing refusal
        "tracemalloc.start": _start_tracing,
        "tracemalloc.stop": tracemalloc.stop,
        "tracemalloc.clear_traces": tracemalloc.clear_traces,
        "logging.disable": lambda: logging.disable(logging.root.manager.disable),
        "logging.setLoggerClass": lambda: logging.setLoggerClass(logging.getLoggerClass()),
        "logging.setLogRecordFactory": lambda: logging.setLogRecordFactory(logging.getLogRecordFactory()),
        "logging.captureWarnings": lambda: logging.captureWarnings(False),
    }


@pytest.mark.parametrize("name", _settings())
def test_a_process_setting_every_later_request_meets_is_refused_in_a_read(name: str) -> None:
    import tracemalloc

    try:
        with _scope() as scope, pytest.raises(SideEffectRefused, match=name.replace(".", r"\.")):
            _settings()[name]()
        assert [v["category"] for v in scope.violations] == ["process"]
    finally:
        tracemalloc.stop()


# -- F7: a native library loaded as an extension module -------------------------------------------

_EXTENSIONS = """
import importlib, importlib.machinery, importlib.util, json, os, sys
from mcp_providers._sideeffects import levels
from mcp_providers.errors import SideEffectRefused

level, lib, marker = sys.argv[1:4]
(levels.install if level == "process-wide" else levels.install_scoped)()

def attempt(call):
    scope, token = levels.enter_scope("p", "plugin", "mem://x", "read", "enforce")
    try:
        call()
    except SideEffectRefused as exc:
        return "refused: " + str(exc)
    except ImportError:
        pass  # loaded, then no PyInit_ function: the library's initialisers ran
    finally:
        levels.exit_scope(scope, token)
    return "served"

def load(name, path):
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    loader.create_module(importlib.util.spec_from_file_location(name, path, loader=loader))

seen = {
    "any name": attempt(lambda: load("anything", lib)),
    "its own name": attempt(lambda: load(os.path.basename(lib).split(".")[0], lib)),
    "on sys.path under another name": attempt(lambda: (sys.path.append(os.path.dirname(lib)), load("other", lib))),
    "a first import": attempt(lambda: importlib.import_module("xxlimited")),
    "a package's extension": attempt(lambda: importlib.import_module("charset_normalizer")),
    "marker": os.path.exists(marker),
}
print(json.dumps(seen))
"""


@pytest.mark.parametrize("level", ["scoped", "process-wide"])
def test_a_native_library_is_not_loaded_as_an_extension_from_where_imports_would_not_find_it(
    level: str, tmp_path: Path
) -> None:
    import json

    marker, source, lib = tmp_path / "written-by-native", tmp_path / "c.c", tmp_path / "libnative.so"
    body = 'FILE*f=fopen("' + str(marker) + '","w");if(f){fputs("x",f);fclose(f);}'
    source.write_text("#include <stdio.h>\n__attribute__((constructor)) static void k(void){" + body + "}\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    done = subprocess.run(
        [sys.executable, "-c", _EXTENSIONS, level, str(lib), str(marker)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    for how in ("any name", "its own name", "on sys.path under another name"):
        assert seen[how].startswith("refused: side-effect-in-resource-read: loading the native library"), seen[how]
    assert seen["a first import"] == seen["a package's extension"] == "served"
    assert seen["marker"] is False
