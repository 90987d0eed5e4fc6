"""One issuer's signing keys (a JWKS, RFC 7517 §5), cached by ``kid`` for a bounded age.

A ``kid`` not in the cache refetches the set, at most once per ``min_refresh`` seconds however
many requests ask (concurrent askers wait for the one fetch in flight): a flood of made-up
``kid``s costs the identity provider one request per interval.

The set is trusted for its *age*: the JWKS answer's ``Cache-Control: max-age`` (RFC 9111 §5.2.2.1;
``no-store``/``no-cache`` read as 0) less its ``Age`` header (§4.2.3: a cache on the way held it),
held between ``min_refresh`` (the floor: no provider makes every request a fetch) and
:data:`MAX_AGE_SECONDS` (the ceiling, and the age of an answer that names none). Past it the next
token's check refetches the set (behind the same interval), so a key the identity provider withdraws
(rotated out after a compromise) stops verifying within the age.
A refetch that fails keeps the old set for :data:`GRACE_SECONDS` more, so a short outage of the
identity provider does not turn every caller away; past that grace every token is unavailable
(503, :class:`IdentityUnavailable`) until a fetch succeeds: a set nobody can confirm is never
trusted for ever (authorization never fails open).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from jwt import PyJWK
from jwt.exceptions import PyJWTError

from mcp_providers._serve.identity.errors import IdentityUnavailable, log
from mcp_providers._serve.identity.fetch import FetchFailed, fetched, fetched_sync
from mcp_providers.config import ASYMMETRIC_ALGORITHMS

MAX_KEYS = 100
"""Most keys kept from one JWKS (identity providers publish a handful)."""
MAX_AGE_SECONDS = 3600.0
"""The longest a fetched JWKS is trusted, in seconds (and its age when the answer names none):
how long a key withdrawn by the identity provider may still verify tokens."""
GRACE_SECONDS = 600.0
"""How long past its age a set is still used while refetching it fails, in seconds: ten minutes
ride out an identity provider's restart or a network blip; longer would let a withdrawn key
verify for as long as an attacker can keep the fetch failing."""
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)\"?\s*(?:,|$)", re.IGNORECASE)
_NO_STORE = re.compile(r"(?:^|,)\s*(?:no-store|no-cache)\s*(?:,|$)", re.IGNORECASE)
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


def max_age(cache_control: str | None, floor: float, age: str | None = None) -> float:
    """How long a JWKS answered with ``cache_control`` is trusted, in seconds: its ``max-age``
    less the answer's ``age`` header (RFC 9111 §4.2.3: how long a cache has held it; one that is
    not a number of seconds is not subtracted) (``no-store``/``no-cache``: 0), else
    :data:`MAX_AGE_SECONDS`, held within ``floor`` and :data:`MAX_AGE_SECONDS`."""
    said = MAX_AGE_SECONDS
    if cache_control and _NO_STORE.search(cache_control):
        said = 0.0
    elif cache_control and (found := _MAX_AGE.search(cache_control)):
        said = float(found[1])
        if age and age.strip().isdigit():
            said -= float(age.strip())
    return min(max(said, floor), MAX_AGE_SECONDS)


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
        self._fetched = float("-inf")
        """When the keys held were fetched (``time.monotonic``)."""
        self._age = MAX_AGE_SECONDS
        """How long after :attr:`_fetched` they are trusted (:func:`max_age`)."""
        self._attempted = float("-inf")
        self._healthy = False
        self._inflight: anyio.Event | None = None

    def load_now(self) -> None:
        """Fetch the keys before serving (start-up).

        :raises FetchFailed: unreachable, or not a usable JWKS.
        """
        self.fetches += 1
        self._attempted = time.monotonic()
        document, cache_control, age = fetched_sync(self.url, self.timeout)
        self._keys = parse_jwks(document)
        self._fetched, self._age = time.monotonic(), max_age(cache_control, self.min_refresh, age)
        self._healthy = True

    def stale(self) -> bool:
        """Whether the keys are past their age (the next token's check refetches them)."""
        return time.monotonic() - self._fetched >= self._age

    async def key(self, kid: str) -> SigningKey | None:
        """The key named ``kid``, refetching the set if it is unknown and the interval allows.

        :returns: ``None`` when the identity provider's current set has no such key.
        :raises IdentityUnavailable: the key is unknown and the last fetch failed, or the set is
            past its age and grace and cannot be fetched again, so the token cannot be checked now.
        """
        if self.stale():
            await self._refresh()
            if time.monotonic() - self._fetched >= self._age + GRACE_SECONDS:
                raise IdentityUnavailable("the identity provider's keys could not be fetched", retry_after=self._wait())
        found = self._keys.get(kid)
        if found is not None:
            return found
        await self._refresh()
        found = self._keys.get(kid)
        if found is None and not self._healthy:
            # The message reaches unauthenticated callers: it names no internal address.
            raise IdentityUnavailable("the identity provider's keys could not be fetched", retry_after=self._wait())
        return found

    def _wait(self) -> float:
        """Seconds until the next fetch may be tried."""
        return self._attempted + self.min_refresh - time.monotonic()

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
            document, cache_control, age = await fetched(self.url, self.timeout)
            keys = parse_jwks(document)
            if {k: v.entry for k, v in keys.items()} != {k: v.entry for k, v in self._keys.items()}:
                self.generation += 1
            self._keys, self._healthy = keys, True
            self._fetched, self._age = time.monotonic(), max_age(cache_control, self.min_refresh, age)
        except FetchFailed as exc:
            self._healthy = False
            log.error("JWKS refresh failed, keeping %d cached key(s): %s", len(self._keys), exc)
        finally:
            self._attempted = time.monotonic()  # the interval starts when the fetch ends (a slow one too)
            self._inflight.set()
            self._inflight = None
