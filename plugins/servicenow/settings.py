"""Settings of the ServiceNow plugin: the instances it serves and how to reach each one.

The operator's ``[plugins.servicenow]`` table is validated against :class:`ServiceNowSettings`.
Secrets are never written in the config file: each is the *name* of an environment variable,
read when the instance's HTTP client is opened. Example (``tests/servicenow/test_settings.py``
validates it)::

    [[plugins.servicenow.instances]]
    name = "dev"
    url = "https://dev12345.service-now.com"
    description = "Development"
    auth = { type = "basic", username = "integration", password_env = "SN_DEV_PASSWORD" }

    [[plugins.servicenow.instances]]
    name = "prod"
    url = "https://prod.example.com"
    page_size = 50
    timeout_seconds = 20
    fields = { incidents = ["number", "short_description", "state", "priority"] }

    [plugins.servicenow.instances.auth]
    type = "oauth"
    grant_type = "client_credentials"
    client_id = "mcp"
    client_secret_env = "SN_PROD_CLIENT_SECRET"

    [[plugins.servicenow.instances]]
    name = "lab"
    url = "http://127.0.0.1:8080"
    auth = { type = "api_key", api_key_env = "SN_LAB_API_KEY" }

With no table the plugin loads with no instances: the fixed resources answer with empty lists.
An instance whose callers each act as their own ServiceNow user has ``jwt_bearer`` auth
(:class:`JwtBearerAuth` shows an example).
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from mcp_providers.identity import trusted_issuers
from mcp_providers.plugins.servicenow.issuers import issuer_problem
from mcp_providers.plugins.servicenow.redact import redact_url

if TYPE_CHECKING:
    from mcp_providers.plugins.servicenow.client import InstancePool

__all__ = [
    "ApiKeyAuth",
    "Auth",
    "BasicAuth",
    "InstanceSettings",
    "JwtBearerAuth",
    "OAuthAuth",
    "ResourceFields",
    "ServiceNowSettings",
    "read_secret",
]

log = logging.getLogger(__name__)

INSTANCE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""Instance names: a letter or digit, then up to 63 letters, digits, ``_`` or ``-``."""
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
FIELD_NAME_PATTERN = r"^[a-z_][a-z0-9_]{0,79}(\.[a-z_][a-z0-9_]{0,79}){0,3}$"

_STRICT = ConfigDict(extra="forbid", frozen=True)
"""Descriptions are ``Field(description=...)``, what ``mcp-providers plugins --settings`` shows, and
not attribute docstrings: with ``use_attribute_docstrings`` pydantic reads and parses this file's
source at import, about 60 ms of every start-up."""

EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
"""Name of an environment variable holding a secret, e.g. ``SN_DEV_PASSWORD``."""
FieldName = Annotated[str, Field(pattern=FIELD_NAME_PATTERN)]


def read_secret(env_name: str, *, instance: str, setting: str) -> str:
    """Return the value of the environment variable ``env_name``.

    :raises ValueError: the variable is unset or empty; the message names the variable and the
        setting it came from, never a value.
    """
    value = os.environ.get(env_name, "")
    if not value:
        raise ValueError(
            f"instance {instance!r}: environment variable {env_name} (from {setting}) is not set; "
            f"export it before starting the server"
        )
    return value


class BasicAuth(BaseModel):
    """HTTP Basic authentication with a ServiceNow user."""

    model_config = _STRICT

    type: Literal["basic"] = "basic"
    username: str = Field(min_length=1)
    password_env: EnvName = Field(description="Environment variable holding the password.")


