"""Fixtures for the ServiceNow plugin: two emulated instances with different credentials.

``dev`` uses Basic auth, ``prod`` uses OAuth client credentials. Secrets reach the plugin only
through environment variables (set here with monkeypatch) and are listed in
``servicenow_support.SECRETS`` so tests can scan every output for them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping

import pytest
from cluster_support import RedisServer
from mcp import Client
from servicenow_support import (
    DEV_PASSWORD,
    DEV_USER,
    ENV,
    PROD_CLIENT,
    PROD_SECRET,
    compose_servicenow,
    dev_instance,
    prod_instance,
)

from mcp_providers._serve.composition import Composition
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import connect


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> Mapping[str, str]:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    return ENV


@pytest.fixture
def dev_emulator() -> Iterator[Emulator]:
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}) as emulator:
        yield emulator


@pytest.fixture
def prod_emulator() -> Iterator[Emulator]:
    with Emulator("prod", oauth_clients={PROD_CLIENT: PROD_SECRET}) as emulator:
        yield emulator


@pytest.fixture
def composition(dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]) -> Composition:
    return compose_servicenow(dev_instance(dev_emulator), prod_instance(prod_emulator))


@pytest.fixture
async def client(composition: Composition) -> AsyncIterator[Client]:
    async with connect(composition) as connected:
        yield connected


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A real ``redis-server`` on a free loopback port, for this test alone."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()
