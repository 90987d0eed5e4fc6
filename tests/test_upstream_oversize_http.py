"""An HTTP upstream's oversize answer is bounded while it is read (issue 40, round 9 brief H), as a
stdio line is (``test_upstream_oversize_lines.py``): a JSON body, one server-sent event (a POST's
answer, the standalone GET stream), bytes drip-fed without an end, a gzip bomb: each counted in
decoded bytes and refused at the limit ``max_bytes`` sets, never held past it; the request it
answered fails at once naming the upstream and the limit, and the session serves on. Against a raw
HTTP upstream (``oversize_http_upstream.py``) served by uvicorn on loopback."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import uvicorn
from oversize_http_upstream import STATE, _note, app
from serve_support import free_port
from upstream_support import link_of, refusal
from waiting import await_until, wait_until

from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream import bounded
from mcp_providers.plugins.upstream.bounded import PIECE_BYTES, BodyRefused, Counted, EventRefused
from mcp_providers.plugins.upstream.stdio import line_limit
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

MAX_BYTES = 1024
LIMIT = line_limit(MAX_BYTES)
MIB = 1024 * 1024
RAW_CHUNK = 65536  # the most bytes httpcore reads from the socket at once
QUICK = 30.0  # seconds an answer may take here; read_timeout is far longer, so only a timely error passes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, "the oversize upstream listens")
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[Counted]:
    """Every body stream the upstreams' clients made, to see how much each held and read."""
    made: list[Counted] = []

    class Recorded(Counted):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(bounded, "Counted", Recorded)
    return made


def _composed(url: str, *, max_bytes: int = MAX_BYTES, read_timeout: float = 300, calm: bool = False) -> Any:
    servers = [{"name": "big", "url": url, "prefixes": ["big://h/"], "tool_prefix": "b_",
                "read_timeout": read_timeout, "max_bytes": max_bytes}]  # fmt: skip
    if calm:  # another upstream, on the same server: it must not notice
        servers.append({"name": "calm", "url": url, "prefixes": ["calm://h/"], "tool_prefix": "c_"})
    return compose({"upstream": upstream}, {"upstream": {"servers": servers}})


async def _refusal(call: Any) -> str:
    return await refusal(call, QUICK)


def _said(tool: str) -> str:
    return (
        f"upstream 'big' (streamable-http) answered tools/call {tool} with more than {LIMIT} bytes, "
        f"over the limit on one body or event its max_bytes of {MAX_BYTES} sets; the answer was discarded"
    )


async def _hello(client: Any, tool: str = "b_hello") -> str:
    with anyio.fail_after(QUICK):
        result = await client.call_tool(tool, {})
    return str(result.content[0].text)


def _held_within_the_limit(made: list[Counted]) -> None:
    bigs = [c for c in made if c.limit == LIMIT]  # not calm's (its max_bytes is the default)
    assert bigs and max(c.largest for c in bigs) <= LIMIT  # the piece crossing it is never handed on
    assert max(c.read for c in bigs) <= LIMIT + max(RAW_CHUNK, PIECE_BYTES)


def _stream(*chunks: bytes, events: bool, limit: int = 10) -> Any:
    async def raw() -> Any:
        for chunk in chunks:
            yield chunk

    class Raw:
        def __aiter__(self) -> Any:
            return raw()

        async def aclose(self) -> None:
            pass

    def refuse(limit: int) -> Any:
        return (EventRefused if events else BodyRefused)(f"over {limit}", limit)

    return Counted(Raw(), limit=limit, events=events, wbits=None, refuse=refuse)  # type: ignore[arg-type]


async def _drained(stream: Counted) -> bytes:
    return b"".join([piece async for piece in stream])


@pytest.mark.parametrize(
    "chunks",
    [(b"data: 12345\n\n", b"data: 67890\n\n"), (b"data: 12345\r\n", b"\r\ndata: 67890\r\n\r\n"),
     (b"data: 12345\r", b"\rdata: 67890\r\r"), (b"data: 1234", b"5\n", b"\ndata: 67890\n\n")],
)  # fmt: skip
async def test_each_event_is_counted_from_the_last_blank_line(chunks: tuple[bytes, ...]) -> None:
    stream = _stream(*chunks, events=True, limit=14)  # one event and its blank line: 13 bytes
    assert await _drained(stream) == b"".join(chunks)
    assert stream.largest <= 14


