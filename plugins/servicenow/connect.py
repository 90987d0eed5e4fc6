"""Opening configured instances: each instance's HTTP client and the secrets its pool masks.

Used by :class:`~mcp_providers.plugins.servicenow.client.InstancePool` once it has an instance:
with none configured, ``servicenow://instances`` and ``servicenow://tables`` are served without
importing this module, the instance client, the OAuth flow or the JWT bearer grant (issue 43).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx2

from mcp_providers import http as core_http
from mcp_providers.http import is_loopback_host
from mcp_providers.plugins.servicenow.auth_settings import ApiKeyAuth, BasicAuth, JwtBearerAuth, read_secret
from mcp_providers.plugins.servicenow.backoff import Backoff
from mcp_providers.plugins.servicenow.instance import InstanceClient
from mcp_providers.plugins.servicenow.jwt_bearer import JwtBearerUpstream
from mcp_providers.plugins.servicenow.oauth import OAuthFlow
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import InstanceSettings

__all__ = ["feed_redactor", "open_client", "upstreams"]


def upstreams(instances: Sequence[InstanceSettings], redactor: Redactor) -> dict[str, JwtBearerUpstream]:
    """Instance name -> the credential broker's upstream, for each ``jwt_bearer`` instance."""
    return {i.name: JwtBearerUpstream(i, redactor) for i in instances if i.per_user}


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


def open_client(settings: InstanceSettings, redactor: Redactor, backoff: Backoff,
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
