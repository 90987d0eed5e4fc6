"""The TLS context the core's HTTP clients share (``mcp_providers.http.tls_context``).

Building httpx2's default context reads the CA bundle (tens of ms of CPU); the core makes one per
process for each ``SSL_CERT_FILE``/``SSL_CERT_DIR`` in force and hands it to every client that
does not bring its own ``verify=``.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import httpx2
import pytest

from mcp_providers import http
from mcp_providers._serve.identity.fetch import client_options

pytestmark = pytest.mark.anyio


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Each context httpx2 builds, by the ``trust_env`` it was built with; the cache starts empty."""
    built: list[bool] = []
    real = httpx2.create_ssl_context

    def counting(*args: object, trust_env: bool = True, **kwargs: object) -> ssl.SSLContext:
        built.append(trust_env)
        return real(*args, trust_env=trust_env, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx2, "create_ssl_context", counting)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    http._tls_context.cache_clear()
    yield built
    http._tls_context.cache_clear()


async def test_clients_without_verify_share_one_context(made: list[bool]) -> None:
    async with http.client() as one, http.client(base_url="https://example.test") as two:
        assert one is not two
    assert made == [True]  # built once, for both
    assert http.tls_context() is http.tls_context()
    assert client_options(5)["verify"] is http.tls_context()  # the identity fetches use it too
    assert made == [True]


async def test_a_client_that_brings_verify_keeps_it(made: list[bool]) -> None:
    async with http.client(verify=False):
        pass
    assert made == []


def test_trust_env_off_and_another_ca_bundle_get_contexts_of_their_own(
    made: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    default = http.tls_context()
    assert http.tls_context(trust_env=False) is not default
    assert http.tls_context(trust_env=False) is http.tls_context(trust_env=False)
    monkeypatch.setenv("SSL_CERT_FILE", ssl.get_default_verify_paths().openssl_cafile)
    assert http.tls_context() is not default
    assert made == [True, False, True]
    assert http.tls_context().verify_mode == ssl.CERT_REQUIRED and http.tls_context().check_hostname
