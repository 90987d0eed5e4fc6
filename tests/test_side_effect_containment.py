"""Ways out of the side-effect scope found by tester twenty-two, each against a real loopback
``http.server`` (which takes lenient request lines as requests) or a folder outside the scratch one.

- F1 request lines whose HTTP version is spelled as a lenient server still reads it (``HTTP/01.1``);
- F2 a request head split over two socket objects of one connection (``dup()``, ``os.write``,
  ``socket.socket(fileno=...)``): what was seen is kept per kernel socket, not per Python object;
- F3 every call that moves bytes into a socket descriptor (``os.splice``, a file object opened
  on the descriptor, the ``posix`` names of ``os.write``...);
- F4/F5 the same functions reached through ``posix`` (``mkfifo``, ``mknod``, and the tree calls a
  swapping thread uses) and openers without a patchable name (``io.FileIO``);
- process-wide changes a read might make as ``os.chdir`` would (``os.umask``, the environment).
"""

from __future__ import annotations

import _io
import asyncio
import contextlib
import contextvars
import functools
import io
import os
import posix
import socket
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sink_support import _finish, _post, _scope, sink

from mcp_providers import _sideeffects
from mcp_providers.errors import SideEffectRefused

pytestmark = pytest.mark.anyio


# -- F1: request lines as lenient servers read them -----------------------------------------------


@pytest.mark.parametrize(
    "version",
    [
        "HTTP/01.1",  # http.server: leading zeros (RFC 2145 3.1)
        "HTTP/1.01",
        "HTTP/0000000001.0000000001",  # http.server takes up to ten digits each
        "HTTP/1.001",  # nginx: any number of minor digits up to 99
        "HTTP/10.0",
        "HTTP/1",  # no minor
        "http/01.1",  # any case
        "HTTP/1.1x",  # junk after the digits (an unanchored match)
        "HTTP/\u0661.\u0661",  # non-ASCII digits (str.isdigit, \\d without re.ASCII): sent as UTF-8
    ],
)
def test_a_request_line_with_any_http_version_is_judged(version: str) -> None:
    with (
        sink() as (address, seen),
        _scope(),
        socket.create_connection(address) as sock,
        pytest.raises(SideEffectRefused, match="POST"),
    ):
        sock.sendall(_post(address, "", f"POST /escaped {version}".encode()))
    assert seen == []


def test_a_line_with_no_version_word_is_not_a_request_line() -> None:
    # Other protocols' text lines pass (a Redis inline command, a greeting): only a last word that
    # starts with HTTP/ makes a line a request line.
    text = b"SET key HTTPx/1\r\nhello there\r\nPOST /x HTTP\r\nDEL k /HTTP/1.1\r\n"
    a, b = socket.socketpair()
    with a, b, _scope():
        a.sendall(text)
        assert b.recv(len(text), socket.MSG_WAITALL) == text


# -- F2: one connection, many socket objects ------------------------------------------------------


def _split_dup(sock: socket.socket, head: bytes, i: int) -> None:
    sock.send(head[:i])
    with sock.dup() as other:
        other.sendall(head[i:])


def _split_os_write(sock: socket.socket, head: bytes, i: int) -> None:
    sock.send(head[:i])
    os.write(sock.fileno(), head[i:])


def _split_fileno(sock: socket.socket, head: bytes, i: int) -> None:
    os.write(sock.fileno(), head[:i])
    with socket.socket(fileno=os.dup(sock.fileno())) as other:
        other.sendall(head[i:])


def _split_fromfd(sock: socket.socket, head: bytes, i: int) -> None:
    with socket.fromfd(sock.fileno(), sock.family, sock.type) as other:
        other.send(head[:i])
    sock.sendall(head[i:])


def _split_posix_write(sock: socket.socket, head: bytes, i: int) -> None:
    sock.send(head[:i])
    other = os.dup(sock.fileno())  # another descriptor number, the same socket (os.dup2 is refused itself)
    try:
        posix.write(other, head[i:])
    finally:
        os.close(other)


@pytest.mark.parametrize("split", [_split_dup, _split_os_write, _split_fileno, _split_fromfd, _split_posix_write])
def test_a_head_split_over_two_socket_objects_never_arrives_whole(split: Callable[..., None]) -> None:
    with sink() as (address, seen):
        with _scope(), socket.create_connection(address) as sock:
            head = _post(address, "/escaped")
            with pytest.raises(SideEffectRefused, match="POST"):
                split(sock, head, head.index(b"HTTP/") + 2)  # the first part is no request line yet
        with contextlib.suppress(OSError):
            os.close(200)
    assert seen == []