@pytest.mark.parametrize(
    ("data", "after"),
    [(b"ab\n\ncd", 2), (b"ab\r\n\r\ncd", 3), (b"ab\r\rcd", 2), (b"ab\n\rcd", 2), (b"\n\n", 0),
     (b"\nx\n\nyy\nz", 4), (b"\r\r\n", 1), (b"ab\r\ncd", None), (b"abc", None), (b"\r\n", None),
     (b"a\r\nb\r\nc", None)],
)  # fmt: skip
def test_the_last_blank_line_is_found_whatever_line_ends_are_used(data: bytes, after: int | None) -> None:
    assert bounded._after_blank_line(data) == after  # bytes after it: the \n of a \r\n may count


ENDS = {"LF": b"\n", "CRLF": b"\r\n", "CR": b"\r"}


def _shaped(shape: str, end: bytes, size: int) -> tuple[bytes, ...]:
    """A stream of small events and one whose ``data: ...`` line and its line end are ``size``
    bytes, in chunks as ``shape`` says (tester r12, finding 3: each must be counted)."""
    small, big = b"data: 1" + end + end, b"data: " + b"x" * (size - 6 - len(end)) + end + end
    assert len(big) == size + len(end)
    if shape == "one chunk":  # the whole event, its blank line and the next event in one chunk
        return (big + small,)
    if shape == "ends a chunk":  # its start counted earlier; its end, blank line and more in one chunk
        return (small + big[:5], big[5:] + small)
    if shape == "split blank line":  # its blank line split between two chunks
        return (big[:-1], big[-1:] + small)
    return (small * 3 + big + small * 3,)  # many per chunk


SHAPES = ["one chunk", "ends a chunk", "split blank line", "many per chunk"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ends", ENDS)
async def test_an_event_over_the_limit_is_refused_in_every_shape(shape: str, ends: str) -> None:
    with pytest.raises(EventRefused, match="over 30"):
        await _drained(_stream(*_shaped(shape, ENDS[ends], 31), events=True, limit=30))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ends", ENDS)
async def test_an_event_at_the_limit_passes_in_every_shape(shape: str, ends: str) -> None:
    chunks = _shaped(shape, ENDS[ends], 29)  # a \r\n's \n may count to the next event: 30 at most
    stream = _stream(*chunks, events=True, limit=30)
    assert await _drained(stream) == b"".join(chunks)
    assert stream.largest <= 30


@pytest.mark.parametrize("chunks", [(b"data: 12345\r\n", b"data: 67890\r\n"), (b"data: 12345\n", b"data: 6789\r\n")])
async def test_a_single_line_end_does_not_end_an_event(chunks: tuple[bytes, ...]) -> None:
    with pytest.raises(EventRefused, match="over 20"):
        await _drained(_stream(*chunks, events=True, limit=20))


async def test_a_body_is_counted_in_total_and_the_crossing_piece_is_not_handed_on() -> None:
    stream, got = _stream(b"12345\n\n", b"67890", events=False, limit=10), []
    with pytest.raises(BodyRefused):
        async for piece in stream:
            got.append(piece)
    assert got == [b"12345\n\n"] and stream.largest == 7


async def test_a_gzip_bomb_is_inflated_in_pieces_and_refused_at_the_limit() -> None:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    bomb = packer.compress(b"y" * (16 * MIB)) + packer.flush()
    assert len(bomb) < 100_000
    stream = _stream(bomb, events=False, limit=MIB)
    stream.inflater = bounded._Inflater(zlib.MAX_WBITS | 16)
    with pytest.raises(BodyRefused):
        await _drained(stream)
    assert stream.largest <= MIB and stream.read <= MIB + PIECE_BYTES


@pytest.mark.parametrize("tool", ["big_json", "big_sse"])
async def test_an_answer_over_the_limit_fails_at_once_and_the_session_serves_on(url: str, tool: str) -> None:
    composed = _composed(url, calm=True)
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool(f"b_{tool}", {"mib": 9}))
        assert _said(tool) in said and "raise max_bytes" in said
        assert await _hello(client) == "hello"
        assert await _hello(client, "c_hello") == "hello"
        assert link_of(composed, "big").restarts == 0 and link_of(composed, "calm").restarts == 0


@pytest.mark.parametrize("tool", ["big_json", "big_sse", "drip_json", "drip_sse", "bomb_json", "bomb_sse"])
async def test_a_200_mib_answer_is_never_held(url: str, tool: str, counted: list[Counted]) -> None:
    composed = _composed(url)
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool(f"b_{tool}", {"mib": 200}))
        assert _said(tool) in said
        assert await _hello(client) == "hello"
    _held_within_the_limit(counted)


