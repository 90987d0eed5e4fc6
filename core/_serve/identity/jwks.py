"""One issuer's signing keys (a JWKS, RFC 7517 §5), cached by ``kid``.

A ``kid`` not in the cache refetches the set, at most once per ``min_refresh`` seconds however
many requests ask (concurrent askers wait for the one fetch in flight): a flood of made-up
``kid``s costs the identity provider one request per interval. A fetch that fails keeps the keys
already cached, which go on verifying tokens.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from jwt import PyJWK
from jwt.exceptions import PyJWTError

from mcp_providers._serve.identity.errors import IdentityUnavailable, log
from mcp_providers._serve.identity.fetch import FetchFailed, get_json, get_json_sync
from mcp_providers.config import ASYMMETRIC_ALGORITHMS

MAX_KEYS = 100
"""Most keys kept from one JWKS (identity providers publish a handful)."""
_KEY_TYPES = {"RSA", "EC", "OKP"}


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One usable key of a JWKS: ``entry`` as published (RFC 7517 members such as ``kty``, ``crv``,
    ``alg``), and ``jwk``, PyJWT's key made from it. The entry is kept here because PyJWT offers it
    only as a private attribute."""

    entry: Mapping[str, Any]
    jwk: PyJWK


def parse_jwks(document: dict[str, Any]) -> dict[str, SigningKey]:
    """The usable signing keys of a JWKS by ``kid``: public keys of an asymmetric type only.

    Keys without a ``kid``, of another ``use``, symmetric (``oct``) or with an HMAC or unknown
    ``alg`` are skipped: a symmetric key must never verify a token.

    :raises FetchFailed: ``document`` has no ``keys`` list, or not one usable key.
    """
    entries = document.get("keys")
    if not isinstance(entries, list):
        raise FetchFailed("the JWKS has no 'keys' list")
    keys: dict[str, SigningKey] = {}
    for entry in entries[:MAX_KEYS]:
        if not isinstance(entry, dict) or not isinstance(entry.get("kid"), str) or not entry["kid"]:
            continue
        if entry.get("kty") not in _KEY_TYPES or entry.get("use", "sig") != "sig" or "d" in entry:
            continue  # "d": a private key published by mistake is not used either
        if "alg" in entry and entry["alg"] not in ASYMMETRIC_ALGORITHMS:
            continue
        try:
            keys[entry["kid"]] = SigningKey(dict(entry), PyJWK(entry))
        except PyJWTError:
            continue
    if not keys:
        raise FetchFailed("the JWKS holds no usable public signing key")
    return keys


class KeySet:
    """The cached JWKS at ``url`` (see the module docstring)."""

    def __init__(self, url: str, *, min_refresh: float, timeout: float) -> None:
        self.url = url
        self.min_refresh = min_refresh
        self.timeout = timeout
        self.fetches = 0
        """Fetches attempted since start (start-up included)."""
        self.generation = 0
        """Bumped whenever a fetch changes the keys (tokens verified before are checked again)."""
        self._keys: dict[str, SigningKey] = {}
        self._attempted = float("-inf")
        self._healthy = False
        self._inflight: anyio.Event | None = None

    def load_now(self) -> None:
        """Fetch the keys before serving (start-up).

        :raises FetchFailed: unreachable, or not a usable JWKS.
        """
        self.fetches += 1
        self._attempted = time.monotonic()
        self._keys = parse_jwks(get_json_sync(self.url, self.timeout))
        self._healthy = True

    async def key(self, kid: str) -> SigningKey | None:
        """The key named ``kid``, refetching the set if it is unknown and the interval allows.

        :returns: ``None`` when the identity provider's current set has no such key.
        :raises IdentityUnavailable: the key is unknown and the last fetch failed, so the token
            cannot be checked now.
        """
        found = self._keys.get(kid)
        if found is not None:
            return found
        await self._refresh()
        found = self._keys.get(kid)
        if found is None and not self._healthy:
            wait = self._attempted + self.min_refresh - time.monotonic()
            # The message reaches unauthenticated callers: it names no internal address.
            raise IdentityUnavailable("the identity provider's keys could not be fetched", retry_after=wait)
        return found

    async def _refresh(self) -> None:
        if self._inflight is not None:
            with anyio.move_on_after(self.timeout + 1):
                await self._inflight.wait()
            return
        if time.monotonic() - self._attempted < self.min_refresh:
            return
        self._attempted = time.monotonic()
        self._inflight = anyio.Event()
        self.fetches += 1
        try:
            keys = parse_jwks(await get_json(self.url, self.timeout))
            if {k: v.entry for k, v in keys.items()} != {k: v.entry for k, v in self._keys.items()}:
                self.generation += 1
            self._keys, self._healthy = keys, True
        except FetchFailed as exc:
            self._healthy = False
            log.error("JWKS refresh failed, keeping %d cached key(s): %s", len(self._keys), exc)
        finally:
            self._attempted = time.monotonic()  # the interval starts when the fetch ends (a slow one too)
            self._inflight.set()
            self._inflight = None
