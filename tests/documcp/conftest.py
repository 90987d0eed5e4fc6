"""Fixtures for the documentation plugins: the four composed together, and a client on them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from documcp_support import DOCUMCP_PLUGINS
from mcp import Client

from mcp_providers._serve.composition import Composition
from mcp_providers.testing import compose, connect


@pytest.fixture
def composition() -> Composition:
    return compose(DOCUMCP_PLUGINS)


@pytest.fixture(params=["auto", "legacy"])
async def client(request: pytest.FixtureRequest, composition: Composition) -> AsyncIterator[Client]:
    """A client in each protocol era: 2026-07-28 (auto) and the 2025-11-25 handshake (legacy)."""
    async with connect(composition, mode=request.param) as c:
        yield c
