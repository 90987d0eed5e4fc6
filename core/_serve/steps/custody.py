"""Custody receipts: who read or ran what, under which permission, how big, how fresh, what changed.

Every ``resources/read``, ``tools/call`` and ``prompts/get`` result carries one receipt in its
``_meta`` under :data:`~mcp_providers.models.RECEIPT_KEY`. The digest is of the exact bytes the client received (the
UTF-8 of ``text``, or the decoded ``blob``), so a client can recompute and compare it. A receipt
never contains content, secrets or tool argument values (only their digest).

Shape (JSON)::

    {
      "actor": "application",              # "application" for reads, "model" for tool calls
      "operation": "resources/read",       # or "tools/call"
      "subject": "local",                  # who asked (the verified token's subject on HTTP)
      "issuer": "local",                   # who vouches for the subject (the token's iss; null: anonymous)
      "clientId": null,                    # the OAuth client the caller used, when known
      "decision": "allowed",               # the authorize hook's verdict
      "provider": "ssg-catalog", "plugin": "ssg_catalog",
      "distribution": "mcp-providers", "version": "0.1.0",
      "uri": "documcp://ssgs/hugo",
      "template": "documcp://ssgs/{ssg}", "params": {"ssg": "hugo"},   # templated reads only
      "mimeType": "application/json", "bytes": 812, "sha256": "9f2c...",
      "retrievedAt": "2026-11-30T08:00:00Z",
      "freshness": {"kind": "static"},
      "sideEffects": "none",
      "truncation": null,                  # or {"originalBytes", "servedBytes", "reason"}
      "transforms": [],                    # e.g. ["embed-over-budget->resource_link documcp://..."]
      "upstream": {"name": "servicenow:prod", "subject": "alice", "grant": "jwt_bearer"}
    }

``upstream`` is there only when the provider used a credential from the broker
(``request.credential(upstream)``): the upstream identity that served the content, never the token;
or said which upstream served it (:func:`~mcp_providers.credentials.record_upstream`: an upstream
MCP server's ``{"name", "transport", "serverInfo", "grant", "uri"}``); a request that used several
upstream identities also has ``upstreams``, the list of them all.

For ``tools/call`` and ``prompts/get`` results, ``sha256`` and ``bytes`` are of the canonical JSON
(sorted keys, no spaces) of every content block in order together with ``structuredContent``,
and ``blocks`` lists each block (``type``, ``uri`` when it names one, ``bytes``, ``sha256``), so
two results differing in any block, embedded resource, media or link get different receipts.

The ideas come from the "context custody" seed (``shared/seeds/002_*``): keep initiator, executor,
identity, permission, size, freshness and side effects together for every transfer.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from mcp.server import CacheHint

from mcp_providers.identity import ANONYMOUS, LOCAL, Principal
from mcp_providers.models import Effects, Freshness

STATIC_TTL_MS = 3_600_000
"""Cache lifetime hinted for static content: one hour. It never changes while the distribution's
version stays the same, but clients should still pick up an upgrade."""


def digest(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


log = logging.getLogger("mcp_providers.server")
_random_key: bytes | None = None
_warned = False
_key_lock = threading.Lock()

AUDIT_KEY_FIX = "export {variable}=\"$(python3 -c 'import secrets; print(secrets.token_hex(32))')\""
"""The one shell line that sets the audit key (32 random bytes, hex)."""


def audit_key(env_name: str | None, environ: Mapping[str, str] | None = None, *, warn: bool = False) -> bytes:
    """The key of ``argumentsHmac``: the value of the environment variable ``env_name``.

    When it is unset (or ``env_name`` is ``None``), a random key made once per process: digests are
    then comparable within this process only (not across restarts or replicas). With ``warn``
    (an audit log or a key variable is configured, so someone means to compare digests) one
    warning says so, once per process, with the line that fixes it.
    """
    environ = os.environ if environ is None else environ
    value = environ.get(env_name) if env_name else None
    if value:
        return value.encode()
    global _random_key, _warned
    with _key_lock:
        if _random_key is None:
            _random_key = secrets.token_bytes(32)
        if warn and not _warned:
            _warned = True
            variable = env_name or "MCP_PROVIDERS_AUDIT_KEY"
            log.warning(
                "no audit key: $%s is unset, so argumentsHmac in the audit log and receipts is keyed with a random "
                "per-process key (not comparable across restarts or replicas); fix it with this line before "
                "starting the server: %s",
                variable,
                AUDIT_KEY_FIX.format(variable=variable),
            )
        return _random_key


def upstream_fields(used: list[dict[str, str]]) -> dict[str, Any]:
    """What a receipt and an audit line say of the upstream identities a request used (each
    ``{"name", "subject", "grant"}``, never a token): ``{"upstream": <the first>}``, plus
    ``"upstreams": [<all, in order of first use>]`` when there were several."""
    if not used:
        return {}
    fields: dict[str, Any] = {"upstream": dict(used[0])}
    if len(used) > 1:
        fields["upstreams"] = [dict(u) for u in used]
    return fields


def arguments_hmac(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` (the canonical JSON of a tool's arguments) under ``key``, in hex.

    Unlike a plain SHA-256, it cannot be reversed by hashing likely arguments without the key.
    """
    return hmac.new(key, data, hashlib.sha256).hexdigest()