async def test_a_trickle_under_the_limit_is_bounded_by_read_timeout(url: str) -> None:
    composed = _composed(url, read_timeout=2)  # the trickle lasts minutes: the whole bound is waited out
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool("b_trickle", {}))
        assert "upstream 'big' (streamable-http) did not answer tools/call trickle within 2" in said
        assert await _hello(client) == "hello"


@pytest.mark.parametrize("tool", ["gzip_hello", "deflate_hello"])
async def test_an_encoded_answer_is_decoded(url: str, tool: str) -> None:
    composed = _composed(url)
    async with composed.running(), connect(composed) as client:
        assert (
            await _hello(client, f"b_{tool}")
            == {"gzip_hello": "hello, gzipped", "deflate_hello": "hello, deflated"}[tool]
        )


@pytest.mark.parametrize("tool", ["bad_gzip", "bad_gzip_sse"])
async def test_a_body_whose_encoding_is_broken_fails_its_request_at_once_and_the_session_serves_on(
    url: str, tool: str
) -> None:
    composed = _composed(url)
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool(f"b_{tool}", {}))
        assert f"upstream 'big' (streamable-http) answered tools/call {tool} with error" in said
        assert "upstream 'big' (streamable-http) answered with a broken gzip or deflate encoding" in said
        assert await _hello(client) == "hello"
        assert link_of(composed, "big").restarts == 0


async def test_an_event_the_limit_allows_passes_past_the_sdk_default_of_1_mib(url: str) -> None:
    composed = _composed(url, max_bytes=4 * MIB)
    async with composed.running(), connect(composed) as client:
        with anyio.fail_after(QUICK):
            result = await client.call_tool("b_big_sse", {"mib": 2})
        assert not result.is_error, result
        assert len(result.content[0].text) == 2 * MIB  # type: ignore[union-attr]


async def test_an_oversize_event_on_the_get_stream_is_dropped_and_the_stream_opened_again(
    url: str, counted: list[Counted], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    composed = _composed(url, calm=True)
    async with composed.running(), connect(composed) as client:
        opened = STATE.get_opens
        assert await _hello(client, "b_shout_get") == "queued"
        refused = f"upstream 'big' (streamable-http) answered with more than {LIMIT} bytes in one server-sent event"
        await await_until(lambda: any(refused in r.getMessage() for r in caplog.records), "the refusal is logged")
        await await_until(lambda: STATE.get_opens > opened, "the GET stream is opened again")
        sent = len(STATE.get_sent)
        assert await _hello(client, "b_ping_get") == "queued"
        await await_until(lambda: len(STATE.get_sent) > sent, "a small event reaches the new GET stream")
        assert await _hello(client) == "hello" and await _hello(client, "c_hello") == "hello"
        assert link_of(composed, "big").restarts == 0
    _held_within_the_limit(counted)


LAYOUTS = ["tail", "split", "many"]


def _packed(ends: str, over: int) -> dict[str, Any]:
    """``packed_sse``'s arguments for an event of ``LIMIT + over`` bytes (its blank line aside)."""
    end = ENDS[ends].decode()
    return {"size": LIMIT + over - len(_note(end, "")) + len(end), "ends": end}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("ends", ENDS)
async def test_an_oversize_event_ending_in_a_chunk_with_more_is_refused_in_our_words(
    url: str, layout: str, ends: str, counted: list[Counted]
) -> None:
    """Tester r12, finding 3: the bytes before a chunk's last blank line were not counted into the
    event they end, so an event over the limit passed our count (the SDK refused it, in its words)."""
    composed = _composed(url)
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool("b_packed_sse", {**_packed(ends, 64), "layout": layout}))
        assert _said("packed_sse") in said
        assert await _hello(client) == "hello"
    _held_within_the_limit(counted)


@pytest.mark.parametrize(("layout", "ends"), [("tail", "LF"), ("split", "CRLF"), ("many", "CR")])
async def test_an_event_under_the_limit_ending_in_a_chunk_with_more_passes(url: str, layout: str, ends: str) -> None:
    composed = _composed(url)
    async with composed.running(), connect(composed) as client:
        with anyio.fail_after(QUICK):
            result = await client.call_tool("b_packed_sse", {**_packed(ends, -64), "layout": layout})
        assert not result.is_error and result.content[0].text == "after", result  # type: ignore[union-attr]
