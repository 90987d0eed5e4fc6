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

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from mcp_providers.http import is_loopback_host
from mcp_providers.plugins._duplicates import LeftOutEntry, distinct
from mcp_providers.plugins._masking import checked_secret
from mcp_providers.plugins.servicenow.auth_settings import (
    STRICT,
    ApiKeyAuth,
    Auth,
    BasicAuth,
    JwtBearerAuth,
    OAuthAuth,
    read_secret,
)
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
FIELD_NAME_PATTERN = r"^[a-z_][a-z0-9_]{0,79}(\.[a-z_][a-z0-9_]{0,79}){0,3}$"


FieldName = Annotated[str, Field(pattern=FIELD_NAME_PATTERN)]


class ResourceFields(BaseModel):
    """Which record fields (``sysparm_fields``) each resource asks for."""

    model_config = STRICT

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

    model_config = ConfigDict(**STRICT, hide_input_in_errors=True, defer_build=True)  # a refused url may carry a secret

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

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        """The URL's own error beside the other fields' (a ``before`` model validator hid them);
        the message shows it with user info and query values masked, and the model hides inputs
        in its errors' text, since a refused URL may carry a token or a password."""
        return _checked_url(value)


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


class ServiceNowSettings(BaseModel):
    """The plugin's settings: the configured instances (instances sharing a name are left out,
    :attr:`left_out`)."""

    model_config = ConfigDict(extra="forbid")

    instances: tuple[InstanceSettings, ...] = Field(
        default=(),
        description=(
            "The instances served, each a ``[[plugins.servicenow.instances]]`` table; none: the fixed "
            "resources answer with empty lists."
        ),
    )

    _pool: "InstancePool | None" = PrivateAttr(default=None)

    _left_out: tuple[LeftOutEntry, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _distinct(self) -> "ServiceNowSettings":
        """Instances sharing a name are left out, the others kept: a URI or tool argument names an
        instance, and which of two it meant would be a guess (before the secrets are checked)."""
        self.instances, self._left_out = distinct(self.instances, "[plugins.servicenow] instances")
        return self

    @property
    def left_out(self) -> tuple[LeftOutEntry, ...]:
        """One item per name several instances share, all of them left out (the core's ``left-out``
        lines read it: ``value``, ``message``, ``fix``)."""
        return self._left_out

    @model_validator(mode="after")
    def _warn_unset_secrets(self) -> "ServiceNowSettings":
        """Log a warning (``check``, ``plugins`` and ``serve`` all show it) for each secret variable
        that is unset: the plugin still loads, and every request to that instance fails saying so.
        One set but too short to be masked is refused
        (:func:`~mcp_providers.plugins._masking.checked_secret`; a client id is no secret)."""
        for instance in self.instances:
            for setting, env in secret_variables(instance):
                if setting != "auth.client_id_env":
                    where = f"servicenow: instance {instance.name!r}: environment variable {env} (from {setting})"
                    checked_secret(os.environ.get(env), where)
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

    def pool(self) -> "InstancePool":
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
