"""Stopping an HTTP replica within its grace period (``SIGTERM``: a rollout, a scale-down, a drain).

uvicorn, on the first ``SIGTERM`` or ``SIGINT``, stops accepting connections and waits for the
open ones to finish their responses. A listen stream or a 2025-era GET stream never finishes by
itself, so without more a replica with one open waited until its client gave up (60.5 s measured),
and under Kubernetes' 30 s grace period every rollout ended in ``SIGKILL``. :class:`GracefulServer`
therefore, on that first signal:

1. ends every stream that would otherwise be held open, gracefully: each 2026-07-28
   ``subscriptions/listen`` stream sends its result as its last frame (the spec's graceful close:
   its client listens again, on another replica), each 2025-era session's standalone GET stream
   ends (its client reconnects and, finding the session gone, starts a new one);
2. lets in-flight requests finish, for at most :data:`GRACE_SECONDS` (uvicorn's
   ``timeout_graceful_shutdown``; past it they are cancelled), then stops the providers, the audit
   sinks and the cluster backend as usual.

The whole stop fits in 10 s; the chart's ``terminationGracePeriodSeconds`` leaves room for its
``preStop`` pause (the load balancer stops sending new requests first) and this.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

from mcp_providers._serve.transport.manager import live_transports, session_manager_of

if TYPE_CHECKING:
    from mcp_providers._serve.composition import Composition

log = logging.getLogger("mcp_providers.serve")

GRACE_SECONDS = 7.0
"""Longest in-flight requests are waited for once streams are ended (then they are cancelled)."""


class GracefulServer(uvicorn.Server):
    """``uvicorn.Server`` that calls ``ending()`` in its event loop on the first exit signal.

    :param ending: ends the long-lived streams (:func:`stream_ender`); returns nothing, must not block.
    """

    def __init__(self, config: uvicorn.Config, ending: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self._ending = ending
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()  # the signal handler hands work to it
        await super().startup(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        first = not self.should_exit
        super().handle_exit(sig, frame)
        if first and self._ending is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._ending)  # a signal handler must not touch the loop itself


def stream_ender(composition: Composition) -> Callable[[], None]:
    """What :class:`GracefulServer` calls on ``SIGTERM`` for ``composition`` (see the module docstring)."""

    def end() -> None:
        composition.runtime.stop_starting()  # a provider still starting does not hold the stop up
        listens = composition.runtime.hub.end_streams()
        sessions = 0
        manager = session_manager_of(composition.server)
        for transport in live_transports(manager) if manager is not None else []:
            transport.close_standalone_sse_stream()  # a no-op for a session without a GET stream
            sessions += 1
        log.warning(
            "stopping: ended %d listen stream%s and the GET streams of %d session%s; in-flight requests get "
            "up to %g s", listens, "" if listens == 1 else "s", sessions, "" if sessions == 1 else "s", GRACE_SECONDS,
        )  # fmt: skip

    return end
