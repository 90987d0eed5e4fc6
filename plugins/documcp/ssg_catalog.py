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

from mcp_providers import policy
from mcp_providers.plugin import Freshness, Members, NotFound, Plugin
from mcp_providers.plugins.documcp.icons import ICONS
from mcp_providers.plugins.documcp.registry import SSG_IDS, SSGS, Catalog, by_id, mime_type, template_uri

AVAILABLE = "documcp://ssgs/available"
ONE = "documcp://ssgs/{ssg}"

catalog = Plugin("ssg-catalog", prefixes=["documcp://ssgs/"])
"""Every SSG the documentation plugins know, and each one by id."""


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


_EVERY = _json(Catalog(ssgs=SSGS).body())  # the same object every time: its digest is kept


@catalog.resource(
    AVAILABLE,
    name="ssgs-available",
    title="Available Static Site Generators",
    description="Every supported static site generator with language, complexity, build speed, ecosystem and "
    "what it is best for.",
    mime_type="application/json",
    freshness=Freshness.static(),
    icons=ICONS,
    members=Members(uris=(ONE,), filtered=True),  # no size: it depends on what the caller may read
)
async def available() -> str:
    """The catalog, listing only the SSGs the caller may read."""
    visible = tuple(s for s in SSGS if policy.allowed("read", ONE.replace("{ssg}", s.id)))
    return _EVERY if len(visible) == len(SSGS) else _json(Catalog(ssgs=visible).body())


@catalog.template(
    ONE,
    name="ssg",
    title="One static site generator",
    description="One static site generator by id: the catalog fields plus features, config file, folders, "
    "documentation link, install/build/serve commands and the URI of its configuration template.",
    mime_type="application/json",
    freshness=Freshness.static(),
    icons=ICONS,
    completions={"ssg": SSG_IDS},
)
async def one(ssg: str) -> str:
    """One SSG as JSON.

    :raises NotFound: ``ssg`` is not a registry id; the message lists the ids the caller may read.
    """
    found = by_id(ssg)
    if found is None:
        readable = [i for i in SSG_IDS if policy.allowed("read", ONE.replace("{ssg}", i))]  # never a denied one
        raise NotFound(f"No SSG {ssg!r}; known ids: {', '.join(readable)}")
    entry = found.model_dump(mode="json", by_alias=True)
    if policy.allowed("read", template_uri(found)):  # named only to who may read it, as the prompts do
        entry["templateUri"] = template_uri(found)
        entry["templateMimeType"] = mime_type(found)
    return _json(entry)
