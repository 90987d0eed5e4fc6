"""An OpenAPI document loaded, validated and read into the operations a service offers.

``openapi-spec-validator`` validates the document against the OpenAPI 3.0 or 3.1 meta-schema (the
version chosen by the document's ``openapi`` field; see :mod:`.validation`); the validated document
is then read as plain dicts, each ``$ref`` to a Parameter, Request Body or Response object followed
by :func:`_deref` (a JSON pointer lookup: the generic path walker cost about 1 ms an operation).
Errors say where and what kind, never the document's text (:mod:`.messages`). Only references
inside the document are followed: one to another file or URL is refused before anything is
validated, since following it would have the server read files or fetch URLs the operator never
named.

Each operation becomes an :class:`Operation`; those this plugin cannot serve faithfully carry the
reason in :attr:`Operation.unsupported` (``check`` and the server log list them, and they are left
out): a header or cookie parameter that is required, a path parameter style other than ``simple``,
a query parameter style OpenAPI does not define for queries, a parameter described by ``content``,
a request body with no JSON media type, a parameter named like the body argument, a path whose
literal would end the URL early or name another path (``#``, ``?``, whitespace, ...: :func:`path_problem`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx2
import yaml
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from referencing.exceptions import Unresolvable

from mcp_providers.plugins.openapi.loops import looping, pruned, refs_in
from mcp_providers.plugins.openapi.messages import invalid, unparsable
from mcp_providers.plugins.openapi.schema import Converter, UnsupportedSchema
from mcp_providers.plugins.openapi.servers import server_url
from mcp_providers.plugins.openapi.validation import validate

__all__ = ["METHODS", "Document", "DocumentError", "Operation", "Parameter", "Read", "load", "read_all"]

log = logging.getLogger(__name__)

METHODS = ("get", "put", "post", "delete", "patch")
"""HTTP methods served (HEAD, OPTIONS and TRACE operations are left out)."""
_UNSERVED = ("head", "options", "trace")
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
BODY = "body"
"""The tool argument that carries the request body."""
_JSON_TYPES = ("application/json",)
_VARNAME = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")
"""An RFC 6570 variable name (``varname``, without percent-escapes)."""


class DocumentError(ValueError):
    """The document cannot be read, parsed or validated; the message names the service and the cause."""


class _Unreadable(ValueError):
    """What in a validated document cannot be followed (a dangling or looping ``$ref``); :func:`load`
    makes it a :class:`DocumentError` naming the document."""


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
    style: str = "simple"
    """How a value is serialized: ``simple`` (path); ``form``, ``spaceDelimited``,
    ``pipeDelimited`` or ``deepObject`` (query; OpenAPI's default ``form``)."""
    explode: bool = False
    """Whether an array's items (an object's members) go as separate ``name=value`` pairs
    (OpenAPI's default: true for ``form``, false otherwise)."""

    @property
    def variable(self) -> str:
        """Its URI template variable: :attr:`name` where RFC 6570 allows it (``petId``, ``a.b``),
        else each character outside ``A-Z a-z 0-9 _`` made ``_`` (``api-version`` ->
        ``api_version``; ``""`` stays ``""``, no variable). Requests carry :attr:`name`."""
        if _VARNAME.fullmatch(self.name):
            return self.name
        return re.sub(r"[^A-Za-z0-9_]", "_", self.name)


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
    """``servers[0].url``, its variables filled with their defaults, resolved against the
    document's own URL (``None``: none usable; :func:`~.servers.server_url`)."""
    operations: tuple[Operation, ...] = field(default=())
    tags: tuple[str, ...] = ()
    """The names in the document's top-level ``tags`` list (operations may carry others)."""
    unserved: tuple[str, ...] = ()
    """operationIds of the HEAD, OPTIONS and TRACE operations, which are not served (settings may
    still name them)."""
    server_problem: str | None = None
    """Why :attr:`server_url` is ``None`` when its variables cannot be filled (names them)."""


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
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are refused; write the document without anchors", mark
            )
        return super().compose_node(parent, index)