class OAuthAuth(BaseModel):
    """OAuth 2.0 against the instance's ``/oauth_token.do``.

    The access token is cached until ``expires_in`` (less a small margin) and fetched again once
    when the instance answers 401.
    """

    model_config = _STRICT

    type: Literal["oauth"] = "oauth"
    grant_type: Literal["client_credentials", "password"] = "client_credentials"
    client_id: str = Field(min_length=1)
    client_secret_env: EnvName = Field(description="Environment variable holding the OAuth client secret.")
    username: str | None = Field(default=None, description="ServiceNow user for the ``password`` grant.")
    password_env: EnvName | None = Field(
        default=None, description="Environment variable holding that user's password (``password`` grant only)."
    )
    scope: str | None = None
    token_path: str = Field(default="/oauth_token.do", pattern=r"^/[A-Za-z0-9_./-]*$")

    @model_validator(mode="after")
    def _password_grant_has_user(self) -> OAuthAuth:
        if self.grant_type == "password" and (self.username is None or self.password_env is None):
            raise ValueError("grant_type 'password' needs username and password_env")
        return self


class ApiKeyAuth(BaseModel):
    """A ServiceNow API key, sent in the ``x-sn-apikey`` header."""

    model_config = _STRICT

    type: Literal["api_key"] = "api_key"
    api_key_env: EnvName = Field(description="Environment variable holding the API key.")


CLAIM_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$"


class JwtBearerAuth(BaseModel):
    """Per-user access: each caller reaches the instance as their own ServiceNow user.

    For every verified caller (the request's :class:`~mcp_providers.identity.Principal`) the
    plugin signs an RS256 assertion (``iss`` and ``aud`` = the client id, ``sub`` = the caller's
    ``user_claim``, ``iat``, ``exp``, ``jti``) with the private key and exchanges it at
    ``token_path`` (``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``) for a token of that
    user, so the instance's ACLs and audit fields apply per user. A caller with no verified
    principal (anonymous HTTP, stdio's ``local`` unless ``local_user`` is set) is refused; there is
    no service account to fall back to. Source: ServiceNow docs, "JSON Web token bearer grant" and
    "Create an OAuth JWT API endpoint for external clients".

    A ``user_claim`` value names a user only within the issuer that vouched for it (two identity
    providers may both say ``email = alice@example.test``). So only callers of the issuers in
    ``issuers`` are mapped (default: the one issuer ``[server.auth]`` trusts); with several issuers
    trusted, ``issuers`` must be named, and naming more than one needs
    ``issuers_share_users = true``, the operator's word that those issuers' users live in one
    directory. Otherwise the plugin's settings are refused. Example (validated by
    ``tests/servicenow/test_jwt_bearer_settings.py``)::

        [[plugins.servicenow.instances]]
        name = "corp"
        url = "https://corp.service-now.com"

        [plugins.servicenow.instances.auth]
        type = "jwt_bearer"
        client_id = "mcp-on-behalf"
        client_secret_env = "SN_CORP_CLIENT_SECRET"
        private_key_env = "SN_CORP_PRIVATE_KEY"
        user_claim = "email"
    """

    model_config = _STRICT

    type: Literal["jwt_bearer"] = "jwt_bearer"
    client_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="The OAuth application's client id (not a secret); or give ``client_id_env``.",
    )
    client_id_env: EnvName | None = Field(
        default=None, description="Environment variable holding the client id, instead of ``client_id``."
    )
    client_secret_env: EnvName = Field(
        description="Environment variable holding the OAuth application's client secret."
    )
    private_key_env: EnvName = Field(
        description=(
            "Environment variable holding the PEM RSA private key the assertions are signed with; the "
            "instance's JWT verifier map holds its public key (certificate)."
        )
    )
    user_claim: str = Field(
        default="email",
        pattern=CLAIM_NAME_PATTERN,
        description=(
            "The Principal's claim whose value is the assertion's ``sub`` (``sub`` for the subject "
            "itself); it must match the instance's user field (e.g. ``email``). Other claims must be listed "
            "in ``[server.auth] claims`` to reach the Principal."
        ),
    )
    local_user: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description=(
            "The user value (as ``user_claim`` would give) that stdio's ``local`` caller acts as; unset, "
            "``local`` is refused."
        ),
    )
    issuers: tuple[str, ...] = Field(
        default=(),
        description=(
            "The issuers (``[server.auth] issuer`` values, or ``static``) whose callers this instance maps "
            "by ``user_claim``; a caller of any other issuer is refused. Default: the one issuer "
            "``[server.auth]`` trusts; required when it trusts several."
        ),
    )
    issuers_share_users: bool = Field(
        default=False,
        description=(
            "Needed to name more than one issuer in ``issuers``: the operator's word that their users share "
            "one directory, so the same ``user_claim`` value is the same person whichever issuer vouched."
        ),
    )
    key_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="``kid`` header of the assertions, when the verifier map names its key.",
    )
    audience: Literal["client_id", "token_endpoint"] = Field(
        default="client_id",
        description="``aud`` of the assertions: the client id, or the token endpoint URL (newer releases).",
    )
    assertion_seconds: int = Field(
        default=300, ge=30, le=3600, description="Lifetime of each assertion (``exp - iat``), in seconds."
    )
    token_path: str = Field(default="/oauth_token.do", pattern=r"^/[A-Za-z0-9_./-]*$")

    @model_validator(mode="before")
    @classmethod
    def _mask_unknown(cls, data: Any) -> Any:
        """A secret pasted in by mistake (``client_secret = "..."``) is refused as an unknown
        setting, its value masked: a validation error would echo it."""
        if isinstance(data, dict):
            return {k: v if k in cls.model_fields else "[redacted]" for k, v in data.items()}
        return data

    _mapped: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _one_client_id(self) -> JwtBearerAuth:
        if (self.client_id is None) == (self.client_id_env is None):
            raise ValueError(
                "jwt_bearer needs exactly one of client_id (the id) and client_id_env (a variable holding it)"
            )
        return self

    @model_validator(mode="after")
    def _issuers_map_one_user_space(self, info: ValidationInfo) -> JwtBearerAuth:
        """Refuse settings that would let two issuers' callers be served as one ServiceNow user."""
        problem = issuer_problem(self.issuers, self.issuers_share_users, trusted_issuers(info.context), self.user_claim)
        if problem:
            raise ValueError(problem)
        trusted = trusted_issuers(info.context) or ()
        self._mapped = self.issuers or (trusted if len(trusted) == 1 else ())
        return self

    @property
    def mapped_issuers(self) -> tuple[str, ...]:
        """The issuers whose callers are mapped to users (``()``: not known, e.g. settings built
        without the server's config; then any verified caller is mapped, as an embedder vouches)."""
        return self._mapped


