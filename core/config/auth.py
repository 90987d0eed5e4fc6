"""``[server.auth]``: who may call, by static bearer tokens, JWTs or token introspection."""

from typing import Any, Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_providers.config.environment import ENV_NAME
from mcp_providers.identity import STATIC_ISSUER

__all__ = ["ASYMMETRIC_ALGORITHMS", "AuthConfig", "AuthMode", "TokenConfig"]


class TokenConfig(BaseModel):
    """One accepted bearer token, read from an environment variable (never written in the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    subject: str = Field(min_length=1)
    """Who presents this token (the ``subject`` the authorize hook sees)."""
    token_env: str = Field(pattern=ENV_NAME)
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

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

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
    client_id_env: str | None = Field(default=None, pattern=ENV_NAME)
    """``introspection``: environment variable holding this server's client id."""
    client_secret_env: str | None = Field(default=None, pattern=ENV_NAME)
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
    def _fits_mode(self) -> "AuthConfig":
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
