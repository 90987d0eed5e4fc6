"""An OpenAPI document loaded, validated and read into the operations a service offers.

``openapi-spec-validator`` validates the document against the OpenAPI 3.0 or 3.1 meta-schema (the
version chosen by the document's ``openapi`` field); ``jsonschema-path`` walks it, following each
``$ref`` to a Parameter, Request Body or Response object. Only references inside the document are
followed: one to another file or URL is refused before anything is validated, since following it
would have the server read files or fetch URLs the operator never named.

Each operation becomes an :class:`Operation`; those this plugin cannot serve faithfully carry the
reason in :attr:`Operation.unsupported` (``check`` and the server log list them, and they are left
out): a header or cookie parameter that is required, a path parameter style other than ``simple``,
a request body with no JSON or form media type, a parameter named like the body argument.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx2
import yaml
from jsonschema_path import SchemaPath
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from referencing.exceptions import Unresolvable

from mcp_providers.plugins.openapi.schema import UnsupportedSchema, json_schema

__all__ = ["METHODS", "Document", "DocumentError", "Operation", "Parameter", "load"]

log = logging.getLogger(__name__)

METHODS = ("get", "put", "post", "delete", "patch")
"""HTTP methods served (HEAD, OPTIONS and TRACE operations are left out)."""
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
BODY = "body"
"""The tool argument that carries the request body."""
_JSON_TYPES = ("application/json",)


class DocumentError(ValueError):
    """The document cannot be read, parsed or validated; the message names the service and the cause."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One path or query parameter of an operation.

    :param schema: its self-contained JSON Schema (``{"type": "string"}`` when the document gives none).
    """

    name: str
    location: str
    required: bool
    schema: dict[str, Any]
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the document, e.g. ``GET /pet/{petId}`` (``getPetById``)."""

    operation_id: str
    method: str
    """Upper case: ``GET``, ``POST`` ..."""
    path: str
    """As in the document, e.g. ``/pet/{petId}``."""
    tags: tuple[str, ...] = ()
    summary: str | None = None
    description: str | None = None
    parameters: tuple[Parameter, ...] = ()
    body: dict[str, Any] | None = None
    """The JSON Schema of the request body, if it has one."""
    body_media: str | None = None
    body_required: bool = False
    response_media: str | None = None
    """The media type of the first 2xx response's first content (JSON preferred), if any."""
    unsupported: str | None = None
    """Why the operation is left out, or ``None``."""

    @property
    def origin(self) -> dict[str, str]:
        """``{"operationId", "method", "path"}``: where a declaration came from."""
        return {"operationId": self.operation_id, "method": self.method, "path": self.path}


@dataclass(frozen=True, slots=True)
class Document:
    """A validated document: its title and version, server URL and operations in document order."""

    title: str
    version: str
    openapi: str
    server_url: str | None
    """``servers[0].url`` resolved against the document's own URL (``None``: none usable)."""
    operations: tuple[Operation, ...] = field(default=())


