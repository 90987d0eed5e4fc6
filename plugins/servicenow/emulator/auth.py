"""Who is asking: the Table API's credentials, and the token endpoint ``POST /oauth_token.do``.

The Table API takes ``Authorization: Basic``, ``Authorization: Bearer <token>`` or ``x-sn-apikey``
(:func:`identify`). The token endpoint (:class:`TokenEndpoint`, form body) grants
``client_credentials``, ``password`` and ``refresh_token``, and with the emulator's ``jwt_bearer``
the JWT bearer grant (checks in :mod:`.jwt_bearer`), whose token acts as one ``sys_user``. Logged
principals and refusal details never hold a secret.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_providers.plugins.servicenow.emulator.faults import LoggedRequest, apply_fault
from mcp_providers.plugins.servicenow.emulator.jwt_bearer import (
    GRANT_TYPE,
    AssertionRefused,
    JwtBearerClient,
    check_assertion,
)
from mcp_providers.plugins.servicenow.emulator.store import Scope, Store, Token

if TYPE_CHECKING:
    from mcp_providers.plugins.servicenow.emulator.app import Emulator

__all__ = ["Caller", "TokenEndpoint", "identify"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request: the logged ``principal``, whether it authenticated, and for a user
    token (JWT bearer grant) the row-level ``scope``; ``None`` for service accounts (see all)."""

    principal: str | None
    ok: bool
    scope: Scope | None = None


def identify(emulator: Emulator, store: Store, request: Request) -> Caller:
    """The caller of a Table API request, from its ``Authorization`` or ``x-sn-apikey`` header."""
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(credentials, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return Caller("basic:malformed", False)
        expected = emulator.users.get(user)
        ok = expected is not None and secrets.compare_digest(expected.encode(), password.encode())
        return Caller(f"basic:{user}", ok)
    if scheme.lower() == "bearer":
        with store.lock:
            token = store.tokens.get(credentials)
            if token is None:
                return Caller("bearer:unknown", False)
            live = token.expires_at > time.monotonic()
            if token.acting is not None:
                scope = store.scope_of(token.acting)
                return Caller(f"jwt:{token.client_id}/{token.acting}", live and scope is not None, scope)
        who = f"oauth:{token.client_id}" + (f"/{token.user}" if token.user else "")
        return Caller(who, live)
    key = request.headers.get("x-sn-apikey")
    if key is not None:
        label = emulator.api_keys.get(key)
        return Caller(f"apikey:{label}", True) if label is not None else Caller("apikey:unknown", False)
    return Caller(None, False)


def _basic_client(request: Request) -> tuple[str, str] | None:
    """Client id and secret from an ``Authorization: Basic`` header, if one is sent."""
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    with contextlib.suppress(binascii.Error, UnicodeDecodeError):
        client_id, _, secret = base64.b64decode(credentials, validate=True).decode().partition(":")
        return client_id, secret
    return None


def _denied(error: str = "access_denied", status: int = 401, description: str | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description or error}, status_code=status)


