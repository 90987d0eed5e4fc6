"""Providers are handed the URI the router matched, in canonical form (issue 24, item 5).

``ReadRequest.uri`` is the canonical URI (lower-case scheme, escapes of unreserved characters
decoded), so a provider comparing it with its declared constants serves every spelling the router
accepts; ``ReadRequest.requested_uri`` keeps the URI as the client sent it. The result and its
receipt still name the URI as sent (with ``canonicalUri`` beside it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import pytest

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers._host.advisories import advisories
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins.documcp import config_templates, ssg_catalog, workflows
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

DOCUMCP = {"ssg_catalog": ssg_catalog, "config_templates": config_templates, "workflows": workflows}

SPELLINGS = [
    # (as sent, canonical): the three, then other spellings of the same fixed URIs
    ("DOCUMCP://ssgs/available", "documcp://ssgs/available"),
    ("DOCUMCP://templates/hugo-config", "documcp://templates/hugo-config"),
    ("DOCUMCP://workflows/all", "documcp://workflows/all"),
    ("documcp://ssgs/%61vailable", "documcp://ssgs/available"),
    ("DocuMCP://templates/hugo%2dconfig", "documcp://templates/hugo-config"),
    ("documcp://templates/diataxis%2Dstructure", "documcp://templates/diataxis-structure"),
    ("documcp://workflows/%71uick-setup", "documcp://workflows/quick-setup"),
    ("Documcp://workflows/guidance", "documcp://workflows/guidance"),
    ("documcp://work%66lows/all", "documcp://workflows/all"),
]


@pytest.mark.parametrize(("sent", "canon"), SPELLINGS)
async def test_every_spelling_of_a_documcp_uri_reads_what_the_canonical_one_does(sent: str, canon: str) -> None:
    async with connect(compose(DOCUMCP)) as client:
        expected = await client.read_resource(canon)
        got = await client.read_resource(sent)
    assert got.contents[0].text == expected.contents[0].text  # type: ignore[union-attr]
    assert got.contents[0].uri == sent  # the answer names the URI the client asked for
    receipt = (got.meta or {})[RECEIPT_KEY]
    assert receipt["uri"] == sent and receipt["canonicalUri"] == canon, receipt


@pytest.mark.parametrize(
    ("sent", "ssg"),
    [("DOCUMCP://ssgs/hugo", "hugo"), ("documcp://ssgs/%68ugo", "hugo"), ("documcp://ssgs/mk%64ocs", "mkdocs")],
)
async def test_template_reads_in_other_spellings_still_work(sent: str, ssg: str) -> None:
    async with connect(compose(DOCUMCP)) as client:
        got = await client.read_resource(sent)
    assert json.loads(got.contents[0].text)["id"] == ssg  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "sent", ["DOCUMCP://workflows/quick-documentation-setup", "documcp://workflows/%71uick-documentation-setup"]
)
async def test_a_workflow_by_id_reads_in_other_spellings(sent: str) -> None:
    async with connect(compose(DOCUMCP)) as client:
        got = await client.read_resource(sent)
    assert json.loads(got.contents[0].text)["id"] == "quick-documentation-setup"  # type: ignore[union-attr]


class Recorder(ResourceProvider):
    """Records the ReadRequest of each read."""

    name = "recorder"
    prefixes = ("rec://",)

    def __init__(self) -> None:
        self.requests: list[ReadRequest] = []

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="rec://fixed", name="fixed")]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="rec://items/{item}", name="item")]

    async def read(self, request: ReadRequest) -> Content:
        self.requests.append(request)
        return Content(text="ok")


@pytest.mark.parametrize(
    ("sent", "canon", "params"),
    [
        ("REC://fixed", "rec://fixed", {}),
        ("rec://%66ixed", "rec://fixed", {}),
        ("rec://fixed", "rec://fixed", {}),
        ("Rec://items/%61b", "rec://items/ab", {"item": "ab"}),
        ("rec://items/caf%c3%a9", "rec://items/caf%C3%A9", {"item": "café"}),
        ("rec://items/café", "rec://items/caf%C3%A9", {"item": "café"}),
    ],
)
async def test_the_provider_gets_the_canonical_uri_and_the_one_sent(
    sent: str, canon: str, params: Mapping[str, str]
) -> None:
    recorder = Recorder()
    plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda: [recorder]))
    async with connect(compose({"rec": plugin})) as client:
        await client.read_resource(sent)
    (request,) = recorder.requests
    assert (request.uri, request.requested_uri, dict(request.params)) == (canon, sent, params)


def test_a_read_request_built_by_hand_was_sent_by_no_client() -> None:
    request = ReadRequest(uri="rec://fixed", resource=Resource(uri="rec://fixed", name="fixed"))
    assert request.requested_uri is None


@pytest.mark.parametrize("declared", ["REC://fixed", "rec://%66ixed", "rec://caf\u00e9"])
def test_check_warns_about_a_fixed_uri_not_declared_in_canonical_form(declared: str) -> None:
    class Odd(Recorder):
        def resources(self) -> Sequence[Resource]:
            return [Resource(uri=declared, name="odd")]

    plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda: [Odd()]))
    composition = compose({"rec": plugin})
    warnings = [str(p) for p in advisories(composition.assembly.declared)]
    assert any("uri-not-canonical" in w and declared in w for w in warnings), warnings


def test_check_says_nothing_of_canonical_fixed_uris() -> None:
    composition = compose(DOCUMCP)
    assert not [p for p in advisories(composition.assembly.declared) if p.rule == "uri-not-canonical"]
