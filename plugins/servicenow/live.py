"""Live ServiceNow resources: what changed, and who is told.

Two sources of change reach watchers, for every watchable resource (the active incidents,
problems and change requests, update sets in progress, an incident by number, an update set by
sys_id):

- **this server's own writes**: the tools call :func:`written` after a create or update, which
  publishes the record's URI and its table's list at once (no poll interval to wait);
- **changes made elsewhere**: one poller per instance takes a snapshot of each watched table when
  the server starts, then every ``incidents_poll_seconds``, and publishes the list and the record
  URIs whose ``(number, sys_updated_on)`` entered, left or changed.

The poller sees a page of each list ordered by ``sys_updated_on`` (newest first), so a change to a
record that is not in its list (a closed incident) is reported only when this server made it, and
two changes within one second of ``sys_updated_on`` look like one: ServiceNow's own resolution.
``servicenow://{instance}/info`` is declared live but not subscribable: it changes only with the
configuration.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_providers.plugins.servicenow.backoff import Backoff
from mcp_providers.plugins.servicenow.client import InstancePool
from mcp_providers.plugins.servicenow.errors import ServiceNowError
from mcp_providers.plugins.servicenow.query import NUMBER_PATTERN, SYS_ID_PATTERN, Filter, Order, build_query
from mcp_providers.plugins.servicenow.schema import raw

__all__ = ["WATCHED", "Poller", "SharedBackoff", "Watched", "record_uris", "written"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Watched:
    """One polled table and the list resource that shows it."""

    table: str
    path: str
    """The list's path after ``servicenow://{instance}/``."""
    filter: Filter


WATCHED: tuple[Watched, ...] = (
    Watched("incident", "incidents", Filter(field="active", value="true")),
    Watched("problem", "problems", Filter(field="active", value="true")),
    Watched("change_request", "change-requests", Filter(field="active", value="true")),
    Watched("sys_update_set", "update-sets", Filter(field="state", value="in progress")),
)
_BY_TABLE = {w.table: w for w in WATCHED}

Snapshot = tuple[int | None, dict[str, tuple[str, str]]]
"""(total, {sys_id: (number, sys_updated_on)}) of one list page."""


def record_uris(instance: str, table: str, record: Mapping[str, Any]) -> list[str]:
    """Every watchable URI a change to ``record`` of ``table`` changes (its list, itself)."""
    uris = []
    watched = _BY_TABLE.get(table)
    if watched is not None:
        uris.append(f"servicenow://{instance}/{watched.path}")
    number, sys_id = raw(record.get("number")), raw(record.get("sys_id"))
    if table == "incident" and NUMBER_PATTERN.fullmatch(number or ""):
        uris.append(f"servicenow://{instance}/incidents/{number}")
    if table == "sys_update_set" and SYS_ID_PATTERN.fullmatch(sys_id or ""):
        uris.append(f"servicenow://{instance}/update-sets/{sys_id}")
    update_set = raw(record.get("update_set"))
    if table == "sys_update_xml" and SYS_ID_PATTERN.fullmatch(update_set or ""):
        uris.append(f"servicenow://{instance}/update-sets/{update_set}")
    return uris


_PUBLISHERS: weakref.WeakKeyDictionary[InstancePool, Callable[[], Any]] = weakref.WeakKeyDictionary()


def register(pool: InstancePool, publisher: Callable[[], Any]) -> None:
    """Let the tools sharing ``pool`` publish through the resource provider's publisher."""
    _PUBLISHERS[pool] = publisher


async def written(pool: InstancePool, instance: str, table: str, record: Mapping[str, Any]) -> None:
    """Publish what a write through ``pool`` changed; never raises (the write has happened)."""
    get = _PUBLISHERS.get(pool)
    publisher = get() if get is not None else None
    if publisher is None:
        return
    for uri in record_uris(instance, table, record):
        try:
            await publisher.resource_updated(uri)
        except Exception:  # a watcher problem must not turn a successful write into a failure
            log.exception("publishing %s after a write failed", uri)


