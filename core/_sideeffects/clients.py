"""Patches of the HTTP client libraries, for messages that name the URL asked for: ``httpcore2``
(every ``httpx2`` client) and ``httpcore`` pools and connections, ``http.client`` (``urllib``,
``urllib3``, ``requests``) and ``aiohttp``. Installed only process-wide (:mod:`.levels`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects.judge import check_http, judged_above, path_of
from mcp_providers._sideeffects.scope import SAFE_METHODS, scope_var


def _core_request_has_body(headers: Any) -> bool:
    for name, value in headers:
        lowered = name.lower()
        if (lowered == b"content-length" and value.strip() != b"0") or lowered == b"transfer-encoding":
            return True
    return False


def _core_check(request: Any, *, tunnel_ok: bool = False) -> None:
    method = request.method.decode("ascii", "replace")
    has_body = _core_request_has_body(request.headers)
    if tunnel_ok and method.upper() == "CONNECT" and not has_body:
        return  # a connection opening a proxy tunnel: the requests inside it are judged on their own
    url = request.url
    target = url.target.decode("ascii", "replace")
    if "://" in target:  # absolute-form, to a forward proxy
        full = target
    else:
        port = f":{url.port}" if url.port else ""
        full = f"{url.scheme.decode()}://{url.host.decode('ascii', 'replace')}{port}{target}"
    check_http(method, full, has_body=has_body)


def _guard(cls: type, name: str, check: Callable[..., None], *, is_async: bool) -> None:
    """Wrap ``cls.name`` so a scope runs ``check`` (which may raise) on its arguments first, once
    per request however many guarded layers it passes through."""
    original = getattr(cls, name)
    if getattr(original, "__mcp_providers_guarded__", False):
        return
    if is_async:

        async def guarded_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            if scope_var.get() is None or judged_above.get():
                return await original(self, *args, **kwargs)
            check(self, *args, **kwargs)
            token = judged_above.set(True)
            try:
                return await original(self, *args, **kwargs)
            finally:
                judged_above.reset(token)

        wrapper: Any = guarded_async
    else:

        def guarded_sync(self: Any, *args: Any, **kwargs: Any) -> Any:
            if scope_var.get() is None or judged_above.get():
                return original(self, *args, **kwargs)
            check(self, *args, **kwargs)
            token = judged_above.set(True)
            try:
                return original(self, *args, **kwargs)
            finally:
                judged_above.reset(token)

        wrapper = guarded_sync
    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = original.__name__, original.__qualname__, original.__doc__
    wrapper.__wrapped__ = original
    wrapper.__mcp_providers_guarded__ = True
    setattr(cls, name, wrapper)


def patch_httpcore(module: Any) -> None:
    """The pool (good messages: the URL asked for) and every connection class below it (a bare
    ``HTTPConnection``/``HTTP11Connection``/``HTTP2Connection`` or proxy connection)."""
    _guard(module.ConnectionPool, "handle_request", lambda _s, request: _core_check(request), is_async=False)
    _guard(module.AsyncConnectionPool, "handle_async_request", lambda _s, request: _core_check(request), is_async=True)
    conn = lambda _s, request: _core_check(request, tunnel_ok=True)  # noqa: E731
    for name in ("HTTPConnection", "HTTP11Connection", "HTTP2Connection"):
        for prefix, method, is_async in (("", "handle_request", False), ("Async", "handle_async_request", True)):
            cls = _optional_attr(module, prefix + name)
            if cls is not None and hasattr(cls, method):  # without h2, HTTP2Connection is a stub
                _guard(cls, method, conn, is_async=is_async)


def _optional_attr(module: Any, name: str) -> Any:
    try:
        return getattr(module, name)
    except (AttributeError, ImportError, RuntimeError):  # httpcore's HTTP2Connection needs h2
        return None


def _http_client_judge(conn: Any, method: str, full: str, *, has_body: bool) -> None:
    if check_http(method, full, has_body=has_body):  # let through: the socket below must not judge it again
        scope = scope_var.get()
        if scope is not None:
            scope.let_through(method.upper(), path_of(full))


def _http_client_putrequest(conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> None:
    scheme = "https" if getattr(conn, "default_port", 80) == 443 else "http"
    full = url if "://" in url else f"{scheme}://{conn.host}:{conn.port}{url}"
    conn.__dict__["_mcp_providers_request"] = (method, full)
    _http_client_judge(conn, method, full, has_body=False)


def _http_client_putheader(conn: Any, header: str | bytes, *values: Any) -> None:
    name = (header.decode("latin-1") if isinstance(header, bytes) else header).lower()
    if name not in ("content-length", "transfer-encoding"):
        return
    texts = [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in values]
    if name == "content-length" and all(t.strip() == "0" for t in texts):
        return
    method, full = conn.__dict__.get("_mcp_providers_request", ("GET", f"http://{conn.host}:{conn.port}/"))
    if method.upper() in SAFE_METHODS:  # an unsafe method was judged (and recorded) by putrequest
        _http_client_judge(conn, method, full, has_body=True)


def _aiohttp_check(_session: Any, method: str, url: Any, *args: Any, **kwargs: Any) -> None:
    has_body = kwargs.get("data") is not None or kwargs.get("json") is not None
    check_http(method, str(url), has_body=has_body)


_AIOHTTP_VERBS = {"get": "GET", "options": "OPTIONS", "head": "HEAD", "post": "POST", "put": "PUT", "patch": "PATCH",
                  "delete": "DELETE"}  # fmt: skip
"""``aiohttp.ClientSession`` methods named after their HTTP method (each takes the URL first)."""


def patch_aiohttp(module: Any) -> None:
    """``aiohttp.ClientSession``'s public request methods: ``request(method, url)`` and one per HTTP
    method. Each returns the request's context manager without sending, so refusing at the call
    refuses before anything is sent; a WebSocket opens through ``request`` (a ``GET``)."""
    session = module.ClientSession
    _guard(session, "request", _aiohttp_check, is_async=False)
    for name, verb in _AIOHTTP_VERBS.items():
        _guard(session, name, functools.partial(_aiohttp_verb_check, verb), is_async=False)


def _aiohttp_verb_check(verb: str, session: Any, url: Any, *args: Any, **kwargs: Any) -> None:
    _aiohttp_check(session, verb, url, *args, **kwargs)


def patch_http_client() -> None:
    import http.client

    # Not through _guard: putrequest only buffers, and what the connection then sends must still
    # reach the socket guard (a raw send() after a GET's head is judged there).
    for name, check in (("putrequest", _http_client_putrequest), ("putheader", _http_client_putheader)):
        original = getattr(http.client.HTTPConnection, name)
        if getattr(original, "__mcp_providers_guarded__", False):
            continue
        setattr(http.client.HTTPConnection, name, _checked_first(original, check))


def _checked_first(original: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if scope_var.get() is not None:
            check(self, *args, **kwargs)
        return original(self, *args, **kwargs)

    guarded.__name__, guarded.__qualname__, guarded.__doc__ = original.__name__, original.__qualname__, original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    guarded.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    return guarded
