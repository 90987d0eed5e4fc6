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
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from mcp_providers.plugins.servicenow.backoff import Backoff, LocalBackoff
from mcp_providers.plugins.servicenow.errors import ServiceNowError, UnknownInstance
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import InstanceSettings

if TYPE_CHECKING:  # the instance-only modules are imported with the first instance (issue 43)
    from mcp_providers.credentials import Credential
    from mcp_providers.plugins.servicenow.instance import CredentialSource, InstanceClient
    from mcp_providers.plugins.servicenow.jwt_bearer import JwtBearerUpstream

__all__ = ["InstancePool"]


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
        self.upstreams: dict[str, JwtBearerUpstream] = {}
        if any(i.per_user for i in instances):  # the JWT bearer grant only for a jwt_bearer instance
            from mcp_providers.plugins.servicenow.connect import upstreams

            self.upstreams = upstreams(instances, self.redactor)
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
        from mcp_providers.plugins.servicenow.instance import Caller  # imported with the instance's client

        user = upstream.user_of(request.principal)

        async def credential() -> Credential:
            return await request.credential(upstream)

        async def forget(stale: Credential) -> None:
            await request.forget_credential(upstream, stale)

        return client.acting(Caller(user=user, credential=credential, forget=forget))

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[InstancePool]:
        """Open every instance's client (first entry) and close them all (last exit)."""
        if not self._settings:  # no instance: no client to open, nothing for httpx2 to log
            yield self
            return
        from mcp_providers.plugins._library_logs import library_logs_masked
        from mcp_providers.plugins.servicenow.connect import feed_redactor, open_client

        if self._users == 0:
            for s in self._settings.values():
                feed_redactor(self.redactor, s)
            self._clients = {name: open_client(s, self.redactor, self.backoff, self.upstreams.get(name))
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
