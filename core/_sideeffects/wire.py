"""The wire: HTTP/1.x request heads in the bytes a socket or TLS object sends, judged line by line
before they are sent (a request line with an unsafe method, or a body header on a safe one).
Installed only process-wide (:mod:`.levels`): it wraps ``socket.socket``, ``ssl.SSLSocket`` and
``ssl.SSLObject`` send methods and, through :mod:`.lowlevel`, ``os.write``/``writev``/``sendfile``."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects import lowlevel
from mcp_providers._sideeffects.judge import RefusedOnTheWire, judge_http, judged_above, path_of
from mcp_providers._sideeffects.scope import SAFE_METHODS, Scope, scope_var

_WIRE_SAFE = SAFE_METHODS | {"CONNECT"}  # CONNECT opens a proxy tunnel; what goes through it is judged
_WS = rb"[ \t\x0b\x0c\r\x1c-\x1f\x85\xa0]"
"""Whitespace a lenient server splits a request line on: what Python's ``str.split()`` splits
latin-1 on (``http.server`` takes ``" POST /x HTTP/1.1"`` or tab-separated words as a request)."""
_REQUEST_LINE = re.compile(rb"%s*([!#$%%&'*+.^_`|~0-9A-Za-z-]+)%s+(\S*).*%sHTTP/.*" % (_WS, _WS, _WS), re.S | re.I)
"""An HTTP/1.x request line in any spelling a server may take: whitespace around and between its
words, a method in any case, and a version that is any word starting with ``HTTP/`` in any case.
RFC 9112 section 3 is stricter; lenient servers are not: ``http.server`` takes leading zeros and
up to ten digits a side (``HTTP/01.1``, RFC 2145), nginx any number of minor digits (``HTTP/1.001``),
regular expressions without ``re.ASCII`` other scripts' digits, and an unanchored one junk after."""
_VERSION_WORD = re.compile(rb"%sHTTP/" % _WS, re.I)  # linear: the full pattern only runs on lines with it
_LONG_LINE = 8192  # longer unfinished lines keep their start and end (method, version), not the middle


class _Wire:
    """What one connection has been sent inside scopes: the unfinished line (``early`` when it
    was already taken as a request line), the request head being sent (``(verb, target, judged,
    body length)``), body bytes still to skip, and ``lost`` once a ``sendall`` failed part-way
    (what it sent is unknown)."""

    __slots__ = ("carry", "early", "head", "lost", "skip")

    def __init__(self) -> None:
        self.carry, self.head, self.skip, self.early, self.lost = b"", None, 0, False, False

    def idle(self) -> bool:
        return not (self.carry or self.head or self.skip or self.early or self.lost)


_views: dict[Any, _Wire] = {}
"""Views of connections with something unfinished, kept beyond any one scope (a head split over
two reads on a kept-open connection is read whole); an idle view is dropped."""
_views_lock = threading.Lock()


def kept_views() -> int:
    """How many connections' unfinished views are kept (for tests)."""
    return len(_views)


def _view(sender: Any, scheme: str) -> tuple[Any, _Wire]:
    """The key of ``sender``'s connection and what it has been sent, shared by every path to it.

    Keyed by the kernel's socket (``os.fstat``'s device and inode: ``dup()``, ``socket.socket(fileno=)``
    and any descriptor number of it share one), so a head split over two of its socket objects, or
    a send and an ``os.write``, or two scopes, is read whole; TLS plaintext (``scheme`` ``https``)
    apart from the bytes below it. An ``ssl.SSLObject`` (no descriptor) is its own key."""
    try:
        status = os.fstat(sender.fileno() if not isinstance(sender, _Descriptor) else sender.fd)
        key: Any = (scheme, status.st_dev, status.st_ino)
    except (AttributeError, OSError, ValueError):
        key = sender  # an ssl.SSLObject, or a closed socket (whose send fails anyway)
    with _views_lock:
        wire = _views.get(key)
        if wire is None:
            wire = _views[key] = _Wire()
    return key, wire


def _keep(key: Any, wire: _Wire) -> None:
    """Drop ``wire``'s view once it is idle (a fresh one reads the same)."""
    with _views_lock:
        if wire.idle() and _views.get(key) is wire:
            del _views[key]


