"""Declarations: the frozen records a provider hands the core once, at composition time.

A provider never mints URIs at read time: everything it can serve is declared here, checked by
the rules and indexed by the catalog before the first request.

Shapes, by example::

    Resource(uri="documcp://ssgs/available", name="ssgs-available", mime_type="application/json")
    ResourceTemplate(uri_template="documcp://ssgs/{ssg}", name="ssg",
                     completions={"ssg": ("hugo", "jekyll")})
    Tool(name="recommend_ssg", input_model=RecommendIn, output_model=RecommendOut, effects="none")
    Prompt(name="setup-docs", arguments=(PromptArgument(name="ssg", completions=("hugo",)),))

Where each invariant is enforced:

- field shapes (priority in 0..1, sizes >= 0, names' characters): by pydantic, when the model is built
  (the ``ValidationError`` carries a note in words, naming the declaration, the field, the value and
  what would be right: :mod:`mcp_providers._invalid`; ``check`` and ``plugins`` show that note);
- URI grammar, owned prefixes, collisions, side effects on resources: by the rules (``mcp-providers check``);
- tool annotations are never declared, only derived from :attr:`Tool.effects` (:meth:`Tool.annotations`).
"""

import base64
import binascii
import re
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mcp_providers._invalid import explain

__all__ = [
    "EFFECTS_CLAIM_KEY",
    "ICON_MIME_TYPES",
    "MAX_AGE_KEY",
    "ORIGIN_KEY",
    "RECEIPT_KEY",
    "Annotations",
    "Effects",
    "Extension",
    "ExtensionMethod",
    "Freshness",
    "Icon",
    "Members",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "Tool",
]

Effects = Literal["none", "additive", "destructive"]
"""What an operation may change: ``none`` (read-only), ``additive`` (creates or appends, never
removes or overwrites) or ``destructive`` (may overwrite or delete)."""

RECEIPT_KEY = "io.mcp-providers/receipt"
"""Result ``_meta`` key of the custody receipt on reads, tool results and prompt results (reverse-DNS
prefix, per MCP's ``_meta`` naming rule); its shape is on the security page of the docs."""

ORIGIN_KEY = "io.mcp-providers/origin"
"""``meta`` key of a declaration made from something outside this server (an OpenAPI operation, an
upstream MCP server's component): a JSON object naming where it came from, e.g. ``{"service":
"petstore", "operationId": "getPetById", "method": "GET", "path": "/pet/{petId}"}``. ``inspect``
shows it; it is sent in list results' ``_meta`` as any ``meta`` is.

A declaration carrying it is *listed*: its name, URI or template comes from a source the operator
configures but does not write, and may change while serving. In a collision (the same tool or prompt
name, fixed URI or template, a template of the same shape, a URI another provider's template
matches) a listed declaration yields: it alone is left out and reported as a ``left-out`` line
naming both sides, while the other side and both plugins are served (two listed ones are both left
out). Two declarations that are not listed still refuse both plugins
(:mod:`mcp_providers._host.collisions`). Likewise a listed declaration that a rule of ``check``
refuses on its own (a malformed URI or template, a URI outside its provider's prefixes, a resource
declaring side effects, an icon, a schema that cannot be served) is left out alone, never its plugin."""

EFFECTS_CLAIM_KEY = "effectsClaim"
"""Key inside a tool's ``meta[ORIGIN_KEY]``: what its source *claims* about its effects, when
:attr:`Tool.effects` is below ``destructive`` on that word alone and nothing in this process checks
it, e.g. ``"upstream 'docs' claims read-only (readOnlyHint: true)"`` or ``"method POST, taken as
additive (...)"``. ``inspect`` shows such a tool's effects as ``unknown (<claim>; served as <effects>)``.
Absent: the effects are the author's or the operator's word, or ``destructive`` (the worst case)."""

MAX_AGE_KEY = "io.mcp-providers/maxAge"
"""Request ``_meta`` key: the oldest content, in seconds, the caller accepts (``0`` = current)."""

_FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class _Declared(BaseModel):
    """A declaration model whose validation error carries a note in words: which declaration,
    which field, what would be right (:func:`mcp_providers._invalid.explain`); ``check`` shows it."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            exc.add_note(explain(exc, type(self), data))
            raise


class Annotations(_Declared):
    """Client hints carried to the wire unchanged (MCP ``Annotations``).

    Source: MCP specification 2025-11-25, ``schema.ts`` ``Annotations``.
    """

    model_config = ConfigDict(**_FROZEN, defer_build=True)  # built at first use (issue 43)

    audience: tuple[Literal["user", "assistant"], ...] | None = None
    """Who the content is for: any of ``"user"`` and ``"assistant"``."""
    priority: float | None = Field(default=None, ge=0.0, le=1.0)
    """Importance from 0.0 (optional) to 1.0 (effectively required)."""
    last_modified: datetime | None = None
    """When the content last changed; sent as ISO 8601. Must be timezone-aware."""

    @field_validator("last_modified")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("last_modified must be timezone-aware, e.g. datetime(2026, 1, 1, tzinfo=UTC)")
        return value


ICON_MIME_TYPES = frozenset({"image/png", "image/jpeg", "image/jpg", "image/svg+xml", "image/webp", "image/gif"})
"""Media types an icon may have: the ones MCP clients MUST (PNG, JPEG) or SHOULD (SVG, WebP)
render (MCP 2025-11-25, ``schema.ts`` ``Icons``), and GIF."""

_ICON_SIZE = re.compile(r"^(any|[1-9][0-9]{0,4}x[1-9][0-9]{0,4})$")
_DATA_URI = re.compile(r"^data:(?P<type>[^;,]*)(?P<params>(;[^;,]*)*),(?P<payload>.*)$", re.DOTALL)
_SVG_SCRIPT = re.compile(r"<script|\son[a-z]+\s*=|javascript:")
_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/jpg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
}
"""Leading bytes of each binary image type (WebP is checked apart: ``RIFF....WEBP``)."""


class Icon(_Declared):
    """An image a client may show next to a declaration or the server (MCP ``Icon``, 2025-11-25+)::

        Icon(src="data:image/svg+xml;base64,PHN2Zy...", mime_type="image/svg+xml", sizes=("any",))
        Icon(src="https://example.com/icon-48.png", mime_type="image/png", sizes=("48x48",), theme="light")

    The shape is checked when the model is built; the content (:meth:`problems`) by
    ``mcp-providers check`` (rule ``icon-invalid``, naming the declaration), and for the server's
    icons when the config is read. Sessions before 2025-11-25 get no icons.

    Source: MCP specification 2025-11-25 and 2026-07-28, ``schema.ts`` ``Icon``.
    """

    model_config = _FROZEN

    src: str = Field(min_length=1)
    """An ``https:`` URL, or a ``data:`` URI with a base64 image payload
    (``data:image/png;base64,...``). Prefer ``data:``: it keeps the server offline-safe and the
    client fetches nothing."""
    mime_type: str | None = None
    """Media type, one of :data:`ICON_MIME_TYPES`; for a ``data:`` URI it must equal the URI's own."""
    sizes: tuple[str, ...] | None = None
    """Sizes the image fits, each ``"WxH"`` in pixels (``"48x48"``) or ``"any"`` (scalable, SVG)."""
    theme: Literal["light", "dark"] | None = None
    """The background the icon is drawn for; ``None``: any."""

    @classmethod
    def from_svg(cls, svg: str, *, theme: Literal["light", "dark"] | None = None) -> "Icon":
        """A scalable icon carried inline: ``svg`` (the document's text) as a base64 ``data:`` URI,
        MIME type ``image/svg+xml``, sizes ``("any",)``. Checked like any icon (:meth:`problems`)."""
        data = base64.b64encode(svg.encode()).decode()
        return cls(src=f"data:image/svg+xml;base64,{data}", mime_type="image/svg+xml", sizes=("any",), theme=theme)

    def problems(self) -> list[tuple[str, str]]:
        """What is wrong with this icon, as ``(what is wrong, what would be right)`` pairs; empty if fine."""
        out = _src_problems(self.src, self.mime_type)
        if self.mime_type is not None and self.mime_type not in ICON_MIME_TYPES:
            out.append((f"mime_type {self.mime_type!r} is not an image type icons may have", _TYPES_FIX))
        for size in self.sizes or ():
            if not _ICON_SIZE.match(size):
                out.append(
                    (f"size {size!r} is neither WxH nor 'any'", 'write sizes such as ("48x48", "96x96") or ("any",)')
                )
        return out


_TYPES_FIX = f"use one of {', '.join(sorted(ICON_MIME_TYPES))}"


