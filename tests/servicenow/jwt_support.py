"""Keys and settings for the ``jwt_bearer`` tests (per-user access): one RSA key pair per session."""

from __future__ import annotations

import functools
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

OBO_CLIENT = "mcp-on-behalf"
OBO_SECRET = "obo-Cl1ent-S3cret-5d2a"
OBO_ENV = {"SN_TEST_OBO_SECRET": OBO_SECRET}
"""Plus ``SN_TEST_OBO_KEY`` (the private key PEM), set by :func:`obo_env`."""


@functools.cache
def key_pair() -> tuple[str, str]:
    """(private key PEM, public key PEM), RSA 2048, made once per test session."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()  # fmt: skip
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()  # fmt: skip
    return private, public


def obo_env() -> dict[str, str]:
    """The environment a ``jwt_bearer`` instance reads its client secret and private key from."""
    return {**OBO_ENV, "SN_TEST_OBO_KEY": key_pair()[0]}


def obo_auth(**overrides: Any) -> dict[str, Any]:
    return {"type": "jwt_bearer", "client_id": OBO_CLIENT, "client_secret_env": "SN_TEST_OBO_SECRET",
            "private_key_env": "SN_TEST_OBO_KEY", "user_claim": "email", **overrides}  # fmt: skip


def obo_instance(base_url: str, name: str = "corp", **overrides: Any) -> dict[str, Any]:
    """A ``jwt_bearer`` instance table for the emulator at ``base_url``."""
    auth = overrides.pop("auth", {})
    return {"name": name, "url": base_url, "description": "Per-user (emulated)", "auth": obo_auth(**auth),
            "timeout_seconds": 10, "live_poll": False, **overrides}  # fmt: skip
