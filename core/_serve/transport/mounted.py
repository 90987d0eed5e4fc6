"""The endpoint :func:`mcp_providers.embedding.mount` adds to a host app.

- **A fresh SDK session manager per run.** The SDK's ``StreamableHTTPSessionManager.run()`` runs
  once per instance, but a host's lifespan may run many times in one process (a ``TestClient``
  per test). Each run of the host's lifespan gets an HTTP app of its own (:func:`http_app`, a new
  manager); the first is built by ``mount()`` itself, so config errors are raised there. Two runs
  of one app at once are refused: requests could not tell which run they belong to.
- **Not running, said plainly.** A request while no run is live (a sub-app, whose lifespan
  Starlette never runs; a server started without lifespan events) is answered 500 with what is
  wrong and the fix, logged once, instead of the SDK's "Task group is not initialized".
- **The host's identity.** Without ``[server.auth]``, a host's own authentication reaches the
  gate only as :func:`~mcp_providers.identity.user_principal` reads it (an SDK ``AccessToken``,
  its user made the SDK's ``AuthenticatedUser`` first: the SDK binds a session to that class only),
  or as the embedder's ``identify(request)`` maps it; one that cannot be read is refused (403).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import UnauthenticatedUser
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from mcp_providers._serve.transport.http_app import HttpApp
from mcp_providers._serve.transport.http_inbound import route_path, send_json
from mcp_providers._serve.transport.posted import error_body
from mcp_providers.errors import DENIED, INTERNAL_ERROR
from mcp_providers.identity import PRINCIPAL_CLAIM, Principal, UnreadableIdentity, user_principal

log = logging.getLogger("mcp_providers.embedding")

Identify = Callable[[Request], "Principal | Awaitable[Principal | None] | None"]
"""``identify(request) -> Principal | None``: who a request the host authenticated is (``None``: anonymous)."""


class MountedEndpoint:
    """The ASGI endpoint at a mounted path (and its RFC 9728 metadata paths); see the module docstring.

    :param make: builds a fresh :class:`HttpApp` (a new SDK session manager) for one run.
    :param identify: the embedder's mapping of a host-authenticated request to a principal, or ``None``.
    :param authenticated: ``[server.auth]`` guards the path (then the bearer token alone says who).
    """

    def __init__(self, make: Callable[[], HttpApp], path: str, identify: Identify | None, authenticated: bool) -> None:
        self._make = make
        self._ready: HttpApp | None = make()
        self._last: HttpApp = self._ready
        self._live: HttpApp | None = None
        self.path = path
        self._identify = identify
        self._authenticated = authenticated
        self._told: set[str] = set()
        """Which one-time log lines were written (not running; anonymous host user; unreadable)."""

    @property
    def metadata_paths(self) -> tuple[str, ...]:
        return tuple(self._last.metadata)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """One run of the endpoint, inside one run of the host's lifespan.

        :raises RuntimeError: a run of this app is already live (its lifespan entered twice at once).
        """
        if self._live is not None:
            raise RuntimeError(
                f"the MCP endpoint mounted at {self.path!r} is already running: this app's lifespan was "
                "entered again before its last run ended; run the app one at a time (one TestClient "
                "`with` block at a time), or mount the composition in a second app"
            )
        app, self._ready = self._ready or self._make(), None
        self._live = self._last = app
        try:
            async with app.manager.run():
                yield
        finally:
            self._live = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and route_path(scope) in self._last.metadata:
            await self._last(scope, receive, send)  # RFC 9728 metadata needs no running manager
            return
        live = self._live
        if live is None:
            await self._not_running(scope, send)
            return
        if scope["type"] == "http" and (rebound := await live.rebinding_refusal(scope)) is not None:
            await rebound(scope, receive, send)  # first: a rebound page's request reaches no identify=
            return
        if scope["type"] == "http" and not self._authenticated:
            refused = await self._identified(scope)
            if refused is not None:
                self._once("unreadable", logging.WARNING, refused)
                await send_json(send, 403, error_body(DENIED, refused))
                return
        if self._identify is None or not isinstance(user := scope.get("user"), AuthenticatedUser):
            await live(scope, receive, send)
            return
        reset = auth_context_var.set(user)  # what the SDK's AuthContextMiddleware does (get_access_token())
        try:
            await live(scope, receive, send)
        finally:
            auth_context_var.reset(reset)

    async def _not_running(self, scope: Scope, send: Send) -> None:
        root = scope.get("root_path") or ""
        if root:
            why = (
                f"the MCP endpoint is not running: this app is mounted at {root!r} inside another app, and "
                "Starlette does not run a mounted app's lifespan, which starts the endpoint; call "
                f"mount() on the outermost app, at {root + self.path!r}, or enter this app's lifespan from "
                "the outer app's (`async with inner.router.lifespan_context(inner): ...`)"
            )
        else:
            why = (
                f"the MCP endpoint at {self.path!r} is not running: the app's lifespan, which starts it, "
                "has not run or has ended; serve the app with lifespan events (uvicorn's default "
                "--lifespan auto; a TestClient inside `with`)"
            )
        self._once("not running", logging.ERROR, why)
        if scope["type"] == "http":
            await send_json(send, 500, error_body(INTERNAL_ERROR, why))

    async def _identified(self, scope: Scope) -> str | None:
        """Put who the host says the request is into ``scope["user"]``; why it is refused, else ``None``."""
        if self._identify is not None:
            found: object = self._identify(Request(scope))  # an embedder's: checked, whatever it returns
            if inspect.isawaitable(found):
                found = await found
            if found is None:
                scope["user"] = UnauthenticatedUser()  # anonymous: nothing of the host's user is read
            elif isinstance(found, Principal):
                _as(scope, found)
            else:
                return f"identify= returned {type(found).__name__}, not a Principal or None; the request is refused"
            return None
        user = scope.get("user")
        access = getattr(user, "access_token", None)
        if isinstance(access, AccessToken) and not isinstance(user, AuthenticatedUser):
            # the SDK binds a session to its AuthenticatedUser only: the caller served is the one bound
            scope["user"] = user = AuthenticatedUser(access)
        try:
            principal = user_principal(user)
        except UnreadableIdentity as exc:
            return str(exc)
        if principal is None and getattr(user, "is_authenticated", False):
            self._once(
                "anonymous",
                logging.WARNING,
                f"the host app authenticated a request to {self.path!r} ({type(user).__name__}), but its user "
                "carries no SDK AccessToken, so the composition serves it as anonymous; pass "
                "mount(..., identify=...) to map your users to a Principal",
            )
        return None

    def _once(self, what: str, level: int, message: str) -> None:
        if what not in self._told:
            self._told.add(what)
            log.log(level, "%s", message)


def _as(scope: Scope, principal: Principal) -> None:
    """``scope["user"]`` carrying ``principal`` as this project's verifiers leave it: the pipeline,
    the session quota and the SDK's session-to-caller binding then all read this one caller."""
    token = AccessToken(
        token="",
        client_id=principal.client_id or principal.subject,
        subject=principal.subject,
        scopes=sorted(principal.scopes),
        claims={"iss": principal.issuer, PRINCIPAL_CLAIM: principal},
    )
    scope["user"] = AuthenticatedUser(token)
