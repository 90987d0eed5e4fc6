"""Side effects that escaped the scope (round 4 item 12), each against a real loopback HTTP server
built on Python's ``http.server`` (which takes lenient request lines as requests).

- send paths below the guarded socket methods: ``socket.sendfile()`` (``os.sendfile``),
  ``os.write``/``os.writev`` on a socket's descriptor;
- request-line spellings the wire guard did not read as one: a leading space, other whitespace
  ``http.server`` splits on (tab, vertical tab, form feed), a lowercase method or version, empty
  lines before it;
- a path race run by the read's own threads: a worker in the scope swaps a checked folder for a
  symlink between the check of an ``open`` and the open itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import socket
import threading
from pathlib import Path

import pytest
from sink_support import _finish, _post, _scope, sink

from mcp_providers import _sideeffects
from mcp_providers.errors import SideEffectRefused

pytestmark = pytest.mark.anyio


# -- send paths -----------------------------------------------------------------------------------


def _via_sendfile(sock: socket.socket, data: bytes) -> None:
    path = os.path.join(_sideeffects.scratch_dir(), "request.bin")
    with open(path, "wb") as f:  # the scratch folder may be written
        f.write(data)
    with open(path, "rb") as f:
        sock.sendfile(f)


def _via_os_sendfile(sock: socket.socket, data: bytes) -> None:
    path = os.path.join(_sideeffects.scratch_dir(), "request.bin")
    with open(path, "wb") as f:
        f.write(data)
    with open(path, "rb") as f:
        os.sendfile(sock.fileno(), f.fileno(), 0, len(data))


def _via_os_write(sock: socket.socket, data: bytes) -> None:
    os.write(sock.fileno(), data)


def _via_os_writev(sock: socket.socket, data: bytes) -> None:
    os.writev(sock.fileno(), [data[:3], data[3:]])  # the head split over two buffers


@pytest.mark.parametrize("send", [_via_sendfile, _via_os_sendfile, _via_os_write, _via_os_writev])
def test_a_post_sent_below_the_socket_methods_is_refused(send) -> None:  # type: ignore[no-untyped-def]
    with sink() as (address, seen):
        with _scope(), socket.create_connection(address) as sock, pytest.raises(SideEffectRefused, match="POST"):
            send(sock, _post(address, "/escaped"))
        with socket.create_connection(address) as sock:  # outside a scope: sent, and the sink takes it
            send_outside = _post(address, "/outside")
            os.write(sock.fileno(), send_outside)
            _finish(sock)
    assert seen == ["POST /outside"]


def test_a_get_sent_by_sendfile_goes_through() -> None:
    with sink() as (address, seen), _scope(), socket.create_connection(address) as sock:
        _via_sendfile(sock, b"GET /fine HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        _finish(sock)
    assert seen == ["GET /fine"]


# -- request-line spellings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b" POST /escaped HTTP/1.1",  # a leading space
        b"\tPOST /escaped HTTP/1.1",  # a leading tab
        b"POST\t/escaped\tHTTP/1.1",  # tabs between
        b"POST\x0b/escaped\x0cHTTP/1.1",  # vertical tab, form feed: str.split() splits on them
        b"post /escaped HTTP/1.1",  # a lowercase method
        b"POST /escaped http/1.1",  # a lowercase version
        b"\r\n\r\nPOST /escaped HTTP/1.1",  # empty lines before it (RFC 9112 2.2: servers skip them)
        b"POST /escaped HTTP/1.1 ",  # trailing whitespace
    ],
)
def test_every_spelling_of_a_request_line_is_judged(line: bytes) -> None:
    with (
        sink() as (address, seen),
        _scope(),
        socket.create_connection(address) as sock,
        pytest.raises(SideEffectRefused, match="POST"),
    ):
        sock.sendall(_post(address, "", line))
    assert seen == []


# -- path races -----------------------------------------------------------------------------------


async def test_a_symlink_swapped_in_by_the_reads_own_thread_never_lets_a_write_out(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    links_refused = [0]
    with _scope():
        parent = os.path.join(_sideeffects.scratch_dir(), "p")
        os.makedirs(os.path.join(parent, "d"))
        stop = threading.Event()
        swaps = [0]

        def swap() -> None:  # in the scope too (the context is copied); the link out is refused
            k = 0
            while not stop.is_set():
                k += 1
                swaps[0] += 1
                with contextlib.suppress(OSError):
                    os.rename(parent, f"{parent}.old{k}")
                    os.mkdir(parent)
                    try:
                        os.symlink(str(victim), os.path.join(parent, "d"))
                    except SideEffectRefused:
                        links_refused[0] += 1
                        os.mkdir(os.path.join(parent, "d"))
                        continue
                    os.rename(parent, f"{parent}.link{k}")
                    os.makedirs(os.path.join(parent, "d"))

        worker = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, swap)
        try:
            n = 0
            while n < 3000 or swaps[0] < 200:  # enough opens while enough swaps ran (no clock: events)
                n += 1
                assert n < 1_000_000, "the swapping thread made no progress"
                with contextlib.suppress(OSError), open(os.path.join(parent, "d", f"race{n}"), "w") as f:
                    f.write("x")
        finally:
            stop.set()
            await worker
    assert swaps[0] >= 200  # the race ran
    assert links_refused[0] > 0  # and the link out was never made
    assert sorted(os.listdir(victim)) == []


def test_a_write_through_a_symlink_to_outside_is_still_refused(tmp_path: Path) -> None:
    with _scope():
        link = os.path.join(_sideeffects.scratch_dir(), "out")
        # A read may not make a link out of its scratch folder; code outside the scope (no
        # context: the host, a bare thread) may, and writes through it are judged where they land.
        contextvars.Context().run(os.symlink, str(tmp_path), link)
        for spelling in (os.path.join(link, "f"), os.path.join(link, "..", "..", str(tmp_path)[1:], "g")):
            with pytest.raises(SideEffectRefused):
                open(spelling, "w").close()
        with pytest.raises(SideEffectRefused):
            os.mkdir(os.path.join(link, "sub"))
    assert os.listdir(tmp_path) == []
