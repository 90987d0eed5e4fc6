"""Opening a connection to one upstream MCP server with the SDK's own ``Client``: the transport
(a started stdio process, or a streamable HTTP client carrying only the configured static credential
or a broker's), how messages name the upstream, and how a failure reads in them."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from mcp_providers.http import client as framework_client
from mcp_providers.plugins._masking import Secrets
from mcp_providers.plugins.upstream.asking import Relay
from mcp_providers.plugins.upstream.bounded import ACCEPT_ENCODING, Bounds
from mcp_providers.plugins.upstream.settings import BearerAuth, ServerSettings, read_variable
from mcp_providers.plugins.upstream.sieve import Sieve, said, sieved
from mcp_providers.plugins.upstream.stdio import line_limit, stdio_transport
from mcp_providers.plugins.upstream.tasks import TasksExtension

__all__ = ["CLIENT_INFO", "IDLE_STREAM_SECONDS", "client", "reason", "transport", "who"]

IDLE_STREAM_SECONDS = 300.0
"""Longest an HTTP upstream's stream may stay quiet before it is opened again (then every watched
URI is re-announced: nothing sent meanwhile is missed unannounced)."""
CLIENT_INFO = types.Implementation(name="mcp-providers", version="upstream")


def who(server: ServerSettings) -> str:
    """How messages name an upstream: ``upstream 'files' (stdio)``."""
    return f"upstream {server.name!r} ({server.transport})"


@contextlib.asynccontextmanager
async def transport(
    server: ServerSettings,
    auth: httpx2.Auth | None = None,
    secrets: Secrets | None = None,
    on_end: Callable[[], None] | None = None,
) -> AsyncIterator[Any]:
    """The transport for ``server``: a started stdio process (lines bounded by its ``max_bytes``:
    :mod:`~mcp_providers.plugins.upstream.stdio`), or a streamable HTTP client (each body and each
    server-sent event bounded the same way while read: :mod:`~mcp_providers.plugins.upstream.bounded`)
    carrying only the configured static credential, or ``auth``'s (a broker's credential); its list
    pages reach the SDK item by item, with ``secrets`` (default: :func:`held_secrets`) masked in
    every message (:mod:`~mcp_providers.plugins.upstream.sieve`); ``on_end()`` when its read stream
    ends (the process exited, the connection closed).

    :raises ValueError: a named environment variable is unset (the message names it).
    """
    sieve = Sieve(secrets=held_secrets(server) if secrets is None else secrets, on_end=on_end)
    if server.command is not None:
        env = {k: read_variable(v, server=server.name, setting=f"env.{k}") for k, v in server.env.items()}
        if sys.platform == "win32":  # ours signals a POSIX process group; the SDK's has Windows' job objects
            params = StdioServerParameters(command=server.command, args=list(server.args), cwd=server.cwd, env=env)
            async with stdio_client(params) as streams:
                yield sieved(streams, sieve)
            return
        async with stdio_transport(
            server.command,
            list(server.args),
            env=env,
            cwd=server.cwd,
            limit=line_limit(server.max_bytes),
            who=who(server),
            pending=sieve.pending,
            masked=sieve.secrets.masked if sieve.secrets else None,  # its stderr may quote its env too
        ) as streams:
            yield sieved(streams, sieve)
        return
    async with _http_streams(server, auth, sieve) as streams:
        yield sieved(streams, sieve)


@contextlib.asynccontextmanager
async def _http_streams(server: ServerSettings, auth: httpx2.Auth | None, sieve: Sieve) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP client for ``server``, each body and event bounded (:class:`Bounds`;
    the requests whose answers it refuses are handed to ``sieve``)."""
    assert server.url is not None  # the settings validator holds exactly one of command and url
    headers = {"Accept-Encoding": ACCEPT_ENCODING}
    if isinstance(server.auth, BearerAuth):
        headers["Authorization"] = (
            f"Bearer {read_variable(server.auth.token_env, server=server.name, setting='auth.token_env')}"
        )
    # requests are bounded by read_timeout in Link.request; the read timeout here bounds an idle
    # stream (a listen stream, the 2025 GET stream), which must outlive a quiet upstream
    timeout = httpx2.Timeout(server.read_timeout, read=max(server.read_timeout + 5, IDLE_STREAM_SECONDS))
    limit = line_limit(server.max_bytes)  # the stdio line's limit, for one body or one event
    hint = f"; raise max_bytes (now {server.max_bytes}) in its settings if this is expected"
    bounds = Bounds(limit, who(server), hint)
    sieve.refused = bounds.refused
    async with (
        # the framework's client: in a read's scope it passes read-only MCP POSTs to this endpoint only
        framework_client(
            headers=headers,
            auth=auth,
            timeout=timeout,
            follow_redirects=False,
            mcp_endpoint=server.url,
            event_hooks={"response": [bounds]},
        ) as http,
        streamable_http_client(server.url, http_client=http, max_sse_event_size=limit) as streams,
    ):
        yield streams


def client(
    server: ServerSettings,
    *,
    on_message: MessageHandlerFnT | None = None,
    auth: httpx2.Auth | None = None,
    relay: Relay | None = None,
    secrets: Secrets | None = None,
    on_end: Callable[[], None] | None = None,
) -> Client:
    """An unentered SDK ``Client`` for ``server`` (no response cache: every read reaches it),
    announcing elicitation and sampling: ``relay`` hands the upstream's questions to the tool call
    that asked (without one, e.g. while listing, every question is refused: no call is in flight);
    and declaring the tasks extension (a task it answers with is followed:
    :mod:`~mcp_providers.plugins.upstream.tasks`); ``secrets`` are masked in all it receives;
    ``on_end()`` when the transport ends."""
    return Client(
        transport(server, auth, secrets, on_end),
        cache=None,
        client_info=CLIENT_INFO,
        message_handler=on_message,
        extensions=[TasksExtension()],
        **(relay or Relay(who(server))).callbacks(),
    )


def reason(exc: BaseException, masked: Callable[[str], str] = str) -> str:
    """How a failure reads in messages: an exception group's each, an MCP error's code and message;
    ``masked`` (:meth:`Link.said`'s masking) applied to what the upstream said before it is cut."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(reason(e, masked) for e in exc.exceptions)
    if isinstance(exc, MCPError):
        return f"error {exc.code}: {masked(exc.message)[:300]}"
    if isinstance(exc, ValidationError):  # what was wrong where, without the values or pydantic's links
        return f"a malformed answer: {said(exc, '(answer)')}"[:300]
    whole = masked(str(exc))  # masked before the first line is kept: a secret may wrap onto the next
    first = whole.splitlines()[0] if whole else ""
    return f"{type(exc).__name__}: {first[:300]}"


def held_secrets(server: ServerSettings) -> Secrets:
    """The values of every variable ``server``'s settings name (its stdio ``env``, ``auth``'s
    token or client secret), to be masked in what the upstream says; unset ones are skipped."""
    secrets = Secrets(f"upstream {server.name!r}")
    for name in server.env.values():  # not all secrets: a short value (a flag, a port) is left
        secrets.add(os.environ.get(name))
    for field in ("token_env", "client_secret_env"):
        if isinstance(named := getattr(server.auth, field, None), str):
            secrets.add(os.environ.get(named))
    return secrets