def _scan(
    scope: Scope, wire: _Wire, data: bytes, sender: Any, scheme: str, judge: Callable[..., bool] | None = None
) -> None:
    """Judge every complete line ``data`` finishes; refusing raises before anything is sent.

    A request line is refused when its line ends (``\\n``), so a head split over several sends
    never reaches the server whole; a body header on a safe method is refused the same way. The
    end of the connection ends a line too (``http.server`` takes a request line cut off by it),
    so an unfinished line that already reads as a request line is judged as one when sent."""
    if wire.lost and judge is None:
        scope.attempt(f"a send on {_peer(sender)} after a sendall there failed part-way", "http",
                      error=RefusedOnTheWire, layer="wire")  # fmt: skip
    buf, pos = wire.carry + data, 0
    head, skip, early = wire.head, wire.skip, wire.early
    while True:
        if skip:
            take = min(skip, len(buf) - pos)
            pos, skip = pos + take, skip - take
            if skip:
                break
        end = buf.find(b"\n", pos)
        if end < 0:
            break
        if early:
            early = False  # judged while unfinished (below): its end changes nothing
        else:
            head, skip = _judge_line(scope, buf[pos:end], head, sender, scheme, judge or _judge_wire)
        pos = end + 1
    carry = buf[pos:]
    if len(carry) > _LONG_LINE:
        carry = carry[: _LONG_LINE // 2] + b"~" + carry[-64:]
    if head is None and not skip and not early and _request_line(carry) is not None:
        head, skip = _judge_line(scope, carry, None, sender, scheme, judge or _judge_wire)
        early = True
    wire.carry, wire.head, wire.skip, wire.early = carry, head, skip, early


def _settle(
    scope: Scope, wire: _Wire, before: tuple[Any, ...], data: bytes, sent: Any, sender: Any, scheme: str
) -> None:
    """After a send that took only ``sent`` bytes of ``data`` (a count a send returns; 0 when it
    failed), make the view what was sent: the rest is sent again, or never, and must not be read
    as sent before what follows (``"\\r\\nGET "`` cut after the line end, then ``"POST /x ..."``)."""
    if type(sent) is int and 0 <= sent < len(data):
        wire.carry, wire.head, wire.skip, wire.early = before
        _scan(scope, wire, data[:sent], sender, scheme, _already_judged)


def _already_judged(*args: Any, **kwargs: Any) -> bool:
    return True  # replaying what was judged and sent: an unsafe line there was let through


def _state(wire: _Wire) -> tuple[Any, ...]:
    return wire.carry, wire.head, wire.skip, wire.early


def _request_line(line: bytes) -> re.Match[bytes] | None:
    return _REQUEST_LINE.fullmatch(line) if _VERSION_WORD.search(line) else None


def _judge_line(
    scope: Scope, line: bytes, head: Any, sender: Any, scheme: str, judge: Callable[..., bool]
) -> tuple[Any, int]:
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
                judged = judge(scope, verb, target, sender, scheme, has_body=True)
            length = int(value) if lowered == b"content-length" and value.strip().isdigit() else 0
            return (verb, target, judged, length), 0
        return head, 0
    match = _request_line(line)
    if match is None:
        return None, 0  # not an HTTP/1.x request line: another protocol's bytes, or TLS
    verb, target = match.group(1).decode("ascii").upper(), match.group(2).decode("latin-1")
    judged = verb not in _WIRE_SAFE and judge(scope, verb, target, sender, scheme, has_body=False)
    return (verb, target, judged, 0), 0


def _judge_wire(scope: Scope, verb: str, target: str, sender: Any, scheme: str, *, has_body: bool) -> bool:
    if scope.passed(verb, path_of(target) if "://" in target else target):
        return True  # http.client judged and let this very request through above
    url = target if "://" in target else f"{scheme}://{_peer(sender)}{target}"
    if verb == "PRI":  # HTTP/2's preface: its binary frames are judged only in httpcore2's connection
        attempted = f"an HTTP/2 connection written by hand to {url.removesuffix('*')}"
        scope.attempt(attempted, "http", error=RefusedOnTheWire, method=verb, layer="wire")
        return True
    return judge_http(verb, url, has_body, RefusedOnTheWire)


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
        scope = scope_var.get()
        if scope is None or judged_above.get():
            return original(self, *args, **kwargs)
        data = data_of(args)
        key, wire = _view(self, scheme)
        before = _state(wire)
        try:
            _scan(scope, wire, data, self, scheme)
            token = judged_above.set(True)  # an SSLSocket's send may call the plain socket's
            try:
                sent = original(self, *args, **kwargs)
            except BaseException as error:  # bad arguments too: nothing was sent, or (sendall) unknown
                _settle(scope, wire, before, data, 0, self, scheme)
                wire.lost = wire.lost or (name == "sendall" and isinstance(error, OSError))
                raise
            finally:
                judged_above.reset(token)
            _settle(scope, wire, before, data, sent, self, scheme)
        finally:
            _keep(key, wire)
        return sent

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

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def getpeername(self) -> Any:
        import socket

        sock = socket.socket(fileno=self.fd)
        try:
            return sock.getpeername()
        finally:
            sock.detach()  # the descriptor stays its owner's


def _descriptor_judge() -> lowlevel.Judge | None:
    """The judge of bytes written to a socket descriptor in this scope, ``None`` outside one."""
    scope = scope_var.get()
    if scope is None or judged_above.get():
        return None

    def judge(fd: int, data: bytes) -> Callable[[int], None]:
        sender = _Descriptor(fd)
        key, wire = _view(sender, "http")
        before = _state(wire)
        try:
            _scan(scope, wire, data, sender, "http")
        finally:
            _keep(key, wire)

        def settle(sent: int) -> None:
            _settle(scope, wire, before, data, sent, sender, "http")
            _keep(key, wire)

        return settle

    return judge


def _refuse_descriptor(fd: int, what: str) -> None:
    """Refuse (in enforce mode) a send into socket descriptor ``fd`` whose bytes cannot be judged."""
    scope = scope_var.get()
    if scope is not None:
        scope.attempt(f"{what} connected to {_peer(_Descriptor(fd))}", "http", error=RefusedOnTheWire, layer="wire")


def patch_wire() -> None:
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
    lowlevel.guard_descriptor_sends(_descriptor_judge, _refuse_descriptor)
