"""OAuth credentials from the credential broker, shared by the plugins that reach a service over HTTP
(``upstream``: MCP servers, ``openapi``: REST services).

What both need, in one place:

- settings: :class:`ClientCredentialsAuth` and :class:`OnBehalfOfAuth` (``auth = {type =
  "client_credentials" | "on_behalf_of", token_endpoint, client_id_env, client_secret_env, scope,
  resource, audience, client_auth}``, and for ``on_behalf_of`` ``issuers, issuers_share_users``:
  whose callers are exchanged for, :mod:`~mcp_providers.plugins._issuers`), the token endpoint held
  to https (plain http to loopback only) by :func:`checked_url`, variables named, never valued
  (:func:`read_variable`);
- the grants, two :class:`~mcp_providers.credentials.Upstream` implementations:
  :class:`ClientCredentials`, this server's own client (RFC 6749 §4.4), one identity for every
  caller; :class:`TokenExchange`, per caller, RFC 8693 token exchange (§2.1): the caller's verified
  access token (:attr:`~mcp_providers.identity.Principal.access_token`) is the ``subject_token``
  (``subject_token_type`` ``urn:ietf:params:oauth:token-type:access_token``), ``resource`` (RFC 8707)
  and ``audience`` name the service, and the answer is a token of the same user for it;
- the broker glue: :func:`brokered` sends with a credential from the request's broker and, when the
  service rejects it (a 401), forgets it and sends once more with a new one.

authlib's public functions build the form (:func:`~authlib.oauth2.rfc6749.parameters.prepare_token_request`)
and authenticate the client (:class:`~authlib.oauth2.ClientAuth`, ``client_secret_basic`` or
``client_secret_post``) and read the answer (:class:`~authlib.oauth2.rfc6749.OAuth2Token`:
``expires_at`` from ``expires_in``); the request goes through :func:`mcp_providers.http.client`,
inside :func:`mcp_providers.http.exempt` (a token request changes no served data, and it is made
from inside a read's side-effect scope). The caller's token goes to the token endpoint only.
Neither it, the client secret nor an issued token is ever in a log line, an error or a receipt.
"""

import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import httpx2
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_providers import credentials
from mcp_providers import http as core_http
from mcp_providers.credentials import Credential, CredentialBroker, CredentialRefused, Upstream
from mcp_providers.errors import UpstreamError
from mcp_providers.http import is_loopback_host
from mcp_providers.identity import Principal
from mcp_providers.plugins._issuers import IssuerScope
from mcp_providers.plugins._masking import Secrets

if TYPE_CHECKING:  # authlib (some 40 modules) is imported at the first token request, not at start-up
    from authlib.oauth2.rfc6749 import OAuth2Token

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "TOKEN_EXCHANGE_GRANT",
    "ClientCredentials",
    "ClientCredentialsAuth",
    "OAuthAuth",
    "OnBehalfOfAuth",
    "TokenEndpoint",
    "TokenExchange",
    "brokered",
    "checked_url",
    "read_variable",
    "variable_named",
]

log = logging.getLogger("mcp_providers.plugins.oauth")

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
"""``grant_type`` of RFC 8693 §2.1."""
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
"""The token type (RFC 8693 §3) of the caller's token and of the one asked for."""
DEFAULT_LIFETIME = 300.0
"""Seconds a token is kept when the answer has no ``expires_in`` (RFC 8693 §2.2.1: RECOMMENDED)."""
_HEADERS = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"}
_REASON_CHARS = 200

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
"""What a setting naming an environment variable must match."""
_SHOWN_NAME = re.compile(r"^[A-Z][A-Z0-9]{0,15}(_[A-Z0-9]{1,16}){0,7}$")
"""Variable names a message may repeat: UPPER_SNAKE_CASE in short words (``FILES_GITHUB_TOKEN``).
Anything else that passes as a name may be a pasted secret (``ghp_...``, ``sk_live_...``,
``AKIA...``), so a message names only the setting it came from."""
EnvName = Annotated[str, Field(description="The name of one of our environment variables.")]
NOT_A_NAME = (
    "must be the NAME of one of our environment variables (a letter or _, then letters, digits or _; at most "
    "128), not a value: put the secret in a variable and name that variable here (the value is not shown)"
)
_STRICT = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)
"""Inputs are never shown in errors: a misplaced setting may hold a secret."""


