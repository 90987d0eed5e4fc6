"""Fetching JSON from the identity provider: discovery documents (RFC 8414, OpenID Connect
Discovery 1.0) at start-up, JWKS and introspection answers at request time. Every fetch has a
timeout; nothing here ever sends or logs a bearer token except the introspection request body."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2

from mcp_providers.config import mask
from mcp_providers.errors import ConfigError
from mcp_providers.http import tls_context

USER_AGENT = "mcp-providers (resource server)"


class FetchFailed(Exception):
    """A fetch got no usable JSON object: the reason names the URL, never a credential."""


def metadata_urls(issuer: str) -> list[str]:
    """Where ``issuer``'s metadata may be, in the order tried: RFC 8414 §3.1 (the well-known path
    inserted before the issuer's path), then OpenID Connect Discovery §4 (appended to it)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def json_object(response: httpx2.Response, url: str) -> dict[str, Any]:
    """The JSON object ``response`` carries.

    :raises FetchFailed: not 200, or not a JSON object.
    """
    if response.status_code != 200:
        raise FetchFailed(f"GET {mask(url)} answered HTTP {response.status_code}")
    try:
        document = response.json()
    except ValueError:
        raise FetchFailed(f"{mask(url)} answered something that is not JSON") from None
    if not isinstance(document, dict):
        raise FetchFailed(f"{mask(url)} answered JSON that is not an object")
    return document


def client_options(timeout: float) -> dict[str, Any]:
    """The ``httpx2`` client options of every fetch from an authorization server: ``timeout``
    seconds per step, our User-Agent, and the process's shared TLS context (:func:`tls_context`)."""
    return {"timeout": timeout, "headers": {"User-Agent": USER_AGENT}, "verify": tls_context()}


def get_json_sync(url: str, timeout: float) -> dict[str, Any]:
    """GET ``url`` now (start-up, before any event loop runs).

    :raises FetchFailed: unreachable, timed out, or no JSON object.
    """
    return fetched_sync(url, timeout)[0]


def fetched_sync(url: str, timeout: float) -> tuple[dict[str, Any], str | None, str | None]:
    """:func:`get_json_sync`'s object and the answer's ``Cache-Control`` and ``Age`` headers (``None``: none).

    :raises FetchFailed: unreachable, timed out, or no JSON object.
    """
    try:
        with httpx2.Client(**client_options(timeout)) as client:
            response = client.get(url, headers={"Accept": "application/json"})
            return json_object(response, url), response.headers.get("cache-control"), response.headers.get("age")
    except httpx2.HTTPError as exc:
        raise FetchFailed(f"cannot reach {mask(url)}: {type(exc).__name__} {mask(str(exc))}".rstrip()) from None


async def fetched(url: str, timeout: float) -> tuple[dict[str, Any], str | None, str | None]:
    """GET ``url`` at request time: the JSON object and the answer's ``Cache-Control`` and ``Age``
    headers (``None``: none).

    :raises FetchFailed: unreachable, timed out, or no JSON object.
    """
    try:
        # httpx2's timeout bounds each step; the deadline bounds the whole fetch (a slow drip too).
        with anyio.fail_after(timeout):
            async with httpx2.AsyncClient(**client_options(timeout)) as client:
                response = await client.get(url, headers={"Accept": "application/json"})
                headers = response.headers
                return json_object(response, url), headers.get("cache-control"), headers.get("age")
    except (httpx2.HTTPError, TimeoutError) as exc:
        raise FetchFailed(f"cannot reach {mask(url)}: {type(exc).__name__}") from None


def discover(issuer: str, timeout: float) -> dict[str, Any]:
    """``issuer``'s authorization server metadata (RFC 8414), else its OpenID provider metadata.

    :raises ConfigError: neither answers a JSON object, or the document names another issuer
        (RFC 8414 §3.3 and OIDC Discovery §4.3: it must equal the configured issuer exactly).
    """
    problems = []
    for url in metadata_urls(issuer):
        try:
            document = get_json_sync(url, timeout)
        except FetchFailed as exc:
            problems.append(str(exc))
            continue
        if document.get("issuer") != issuer:
            raise ConfigError(
                f"server.auth: {mask(url)} names issuer {document.get('issuer')!r}, not the configured "
                f"{issuer!r}; set issuer to exactly what the identity provider publishes"
            )
        return document
    raise ConfigError(
        f"server.auth: cannot discover issuer {issuer}: {'; '.join(problems)}. Check that the identity provider "
        "is running and reachable from this server, and that issuer is its exact issuer URL"
    )
