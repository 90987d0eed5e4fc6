"""Per-user values in the cluster's Redis, sealed with the deployment key (round 4 item 14).

With ``[cluster]`` some per-user data sits in Redis: task records (a tool's whole result, the
questions it asked and the caller's answers), cached ``max_age`` reads, the events of resumable
streams, and keys naming a caller (rate-limit buckets). With the deployment key ``K`` (the one
that encrypts cached upstream credentials, ``[server.credentials] key_env``, default
``$MCP_PROVIDERS_CREDENTIALS_KEY``; :mod:`.credentials`), two more keys are derived with
HKDF-SHA256 (RFC 5869), one per purpose:

- names: ``HMAC-SHA256(names key, data)`` (RFC 2104) in hex, so a key naming a caller cannot be
  reversed by hashing guessed ``(issuer, subject)`` pairs;
- values: ``b"s1" + 12-byte random nonce + AES-256-GCM(plain)``, the value's own Redis key as
  associated data, so a value copied under another key does not open.

Without the key nothing can be sealed: task records are then refused under ``[cluster]`` (no
plaintext fallback), while the other values keep their older, unsealed form (see docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

from mcp_providers._serve.state.credentials import KEY_BYTES, deployment_key
from mcp_providers.config import CREDENTIALS_KEY_ENV, CredentialsSettings

MARK = b"s1"
"""The first bytes of a sealed value (its format's version)."""


def _derive(key: bytes, purpose: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=purpose).derive(key)


class Sealing:
    """Names and seals per-user values kept in Redis (module docstring).

    :param key: the deployment key (:data:`~mcp_providers._serve.state.credentials.KEY_BYTES` bytes).
    """

    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._names = _derive(key, b"mcp-providers cluster: names")
        self._aead = AESGCM(_derive(key, b"mcp-providers cluster: values"))

    def name(self, data: bytes) -> str:
        """The hex HMAC-SHA256 of ``data`` under the names key (64 characters)."""
        return hmac.new(self._names, data, hashlib.sha256).hexdigest()

    def seal(self, plain: bytes, where: str) -> bytes:
        """``plain`` encrypted for the Redis key ``where`` (module docstring)."""
        nonce = os.urandom(12)
        return MARK + nonce + self._aead.encrypt(nonce, plain, where.encode())

    def open(self, sealed: bytes, where: str) -> bytes | None:
        """The plain bytes of ``sealed`` kept at ``where``; ``None`` when it is not a value sealed
        there under this key (another deployment key, tampered, unsealed, or moved)."""
        from cryptography.exceptions import InvalidTag

        if not isinstance(sealed, bytes) or not sealed.startswith(MARK) or len(sealed) < len(MARK) + 12 + 16:
            return None
        nonce, body = sealed[len(MARK) : len(MARK) + 12], sealed[len(MARK) + 12 :]
        try:
            return self._aead.decrypt(nonce, body, where.encode())
        except InvalidTag:
            return None


def sealing_for(settings: CredentialsSettings | None, environ: Mapping[str, str] | None = None) -> Sealing | None:
    """The :class:`Sealing` of the deployment key in ``[server.credentials] key_env``; ``None`` when unset.

    :raises ConfigError: the variable holds something that is not a valid key.
    """
    key = deployment_key((settings.key_env if settings else None) or CREDENTIALS_KEY_ENV, environ)
    return Sealing(key) if key is not None else None
