"""The providers of every configured upstream, listed once per settings object for the plugin's
three hooks (:func:`providers_of`). Imported by the hooks only when a server is configured: this
module brings in the SDK's client, the link and the mapping, which a ``serve`` without
``[plugins.upstream]`` never uses."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_providers.models import Freshness
from mcp_providers.plugins.upstream.link import Link
from mcp_providers.plugins.upstream.listing import list_at_start
from mcp_providers.plugins.upstream.mapping import Homes, LeftOut, Listing, declare, settle
from mcp_providers.plugins.upstream.providers import UpstreamPrompts, UpstreamResources, UpstreamTools
from mcp_providers.plugins.upstream.settings import OnBehalfOfAuth, ServerSettings, UpstreamSettings

__all__ = ["Built", "Unavailable", "providers_of"]

_START_FIX = (
    "start the server, check its command, url and variables; serve without --strict serves the others "
    "and reconnects to it while running"
)


@dataclass(frozen=True, slots=True)
class Unavailable(LeftOut):
    """The whole upstream serves nothing: ``check`` fails and ``serve --strict`` refuses
    (``source-unavailable``, see :func:`mcp_providers._host.advisories.unavailable_sources`)."""

    unavailable: bool = True


@dataclass(frozen=True, slots=True)
class Built:
    """The providers of every configured upstream."""

    resources: tuple[UpstreamResources, ...]
    tools: tuple[UpstreamTools, ...]
    prompts: tuple[UpstreamPrompts, ...]


def providers_of(settings: UpstreamSettings) -> Built:
    """List every upstream once per settings object and make its three providers. An upstream
    that cannot be listed gets providers that declare nothing; its resource provider keeps why
    (:attr:`UpstreamResources.failure`) and its lifespan keeps trying to connect; once it does,
    it asks for a reload, which lists it and serves what it lists. What two
    upstreams both list under one URI or name is served by the one configured first (:func:`settle`)."""
    if settings._built is not None:
        return settings._built  # type: ignore[no-any-return]
    found = list_at_start(settings.servers)
    resources, tools, prompts, listings = [], [], [], []
    for server in settings.servers:
        link = Link(server)
        homes = Homes(prefixes=server.prefixes, namespace=server.namespace)
        listed = found.get(server.name)
        failure = listed if isinstance(listed, str) else None
        listing = Listing()
        if isinstance(listed, dict):
            listing = declare(server, homes, listed, _freshness(listed, server))
        if failure is not None:
            listing.left_out.append(Unavailable(server.name, f"nothing served: {failure}", _START_FIX))
        listings.append((server.name, listing))
        resources.append(UpstreamResources(link, homes, listing, failure, listed if isinstance(listed, dict) else None))
        tools.append(UpstreamTools(link, listing, homes))
        prompts.append(UpstreamPrompts(link, listing, homes))
    settle(listings)
    for name, listing in listings:  # after settle, which may have left out all of a later upstream
        empty = not (listing.resources or listing.templates or listing.tools or listing.prompts)
        if empty and isinstance(found.get(name), dict):
            listing.left_out.append(Unavailable(name, *_nothing(name, listing)))
    settings._built = Built(tuple(resources), tuple(tools), tuple(prompts))
    return settings._built  # type: ignore[no-any-return]


def _nothing(name: str, listing: Listing) -> tuple[str, str]:
    """Why an upstream that was listed serves nothing, and the operator's fix."""
    if listing.left_out:
        return (
            f"nothing served: upstream {name!r} listed {len(listing.left_out)} component(s), each left out "
            "(the left-out lines say why)",
            "give it prefixes or a namespace its URIs fall under, or remove it from [plugins.upstream]",
        )
    return (
        f"nothing served: upstream {name!r} lists no resource, template, tool or prompt",
        "check that its command or url is the server you meant, or remove it from [plugins.upstream]",
    )


def _freshness(listed: dict[str, object], server: ServerSettings) -> Freshness:
    """Read from the upstream on every request; watchable when the upstream offers
    ``resources/subscribe`` (fixed resources only: the mapping leaves templates unwatchable) and
    answers every caller as one identity. An ``on_behalf_of`` upstream would be watched as the
    client itself, so its notices would reach callers the upstream hides a resource from (tester
    30; a ServiceNow instance with ``jwt_bearer`` auth is not watched either)."""
    per_caller = isinstance(server.auth, OnBehalfOfAuth)
    return Freshness.live(subscribable=bool(listed.get("subscribe")) and not per_caller)
