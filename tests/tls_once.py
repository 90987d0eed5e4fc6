"""One default TLS context per test process, as the core keeps one per server process.

Every ``httpx2`` client made without ``verify=`` builds httpx2's default TLS context
(``httpcore2.default_ssl_context``), which reads and parses the system's CA bundle: about 40 ms of
CPU on the project's 2-CPU machine (0.4 s of wall time in a loaded run), for clients that only
ever speak plain HTTP to 127.0.0.1. The tests make thousands: each SDK ``Client(url)`` makes one,
and so do the tests' own ``httpx2.get``/``AsyncClient`` calls (110 in ``test_base_exceptions``,
``test_http_sessions`` and ``test_identity_http`` alone: 4.1 s of CPU). The core's own clients
already share one (:func:`mcp_providers.http.tls_context`); here the test process does the same
for everyone else.

The context is made once per value of what it reads (``_trust_env``, ``SSL_CERT_FILE``,
``SSL_CERT_DIR``), so a test that sets those variables still gets a context of its own. It is the
same context httpx2 would build; nothing in the suite changes a default context after it is made
(a client's certificate or CA comes in a context of its own, ``verify=``). Processes the tests
start are left alone: their TLS set-up is what they are run for.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Callable


def use_one_tls_context() -> None:
    """Make ``httpcore2.default_ssl_context`` (what httpx2 builds by default) return one context
    per value of its inputs in this process. Idempotent."""
    import httpcore2

    made: Callable[..., ssl.SSLContext] = httpcore2.default_ssl_context
    if getattr(made, "made_once", False):
        return

    @functools.lru_cache(maxsize=8)
    def context(trust_env: bool, cafile: str | None, capath: str | None) -> ssl.SSLContext:
        return made(_trust_env=trust_env)  # reads the variables the key holds

    def default_ssl_context(*, _trust_env: bool = True) -> ssl.SSLContext:
        return context(_trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))

    default_ssl_context.made_once = True  # type: ignore[attr-defined]
    httpcore2.default_ssl_context = default_ssl_context