def _src_problems(src: str, mime_type: str | None) -> list[tuple[str, str]]:
    scheme = src.split(":", 1)[0].lower() if ":" in src else ""
    if scheme == "https":
        parts = urlsplit(src)
        if not parts.hostname:
            return [(f"src {src[:80]!r} has no host", "write an https URL such as https://example.com/icon.png")]
        return []
    if scheme != "data":
        shown = f"has scheme {scheme}:" if scheme else "is not a URI"
        return [
            (f"src {src[:40]!r} {shown}, not https: or data:", "use an https: URL or a data:image/...;base64,... URI")
        ]
    match = _DATA_URI.match(src)
    if match is None:
        return [("src is a data: URI without a comma", "write data:image/png;base64,<base64 of the image>")]
    media = match["type"].strip().lower()
    if media not in ICON_MIME_TYPES:
        return [(f"src is a data: URI of media type {media or 'text/plain'!r}, not an image", _TYPES_FIX)]
    if mime_type is not None and mime_type != media:
        return [(f"mime_type {mime_type!r} differs from the data: URI's {media!r}", f"set mime_type={media!r}")]
    if "base64" not in [p.strip().lower() for p in match["params"].split(";")]:
        return [("src is a data: URI without ;base64", f"encode the image: data:{media};base64,<base64>")]
    try:
        payload = base64.b64decode(match["payload"], validate=True)
    except (binascii.Error, ValueError):
        return [
            ("src's base64 payload does not decode", "encode the image bytes with base64 (standard alphabet, padded)")
        ]
    return _payload_problems(payload, media)


def _payload_problems(payload: bytes, media: str) -> list[tuple[str, str]]:
    """The decoded bytes must be the declared kind of image (an SVG without script)."""
    if media == "image/svg+xml":
        head = payload[:4096].decode("utf-8", "replace").lower()
        if "<svg" not in head:
            return [("src's payload is not an SVG document (no <svg element)", "encode the SVG file itself")]
        if _SVG_SCRIPT.search(payload.decode("utf-8", "replace").lower()):
            return [
                (
                    "src's SVG carries script (a <script> element, an on... event attribute or a javascript: link)",
                    "remove the script; clients show icons, they run nothing",
                )
            ]
        return []
    if media == "image/webp":
        kind_ok = payload[:4] == b"RIFF" and payload[8:12] == b"WEBP"
    else:
        kind_ok = payload.startswith(_MAGIC[media])
    if not kind_ok:
        return [(f"src's payload is not {media} data", f"encode a {media} file, or declare its real media type")]
    return []


class Freshness(_Declared):
    """How current a resource's content is, as the provider declares it.

    - ``static``: the bytes never change while the distribution's version stays the same
      (``mcp-providers check`` reads such a resource twice and compares digests);
    - ``max_age``: content may be up to ``max_age_seconds`` old;
    - ``live``: read from the source on every request;
    - ``unspecified``: the provider makes no promise.
    """

    model_config = _FROZEN

    kind: Literal["static", "max_age", "live", "unspecified"] = "unspecified"
    max_age_seconds: float | None = Field(default=None, ge=0)
    """Seconds; required with and only allowed with ``kind="max_age"``."""

    subscribable: bool | None = None
    """With ``kind="live"`` (``None`` means ``True``): whether the provider publishes changes, so
    the resource can be watched (``resources/subscribe``, ``subscriptions/listen``).
    ``Freshness.live(subscribable=False)`` is read from the source every time but never announces
    a change: watching it is refused."""

    def model_post_init(self, context: Any, /) -> None:
        if (self.kind == "max_age") != (self.max_age_seconds is not None):
            raise ValueError("max_age_seconds goes with kind='max_age' and only with it")

    @property
    def watchable(self) -> bool:
        """Live and subscribable: the provider publishes every change."""
        return self.kind == "live" and self.subscribable is not False

    @classmethod
    def static(cls) -> "Freshness":
        """Content fixed for the distribution's version."""
        return cls(kind="static")

    @classmethod
    def live(cls, *, subscribable: bool = True) -> "Freshness":
        """Content read from the source on every request; with ``subscribable`` (the default) the
        provider publishes its changes through ``provider.publisher``."""
        return cls(kind="live", subscribable=None if subscribable else False)

    @classmethod
    def max_age(cls, seconds: float) -> "Freshness":
        """Content at most ``seconds`` old."""
        return cls(kind="max_age", max_age_seconds=seconds)