def _parsed(data: bytes, source: str) -> dict[str, Any]:
    """The document's JSON or YAML as a dict.

    :raises DocumentError: not JSON or YAML (where and what kind of error, never the text there).
    """
    try:
        spec = json.loads(data) if data.lstrip()[:1] in (b"{", b"[") else yaml.load(data, Loader=_NoAliases)
    except (ValueError, yaml.YAMLError) as exc:
        raise DocumentError(f"document {source!r} is neither JSON nor YAML: {unparsable(exc)}") from None
    if not isinstance(spec, dict):
        raise DocumentError(f"document {source!r} is not a JSON object")
    return spec


Read = tuple[bytes, str | None] | Exception
"""A document's bytes and URL (``None`` for a file), or what reading it raised (:func:`read_all`)."""


def read_all(sources: Sequence[tuple[str, float]]) -> list[Read]:
    """What each ``(source, timeout)`` reads as (:data:`Read`), in order. Documents by URL are
    fetched side by side, each in a thread of its own: N that never answer cost one ``timeout``
    (each bounded by its own), not N; files are read in this thread."""
    found: list[Read] = [RuntimeError("not read")] * len(sources)

    def one(index: int, source: str, timeout: float) -> None:
        try:
            found[index] = _read(source, timeout)
        except Exception as exc:  # kept for load(), which raises it where it would have read
            found[index] = exc

    fetching = [
        threading.Thread(target=one, args=(i, source, timeout), name="mcp-providers-openapi-fetch", daemon=True)
        for i, (source, timeout) in enumerate(sources)
        if "://" in source
    ]
    for thread in fetching:
        thread.start()
    for i, (source, timeout) in enumerate(sources):
        if "://" not in source:
            one(i, source, timeout)
    for thread in fetching:
        thread.join()
    return found


def load(
    source: str, *, timeout: float = 30.0, max_operations: int | None = None, read: Read | None = None
) -> Document:
    """Read, parse and validate the document at ``source`` (a file path or an http(s) URL).

    :param read: what :func:`read_all` read from ``source`` (``None``: read it now).
    :param max_operations: most operations (a path item without any counts as one) the document
        may have, counted before it is validated; ``None``: no limit.
    :raises DocumentError: it cannot be read, is not JSON or YAML, is not OpenAPI 3.0 or 3.1, is
        invalid (where, and which rule; never the document's text), refers to another file or URL,
        or has more than ``max_operations`` operations.
    """
    if isinstance(read, Exception):
        raise read
    data, url = _read(source, timeout) if read is None else read
    try:
        spec = _parsed(data, source)
        version = str(spec.get("openapi", spec.get("swagger", "")))
        if not version.startswith(("3.0", "3.1")):
            shown = version[:20] or "(no version)"
            raise DocumentError(f"document {source!r} is OpenAPI/Swagger {shown}; 3.0 or 3.1 is needed")
        if max_operations is not None and (count := _operation_count(spec)) > max_operations:
            raise DocumentError(
                f"document {source!r} has {count} operations, over max_operations = {max_operations}: validating "
                "it would cost about 1.5 to 3.5 CPU ms an operation at every check, start and reload; raise "
                "max_operations, or serve a document narrowed to the operations you need"
            )
        refs = set(refs_in(spec))
        external = min((ref for ref in refs if not ref.startswith("#")), default=None)
        if external is not None:
            raise DocumentError(
                f"document {source!r} refers to {external!r}, outside itself; bundle the document into one file "
                "(e.g. `redocly bundle`) so that the server reads nothing the operator did not name"
            )
        loops = looping(spec, refs)  # only what an operation uses is judged: a loop nobody uses is no error
        validated, looped = pruned(spec, loops) if loops is not None else (spec, {})
        validate(validated, version)
        return _document(spec, url, version, looped)
    except OpenAPIValidationError as exc:
        raise DocumentError(f"document {source!r} is not valid OpenAPI {version}: {invalid(exc)}") from None
    except Unresolvable as exc:
        raise DocumentError(f"document {source!r} refers to '#{exc.ref}', which it does not have") from None
    except _Unreadable as exc:
        raise DocumentError(f"document {source!r} {exc}") from None
    except RecursionError:
        raise DocumentError(f"document {source!r} nests too deeply to be read") from None


