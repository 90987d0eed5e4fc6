"""Ways out of the side-effect scope found by tester twenty-four, each against a real loopback
``http.server`` (which takes lenient request lines as requests).

- F1 a send that fails (any exception, not only ``OSError``) is not read as sent;
- F3 a request line split over two scopes (two reads on one kept-open connection) is read whole.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from sink_support import _finish, _scope, sink

from mcp_providers import _sideeffects
from mcp_providers.errors import SideEffectRefused

FAKE = b"GET /fake HTTP/1.1\r\nHost: x\r\n"  # an open GET head, never really sent
REAL = b"DELETE /victim HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

# -- F1: a send that failed sent nothing it can be read as -----------------------------------------

FAILED_SENDS: list[Callable[[socket.socket, int], object]] = [
    lambda s, _f: s.send(FAKE, "x"),  # type: ignore[call-overload]  # TypeError
    lambda s, _f: s.send(FAKE, 1 << 70),  # OverflowError
    lambda s, _f: s.sendto(FAKE, ("127.0.0.1", "notaport")),  # type: ignore[arg-type]
    lambda s, _f: s.sendto(FAKE, ("127.0.0.1", 70000)),
    lambda s, _f: s.sendmsg([FAKE], [("x",)]),  # type: ignore[list-item]
    lambda s, _f: s.sendmsg([FAKE], [], "x"),  # type: ignore[arg-type]
    lambda s, _f: s.sendall(FAKE, "x"),  # type: ignore[arg-type]
    lambda s, _f: s.sendall(FAKE, 0x7FFFFFFF),  # OSError EINVAL: nothing sent, though sendall may send part
    lambda s, f: os.sendfile(s.fileno(), f, 0, len(FAKE), flags=0),  # type: ignore[call-arg]  # TypeError here
]


@pytest.mark.parametrize("fail", FAILED_SENDS, ids=[f"fail{i}" for i in range(len(FAILED_SENDS))])
def test_a_send_that_failed_in_any_way_is_not_read_as_sent(
    fail: Callable[[socket.socket, int], object], tmp_path: Path
) -> None:
    (tmp_path / "fake").write_bytes(FAKE)
    with sink() as (address, seen), open(tmp_path / "fake", "rb") as file:
        with socket.create_connection(address) as sock, _scope():
            with pytest.raises(Exception) as failed:
                fail(sock, file.fileno())
            assert not isinstance(failed.value, SideEffectRefused)
            with pytest.raises(SideEffectRefused):
                sock.sendall(REAL)  # read as sent, FAKE would make this a header line of a GET
            _finish(sock)
        assert seen == []


# -- F3: what a connection was sent is kept beyond one scope ----------------------------------------

SPLITS = [
    (b"POST /victim", b" HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    (b"DELETE /victim HTTP", b"/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    (b"DEL", b"ETE /victim HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
]


@pytest.mark.parametrize(("first", "rest"), SPLITS)
def test_a_request_line_split_over_two_scopes_never_arrives_whole(first: bytes, rest: bytes) -> None:
    with sink() as (address, seen):
        with socket.create_connection(address) as sock:
            with _scope():
                sock.sendall(first)
            with pytest.raises(SideEffectRefused), _scope():
                sock.sendall(rest)
            sock.shutdown(socket.SHUT_WR)
            _finish(sock)
        assert seen == []


def test_a_connection_whose_sendall_failed_part_way_sends_no_more_in_a_scope() -> None:
    a, b = socket.socketpair()
    with a, b, _scope():
        a.settimeout(0.05)
        with pytest.raises(TimeoutError):
            a.sendall(b"P" * (1 << 22))  # the peer reads nothing: part of it went
        with pytest.raises(SideEffectRefused, match="after a sendall there failed part-way"):
            a.send(b"OST /victim HTTP/1.1\r\n")


def test_views_of_finished_lines_are_not_kept() -> None:
    kept = _sideeffects.wire.kept_views()
    with sink() as (address, _seen), socket.create_connection(address) as sock, _scope():
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        _finish(sock)
    assert _sideeffects.wire.kept_views() == kept


# -- F2: references saved before the guards were installed -----------------------------------------

SAVED_BEFORE = r"""
import functools, gc, os, socket, sys, types
import multiprocessing.connection as mpc

write = os.write
def default(data, write=os.write): return write
def kwdefault(*, write=os.write): return write
def closure():
    w = os.write
    return lambda: w
cell = closure()
class Holder:
    write = os.write
kept = {os.write}
gc.freeze()  # as serve's start-up leaves its heap

from mcp_providers._sideeffects import SideEffectRefused, side_effect_scope
with side_effect_scope(provider="p", plugin="p", target="t://x"):
    pass  # installs every guard
guard = os.write
held = [write, default(b""), kwdefault(), cell(), Holder.write, mpc.Connection._write,
        mpc.Connection._send.__defaults__[0]]
print("unguarded", [i for i, h in enumerate(held) if h is not guard], guard in kept, gc.get_freeze_count() > 0)
r, w = os.pipe()
print("wrote", os.write(w, b"ok"), os.read(r, 2))  # a guard calls what it wraps, never itself
a, b = socket.socketpair()
try:
    with side_effect_scope(provider="p", plugin="p", target="t://x"):
        mpc.Connection(a.fileno(), readable=False)._send(b"DELETE /victim HTTP/1.1\r\nHost: x\r\n\r\n")
    print("sent")
except SideEffectRefused:
    print("refused")
"""


def test_references_saved_before_install_are_guarded_too() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SAVED_BEFORE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["unguarded [] True True", "wrote 2 b'ok'", "refused"]


# -- F6: valid work in the scratch folder ----------------------------------------------------------


def test_a_write_by_a_path_with_dotdot_that_stays_in_the_scratch_folder_is_made() -> None:
    with _scope():
        scratch = _sideeffects.scratch_dir()
        os.mkdir(os.path.join(scratch, "x"))
        with open(os.path.join(scratch, "x", "..", "y"), "w") as file:  # the lock is held: no rename between
            file.write("1")
        os.mkdir(os.path.join(scratch, "x", "..", "z"))
        assert sorted(os.listdir(scratch)) == ["x", "y", "z"]
        with pytest.raises(SideEffectRefused):
            open(os.path.join(scratch, "x", "..", "..", "out"), "w").close()  # climbs out: still refused
