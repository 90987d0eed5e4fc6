"""The ``requestState`` of MCP 2026-07-28 multi-round-trip tool calls (SEP-2322), sealed and checked.

On a 2026-07-28 session a tool that asks for input (``ToolCall.elicit``/``sample``) ends its call
with an ``InputRequiredResult``; the client answers and retries the same ``tools/call`` with
``inputResponses`` and the ``requestState`` it was given, and the tool runs again from the start
with its questions answered (:mod:`mcp_providers._serve.methods.rounds`). The state is what
carries the answers of earlier rounds, so a client must not be able to make one up.

Sealed with the SDK's own codec (:class:`mcp.server.request_state.AESGCMRequestStateCodec`:
AES-256-GCM under a key derived with HKDF-SHA256, so the client can neither read nor alter it);
the claims are this module's: ::

    {"v": 1, "iat": <unix s>, "exp": <unix s>, "jti": <random id>,
     "sub": <sha256 of the caller's Principal.share_key>, "tool": <name>, "args": <sha256 of the arguments>,
     "asked": {<input key>: {"method": <input request method>, "ask": <sha256 of the request>}},
     "answers": {<input key>: {"method": ..., "ask": ..., "response": <the client's wire response>}}}

:meth:`RequestStates.open` refuses (:class:`~mcp_providers.errors.InvalidParams`, -32602, with
``data.rule`` ``request-state-<reason>``; nothing of the state or a key in the message) a state
that is malformed, altered or sealed under another key (``forged``), past its ``exp``
(``expired``), minted for another caller or another grant of the same one (another client, other
scopes, groups or selected claims: ``other-subject``) or another tool or arguments
(``other-request``), or already used once (``replayed``: a bounded in-process set of used ids,
shared by every composition of the process so a reload does not forget it). Replicas refuse each
other's states unless they share the key (``[server] request_state_key_env``); the used-id set is
per process, so a state could be replayed once against each replica of a cluster.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

from mcp_providers._holders import Frozen
from mcp_providers.errors import ConfigError, InvalidParams
from mcp_providers.identity import Principal

VERSION: Final = 1
"""Version of the claims layout (``v``)."""
MIN_KEY_BYTES: Final = 32
"""Shortest key accepted from the environment (the SDK codec's own floor)."""
MAX_USED: Final = 65_536
"""Used state ids remembered per process; past it the oldest (closest to expiry) are forgotten."""
KEY_FIX: Final = "export {variable}=$(python -c 'import secrets; print(secrets.token_hex(32))')"
"""The line that makes a key (``{variable}``: the environment variable)."""


def clock() -> float:
    """Unix time in seconds (a module function, so a test can move it)."""
    return time.time()


def digest(value: Any) -> str:
    """SHA-256 (hex) of ``value``'s canonical JSON (sorted keys, no spaces)."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Answer(Frozen):
    """One answered input request: its method (``elicitation/create``, ``sampling/createMessage``),
    the digest of what was asked (:func:`digest` of the wire request) and the client's wire response."""

    __slots__ = ("ask", "method", "response")

    method: str
    ask: str
    response: Mapping[str, Any]

    def __init__(self, method: str, ask: str, response: Mapping[str, Any]) -> None:
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "ask", ask)
        object.__setattr__(self, "response", response)


class _Used:
    """The ids of states already opened once (bounded; thread-safe)."""

    def __init__(self, limit: int) -> None:
        self._ids: OrderedDict[str, float] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def first_use(self, jti: str, expires: float, now: float) -> bool:
        """Record ``jti``; ``False`` if it was recorded before (a replay)."""
        with self._lock:
            if jti in self._ids:
                return False
            while self._ids and next(iter(self._ids.values())) <= now:
                self._ids.popitem(last=False)  # expired ones are refused by exp anyway
            while len(self._ids) >= self._limit:
                self._ids.popitem(last=False)
            self._ids[jti] = expires
            return True


_used = _Used(MAX_USED)
_process_key: bytes | None = None
_key_lock = threading.Lock()


def state_key(env_name: str | None, environ: Mapping[str, str] | None = None) -> bytes:
    """The sealing key: the value of ``$env_name``, else a random key made once per process.

    :raises ConfigError: the variable is set but shorter than :data:`MIN_KEY_BYTES` bytes (the
        message names the variable and the fix, never the value).
    """
    environ = os.environ if environ is None else environ
    value = environ.get(env_name) if env_name else None
    if value:
        key = value.encode()
        if len(key) < MIN_KEY_BYTES:
            raise ConfigError(
                f"${env_name} holds {len(key)} bytes; a requestState key needs at least {MIN_KEY_BYTES} bytes of "
                f"secret randomness: {KEY_FIX.format(variable=env_name)}"
            )
        return key
    global _process_key
    with _key_lock:
        if _process_key is None:
            _process_key = secrets.token_bytes(MIN_KEY_BYTES)
        return _process_key


