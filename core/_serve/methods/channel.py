"""The session channel: a running tool's way back to the client that called it, over an SDK session.

The contract (:class:`~mcp_providers.providers.ClientChannel`, ``progress``/``log``/``sample``/
``elicit``) is documented in :mod:`mcp_providers.providers`; this is the implementation the core
hands a :class:`~mcp_providers.providers.ToolCall` while serving a 2025-era session: ``sample`` and
``elicit`` are server-to-client requests. On 2026-07-28 sessions, which have none, the call gets a
:class:`~mcp_providers._serve.methods.rounds.RoundsChannel` instead (input rounds, SEP-2322).

Logging and sampling are deprecated by the 2026-07-28 specification (SEP-2577), and the SDK warns
(``MCPDeprecationWarning``) when they are used. This module is where the framework uses them on
purpose, for clients on the 2025-11-25 protocol, so it silences exactly that warning around those
calls and nowhere else.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import mcp_types as types
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, NoBackChannelError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_providers._serve.seams import connection_of
from mcp_providers._serve.steps.exchange import version_of
from mcp_providers._serve.steps.wire import progress_message
from mcp_providers.errors import ToolFailure
from mcp_providers.providers import LOG_LEVELS, ClientChannel, Elicited, LogLevel, Sampled

LOG_LEVEL_KEY = "mcp_providers.log_level"
"""Key of the client's chosen minimum level in the SDK connection's per-connection ``state``."""


def _connection_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    # The SDK keeps per-connection scratch state on its Connection, which the low-level context
    # reaches only through the session (a private name: seams.check_seams refuses an SDK without it).
    state = connection_of(ctx.session).state
    return state if isinstance(state, dict) else None


def set_log_level(ctx: ServerRequestContext[Any, Any], level: str) -> None:
    """Remember ``level`` as this connection's minimum log level (the ``logging/setLevel`` handler)."""
    state = _connection_state(ctx)
    if state is not None:
        state[LOG_LEVEL_KEY] = level


class SessionChannel(ClientChannel):
    """The channel of one ``tools/call`` served over an SDK session (built by the core)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx

    @property
    def connection(self) -> object | None:
        """The SDK ``Connection`` of the call's session (a stateless request is one of its own)."""
        try:
            found: object = connection_of(self._ctx.session)  # the seam, checked at start
            return found
        except AttributeError:  # a session without one: each call is a caller of its own
            return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for progress on this call (its
        ``message`` only to a session whose version defines it: 2025-03-26 and later)."""
        shown = progress_message(message, version_of(self._ctx))
        await self._ctx.session.report_progress(progress, total, shown)

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if ``level`` is at or above the connection's chosen level.

        :raises ValueError: ``level`` is not one of :data:`LOG_LEVELS`.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}; got {level!r}")
        state = _connection_state(self._ctx)
        floor = state.get(LOG_LEVEL_KEY) if state is not None else None
        if floor in LOG_LEVELS and LOG_LEVELS.index(level) < LOG_LEVELS.index(floor):
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = self._ctx.session.send_log_message(level, data, logger, related_request_id=self._ctx.request_id)
        await sending

    def _require(self, capability: types.ClientCapabilities, what: str) -> None:
        # The channel first in the 2025 era: a stateless request is a session of its own that never
        # saw the client's initialize, so its capabilities read as undeclared (round 4 item 23).
        # (2026-07-28 asks through input rounds, which need no channel: the capability decides.)
        legacy = version_of(self._ctx) not in MODERN_PROTOCOL_VERSIONS
        if legacy and not getattr(self._ctx.session, "can_send_request", True):
            raise ToolFailure(_NO_BACK_CHANNEL.format(what=what))
        if not self._ctx.session.check_client_capability(capability):
            raise ToolFailure(f"the client did not declare the {what} capability, so this tool cannot ask it")

    async def sample(
        self,
        prompt: str | Sequence[tuple[Literal["user", "assistant"], str]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
    ) -> Sampled:
        """Send ``sampling/createMessage`` and wait for the answer.

        :raises ToolFailure: the client lacks the sampling capability, the connection cannot carry
            server-to-client requests, or the client answered with an error.
        """
        self._require(types.ClientCapabilities(sampling=types.SamplingCapability()), "sampling")
        messages = sampling_messages(prompt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            asking = self._ctx.session.create_message(
                messages, max_tokens=max_tokens, system_prompt=system_prompt, related_request_id=self._ctx.request_id
            )
        try:
            result = await asking
        except NoBackChannelError:
            raise ToolFailure(_NO_BACK_CHANNEL.format(what="sampling")) from None
        except MCPError as exc:
            raise ToolFailure(f"the client refused the sampling request: {exc}") from None
        return sampled(result)

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicited:
        """Send ``elicitation/create`` (form mode) and wait for the user's answer.

        :raises ToolFailure: the client lacks the elicitation capability, the connection cannot
            carry server-to-client requests, or the client answered with an error.
        """
        self._require(types.ClientCapabilities(elicitation=types.ElicitationCapability()), "elicitation")
        try:
            result = await self._ctx.session.elicit_form(message, dict(schema), related_request_id=self._ctx.request_id)
        except NoBackChannelError:
            raise ToolFailure(_NO_BACK_CHANNEL.format(what="elicitation")) from None
        except MCPError as exc:
            raise ToolFailure(f"the client refused the elicitation request: {exc}") from None
        return Elicited(action=result.action, content=dict(result.content or {}))


def sampling_messages(prompt: str | Sequence[tuple[Literal["user", "assistant"], str]]) -> list[types.SamplingMessage]:
    """The messages of a sampling request: ``prompt`` as one user message, or each ``(role, text)``."""
    pairs = [("user", prompt)] if isinstance(prompt, str) else list(prompt)
    return [types.SamplingMessage(role=role, content=types.TextContent(type="text", text=text)) for role, text in pairs]


def sampled(result: types.CreateMessageResult) -> Sampled:
    """What a provider gets of a sampling result (its text; empty for a non-text answer)."""
    text = result.content.text if isinstance(result.content, types.TextContent) else ""
    return Sampled(text=text, model=result.model, stop_reason=result.stop_reason)


_NO_BACK_CHANNEL = (
    "{what} needs a connection that carries server-to-client requests (stdio, or streamable HTTP with "
    "sessions and SSE responses); this one has none (the server runs with --stateless or --json-response), "
    "so this tool cannot ask the client"
)
