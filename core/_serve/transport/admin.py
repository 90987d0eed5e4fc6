"""``POST /admin/reload``: a reload asked for over HTTP, by a token or a principal ``[server.admin]`` names.

The route sits beside ``/readyz``, never on the MCP path, and is off (404) without ``[server.admin]``.
A request needs ``Authorization: Bearer <token>``: either the token in ``[server.admin] token_env``
(compared in constant time), or one ``[server.auth]`` accepts, carrying its ``required_scopes``,
whose principal's subject ``[server.admin] subjects`` names. No token is 401, another token 403; both are audited
(operation ``admin/reload``), and so is the reload. The answer is the attempt as JSON
(:meth:`~mcp_providers._serve.reload.Attempt.as_dict`): 200 when applied or unchanged, 422 when it
failed and the old composition goes on serving. With ``?cluster=1`` a reload that did not fail is
announced to every other replica of the ``[cluster]`` (``"announced": true``), each of which
reloads its own config; ``"announced": false`` comes with a problem saying why (no ``[cluster]``,
Redis did not take it).

``/status`` and ``/status.json`` (:mod:`~mcp_providers._serve.transport.status`) sit behind the same
gate: :func:`admin_gate` makes it once, :func:`admit` is the bearer check both use.
"""

from __future__ import annotations

import hmac
import os
import time
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_providers._serve.identity.guard import asking_from
from mcp_providers._serve.reload import announce
from mcp_providers.config import AdminSettings
from mcp_providers.errors import ConfigError
from mcp_providers.identity import Principal, from_access_token

if TYPE_CHECKING:
    from mcp_providers._serve.identity import ResourceServer
    from mcp_providers._serve.reload import Reloader

PATH = "/admin/reload"
MIN_TOKEN_LENGTH = 32
"""Shortest admin token accepted, in characters (as for the static MCP tokens)."""


class AdminGate:
    """Who may reload: ``[server.admin]``'s token and subjects (see the module docstring).

    :raises ConfigError: ``token_env`` is unset or shorter than :data:`MIN_TOKEN_LENGTH`, or
        ``subjects`` are named without ``[server.auth]`` to verify their tokens, or without
        ``issuers`` where it trusts more than one.
    """

    def __init__(self, settings: AdminSettings, auth: ResourceServer | None) -> None:
        self._token: bytes | None = None
        if settings.token_env is not None:
            value = os.environ.get(settings.token_env, "")
            if len(value) < MIN_TOKEN_LENGTH:
                state = "is not set" if not value else f"holds {len(value)} characters"
                raise ConfigError(
                    f"[server.admin] token_env: ${settings.token_env} {state}; put a random token of at least "
                    f"{MIN_TOKEN_LENGTH} characters in it (e.g. from `openssl rand -hex 32`)"
                )
            self._token = value.encode()
        if settings.subjects and auth is None:
            raise ConfigError(
                "[server.admin] subjects need [server.auth] to verify their tokens; add it, or use token_env"
            )
        trusted = auth.authorization_servers if auth is not None else ()
        if settings.subjects and len(trusted) > 1 and not settings.issuers:
            raise ConfigError(
                f"[server.admin] subjects: [server.auth] trusts {len(trusted)} issuers, and a subject is unique "
                "only within its issuer: name the admins' issuers in [server.admin] issuers (e.g. "
                f"issuers = [{trusted[0]!r}])"
            )
        self._subjects = frozenset(settings.subjects)
        self._issuers = frozenset(settings.issuers)
        self._auth = auth

    async def who(self, token: str) -> Principal | None:
        """The principal ``token`` stands for if it may reload, else ``None``."""
        principal, admitted = await self.identify(token)
        return principal if admitted else None

    async def identify(self, token: str) -> tuple[Principal | None, bool]:
        """``(who token stands for, whether it may reload)``: the principal of the admin token or of a
        token ``[server.auth]`` verifies (``None`` when neither), so a refusal names its caller."""
        if self._token is not None and hmac.compare_digest(token.encode(), self._token):
            return Principal("admin-token", issuer="mcp-providers"), True
        if self._auth is None:
            return None, False
        try:
            access = await self._auth.verifier.verify_token(token)
        except Exception:  # unreachable issuer and the like: refused like an unknown token
            return None, False
        if access is None or (access.expires_at is not None and access.expires_at < int(time.time())):
            return None, False
        principal = from_access_token(access)
        if any(scope not in access.scopes for scope in self._auth.required_scopes):
            return principal, False  # [server.auth] required_scopes bind every use of its tokens, an admin's too
        admitted = principal.subject in self._subjects and (not self._issuers or principal.issuer in self._issuers)
        return principal, admitted