def variable_named(env_name: str, setting: str) -> str:
    """How messages name the variable ``env_name`` from ``setting``: ``"environment variable
    REMOTE_TOKEN (from auth.token_env)"``, or, when the name could be a pasted secret (not short
    UPPER_SNAKE_CASE words), ``"the environment variable named in auth.token_env"``."""
    if _SHOWN_NAME.fullmatch(env_name):
        return f"environment variable {env_name} (from {setting})"
    return f"the environment variable named in {setting}"


def read_variable(env_name: str, *, owner: str, setting: str) -> str:
    """The value of our environment variable ``env_name``, named in ``setting`` of ``owner``
    (``"upstream 'remote'"``, ``"service 'petstore'"``: how messages start).

    :raises ValueError: unset or empty, or ``env_name`` is not a variable name; the message names
        the setting it came from and, when it cannot be a secret (:func:`variable_named`), the
        variable; never a value.
    """
    if not ENV_NAME.fullmatch(env_name):
        raise ValueError(f"{owner}: {setting} {NOT_A_NAME}")
    value = os.environ.get(env_name, "")
    if not value:
        raise ValueError(
            f"{owner}: {variable_named(env_name, setting)} is not set; export it before starting the server"
        )
    return value


def names_checked(data: Any, fields: tuple[str, ...], where: str) -> Any:
    """``data`` (a table) when each of ``fields`` present is a variable name; run before field
    validation, so the error is the table's and pydantic shows no value."""
    if isinstance(data, dict):
        for name in fields:
            value = data.get(name)
            if value is not None and not (isinstance(value, str) and ENV_NAME.fullmatch(value)):
                raise ValueError(f"{where}{name} {NOT_A_NAME}")
    return data


def checked_url(value: str, what: str, *, sent: str | None) -> str:
    """``value``, an ``http(s)://`` URL, if it carries no user info and, when a credential is
    ``sent`` to it (e.g. ``"the bearer token"``), is ``https://`` or plain http to a loopback host.

    :raises ValueError: what is wrong and what is right; the URL is shown without user info or query.
    """
    parts = urlsplit(value)
    host = parts.netloc.rpartition("@")[2]  # host and port as written, never the user info
    shown = f"{parts.scheme}://{host}{parts.path}"
    if "@" in parts.netloc:
        raise ValueError(
            f"{what} {shown!r} must not carry user info; name credentials in auth (as environment variables)"
        )
    if sent is not None and parts.scheme == "http" and not is_loopback_host(parts.hostname or ""):
        raise ValueError(
            f"{what} {shown!r} is plain http to a host that is not loopback, so {sent} would cross the network "
            "in cleartext; use https:// (plain http only to 127.0.0.0/8, ::1, localhost)"
        )
    return value


class OAuthAuth(BaseModel):
    """What the two OAuth kinds share: this server's client at the service's authorization server.

    The client authenticates at ``token_endpoint`` with its id and secret (``client_secret_basic``,
    RFC 6749 §2.3.1, unless ``client_auth = "client_secret_post"``), read from the named variables
    when a token is first asked for. Tokens are asked for ``resource`` (RFC 8707; default: the URL
    the service is reached at, an upstream's ``url``, an OpenAPI service's ``base_url``) and, when
    set, ``audience``, so the service is their audience and no other server's.
    """

    model_config = _STRICT

    token_endpoint: str = Field(pattern=r"^https?://", description="The authorization server's token endpoint URL.")
    client_id_env: EnvName = Field(description="Environment variable holding this server's client id.")
    client_secret_env: EnvName = Field(description="Environment variable holding its client secret.")
    client_auth: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    scope: str | None = Field(default=None, min_length=1, description="scope asked for, space-separated.")
    resource: str | None = Field(
        default=None, pattern=r"^https?://", description="RFC 8707 resource asked for; default the service's URL."
    )
    audience: str | None = Field(default=None, min_length=1, description="audience asked for, if the server needs one.")

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        """Variable names, and the token endpoint (the client secret, and on behalf of a caller
        their token, are sent there), checked on the whole table: the field's error would hide the
        URL that says what is wrong (a setting under ``auth`` is masked as a possible secret)."""
        if isinstance(data, dict) and isinstance(data.get("token_endpoint"), str):
            callers = " and each caller's token" if data.get("type") == "on_behalf_of" else ""
            checked_url(data["token_endpoint"], "auth.token_endpoint", sent=f"the client secret{callers}")
        return names_checked(data, ("client_id_env", "client_secret_env"), "auth.")

    @field_validator("resource")
    @classmethod
    def _resource(cls, value: str | None) -> str | None:
        return value if value is None else checked_url(value, "auth.resource", sent=None)