class Members(_Declared):
    """The resources whose data a resource gathers: a catalog, a listing, an alias, a summary.

    A listing that copies its members' data undercuts any rule on a member unless it leaves out
    what the caller may not read, so an aggregate declares where its members are::

        Resource(uri="documcp://ssgs/available", name="ssgs",
                 members=Members(uris=("documcp://ssgs/{ssg}",), filtered=True))

    and, in ``read``, keeps only the members the caller may read, asking the gate about each::

        visible = [s for s in SSGS if policy.allowed("read", f"documcp://ssgs/{s.id}")]

    (asked as a read of that URI is: ``expand`` on its template too). Left-out members must leave
    no trace in the content: no id, no name in a summary, no count that names them.
    ``mcp-providers check`` warns (``aggregate-undercuts-deny``) when a configured policy denies
    ``read`` on a member of an aggregate that does not declare ``filtered=True``.
    """

    model_config = _FROZEN

    uris: tuple[str, ...] = Field(min_length=1)
    """URIs or URI templates of the members, e.g. ``("documcp://ssgs/{ssg}",)``. A template shares
    variables with the aggregate's own template by name: members of
    ``servicenow://{instance}/incidents`` are ``servicenow://{instance}/incidents/{number}``."""
    filtered: bool = False
    """Whether ``read`` leaves out every member the caller may not read (through
    :func:`mcp_providers.policy.allowed`), or refuses when its only member is denied (an alias)."""


class _ResourceBase(_Declared):
    model_config = _FROZEN

    name: str = Field(min_length=1, max_length=128)
    """Programmatic name, unique within the provider."""
    title: str | None = None
    """Human-readable name for display."""
    description: str | None = None
    mime_type: str | None = None
    """MIME type of every read, e.g. ``application/json``."""
    annotations: Annotations | None = None
    icons: tuple[Icon, ...] = ()
    """Images a client may show with it (2025-11-25+ sessions); see :class:`Icon`."""
    freshness: Freshness = Freshness()
    side_effects: Effects = "none"
    """Must stay ``"none"``: a resource that declares any effect is rejected by the checks
    (``resource-declares-side-effect``). It exists so the mistake is visible, not silent."""
    max_bytes: int | None = Field(default=None, ge=1)
    """Per-resource read budget in bytes, overriding the server's ``max_read_bytes``."""
    allow_truncation: bool = False
    """Over the budget, serve the first ``max_bytes`` (text cut at a character boundary) and record
    the cut in the receipt, instead of refusing the read. Never silent: the receipt says how much
    was cut."""
    meta: dict[str, Any] | None = None
    """Extra ``_meta`` entries for list results (keys should be reverse-DNS)."""
    members: Members | None = None
    """For a resource gathering other resources' data: where they are, and whether ``read``
    leaves out those the caller may not read (see :class:`Members`)."""


class Resource(_ResourceBase):
    """A resource at one fixed, absolute URI (listed by ``resources/list``)."""

    uri: str = Field(min_length=1)
    """Absolute URI with a scheme, no template expression, e.g. ``documcp://ssgs/available``."""
    size: int | None = Field(default=None, ge=0)
    """Size of the content in bytes (before any base64), when known."""