Auth = Annotated[BasicAuth | OAuthAuth | ApiKeyAuth | JwtBearerAuth, Field(discriminator="type")]
"""One of the auth shapes, chosen by ``type``: ``basic``, ``oauth`` or ``api_key`` (one service
account for every caller), or ``jwt_bearer`` (each caller as their own user)."""


class ResourceFields(BaseModel):
    """Which record fields (``sysparm_fields``) each resource asks for."""

    model_config = _STRICT

    incidents: tuple[FieldName, ...] = (
        "sys_id", "number", "short_description", "state", "priority", "urgency", "impact",
        "category", "assigned_to", "assignment_group", "caller_id", "active",
        "sys_created_on", "sys_updated_on",
    )  # fmt: skip
    incident: tuple[FieldName, ...] = (
        "sys_id", "number", "short_description", "description", "state", "priority", "urgency",
        "impact", "category", "assigned_to", "assignment_group", "caller_id", "active",
        "close_code", "close_notes", "sys_created_on", "sys_updated_on",
    )  # fmt: skip
    update_sets: tuple[FieldName, ...] = (
        "sys_id", "name", "description", "state", "application", "sys_created_on", "sys_updated_on",
    )  # fmt: skip
    update_set_records: tuple[FieldName, ...] = (
        "sys_id", "name", "type", "target_name", "action", "sys_created_on",
    )  # fmt: skip
    problems: tuple[FieldName, ...] = (
        "sys_id", "number", "short_description", "state", "priority", "assigned_to", "active",
        "sys_created_on", "sys_updated_on",
    )  # fmt: skip
    change_requests: tuple[FieldName, ...] = (
        "sys_id", "number", "short_description", "state", "type", "risk", "priority", "assigned_to",
        "start_date", "end_date", "active", "sys_created_on", "sys_updated_on",
    )  # fmt: skip


