"""Settings of the OpenAPI plugin: the services it serves, where each one's document is, and how to
reach it.

The operator's ``[plugins.openapi]`` table is validated against :class:`OpenAPISettings`. Secrets
are never written in the config file: each is the *name* of an environment variable, read when the
service's HTTP client is opened, or, for OAuth (``client_credentials``: this server's client;
``on_behalf_of``: each caller, by RFC 8693 token exchange), when a token is first asked for; the
OAuth settings are the upstream plugin's (:class:`~mcp_providers.plugins._oauth.OAuthAuth`).
Example (``tests/openapi/test_openapi_settings.py`` validates it)::

    [[plugins.openapi.services]]
    name = "petstore"
    document = "https://petstore3.example.com/api/v3/openapi.json"   # or a file path
    base_url = "https://petstore3.example.com/api/v3"                 # default: the document's servers[0]
    prefix = "petstore://"                                            # default: openapi://petstore/
    include_tags = ["pet", "store"]
    exclude_operations = ["deletePet"]
    effects = { addPet = "destructive" }
    auth = { type = "bearer", token_env = "PETSTORE_TOKEN" }

    [[plugins.openapi.services]]
    name = "tickets"
    document = "https://tickets.example.com/openapi.json"
    [plugins.openapi.services.auth]
    type = "on_behalf_of"                    # or "client_credentials": one identity for every caller
    token_endpoint = "https://idp.example.com/oauth/token"
    client_id_env = "TICKETS_CLIENT_ID"
    client_secret_env = "TICKETS_CLIENT_SECRET"
    scope = "tickets:read"                   # resource defaults to the base URL; audience is optional
"""

import logging
import os
import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from mcp_providers.http import is_loopback_host
from mcp_providers.models import Effects
from mcp_providers.plugins._duplicates import LeftOutEntry, distinct
from mcp_providers.plugins._masking import checked_secret
from mcp_providers.plugins._oauth import ClientCredentialsAuth, OAuthAuth, OnBehalfOfAuth, variable_named
from mcp_providers.providers import SourceSetting

__all__ = [
    "ApiKeyAuth",
    "BasicAuth",
    "BearerAuth",
    "ClientCredentialsAuth",
    "OnBehalfOfAuth",
    "OpenAPISettings",
    "ServiceSettings",
    "secret_variables",
]

log = logging.getLogger(__name__)

SERVICE_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"
"""Service names: a lower-case letter, then up to 62 lower-case letters, digits or ``-`` (they
appear in URIs, ``openapi://<name>/``, and provider names)."""
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
"""Name of an environment variable holding a secret, e.g. ``PETSTORE_TOKEN``."""

_STRICT = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)
"""Inputs are never shown in errors: a URL may carry user info, a misplaced setting a secret."""


class BearerAuth(BaseModel):
    """``Authorization: Bearer <token>``, the token from a named variable (one service account)."""

    model_config = ConfigDict(**_STRICT, defer_build=True)  # built at first use (issue 43)
    type: Literal["bearer"] = "bearer"
    token_env: EnvName = Field(description="Environment variable holding the token.")


class BasicAuth(BaseModel):
    """HTTP Basic authentication, the password from a named variable."""

    model_config = ConfigDict(**_STRICT, defer_build=True)  # built at first use (issue 43)
    type: Literal["basic"] = "basic"
    username: str = Field(min_length=1)
    password_env: EnvName = Field(description="Environment variable holding the password.")


class ApiKeyAuth(BaseModel):
    """An API key in a header or a query parameter, from a named variable."""

    model_config = ConfigDict(**_STRICT, defer_build=True)  # built at first use (issue 43)
    type: Literal["api_key"] = "api_key"
    name: str = Field(default="X-API-Key", pattern=r"^[A-Za-z0-9_.-]{1,128}$", description="Header or parameter name.")
    location: Literal["header", "query"] = Field(default="header", description="Where the key is sent.")
    value_env: EnvName = Field(description="Environment variable holding the key.")


Auth = Annotated[
    BearerAuth | BasicAuth | ApiKeyAuth | ClientCredentialsAuth | OnBehalfOfAuth, Field(discriminator="type")
]