_second: tuple[int, str] = (-1, "")
"""The last whole second :func:`now_utc` formatted, and its ``YYYY-MM-DDTHH:MM:SS`` text."""
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))
"""``.000Z`` to ``.999Z``: concatenating one costs less than formatting it."""


def now_utc() -> str:
    """The current time as ISO 8601 UTC with a ``Z`` suffix, to the millisecond (truncated).

    The date and time of day are formatted once per second; a call adds the milliseconds.
    """
    global _second
    ms = time.time_ns() // 1_000_000
    seconds, millis = divmod(ms, 1000)
    cached = _second
    if cached[0] != seconds:
        cached = _second = (seconds, datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return cached[1] + _MILLIS[millis]


LIST_CACHE_HINT = CacheHint(ttl_ms=0, scope="private")
"""The hint of every list (resources, templates, tools, prompts): stale at once and never shared,
since the gate filters what each caller sees (and a reload changes it)."""


def shareable(principal: Principal, *, policy: bool, authenticated: bool) -> bool:
    """Whether a result may be marked ``cacheScope: "public"``: served alike to every caller.

    Only when no ``authorize`` hook is in force (``policy``; the built-in policy plugin counts even
    without rules), ``[server.auth]`` is off (``authenticated``) and the caller is nobody in
    particular: exactly :data:`~mcp_providers.identity.ANONYMOUS` (HTTP without authentication) or
    :data:`~mcp_providers.identity.LOCAL` (stdio's one account), with no client, scope, group or
    claim. Otherwise a shared cache (SEP-2549 ``share_public``) could serve one caller's answer,
    and its receipt naming that caller, to another the policy would refuse (round 4 item 2), or
    to another caller an embedder named (``serving_as``) without an issuer.
    """
    if policy or authenticated:
        return False
    return principal in (ANONYMOUS, LOCAL)


def cache_hint(freshness: Freshness, *, shareable: bool) -> CacheHint:
    """The 2026-07-28 cache hint (``ttlMs``, ``cacheScope``, SEP-2549) for a declared freshness.

    - ``static`` -> :data:`STATIC_TTL_MS`, ``public`` if ``shareable`` (see :func:`shareable`),
      else ``private``;
    - ``max_age`` -> ``max_age_seconds`` in ms, ``private`` (content may depend on the caller);
    - ``live`` and ``unspecified`` -> ``0`` (stale at once), ``private``.
    """
    ttl_ms, scope = cache_hint_parts(freshness, shareable=shareable)
    return CacheHint(ttl_ms=ttl_ms, scope=scope)


@functools.lru_cache(maxsize=1024)
def cache_hint_parts(freshness: Freshness, *, shareable: bool = False) -> tuple[int, Literal["public", "private"]]:
    """:func:`cache_hint` as ``(ttlMs, cacheScope)``, worked out once per declared freshness;
    ``private`` unless told the result is ``shareable``."""
    if freshness.kind == "static":
        return STATIC_TTL_MS, "public" if shareable else "private"
    if freshness.kind == "max_age" and freshness.max_age_seconds is not None:
        return int(freshness.max_age_seconds * 1000), "private"
    return 0, "private"


@functools.lru_cache(maxsize=1024)
def _freshness_json(freshness: Freshness) -> Mapping[str, Any]:
    # Declarations are frozen and few: dump each once, not on every read.
    return freshness.model_dump(exclude_none=True)


ReadReceiptParts = tuple[dict[str, Any], bool, Mapping[str, Any]]
"""What :func:`read_receipt` needs of one declaration; see :func:`read_receipt_parts`."""


def read_receipt_parts(
    provider: str,
    plugin: str,
    distribution: str | None,
    version: str | None,
    template: str | None,
    freshness: Freshness,
) -> ReadReceiptParts:
    """What every ``resources/read`` receipt of one declaration shares, worked out once for
    :func:`read_receipt`: a blank receipt holding every key in order (the per-read ones empty),
    whether the declaration is a template (so the receipt has ``params``) and the freshness block."""
    blank: dict[str, Any] = {
        "actor": "application",
        "operation": "resources/read",
        "subject": None,
        "issuer": None,
        "clientId": None,
        "decision": "allowed",
        "provider": provider,
        "plugin": plugin,
        "distribution": distribution,
        "version": version,
        "uri": None,
    }
    if template is not None:
        blank.update(template=template, params=None)
    blank.update(mimeType=None, bytes=0, sha256="", retrievedAt="", freshness=None, sideEffects="none")
    blank.update(truncation=None, transforms=None)
    return blank, template is not None, _freshness_json(freshness)


def caller_receipt(parts: ReadReceiptParts, principal: Principal, uri: str) -> dict[str, Any]:
    """The blank receipt of ``parts`` with the caller's keys (``subject``, ``issuer``,
    ``clientId``) and ``uri`` filled: what every receipt of one caller's reads of one URI shares
    (kept per fixed URI by the read path; pass it to :func:`read_receipt` as ``filled``)."""
    out = parts[0].copy()  # assigning a key it has keeps the key's place
    out["subject"] = principal.subject
    out["issuer"] = principal.issuer
    out["clientId"] = principal.client_id
    out["uri"] = uri
    return out


def read_receipt(
    parts: ReadReceiptParts,
    *,
    principal: Principal,
    uri: str,
    params: Mapping[str, str],
    size: int,
    sha256: str,
    mime_type: str | None,
    truncation: Mapping[str, Any] | None,
    extra: Mapping[str, Any] | None,
    as_of: datetime | None,
    filled: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`receipt` of a ``resources/read`` (actor ``application``, no side effects, no
    transforms), with the per-declaration ``parts`` from :func:`read_receipt_parts`: the same dict,
    key for key and in the same order, for less work per read. ``filled``: what
    :func:`caller_receipt` made of ``parts`` for this ``principal`` and ``uri``, if kept."""
    _, templated, freshness = parts
    out = caller_receipt(parts, principal, uri) if filled is None else filled.copy()
    if templated:
        out["params"] = dict(params)
    out["mimeType"] = mime_type
    out["bytes"] = size
    out["sha256"] = sha256
    out["retrievedAt"] = now_utc()
    out["freshness"] = dict(freshness)
    if truncation:
        out["truncation"] = dict(truncation)
    out["transforms"] = []
    if as_of is not None:
        out["asOf"] = as_of.isoformat()
    if extra:
        out.update(extra)
    return out


def receipt(
    *,
    actor: Literal["application", "model", "user"],
    operation: str,
    principal: Principal,
    provider: str,
    plugin: str,
    distribution: str | None,
    version: str | None,
    data: bytes,
    mime_type: str | None = None,
    uri: str | None = None,
    template: str | None = None,
    params: Mapping[str, str] | None = None,
    freshness: Freshness | None = None,
    side_effects: Effects = "none",
    truncation: Mapping[str, Any] | None = None,
    transforms: list[str] | None = None,
    extra: Mapping[str, Any] | None = None,
    as_of: datetime | None = None,
    blocks: list[dict[str, Any]] | None = None,
    sha256: str | None = None,
) -> dict[str, Any]:
    """Build one receipt (a JSON-ready dict) for the bytes ``data`` the client receives
    (``sha256``: their digest, when the caller already knows it)."""
    out: dict[str, Any] = {
        "actor": actor,
        "operation": operation,
        **principal.custody(),
        "decision": "allowed",
        "provider": provider,
        "plugin": plugin,
        "distribution": distribution,
        "version": version,
    }
    if uri is not None:
        out["uri"] = uri
    if template is not None:
        out["template"] = template
        out["params"] = dict(params or {})
    out.update(
        {
            "mimeType": mime_type,
            "bytes": len(data),
            "sha256": sha256 if sha256 is not None else digest(data),
            "retrievedAt": now_utc(),
            "freshness": dict(_freshness_json(freshness)) if freshness else None,
            "sideEffects": side_effects,
            "truncation": dict(truncation) if truncation else None,
            "transforms": list(transforms or []),
        }
    )
    if as_of is not None:
        out["asOf"] = as_of.isoformat()
    if blocks is not None:
        out["blocks"] = blocks
    if extra:
        out.update(extra)
    return out
