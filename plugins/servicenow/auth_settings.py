"""How the ServiceNow plugin authenticates to one instance: the ``auth`` table of an instance.

``type`` chooses the shape (:data:`Auth`): ``basic``, ``oauth`` or ``api_key`` (one service account
for every caller), or ``jwt_bearer`` (each caller as their own ServiceNow user). Secrets are the
*names* of environment variables, read by :func:`read_secret` when the instance is opened.
"""

import os
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_providers.plugins._issuers import IssuerScope

__all__ = [
    "CLAIM_NAME_PATTERN",
    "ENV_NAME_PATTERN",
    "STRICT",
    "ApiKeyAuth",
    "Auth",
    "BasicAuth",
    "EnvName",
    "JwtBearerAuth",
    "OAuthAuth",
    "read_secret",
]

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"

STRICT = ConfigDict(extra="forbid", frozen=True)
"""Descriptions are ``Field(description=...)``, what ``mcp-providers plugins --settings`` shows, and
not attribute docstrings: with ``use_attribute_docstrings`` pydantic reads and parses this file's
source at import, about 60 ms of every start-up."""

EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
"""Name of an environment variable holding a secret, e.g. ``SN_DEV_PASSWORD``."""


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

    model_config = ConfigDict(**STRICT, defer_build=True)  # built at first use (issue 43)

    type: Literal["basic"] = "basic"
    username: str = Field(min_length=1)
    password_env: EnvName = Field(description="Environment variable holding the password.")


class OAuthAuth(BaseModel):
    """OAuth 2.0 against the instance's ``/oauth_token.do``.

    The access token is cached until ``expires_in`` (less a small margin) and fetched again once
    when the instance answers 401.
    """

    model_config = ConfigDict(**STRICT, defer_build=True)  # built at first use (issue 43)

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
    def _password_grant_has_user(self) -> "OAuthAuth":
        if self.grant_type == "password" and (self.username is None or self.password_env is None):
            raise ValueError("grant_type 'password' needs username and password_env")
        return self


class ApiKeyAuth(BaseModel):
    """A ServiceNow API key, sent in the ``x-sn-apikey`` header."""

    model_config = ConfigDict(**STRICT, defer_build=True)  # built at first use (issue 43)

    type: Literal["api_key"] = "api_key"
    api_key_env: EnvName = Field(description="Environment variable holding the API key.")


CLAIM_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$"


class JwtBearerAuth(IssuerScope):
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
    directory. Otherwise the plugin's settings are refused (the rule of
    :mod:`mcp_providers.plugins._issuers`, shared with ``on_behalf_of`` upstreams and OpenAPI
    services). Example (validated by
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

    model_config = ConfigDict(**STRICT, defer_build=True)  # built at first use (issue 43)

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

    @model_validator(mode="after")
    def _one_client_id(self) -> "JwtBearerAuth":
        if (self.client_id is None) == (self.client_id_env is None):
            raise ValueError(
                "jwt_bearer needs exactly one of client_id (the id) and client_id_env (a variable holding it)"
            )
        return self

    def issuer_stakes(self) -> tuple[str, str]:
        """What is at stake across issuers, for :class:`~mcp_providers.plugins._issuers.IssuerScope`'s messages."""
        return (
            f"a {self.user_claim!r} value names a user only within the issuer that vouched for it: one issuer's "
            "user could be served as another's ServiceNow user",
            "whose users this instance maps",
        )


Auth = Annotated[BasicAuth | OAuthAuth | ApiKeyAuth | JwtBearerAuth, Field(discriminator="type")]
"""One of the auth shapes, chosen by ``type``: ``basic``, ``oauth`` or ``api_key`` (one service
account for every caller), or ``jwt_bearer`` (each caller as their own user)."""