def checked_http_url(value: str, what: str, *, path: bool) -> str:
    """``value`` if it is an http(s) URL without user info, query or fragment (http only on loopback).

    :raises ValueError: what is wrong and what would be right; the URL is never echoed with user info.
    """
    parts = urlsplit(value)
    host = parts.netloc.rpartition("@")[2]  # host and port as written, never the user info
    shown = f"{parts.scheme}://{host}{parts.path}" if parts.scheme else "(not a URL)"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} {shown!r} must be an https:// URL (http:// only on loopback)")
    if "@" in parts.netloc:
        raise ValueError(f"{what} {shown!r} must not carry user info; name credentials in auth (as env variables)")
    if parts.query or parts.fragment:
        raise ValueError(f"{what} {shown!r} must not have a query or fragment")
    if not path and parts.path not in ("", "/"):
        raise ValueError(f"{what} {shown!r} must not have a path")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ValueError(f"{what} {shown!r}: plain http is only allowed on loopback (127.0.0.1, ::1, localhost)")
    return value.rstrip("/")


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _prefix_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a prefix (``scheme://`` and letters, digits, ``-._~/``,
    ending in ``/``), in words naming the part, else ``None``."""
    scheme, sep, path = value.partition("://")
    if not sep:
        return "has no '://' after its scheme"
    if not re.fullmatch(r"[a-z][a-z0-9+.-]*", scheme):
        if re.fullmatch(r"[a-z][a-z0-9+.-]*", scheme.lower()):
            return f"has scheme {scheme!r}, which must be lower case: write {scheme.lower()!r}"
        return f"has scheme {scheme!r}, which is no URI scheme (a letter, then letters, digits, '+', '-', '.')"
    for at, char in enumerate(path):
        if char in _UNRESERVED or char == "/":
            continue
        escape = path[at : at + 3]
        if re.fullmatch(r"%[0-9A-Fa-f]{2}", escape):
            decoded = chr(int(escape[1:], 16))
            if decoded in _UNRESERVED:  # URIs are compared with such an escape decoded (canonical form)
                return f"holds {escape!r}, a percent-encoded {decoded!r}: write {decoded!r} itself"
            return f"holds {escape!r}, a percent-encoded {decoded!r}, which a prefix may not hold"
        return f"holds {char!r}, which a prefix may not hold (only letters, digits and '-._~/' after '://')"
    if path and not path.endswith("/"):
        return "does not end in '/' (a prefix is a scheme and '://', or a path that ends in '/')"
    return None


class ServiceSettings(BaseModel):
    """One OpenAPI service: its document, where its operations are called, what of it is served."""

    model_config = ConfigDict(**_STRICT, defer_build=True)  # built at first use (issue 43)

    name: str = Field(pattern=SERVICE_NAME_PATTERN, description="Names the service in URIs, providers and receipts.")
    document: str = Field(
        min_length=1,
        description="The OpenAPI 3.0 or 3.1 document (JSON or YAML): a file path, or an http(s) URL.",
    )
    base_url: str | None = Field(
        default=None,
        description="Where operations are called, e.g. ``https://api.example.com/v3``; default: the document's "
        "first ``servers`` URL (relative to the document's URL; its server variables filled with their defaults).",
    )
    prefix: str | None = Field(
        default=None,
        description="The URI prefix this service owns (``scheme://`` with an optional path ending in ``/``); "
        "default ``openapi://<name>/``.",
    )
    tool_prefix: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.-]{0,64}$",
        description='Put before each tool name (default ``<name>_``; ``""`` for none).',
    )
    include_tags: tuple[str, ...] = Field(default=(), description="Serve only operations with one of these tags.")
    exclude_tags: tuple[str, ...] = Field(default=(), description="Leave out operations with any of these tags.")
    include_operations: tuple[str, ...] = Field(default=(), description="Serve only these operationIds.")
    exclude_operations: tuple[str, ...] = Field(default=(), description="Leave out these operationIds.")
    effects: dict[str, Effects] = Field(
        default_factory=dict,
        description="operationId -> effects of its tool, replacing the method's (POST additive, PUT/PATCH/DELETE "
        "destructive); ``none`` is refused: a write method cannot run in the read-only scope.",
    )
    auth: Auth | None = Field(
        default=None,
        description="How to authenticate: ``bearer``, ``basic``, ``api_key`` (one static credential), "
        "``client_credentials`` (this server's OAuth client) or ``on_behalf_of`` (each caller, by token exchange).",
    )
    timeout_seconds: float = Field(default=30.0, gt=0, le=600, description="Seconds to wait for each HTTP answer.")
    max_response_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        le=1024**3,
        description="Largest answer read per request, in bytes; the body is streamed and refused once over.",
    )

    max_operations: int = Field(
        default=10_000,
        ge=1,
        le=200_000,
        description="Most operations the document may have; one with more is refused before it is validated "
        "(validation costs about 1.5 to 3.5 CPU ms an operation, paid by check, serve and every reload).",
    )

    @model_validator(mode="before")
    @classmethod
    def _mask_unknown(cls, data: Any) -> Any:
        """A secret pasted in by mistake (``token = "..."``) is refused as an unknown setting, its value
        masked (a validation error would echo it)."""
        if not isinstance(data, dict):
            return data
        return {k: v if k in cls.model_fields else "[redacted]" for k, v in data.items()}

    @field_validator("base_url", "document")
    @classmethod
    def _url(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Beside the other fields' errors (a ``before`` check hid them); the model hides inputs in
        its errors' text, and the message shows the URL without its user info."""
        if value is None or (info.field_name == "document" and "://" not in value):
            return value  # a document may be a file path
        return checked_http_url(value, str(info.field_name), path=True)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if (why := _prefix_problem(value)) is not None:
            raise ValueError(
                f"prefix {value!r} {why}; a prefix must be a lower-case scheme and '://', optionally a path "
                "ending in '/', e.g. 'petstore://' or 'openapi://petstore/'"
            )
        return value

    @field_validator("effects")
    @classmethod
    def _no_none(cls, value: dict[str, Effects]) -> dict[str, Effects]:
        for operation, effects in value.items():
            if effects == "none":
                raise ValueError(
                    f"effects of {operation!r} cannot be 'none': only GET operations are read-only here (they "
                    "become resources); a tool sending another method would be refused by the read-only scope"
                )
        return value

    @property
    def owned_prefix(self) -> str:
        """The URI prefix this service owns."""
        return self.prefix or f"openapi://{self.name}/"

    @property
    def tools_prefix(self) -> str:
        """What is put before each tool name."""
        return f"{self.name.replace('-', '_')}_" if self.tool_prefix is None else self.tool_prefix

    @property
    def setting(self) -> SourceSetting:
        """Where this service is configured, for the core's lines on its providers: ``services
        "<name>"``, its ``prefix``, and how two of its operations named alike are told apart (its
        settings have no per-operation name: the document's operationId and path are the names)."""
        rename = (
            "tell them apart in the document (a tool is named <tool_prefix><operationId>, a resource by its "
            "path; an operation without an operationId is named <method>_<path>, e.g. post_/a/b), or leave "
            'one out with exclude_operations = ["<its operationId>"]'
        )
        return SourceSetting(f'services "{self.name}"', "prefix", rename)


