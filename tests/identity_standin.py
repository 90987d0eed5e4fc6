"""A stand-in identity provider on a real loopback HTTP server, for the hostile cases.

It publishes what a resource server reads from an identity provider: RFC 8414 metadata (or, with
``oidc_only``, only OpenID Connect discovery), a JWKS and an RFC 7662 introspection endpoint
(client_secret_basic). Switches make it misbehave: a JWKS that answers garbage, that hangs past
the server's timeout, or that is down. It counts what it was asked.

Tokens: it signs JWTs with its own RSA (and EC) keys, as an identity provider would. The tests
that use it are the hostile ones; the happy path against a real authorization server
(``oidc-provider``) lives in ``tests/identity/``.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

CLIENT_ID = "mcp-resource-server"
CLIENT_SECRET = "s3cret:with/odd&chars"


@functools.cache
def _keys(slot: int) -> tuple[Any, Any]:
    """RSA and EC private keys, made once per slot (key generation is slow)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048), ec.generate_private_key(ec.SECP256R1())


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class StandInIdP:
    """The identity provider's state; :func:`standin_idp` serves it."""

    path: str = ""
    """The issuer's path, e.g. ``/realms/test`` (``""``: the issuer is the origin)."""
    oidc_only: bool = False
    published_issuer: str | None = None
    """Issuer named in the metadata (default: the real one)."""
    jwks_mode: str = "ok"
    """``ok``, ``garbage`` (not JSON), ``empty`` (a JSON object without keys), ``slow`` (hangs), ``down`` (500)."""
    jwks_cache_control: str | None = None
    """The JWKS answer's ``Cache-Control`` header (``None``: none sent)."""
    jwks_age: str | None = None
    """The JWKS answer's ``Age`` header (``None``: none sent): how long a cache has held it."""
    slow_seconds: float = 3.0
    introspection: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Answers by token; any other token is ``{"active": false}``."""
    introspection_mode: str = "ok"
    counts: dict[str, int] = field(default_factory=lambda: {"jwks": 0, "metadata": 0, "introspect": 0})
    seen_auth: list[str] = field(default_factory=list)
    port: int = 0
    key_slot: int = 0
    """Identity providers with different slots have different keys."""

    @property
    def rsa_key(self) -> Any:
        return _keys(self.key_slot)[0]

    @property
    def ec_key(self) -> Any:
        return _keys(self.key_slot)[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return self.origin + self.path

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa_key.public_key()))
        ec_jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec_key.public_key()))
        return {"keys": [{**rsa_jwk, "kid": "rsa-1", "use": "sig"}, {**ec_jwk, "kid": "ec-1", "use": "sig"}]}

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.published_issuer or self.issuer,
            "jwks_uri": f"{self.origin}/jwks",
            "introspection_endpoint": f"{self.origin}/introspect",
            "token_endpoint": f"{self.origin}/token",
        }

    def claims(self, audience: str, **override: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {"iss": self.issuer, "sub": "alice", "aud": audience, "iat": now, "exp": now + 300,
                "scope": "mcp:read", "client_id": "cli", "groups": ["itil"], "email": "alice@example.com"}  # fmt: skip
        base.update(override)
        return {k: v for k, v in base.items() if v is not None}

    def sign(self, claims: dict[str, Any], *, kid: str = "rsa-1", alg: str = "RS256") -> str:
        key = self.ec_key if alg.startswith("ES") else self.rsa_key
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})

    def public_pem(self) -> bytes:
        return self.rsa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def hs256_with_public_key(self, claims: dict[str, Any]) -> str:
        """The classic key-confusion forgery: HS256 keyed with the RSA public key's PEM."""
        head = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
        body = b64url(json.dumps(claims).encode())
        mac = hmac.new(self.public_pem(), f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{b64url(mac)}"

    @staticmethod
    def unsigned(claims: dict[str, Any]) -> str:
        head = b64url(json.dumps({"alg": "none", "typ": "JWT", "kid": "rsa-1"}).encode())
        return f"{head}.{b64url(json.dumps(claims).encode())}."

    @staticmethod
    def tampered(token: str, **change: Any) -> str:
        head, body, signature = token.split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        claims.update(change)
        return f"{head}.{b64url(json.dumps(claims).encode())}.{signature}"


def _handler(idp: StandInIdP) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, body: Any, raw: bytes | None = None, cache_control: str | None = None) -> None:
            data = raw if raw is not None else json.dumps(body).encode()
            with contextlib.suppress(ConnectionError):  # a client that timed out has gone
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if cache_control is not None:
                    self.send_header("Cache-Control", cache_control)
                if cache_control is not None and idp.jwks_age is not None:
                    self.send_header("Age", idp.jwks_age)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def do_GET(self) -> None:
            oauth = f"/.well-known/oauth-authorization-server{idp.path}"
            oidc = f"{idp.path}/.well-known/openid-configuration"
            if (self.path == oauth and not idp.oidc_only) or self.path == oidc:
                idp.counts["metadata"] += 1
                self._json(200, idp.metadata())
            elif self.path == "/jwks":
                idp.counts["jwks"] += 1
                self._jwks()
            else:
                self._json(404, {"error": "not_found"})

        def _jwks(self) -> None:
            mode = idp.jwks_mode
            if mode == "slow":
                time.sleep(idp.slow_seconds)
            if mode == "garbage":
                self._json(200, None, raw=b"<html>maintenance</html>")
            elif mode == "empty":
                self._json(200, {"keys": "none"})
            elif mode == "down":
                self._json(500, {"error": "down"})
            else:
                self._json(200, idp.jwks(), cache_control=idp.jwks_cache_control)

        def do_POST(self) -> None:
            if self.path != "/introspect":
                self._json(404, {"error": "not_found"})
                return
            length = int(self.headers.get("Content-Length", "0"))
            form = parse_qs(self.rfile.read(length).decode())
            idp.counts["introspect"] += 1
            idp.seen_auth.append(self.headers.get("Authorization", ""))
            expected = "Basic " + base64.b64encode(b"mcp-resource-server:s3cret%3Awith%2Fodd%26chars").decode()
            if self.headers.get("Authorization") != expected:
                self._json(401, {"error": "invalid_client"})
                return
            if idp.introspection_mode == "slow":
                time.sleep(idp.slow_seconds)
            token = form.get("token", [""])[0]
            self._json(200, idp.introspection.get(token, {"active": False}))

    return Handler


@contextlib.contextmanager
def standin_idp(**options: Any) -> Iterator[StandInIdP]:
    """A :class:`StandInIdP` served on a free loopback port until the block ends."""
    idp = StandInIdP(**options)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(idp))
    httpd.daemon_threads = True
    idp.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
