"""Issue 43 (HTTP under load): the HTTP app keeps what its per-request checks accepted, never what
they refused, and keeps a bounded number of them.

The DNS-rebinding policy of the MCP path (``HttpApp.rebinding_refusal``) and the Content-Type/Accept
check of a stateless JSON POST (``http_inbound.post_refusal``) are functions of two header values
each; a pair accepted once is not judged again. These tests hold the keys to both values, the
refusals to every request, and the sets to their bounds.
"""

from __future__ import annotations

from typing import Any

import pytest
from serve_support import composition

from mcp_providers._serve.transport import http_inbound
from mcp_providers._serve.transport.http_app import ACCEPTED_PAIRS, HttpApp, http_app
from mcp_providers._serve.transport.http_inbound import ACCEPTED_POSTS, post_refusal
from mcp_providers._serve.transport.http_policy import transport_policy

pytestmark = pytest.mark.anyio


def _app() -> HttpApp:
    return http_app(composition().server, stateless=True, json_response=True, security=transport_policy("127.0.0.1"))


def _scope(host: bytes | None, origin: bytes | None = None) -> dict[str, Any]:
    headers = [(b"content-type", b"application/json")]
    headers += [(b"host", host)] if host is not None else []
    headers += [(b"origin", origin)] if origin is not None else []
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""}


async def test_a_host_accepted_once_is_still_judged_with_another_origin() -> None:
    app = _app()
    assert await app.rebinding_refusal(_scope(b"127.0.0.1:8000")) is None
    assert await app.rebinding_refusal(_scope(b"127.0.0.1:8000")) is None  # kept
    for _ in range(2):
        refused = await app.rebinding_refusal(_scope(b"127.0.0.1:8000", b"http://evil.example"))
        assert refused is not None and refused.status_code == 403
    same = _scope(b"127.0.0.1:8000", b"http://127.0.0.1:8000")
    assert await app.rebinding_refusal(same) is None


async def test_a_refused_host_is_refused_every_time() -> None:
    app = _app()
    for host in (b"evil.example", b"127.0.0.1:8000", b"evil.example", None, b""):
        refused = await app.rebinding_refusal(_scope(host))
        if host == b"127.0.0.1:8000":
            assert refused is None
        else:
            assert refused is not None and refused.status_code == 421, host


async def test_the_kept_host_and_origin_pairs_are_bounded() -> None:
    app = _app()
    for port in range(1, ACCEPTED_PAIRS + 50):
        assert await app.rebinding_refusal(_scope(f"127.0.0.1:{port}".encode())) is None
    assert len(app._accepted) == ACCEPTED_PAIRS
    refused = await app.rebinding_refusal(_scope(b"127.0.0.1:9", b"http://evil.example"))
    assert refused is not None and refused.status_code == 403


def test_a_content_type_accepted_once_is_still_judged_with_another_accept() -> None:
    good = {b"content-type": b"application/json", b"accept": b"application/json, text/event-stream"}
    assert post_refusal(good) is None
    assert post_refusal(good) is None
    for _ in range(2):
        refused = post_refusal({**good, b"accept": b"text/html"})
        assert refused is not None and refused.status_code == 406
        refused = post_refusal({**good, b"content-type": b"text/plain"})
        assert refused is not None and refused.status_code == 400


def test_the_kept_content_type_and_accept_pairs_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_inbound, "_accepted_posts", set())
    for n in range(ACCEPTED_POSTS + 20):
        accept = f"application/json, x/{n}".encode()
        assert post_refusal({b"content-type": b"application/json", b"accept": accept}) is None
    assert len(http_inbound._accepted_posts) == ACCEPTED_POSTS
