"""Settings of the upstream plugin: the MCP servers it composes in, and how to reach each one.

The operator's ``[plugins.upstream]`` table is validated against :class:`UpstreamSettings`.
Secrets are never written in the config file: an environment value for a stdio server, and an
HTTP server's token, are each the *name* of one of our environment variables, read when the
connection opens. Example (``tests/test_upstream_settings.py`` validates it)::

    [[plugins.upstream.servers]]
    name = "everything"
    command = "node"
    args = ["/opt/mcp/server-everything/dist/index.js", "stdio"]
    prefixes = ["demo://resource/"]          # the URIs it owns, served as they are
    tool_prefix = "ev_"                      # its tools and prompts are served as ev_<name>
    read_timeout = 10
    effects = { gzip-file-as-resource = "additive" }

    [[plugins.upstream.servers]]
    name = "files"
    command = "mcp-server-filesystem"
    args = ["/srv/shared"]
    cwd = "/srv"
    env = { GITHUB_TOKEN = "FILES_GITHUB_TOKEN" }   # the upstream's GITHUB_TOKEN = our $FILES_GITHUB_TOKEN
    namespace = "files"                      # file:///srv/shared/a is served as files://file//srv/shared/a

    [[plugins.upstream.servers]]
    name = "remote"
    url = "https://mcp.example.com/mcp"
    auth = { type = "bearer", token_env = "REMOTE_MCP_TOKEN" }
    prefixes = ["remote://"]

    [[plugins.upstream.servers]]
    name = "tickets"
    url = "https://tickets.example.com/mcp"
    prefixes = ["tickets://"]
    [plugins.upstream.servers.auth]
    type = "on_behalf_of"                    # or "client_credentials": one identity for every caller
    token_endpoint = "https://idp.example.com/oauth/token"
    client_id_env = "TICKETS_CLIENT_ID"
    client_secret_env = "TICKETS_CLIENT_SECRET"
    scope = "tickets:read"                   # resource defaults to the url; audience is optional

Each server is exactly one of stdio (``command``) and streamable HTTP (``url``), and owns its
URIs in exactly one way: ``prefixes`` (its URIs served unchanged; anything it lists outside them
is left out and reported by ``mcp-providers check``) or ``namespace`` (every ``scheme://rest`` URI
it lists is served as ``<namespace>://scheme/rest``; receipts and audit lines keep its own URI).
"""

import os
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, Tag, field_validator, model_validator

from mcp_providers.models import Effects
from mcp_providers.plugins import _oauth
from mcp_providers.plugins._duplicates import LeftOutEntry, distinct
from mcp_providers.plugins._masking import checked_secret
from mcp_providers.plugins._oauth import ENV_NAME as _ENV_NAME
from mcp_providers.plugins._oauth import NOT_A_NAME as _NOT_A_NAME
from mcp_providers.plugins._oauth import ClientCredentialsAuth, EnvName, OAuthAuth, checked_url
from mcp_providers.plugins._oauth import names_checked as _names_checked
from mcp_providers.plugins.upstream import rules
from mcp_providers.providers import SourceSetting

__all__ = [
    "BearerAuth",
    "ClientCredentialsAuth",
    "OAuthAuth",
    "OnBehalfOfAuth",
    "ServerSettings",
    "UpstreamSettings",
    "read_variable",
]

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,39}$"
"""Server names: a lower-case letter, then up to 39 lower-case letters, digits or ``-`` (they
become provider names and, with ``namespace``, URI schemes)."""
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
PREFIX_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*://"
TOOL_PREFIX_PATTERN = r"^[A-Za-z0-9_.-]{1,32}$"

_STRICT = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)
"""Inputs are never shown in errors: a misplaced setting may hold a secret."""


def read_variable(env_name: str, *, server: str, setting: str) -> str:
    """The value of our environment variable ``env_name``, named in ``setting`` of upstream ``server``.

    :raises ValueError: unset or empty, or ``env_name`` is not a variable name; the message names
        the setting it came from and, when it cannot be a secret
        (:func:`~mcp_providers.plugins._oauth.variable_named`), the variable; never a value.
    """
    return _oauth.read_variable(env_name, owner=f"upstream {server!r}", setting=setting)


class BearerAuth(BaseModel):
    """A static bearer token for a streamable HTTP upstream, sent as ``Authorization: Bearer``.
    The caller's own token is never sent upstream (MCP forbids passing it through)."""

    model_config = ConfigDict(**_STRICT, defer_build=True)  # built at first use (issue 43)

    type: Literal["bearer"] = "bearer"
    token_env: EnvName = Field(description="Environment variable holding the token.")

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        return _names_checked(data, ("token_env",), "auth.")