class TokenEndpoint:
    """``POST /oauth_token.do`` of one emulator (``emulator`` for its settings, ``store`` for tokens)."""

    def __init__(self, emulator: Emulator, store: Store) -> None:
        self.emulator = emulator
        self.store = store

    async def answer(self, request: Request) -> Response:
        """Answer one token request (the Starlette endpoint)."""
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode(errors="replace")).items()}
        header_client = _basic_client(request)
        client_id = form.get("client_id") or (header_client[0] if header_client else "")
        client_secret = form.get("client_secret") or (header_client[1] if header_client else "")
        grant = form.get("grant_type", "")
        principal = f"oauth:{client_id}" if client_id else None
        safe_query = {"grant_type": grant}
        answered = await apply_fault(self.store.next_fault("oauth"))
        if answered is not None:
            self._log(request, principal, False, answered.status_code, safe_query, fault=True)
            return answered
        if grant == GRANT_TYPE:
            return self._jwt_grant(request, form, client_id, client_secret)
        expected = self.emulator.oauth_clients.get(client_id)
        if expected is None or not secrets.compare_digest(expected.encode(), client_secret.encode()):
            self._log(request, principal, False, 401, safe_query)
            return _denied()
        user, refused = self._grant_user(request, form, client_id, grant)
        if refused is not None:
            return refused
        return self._issue(request, form, client_id, grant, user)

    def _grant_user(self, request: Request, form: Mapping[str, str], client_id: str,
                    grant: str) -> tuple[str | None, Response | None]:  # fmt: skip
        """The user a grant acts for (``None`` for client credentials), or its refusal (logged)."""
        query = {"grant_type": grant}
        principal = f"oauth:{client_id}" if client_id else None
        if grant == "password":
            user = form.get("username", "")
            known = self.emulator.users.get(user)
            if known is None or not secrets.compare_digest(known.encode(), form.get("password", "").encode()):
                self._log(request, f"oauth:{client_id}/{user}", False, 401, query)
                return None, _denied()
            return user, None
        if grant == "refresh_token":
            with self.store.lock:
                owner = self.store.refresh_tokens.get(form.get("refresh_token", ""))
            if owner is None or owner[0] != client_id:
                self._log(request, principal, False, 401, query)
                return None, _denied("invalid_grant")
            return owner[1], None
        if grant != "client_credentials":
            self._log(request, principal, False, 400, query)
            return None, _denied("unsupported_grant_type", 400, grant)
        return None, None

    def _issue(self, request: Request, form: Mapping[str, str], client_id: str, grant: str,
               user: str | None) -> Response:  # fmt: skip
        """A new access token (and refresh token for the password and refresh grants)."""
        lifetime = self.emulator.token_lifetime_seconds
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24) if grant in ("password", "refresh_token") else None
        with self.store.lock:
            self.store.tokens[access] = Token(client_id, user, time.monotonic() + lifetime, refresh)
            if refresh is not None:
                self.store.refresh_tokens[refresh] = (client_id, user)
        who = f"oauth:{client_id}" + (f"/{user}" if user else "")
        self._log(request, who, True, 200, {"grant_type": grant})
        body: dict[str, Any] = {"access_token": access, "scope": form.get("scope", "useraccount"),
                                "token_type": "Bearer", "expires_in": lifetime}  # fmt: skip
        if refresh is not None:
            body["refresh_token"] = refresh
        return JSONResponse(body)

    def _jwt_grant(self, request: Request, form: Mapping[str, str], client_id: str, client_secret: str) -> Response:
        """The JWT bearer grant: client, assertion (:func:`check_assertion`), then the user mapping.

        Every refusal is a 401 ``{"error": "access_denied", ...}`` that does not say which check
        failed; the request log's ``detail`` does."""
        query = {"grant_type": GRANT_TYPE}

        def refuse(reason: str) -> Response:
            self._log(request, f"oauth:{client_id}" if client_id else None, False, 401, query, detail=reason)
            return _denied()

        client = self.emulator.jwt_bearer
        if client is None:
            return refuse("no OAuth JWT API endpoint is configured on this instance")
        if not client.secret_matches(client_id, client_secret):
            return refuse("client id or client secret is wrong")
        with self.store.lock:
            issued = self._issue_user_token(form.get("assertion", ""), client)
        if isinstance(issued, str):
            return refuse(issued)
        access, user_name = issued
        self._log(request, f"jwt:{client_id}/{user_name}", True, 200, query)
        return JSONResponse({"access_token": access, "token_type": "Bearer",
                             "expires_in": self.emulator.token_lifetime_seconds,
                             "scope": form.get("scope", "useraccount")})  # fmt: skip

    def _issue_user_token(self, assertion: str, client: JwtBearerClient) -> tuple[str, str] | str:
        """Check ``assertion`` and map its ``sub``; ``(access token, user_name)`` or the refusal
        reason (call with the lock held)."""
        store = self.store
        try:
            claims = check_assertion(assertion, client, f"{self.emulator.base_url}/oauth_token.do", store.seen_jti)
        except AssertionRefused as exc:
            return str(exc)
        users = store.tables.get("sys_user", [])
        user = next((u for u in users if u.get(client.user_field) == claims["sub"]), None)
        if user is None:
            return f"sub names no sys_user by {client.user_field}"
        if user.get("active") != "true":
            return f"sys_user {user.get('user_name')!r} is not active"
        access = secrets.token_urlsafe(24)
        expires_at = time.monotonic() + self.emulator.token_lifetime_seconds
        store.tokens[access] = Token(client.client_id, None, expires_at, acting=user["user_name"])
        return access, user["user_name"]

    def _log(self, request: Request, principal: str | None, ok: bool, status: int, query: dict[str, str],
             fault: bool = False, detail: str | None = None) -> None:  # fmt: skip
        self.store.log(LoggedRequest(method=request.method, path=request.url.path, query=query, principal=principal,
                                     authenticated=ok, status=status, fault=fault, detail=detail))  # fmt: skip
