"""The emulator's side of ServiceNow's OAuth JWT bearer grant: checking one assertion.

A real instance's "OAuth JWT API endpoint for external clients" holds a client id and secret, a
"JWT verifier map" (the client's uploaded public key) and a "user field" of ``sys_user``. A client
posts ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``, ``assertion=<JWT>``,
``client_id`` and ``client_secret`` to ``/oauth_token.do``; the instance checks the signature with
the public key, the claims (``iss`` the client id; ``aud`` the client id, or the token endpoint in
newer releases; ``exp``; ``iat``; ``jti`` once only when the JTI check is enabled) and maps ``sub``
to a ``sys_user`` record by the user field, then issues an access token for that user. Sources:
ServiceNow docs "JSON Web token bearer grant" and "Create an OAuth JWT API endpoint for external
clients" (facts collected in ``shared/reference/identity.md``).

:func:`check_assertion` does the JWT part with PyJWT (RS256 only, pinned, so ``alg: none`` and an
HMAC signed with the public key are refused); the emulator does the client check and user mapping.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt

__all__ = ["GRANT_TYPE", "AssertionRefused", "JwtBearerClient", "check_assertion"]

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
"""The ``grant_type`` of the JWT bearer grant (RFC 7523 §2.1)."""

LEEWAY_SECONDS = 5
"""Clock skew allowed on ``exp`` and ``iat`` (the emulator and its clients share one clock)."""


class AssertionRefused(Exception):
    """The grant is refused; ``str(exc)`` says which check failed and never holds a secret."""


@dataclass(frozen=True, slots=True)
class JwtBearerClient:
    """One OAuth JWT API endpoint of the instance.

    :param client_id: the endpoint's client id: the expected ``iss``, and one accepted ``aud``.
    :param client_secret: the secret the token request must carry beside the assertion.
    :param public_key_pem: the client's RSA public key (PEM), the verifier map's certificate.
    :param user_field: the ``sys_user`` field ``sub`` is matched against (``email``,
        ``user_name``, ``sys_id``, ...).
    """

    client_id: str
    client_secret: str = field(repr=False)
    public_key_pem: str = field(repr=False)
    user_field: str = "email"

    @classmethod
    def from_mapping(cls, config: Mapping[str, str]) -> JwtBearerClient:
        """Build it from ``{"client_id", "client_secret", "public_key_pem", "user_field"?}``.

        :raises ValueError: a required key is missing, or the public key is not an RSA PEM key.
        """
        missing = [k for k in ("client_id", "client_secret", "public_key_pem") if not config.get(k)]
        if missing:
            raise ValueError(f"jwt_bearer needs {', '.join(missing)} (and optionally user_field)")
        client = cls(config["client_id"], config["client_secret"], config["public_key_pem"],
                     config.get("user_field", "email"))  # fmt: skip
        try:
            jwt.algorithms.RSAAlgorithm(jwt.algorithms.RSAAlgorithm.SHA256).prepare_key(client.public_key_pem)
        except (ValueError, TypeError, jwt.InvalidKeyError) as exc:
            raise ValueError("jwt_bearer public_key_pem must be an RSA public key in PEM form") from exc
        return client

    def secret_matches(self, client_id: str, client_secret: str) -> bool:
        """Whether the token request's client id and secret are this endpoint's."""
        return client_id == self.client_id and secrets.compare_digest(
            self.client_secret.encode(), client_secret.encode()
        )


def check_assertion(assertion: str, client: JwtBearerClient, token_url: str, seen_jti: set[str]) -> dict[str, Any]:
    """Verify ``assertion`` for ``client`` and consume its ``jti``; return its claims.

    Checks, in order: the header's ``alg`` is ``RS256``; the RS256 signature against the public
    key; ``exp``, ``iat``, ``sub`` and ``jti`` present; ``exp`` not passed and ``iat`` not in the
    future (:data:`LEEWAY_SECONDS`); ``iss`` is the client id; ``aud`` is the client id or
    ``token_url``; ``jti`` not in ``seen_jti`` (it is added once every other check passed).

    :raises AssertionRefused: a check failed (the message names it).
    """
    try:
        header = jwt.get_unverified_header(assertion)
    except jwt.DecodeError as exc:
        raise AssertionRefused("assertion is not a JWT") from exc
    if header.get("alg") != "RS256":
        raise AssertionRefused(f"assertion alg {header.get('alg')!r} is not RS256")
    try:
        claims: dict[str, Any] = jwt.decode(
            assertion, client.public_key_pem, algorithms=["RS256"], audience=[client.client_id, token_url],
            issuer=client.client_id, leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "sub", "jti"]},  # iss and aud: required by issuer=/audience=
        )  # fmt: skip
    except jwt.InvalidSignatureError as exc:
        raise AssertionRefused("assertion signature does not verify with the client's public key") from exc
    except jwt.MissingRequiredClaimError as exc:
        raise AssertionRefused(f"assertion lacks the {exc.claim!r} claim") from exc
    except jwt.ExpiredSignatureError as exc:
        raise AssertionRefused("assertion has expired (exp is past)") from exc
    except jwt.ImmatureSignatureError as exc:
        raise AssertionRefused("assertion is not valid yet (iat or nbf in the future)") from exc
    except jwt.InvalidIssuerError as exc:
        raise AssertionRefused("assertion iss is not the client id") from exc
    except jwt.InvalidAudienceError as exc:
        raise AssertionRefused("assertion aud is neither the client id nor the token endpoint") from exc
    except jwt.PyJWTError as exc:
        raise AssertionRefused(f"assertion refused: {type(exc).__name__}") from exc
    jti = str(claims["jti"])
    if jti in seen_jti:
        raise AssertionRefused("assertion jti was already used (replay)")
    seen_jti.add(jti)
    return claims