def test_a_request_line_the_connection_ends_unfinished_is_judged_when_sent() -> None:
    # http.server takes a request line cut off by the end of the stream as a whole one (and no
    # headers): "refused when its line ends" must count the end of the connection as one.
    with sink() as (address, seen):
        with _scope(), socket.create_connection(address) as sock:
            with pytest.raises(SideEffectRefused, match="POST"):
                sock.send(b"POST /escaped HTTP/1.1")
            sock.shutdown(socket.SHUT_WR)
            _finish(sock)
        with _scope(), socket.create_connection(address) as sock:  # an unfinished version too
            with pytest.raises(SideEffectRefused, match="POST"):
                sock.send(b"POST /escaped HT" + b"TP/")
            sock.shutdown(socket.SHUT_WR)
            _finish(sock)
        with _scope(), socket.create_connection(address) as sock:  # a GET so sent is sent, once judged
            sock.send(b"GET /fine HTTP/1.")
            sock.send(b"1\r\nHost: x\r\nConnection: close\r\n\r\n")
            _finish(sock)
    assert seen == ["GET /fine"]


def _nearly_full() -> tuple[socket.socket, socket.socket, int]:
    """A non-blocking Unix stream socket with room for part of the next send, and how much."""

    def fill() -> tuple[socket.socket, socket.socket]:
        a, b = socket.socketpair()
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        a.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                a.send(b"x" * 1024)
        b.recv(1024)  # room for one more buffer
        return a, b

    a, b = fill()
    with a, b:
        room = a.send(b"y" * 100_000)  # the kernel takes the same part each time from the same state
    a, b = fill()
    return a, b, room


@pytest.mark.parametrize("send", ["send", "os.write"])
def test_what_a_partial_send_left_unsent_is_not_read_as_sent(send: str) -> None:
    # The unsent "GET " is sent again or not at all; read as sent, the POST that follows instead
    # would be read as the target of a GET.
    a, b, room = _nearly_full()
    with a, b, _scope():
        data = b"A" * (room - 2) + b"\r\nGET "
        write = a.send if send == "send" else functools.partial(os.write, a.fileno())
        assert write(data) == room  # all but "GET "
        with contextlib.suppress(BlockingIOError):  # the peer reads everything: room again
            while b.recv(1 << 16, socket.MSG_DONTWAIT):
                pass
        with pytest.raises(SideEffectRefused, match="POST"):
            write(b"POST /escaped HTTP/1.1\r\nHost: x\r\n\r\n")


@pytest.mark.parametrize("send", ["send", "os.write"])
def test_what_a_send_that_failed_would_have_sent_is_not_read_as_sent(send: str) -> None:
    a, b, _room = _nearly_full()
    with a, b, _scope():
        a.send(b"y" * 100_000)  # full now
        write = a.send if send == "send" else functools.partial(os.write, a.fileno())
        with pytest.raises(BlockingIOError):
            write(b"\r\nGET ")  # nothing of it sent
        with contextlib.suppress(BlockingIOError):
            while b.recv(1 << 16, socket.MSG_DONTWAIT):
                pass
        with pytest.raises(SideEffectRefused, match="POST"):
            write(b"POST /escaped HTTP/1.1\r\nHost: x\r\n\r\n")


# -- F3: every call that moves bytes into a socket ------------------------------------------------


def _via_splice(sock: socket.socket, data: bytes) -> None:
    r, w = os.pipe()
    try:
        os.write(w, data)
        os.splice(r, sock.fileno(), len(data))
    finally:
        os.close(r)
        os.close(w)


def _via_posix_splice(sock: socket.socket, data: bytes) -> None:
    r, w = os.pipe()
    try:
        os.write(w, data)
        posix.splice(r, sock.fileno(), len(data))
    finally:
        os.close(r)
        os.close(w)


def _via_file_object(sock: socket.socket, data: bytes) -> None:
    with open(sock.fileno(), "wb", buffering=0, closefd=False) as f:
        f.write(data)


def _via_fileio(sock: socket.socket, data: bytes) -> None:
    with _io.FileIO(sock.fileno(), "w", closefd=False) as f:
        f.write(data)


def _via_fdopen(sock: socket.socket, data: bytes) -> None:
    with os.fdopen(os.dup(sock.fileno()), "wb") as f:
        f.write(data)


