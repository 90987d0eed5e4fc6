"""A raw streamable HTTP MCP server (plain ASGI, no SDK) answering with bodies and events as large as
asked, for the HTTP answer limit tests (``test_upstream_oversize_http.py``); served by uvicorn.

Tools (argument ``mib``: MiB of ``y`` in the answer's text, written in 1 MiB pieces, never held):
``big_json`` / ``big_sse`` answer with a JSON body / one server-sent event that large; ``drip_json``
/ ``drip_sse`` send the answer's start, then 64 KiB pieces without end (no line end either), up to
``mib``; ``trickle`` one byte every 0.2 s; ``bomb_json`` / ``bomb_sse`` the same answer as
``big_*`` gzip-encoded (compressed as it is sent); ``gzip_hello`` / ``deflate_hello`` a small
encoded answer, ``bad_gzip`` / ``bad_gzip_sse`` a body that says gzip and is not; ``shout_get``
puts an event of ``mib`` MiB on the standalone GET stream, then answers; ``ping_get`` puts a small
``notifications/message`` on it; ``hello`` answers ``hello``. :data:`STATE` counts the GET
streams opened and the messages a GET stream delivered.

``packed_sse`` (arguments ``size``, ``ends``, ``layout``) answers with an event stream whose
lines end with ``ends`` (``"\n"``, ``"\r\n"`` or ``"\r"``): a ``notifications/message`` event
holding ``size`` bytes of ``y``, whose last bytes and blank line are sent in one piece with what
follows, then the answer ``after``. ``layout``: ``"tail"`` (its tail, blank line and the answer in
one piece), ``"split"`` (its blank line split between two pieces), ``"many"`` (small events before
it in the piece that starts it, and after it in the piece that ends it).
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

MIB = 1024 * 1024
TOOLS = ["big_json", "big_sse", "drip_json", "drip_sse", "trickle", "bomb_json", "bomb_sse", "gzip_hello",
         "deflate_hello", "bad_gzip", "bad_gzip_sse", "shout_get", "ping_get", "hello", "packed_sse"]  # fmt: skip
Send = Callable[[dict[str, Any]], Awaitable[None]]


class State:
    """What the upstream was asked to send on its GET streams. Each open stream has its own queue
    and every event goes to each (a stream of an earlier test's client, not yet seen gone, must
    not take the event from the live one); events queued while none is open wait for the next."""

    def __init__(self) -> None:
        self.get_opens = 0
        self.get_sent: list[str] = []
        self.streams: set[asyncio.Queue[tuple[str, float]]] = set()
        self.waiting: list[tuple[str, float]] = []

    def send(self, event: tuple[str, float]) -> None:
        for queue in self.streams:
            queue.put_nowait(event)
        if not self.streams:
            self.waiting.append(event)

    def opened(self) -> asyncio.Queue[tuple[str, float]]:
        queue: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
        for event in self.waiting:
            queue.put_nowait(event)
        self.waiting.clear()
        self.streams.add(queue)
        return queue


STATE = State()


def _answer_parts(ident: object, mib: float) -> AsyncIterator[bytes]:
    prefix = f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {{"content": [{{"type": "text", "text": "'

    async def parts() -> AsyncIterator[bytes]:
        yield prefix.encode()
        left, piece = int(mib * MIB), b"y" * MIB
        while left > 0:
            yield piece[: min(left, MIB)]
            left -= MIB
            await asyncio.sleep(0)
        yield b'"}]}}'

    return parts()


async def _sse(parts: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield b"event: message\ndata: "
    async for part in parts:
        yield part
    yield b"\n\n"


async def _gzipped(parts: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    async for part in parts:
        if packed := packer.compress(part):
            yield packed
    yield packer.flush()


async def _drip(ident: object, mib: float, size: int, pause: float) -> AsyncIterator[bytes]:
    prefix = f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {{"content": [{{"type": "text", "text": "'
    yield prefix.encode()
    for _ in range(int(mib * MIB) // size):
        yield b"y" * size
        await asyncio.sleep(pause)


async def _respond(send: Send, media: str, parts: AsyncIterator[bytes], **more: str) -> None:
    headers = [(b"content-type", media.encode()), *((k.encode(), v.encode()) for k, v in more.items())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    try:
        async for part in parts:
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:  # the client went away (it refused the answer): nothing more to send
        return


def _small(ident: object, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode()


async def _one(part: bytes) -> AsyncIterator[bytes]:
    yield part


def _text(ident: object, words: str) -> bytes:
    return _small(ident, {"content": [{"type": "text", "text": words}]})


def _event(ends: str, data: str) -> str:
    return f"event: message{ends}data: {data}{ends}{ends}"


def _note(ends: str, words: str) -> str:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": words}}
    return _event(ends, json.dumps(note))


async def _packed(ident: object, size: int, ends: str, layout: str) -> AsyncIterator[bytes]:
    """The ``packed_sse`` answer (module docstring), in the pieces its layout says."""
    smalls = "".join(_note(ends, f"small {i}") for i in range(20)) if layout == "many" else ""
    big = _note(ends, "y" * size)
    cut = big.index("y" * size) + size - 1000  # the last 1000 bytes of y start the piece ending it
    answer = _event(ends, _text(ident, "after").decode())
    yield (smalls + big[:cut]).encode()  # the start: written at once, read in socket-sized chunks
    if layout == "split":  # the blank line's last line end held back a moment
        yield big[cut:-1].encode()
        await asyncio.sleep(0.05)
        cut = len(big) - 1
    yield (big[cut:] + smalls + answer).encode()


async def _call(send: Send, ident: object, name: str, args: dict[str, Any]) -> None:
    mib = float(args.get("mib", 9))
    js, sse = "application/json", "text/event-stream"
    if name == "big_json":
        await _respond(send, js, _answer_parts(ident, mib))
    elif name == "big_sse":
        await _respond(send, sse, _sse(_answer_parts(ident, mib)))
    elif name in ("drip_json", "drip_sse"):
        drip = _drip(ident, mib, 65536, 0.001)
        await _respond(send, js if name == "drip_json" else sse, drip if name == "drip_json" else _sse(drip))
    elif name == "trickle":
        await _respond(send, js, _drip(ident, 0.001, 1, 0.2))
    elif name == "bomb_json":
        await _respond(send, js, _gzipped(_answer_parts(ident, mib)), **{"content-encoding": "gzip"})
    elif name == "bomb_sse":
        await _respond(send, sse, _gzipped(_sse(_answer_parts(ident, mib))), **{"content-encoding": "gzip"})
    elif name == "gzip_hello":
        await _respond(send, js, _gzipped(_one(_text(ident, "hello, gzipped"))), **{"content-encoding": "gzip"})
    elif name == "deflate_hello":
        packed = zlib.compress(_text(ident, "hello, deflated"))
        await _respond(send, js, _one(packed), **{"content-encoding": "deflate"})
    elif name in ("bad_gzip", "bad_gzip_sse"):
        media = js if name == "bad_gzip" else sse
        await _respond(send, media, _one(b"this is no gzip stream at all"), **{"content-encoding": "gzip"})
    elif name == "packed_sse":
        await _respond(send, sse, _packed(ident, int(args["size"]), str(args["ends"]), str(args["layout"])))
    elif name in ("shout_get", "ping_get"):
        STATE.send(("big" if name == "shout_get" else "small", mib))
        await _respond(send, js, _one(_text(ident, "queued")))
    else:
        await _respond(send, js, _one(_text(ident, "hello")))


async def _post(send: Send, message: dict[str, Any]) -> None:
    ident, method, params = message.get("id"), message.get("method"), message.get("params") or {}
    if ident is None or method is None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    if method == "tools/call":
        await _call(send, ident, str(params.get("name")), params.get("arguments") or {})
        return
    extra: dict[str, str] = {}
    if method == "initialize":
        caps = {"resources": {}, "tools": {}, "logging": {}}
        result: dict[str, Any] = {"protocolVersion": "2025-06-18", "capabilities": caps,
                                  "serverInfo": {"name": "oversize-http", "version": "1"}}  # fmt: skip
        extra["mcp-session-id"] = "s-1"
    elif method == "resources/list":
        result = {"resources": [{"uri": "big://h/one", "name": "one"}]}
    elif method == "tools/list":
        result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]}
    elif method in ("resources/templates/list", "prompts/list"):
        result = {"resourceTemplates": []} if "templates" in method else {"prompts": []}
    elif method == "resources/read":
        result = {"contents": [{"uri": params.get("uri"), "text": "one"}]}
    elif method == "ping":
        result = {}
    else:
        body = {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}}
        await _respond(send, "application/json", _one(json.dumps(body).encode()))
        return
    await _respond(send, "application/json", _one(_small(ident, result)), **extra)


async def _get_stream() -> AsyncIterator[bytes]:
    STATE.get_opens += 1
    queue = STATE.opened()
    try:
        yield b": open\n\n"
        async for chunk in _events(queue):
            yield chunk
    finally:
        STATE.streams.discard(queue)


async def _events(queue: asyncio.Queue[tuple[str, float]]) -> AsyncIterator[bytes]:
    while True:
        kind, mib = await queue.get()
        if kind == "big":
            note = '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "'
            yield b"event: message\ndata: " + note.encode()
            for _ in range(int(mib)):
                yield b"y" * MIB
                await asyncio.sleep(0)
            yield b'"}}\n\n'
        else:
            note = '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "small"}}'
            STATE.get_sent.append("small")
            yield b"event: message\ndata: " + note.encode() + b"\n\n"


async def app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]], send: Send) -> None:
    if scope["type"] == "lifespan":
        while (event := await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["method"] == "GET":  # until the client goes away: a dead stream must not take an event
        await _until_gone(receive, _respond(send, "text/event-stream", _get_stream()))
        return
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    await _until_gone(receive, _post(send, json.loads(body)))  # a refused answer is not made on


async def _until_gone(receive: Callable[[], Awaitable[dict[str, Any]]], answer: Awaitable[None]) -> None:
    """``answer``, stopped when the client goes away (uvicorn drops what is sent then, silently)."""

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    tasks = {asyncio.ensure_future(answer), asyncio.ensure_future(gone())}
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        task.cancel()