def _refuse(reason: str, message: str) -> InvalidParams:
    return InvalidParams(f"requestState refused: {message}", data={"rule": f"request-state-{reason}", "reason": reason})


class RequestStates:
    """Seals and opens the ``requestState`` of one server's tool calls (see the module docstring).

    :param key: at least 32 bytes (:func:`state_key`).
    :param ttl: seconds a state stays valid after it is sealed.
    """

    def __init__(self, key: bytes, ttl: float) -> None:
        self._key = key
        self._sealer: AESGCMRequestStateCodec | None = None
        self.ttl = ttl

    @property
    def _codec(self) -> AESGCMRequestStateCodec:
        # Made at the first state sealed or opened, not at start-up: deriving its key is the
        # process's first use of OpenSSL (about 1 ms), and most servers never ask for input.
        if self._sealer is None:
            self._sealer = AESGCMRequestStateCodec([self._key])
        return self._sealer

    def seal(
        self,
        principal: Principal,
        tool: str,
        args: str,
        asked: Mapping[str, tuple[str, str]],
        answers: Mapping[str, Answer],
    ) -> str:
        """A fresh state for the next round of ``tool`` called with arguments digest ``args``.

        :param asked: input key -> ``(method, digest of the request)`` asked this round.
        :param answers: input key -> :class:`Answer`, everything answered in earlier rounds.
        :returns: the opaque token (``v1.`` + base64url), valid for :attr:`ttl` seconds.
        """
        now = clock()
        claims = {
            "v": VERSION,
            "iat": now,
            "exp": now + self.ttl,
            "jti": secrets.token_urlsafe(16),
            "sub": digest(principal.share_key),
            "tool": tool,
            "args": args,
            "asked": {k: {"method": method, "ask": ask} for k, (method, ask) in asked.items()},
            "answers": {
                k: {"method": a.method, "ask": a.ask, "response": dict(a.response)} for k, a in answers.items()
            },
        }
        return self._codec.seal(json.dumps(claims, separators=(",", ":")).encode())

    def open(
        self, token: str, principal: Principal, tool: str, args: str, responses: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, Answer]:
        """The answers a retry carries: the state's earlier answers plus ``responses`` (wire dicts
        keyed by input key) to what the state says was asked; responses to anything else are ignored.

        :raises InvalidParams: the state is forged, expired, another caller's or another call's, or
            used before (``data.rule`` says which; see the module docstring).
        """
        claims = self._claims(token)
        now = clock()
        if not now < claims["exp"]:
            raise _refuse("expired", f"it has expired (a state is valid for {self.ttl:g} s); {_START_OVER}")
        if claims["sub"] != digest(principal.share_key):  # the whole grant: client, scopes, groups, claims
            raise _refuse("other-subject", f"it was issued to another caller; {_START_OVER}")
        if claims["tool"] != tool or claims["args"] != args:
            raise _refuse(
                "other-request", "it was issued for another tool or other arguments; retry the same tools/call"
            )
        if not _used.first_use(claims["jti"], claims["exp"], now):
            raise _refuse(
                "replayed", "it was used already (each state is good for one retry); retry with the "
                f"requestState of the latest answer, or {_START_OVER}",
            )  # fmt: skip
        answers = {k: Answer(v["method"], v["ask"], v["response"]) for k, v in claims["answers"].items()}
        for key, asked in claims["asked"].items():
            if key in responses:
                answers[key] = Answer(asked["method"], asked["ask"], responses[key])
        return answers

    def _claims(self, token: str) -> dict[str, Any]:
        try:
            claims = json.loads(self._codec.unseal(token))
            if claims["v"] != VERSION:
                raise ValueError("claims version")
            for name, kind in _CLAIM_TYPES.items():
                if not isinstance(claims[name], kind):
                    raise ValueError(name)
            return dict(claims)
        except (InvalidRequestState, ValueError, KeyError, TypeError):
            raise _refuse("forged", f"it was not issued by this server ({_FORGED}); {_START_OVER}") from None


_CLAIM_TYPES: Final[dict[str, type | tuple[type, ...]]] = {
    "exp": (int, float),
    "jti": str,
    "sub": str,
    "tool": str,
    "args": str,
    "asked": dict,
    "answers": dict,
}
_FORGED = "malformed, altered or sealed under another key"
_START_OVER = "call the tool again without requestState and inputResponses to start over"