def _via_posix_writev(sock: socket.socket, data: bytes) -> None:
    posix.writev(sock.fileno(), [data[:5], data[5:]])


def _via_posix_sendfile(sock: socket.socket, data: bytes) -> None:
    path = os.path.join(_sideeffects.scratch_dir(), "request.bin")
    with open(path, "wb") as f:
        f.write(data)
    with open(path, "rb") as f:
        posix.sendfile(sock.fileno(), f.fileno(), 0, len(data))


SENDS = [
    _via_splice,
    _via_posix_splice,
    _via_file_object,
    _via_fileio,
    _via_fdopen,
    _via_posix_writev,
    _via_posix_sendfile,
]


@pytest.mark.parametrize("send", SENDS)
def test_every_call_that_moves_bytes_into_a_socket_is_judged(send: Callable[..., None]) -> None:
    # Judged where the bytes can be read first (a POST), refused where they cannot (a splice from
    # a pipe, a file object on the socket's descriptor).
    with (
        sink() as (address, seen),
        _scope(),
        socket.create_connection(address) as sock,
        pytest.raises(SideEffectRefused, match=r"POST|splice|socket's descriptor"),
    ):
        send(sock, _post(address, "/escaped"))
    assert seen == []


def test_a_splice_into_a_socket_is_refused_whatever_it_carries_and_into_a_pipe_is_not() -> None:
    with sink() as (address, seen), _scope():
        with socket.create_connection(address) as sock, pytest.raises(SideEffectRefused, match="splice"):
            _via_splice(sock, b"GET /fine HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        r, w = os.pipe()
        r2, w2 = os.pipe()
        try:
            os.write(w, b"data")
            assert os.splice(r, w2, 4) == 4
            assert os.read(r2, 4) == b"data"
        finally:
            for fd in (r, w, r2, w2):
                os.close(fd)
    assert seen == []


def test_a_file_object_on_a_files_descriptor_may_still_write() -> None:
    with _scope():
        fd = os.open(os.path.join(_sideeffects.scratch_dir(), "f"), os.O_WRONLY | os.O_CREAT, 0o600)
        with open(fd, "wb") as f:
            f.write(b"fine")


# -- F4: the same function under every name -------------------------------------------------------


def test_nt_is_not_a_name_for_these_functions_here() -> None:
    assert "nt" not in sys.modules and sys.platform != "win32"


def test_every_guarded_os_function_is_guarded_under_its_posix_name_too() -> None:
    with _scope():
        pass  # installs every process-wide guard
    guarded = [n for n, f in vars(os).items() if callable(f) and hasattr(f, "__wrapped__") and hasattr(posix, n)]
    assert {"write", "mkfifo", "mknod", "rename", "mkdir", "symlink", "open", "splice", "umask"} <= set(guarded)
    assert [n for n in guarded if getattr(posix, n) is not getattr(os, n)] == []


_AT_INSTALL = """
import os, posix
from mcp_providers._sideeffects import levels
levels.install()  # no scope entered yet: the saved-reference redirect has not run
names = ("write", "mkfifo", "mknod", "rename", "mkdir", "symlink", "open", "splice")
print([n for n in names if getattr(posix, n) is not getattr(os, n) or not hasattr(getattr(posix, n), "__wrapped__")])
"""


def test_install_puts_each_guard_under_its_posix_name_at_once() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _AT_INSTALL], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "make",
    [
        lambda p: posix.mkfifo(p),
        lambda p: posix.mknod(p, 0o644 | stat.S_IFREG),
        lambda p: os.mknod(p, 0o644 | stat.S_IFIFO),
        lambda p: posix.mkfifo(os.path.basename(p), dir_fd=posix.open(os.path.dirname(p), os.O_RDONLY)),
    ],
)
def test_a_fifo_or_node_made_outside_the_scratch_folder_is_refused(make: Callable[[str], None], tmp_path: Path) -> None:
    with _scope(), pytest.raises(SideEffectRefused):
        make(str(tmp_path / "node"))
    assert os.listdir(tmp_path) == []


def test_a_fifo_in_the_scratch_folder_is_made() -> None:
    with _scope():
        path = os.path.join(_sideeffects.scratch_dir(), "fifo")
        posix.mkfifo(path)
        assert stat.S_ISFIFO(os.stat(path).st_mode)


# -- F5: the path race, whichever names the read's threads use ------------------------------------

PX = (posix.rename, posix.mkdir, posix.symlink)


