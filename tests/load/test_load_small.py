"""A small load run in the suite: 1,000 reads from 10 clients over streamable HTTP on loopback.

The full run (20,000 reads, 50 clients) is ``uv run python tests/load/load_run.py``; see its
docstring. Both count every error and every answer that does not match its URI or instance.
"""

from __future__ import annotations

import pytest
from load_run import run_load

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_1000_reads_from_10_clients_have_no_errors_and_no_mixups() -> None:
    report = await run_load(1000, 10, sample_every=250, max_seconds=300)
    assert report.errors == []
    assert report.mismatches == []
    assert report.reads == 1000
    assert report.uris > 20  # documentation resources and incidents of both instances
    assert len(report.rss) >= 4