class InstanceSettings(BaseModel):
    """One ServiceNow instance: where it is, how to authenticate, and limits."""

    model_config = _STRICT

    name: str = Field(
        pattern=INSTANCE_NAME_PATTERN,
        description="Name used in URIs and tool arguments, e.g. ``dev`` in ``servicenow://dev/incidents``.",
    )
    url: str = Field(
        description=(
            "Base URL, e.g. ``https://dev12345.service-now.com``: https (http only on loopback), no "
            "user info, path, query or fragment."
        )
    )
    description: str = Field(default="", description="Shown to clients in ``servicenow://instances``.")
    auth: Auth = Field(
        description="How to authenticate: a table with ``type`` = ``basic``, ``oauth``, ``api_key`` or ``jwt_bearer``."
    )
    timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="Seconds to wait for each HTTP answer (connect, read, write and pool each).",
    )
    page_size: int = Field(default=25, ge=1, le=10000, description="Records per list resource (``sysparm_limit``).")
    update_set_page_size: int = Field(
        default=100, ge=1, le=10000, description="Records per ``sys_update_xml`` page when reading one update set."
    )
    update_set_record_budget: int = Field(
        default=5000,
        ge=1,
        le=100000,
        description="Most ``sys_update_xml`` records one update-set read fetches; any shortfall is reported.",
    )
    max_retries: int = Field(default=3, ge=0, le=10, description="Retries after a 429 answer before giving up.")
    max_retry_after_seconds: float = Field(
        default=10.0,
        ge=0,
        le=600,
        description=(
            "Longest ``Retry-After`` honoured (seconds); a longer one fails at once with the wait stated. "
            "Keep it below the server's ``read_timeout`` (30 s by default), or the read deadline ends the "
            "wait first and the caller learns nothing about it."
        ),
    )
    max_response_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        le=1024**3,
        description=(
            "Largest answer read from the instance per request, in bytes; the body is streamed and the "
            "request refused (``TooLarge``, -32004) as soon as it goes over."
        ),
    )
    live_poll: bool = Field(
        default=True,
        description=(
            "Poll the instance for changes made elsewhere, from server start, and publish them to the "
            "watchers of its live resources; ``false``: only this server's own writes are published. "
            "No effect with ``jwt_bearer`` auth: such an instance's resources cannot be watched."
        ),
    )
    incidents_poll_seconds: float = Field(
        default=60.0,
        ge=0.05,
        le=86400,
        description=(
            "Seconds between two polls of the watched lists (incidents, problems, change requests, "
            "update sets) while the server runs; the first is taken at start-up. A change is published to "
            "the watchers of the list and of the changed record."
        ),
    )
    fields: ResourceFields = Field(
        default=ResourceFields(),
        description="Which record fields each list and record resource returns (per resource kind).",
    )

    @property
    def per_user(self) -> bool:
        """Whether each caller reaches the instance as their own user (``jwt_bearer`` auth)."""
        return isinstance(self.auth, JwtBearerAuth)

    @model_validator(mode="before")
    @classmethod
    def _check_url(cls, data: Any) -> Any:
        """Validate ``url`` here, not in a field validator: a field error would be printed with the
        input value, and a refused URL may carry a token (``?token=...``) or user info. Messages
        show the URL with those parts masked."""
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            data = {**data, "url": _checked_url(data["url"])}
        return data


def _checked_url(value: str) -> str:
    shown = redact_url(value)
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http"):
        raise ValueError(f"url {shown!r} must start with https:// (http:// only on loopback)")
    if "@" in parts.netloc:
        raise ValueError(f"url {shown!r} must not carry user info; put credentials in auth (as env variable names)")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise ValueError(f"url {shown!r} must not have a query or fragment")
    if parts.path not in ("", "/"):
        raise ValueError(f"url {shown!r} must not have a path; give the instance root, e.g. https://x.service-now.com")
    host = parts.hostname or ""
    if not host:
        raise ValueError(f"url {shown!r} has no host")
    if parts.scheme == "http" and not is_loopback_host(host):
        raise ValueError(f"url {shown!r}: plain http is only allowed on loopback (127.0.0.1, ::1, localhost)")
    try:
        parts.port  # noqa: B018 -- raises on a malformed port
    except ValueError as exc:
        raise ValueError(f"url {shown!r} has an invalid port") from exc
    return value.rstrip("/")


