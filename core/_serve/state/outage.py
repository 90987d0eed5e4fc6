"""The cluster bus's outages as one replica lives through them: counted, logged once each, and no
update lost silently.

While Redis is unreachable a replica cannot hear the others' updates, nor send them its own. So:

- an update published meanwhile reaches this replica's own watchers at once (``deliver_local``), and
  its URI is kept (:meth:`BusOutages.unsent`, at most :data:`MAX_UNSENT`; the rest are counted in
  ``dropped``), to be sent on the channel once Redis answers again, for the other replicas;
- once the listener is subscribed again, every URI this replica's watchers watch (both eras) is
  re-announced to them (``resources/updated``, a listen event): any of them may have changed in
  the window, on any replica, unseen (conservative: a client re-reads, it never misses);
- the outage is logged once when it starts (a warning naming the error) and once when it ends (a
  warning: it closes the first, and the default level shows both), with how long it lasted and how
  many URIs were re-announced; both are counted (``mcp_providers_cluster_outages_total``,
  ``..._recoveries_total``, ``..._reannounced_total``).
"""

from __future__ import annotations

import logging
import time

from mcp_providers.config import mask

log = logging.getLogger("mcp_providers.cluster")

MAX_UNSENT = 4096
"""URIs kept to send on the channel after an outage; past it the oldest is dropped and counted."""


class BusOutages:
    """One replica's account of its cluster bus outages (see the module docstring).

    :param where: the Redis address, for the log (``host:port``, never the URL's password).
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.outages = 0
        """Outages begun (one per loss of the bus, however many reconnection attempts follow)."""
        self.recoveries = 0
        """Outages ended: the listener was subscribed again and the watched URIs re-announced."""
        self.reannounced = 0
        """URIs re-announced to local watchers after outages, in all."""
        self.dropped = 0
        """Unsent updates forgotten because more than :data:`MAX_UNSENT` were waiting."""
        self.since: float | None = None
        """``time.monotonic()`` when the current outage began; ``None`` while the bus is up."""
        self._unsent: dict[str, None] = {}  # ordered: the oldest is dropped first

    @property
    def down(self) -> bool:
        return self.since is not None

    def lost(self, why: BaseException) -> None:
        """The bus failed (``why``): the first failure of an outage is logged and counted, the
        reconnection attempts after it are not."""
        if self.since is not None:
            return
        self.since = time.monotonic()
        self.outages += 1
        log.warning(
            "cluster backend lost (Redis at %s, %s: %s); updates reach this replica's own watchers meanwhile "
            "and every watched URI is re-announced when it is back; reconnecting",
            self.where, type(why).__name__, mask(str(why)),
        )  # fmt: skip

    def recovered(self, reannounced: int, republished: int) -> None:
        """The bus is back: ``reannounced`` URIs were told to local watchers, ``republished`` updates
        made here during the outage were sent on the channel."""
        seconds = time.monotonic() - self.since if self.since is not None else 0.0
        self.since = None
        self.recoveries += 1
        self.reannounced += reannounced
        log.warning(
            "cluster backend back (Redis at %s) after %.1f s: re-announced %d watched URI%s to this replica's "
            "watchers, sent %d update%s made here meanwhile",
            self.where, seconds, reannounced, "" if reannounced == 1 else "s", republished,
            "" if republished == 1 else "s",
        )  # fmt: skip

    def unsent(self, uri: str) -> None:
        """Keep ``uri``, an update the channel did not take, to send it once Redis answers."""
        self._unsent.pop(uri, None)
        self._unsent[uri] = None
        if len(self._unsent) > MAX_UNSENT:
            del self._unsent[next(iter(self._unsent))]
            self.dropped += 1

    def take_unsent(self) -> list[str]:
        """The kept URIs, oldest first, forgotten here (:meth:`unsent` them again if sending fails)."""
        taken, self._unsent = list(self._unsent), {}
        return taken

    @property
    def waiting(self) -> int:
        """Updates waiting to be sent on the channel."""
        return len(self._unsent)
