"""No secret held for an upstream reaches the log of a library the link talks with (issue 40:
"Secrets never appear in output, logs, errors"): the SDK's streamable HTTP client logs each message
body at DEBUG (``SSE message: ...``), before the sieve masks what an upstream echoed; httpcore2
logs each answer's headers at DEBUG. While the composition runs those records have every held
secret masked, and the mask is gone once it closes. A real SDK server on a loopback port."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import MCPServer
from serve_support import free_port
from waiting import wait_until

from mcp_providers._cli.logs import TextFormatter
from mcp_providers.plugins import upstream
from mcp_providers.plugins._library_logs import LIBRARY_LOGGERS
from mcp_providers.plugins._masking import MASK
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

TOKEN = "echoed-upstream-token-6c2e8a4f"
SENT: list[str] = []


def _echoing() -> Any:
    async def record(ctx: Any, call_next: CallNext) -> HandlerResult:
        if ctx.request is not None:
            SENT.append(str(ctx.request.headers.get("authorization", "")))
        return await call_next(ctx)

    server = MCPServer("echoing", version="1", middleware=[record], log_level="WARNING")

    @server.tool(description="Says the credential it was sent, bare.")
    def whoami() -> str:
        return f"you are {SENT[-1].split()[-1]}"

    app = server.streamable_http_app()

    async def echoing(scope: Any, receive: Any, send: Any) -> None:
        """The app, each answer carrying the credential it was sent in a header (bare)."""
        sent = dict(scope.get("headers") or []).get(b"authorization", b"").split(b" ")[-1]

        async def with_header(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"x-echoed", sent)]}
            await send(message)

        await app(scope, receive, with_header)

    return echoing


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    found = free_port()
    server = uvicorn.Server(uvicorn.Config(_echoing(), host="127.0.0.1", port=found,
                                          log_level="warning"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, "the echoing server listens")
    yield found
    server.should_exit = True
    thread.join(10)


def _library_filters() -> list[logging.Filter]:
    names = [n for n in logging.Logger.manager.loggerDict if n.startswith(LIBRARY_LOGGERS)]
    return [f for n in names for f in logging.getLogger(n).filters if type(f).__name__ == "_LibraryLogMask"]


async def test_a_secret_an_upstream_echoes_is_masked_in_the_sdks_and_httpcores_debug_logs(
    port: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ECHOING_TOKEN", TOKEN)
    for name in ("mcp.client", "mcp.client.streamable_http", "httpx2", "httpcore2.http11"):
        caplog.set_level(logging.DEBUG, name)
    server = {"name": "echoing", "url": f"http://127.0.0.1:{port}/mcp", "prefixes": ["echoing://"],
              "auth": {"token_env": "ECHOING_TOKEN"}, "read_timeout": 10}  # fmt: skip
    composed = compose({"upstream": upstream}, {"upstream": {"servers": [server]}})
    async with composed.running(), connect(composed) as client:
        result = await client.call_tool("whoami", {})
        assert f"you are {MASK}" in result.content[0].text  # type: ignore[union-attr]
        assert _library_filters()
        logging.getLogger("mcp.client.streamable_http").debug("SSE message: %s", {"text": f"you are {TOKEN}"})
        late = "mcp.shared.made_after_the_mask"  # a module the SDK imports lazily, its logger made now
        assert late not in logging.Logger.manager.loggerDict
        logging.getLogger(late).warning("lazily imported: %s", TOKEN)
        try:
            raise ValueError(f"refused {TOKEN}")
        except ValueError:
            logging.getLogger("httpx2").exception("request failed")
    assert SENT[-1] == f"Bearer {TOKEN}"
    echoed = [r.getMessage() for r in caplog.records if r.name.startswith("httpcore2") and "x-echoed" in r.getMessage()]
    assert echoed and all(f"(b'x-echoed', b'{MASK}')" in e for e in echoed), echoed
    body = [
        r.getMessage() for r in caplog.records if r.name == "mcp.client.streamable_http" and "you are" in r.getMessage()
    ]
    assert body == [f"SSE message: {{'text': 'you are {MASK}'}}"], body
    [failed] = [r for r in caplog.records if r.getMessage() == "request failed"]
    shown = TextFormatter().format(failed)  # the server's own log line, traceback and all
    assert f"ValueError: refused {MASK}" in shown and TOKEN not in shown, shown
    assert [r.getMessage() for r in caplog.records if r.name == late] == [f"lazily imported: {MASK}"]
    assert TOKEN not in caplog.text
    assert not _library_filters()  # removed when the composition closed
