"""One configured OpenAPI service at request time: its document, its HTTP client, and each call.

A :class:`Service` is made at composition (the document loaded then, or the reason it could not
be); its ``httpx2`` client, the core's guarded one (:func:`mcp_providers.http.client`: inside a
resource read it refuses anything but GET/HEAD/OPTIONS), is opened when the first of its two
providers' ``lifespan`` is entered and closed when the last one leaves. A service whose document
failed to load raises the load error from its ``lifespan``, so the core records it as that
provider's start-up failure (``/readyz``, ``/status``) and the other plugins serve.

Paths are built so that what the gate authorized and what is requested are one thing. A path value
is percent-encoded whole (``quote(value, safe="")``); a value that is empty, ``.`` or ``..``,
holds ``/``, ``\\`` or a control character, or still holds a percent-escape after the router's one
decoding (a double encoding such as ``%252F``) is refused (-32602) before anything is sent, so the
upstream's one decoding yields exactly the segment the gate saw. :func:`same_path` then compares the
URI the gate saw, decoded once, with the URL about to be requested, decoded once, and refuses any
difference (a fragment, or a query the path itself started, included); a path literal that could
make them differ leaves its operation out at load
(:func:`~mcp_providers.plugins.openapi.document.path_problem`).

Every call records its custody (:func:`mcp_providers.credentials.record_upstream`): the service's
configured name, who the service knows the request as (``subject``) and how (``grant``), its
document's title and version, the operationId, the method and the URL requested, never a secret
(an API key sent as a query parameter is added by the auth flow, after the URL is recorded). The
caller's own token is never sent: the client carries only the service's configured credential, or,
with OAuth settings (``client_credentials``, ``on_behalf_of``), a credential from the credential
broker for each request (:mod:`mcp_providers.plugins._oauth`): this server's client's, or one the
caller's token was exchanged for. A caller ``on_behalf_of`` cannot exchange for (no verified token,
or the authorization server refuses, or of an issuer ``auth.issuers`` does not name) is refused
(-32003) before anything is sent; a credential the service answers 401 to is forgotten in the broker
and the request sent once more with a new one. Every answer, success or failure, text or binary, is
masked (:mod:`~mcp_providers.plugins._masking`) for every secret held for the service: the values of
the variables its ``auth`` names (the OAuth client secret too) and every credential the broker
handed for it, so no credential this server sends to a service comes back to a caller through it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httpx2

from mcp_providers import http as core_http
from mcp_providers.credentials import Credential, CredentialBroker, record_upstream
from mcp_providers.errors import InvalidParams, NotFound, TooLarge, UpstreamError
from mcp_providers.http import is_loopback_host
from mcp_providers.identity import LOCAL, Principal
from mcp_providers.plugins._library_logs import library_logs_masked
from mcp_providers.plugins._masking import Secrets, body_text
from mcp_providers.plugins._oauth import ClientCredentials, OAuthAuth, OnBehalfOfAuth, TokenExchange, brokered
from mcp_providers.plugins.openapi.document import Document, Operation
from mcp_providers.plugins.openapi.query import encode
from mcp_providers.plugins.openapi.settings import (
    ApiKeyAuth,
    BasicAuth,
    BearerAuth,
    ServiceSettings,
    checked_http_url,
)
from mcp_providers.uris import value_problem

__all__ = ["Answer", "Service", "ServiceError", "path_value", "same_path"]

_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TEXTUAL = re.compile(
    r"^(text/.*|application/(.*[+/])?(json|xml|yaml|x-yaml|javascript)|application/x-www-form-urlencoded)$"
)


class ServiceError(UpstreamError):
    """An OpenAPI service answered with an error or could not be reached (JSON-RPC -32006).

    :ivar service: the configured service name.
    :ivar status: the HTTP status, or ``None`` for a timeout or a connection failure.
    """

    def __init__(self, message: str, *, service: str, status: int | None = None) -> None:
        super().__init__(message, data={"service": service, **({"status": status} if status is not None else {})})
        self.service, self.status = service, status


@dataclass(frozen=True, slots=True)
class Answer:
    """A successful answer: status, media type (without parameters) and the body."""

    status: int
    media: str | None
    body: bytes
    content_type: str | None = None
    """The ``Content-Type`` as sent (its charset decodes the body for masking)."""

    @property
    def textual(self) -> bool:
        """Whether the body is text (JSON, XML, YAML, ``text/*``)."""
        return self.media is None or bool(_TEXTUAL.match(self.media))


def path_value(name: str, value: str) -> str:
    """``value`` of path parameter ``name``, percent-encoded whole, as it goes into the URL path.

    :raises InvalidParams: a value that could mean another path than the one the gate authorized:
        empty, a control character, a percent-escape left after the router's decoding (a double
        encoding), or what the router refuses in a one-segment template value
        (:func:`~mcp_providers.uris.value_problem`: ``.``, ``..``, ``/``, ``\\``, a trailing dot, an
        NTFS stream, ...); the message says what is wrong.
    """
    if not value or _CONTROL.search(value) or _ESCAPE.search(value):
        raise InvalidParams(
            f"path parameter {name!r} = {value[:80]!r} is refused: a path value may not be empty, nor hold a "
            "control character or a percent-escape (double encoding); give the plain value",
            data={"parameter": name},
        )
    # '.', '..', '/', '\\' and the rest: the router's rule for a one-segment template value
    if (problem := value_problem(value, single_segment=True)) is not None:
        raise InvalidParams(
            f"path parameter {name!r} = {value[:80]!r} is refused: it {problem}", data={"parameter": name}
        )
    return quote(value, safe="")


def same_path(gate_uri: str, prefix: str, url_path: str, base_path: str) -> bool:
    """Whether the URI the gate saw and the URL path to be requested name the same path, each
    decoded once: ``openapi://svc/pet/1`` (prefix ``openapi://svc/``) and ``/v3/pet/1`` (base ``/v3``).

    A fragment on either side is a difference (no request carries one, so the gate would have
    judged a name the service never sees), and so is a ``?`` in ``url_path`` (the path without its
    query: one there came from the path itself)."""
    if not gate_uri.startswith(prefix) or not url_path.startswith(base_path):
        return False
    seen = gate_uri[len(prefix) :]
    if "#" in seen or "#" in url_path or "?" in url_path:
        return False
    seen = "/" + seen.split("?", 1)[0].lstrip("/")
    return unquote(seen) == unquote(url_path[len(base_path) :] or "/")


class _ApiKeyQuery(httpx2.Auth):
    """Adds the API key as a query parameter at send time, so the recorded URL never holds it."""

    def __init__(self, name: str, value: str) -> None:
        self._name, self._value = name, value

    def _added(self, url: httpx2.URL) -> httpx2.URL:
        # Appended to the query as sent: merging would re-encode it, and a delimiter of an
        # unexploded array (id=a,b) would become part of one value (id=a%2Cb).
        pair = f"{quote(self._name, safe='')}={quote(self._value, safe='')}".encode()
        return url.copy_with(query=url.query + b"&" + pair if url.query else pair)

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.url = self._added(request.url)
        yield request

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.url = self._added(request.url)
        yield request


class Service:
    """One service: settings, the loaded :class:`Document` (or why it failed), and its client."""

    def __init__(self, settings: ServiceSettings, document: Document | None, error: str | None) -> None:
        self.settings, self.document, self.error = settings, document, error
        self.name = settings.name
        self.base_url = settings.base_url or (document.server_url if document else None) or ""
        if self.error is None and not settings.base_url and self.base_url:
            try:  # the document's server URL is held to what base_url would be
                checked_http_url(self.base_url, "the document's server URL", path=True)
            except ValueError as exc:
                self.error = f"service {self.name!r}: {exc}; set base_url"
        self._http: httpx2.AsyncClient | None = None
        self._open_error: str | None = None
        self._users = 0
        self._secrets = Secrets(f"service {self.name!r}")
        self.left_out: list[Any] = []
        """What the settings name that the document does not have, where it fails safe
        (:func:`~mcp_providers.plugins.openapi.names.advisories`); ``check`` lists it."""
        self.oauth = self._oauth(settings.auth)
        """Where each request's credential comes from, with OAuth settings (else ``None``)."""
        self._own_broker = CredentialBroker()
        """The broker of requests made outside a server's pipeline (a direct call)."""

    def _oauth(self, auth: Any) -> ClientCredentials | TokenExchange | None:
        if not isinstance(auth, OAuthAuth):
            return None
        endpoint = {
            "owner": f"service {self.name!r}",
            "who": f"service {self.name!r}",
            "resource": self.base_url,
            "timeout": self.settings.timeout_seconds,
        }
        if isinstance(auth, OnBehalfOfAuth):
            return TokenExchange(auth, name=f"openapi:{self.name}", **endpoint)
        principal = Principal(f"client:{self.name}", issuer=f"mcp-providers:openapi:{self.name}")
        return ClientCredentials(auth, name=f"openapi-client:{self.name}", principal=principal, **endpoint)

    @property
    def label(self) -> str:
        """``"Swagger Petstore 1.0.27"``: the document's title and version."""
        return f"{self.document.title} {self.document.version}" if self.document else "(no document)"

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[Service]:
        """Open the client (first entry) and close it (last exit).

        :raises ServiceError: the document failed to load, or no base URL is known.
        """
        if self.error is not None:
            raise ServiceError(self.error, service=self.name)
        if not self.base_url:
            problem = self.document.server_problem if self.document else None
            why = problem or "the document names no absolute server URL"
            raise ServiceError(f"service {self.name!r}: {why}; set base_url", service=self.name)
        if self._users == 0:
            self._http = self._client()
        self._users += 1
        try:
            with library_logs_masked(self._secrets.masked):  # httpx2 logs the URL (a key in its query)
                yield self
        finally:
            self._users -= 1
            if self._users == 0 and self._http is not None:
                http, self._http = self._http, None
                await http.aclose()

    def _client(self) -> httpx2.AsyncClient | None:
        auth, headers = self.settings.auth, {"Accept": "application/json, */*;q=0.5"}
        flow: httpx2.Auth | None = None
        self._open_error = None
        try:
            if isinstance(auth, BearerAuth):
                headers["Authorization"] = f"Bearer {self._secret(auth.token_env)}"
            elif isinstance(auth, BasicAuth):
                password = self._secret(auth.password_env)
                flow = httpx2.BasicAuth(auth.username, password)
                self._secrets.add(base64.b64encode(f"{auth.username}:{password}".encode()).decode())
            elif isinstance(auth, ApiKeyAuth) and auth.location == "header":
                headers[auth.name] = self._secret(auth.value_env)
            elif isinstance(auth, ApiKeyAuth):
                flow = _ApiKeyQuery(auth.name, self._secret(auth.value_env))
            elif isinstance(auth, OAuthAuth):  # read at the first token request; masked should the service echo it
                self._secrets.add(os.environ.get(auth.client_secret_env))
        except ValueError as exc:
            self._open_error = str(exc)
            return None
        host = urlsplit(self.base_url).hostname or ""
        return core_http.client(
            base_url=self.base_url,
            headers=headers,
            auth=flow,
            follow_redirects=False,
            timeout=httpx2.Timeout(self.settings.timeout_seconds),
            trust_env=not is_loopback_host(host),
        )

    def _secret(self, env: str) -> str:
        value = os.environ.get(env, "")
        if not value:
            raise ValueError(f"service {self.name!r}: environment variable {env} (from auth) is not set; export it")
        self._secrets.add(value)
        return value

    def redact(self, text: str) -> str:
        """``text`` with every secret of this service masked (:mod:`~mcp_providers.plugins._masking`)."""
        return self._secrets.masked(text)

    @property
    def grant(self) -> tuple[str, str]:
        """``(subject, grant)`` recorded in receipts: who the service knows this server as, and how."""
        auth = self.settings.auth
        if isinstance(auth, BasicAuth):
            return auth.username, "basic"
        return "service", auth.type if auth is not None else "none"

    def url(self, operation: Operation, path_values: Mapping[str, str]) -> str:
        """The path (relative to the base URL) of ``operation`` with ``path_values`` put in.

        :raises InvalidParams: a value :func:`path_value` refuses, or one missing.
        """
        out = operation.path
        for parameter in operation.parameters:
            if parameter.location == "path":
                if parameter.name not in path_values:
                    raise InvalidParams(f"missing path parameter {parameter.name!r}")
                value = path_value(parameter.name, str(path_values[parameter.name]))
                out = out.replace("{" + parameter.name + "}", value)
        return out

    async def send(
        self,
        operation: Operation,
        path: str,
        *,
        query: Mapping[str, Any],
        body: Any = None,
        gate_uri: str | None = None,
        principal: Principal = LOCAL,
    ) -> Answer:
        """Send ``operation`` to ``path`` (from :meth:`url`) with ``query`` and a JSON ``body``.

        :param query: query parameter name -> JSON value, written as each parameter's style says
            (:func:`~mcp_providers.plugins.openapi.query.encode`).
        :param gate_uri: the canonical URI the gate authorized (reads); the request is refused
            unless it names the same path (:func:`same_path`).
        :param principal: the caller: ``on_behalf_of`` services are reached as them.
        :raises InvalidParams: the URI and the URL differ.
        :raises CredentialRefused: ``on_behalf_of`` and the caller has no verified token, or the
            authorization server refused the exchange (nothing was sent to the service).
        :raises NotFound: the service answered 404.
        :raises TooLarge: the answer is over ``max_response_bytes``.
        :raises ServiceError: any other answer than 2xx (a redirect included: never followed), a
            timeout, or an unreachable service.
        """
        http = self._http
        if http is None:
            raise ServiceError(self._open_error or f"service {self.name!r} is not open", service=self.name)
        request = self._request(http, operation, path, query, body, gate_uri)
        what = f"service {self.name!r} ({self.label}): {operation.operation_id} ({operation.method} {operation.path})"
        custody = {"service": self.label, "operationId": operation.operation_id, "method": operation.method,
                   "url": str(request.url)}  # fmt: skip
        if self.oauth is None:
            subject, grant = self.grant
            record_upstream({"name": f"openapi:{self.name}", "subject": subject, "grant": grant, **custody})
            return await self._exchange(http, request, what)
        return await self._brokered(http, request, what, custody, principal)

    def _request(
        self,
        http: httpx2.AsyncClient,
        operation: Operation,
        path: str,
        query: Mapping[str, Any],
        body: Any,
        gate_uri: str | None,
    ) -> httpx2.Request:
        """The request :meth:`send` sends; raises :class:`InvalidParams` as it says."""
        encoded = encode(operation, query, reserved=self._query_key())
        request = http.build_request(operation.method, f"{path}?{encoded}" if encoded else path, json=body)
        base_path = urlsplit(self.base_url).path.rstrip("/")
        url_path, _, sent_query = request.url.raw_path.decode().partition("?")
        asked = gate_uri if gate_uri is not None else path
        if unquote(sent_query) != unquote(encoded) or (  # a query the path itself started, not ours
            gate_uri is not None and not same_path(gate_uri, self.settings.owned_prefix, url_path, base_path)
        ):
            raise InvalidParams(f"{asked[:200]!r} does not name the path requested; refused", data={"uri": asked[:200]})
        return request

    def _query_key(self) -> tuple[str, ...]:
        """The query name the API key is sent under (``api_key`` in the query), which no value may set."""
        auth = self.settings.auth
        return (auth.name,) if isinstance(auth, ApiKeyAuth) and auth.location == "query" else ()

    async def _brokered(
        self,
        http: httpx2.AsyncClient,
        request: httpx2.Request,
        what: str,
        custody: Mapping[str, str],
        principal: Principal,
    ) -> Answer:
        """``request`` with a credential from the broker (OAuth settings): the caller's exchanged
        one (``on_behalf_of``) or this server's client's; once more with a new one after a 401."""
        assert self.oauth is not None  # the caller checks it
        upstream = self.oauth

        async def sent(credential: Credential) -> Answer:
            request.headers["Authorization"] = f"Bearer {credential.token}"
            who = {"name": f"openapi:{self.name}", "subject": credential.subject, "grant": credential.grant}
            record_upstream({**who, **custody})
            return await self._exchange(http, request, what, handed=credential)

        return await brokered(
            upstream,
            upstream.principal if isinstance(upstream, ClientCredentials) else principal,
            sent,
            rejected=lambda exc, _credential: isinstance(exc, ServiceError) and exc.status == 401,
            own=self._own_broker,
            who=f"service {self.name!r}",
        )

    async def _exchange(
        self, http: httpx2.AsyncClient, request: httpx2.Request, what: str, handed: Credential | None = None
    ) -> Answer:
        """``request`` sent, its answer read within ``max_response_bytes``: an :class:`Answer`
        (2xx) with every secret held for the service masked, ``handed`` (the broker's credential
        it was sent with) among them, or the error the answer is (masked likewise)."""
        budget = self.settings.max_response_bytes
        try:
            response = await http.send(request, stream=True)
            try:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > budget:
                    raise self._too_large(what, budget, f"declares {declared} bytes")
                body = bytearray()
                async for chunk in response.aiter_bytes():  # decoded: the budget holds for a gzip bomb too
                    body += chunk
                    if len(body) > budget:
                        raise self._too_large(what, budget, f"is larger (stopped after {len(body)} bytes)")
            finally:
                await response.aclose()
        except httpx2.TimeoutException as exc:
            raise ServiceError(
                f"{what} got no answer within {self.settings.timeout_seconds:g} s "
                f"({type(exc).__name__}); raise timeout_seconds or try later",
                service=self.name,
            ) from None
        except httpx2.HTTPError as exc:
            raise ServiceError(
                f"{what} could not reach {self.base_url} ({type(exc).__name__})", service=self.name
            ) from None
        if handed is not None:  # (again, if dropped meanwhile among many callers' credentials)
            self._secrets.add(handed.token, handed=True)
        media = response.headers.get("content-type", "").split(";")[0].strip().lower() or None
        if 300 <= response.status_code < 400:
            raise self._redirect(what, response.status_code, response.headers.get("location", ""))
        sent_type = response.headers.get("content-type")
        if not 200 <= response.status_code < 300:  # 1xx as a final answer, 4xx, 5xx, anything else
            raise self._failure(what, response.status_code, bytes(body), sent_type)
        answer = Answer(response.status_code, media, bytes(body), sent_type)
        return self._masked(answer) if self._secrets else answer

    def _masked(self, answer: Answer) -> Answer:
        """``answer`` with every secret of this service masked in its body (a service may echo the
        credential it was sent); a body holding none is left as it came. A body is read in the
        charset its ``Content-Type`` declares or its byte-order mark names (``utf-16``...), else
        UTF-8, else byte for byte (latin-1: binary), so a secret in it is masked too
        (:func:`~mcp_providers.plugins._masking.body_text`), and encoded back the same way."""
        text, charset = self._read(answer.body, answer.content_type)
        if not self._secrets.found_in(text):
            return answer
        if answer.textual and charset == "utf-8":
            with contextlib.suppress(ValueError):  # not JSON: masked as text below
                data = self._secrets.masked_data(json.loads(text))
                return replace(answer, body=json.dumps(data, ensure_ascii=False).encode())
        return replace(answer, body=self._secrets.masked(text).encode(charset, "replace"))

    def _read(self, body: bytes, content_type: str | None) -> tuple[str, str]:
        """``(text, codec)``: ``body`` read as :func:`~mcp_providers.plugins._masking.body_text` reads
        it, or byte for byte (latin-1) when only that holds a secret (binary that only looked like
        UTF-16); an answer and an error body alike, so both are searched in the same text."""
        text, charset = body_text(body, content_type)
        if charset in ("utf-8", "latin-1") or not self._secrets or self._secrets.found_in(text):
            return text, charset
        latin = body.decode("latin-1")
        return (latin, "latin-1") if self._secrets.found_in(latin) else (text, charset)

    def _redirect(self, what: str, status: int, location: str) -> ServiceError:
        """A redirect is an error, never followed: the gate authorized this path, not where it leads,
        and the service's credential must not travel to another origin. Only the target's origin is
        named (its path or query may carry a token)."""
        try:
            parts = urlsplit(location)
            port = f":{parts.port}" if parts.port else ""
        except ValueError:
            parts, port = urlsplit(""), ""
            location = "?"
        if parts.scheme and parts.hostname:
            target = f"to {parts.scheme}://{parts.hostname}{port}"
        elif location == "?":
            target = "to a Location that is not a URL"
        else:
            target = "within the service" if location else "with no Location"
        return ServiceError(
            f"{what} answered HTTP {status}, a redirect {target}; redirects are not followed (the path "
            "authorized is the path requested): set base_url to where the service now answers",
            service=self.name,
            status=status,
        )

    def _too_large(self, what: str, budget: int, size: str) -> TooLarge:
        return TooLarge(
            f"{what}: the answer {size}, over max_response_bytes = {budget}; ask for less or raise it",
            data={"service": self.name, "budget": budget},
        )

    def _failure(self, what: str, status: int, body: bytes, content_type: str | None) -> UpstreamError:
        # Masked before it is cut: a secret across the cut would leave its start in the message.
        said = self.redact(self._read(body, content_type)[0])[:300].strip()
        message = f"{what} failed with HTTP {status}" + (f": {said}" if said else "")
        if status == 404:
            return NotFound(message, data={"service": self.name, "status": 404})  # type: ignore[return-value]
        return ServiceError(message, service=self.name, status=status)