class Poller:
    """Publishes the changes made elsewhere on one instance (see the module docstring).

    With a cluster backend one replica polls at a time: each round first asks
    ``publisher.hold("poll/<instance>", ...)``; the holder compares with the snapshot the previous
    holder left (``publisher.recall``) and leaves its own (``publisher.remember``), so a takeover
    loses no change.
    """

    def __init__(self, pool: InstancePool, instance: str, publisher: Callable[[], Any]) -> None:
        self._pool, self._instance, self._publisher = pool, instance, publisher
        self._source = f"poll/{instance}"
        self._last: dict[str, Snapshot] = {}
        self.polls = 0
        """Completed rounds (one request per watched table each)."""

    async def run(self, started: anyio.Event) -> None:
        """Take the first snapshot now, set ``started``, then poll every ``incidents_poll_seconds``."""
        interval = self._pool.settings(self._instance).incidents_poll_seconds
        try:
            await self.round(interval)
        finally:
            started.set()
        while True:
            await anyio.sleep(interval)
            await self.round(interval)

    async def round(self, interval: float) -> None:
        """One snapshot of every watched table, if this replica polls; publish what differs."""
        publisher = self._publisher()
        # claims the source until the next round is due (with slack); the lease is [cluster] lease_seconds
        if publisher is not None and not await publisher.hold(self._source, interval * 1.5 + 1):
            self._last.clear()  # another replica polls; take its snapshot over when it stops
            return
        if not self._last and publisher is not None:
            self._last = _restore(await publisher.recall(self._source))
        for watched in WATCHED:
            seen = await self._snapshot(watched)
            if seen is None:
                continue
            before = self._last.get(watched.table)
            self._last[watched.table] = seen
            if before is not None and before != seen:
                await self._changed(watched, before, seen)
        self.polls += 1
        if publisher is not None:
            await publisher.remember(self._source, json.dumps(self._last))

    async def _snapshot(self, watched: Watched) -> Snapshot | None:
        query = build_query([watched.filter], [Order(field="sys_updated_on", descending=True), Order(field="sys_id")])
        try:
            page = await self._pool.client(self._instance).list_records(
                watched.table, query=query, fields=("sys_id", "number", "sys_updated_on")
            )
        except Exception as exc:  # the next poll tries again; reads report their own errors
            # A ServiceNowError's message is what a read of that table would answer (masked); any other is unknown text.
            said = f"{exc}" if isinstance(exc, ServiceNowError) else type(exc).__name__
            log.warning("instance %s: polling %s failed: %s", self._instance, watched.table, said)
            return None
        records = {raw(r.get("sys_id")): (raw(r.get("number")), raw(r.get("sys_updated_on"))) for r in page.records}
        return page.total, records

    async def _changed(self, watched: Watched, before: Snapshot, seen: Snapshot) -> None:
        publisher = self._publisher()
        if publisher is None:
            return
        uris = {f"servicenow://{self._instance}/{watched.path}": None}
        for sys_id in set(before[1]) | set(seen[1]):
            if before[1].get(sys_id) != seen[1].get(sys_id):
                number = (seen[1].get(sys_id) or before[1][sys_id])[0]
                for uri in record_uris(self._instance, watched.table, {"sys_id": sys_id, "number": number}):
                    uris[uri] = None
        for uri in uris:
            try:
                await publisher.resource_updated(uri)
            except Exception:
                log.exception("publishing %s failed", uri)


def _restore(text: str | None) -> dict[str, Snapshot]:
    """Snapshots left by the previous poller (JSON turns tuples into lists: compare as tuples)."""
    if not text:
        return {}
    try:
        data = json.loads(text)
        return {t: (v[0], {k: (r[0], r[1]) for k, r in v[1].items()}) for t, v in data.items()}
    except (ValueError, TypeError, KeyError, IndexError):
        return {}


class SharedBackoff:
    """The 429 back-off, shared through the publisher with every replica (``[cluster]``).

    The resume time (wall clock) of each instance is kept with ``publisher.remember`` under
    ``backoff/<instance>``; a request waits for the later of it and this process's own back-off.
    Without a cluster the publisher keeps it in the process; if the backend is unreachable each
    replica backs off on its own, as before.
    """

    def __init__(self, local: Backoff, publisher: Callable[[], Any]) -> None:
        self._local, self._publisher = local, publisher

    async def hold(self, instance: str, seconds: float) -> None:
        await self._local.hold(instance, seconds)
        publisher = self._publisher()
        if publisher is None:
            return
        until = time.time() + max(0.0, seconds)
        with contextlib.suppress(Exception):  # best effort: the local back-off still holds
            if until > await self._shared(publisher, instance):
                await publisher.remember(f"backoff/{instance}", repr(until))

    async def remaining(self, instance: str) -> float:
        local = await self._local.remaining(instance)
        publisher = self._publisher()
        if publisher is None:
            return local
        try:
            shared = await self._shared(publisher, instance) - time.time()
        except Exception:
            return local
        return max(local, shared, 0.0)

    @staticmethod
    async def _shared(publisher: Any, instance: str) -> float:
        text = await publisher.recall(f"backoff/{instance}")
        return float(text) if text else 0.0