def _open_builtin(path: str) -> None:
    with open(path, "w") as f:
        f.write("x")


def _open_fileio(path: str) -> None:
    with io.FileIO(path, "w") as f:
        f.write(b"x")


def _open_posix(path: str) -> None:
    os.close(posix.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


@pytest.mark.parametrize(
    ("opener", "names"),
    [
        (_open_builtin, "posix"),
        (_open_fileio, "os"),
        (_open_fileio, "posix"),
        (_open_posix, "posix"),
    ],
)
async def test_a_symlink_swapped_in_through_any_name_never_lets_a_write_out(
    opener: Callable[[str], None], names: str, tmp_path: Path
) -> None:
    module: object = posix if names == "posix" else os
    rename, mkdir, symlink = module.rename, module.mkdir, module.symlink  # type: ignore[attr-defined]
    victim = tmp_path / "victim"
    victim.mkdir()
    with _scope():
        parent = os.path.join(_sideeffects.scratch_dir(), "p")
        os.makedirs(os.path.join(parent, "d"))
        stop = threading.Event()
        swaps = [0]

        def swap() -> None:  # in the scope too (the context is copied)
            k = 0
            while not stop.is_set():
                k += 1
                with contextlib.suppress(OSError, SideEffectRefused):
                    rename(parent, f"{parent}.old{k}")
                    mkdir(parent)
                    symlink(str(victim), os.path.join(parent, "d"))
                    rename(parent, f"{parent}.link{k}")
                    mkdir(parent)
                    mkdir(os.path.join(parent, "d"))
                    swaps[0] += 1

        worker = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, swap)
        try:
            for n in range(3000):
                with contextlib.suppress(OSError, SideEffectRefused):
                    opener(os.path.join(parent, "d", f"race{n}"))
        finally:
            stop.set()
            await worker
    assert sorted(os.listdir(victim)) == []


@pytest.mark.parametrize(
    "target",
    [
        lambda victim, scratch: victim,  # absolute, outside
        lambda victim, scratch: os.path.relpath(victim, scratch),  # relative, through ..
        lambda victim, scratch: os.path.join(scratch, "..", os.path.basename(scratch), "x"),  # .. back in
        lambda victim, scratch: "inner/../inner",  # relative, climbing and back
    ],
)
def test_a_symlink_in_the_scratch_folder_may_only_lead_further_into_it(
    target: Callable[[str, str], str], tmp_path: Path
) -> None:
    with _scope():
        scratch = _sideeffects.scratch_dir()
        os.mkdir(os.path.join(scratch, "inner"))
        with pytest.raises(SideEffectRefused, match="symlink"):
            posix.symlink(target(str(tmp_path), scratch), os.path.join(scratch, "link"))
        os.symlink("inner", os.path.join(scratch, "fine"))  # relative, downwards: allowed
        os.symlink(os.path.join(scratch, "inner"), os.path.join(scratch, "fine2"))  # absolute, inside
        os.symlink(scratch, os.path.join(scratch, "inner", "top"))  # the folder itself: no path climbs
        climbing = os.path.join(scratch, "inner", "top", "inner", "..", "f")  # lands inside
        with pytest.raises(SideEffectRefused, match=r"'\.\.' in the scratch folder"):
            io.FileIO(climbing, "w").close()  # no lock held from its check to its open: a rename could move it
        open(climbing, "w").close()  # held: what the path resolves to when checked is what it opens
        assert os.path.realpath(os.path.join(scratch, "fine")) == os.path.join(scratch, "inner")


# -- LOW: process-wide state a read would change for every caller ---------------------------------


def test_changing_the_umask_in_a_read_is_refused() -> None:
    before = os.umask(0o022)
    os.umask(before)
    for umask in (os.umask, posix.umask):
        with _scope(), pytest.raises(SideEffectRefused, match="umask"):
            umask(0)
    assert os.umask(before) == before


def test_changing_the_environment_in_a_read_is_refused() -> None:
    os.environ.pop("T22_PROXY_PROBE", None)
    with _scope():
        with pytest.raises(SideEffectRefused, match="environment"):
            os.environ["T22_PROXY_PROBE"] = "http://127.0.0.1:9"
        with pytest.raises(SideEffectRefused, match="environment"):
            os.putenv("T22_PROXY_PROBE", "x")
        assert os.environ.get("HOME") == os.environ.get("HOME")  # reading is fine
    assert "T22_PROXY_PROBE" not in os.environ
