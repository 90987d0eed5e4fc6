"""HTTP access to configured ServiceNow instances: one ``httpx2.AsyncClient`` per instance.

:class:`InstancePool` opens one :class:`InstanceClient` per configured instance when the first
provider's ``lifespan()`` is entered and closes them when the last one leaves. Every call names
its instance explicitly; there is no current or default instance and nothing is switched.

Behaviour shared by every call:

- auth: HTTP Basic, OAuth 2.0 (:class:`~.oauth.OAuthFlow`: token cached until it expires, fetched again
  once when the instance answers 401) or an API key in ``x-sn-apikey``: one service account for
  every caller; or, per caller, ``jwt_bearer`` (:class:`~.jwt_bearer.JwtBearerUpstream`): the request's own
  user token from the credential broker, sent as ``Authorization: Bearer`` on that request only
  (the instance's client carries no credential of its own), forgotten and obtained once more when
  the instance answers 401, and never replaced by a service account;
- 429: the instance's shared :class:`~.backoff.Backoff` is held for ``Retry-After`` seconds (at
  most ``max_retry_after_seconds``), so every request to it waits, then the request is retried, at
  most ``max_retries`` times; when retries run out the error states the wait asked for;
- answers are streamed and refused with ``TooLarge`` (-32004) once over ``max_response_bytes``,
  before the rest is read;
- records come back normalised (:func:`~.schema.normalise`): reference and choice fields as
  ``{"value", "display_value"}``, other fields as plain strings;
- paging follows the offsets asked for (``offset + limit``, or the ``Link`` header's next page
  when the instance sends one), never the rows received: ACLs remove rows *after* the page is cut,
  so a short page is not the last one; rows missing from a page are reported as hidden;
- failures raise :class:`~.errors.ServiceNowError` (an ``UpstreamError``, JSON-RPC -32006) or ``NotFound``
  (404) whose message names the instance, the operation, the status and ServiceNow's
  ``error.message``/``error.detail``; timeouts and unreachable hosts say so. No message, log
  line or result ever carries a password, secret, token or ``Authorization`` header: every
  upstream text passes the pool's :class:`~.redact.Redactor` first (the shared masking rule,
  :class:`~mcp_providers.plugins._masking.Secrets`), before any part of it is cut.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from urllib.parse import urlsplit

import httpx2

from mcp_providers import http as core_http
from mcp_providers.credentials import Credential
from mcp_providers.http import is_loopback_host
from mcp_providers.plugins._library_logs import library_logs_masked
from mcp_providers.plugins.servicenow.auth_settings import ApiKeyAuth, BasicAuth, JwtBearerAuth, read_secret
from mcp_providers.plugins.servicenow.backoff import Backoff, LocalBackoff
from mcp_providers.plugins.servicenow.errors import ServiceNowError, UnknownInstance
from mcp_providers.plugins.servicenow.instance import Caller, CredentialSource, InstanceClient
from mcp_providers.plugins.servicenow.jwt_bearer import JwtBearerUpstream
from mcp_providers.plugins.servicenow.oauth import OAuthFlow
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import InstanceSettings

__all__ = ["InstancePool", "feed_redactor"]


def feed_redactor(redactor: Redactor, settings: InstanceSettings) -> None:
    """Give ``redactor`` every secret ``settings`` names (those set in the environment), derived
    credentials (the Basic credential in base64) and the credential parts of the URL."""
    auth = settings.auth
    redactor.add_url(settings.url)
    if isinstance(auth, BasicAuth):
        password = os.environ.get(auth.password_env, "")
        if password:
            redactor.add_basic(auth.username, password)
    elif isinstance(auth, ApiKeyAuth):
        redactor.add(os.environ.get(auth.api_key_env))
    elif isinstance(auth, JwtBearerAuth):
        secret = os.environ.get(auth.client_secret_env, "")
        key = os.environ.get(auth.private_key_env, "")
        redactor.add(secret, key, key.replace("\\n", "\n"))
        client_id = auth.client_id or os.environ.get(auth.client_id_env or "", "")
        if secret and client_id:
            redactor.add_basic(client_id, secret)
    else:
        secret = os.environ.get(auth.client_secret_env, "")
        redactor.add(secret, auth.password_env and os.environ.get(auth.password_env))
        if secret:
            redactor.add_basic(auth.client_id, secret)


def _open(settings: InstanceSettings, redactor: Redactor, backoff: Backoff,
          upstream: JwtBearerUpstream | None = None) -> InstanceClient:  # fmt: skip
    """Build one instance's client; a missing secret gives a client whose every call says so.

    A ``jwt_bearer`` instance's client carries no credential: ``upstream`` is bound to it for the
    grant, and each request adds its caller's token."""
    auth = settings.auth
    headers = {"Accept": "application/json", "User-Agent": "mcp-providers-servicenow"}
    flow: httpx2.Auth | None = None
    try:
        if isinstance(auth, JwtBearerAuth):
            pass  # the secrets are read by upstream.bind() below
        elif isinstance(auth, BasicAuth):
            flow = httpx2.BasicAuth(auth.username, read_secret(auth.password_env, instance=settings.name,
                                                               setting="auth.password_env"))  # fmt: skip
        elif isinstance(auth, ApiKeyAuth):
            headers["x-sn-apikey"] = read_secret(auth.api_key_env, instance=settings.name, setting="auth.api_key_env")
        else:
            found = {"client_secret": read_secret(auth.client_secret_env, instance=settings.name,
                                                  setting="auth.client_secret_env")}  # fmt: skip
            if auth.password_env is not None:
                found["password"] = read_secret(auth.password_env, instance=settings.name, setting="auth.password_env")
            flow = OAuthFlow(settings.name, auth, found, redactor)
    except ValueError as exc:
        return InstanceClient(settings, None, error=str(exc), redactor=redactor, backoff=backoff)
    # The core's client: inside a resource read it refuses anything but GET/HEAD/OPTIONS.
    http = core_http.client(
        base_url=settings.url,
        auth=flow,
        headers=headers,
        timeout=httpx2.Timeout(settings.timeout_seconds),
        follow_redirects=False,
        trust_env=not is_loopback_host(urlsplit(settings.url).hostname or ""),  # no proxy for loopback
    )
    if isinstance(flow, OAuthFlow):
        flow.bind(http)
    if upstream is not None:
        failure = upstream.bind(http)
        if failure is not None:  # a grant secret is missing or malformed: every call says so
            return InstanceClient(settings, http, error=failure, redactor=redactor, backoff=backoff)
    return InstanceClient(settings, http, redactor=redactor, backoff=backoff)


