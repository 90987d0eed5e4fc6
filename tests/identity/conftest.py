"""Fixtures: a real authorization server (oidc-provider, npm) on loopback, one or several per test."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from identity_support import IdentityProvider, identity_provider, install_runtime, install_whoami


@pytest.fixture(scope="session")
def oidc_runtime() -> Path:
    """node 22 and oidc-provider installed into ``.cache/`` (once; later sessions reuse them)."""
    started = time.monotonic()
    runtime = install_runtime()
    print(f"identity: oidc-provider runtime ready in {time.monotonic() - started:.1f}s")
    return runtime


@pytest.fixture
def start_identity_provider(oidc_runtime: Path, tmp_path: Path) -> Iterator[Callable[[str], IdentityProvider]]:
    """``start(name) -> IdentityProvider``: another authorization server, stopped after the test.

    Every one has its own issuer and signing key and the same accounts (alice, bob), so two of them
    issue tokens with the same ``sub`` values.
    """
    with contextlib.ExitStack() as stack:

        def start(name: str) -> IdentityProvider:
            return stack.enter_context(identity_provider(oidc_runtime, tmp_path / f"idp-{name}"))

        yield start


@pytest.fixture
def idp(start_identity_provider: Callable[[str], IdentityProvider]) -> IdentityProvider:
    """One authorization server for the test."""
    return start_identity_provider("a")


@pytest.fixture(scope="session")
def whoami_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for a served subprocess that also finds the ``whoami`` plugin (entry point)."""
    site = install_whoami(tmp_path_factory.mktemp("whoami-site"))
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