def secret_variables(service: ServiceSettings) -> list[tuple[str, str]]:
    """``(setting, environment variable)`` for each secret ``service`` reads."""
    auth = service.auth
    if isinstance(auth, BearerAuth):
        return [("auth.token_env", auth.token_env)]
    if isinstance(auth, BasicAuth):
        return [("auth.password_env", auth.password_env)]
    if isinstance(auth, ApiKeyAuth):
        return [("auth.value_env", auth.value_env)]
    if isinstance(auth, OAuthAuth):
        return [("auth.client_id_env", auth.client_id_env), ("auth.client_secret_env", auth.client_secret_env)]
    return []


class OpenAPISettings(BaseModel):
    """The plugin's settings: the configured services (services sharing a name are left out,
    :attr:`left_out`; overlapping prefixes are the core's to judge)."""

    model_config = ConfigDict(extra="forbid")

    services: tuple[ServiceSettings, ...] = Field(
        default=(), description="The services served, each a ``[[plugins.openapi.services]]`` table."
    )

    _services: list[tuple[Any, Any]] | None = PrivateAttr(default=None)
    """The loaded services (:class:`~mcp_providers.plugins.openapi.client.Service`), made once per
    settings object, so the resource and the tool provider of a service share one client."""

    _left_out: tuple[LeftOutEntry, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _distinct(self) -> "OpenAPISettings":
        """Services sharing a name are left out, the others kept (before the secrets are checked:
        a left-out service's are never read)."""
        self.services, self._left_out = distinct(self.services, "[plugins.openapi] services")
        return self

    @property
    def left_out(self) -> tuple[LeftOutEntry, ...]:
        """One item per name several services share, all of them left out (the core's ``left-out``
        lines read it: ``value``, ``message``, ``fix``)."""
        return self._left_out

    @model_validator(mode="after")
    def _warn_unset_secrets(self) -> "OpenAPISettings":
        """Log a warning for each secret variable that is unset: the service still loads, and every
        request to it fails saying so. One set but too short to be masked is refused
        (:func:`~mcp_providers.plugins._masking.checked_secret`; a client id is no secret)."""
        for service in self.services:
            for setting, env in secret_variables(service):
                if setting != "auth.client_id_env":
                    checked_secret(os.environ.get(env), f"service {service.name!r}: {variable_named(env, setting)}")
                if not os.environ.get(env):
                    log.warning(
                        "openapi: service %r: %s is not set; every request to this service will fail until it "
                        "is exported",
                        service.name,
                        variable_named(env, setting),  # a name that may be a pasted secret is not repeated
                    )
        return self