class ResourceTemplate(_ResourceBase):
    """A family of resources addressed by an RFC 6570 URI template (``resources/templates/list``)."""

    uri_template: str = Field(min_length=1)
    """Template accepted by the SDK's strict parser, e.g. ``servicenow://{instance}/incidents/{number}``."""
    completions: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Static completion values per variable name. A provider may also override
    :meth:`ResourceProvider.complete <mcp_providers.providers.ResourceProvider.complete>` for
    values it computes."""
    defaults: dict[str, str] = Field(default_factory=dict)
    """The value a variable takes when a read leaves it out, per variable name, as a client
    would spell it (``{"format": "json"}``): ``check`` names a policy rule denying it by that
    value, which such a read never meets. Decorated templates fill it from their defaults."""
    opaque_query: bool = False
    """The values of query variables (``{?a,b}``, ``{&c}``) are opaque: the provider passes them on
    as query values and never makes a path of them, so the router refuses only a NUL in them, not
    ``.``/``..`` segments or separators (``?q=..`` is a fair search term for an HTTP API). Path
    variables are checked either way. Default ``False``: every variable is held to path rules."""


class Tool(_Declared):
    """A tool the model may call. Annotations are derived from the declared effects."""

    model_config = _FROZEN

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")
    """1-128 characters from ``A-Z a-z 0-9 _ . -`` (MCP 2025-11-25 tool-name rule)."""
    title: str | None = None
    description: str = Field(min_length=1)
    input_model: type[BaseModel]
    """Pydantic model the arguments are validated against; its JSON Schema is the ``inputSchema``."""
    output_model: type[BaseModel] | None = None
    """Model of ``structuredContent``; its JSON Schema is the ``outputSchema``."""
    effects: Effects = "none"
    idempotent: bool = False
    """Calling twice with the same arguments changes nothing more than calling once."""
    open_world: bool = False
    """Reaches systems outside this server (another service's API, the web)."""
    meta: dict[str, Any] | None = None
    icons: tuple[Icon, ...] = ()
    """Images a client may show with it (2025-11-25+ sessions); see :class:`Icon`."""
    argument_resources: dict[str, str] = Field(default_factory=dict)
    """Argument name -> URI template of the resource a value of that argument names, with the
    argument as its only variable, e.g. ``{"ssg": "documcp://ssgs/{ssg}"}`` (as
    :attr:`PromptArgument.resource`). ``tools/list`` then offers in the argument's ``enum`` only the
    values whose resource the caller may read (as completion does), and ``tools/call`` refuses a
    string value (or a list item) whose resource the caller may not read, before the tool runs
    (action ``read``, asked about the expanded URI as a read of it is; ``-32003``)."""
    task_support: Literal["forbidden", "optional", "required"] = "forbidden"
    """Whether a call may run as a task the client polls (``io.modelcontextprotocol/tasks``,
    2026-07-28): ``"optional"`` runs as a task when the client declared the extension on the call,
    else as a plain call; ``"required"`` refuses a client that did not (-32021). For work that can
    outlast ``[server] read_timeout``: a task's run is bounded by ``[server.tasks] ttl_seconds`` instead."""

    def annotations(self) -> dict[str, bool]:
        """MCP tool annotation hints derived from :attr:`effects`, so they cannot contradict it.

        :returns: ``{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}``.
        """
        read_only = self.effects == "none"
        return {
            "readOnlyHint": read_only,
            "destructiveHint": self.effects == "destructive",
            "idempotentHint": read_only or self.idempotent,
            "openWorldHint": self.open_world,
        }


class ExtensionMethod(_Declared):
    """One request method an extension serves, e.g. ``io.example/search``.

    Called through the same pipeline as a tool: the gate asks ``call`` on the method name, the
    invoker runs the provider (in the side-effect scope when :attr:`effects` is ``"none"``), the
    call is audited.
    """

    model_config = ConfigDict(**_FROZEN, defer_build=True)  # built at first use (issue 43)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9_.-]+)+$", max_length=200)
    """A method name of the form ``<vendor prefix>/<name>``, never one the MCP spec defines."""
    description: str = Field(min_length=1)
    params_model: type[BaseModel]
    """Pydantic model the request's params are validated against (``_meta`` excluded)."""
    effects: Effects = "none"


class Extension(_Declared):
    """An extension a plugin offers (SEP-2133): advertised under ``capabilities.extensions`` and
    served by its :class:`ExtensionMethod`s."""

    model_config = ConfigDict(**_FROZEN, defer_build=True)  # built at first use (issue 43)

    identifier: str
    """Reverse-DNS identifier, e.g. ``io.example/search`` (the SDK's
    ``validate_extension_identifier`` rule; checked by rule ``extension-invalid``)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """What the capability carries for this extension (JSON)."""
    methods: tuple[ExtensionMethod, ...] = ()


class PromptArgument(_Declared):
    """One argument of a prompt template."""

    model_config = _FROZEN

    name: str = Field(min_length=1)
    description: str | None = None
    required: bool = False
    completions: tuple[str, ...] = ()
    """Values offered by ``completion/complete`` for this argument."""
    resource: str | None = None
    """URI template of the resource a value of this argument names, with the argument as its
    variable, e.g. ``"documcp://ssgs/{ssg}"`` for argument ``ssg``. When set, completion offers
    only values whose resource the caller may read, and ``prompts/get`` refuses a value whose
    resource the caller may not read (action ``read``, asked about the expanded URI)."""


class Prompt(_Declared):
    """A user-controlled prompt template (``prompts/list``, ``prompts/get``)."""

    model_config = _FROZEN

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")
    title: str | None = None
    description: str = Field(min_length=1)
    arguments: tuple[PromptArgument, ...] = ()
    icons: tuple[Icon, ...] = ()
    """Images a client may show with it (2025-11-25+ sessions); see :class:`Icon`."""
    meta: dict[str, Any] | None = None
    """Extra ``_meta`` entries for list results (keys should be reverse-DNS), e.g. :data:`ORIGIN_KEY`."""