def secret_variables(instance: InstanceSettings) -> list[tuple[str, str]]:
    """``(setting, environment variable)`` for each secret ``instance`` reads."""
    auth = instance.auth
    if isinstance(auth, BasicAuth):
        return [("auth.password_env", auth.password_env)]
    if isinstance(auth, ApiKeyAuth):
        return [("auth.api_key_env", auth.api_key_env)]
    if isinstance(auth, JwtBearerAuth):
        found = [("auth.client_secret_env", auth.client_secret_env), ("auth.private_key_env", auth.private_key_env)]
        return found + ([("auth.client_id_env", auth.client_id_env)] if auth.client_id_env else [])
    found = [("auth.client_secret_env", auth.client_secret_env)]
    return found + ([("auth.password_env", auth.password_env)] if auth.password_env else [])


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback IP address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServiceNowSettings(BaseModel):
    """The plugin's settings: the configured instances (names unique)."""

    model_config = ConfigDict(extra="forbid")

    instances: tuple[InstanceSettings, ...] = Field(
        default=(),
        description=(
            "The instances served, each a ``[[plugins.servicenow.instances]]`` table; none: the fixed "
            "resources answer with empty lists."
        ),
    )

    _pool: InstancePool | None = PrivateAttr(default=None)

    @field_validator("instances")
    @classmethod
    def _unique_names(cls, value: tuple[InstanceSettings, ...]) -> tuple[InstanceSettings, ...]:
        seen: set[str] = set()
        for instance in value:
            if instance.name in seen:
                raise ValueError(f"instance name {instance.name!r} appears more than once; names must be unique")
            seen.add(instance.name)
        return value

    @model_validator(mode="after")
    def _warn_unset_secrets(self) -> ServiceNowSettings:
        """Log a warning (``check``, ``plugins`` and ``serve`` all show it) for each secret variable
        that is unset: the plugin still loads, and every request to that instance fails saying so."""
        for instance in self.instances:
            for setting, env in secret_variables(instance):
                if not os.environ.get(env):
                    log.warning(
                        "servicenow: instance %r: environment variable %s (from %s) is not set; every "
                        "request to this instance will fail until it is exported",
                        instance.name,
                        env,
                        setting,
                    )
            _warn_unusable_key(instance)
        return self

    @property
    def names(self) -> Sequence[str]:
        """Configured instance names, in config order."""
        return [i.name for i in self.instances]

    def pool(self) -> InstancePool:
        """The :class:`InstancePool` shared by this plugin's providers (one HTTP client per instance).

        Both providers registered for this settings object get the same pool, so an instance
        has one client however many providers use it.
        """
        if self._pool is None:
            from mcp_providers.plugins.servicenow.client import InstancePool

            self._pool = InstancePool(self.instances)
        return self._pool


def _warn_unusable_key(instance: InstanceSettings) -> None:
    """Log a warning (as for an unset variable) when a ``jwt_bearer`` instance's private key is set
    but cannot sign RS256 assertions (not PEM, not RSA, under 2048 bits): every request would fail."""
    auth = instance.auth
    if not isinstance(auth, JwtBearerAuth) or not os.environ.get(auth.private_key_env):
        return
    from mcp_providers.plugins.servicenow.jwt_bearer import load_private_key

    try:
        load_private_key(os.environ[auth.private_key_env], instance=instance.name, env=auth.private_key_env)
    except ValueError as exc:  # the message names the variable, never the value
        log.warning("servicenow: %s; every request to this instance will fail until it is replaced", exc)
