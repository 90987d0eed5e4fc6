"""One page of a Table API query, and where the next one starts.

Paging follows the offsets asked for (``offset + limit``, or the ``Link`` header's next page when
the instance sends one), never the rows received: ACLs remove rows *after* the page is cut, so a
short page is not the last one; rows missing from a page are reported as hidden.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["Page", "page_of"]


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a table query.

    :param records: the records, normalised (:func:`~.schema.normalise`).
    :param total: ``X-Total-Count``: records matching the query across all pages, hidden ones
        included (``None`` if the instance did not send it).
    :param offset: ``sysparm_offset`` of this page.
    :param limit: ``sysparm_limit`` asked for.
    :param next_offset: ``sysparm_offset`` of the next page (the ``Link`` header's ``rel="next"``
        if sent, else ``offset + limit`` while that is below ``total``), ``None`` on the last page.
    :param hidden: rows of this page's range the instance did not return (ACLs hide rows after the
        page is cut); ``0`` when that cannot be known (no total and no next page).
    """

    records: list[dict[str, Any]]
    total: int | None
    offset: int
    limit: int
    next_offset: int | None = None
    hidden: int = 0

    @property
    def has_more(self) -> bool:
        """Whether records exist past this page."""
        return self.next_offset is not None


_NEXT_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?', re.IGNORECASE)


def next_from_link(header: str | None) -> int | None:
    """``sysparm_offset`` of the ``rel="next"`` URL in a ``Link`` header, if any."""
    match = _NEXT_LINK.search(header or "")
    if match is None:
        return None
    found = parse_qs(urlsplit(match.group(1)).query).get("sysparm_offset", [""])[0]
    return int(found) if found.isdigit() else None


def page_of(records: list[dict[str, Any]], *, total: int | None, offset: int, limit: int, link: str | None) -> Page:
    """Paging by the offsets asked for: the next page starts at ``offset + limit`` (or the Link
    header's next offset), whatever number of rows this one held."""
    next_offset = next_from_link(link)
    if next_offset is None and link is None and total is not None and offset + limit < total:
        next_offset = offset + limit
    if next_offset is None and link is None and total is None and len(records) >= limit > 0:
        next_offset = offset + limit  # nothing better to go on: a full page may have a successor
    if next_offset is not None:
        expected = next_offset - offset
    elif total is not None:
        expected = max(0, min(limit, total - offset))
    else:
        expected = len(records)
    return Page(records=records, total=total, offset=offset, limit=limit, next_offset=next_offset,
                hidden=max(0, expected - len(records)))  # fmt: skip