def admin_gate(settings: AdminSettings | None, auth: ResourceServer | None) -> AdminGate | None:
    """The gate of ``[server.admin]``, or ``None`` when the table is absent (the routes answer 404).

    :raises ConfigError: as :class:`AdminGate`.
    """
    return AdminGate(settings, auth) if settings is not None else None


async def admit(gate: AdminGate, request: Request, audit: Any, operation: str, what: str) -> Principal | Response:
    """The principal ``request``'s bearer token stands for, or the refusal to send: 401 without a
    bearer token, 403 with one ``gate`` does not accept (``what`` names the action, e.g.
    ``"reload"``). Refusals are audited under ``operation`` with the request's path as target."""
    path = request.url.path
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        _audit(audit, None, operation, path, "denied", "no bearer token")
        return JSONResponse({"error": "send Authorization: Bearer <admin token>"}, 401,
                            headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
    with asking_from(request.client.host if request.client else None):  # its budget of unknown tokens
        principal, admitted = await gate.identify(token.strip())
    if principal is None or not admitted:
        _audit(audit, principal, operation, path, "denied", "token not named by [server.admin]")
        return JSONResponse({"error": f"this token may not {what}: [server.admin] names it nowhere"}, 403)
    return principal


def admin_routes(
    reloader: Reloader, settings: AdminSettings | None, auth: ResourceServer | None, gate: AdminGate | None = None
) -> list[Route]:
    """``POST /admin/reload`` for ``reloader`` (404 when ``settings`` is ``None``); ``gate``, when
    given, is the one made of ``settings`` (:func:`admin_gate`), shared with ``/status``."""
    gate = gate if gate is not None else admin_gate(settings, auth)
    audit = reloader.composition.runtime.audit

    async def reload(request: Request) -> Response:
        if gate is None:
            return JSONResponse({"error": "reload over HTTP is off; add [server.admin] (docs/operations.md)"}, 404)
        principal = await admit(gate, request, audit, "admin/reload", "reload")
        if isinstance(principal, Response):
            return principal
        attempt = await reloader.reload("admin")
        _audit(audit, principal, "admin/reload", PATH, "allowed" if attempt.outcome != "failed" else "error",
               attempt.outcome)  # fmt: skip
        body = attempt.as_dict()
        if request.query_params.get("cluster") in ("1", "true") and attempt.outcome != "failed":
            try:
                body["announced"] = await announce(reloader)
            except Exception as exc:  # ClusterUnavailable: this replica reloaded, the others were not told
                body["announced"], body["problems"] = False, [f"not announced to the other replicas: {exc}"]
            if not body["announced"] and not body["problems"]:
                body["problems"] = ["not announced: this server has no [cluster], so there are no replicas to tell"]
        return JSONResponse(body, 200 if attempt.outcome != "failed" else 422)

    return [Route(PATH, reload, methods=["POST"])]


def _audit(audit: Any, principal: Principal | None, operation: str, target: str, decision: str, reason: str) -> None:
    if not audit.enabled and decision != "denied":  # denials are kept for /status even without sinks
        return
    who = principal.custody() if principal is not None else {"subject": "anonymous"}
    audit.write({"actor": "operator", **who, "operation": operation, "target": target,
                 "decision": decision, "reason": reason})  # fmt: skip