def _read(source: str, timeout: float) -> tuple[bytes, str | None]:
    """The document's bytes and its URL (``None`` for a file).

    :raises DocumentError: unreadable, unreachable, an HTTP error, or over :data:`MAX_DOCUMENT_BYTES`.
    """
    if "://" not in source:
        try:
            path = Path(source).expanduser()
            if path.stat().st_size > MAX_DOCUMENT_BYTES:
                raise DocumentError(f"document {source!r} is over {MAX_DOCUMENT_BYTES} bytes")
            return path.read_bytes(), None
        except OSError as exc:
            raise DocumentError(f"document {source!r} cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        with httpx2.Client(timeout=timeout, follow_redirects=False) as client, client.stream("GET", source) as answer:
            if answer.status_code != 200:
                raise DocumentError(f"document {source!r} answered HTTP {answer.status_code}, not 200")
            body = bytearray()
            for chunk in answer.iter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise DocumentError(f"document {source!r} is over {MAX_DOCUMENT_BYTES} bytes")
            return bytes(body), source
    except httpx2.HTTPError as exc:
        raise DocumentError(f"document {source!r} could not be fetched ({type(exc).__name__}: {exc})") from None


class _NoAliases(yaml.SafeLoader):
    """YAML without aliases: ``*name`` shares a node, and nested aliases make a few kilobytes a
    structure whose walk (validation, reading operations) never ends ("billion laughs")."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases (*name) are refused; write the document without anchors")
        return super().compose_node(parent, index)


def _external_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            yield ref
        for value in node.values():
            yield from _external_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _external_refs(item)


def load(source: str, *, timeout: float = 30.0) -> Document:
    """Read, parse and validate the document at ``source`` (a file path or an http(s) URL).

    :raises DocumentError: it cannot be read, is not JSON or YAML, is not OpenAPI 3.0 or 3.1, is
        invalid (the validator's first message and where), or refers to another file or URL.
    """
    data, url = _read(source, timeout)
    try:
        spec = json.loads(data) if data.lstrip()[:1] in (b"{", b"[") else yaml.load(data, Loader=_NoAliases)
    except (ValueError, yaml.YAMLError) as exc:
        raise DocumentError(f"document {source!r} is neither JSON nor YAML ({str(exc)[:200]})") from None
    if not isinstance(spec, dict):
        raise DocumentError(f"document {source!r} is not a JSON object")
    version = str(spec.get("openapi", spec.get("swagger", "")))
    if not version.startswith(("3.0", "3.1")):
        raise DocumentError(f"document {source!r} is OpenAPI/Swagger {version or '(no version)'}; 3.0 or 3.1 is needed")
    external = next(_external_refs(spec), None)
    if external is not None:
        raise DocumentError(
            f"document {source!r} refers to {external!r}, outside itself; bundle the document into one file "
            "(e.g. `redocly bundle`) so that the server reads nothing the operator did not name"
        )
    try:
        validate(spec)
        return _document(spec, url, version)
    except OpenAPIValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise DocumentError(f"document {source!r} is not valid OpenAPI {version}: at {where}: {exc.message}") from None
    except Unresolvable as exc:
        raise DocumentError(f"document {source!r} refers to '#{exc.ref}', which it does not have") from None
    except RecursionError:
        raise DocumentError(f"document {source!r} nests too deeply to be read") from None


def _document(spec: dict[str, Any], url: str | None, version: str) -> Document:
    root = SchemaPath.from_dict(spec, handlers={})
    components = spec.get("components", {}).get("schemas", {})
    servers = spec.get("servers") or [{"url": "/"}]  # the specification's default when none is given
    server = servers[0].get("url") if isinstance(servers[0], dict) else None
    server_url = urljoin(url, server) if url and server is not None else server
    if server_url is not None and ("{" in server_url or "://" not in server_url):
        server_url = None  # server variables, or relative to a file: the operator gives base_url
    operations = []
    for path, item in (root / "paths").str_items():
        shared = list(item / "parameters") if "parameters" in item else []
        for method in METHODS:
            if method in item:
                operations.append(_operation(path, method, item / method, shared, components, version))
    info = spec["info"]
    return Document(str(info["title"]), str(info["version"]), version, server_url, tuple(operations))


def _operation(
    path: str, method: str, node: SchemaPath, shared: list[SchemaPath], components: Mapping[str, Any], version: str
) -> Operation:
    value = node.read_value()
    operation_id = value.get("operationId") or f"{method}_{path}"
    base = {
        "operation_id": str(operation_id),
        "method": method.upper(),
        "path": path,
        "tags": tuple(str(t) for t in value.get("tags", ())),
        "summary": value.get("summary"),
        "description": value.get("description"),
    }
    try:
        parameters, unsupported = _parameters(node, shared, components, version)
        body, media, required = _body(node, components, version)
        response = _response_media(node)
    except UnsupportedSchema as exc:
        return Operation(**base, unsupported=str(exc))
    if unsupported is None and body is not None and any(p.name == BODY for p in parameters):
        unsupported = f"a parameter is named {BODY!r}, the argument that carries the request body"
    if unsupported is None and media is None and "requestBody" in value:
        unsupported = "its request body has no application/json media type"
    return Operation(
        **base,
        parameters=parameters,
        body=body,
        body_media=media,
        body_required=required,
        response_media=response,
        unsupported=unsupported,
    )


def _parameters(
    node: SchemaPath, shared: list[SchemaPath], components: Mapping[str, Any], version: str
) -> tuple[tuple[Parameter, ...], str | None]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    own = list(node / "parameters") if "parameters" in node else []
    for parameter in [*shared, *own]:  # an operation's own parameter replaces the path item's
        value = parameter.read_value()
        found[(value["name"], value["in"])] = value
    out, unsupported = [], None
    for (name, location), value in found.items():
        if location in ("header", "cookie"):
            if value.get("required"):
                unsupported = f"it requires the {location} parameter {name!r}, which tools do not take"
            continue
        if location == "path" and value.get("style", "simple") != "simple":
            unsupported = f"path parameter {name!r} has style {value['style']!r}; only 'simple' is served"
        schema = json_schema(value.get("schema") or {"type": "string"}, components, version)
        out.append(Parameter(name, location, bool(value.get("required")), schema, value.get("description")))
    return tuple(out), unsupported


def _body(
    node: SchemaPath, components: Mapping[str, Any], version: str
) -> tuple[dict[str, Any] | None, str | None, bool]:
    if "requestBody" not in node:
        return None, None, False
    body = (node / "requestBody").read_value()
    content = body.get("content", {})
    media = next((m for m in content if m in _JSON_TYPES or m.endswith("+json")), None)
    if media is None:
        return None, None, False
    schema = json_schema(content[media].get("schema") or {}, components, version)
    return schema, media, bool(body.get("required"))


def _response_media(node: SchemaPath) -> str | None:
    if "responses" not in node:
        return None
    responses = node / "responses"
    for status in sorted(responses.str_keys()):
        if status.startswith("2") or status == "default":
            content = (responses / status).read_value().get("content") or {}
            if content:
                return str(next((m for m in content if m in _JSON_TYPES), next(iter(content))))
    return None