def _operation_count(spec: dict[str, Any]) -> int:
    """Operations in ``spec`` (a path item with none, e.g. a ``$ref``, counts as one), unvalidated."""
    paths = spec.get("paths")
    if not isinstance(paths, dict):
        return 0
    methods = (*METHODS, *_UNSERVED)
    return sum(max(1, sum(m in item for m in methods)) if isinstance(item, dict) else 1 for item in paths.values())


def _document(spec: dict[str, Any], url: str | None, version: str, looped: Mapping[tuple[str, str], str]) -> Document:
    """The :class:`Document` of validated ``spec``; ``looped``: ``(path, method)`` -> the looping
    reference each such operation reaches (:func:`~.loops.pruned`), left out saying so."""
    components = spec.get("components", {}).get("schemas", {})
    server, server_problem = server_url(spec, url)  # None: relative to a file, or variables unfilled
    converter = Converter(components, version)  # each component converted once, shared by every operation
    operations: list[Operation] = []
    unserved: list[str] = []
    gone: dict[str, dict[str, str]] = {}
    for (at, method), ref in looped.items():
        gone.setdefault(at, {})[method] = ref
    for path, item in spec.get("paths", {}).items():
        lost = gone.get(path, {})
        if lost and all(m in lost for m in METHODS if m in item):  # maybe its shared parameters loop
            operations.extend(_looped(path, m, item[m], lost[m]) for m in METHODS if m in item)
            continue
        item = _deref(spec, item)
        shared = [_deref(spec, p) for p in item.get("parameters", ())]
        for method in METHODS:
            if method in lost:
                operations.append(_looped(path, method, item[method], lost[method]))
            elif method in item:
                operations.append(_operation(spec, path, method, item[method], shared, converter))
        for method in _UNSERVED:
            if isinstance(item.get(method), dict):
                unserved.append(str(item[method].get("operationId") or f"{method}_{path}"))
    info = spec["info"]
    tags = tuple(str(t["name"]) for t in spec.get("tags", ()) if isinstance(t, dict) and "name" in t)
    return Document(
        str(info["title"]),
        str(info["version"]),
        version,
        server,
        tuple(operations),
        tags,
        tuple(unserved),
        server_problem,
    )


_MAX_REF_HOPS = 32


def _deref(spec: dict[str, Any], node: Any) -> Any:
    """``node``, or what its ``$ref`` (``#/...``, a JSON pointer into ``spec``) names, followed until
    a node without one.

    :raises _Unreadable: a reference to something the document does not have, or a loop.
    """
    for _ in range(_MAX_REF_HOPS):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str):
            return node
        node = spec
        for part in unquote(ref.removeprefix("#")).split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise _Unreadable(f"refers to {ref!r}, which it does not have")
    raise _Unreadable(f"has references that lead to each other in a loop (at {ref!r})")


def _base(path: str, method: str, value: Any) -> dict[str, Any]:
    """What every :class:`Operation` of ``value`` (``paths[path][method]``) has, served or not."""
    value = value if isinstance(value, dict) else {}
    return {
        "operation_id": str(value.get("operationId") or f"{method}_{path}"),
        "method": method.upper(),
        "path": path,
        "tags": tuple(str(t) for t in value.get("tags", ())),
        "summary": value.get("summary"),
        "description": value.get("description"),
    }


def _looped(path: str, method: str, value: Any, ref: str) -> Operation:
    why = f"it uses references that lead to each other in a loop (at {ref[:120]!r}); they name no schema"
    return Operation(**_base(path, method, value), unsupported=why)


def _operation(
    spec: dict[str, Any], path: str, method: str, value: dict[str, Any], shared: list[Any], converter: Converter
) -> Operation:
    base = _base(path, method, value)
    problem = path_problem(path)
    if problem is not None:
        return Operation(**base, unsupported=problem)
    try:
        parameters, unsupported = _parameters(spec, value, shared, converter)
        body, media, required = _body(spec, value, converter)
        response = _response_media(spec, value)
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


