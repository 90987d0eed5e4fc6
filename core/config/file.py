"""The operator's config file (TOML) and its defaults.

Shape::

    required_plugins = ["mcp-providers-weather>=0.3"]   # serve and check refuse without these distributions
    allow = ["ssg_catalog", "servicenow"]   # only these plugins (default: every installed one)
    deny = ["workflows"]                    # never these
    set = "docs"                            # the plugin set used when --set is not given

    [sets.docs]                             # a named plugin set, chosen with --set docs
    plugins = ["ssg_catalog", "config_templates", "workflows"]
    description = "DocuMCP's documentation resources"

    [server]
    icons = [{ src = "https://example.com/icon-48.png", mime_type = "image/png", sizes = ["48x48"] }]
    page_size = 100              # items per list page
    read_timeout = 30.0          # seconds a provider may take for one read or call
    max_read_bytes = 4194304     # read budget in bytes, overridable per resource
    max_result_bytes = 4194304   # largest tool result in bytes; bigger ones are refused
    side_effects = { servicenow = "warn" }   # per plugin: "enforce" (default) or "warn"
    embedded_side_effects = "scoped"         # mount()/attach(): "scoped" (patch nothing) or "enforce"

    [server.limits]              # requests per subject per window; no table: no limits
    window_seconds = 60
    reads = 600                  # resources/read, prompts/get, completion/complete
    calls = 120                  # tools/call
    lists = 600                  # */list, resources/subscribe, subscriptions/listen
    anonymous = 60               # one bucket shared by every anonymous caller, all methods

    [server.credentials]         # upstream credentials obtained for callers (mcp_providers.credentials)
    margin_seconds = 60          # handed out until this long before they expire
    key_env = "MCP_PROVIDERS_CREDENTIALS_KEY"   # with [cluster]: the deployment key encrypting them in Redis

    [plugins.servicenow]         # validated by that plugin's settings_model()
    ...

No file means every installed plugin with its defaults (the embedded default). The path comes from
``--config`` or the ``MCP_PROVIDERS_CONFIG`` environment variable.

Plugin selection (applied by discovery, each plugin's reason shown by ``mcp-providers plugins``):
the chosen set (``--set`` or ``set``) and ``allow`` each keep only the plugins they name;
``$MCP_PROVIDERS_PLUGINS`` (comma list) replaces both; ``deny`` and ``$MCP_PROVIDERS_DISABLE``
(comma list) always win. The two variables are read by :func:`load_config`, so a
:class:`Config` built in code is not affected by the environment.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import re
import stat
import tomllib
import types
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mcp_providers.errors import ConfigError
from mcp_providers.identity import STATIC_ISSUER, TRUSTED_ISSUERS
from mcp_providers.models import Icon

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "CONFIG_ENV",
    "CREDENTIALS_KEY_ENV",
    "DISABLE_ENV",
    "KEY_PREFIX_REQUIRED",
    "PLUGINS_ENV",
    "SYSLOG_FACILITIES",
    "AdminSettings",
    "AuditSettings",
    "AuditSink",
    "AuthConfig",
    "AuthMode",
    "ClusterSettings",
    "Config",
    "CredentialsSettings",
    "FileSinkSettings",
    "LimitsSettings",
    "OtlpLogsSinkSettings",
    "PluginSet",
    "ServerSettings",
    "SyslogFacility",
    "SyslogSinkSettings",
    "TasksSettings",
    "TokenConfig",
    "WebhookSinkSettings",
    "load_config",
]

CONFIG_ENV = "MCP_PROVIDERS_CONFIG"
PLUGINS_ENV = "MCP_PROVIDERS_PLUGINS"
"""Comma-separated entry-point names: serve only these (replaces the set and ``allow``)."""
DISABLE_ENV = "MCP_PROVIDERS_DISABLE"
"""Comma-separated entry-point names: never serve these (like ``deny``)."""
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class PluginSet(BaseModel):
    """One ``[sets.<name>]`` table: a named selection of plugins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plugins: tuple[str, ...]
    """Entry-point names of the plugins in this set."""
    description: str | None = None


class TokenConfig(BaseModel):
    """One accepted bearer token, read from an environment variable (never written in the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str = Field(min_length=1)
    """Who presents this token (the ``subject`` the authorize hook sees)."""
    token_env: str = Field(pattern=_ENV_NAME)
    """Name of the environment variable holding the token."""
    scopes: tuple[str, ...] = ()
    """OAuth scopes this token carries (checked against ``required_scopes``)."""
    groups: tuple[str, ...] = ()
    """Group names of this subject (``Principal.groups``, matched by policy rules)."""


AuthMode = Literal["static", "jwt", "introspection"]
ASYMMETRIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""The JWS algorithms ``mode = "jwt"`` accepts (RFC 7518 §3.1, RFC 8037): signatures made with a
private key and checked with a public one. ``none`` and the HMAC ones (``HS*``) are never accepted:
an HMAC key would be the issuer's public key, which anyone can fetch."""

_JWT_ONLY = ("jwks_url", "algorithms", "leeway_seconds", "jwks_min_refresh_seconds", "at_jwt_issuers")
_INTROSPECTION_ONLY = (
    "introspection_endpoint",
    "client_id_env",
    "client_secret_env",
    "introspection_cache_seconds",
    "introspection_negative_cache_seconds",
    "introspection_max_concurrent",
    "introspection_per_client_per_minute",
)
_IDP_ONLY = ("issuer", "audience", "subject_claim", "groups_claim", "claims", "http_timeout_seconds")