class OnBehalfOfAuth(_oauth.OnBehalfOfAuth):
    """On behalf of each caller: the credential broker exchanges the caller's verified access token
    at ``token_endpoint`` for a token of the same user for this upstream (RFC 8693 token exchange),
    and each caller gets an upstream session of their own. The caller's token goes to the
    authorization server only, never to the upstream. Listing at start and ``list_changed`` use
    the pooled connection, as the client itself (client credentials), so the client must be allowed
    both grants; its resources are not watched (a notice would reach callers the upstream hides
    them from). The OAuth settings are :class:`~mcp_providers.plugins._oauth.OAuthAuth`'s;
    ``issuers`` and ``issuers_share_users`` say whose callers are exchanged for
    (:mod:`~mcp_providers.plugins._issuers`)."""

    model_config = ConfigDict(defer_build=True)  # built at first use (issue 43)

    idle_seconds: float = Field(
        default=300.0, gt=0, le=86_400, description="A caller's upstream session is closed after this long unused."
    )
    max_sessions: int = Field(default=1000, ge=1, description="Most callers' upstream sessions open at once.")


def _auth_type(value: Any) -> str:
    """The ``type`` of an auth table; ``"bearer"`` when it names none (the first kind there was)."""
    return str(value.get("type", "bearer") if isinstance(value, dict) else getattr(value, "type", "bearer"))


def _sent(auth: Any) -> str | None:
    """What credential an upstream with ``auth`` is sent (``None``: none)."""
    if isinstance(auth, BearerAuth):
        return "the bearer token"
    return None if auth is None else "the OAuth access token"


Auth = Annotated[
    Annotated[BearerAuth, Tag("bearer")]
    | Annotated[ClientCredentialsAuth, Tag("client_credentials")]
    | Annotated[OnBehalfOfAuth, Tag("on_behalf_of")],
    Discriminator(_auth_type),
]