class ClientCredentialsAuth(OAuthAuth):
    """OAuth client credentials (RFC 6749 §4.4): one identity, this server's client, for every
    caller; its tokens come from the credential broker (cached, refreshed before they expire)."""

    model_config = ConfigDict(defer_build=True)  # built at first use (issue 43)

    type: Literal["client_credentials"] = "client_credentials"


class OnBehalfOfAuth(OAuthAuth, IssuerScope):
    """On behalf of each caller: the credential broker exchanges the caller's verified access token
    at ``token_endpoint`` for a token of the same user for this service (RFC 8693 token exchange).
    The caller's token goes to the authorization server only, never to the service.

    Only callers of the issuers in ``issuers`` are exchanged for (default: the one issuer
    ``[server.auth]`` trusts; with several trusted it must be named; more than one needs
    ``issuers_share_users = true``): another issuer's token would otherwise reach this
    authorization server, and its ``alice`` be served as this issuer's (:mod:`~mcp_providers.plugins._issuers`).
    """

    model_config = ConfigDict(defer_build=True)  # built at first use (issue 43)

    type: Literal["on_behalf_of"] = "on_behalf_of"

    def issuer_stakes(self) -> tuple[str, str]:
        """What is at stake across issuers, for :class:`~mcp_providers.plugins._issuers.IssuerScope`'s messages."""
        return (
            "each caller's own token is sent to auth.token_endpoint to be exchanged for a token of the same user: "
            "another issuer's token would reach that authorization server (which could replay it here), and "
            "another issuer's user could be served as this one's user of the same name",
            "whose callers' tokens auth.token_endpoint exchanges",
        )