_VARIABLE = re.compile(r"\{[^{}]*\}")
_PCHAR = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]")
_HEX = "0123456789ABCDEFabcdef"
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def path_problem(path: str) -> str | None:
    """Why the literal of ``path`` (what is outside its ``{variables}``) cannot be sent as it is
    read, or ``None``: a character that would end the path (``#``, ``?``), be trimmed, rewritten
    or encoded on the way (whitespace, a control character, ``\\``, anything else outside RFC 3986's
    path characters), a ``%`` that is no escape, a ``.``/``..`` segment the URL would resolve away,
    or an escape a decoding service would read as one of those, as a separator or as another
    escape (``%2e%2e``, ``%2F``, ``%0A``, ``%2541``). The URI the gate sees would then name another
    path than the one requested."""
    literal = _VARIABLE.sub("v", path)
    for at, char in enumerate(literal):
        if char == "%":
            if len(literal) < at + 3 or literal[at + 1] not in _HEX or literal[at + 2] not in _HEX:
                return "its path holds '%' not followed by two hex digits; write '%25' for a percent sign"
            continue
        if _PCHAR.fullmatch(char):
            continue
        code = f"U+{ord(char):04X}"
        if unicodedata.category(char) in ("Cc", "Cf"):
            why = f"a control character ({code})"
        elif char.isspace():
            why = f"whitespace ({code}), which a client or server may trim or split at"
        elif char in "#?":
            why = f"{char!r}, which would end the path there: the service would be sent another path"
        else:
            why = f"{char!r}, which a URL path does not hold as written"
        return f"its path holds {why}; percent-encode it in the document (UTF-8) if the service means it"
    decoded = unquote(literal)  # what a service that decodes the path reads
    if any(segment in (".", "..") for segment in decoded.split("/")):
        return "its path holds a '.' or '..' segment (or its escape), which resolves away to another path"
    if decoded.count("/") != literal.count("/") or "\\" in decoded:
        return "its path holds an escaped '/' or '\\' (%2F, %5C), which a service may read as a separator"
    if _CONTROL.search(decoded):
        return "its path holds an escaped control character"
    if _ESCAPE.search(decoded):
        return "its path holds a double encoding ('%25' then two hex digits), which a service may decode twice"
    return None


_QUERY_STYLES = ("form", "spaceDelimited", "pipeDelimited", "deepObject")


def _parameters(
    spec: dict[str, Any], value: dict[str, Any], shared: list[Any], converter: Converter
) -> tuple[tuple[Parameter, ...], str | None]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for parameter in [*shared, *(_deref(spec, p) for p in value.get("parameters", ()))]:
        found[(parameter["name"], parameter["in"])] = parameter  # an operation's own replaces the path item's
    out, unsupported = [], None
    for (name, location), node in found.items():
        if location in ("header", "cookie"):
            if node.get("required"):
                unsupported = f"it requires the {location} parameter {name!r}, which tools do not take"
            continue
        style = node.get("style", "simple" if location == "path" else "form")
        if location == "path" and style != "simple":
            unsupported = f"path parameter {name!r} has style {style!r}; only 'simple' is served"
        elif location == "query" and style not in _QUERY_STYLES:
            unsupported = f"query parameter {name!r} has style {style!r}; {', '.join(_QUERY_STYLES)} are served"
        elif "schema" not in node and "content" in node:
            unsupported = f"{location} parameter {name!r} is described by content, not schema; it is not served"
        schema = converter.json_schema(node.get("schema") or {"type": "string"})
        explode = bool(node.get("explode", style == "form"))
        description = node.get("description")
        out.append(Parameter(name, location, bool(node.get("required")), schema, description, style, explode))
    return tuple(out), unsupported


def _body(
    spec: dict[str, Any], value: dict[str, Any], converter: Converter
) -> tuple[dict[str, Any] | None, str | None, bool]:
    if "requestBody" not in value:
        return None, None, False
    body = _deref(spec, value["requestBody"])
    content = body.get("content", {})
    media = next((m for m in content if m in _JSON_TYPES or m.endswith("+json")), None)
    if media is None:
        return None, None, False
    schema = converter.json_schema(content[media].get("schema") or {})
    return schema, media, bool(body.get("required"))


def _response_media(spec: dict[str, Any], value: dict[str, Any]) -> str | None:
    responses = value.get("responses") or {}
    for status in sorted(str(s) for s in responses):
        if status.startswith("2") or status == "default":
            content = _deref(spec, responses[status] if status in responses else responses[int(status)]).get("content")
            if content:
                return str(next((m for m in content if m in _JSON_TYPES), next(iter(content))))
    return None