class ServerSettings(BaseModel):
    """One upstream MCP server; it becomes one provider (three: resources, tools, prompts)."""

    model_config = ConfigDict(**_STRICT, defer_build=True)  # built at first use (issue 43)

    name: str = Field(pattern=NAME_PATTERN, description="Configured name: provider names, receipts, audit.")
    command: str | None = Field(default=None, min_length=1, description="stdio: the program to start.")
    args: tuple[str, ...] = Field(default=(), description="stdio: its arguments.")
    cwd: str | None = Field(default=None, description="stdio: its working folder.")
    env: dict[str, EnvName] = Field(
        default_factory=dict,
        description="stdio: the upstream's variable -> the name of OUR variable holding its value (no values here).",
    )
    url: str | None = Field(default=None, pattern=r"^https?://", description="streamable HTTP: the endpoint URL.")
    auth: Auth | None = Field(
        default=None,
        description="streamable HTTP: a static bearer, OAuth client credentials, or on the caller's behalf.",
    )
    prefixes: tuple[Annotated[str, Field(pattern=PREFIX_PATTERN)], ...] = Field(
        default=(), description="URI prefixes the upstream owns, served unchanged."
    )
    namespace: str | None = Field(
        default=None,
        pattern=r"^[a-z][a-z0-9-]{0,39}$",
        description="Re-home its URIs: scheme://rest is served as <namespace>://scheme/rest.",
    )
    tool_prefix: str | None = Field(
        default=None, pattern=TOOL_PREFIX_PATTERN, description="Served tool and prompt names start with it."
    )
    read_timeout: float = Field(default=30.0, gt=0, le=600, description="Seconds one upstream request may take.")
    max_questions_per_call: int = Field(
        default=20,
        ge=0,
        le=10_000,
        description="Questions (elicitation, sampling) one forwarded tool call may ask the downstream client; "
        "the rest are refused to the upstream (0: none is relayed).",
    )
    max_open_questions_per_call: int = Field(
        default=4,
        ge=1,
        le=100,
        description="Questions of one forwarded tool call waiting for their answers at once; more are refused.",
    )
    effects: dict[str, Effects] = Field(
        default_factory=dict,
        description="Per upstream tool name (as it lists it, without tool_prefix): effects overriding its "
        "annotations; 'none' is refused for a tool the upstream says writes; a name it does not list is reported.",
    )
    max_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="Largest answer accepted from the upstream, in bytes; a stdio line, an HTTP body or one "
        "server-sent event over 6x this + 8 MiB is discarded while read.",
    )

    @field_validator("env", mode="before")
    @classmethod
    def _env_names(cls, value: Any) -> Any:
        """Keys and values are variable names (the upstream's, ours); checked on the whole table,
        so the error shows neither a value nor a key (either may be a pasted secret)."""
        if isinstance(value, dict):
            for i, (key, name) in enumerate(value.items(), 1):
                if not (isinstance(key, str) and _ENV_NAME.fullmatch(key)):
                    raise ValueError(f"env: key {i} must be the name of the upstream's variable (letters, digits, _)")
                if not (isinstance(name, str) and _ENV_NAME.fullmatch(name)):
                    raise ValueError(f"env: the value of key {i} ({key}) {_NOT_A_NAME}")
        return value

    @model_validator(mode="after")
    def _one_of_each(self) -> "ServerSettings":
        if (self.command is None) == (self.url is None):
            raise ValueError(f"upstream {self.name!r}: give exactly one of command (stdio) and url (streamable HTTP)")
        if self.url is not None and (self.args or self.cwd or self.env):
            raise ValueError(f"upstream {self.name!r}: args, cwd and env are for stdio (command); remove them")
        if self.command is not None and self.auth is not None:
            raise ValueError(
                f"upstream {self.name!r}: auth is for url upstreams; a stdio server gets secrets through env"
            )
        if bool(self.prefixes) == (self.namespace is not None):
            raise ValueError(
                f"upstream {self.name!r}: give exactly one of prefixes (URIs served as they are, e.g. "
                '["demo://resource/"]) and namespace (URIs re-homed under <namespace>://)'
            )
        if self.url is not None:
            sent = _sent(self.auth) or ("its query (it may hold a key)" if urlsplit(self.url).query else None)
            checked_url(self.url, f"upstream {self.name!r}: url", sent=sent)
        for prefix in self.prefixes:
            try:
                rules.canonical(prefix)
            except ValueError as exc:
                raise ValueError(
                    f"upstream {self.name!r}: prefix {prefix!r} {exc}; write %XX with two hex digits"
                ) from None
        return self

    @model_validator(mode="after")
    def _secrets_maskable(self) -> "ServerSettings":
        """A set secret variable (``auth.token_env``, ``auth.client_secret_env``) too short to be
        masked is refused (:func:`~mcp_providers.plugins._masking.checked_secret`); unset ones are
        reported when first read. ``env`` values need not be secrets: short ones are not masked."""
        for setting in ("token_env", "client_secret_env"):
            if isinstance(name := getattr(self.auth, setting, None), str):
                where = f"upstream {self.name!r}: {_oauth.variable_named(name, f'auth.{setting}')}"
                checked_secret(os.environ.get(name), where)
        return self

    @property
    def provider_names(self) -> tuple[str, str, str]:
        """Its three providers' names: ``upstream-<name>``, ``...-tools``, ``...-prompts``."""
        return (f"upstream-{self.name}", f"upstream-{self.name}-tools", f"upstream-{self.name}-prompts")

    @property
    def transport(self) -> Literal["stdio", "streamable-http"]:
        """``"stdio"`` or ``"streamable-http"``."""
        return "stdio" if self.command is not None else "streamable-http"

    @property
    def owned(self) -> tuple[str, ...]:
        """The prefixes its provider owns: :attr:`prefixes`, or ``<namespace>://``."""
        return self.prefixes if self.namespace is None else (f"{self.namespace}://",)

    @property
    def setting(self) -> SourceSetting:
        """Where this server is configured, for the core's lines on its providers (``servers "<name>"``
        and the setting giving its prefix: ``prefixes`` or ``namespace``)."""
        return SourceSetting(f'servers "{self.name}"', "prefixes" if self.namespace is None else "namespace")


class UpstreamSettings(BaseModel):
    """The ``[plugins.upstream]`` table: a list of servers. Servers sharing a name are left out
    (:attr:`left_out`), the others kept. Servers whose prefixes overlap, or whose providers share a
    name (``a`` and ``a-tools``), are the core's to judge like any configured source's
    (:class:`~mcp_providers.providers.SourceSetting`): each such server is left out, and the others
    are served."""

    model_config = _STRICT

    servers: tuple[ServerSettings, ...] = ()
    _built: Any = PrivateAttr(default=None)
    """The providers made for this settings object (listed once for the three hooks)."""

    _left_out: tuple[LeftOutEntry, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _distinct(self) -> "UpstreamSettings":
        """Servers sharing a name are left out (never started), the others kept."""
        kept, self._left_out = distinct(self.servers, "[plugins.upstream] servers")
        object.__setattr__(self, "servers", kept)  # frozen: set once, here, while it is validated
        return self

    @property
    def left_out(self) -> tuple[LeftOutEntry, ...]:
        """One item per name several servers share, all of them left out (the core's ``left-out``
        lines read it: ``value``, ``message``, ``fix``)."""
        return self._left_out