class TokenEndpoint:
    """One service's token endpoint and client (read from the named variables when first used).

    :param auth: the service's OAuth settings.
    :param owner: the service as variable messages name it, ``"upstream 'who'"``.
    :param who: the service as grant messages name it, ``"upstream 'who' (streamable-http)"``.
    :param resource: the service's URL, where its tokens are sent, and the RFC 8707 resource
        asked for when ``auth.resource`` is not set.
    :param timeout: seconds the token request may take.
    """

    grant_name = ""
    """``grant`` in receipts and audit lines (set by each grant)."""

    def __init__(self, auth: OAuthAuth, *, owner: str, who: str, resource: str, timeout: float) -> None:
        self.auth, self.owner, self.who, self.timeout = auth, owner, who, timeout
        self.resource = auth.resource or resource
        self.requests = 0
        """Token requests sent (for diagnostics and tests)."""
        client_id = os.environ.get(auth.client_id_env, "")  # read again at each grant; not a secret
        mapped = auth.mapped_issuers if isinstance(auth, OnBehalfOfAuth) else ()
        self.fingerprint = credentials.fingerprint(
            self.grant_name, auth.model_dump(mode="json"), resource, self.resource, client_id, mapped
        )
        """Everything a token is obtained under (the broker's key): the auth table, the service's
        URL, the resource, the client id, the issuers served; a reload changing any is another key."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.owner})"

    def _target(self) -> dict[str, str]:
        form = {"resource": self.resource}
        if self.auth.audience:
            form["audience"] = self.auth.audience
        if self.auth.scope:
            form["scope"] = self.auth.scope
        return form

    def variable(self, setting: str) -> str:
        """The value of the variable named in ``auth.<setting>``; raises what :func:`read_variable` does."""
        return read_variable(getattr(self.auth, setting), owner=self.owner, setting=f"auth.{setting}")

    async def grant(self, grant_type: str, what: str, hide: tuple[str, ...] = (), **form: str) -> "OAuth2Token":
        """The token the endpoint grants for ``form``.

        :param what: the grant as messages name it, e.g. ``"a token exchange for 'alice'"``.
        :param hide: secrets the answer's words must not repeat (the subject token).
        :raises CredentialRefused: not granted (HTTP status and the server's ``error`` named).
        :raises UpstreamError: the endpoint cannot be reached, or a variable is unset.
        """
        try:
            client_id, secret = self.variable("client_id_env"), self.variable("client_secret_env")
        except ValueError as exc:
            raise UpstreamError(str(exc)) from None
        from authlib.oauth2 import ClientAuth
        from authlib.oauth2.rfc6749.parameters import prepare_token_request

        body = prepare_token_request(grant_type, **form, **self._target())
        url = self.auth.token_endpoint
        _, headers, body = ClientAuth(client_id, secret, self.auth.client_auth).prepare(
            "POST", url, dict(_HEADERS), body
        )
        self.requests += 1
        try:
            with core_http.exempt(f"OAuth token request for {self.who}"):
                async with core_http.client(timeout=self.timeout, follow_redirects=False) as http:
                    response = await http.post(url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise UpstreamError(
                f"{self.who}: the token endpoint {url} cannot be reached ({type(exc).__name__})"
            ) from None
        return self._granted(response, what, (secret, *hide))

    def _granted(self, response: httpx2.Response, what: str, hide: tuple[str, ...]) -> "OAuth2Token":
        """The token ``response`` grants; raises :class:`CredentialRefused` with the endpoint's words,
        each of ``hide`` masked in them in every spelling an authorization server may echo it in
        (form- or JavaScript-encoded, in the ``Basic`` credential's base64, JSON-escaped, re-cased:
        :class:`~mcp_providers.plugins._masking.Secrets`; a text holding one in a spelling that
        cannot be cut out is masked whole)."""
        try:
            payload: Any = response.json()
        except ValueError:
            payload = None
        payload = payload if isinstance(payload, dict) else {}
        access = payload.get("access_token")
        if response.status_code != 200 or not isinstance(access, str) or not access:
            reason = " ".join(str(payload[k]) for k in ("error", "error_description") if payload.get(k))
            said = f": {self._hidden(hide).masked(reason)[:_REASON_CHARS]}" if reason else ""
            raise CredentialRefused(
                f"{self.who}: the authorization server refused {what} (HTTP {response.status_code}{said})"
            )
        kind = str(payload.get("token_type", "")).lower()
        issued = payload.get("issued_token_type", ACCESS_TOKEN_TYPE)
        if kind != "bearer" or issued != ACCESS_TOKEN_TYPE:
            unsaid = self._hidden(hide).masked  # one set of spellings for both words
            raise CredentialRefused(
                f"{self.who}: the authorization server answered {what} with a "
                f"{unsaid(kind) or 'untyped'} token of type {unsaid(str(issued))}; "
                f"the upstream needs a Bearer access token ({ACCESS_TOKEN_TYPE})"
            )
        from authlib.oauth2.rfc6749 import OAuth2Token

        return OAuth2Token.from_dict(payload)

    def _hidden(self, hide: tuple[str, ...]) -> Secrets:
        return Secrets.of(f"the token endpoint of {self.who}", hide)


def _credential(token: "OAuth2Token", subject: str, grant: str) -> Credential:
    expires = token.get("expires_at")
    expires_at = float(expires) if isinstance(expires, int | float) else time.time() + DEFAULT_LIFETIME
    return Credential(token=str(token["access_token"]), expires_at=expires_at, subject=subject, grant=grant)


class ClientCredentials(TokenEndpoint):
    """This server's client as the service's one user (RFC 6749 §4.4), whoever the caller is.

    :param name: the broker's cache key part, unique in the deployment (``"upstream-client:who"``).
    :param principal: the principal the broker keeps this identity's credential under (every
        caller shares it), e.g. ``Principal("client:who", issuer="mcp-providers:upstream:who")``.
    Other parameters as :class:`TokenEndpoint`'s.
    """

    grant_name = "client_credentials"

    def __init__(self, auth: OAuthAuth, *, name: str, principal: Principal, **endpoint: Any) -> None:
        super().__init__(auth, **endpoint)
        self._name, self.principal = name, principal

    @property
    def name(self) -> str:
        """The broker's cache key part."""
        return self._name

    async def obtain(self, principal: Principal) -> Credential:
        """A token of this server's client (the caller does not matter); the receipt's subject is
        the client id. Raises what :meth:`grant` raises."""
        token = await self.grant("client_credentials", "a client credentials grant")
        return _credential(token, self.variable("client_id_env"), self.grant_name)


