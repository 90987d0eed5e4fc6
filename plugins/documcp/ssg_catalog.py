"""Built-in plugin: the SSG catalog at ``documcp://ssgs/available`` and ``documcp://ssgs/{ssg}``.

- ``documcp://ssgs/available``: ``{"ssgs": [{id, name, description, language, complexity,
  buildSpeed, ecosystem, bestFor}, ...]}``, DocuMCP's shape field for field (no extra keys, so a
  client validating DocuMCP's schema strictly keeps working), listing only the SSGs whose
  ``documcp://ssgs/{ssg}`` the caller may read (it declares them as its members);
- ``documcp://ssgs/{ssg}``: one SSG with everything the registry knows (features, config file,
  formats, folders, docs link, install/build/serve commands) plus ``templateUri``, the URI of its
  configuration template (left out for a caller who may not read that template).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mcp_providers import policy
from mcp_providers.errors import NotFound
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Freshness, Members, Resource, ResourceTemplate
from mcp_providers.plugins.documcp.icons import ICONS
from mcp_providers.plugins.documcp.registry import SSG_IDS, SSGS, Catalog, by_id, mime_type, template_uri
from mcp_providers.providers import Content, ReadRequest, ResourceProvider

AVAILABLE = "documcp://ssgs/available"
ONE = "documcp://ssgs/{ssg}"


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


class SSGCatalog(ResourceProvider):
    """Every SSG the documentation plugins know, and each one by id."""

    name = "ssg-catalog"
    prefixes = ("documcp://ssgs/",)

    def __init__(self) -> None:
        self._available = _json(Catalog(ssgs=SSGS).body())

    def resources(self) -> Sequence[Resource]:
        """``documcp://ssgs/available``, static; its members are the SSGs (no size: it depends on
        what the caller may read)."""
        return [
            Resource(
                uri=AVAILABLE,
                name="ssgs-available",
                title="Available Static Site Generators",
                description="Every supported static site generator with language, complexity, "
                "build speed, ecosystem and what it is best for.",
                mime_type="application/json",
                freshness=Freshness.static(),
                icons=ICONS,
                members=Members(uris=(ONE,), filtered=True),
            )
        ]

    def templates(self) -> Sequence[ResourceTemplate]:
        """``documcp://ssgs/{ssg}``, completing the registry's ids."""
        return [
            ResourceTemplate(
                uri_template=ONE,
                name="ssg",
                title="One static site generator",
                description="One static site generator by id: the catalog fields plus features, "
                "config file, folders, documentation link, install/build/serve commands and the "
                "URI of its configuration template.",
                mime_type="application/json",
                freshness=Freshness.static(),
                icons=ICONS,
                completions={"ssg": SSG_IDS},
            )
        ]

    async def read(self, request: ReadRequest) -> Content:
        """The catalog, or one SSG as JSON.

        :raises NotFound: ``{ssg}`` is not a registry id; the message lists the known ids.
        """
        if request.uri == AVAILABLE:
            visible = tuple(s for s in SSGS if policy.allowed("read", ONE.replace("{ssg}", s.id)))
            if len(visible) == len(SSGS):
                return Content(text=self._available)  # the same object every time: its digest is kept
            return Content(text=_json(Catalog(ssgs=visible).body()))
        ssg = by_id(request.params.get("ssg", ""))
        if ssg is None:
            raise NotFound(
                f"No SSG {request.params.get('ssg')!r}; known ids: {', '.join(_readable_ids())}",
                data={"uri": request.uri},
            )
        entry = ssg.model_dump(mode="json", by_alias=True)
        if policy.allowed("read", template_uri(ssg)):  # named only to who may read it, as the prompts do
            entry["templateUri"] = template_uri(ssg)
            entry["templateMimeType"] = mime_type(ssg)
        return Content(text=_json(entry))


def _readable_ids() -> list[str]:
    """The ids whose entries the caller may read (a hint never names a denied one)."""
    return [i for i in SSG_IDS if policy.allowed("read", ONE.replace("{ssg}", i))]


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    """The SSG catalog provider (owns ``documcp://ssgs/``)."""
    return [SSGCatalog()]
