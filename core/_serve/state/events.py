"""Resumable 2025-era streams with ``[cluster]``: the SDK's :class:`~mcp.server.streamable_http.EventStore` on Redis.

A stateful streamable-HTTP session (not ``--stateless``) numbers every SSE event it sends and keeps
it here, so a client that lost its stream reconnects with ``Last-Event-ID`` and is sent what it
missed (the SDK replays it, then tails the live stream). Each stream of each session is one Redis
stream, ``{key_prefix}:sse:<session>:<stream>``:

- sealed: with the deployment key each message is encrypted (AES-256-GCM, :mod:`.sealing`), the
  stream's key as associated data: results may be one caller's data;
- bounded: at most ``stream_max_events`` events are kept per stream (``XADD ... MAXLEN ~``), and a
  stream is dropped ``stream_ttl_seconds`` after its last event;
- an event id is ``<stream, base64url>.<Redis entry id>``: it names its stream, so a replay reads
  that stream only, and only within the session the request belongs to (:meth:`RedisEventStore.scope` gives
  each session's transport a view keyed by its session id);
- Redis down: events are still delivered live, only not kept (one warning); a replay fails with a
  JSON-RPC error on the stream saying why, within ``timeout_seconds``; never a hang.
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError, JSONRPCMessage, jsonrpc_message_adapter
from pydantic import ValidationError

from mcp_providers._serve.state.cluster import ClusterUnavailable, RedisBackend

log = logging.getLogger("mcp_providers.cluster")
UNSTORED = "unstored"
"""The id of an event Redis could not keep: delivered live, not replayable."""


def _encode_id(stream_id: str, entry: str) -> str:
    return base64.urlsafe_b64encode(stream_id.encode()).decode().rstrip("=") + "." + entry


def _decode_id(event_id: str) -> tuple[str, str] | None:
    """``(stream id, Redis entry id)`` of ``event_id``, or ``None`` when it is not one of ours."""
    head, _, entry = event_id.partition(".")
    if not entry or not all(part.isdigit() for part in entry.split("-", 1)):
        return None
    try:
        return base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode(), entry
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


class RedisEventStore(EventStore):
    """Events of the streams of one session (``session``), kept in Redis (see the module docstring)."""

    def __init__(self, backend: RedisBackend, session: str = "-") -> None:
        self._backend, self.session = backend, session
        settings = backend.settings
        self._ttl_ms = max(1, int(settings.stream_ttl_seconds * 1000))
        self._max_events = settings.stream_max_events
        self._warned = False

    def for_session(self, session: str) -> RedisEventStore:
        """The same store seen by one session: its streams are its own."""
        return RedisEventStore(self._backend, session)

    def scope(self, manager: Any) -> None:
        """Give each new session of the SDK's session ``manager`` its own view of this store.

        The SDK hands one event store to every session, and stream ids (``_GET_stream``, request
        ids) repeat across sessions; so each transport the manager admits gets ``for_session(id)``.
        """
        admit = manager._admit_session

        def admit_scoped(*args: Any, **kwargs: Any) -> Any:
            transport = admit(*args, **kwargs)
            if transport is not None and transport.mcp_session_id:
                transport._event_store = self.for_session(transport.mcp_session_id)
            return transport

        manager._admit_session = admit_scoped

    def _key(self, stream_id: str) -> str:
        return self._backend.key("sse", f"{self.session}:{stream_id}")

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        if message is None or _answers_a_cancel(message):  # numbered, never replayed (see below)
            text: Any = ""
        else:
            text = jsonrpc_message_adapter.dump_json(message, by_alias=True, exclude_none=True)
        key = self._key(stream_id)
        sealing = self._backend.sealing
        if sealing is not None and text:  # a result may be one caller's data: never readable in Redis
            text = sealing.seal(text, key)

        async def add(redis: Any) -> Any:
            async with redis.pipeline(transaction=True) as pipe:
                pipe.xadd(key, {"m": text}, maxlen=self._max_events, approximate=True)
                pipe.pexpire(key, self._ttl_ms)
                return (await pipe.execute())[0]

        if not self._backend.connected:  # known down: no wait on every event
            return self._unstored("Redis is unreachable")
        try:
            entry = await self._backend.call("keep a stream event", add)
        except ClusterUnavailable as exc:
            return self._unstored(str(exc))
        self._warned = False
        return _encode_id(stream_id, entry.decode() if isinstance(entry, bytes) else str(entry))

    def _unstored(self, why: str) -> str:
        if not self._warned:
            self._warned = True
            log.warning("stream events are delivered but not kept for Last-Event-ID replay: %s", why)
        return UNSTORED

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        decoded = _decode_id(last_event_id)
        if decoded is None:
            log.info("Last-Event-ID %.80r is not an event this server kept; nothing to replay", last_event_id)
            return None
        stream_id, entry = decoded
        key = self._key(stream_id)
        try:
            entries = await self._backend.call("replay a stream", lambda r: r.xrange(key, min=f"({entry}", max="+"))
            known = entries or await self._backend.call("replay a stream", lambda r: r.exists(key))
        except ClusterUnavailable as exc:
            error = ErrorData(code=INTERNAL_ERROR, message=str(exc), data={"backend": "redis"})
            await send_callback(EventMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error)))
            return None
        if not known:
            log.info("stream of Last-Event-ID %.80r expired or never existed; nothing to replay", last_event_id)
            return None
        for entry_id, fields in entries:
            event_id = _encode_id(stream_id, entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id))
            kept = fields.get(b"m")
            if kept and self._backend.sealing is not None:
                kept = self._backend.sealing.open(kept, key) or b"unsealed"  # tampered or moved: malformed
            if kept:
                try:
                    message = jsonrpc_message_adapter.validate_json(kept)
                except ValidationError:  # not one this store kept: skip it, replay the rest
                    log.warning("skipped a malformed event %s in %s: %.120r", event_id, key, fields[b"m"])
                    continue
                await send_callback(EventMessage(message, event_id))
        return stream_id


REQUEST_CANCELLED = -32800


def _answers_a_cancel(message: JSONRPCMessage) -> bool:
    """The answer the SDK's 2025-era transport writes for a request its client cancelled: the HTTP
    app leaves it off the live stream (a cancelled request is not answered), so a resumed stream
    must not replay it either."""
    return isinstance(message, JSONRPCError) and message.error.code == REQUEST_CANCELLED