class TokenExchange(TokenEndpoint):
    """The caller's own identity at the service, by RFC 8693 token exchange (see the module docstring).

    :param name: the broker's cache key part, unique in the deployment (``"upstream:who"``).
    Other parameters as :class:`TokenEndpoint`'s.
    """

    grant_name = "token_exchange"

    def __init__(self, auth: OnBehalfOfAuth, *, name: str, **endpoint: Any) -> None:
        super().__init__(auth, **endpoint)
        self._name, self.on_behalf = name, auth

    @property
    def name(self) -> str:
        """The broker's cache key part."""
        return self._name

    def admit(self, principal: Principal) -> None:
        """Refuse a caller of an issuer ``auth.issuers`` does not name: asked by the broker before
        every hand-out (a reload may have taken the issuer out), and by :meth:`obtain`.

        :raises CredentialRefused: naming the issuers served and the caller's; nothing is sent.
        """
        # Before anything is sent: the caller's token must not reach another issuer's authorization server.
        if (refusal := self.on_behalf.refusal(principal.issuer)) is not None:
            raise CredentialRefused(f"{self.who} is reached on behalf of each caller; {refusal}")

    async def obtain(self, principal: Principal) -> Credential:
        """A token of ``principal``'s user for this service; the receipt's subject is the caller's.

        :raises CredentialRefused: the caller brought no verified access token (stdio, a static
            token, anonymous), comes from an issuer ``auth.issuers`` does not name (nothing is
            sent), or the authorization server refused the exchange.
        :raises UpstreamError: the token endpoint cannot be reached.
        """
        subject_token = principal.access_token
        if not subject_token:
            raise CredentialRefused(
                f"{self.who} is reached on behalf of each caller, and caller {principal.subject!r} brought no "
                "verified access token to exchange (on_behalf_of needs callers over HTTP with [server.auth] "
                'mode = "jwt" or "introspection")'
            )
        self.admit(principal)
        token = await self.grant(
            TOKEN_EXCHANGE_GRANT,
            f"a token exchange for caller {principal.subject!r}",
            (subject_token,),
            subject_token=subject_token,
            subject_token_type=ACCESS_TOKEN_TYPE,
            requested_token_type=ACCESS_TOKEN_TYPE,
        )
        return _credential(token, principal.subject, self.grant_name)


T = TypeVar("T")


async def brokered(
    upstream: Upstream,
    principal: Principal,
    send: Callable[[Credential], Awaitable[T]],
    *,
    rejected: Callable[[Exception, Credential], bool],
    own: CredentialBroker,
    who: str,
) -> T:
    """``await send(credential)`` with ``principal``'s credential for ``upstream`` from the current
    request's broker (else ``own``); when ``send`` raised and ``rejected(error, credential)`` says
    the service refused that credential (a 401), it is forgotten in the broker (only while still the
    one cached) and ``send`` runs once more with a new one. The second failure is raised as it is.

    :param who: the service as the log names it.
    :raises CredentialRefused: the broker could not obtain a credential (nothing was sent).
    :raises Exception: what ``send`` raised.
    """
    scope = credentials.current_scope.get()
    broker = scope.broker if scope is not None else own
    for attempt in (1, 2):
        credential = await broker.credential(upstream, principal)
        try:
            return await send(credential)
        except Exception as exc:
            if attempt == 2 or not rejected(exc, credential):
                raise
        log.warning("%s answered 401 to a credential of %s; asking for a new one", who, upstream.name)
        await broker.forget(upstream, principal, credential)
    raise AssertionError("unreachable: the second attempt returns or raises")