class InstancePool:
    """The open :class:`InstanceClient` of every configured instance.

    Entered by each provider's ``lifespan()`` through :meth:`opened`; the clients are created on
    the first entry and closed when the last one leaves.
    """

    def __init__(self, instances: Sequence[InstanceSettings], *, backoff: Backoff | None = None) -> None:
        self._settings = {i.name: i for i in instances}
        self.redactor = Redactor()
        """Masks every secret of every configured instance (and each OAuth token issued)."""
        self.backoff: Backoff = backoff or LocalBackoff()
        """The 429 back-off, one entry per instance, shared by all its requests."""
        self._clients: dict[str, InstanceClient] = {}
        self._users = 0
        self.upstreams: dict[str, JwtBearerUpstream] = {
            i.name: JwtBearerUpstream(i, self.redactor) for i in instances if i.per_user
        }
        """Instance name -> the credential broker's upstream, for each ``jwt_bearer`` instance."""

    @property
    def names(self) -> list[str]:
        """Configured instance names, in config order."""
        return list(self._settings)

    def settings(self, name: str) -> InstanceSettings:
        """The settings of instance ``name``.

        :raises UnknownInstance: ``name`` is not configured (the message lists the names that are).
        """
        found = self._settings.get(name)
        if found is None:
            configured = ", ".join(self._settings) or "none"
            raise UnknownInstance(f"unknown instance {name!r}; configured instances: {configured}")
        return found

    def client(self, name: str) -> InstanceClient:
        """The open client of instance ``name``.

        :raises UnknownInstance: ``name`` is not configured.
        :raises ServiceNowError: the pool is not open (no provider lifespan is running).
        """
        self.settings(name)
        client = self._clients.get(name)
        if client is None:
            raise ServiceNowError(
                f"instance {name!r} has no open HTTP client: the provider's lifespan() is not running",
                instance=name,
            )
        return client

    def client_for(self, name: str, request: CredentialSource) -> InstanceClient:
        """The client of instance ``name`` for ``request``: for a ``jwt_bearer`` instance, one whose
        calls carry the request's own user token (from ``request.credential``); else :meth:`client`.

        :raises UnknownInstance: ``name`` is not configured.
        :raises NoVerifiedCaller: a ``jwt_bearer`` instance and a caller it cannot act for; checked
            before anything is sent or obtained.
        :raises ServiceNowError: the pool is not open.
        """
        client = self.client(name)
        upstream = self.upstreams.get(name)
        if upstream is None:
            return client
        user = upstream.user_of(request.principal)

        async def credential() -> Credential:
            return await request.credential(upstream)

        async def forget(stale: Credential) -> None:
            await request.forget_credential(upstream, stale)

        return client.acting(Caller(user=user, credential=credential, forget=forget))

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[InstancePool]:
        """Open every instance's client (first entry) and close them all (last exit)."""
        if self._users == 0:
            for s in self._settings.values():
                feed_redactor(self.redactor, s)
            self._clients = {name: _open(s, self.redactor, self.backoff, self.upstreams.get(name))
                             for name, s in self._settings.items()}  # fmt: skip
        self._users += 1
        try:
            with library_logs_masked(self.redactor.text):  # httpx2 logs URLs, httpcore2 headers
                yield self
        finally:
            self._users -= 1
            if self._users == 0:
                clients, self._clients = self._clients, {}
                for upstream in self.upstreams.values():
                    upstream.bind(None, f"instance {upstream.settings.name!r} is not open")
                for client in clients.values():
                    await client.aclose()