class AuthConfig(BaseModel):
    """The ``[server.auth]`` table: who may call over streamable HTTP, and how that is checked.

    ``mode = "static"`` (the default) accepts the bearer tokens in ``tokens``; ``"jwt"`` checks JWT
    access tokens against the issuer's published keys (JWKS); ``"introspection"`` asks the issuer
    about each token (RFC 7662). Either of the last two needs ``issuer``. Shape and defaults:
    ``docs/security.md`` ("Identity").
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: AuthMode = "static"
    """How bearer tokens are checked."""
    resource_url: str | None = None
    """The canonical URL clients use for this server (RFC 9728 ``resource``; RFC 8707 resource
    indicator), e.g. ``https://mcp.example.com/mcp``. Default ``http://<bind host:port>/mcp``; needed
    behind a proxy and when binding a wildcard address. Kept exactly as written (the metadata's
    ``resource`` must be the identifier itself, RFC 9728 §3.3): an http(s) URL without a fragment."""
    required_scopes: tuple[str, ...] = ()
    """Scopes every request needs; a token without one of them gets 403 ``insufficient_scope``."""
    issuer_url: AnyHttpUrl | None = None
    """Older spelling kept for existing static configs: an authorization server to advertise."""
    tokens: tuple[TokenConfig, ...] = ()
    """``mode = "static"``: the accepted tokens (at least one)."""
    issuer: tuple[str, ...] = ()
    """``jwt``/``introspection``: the issuer URL (a string), or a list of issuers trusted side by side;
    compared with a token's ``iss`` exactly."""
    audience: str | None = None
    """The ``aud`` a token must contain; default :attr:`resource_url` (the spec's audience binding)."""
    subject_claim: str = Field(default="sub", min_length=1)
    """Claim naming the caller."""
    groups_claim: str | None = Field(default=None, min_length=1)
    """Claim holding the caller's groups: a list of strings, or one space-separated string."""
    claims: tuple[str, ...] = ()
    """Claims copied into ``Principal.claims`` (e.g. ``email``); no others are kept."""
    http_timeout_seconds: float = Field(default=5.0, gt=0, le=60)
    """Longest wait for one fetch from the identity provider (discovery, JWKS, introspection)."""
    jwks_url: AnyHttpUrl | None = None
    """``jwt``, one issuer only: where its keys are; default the discovered ``jwks_uri``."""
    algorithms: tuple[str, ...] = ASYMMETRIC_ALGORITHMS
    """``jwt``: the accepted JWS algorithms, a subset of :data:`ASYMMETRIC_ALGORITHMS`."""
    leeway_seconds: float = Field(default=30.0, ge=0, le=300)
    """``jwt``: clock skew allowed on ``exp``, ``nbf`` and ``iat``."""
    jwks_min_refresh_seconds: float = Field(default=60.0, gt=0, le=86_400)
    """``jwt``: an unknown ``kid`` refetches the JWKS at most once per this many seconds."""
    at_jwt_issuers: tuple[str, ...] = ()
    """``jwt``: issuers (of ``issuer``) whose access tokens all carry the JOSE header ``typ: at+jwt``
    (RFC 9068 §2.1); a token of theirs with any other ``typ`` is refused (RFC 9068 §4). Tokens of the
    other issuers may carry no ``typ`` or ``JWT`` too; any other type (``logout+jwt``...), and a
    payload that is evidently no access token (``nonce``, ``events``, a ``token_use`` or ``typ`` claim
    naming another kind), is refused from every issuer."""
    introspection_endpoint: AnyHttpUrl | None = None
    """``introspection``: the RFC 7662 endpoint; default the discovered ``introspection_endpoint``."""
    client_id_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """``introspection``: environment variable holding this server's client id."""
    client_secret_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """``introspection``: environment variable holding this server's client secret."""
    introspection_cache_seconds: float = Field(default=300.0, ge=0, le=86_400)
    """``introspection``: how long a positive answer is reused (never past the token's ``exp``)."""
    introspection_negative_cache_seconds: float = Field(default=60.0, ge=0, le=3600)
    """``introspection``: how long a refused token is refused from memory, without asking again."""
    introspection_max_concurrent: int = Field(default=8, ge=1, le=1000)
    """``introspection``: questions to the identity provider in flight at once; one that waits
    ``http_timeout_seconds`` for a slot is answered 503 with ``Retry-After``."""
    introspection_per_client_per_minute: int = Field(default=60, ge=0, le=1_000_000)
    """``introspection``: questions a minute about the unknown tokens of one client address (the
    peer, or the ``X-Forwarded-For`` of a ``trusted_proxies`` peer); over it 429 with
    ``Retry-After``. ``0``: no budget (only behind a proxy that limits its clients itself)."""

    @field_validator("resource_url")
    @classmethod
    def _resource_identifier(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            url = AnyHttpUrl(value)
        except ValueError:
            example = "e.g. https://mcp.example.com/mcp"
            raise ValueError(f"resource_url {value!r} is not an http(s) URL; {example}") from None
        if url.fragment is not None or "#" in value:
            raise ValueError(f"resource_url {value!r} has a fragment; a resource identifier has none (RFC 8707 §2)")
        return value

    @field_validator("issuer", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("issuer")
    @classmethod
    def _issuer_urls(cls, issuers: tuple[str, ...]) -> tuple[str, ...]:
        for issuer in issuers:
            problem = _issuer_problem(issuer)
            if problem:
                raise ValueError(problem)
        if len(set(issuers)) != len(issuers):
            raise ValueError("each issuer once; a repeated issuer adds nothing")
        return issuers

    @field_validator("algorithms")
    @classmethod
    def _asymmetric(cls, algorithms: tuple[str, ...]) -> tuple[str, ...]:
        wrong = [a for a in algorithms if a not in ASYMMETRIC_ALGORITHMS]
        if wrong:
            why = "; none and HS* are never accepted (an HMAC secret would be the issuer's public key)"
            raise ValueError(f"{', '.join(wrong)} not allowed: use some of {', '.join(ASYMMETRIC_ALGORITHMS)}{why}")
        if not algorithms:
            raise ValueError(f"at least one algorithm, e.g. RS256 (allowed: {', '.join(ASYMMETRIC_ALGORITHMS)})")
        return algorithms

    @field_validator("tokens")
    @classmethod
    def _distinct(cls, tokens: tuple[TokenConfig, ...]) -> tuple[TokenConfig, ...]:
        for attribute in ("subject", "token_env"):
            values = [getattr(t, attribute) for t in tokens]
            repeated = sorted({v for v in values if values.count(v) > 1})
            if repeated:
                raise ValueError(f"each token needs its own {attribute}; repeated: {', '.join(repeated)}")
        return tokens

    @model_validator(mode="after")
    def _fits_mode(self) -> AuthConfig:
        problem = _mode_problem(self)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def issuers(self) -> tuple[str, ...]:
        """The trusted issuers (empty in static mode)."""
        return self.issuer

    @property
    def principal_issuers(self) -> tuple[str, ...]:
        """The issuers an accepted token's principal may carry: ``issuer`` for ``jwt`` and
        ``introspection``, ``("static",)`` (:data:`~mcp_providers.identity.STATIC_ISSUER`) for
        static tokens."""
        return self.issuer if self.mode != "static" else (STATIC_ISSUER,)


def _issuer_problem(issuer: str) -> str | None:
    """Why ``issuer`` cannot be an issuer identifier (RFC 8414 §2: https, no query or fragment), else None."""
    try:
        url = AnyHttpUrl(issuer)
    except ValueError:
        return f"issuer {issuer!r} is not a URL; write the identity provider's issuer, e.g. https://idp.example.com"
    if url.query or url.fragment:
        return f"issuer {issuer!r} has a query or fragment; an issuer is https://host[/path] only (RFC 8414 §2)"
    if url.scheme != "https" and url.host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
        return f"issuer {issuer!r} must use https (http only on loopback, for tests)"
    return None


def _listed(names: list[str]) -> str:
    return f"{names[0]} is only" if len(names) == 1 else f"{', '.join(names)} are only"


def _mode_problem(config: AuthConfig) -> str | None:
    """What does not fit ``config.mode`` (with what would), else None."""
    given = config.model_fields_set
    if config.mode == "static":
        if not config.tokens:
            if config.issuer:
                return 'issuer is given but mode is "static": add mode = "jwt" (or "introspection")'
            return 'mode "static" needs tokens = [{subject = "...", token_env = "..."}], or mode = "jwt" with an issuer'
        stray = [name for name in (*_IDP_ONLY, *_JWT_ONLY, *_INTROSPECTION_ONLY) if name in given]
        return f'{_listed(stray)} for mode "jwt" or "introspection", not "static"' if stray else None
    if config.tokens:
        return f'tokens only apply to mode "static", not "{config.mode}"; remove them or set mode = "static"'
    if not config.issuer:
        return f'mode "{config.mode}" needs issuer = "https://<your identity provider>" (its issuer URL)'
    other = _INTROSPECTION_ONLY if config.mode == "jwt" else _JWT_ONLY
    stray = [name for name in other if name in given]
    if stray:
        wanted = "introspection" if config.mode == "jwt" else "jwt"
        return f'{_listed(stray)} for mode "{wanted}", not "{config.mode}"'
    stranger = [i for i in config.at_jwt_issuers if i not in config.issuer]
    if stranger:
        named = ", ".join(map(repr, stranger))
        return f"at_jwt_issuers names {named}, which issuer does not list; name trusted issuers only"
    if config.jwks_url is not None and len(config.issuer) > 1:
        return "jwks_url names one issuer's keys but several issuers are given; drop jwks_url (each is discovered)"
    if config.mode == "introspection" and len(config.issuer) > 1:
        return 'mode "introspection" asks one issuer; name one (an opaque token does not say which issuer made it)'
    if config.mode == "introspection" and not (config.client_id_env and config.client_secret_env):
        return (
            'mode "introspection" needs client_id_env and client_secret_env: the environment variables '
            "holding this server's client credentials at the identity provider"
        )
    return None


class LimitsSettings(BaseModel):
    """The ``[server.limits]`` table: request rates per subject (keyed by ``Principal.key``, the
    issuer and subject, never a client address), counted over a moving window of ``window_seconds``.

    Each authenticated subject has one budget per method class; every anonymous caller shares the
    one ``anonymous`` budget, for all methods together. Counted in memory, or in Redis under the
    cluster ``key_prefix`` with ``[cluster]``, so replicas share one count. A refused request gets
    JSON-RPC error -32009 with ``data.retryAfter`` (seconds), and over HTTP a ``Retry-After`` header.
    Without the table nothing is limited.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_seconds: int = Field(default=60, ge=1, le=86_400, strict=True)
    """Length of the moving window, in whole seconds (1 to 86400)."""
    reads: int = Field(default=600, ge=1, le=10_000_000, strict=True)
    """``resources/read``, ``prompts/get``, ``completion/complete``, ``tasks/get`` and ``tasks/update``
    requests per subject per window."""
    calls: int = Field(default=120, ge=1, le=10_000_000, strict=True)
    """``tools/call`` and extension method requests per subject per window."""
    lists: int = Field(default=600, ge=1, le=10_000_000, strict=True)
    """``*/list``, ``resources/subscribe`` and ``subscriptions/listen`` requests per subject per window."""
    anonymous: int = Field(default=60, ge=1, le=10_000_000, strict=True)
    """Requests per window of any method, shared by every anonymous caller together; at most the
    smallest of ``reads``, ``calls`` and ``lists`` (it is the stricter bucket)."""
    sessions: int = Field(default=100, ge=1, le=10_000, strict=True)
    """2025-era HTTP sessions one subject may hold open at once (anonymous callers share one such
    count). An authenticated subject is held to the default even without the table
    (``transport/sessions.py``)."""
    listen_streams: int = Field(default=32, ge=1, le=100_000, strict=True)
    """2026-07-28 ``subscriptions/listen`` streams one subject may hold open at once (anonymous
    callers share one such count). An authenticated subject is held to the default even without
    the table (``methods/subscriptions.py``)."""
    sessions_opened: int = Field(default=30, ge=1, le=10_000_000, strict=True)
    """2025-era HTTP sessions one subject may open (``initialize``) per window; anonymous callers
    share one such count."""

    @model_validator(mode="after")
    def _anonymous_is_stricter(self) -> LimitsSettings:
        smallest = min(("reads", self.reads), ("calls", self.calls), ("lists", self.lists), key=lambda p: p[1])
        if self.anonymous > smallest[1]:
            raise ValueError(
                f"anonymous ({self.anonymous}) is more than {smallest[0]} ({smallest[1]}); the bucket every "
                f"anonymous caller shares must be the stricter one: set anonymous to {smallest[1]} or less"
            )
        return self


CREDENTIALS_KEY_ENV = "MCP_PROVIDERS_CREDENTIALS_KEY"
"""The default environment variable holding the deployment key of the shared credential cache."""


class CredentialsSettings(BaseModel):
    """The ``[server.credentials]`` table: the broker of upstream credentials providers obtain on a
    caller's behalf (:mod:`mcp_providers.credentials`).

    Without ``[cluster]`` they are cached in the process and nothing here is required. With
    ``[cluster]`` they are cached in Redis, encrypted (AES-256-GCM) with the key in the environment
    variable ``key_env``: with this table present that key must be set and valid or ``serve``
    refuses to start; without the table a valid key in ``$MCP_PROVIDERS_CREDENTIALS_KEY`` is used,
    and with none a provider asking for a credential gets an error (never a plaintext cache).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    margin_seconds: float = Field(default=60.0, ge=0, le=86_400)
    """A cached credential is handed out until this many seconds before it expires."""
    key_env: str = Field(default=CREDENTIALS_KEY_ENV, pattern=_ENV_NAME)
    """Environment variable holding the deployment key under ``[cluster]``: 32 random bytes in
    base64, the same on every replica (``docs/security.md`` says how to make one)."""
    lock_seconds: float = Field(default=30.0, gt=0, le=600)
    """Under ``[cluster]``: longest one replica's obtain holds the others back (its lease's TTL),
    should it die while obtaining."""


SYSLOG_FACILITIES = {
    "kern": 0, "user": 1, "mail": 2, "daemon": 3, "auth": 4, "syslog": 5, "lpr": 6, "news": 7,
    "uucp": 8, "cron": 9, "authpriv": 10, "ftp": 11, "ntp": 12, "audit": 13, "alert": 14, "clock": 15,
    "local0": 16, "local1": 17, "local2": 18, "local3": 19, "local4": 20, "local5": 21, "local6": 22, "local7": 23,
}  # fmt: skip
"""Syslog facility names and their codes (RFC 5424 section 6.2.1, table 1; ``audit`` is "log audit")."""

SyslogFacility = Literal[
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp", "ntp",
    "audit", "alert", "clock", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
]  # fmt: skip


class _Shipped(BaseModel):
    """What every sink fed from the in-memory queue shares: its bound and its retry back-off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queue_size: int = Field(default=10_000, ge=1, le=1_000_000)
    """Audit lines held in memory while the sink is slow or down; a line that finds the queue full
    is dropped and counted (``mcp_providers_audit_dropped_total{sink}``)."""
    retries: int = Field(default=5, ge=0, le=100)
    """Attempts after the first before a line (or webhook batch) may be given up, dropped and
    counted: it is kept, and tried again, for as long as the queue has room."""
    retry_seconds: float = Field(default=0.5, gt=0, le=3600)
    """Back-off before the first retry, in seconds; doubled on each further retry."""
    max_retry_seconds: float = Field(default=30.0, gt=0, le=3600)
    """Longest back-off between two attempts, in seconds."""


class FileSinkSettings(BaseModel):
    """A JSON-lines file, written as the request ends (what ``[server] audit_log`` is)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["file"]
    name: str = Field(default="file", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """The sink's name in the drop metric and the log (unique among the sinks)."""
    path: Path
    """The file; appended to, created with its folder if missing."""

    @field_validator("path")
    @classmethod
    def _a_file(cls, value: Path) -> Path:
        if value.is_dir():
            raise ValueError(f"{value} is a directory; name a file such as {value / 'audit.jsonl'}")
        return value


class SyslogSinkSettings(_Shipped):
    """Syslog: one RFC 5424 message per audit line, its MSG the line's JSON.

    ``transport``: ``udp`` (one datagram each), ``tcp`` (octet-counting framing, RFC 6587 section
    3.4.1) or ``unix`` (datagrams to the socket ``socket``, e.g. ``/dev/log``).
    """

    type: Literal["syslog"]
    name: str = Field(default="syslog", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """The sink's name in the drop metric and the log (unique among the sinks)."""
    transport: Literal["udp", "tcp", "unix"] = "udp"
    host: str = "127.0.0.1"
    """The syslog server's host (``udp``, ``tcp``)."""
    port: int = Field(default=514, ge=1, le=65_535)
    """The syslog server's port (``udp``, ``tcp``)."""
    socket: Path | None = None
    """The Unix datagram socket (``unix``; required there)."""
    facility: SyslogFacility = "auth"
    """The facility of every message (RFC 5424 names: ``auth``, ``authpriv``, ``audit``, ``local0``...)."""
    app_name: str = Field(default="mcp-providers", pattern=r"^[!-~]{1,48}$")
    """RFC 5424 APP-NAME: 1 to 48 printable ASCII characters, no spaces."""

    @model_validator(mode="after")
    def _socket_for_unix(self) -> SyslogSinkSettings:
        if self.transport == "unix" and self.socket is None:
            raise ValueError('transport "unix" needs socket, the path of the syslog socket, e.g. socket = "/dev/log"')
        return self


class WebhookSinkSettings(_Shipped):
    """An HTTP webhook: batches of audit lines POSTed as a JSON array.

    Each batch has an ``Idempotency-Key`` header (unique per batch, the same on its retries) and
    ``X-Audit-Sequence`` (1, 2, ... per sink and process); a batch is resent only after an attempt
    that got no 2xx answer.
    """

    type: Literal["webhook"]
    name: str = Field(default="webhook", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """The sink's name in the drop metric and the log (unique among the sinks)."""
    url: AnyHttpUrl
    """Where batches are POSTed: ``https://``, or ``http://`` on loopback; no credentials in it."""
    token_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """Environment variable holding a bearer token sent as ``Authorization: Bearer ...``."""
    batch_size: int = Field(default=100, ge=1, le=10_000)
    """Most lines in one batch; a full batch is sent at once."""
    batch_seconds: float = Field(default=1.0, gt=0, le=3600)
    """Longest a line waits for its batch to fill, in seconds."""
    timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    """Longest one POST may take, in seconds (then it counts as failed and is retried)."""

    @field_validator("url")
    @classmethod
    def _safe_url(cls, url: AnyHttpUrl) -> AnyHttpUrl:
        if url.username or url.password:
            raise ValueError(
                "the sink's URL carries credentials; put the token in an environment variable named by token_env"
            )
        if url.scheme != "https" and not _loopback_host(url.host or ""):
            raise ValueError(
                f"audit lines go over https:// only (http:// is allowed on loopback alone); use https://{url.host}/..."
            )
        return url


def _loopback_host(host: str) -> bool:
    """``localhost``, or an IP address in 127.0.0.0/8 or ``::1`` (a name such as ``127.example`` is not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class OtlpLogsSinkSettings(WebhookSinkSettings):
    """An OpenTelemetry logs pipeline: batches POSTed to an OTLP/HTTP logs endpoint as JSON
    (``ExportLogsServiceRequest``, OTLP specification 1.x, "OTLP/HTTP"), one log record per line
    (its body the line's JSON, its severity from the decision). Retried with back-off on the
    answers OTLP calls retryable (429, 502, 503, 504) and on network errors; any other non-2xx
    answer drops the batch (counted)."""

    type: Literal["otlp"]  # type: ignore[assignment]
    name: str = Field(default="otlp", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    url: AnyHttpUrl
    """The logs endpoint, e.g. ``https://collector.example:4318/v1/logs`` (``http://`` on loopback)."""
    service_name: str = Field(default="mcp-providers", min_length=1, max_length=200)
    """The ``service.name`` resource attribute of every record."""


AuditSink = Annotated[
    FileSinkSettings | SyslogSinkSettings | WebhookSinkSettings | OtlpLogsSinkSettings, Field(discriminator="type")
]


class AuditSettings(BaseModel):
    """The ``[server.audit]`` table: where the audit lines go, one ``[[server.audit.sinks]]`` each.

    ::

        [server.audit]
        drop_log_seconds = 30
        [[server.audit.sinks]]
        type = "syslog"
        transport = "tcp"
        host = "logs.internal"
        port = 6514
        [[server.audit.sinks]]
        type = "webhook"
        url = "https://siem.example/audit"
        token_env = "AUDIT_WEBHOOK_TOKEN"

    Syslog and webhook sinks are fed from a bounded in-memory queue each and drained in the
    background: one that is slow or down never blocks or fails a request; what it drops is counted.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    sinks: list[AuditSink] = Field(min_length=1)
    """The sinks; every line goes to each."""
    drop_log_seconds: float = Field(default=30.0, gt=0, le=86_400)
    """A sink that drops lines logs a warning at most once per this many seconds, with the count."""

    @model_validator(mode="after")
    def _names_unique(self) -> AuditSettings:
        names = [sink.name for sink in self.sinks]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f'two sinks are named {twice[0]!r}; give each its own name, e.g. name = "{twice[0]}2"')
        return self


class AdminSettings(BaseModel):
    """``[server.admin]``: who may reload the configuration over HTTP (``POST /admin/reload``
    beside ``/readyz``, never on the MCP path; ``mcp-providers reload --url``). Without this table
    that route answers 404; ``SIGHUP`` reloads whatever is configured here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """Environment variable holding a bearer token that may reload (at least 32 characters)."""
    subjects: tuple[str, ...] = ()
    """Subjects of principals that may reload, with a bearer token ``[server.auth]`` accepts (its
    issuers, audience and scopes apply as on the MCP path)."""
    issuers: tuple[str, ...] = ()
    """The issuers whose ``subjects`` may reload (default: any ``[server.auth]`` trusts); required
    when it trusts more than one, since a subject is unique only within its issuer."""

    @model_validator(mode="after")
    def _someone(self) -> AdminSettings:
        if self.token_env is None and not self.subjects:
            raise ValueError(
                "[server.admin] names no one who may reload: set token_env (a variable holding a token) "
                'or subjects (e.g. subjects = ["ops-admin"], principals [server.auth] accepts)'
            )
        return self


class TasksSettings(BaseModel):
    """``[server.tasks]``: tool calls run as tasks (the ``io.modelcontextprotocol/tasks`` extension,
    SEP-2663) for tools declared ``task_support = "optional"`` or ``"required"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttl_seconds: float = Field(default=3600.0, ge=1, le=7 * 86_400)
    """Seconds a task is kept: from its start while it runs, from its end once it has a result
    (a client polling later gets "task not found")."""
    poll_interval_ms: int = Field(default=1000, ge=50, le=3_600_000)
    """The ``pollIntervalMs`` suggested to clients."""
    max_running_per_subject: int = Field(default=16, ge=1, le=10_000)
    """Tasks one caller (issuer and subject) may have running on one replica; the next call is
    refused with -32009 until one ends."""
    max_ended_bytes_per_subject: int = Field(default=32 * 2**20, ge=1024, le=2**40)
    """Bytes (the record's JSON: result or error included) one caller's ended tasks may hold in the
    process's memory until their ``ttl_seconds`` is up; past it, that caller's oldest ended tasks are
    dropped (counted in ``mcp_providers_tasks_evicted``; ``tasks/get`` then says so to their owner).
    A result bigger than this alone is dropped as it ends. Without ``[cluster]`` only: Redis
    expires tasks by ``ttl_seconds`` and is bounded by its own ``maxmemory``."""
    max_ended_bytes: int = Field(default=256 * 2**20, ge=1024, le=2**42)
    """Bytes every caller's ended tasks together may hold in the process's memory; past it, the oldest
    ended tasks of anyone are dropped first. At least ``max_ended_bytes_per_subject``."""

    @model_validator(mode="after")
    def _per_subject_within_total(self) -> TasksSettings:
        if self.max_ended_bytes_per_subject > self.max_ended_bytes:
            raise ValueError(
                f"[server.tasks] max_ended_bytes_per_subject ({self.max_ended_bytes_per_subject}) is more than "
                f"max_ended_bytes ({self.max_ended_bytes}), the cap of every caller together: lower it or raise "
                "max_ended_bytes"
            )
        return self


class ServerSettings(BaseModel):
    """The ``[server]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "mcp-providers"
    """Server name reported to clients."""
    log_level: Literal["debug", "info", "warning", "error"] | None = None
    """The server log's level on stderr (``serve``; ``--log-level`` wins; unset: ``warning``).
    Read at start-up."""
    log_format: Literal["text", "json"] | None = None
    """The server log's lines: ``text`` (UTC timestamp, level, logger, message) or ``json`` (one
    object a line, for a log collector); ``--log-format`` wins; unset: ``text``. Read at start-up."""
    icons: tuple[Icon, ...] = ()
    """The server's icons in ``serverInfo`` (2025-11-25+ sessions), each a table with ``src``
    (``https:`` URL or ``data:image/...;base64,...`` URI) and optional ``mime_type``, ``sizes``
    (``["48x48"]`` or ``["any"]``) and ``theme`` (``"light"``/``"dark"``); a bad one is a config
    error saying what is wrong and the fix, as ``check`` says for a declaration's icon."""
    page_size: int = Field(default=100, ge=1, le=10_000)
    """Items per page of every list result."""
    read_timeout: float = Field(default=30.0, gt=0)
    """Seconds one provider read or tool call may take before it is cut off."""
    max_read_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Largest resource read served, in bytes (a resource's ``max_bytes`` overrides it)."""
    max_result_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Largest tool result served, in bytes of its canonical JSON (blocks and ``structuredContent``);
    a bigger one is refused with an ``isError`` result naming the cap, and the receipt records it."""
    max_connections_per_client: int = Field(default=64, ge=0)
    """Open HTTP connections one client address may hold (``serve --http``); the next is closed at
    once. ``0`` turns the limit off: do that behind a reverse proxy, where every connection comes
    from the proxy's address and the proxy limits its own clients (``deploy/config.toml`` does)."""
    max_embed_bytes: int = Field(default=4096, ge=0)
    """Largest resource a tool result may embed, in bytes; bigger ones become resource links."""
    coalesce_reads: bool = True
    """Let identical concurrent reads (same provider, URI and caller) share one provider read;
    nothing is cached once the read ends (coalescing; see the benchmarks page)."""
    side_effects: dict[str, Literal["enforce", "warn"]] = Field(default_factory=dict)
    """Per plugin (entry-point name): what a side effect attempted while it reads a resource, completes,
    renders a prompt or runs an ``effects="none"`` tool does. ``"enforce"`` (every plugin not named)
    refuses it with -32008; ``"warn"`` lets it happen, logs a warning and records it in the receipt's
    ``violations``: a switch for migrating a plugin, not for serving."""
    embedded_side_effects: Literal["scoped", "enforce"] = "scoped"
    """What a composition embedded in someone else's process (``mount()``, ``attach()``, a host
    running ``compose()``) installs to enforce the side-effect scope. ``"scoped"``: the audit hook
    only (files, processes), and HTTP judged in :func:`mcp_providers.http.client`; nothing of the
    host is patched. ``"enforce"``: every process-wide guard ``serve`` installs (socket, TLS,
    ``os.open``, ``http.client`` and client-library patches, the import hook, the task factory),
    once and for the rest of the process. ``serve`` always installs them (the CLI owns its process);
    ``docs/embedding.md`` lists what each installs."""
    max_subscriptions_per_session: int = Field(default=100, ge=1, le=100_000)
    """Watches one session (2025-era) or one listen stream (2026-07-28) may hold at once."""
    max_uri_length: int = Field(default=2048, ge=16, le=65_536)
    """Longest URI a watch may name, in characters."""
    audit_log: Path | None = None
    """JSON-lines file that gets one line per list, read, call and denial (never content or secrets)."""
    audit_key_env: str | None = Field(default="MCP_PROVIDERS_AUDIT_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable holding the deployment's secret key for ``argumentsHmac`` (HMAC-SHA256 of a
    tool call's canonical JSON arguments, in receipts and the audit log). Unset: a random key per
    process (digests then compare only within one process), with a warning when ``audit_log`` is
    set or this key is written in the file."""
    request_state_ttl: float = Field(default=300.0, gt=0, le=86_400)
    """Seconds the ``requestState`` of a 2026-07-28 tool call that asked for input stays valid: the
    client must answer and retry within it, or start the call over."""
    request_state_key_env: str | None = Field(
        default="MCP_PROVIDERS_REQUEST_STATE_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    """Environment variable holding the key (32 bytes or more) sealing those states. Unset: a random
    key per process, so a retry must reach the replica that asked; replicas behind one address
    need the same key."""
    audit: AuditSettings | None = None
    """``[server.audit]``: audit sinks (file, syslog, webhook); ``audit_log`` is short for one file sink."""
    auth: AuthConfig | None = None
    """Bearer-token authentication for streamable HTTP; the token's subject is the caller."""
    tasks: TasksSettings = Field(default_factory=TasksSettings)
    """``[server.tasks]``: how long task results are kept, the suggested poll interval, the per-caller cap."""
    admin: AdminSettings | None = None
    """``[server.admin]``: who may reload the configuration over HTTP; ``None``: no one (SIGHUP still works)."""
    limits: LimitsSettings | None = None
    """``[server.limits]``: request rates per subject; ``None`` (no table) limits nothing."""
    credentials: CredentialsSettings | None = None
    """``[server.credentials]``: the upstream credential broker; ``None`` (no table): its defaults,
    and under ``[cluster]`` the deployment key is optional until a provider asks for a credential."""
    require_plugins: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Entry-point names of plugins ``serve`` refuses to start without: each must be installed,
    selected, loaded and pass its checks. Name every plugin whose ``authorize`` you rely on (e.g.
    ``["policy"]``), so a policy that stops loading is never served around, however it is written."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks (``127.0.0.1``, ``10.0.0.0/8``) whose ``X-Forwarded-For`` and
    ``X-Forwarded-Proto`` are believed (``serve --http``); from anyone else they are ignored."""

    @field_validator("icons")
    @classmethod
    def _good_icons(cls, icons: tuple[Icon, ...]) -> tuple[Icon, ...]:
        faults = [f"icon {i}: {what}; fix: {fix}" for i, icon in enumerate(icons) for what, fix in icon.problems()]
        if faults:
            raise ValueError("; ".join(faults))
        return icons

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_addresses(cls, proxies: tuple[str, ...]) -> tuple[str, ...]:
        for proxy in proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(
                    f"{proxy!r} is not an IP address or network; name the proxy, e.g. 127.0.0.1 or 10.0.0.0/8"
                ) from None
        return proxies

    def audit_sinks(self) -> list[FileSinkSettings | SyslogSinkSettings | WebhookSinkSettings]:
        """Every audit sink: ``audit_log`` (as a file sink named ``audit_log``), then ``[server.audit]``'s."""
        sinks: list[FileSinkSettings | SyslogSinkSettings | WebhookSinkSettings] = []
        if self.audit_log is not None:
            sinks.append(FileSinkSettings(type="file", name="audit_log", path=self.audit_log))
        return sinks + (list(self.audit.sinks) if self.audit is not None else [])

    @field_validator("audit_log")
    @classmethod
    def _audit_log_is_a_file(cls, value: Path | None) -> Path | None:
        if value is not None and value.is_dir():
            raise ValueError(f"{value} is a directory; name a file such as {value / 'audit.jsonl'}")
        return value


KEY_PREFIX_REQUIRED = (
    "key_prefix is required with [cluster]: it names this deployment's keys and channel in Redis. "
    "Give every replica of the deployment the same one and every other deployment on that Redis "
    'another, e.g. key_prefix = "docs-prod" (letters, digits, _ . : -, at most 64)'
)
"""Why ``[cluster]`` without ``key_prefix`` is refused (two deployments would share one namespace)."""


class ClusterSettings(BaseModel):
    """The ``[cluster]`` table: share live state between replicas through Redis.

    Without it everything stays in the process (one server, or ``--workers 1``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    redis_url: str | None = Field(default=None, pattern=r"^rediss?://")
    """``redis://[user:password@]host:port/db`` (``rediss://`` for TLS). A password in it makes the
    file a secret: give it with ``password_env`` instead, or the whole URL with ``redis_url_env``."""
    redis_url_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """Environment variable holding the URL instead of ``redis_url`` (one of the two; set from a
    Secret under Kubernetes: the chart's ``redis.existingSecret`` and ``redis.urlKey``)."""
    password_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """Environment variable holding Redis's password (``AUTH``), which then takes the place of any
    password in the URL; the chart's ``redis.existingSecret`` and ``redis.passwordKey``."""
    key_prefix: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    """The deployment's namespace in Redis: the prefix of every key and of the channel. Required,
    with no default: the replicas of one deployment share it, and each other deployment on the same
    Redis needs its own, or they would serve each other's cached reads, updates and leases."""
    lease_seconds: float = Field(default=10.0, ge=0.5, le=3600)
    """How long a replica's hold on a live source's poller lasts without renewal (the replica renews
    it every third of that while it polls): the longest polling stops when the holder dies, before
    another replica takes over."""
    timeout_seconds: float = Field(default=1.0, gt=0, le=30)
    """Longest wait for Redis in one operation; past it the request fails with a clear error."""
    stream_ttl_seconds: float = Field(default=3600.0, ge=1, le=7 * 86400)
    """How long a stateful session's SSE stream is kept for ``Last-Event-ID`` replay after its last
    event (2025-era sessions, not ``--stateless``)."""
    stream_max_events: int = Field(default=1000, ge=10, le=1_000_000)
    """Most events kept per stream for replay; older ones are dropped first."""

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        if isinstance(data, dict) and "key_prefix" not in data:
            raise ValueError(KEY_PREFIX_REQUIRED)
        if isinstance(data, dict) and ("redis_url" in data) == ("redis_url_env" in data):
            raise ValueError(
                "[cluster] needs one of redis_url (the URL) or redis_url_env (a variable holding it), "
                'not both, e.g. redis_url = "redis://redis:6379/0" with password_env = "REDIS_PASSWORD"'
            )
        return data

    def connection_url(self, env: Mapping[str, str] | None = None) -> str:
        """The URL to connect with: ``redis_url``, or ``$redis_url_env``; with ``password_env`` the
        password from that variable in place of the URL's (percent-encoded). Read from ``env``
        (default :data:`os.environ`) when a connection is made; never logged or shown.

        :raises ConfigError: a variable named here is unset or empty, or the URL it holds is not
            ``redis://`` or ``rediss://`` (the message names the variable, never its value).
        """
        import urllib.parse

        env = os.environ if env is None else env
        url = self.redis_url or ""
        if self.redis_url_env is not None:
            url = env.get(self.redis_url_env, "").strip()
            if not re.match(r"^rediss?://", url):
                what = "unset or empty" if not url else "not a redis:// or rediss:// URL"
                raise ConfigError(
                    f"[cluster] redis_url_env: ${self.redis_url_env} is {what}; "
                    "set it to the Redis URL, e.g. redis://redis:6379/0"
                )
        if self.password_env is None:
            return url
        password = env.get(self.password_env, "")
        if not password:
            raise ConfigError(
                f"[cluster] password_env: ${self.password_env} is unset or empty; "
                "set it to Redis's password (requirepass), or drop password_env"
            )
        parts = urllib.parse.urlsplit(url)
        user = urllib.parse.quote(urllib.parse.unquote(parts.username or ""), safe="")
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{user}:{urllib.parse.quote(password, safe='')}@{host}"
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _requirement_problem(text: str) -> str | None:
    """Why ``text`` cannot be a ``required_plugins`` entry, or ``None``."""
    from packaging.requirements import InvalidRequirement, Requirement  # only when required_plugins is set

    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        example = "e.g. 'mcp-providers-weather>=0.3'"
        return f"{text!r} is not a requirement ({exc}); write a distribution name and versions, {example}"
    if requirement.url or requirement.extras:
        what = "a URL" if requirement.url else "extras"
        return f"{text!r} has {what}; name the plugin's distribution and versions only, e.g. {requirement.name}>=1.0"
    return None


class Config(BaseModel):
    """The whole config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    required_plugins: tuple[str, ...] = ()
    """Plugin *distributions* ``serve`` and ``check`` refuse to run without, as PEP 508 requirements
    (``"mcp-providers-weather>=0.3"``; a marker such as ``; sys_platform == 'linux'`` limits where one
    applies), like pytest's ``required_plugins``. Each must be installed, declare an entry point in
    the ``mcp_providers`` group, and have a version in range (pre-releases count). Unlike
    ``[server] require_plugins`` (entry-point names that must load and pass their checks), this asks
    only what is installed."""

    allow: tuple[str, ...] | None = None
    """Entry-point names of the only plugins to load; ``None`` loads every installed one."""
    deny: tuple[str, ...] = ()
    """Entry-point names never to load (applied after ``allow``)."""
    set: str | None = None
    """Name of the plugin set in :attr:`sets` to serve; ``--set`` overrides it."""
    sets: dict[str, PluginSet] = Field(default_factory=dict)
    """Named plugin sets (``[sets.<name>]``)."""
    env_plugins: tuple[str, ...] | None = None
    """From ``$MCP_PROVIDERS_PLUGINS`` (set by :func:`load_config`; not allowed in the file)."""
    env_disable: tuple[str, ...] = ()
    """From ``$MCP_PROVIDERS_DISABLE`` (set by :func:`load_config`; not allowed in the file)."""
    server: ServerSettings = ServerSettings()
    cluster: ClusterSettings | None = None
    """``[cluster]``: the Redis backend shared by replicas; ``None`` keeps everything in process."""
    plugins: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-plugin settings tables, keyed by entry-point name."""

    @field_validator("required_plugins")
    @classmethod
    def _requirements(cls, required: tuple[str, ...]) -> tuple[str, ...]:
        problems = [p for p in map(_requirement_problem, required) if p]
        if problems:
            raise ValueError("; ".join(problems))
        return required


def settings_context(config: Config) -> dict[str, Any]:
    """The pydantic validation context every plugin's settings table is validated with:
    ``{TRUSTED_ISSUERS: <the issuers [server.auth] accepts>}`` (see
    :data:`~mcp_providers.identity.TRUSTED_ISSUERS`; ``()`` without ``[server.auth]``)."""
    auth = config.server.auth
    return {TRUSTED_ISSUERS: auth.principal_issuers if auth is not None else ()}


_SECRET_NAME = re.compile(
    r"pass|pwd|passwd|secret|token|api_?key|apikey|access_?key|credential|private|bearer|auth|cookie|session|"
    r"signature|sig$|salt|otp|pin$",
    re.IGNORECASE,
)
"""Keys whose values are never shown (matched anywhere in a field path, so ``passwrd`` and ``pwd`` count)."""
_USERINFO = re.compile(r"(?<=://)[^@\s'\"]*@")
"""``user:password@`` after a scheme, up to the last-but-one ``@``-free run (a password may hold ``/``)."""
_QUERY_VALUE = re.compile(r"([?&;][^=&#\s'\"]*=)[^&#\s'\"]*")
"""The value of every URL query parameter (``?token=abc`` -> ``?token=***``)."""
_PLAIN = {
    "Input should be a valid tuple": "Input should be a list",
    "Input should be a valid list": "Input should be a list",
}


def mask(text: str) -> str:
    """``text`` with URL user info and every URL query value replaced by ``***``."""
    if "://" not in text and "=" not in text:
        return text
    return _QUERY_VALUE.sub(r"\1***", _USERINFO.sub("***@", text))


def _shown(loc: tuple[int | str, ...], value: object, kind: str) -> str:
    """`` (got <value>)`` for an error line, with secrets and user info never echoed."""
    if isinstance(value, dict):
        return ""
    if kind == "extra_forbidden":
        return " (value hidden: an unknown key may be a mistyped secret)"
    if any(_SECRET_NAME.search(str(part)) for part in loc):
        return " (value hidden: it may be a secret)"
    text = mask(repr(value))
    if len(text) > 120:
        text = text[:117] + "..."
    return f" (got {text})"


def suggestion(name: str, candidates: Iterable[str], *, naming: bool = False) -> str:
    """``'; did you mean "<closest>"?'`` for the candidate closest to a misspelt ``name``
    (:func:`difflib.get_close_matches`, its default cutoff 0.6), or ``""`` when none is close.
    With ``naming`` (one of several misspelt names): ``'; did you mean "<closest>" for "<name>"?'``."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1)
    if not close:
        return ""
    return f'; did you mean "{close[0]}" for "{name}"?' if naming else f'; did you mean "{close[0]}"?'


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X`` (a union of several types stays as it is)."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _step(annotation: Any, part: int | str) -> Any:
    """The type found one step (a field name, a list index, a table key) inside ``annotation``."""
    annotation = _unwrap(annotation)
    if _is_model(annotation):
        fields = annotation.model_fields
        field = fields.get(str(part)) or next((f for f in fields.values() if f.alias == part), None)
        return field.annotation if field is not None else None
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (list, tuple, set, frozenset, Sequence) and isinstance(part, int) and args:
        return args[0]
    if origin in (dict, Mapping) and len(args) == 2:
        return args[1]
    return None


def known_keys(model: type[BaseModel], loc: Sequence[int | str]) -> tuple[str, ...]:
    """The keys (field names and aliases) of the table at ``loc`` inside ``model``, read from the
    pydantic models themselves (so keys added later count), or ``()`` when no model is there.

    >>> "page_size" in known_keys(Config, ["server"])
    True
    """
    annotation: Any = model
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return ()
    annotation = _unwrap(annotation)
    if not _is_model(annotation):
        return ()
    return tuple(n for name, f in annotation.model_fields.items() for n in (name, f.alias) if n)


def format_validation_error(error: ValidationError, where: str, model: type[BaseModel] | None = None) -> str:
    """One line per field: ``<where>.<field path>: <message> (got <value>)``; a key ``model`` does
    not know ends with ``; did you mean "<key>"?`` when one of the table's keys is close.

    Never shown, because these lines reach logs: values under secret-looking names (password,
    pwd, secret, token, API key, auth ... anywhere in the path), values of keys the model does not
    know (a mistyped secret is still a secret), ``user:password@`` in a URL (also when the password
    holds ``/``) and every URL query value (``?token=***``), in values and in messages alike.
    """
    lines = []
    for item in error.errors(include_url=False):
        path = ".".join(str(p) for p in item["loc"])
        # Operators write TOML arrays, not tuples, and pydantic's "Value error," prefix says nothing.
        message = item["msg"].removeprefix("Value error, ").replace("Tuple should", "List should")
        message = mask(_PLAIN.get(message, message))
        value = item.get("input")
        shown = _shown(tuple(item["loc"]), value, item["type"])
        if "hidden" in shown and isinstance(value, str) and value:
            message = _without(message, value)  # a validator that quoted the hidden value
        hint = ""
        if item["type"] == "extra_forbidden" and model is not None and item["loc"]:
            hint = suggestion(str(item["loc"][-1]), known_keys(model, item["loc"][:-1]))
        lines.append(f"{where}.{path}: {message}{shown}{hint}" if path else f"{where}: {message}")
    return "; ".join(lines)


def _without(message: str, value: str) -> str:
    """``message`` with ``value`` hidden where it is quoted, or anywhere when it is long enough that
    hiding it cannot cut ordinary words apart (a one-letter value would turn "Extra" into "E***tra"
    and so reveal itself)."""
    for quoted in (repr(value), f"'{value}'", f'"{value}"'):
        message = message.replace(quoted, "'***'")
    return message.replace(value, "***") if len(value) >= 6 else message


def _names(environ: Mapping[str, str], variable: str) -> tuple[str, ...] | None:
    raw = environ.get(variable)
    if raw is None or not raw.strip():
        return None
    return tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))


def load_config(
    path: str | Path | None = None,
    *,
    plugin_set: str | None = None,
    environ: Mapping[str, str] | None = None,
    reloading: bool = False,
) -> Config:
    """Read and validate the config file, then apply ``--set`` and the environment overrides.

    :param path: the file; ``None`` falls back to ``$MCP_PROVIDERS_CONFIG``, then to no file.
    :param plugin_set: the set to serve (``--set``), overriding the file's ``set``.
    :param environ: where ``MCP_PROVIDERS_*`` variables are read; default ``os.environ``.
    :param reloading: read it as a reload does: the file must be a regular file (a FIFO's read
        would wait for ever) and hold something (an empty one is a file caught mid-write, and
        would compose every plugin with its defaults, policy rules gone). Both are judged on the
        one read whose text is parsed, never on an earlier look (round 4 item 8).
    :returns: the validated :class:`Config` (defaults when there is no file).
    :raises ConfigError: the file is missing, is not TOML (or JSON for ``.json``), or has invalid
        fields; when ``reloading``, also not a regular file, or empty. (A set or plugin that does
        not exist is reported by discovery.)
    """
    environ = os.environ if environ is None else environ
    config = _load_file(path if path is not None else (environ.get(CONFIG_ENV) or None), reloading=reloading)
    update: dict[str, Any] = {}
    if plugin_set is not None:
        update["set"] = plugin_set
    only = _names(environ, PLUGINS_ENV)
    if only is not None:
        update["env_plugins"] = only
    update["env_disable"] = _names(environ, DISABLE_ENV) or ()
    return config.model_copy(update=update)


def _read_regular(file: Path) -> str:
    """The text of ``file``, judged on the descriptor it is read from: open without waiting (a FIFO
    with no writer opens at once), refuse anything but a regular file, then read that same file.

    :raises ConfigError: not a regular file. (OSError and UnicodeDecodeError as ``read_text``.)
    """
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(str(file))
        if not stat.S_ISREG(mode):
            raise ConfigError(f"config file {file} is not a regular file; pass a TOML file")
        return handle.read().decode("utf-8")


def _load_file(path: str | Path | None, *, reloading: bool = False) -> Config:
    if path is None:
        return Config()
    file = Path(path)
    try:
        text = _read_regular(file) if reloading else file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist; pass an existing TOML file") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {file} is a directory; pass a TOML file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {file} is not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"config file {file} cannot be read: {exc.strerror}") from None
    if reloading and not text.strip():  # judged on the text parsed below: one read
        raise ConfigError(
            f"config file {file} is empty (caught mid-write?); "
            "to serve every installed plugin with its defaults, put a comment in it"
        )
    try:
        # JSON (same shape) is accepted for configs written by programs, e.g. the demo.
        data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "JSON" if file.suffix == ".json" else "TOML"
        raise ConfigError(f"config file {file} is not valid {kind}: {exc}") from None
    for key in ("env_plugins", "env_disable"):
        if isinstance(data, dict) and key in data:
            variable = PLUGINS_ENV if key == "env_plugins" else DISABLE_ENV
            raise ConfigError(f"config file {file}: {key} comes from ${variable}; use allow/deny or a set in the file")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"config file {file}: {format_validation_error(exc, 'config', Config)}") from None
