"""A skill file that copies a resource never serves what a rule on that resource refuses.

The built-in workflows serve each workflow as a skill whose ``workflow.json`` and ``templates/...``
are the same bytes as ``documcp://workflows/<id>`` (and its short alias) and
``documcp://templates/<ssg>-config``. A deny on those resources was read past through the skill
(tester twenty-two F7). :attr:`SkillSource.copies` names the resources a file copies; the file is
then refused, its skill hidden from ``skills/list`` and refused by ``skills/get``, and the file left
out of its directory, wherever the caller may not read one of them.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp import Client, MCPError
from pydantic import TypeAdapter

from mcp_providers import SkillProvider, SkillSource, hookimpl
from mcp_providers._serve.statics import aggregate_report
from mcp_providers.plugins import policy
from mcp_providers.plugins.documcp import config_templates, workflows
from mcp_providers.testing import check, compose, connect

pytestmark = pytest.mark.anyio

ROOT = "skill://documcp/workflows/full-documentation-setup"
HUGO = f"{ROOT}/templates/hugo-config.toml"
JSON = f"{ROOT}/workflow.json"
DENIED = -32003


def _composed(*targets: str) -> Any:
    rules = [{"effect": "deny", "actions": ["read"], "targets": list(targets)}]
    plugins = {"workflows": workflows, "config_templates": config_templates, "policy": policy}
    return compose(plugins, {"policy": {"rules": rules}})


async def _call(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = types.Request[dict[str, Any], str](method=method, params=params)
    return await client.session.send_request(request, TypeAdapter(dict[str, Any]))  # type: ignore[arg-type,no-any-return]


@pytest.mark.parametrize(
    ("denied", "copy"),
    [
        ("documcp://templates/hugo-config", HUGO),
        ("documcp://workflows/full-documentation-setup", JSON),
        ("documcp://workflows/full-setup", JSON),  # the short alias serves the same bytes
    ],
)
async def test_a_copy_of_a_denied_resource_is_refused_and_its_skill_hidden(denied: str, copy: str) -> None:
    async with connect(_composed(denied)) as client:
        with pytest.raises(MCPError) as read:
            await client.read_resource(denied)
        assert read.value.code == DENIED
        with pytest.raises(MCPError) as copied:
            await client.read_resource(copy)
        # a refusal names no resource the caller may not see (tester 31 F7): only what it asked for
        assert copied.value.code == DENIED and denied not in copied.value.message and copy in copied.value.message
        listed = [s["uri"] for s in (await _call(client, "skills/list", {}))["skills"]]
        assert f"{ROOT}/SKILL.md" not in listed and listed  # the other workflows' skills stay
        with pytest.raises(MCPError) as got:
            await _call(client, "skills/get", {"uri": f"{ROOT}/SKILL.md"})
        assert got.value.code == DENIED and denied not in got.value.message and copy not in got.value.message
        folder = copy.rsplit("/", 1)[0]
        shown = [r["uri"] for r in (await _call(client, "resources/directory/read", {"uri": folder}))["resources"]]
        assert copy not in shown and shown
        everything = [r.uri for r in (await client.list_resources()).resources]  # tester twenty-six F6
        assert copy not in everything and any(u.startswith(ROOT) for u in everything), everything
        # SKILL.md writes the workflow out as prose (tester twenty-three F3) and names what every
        # template copies (tester twenty-seven F7): it is refused, as its skill is hidden
        with pytest.raises(MCPError) as prose:
            await client.read_resource(f"{ROOT}/SKILL.md")
        assert prose.value.code == DENIED and denied not in prose.value.message
        assert f"{ROOT}/SKILL.md" not in everything
        root = [r["uri"] for r in (await _call(client, "resources/directory/read", {"uri": ROOT}))["resources"]]
        assert f"{ROOT}/SKILL.md" not in root and root


async def test_without_a_rule_every_copy_is_served_with_its_originals_bytes() -> None:
    async with connect(_composed("documcp://nothing")) as client:
        for original, copy in (("documcp://templates/hugo-config", HUGO), ("documcp://workflows/full-setup", JSON)):
            mine = (await client.read_resource(copy)).contents[0]
            theirs = (await client.read_resource(original)).contents[0]
            assert mine.text == theirs.text  # type: ignore[union-attr]


class _Copier(SkillProvider):
    name = "copier"
    prefixes = ("skill://copier/",)

    def __init__(self, copies: Any) -> None:
        self._copies = copies

    def skills(self) -> list[SkillSource]:
        return [SkillSource("skill://copier/one", ("SKILL.md", "a.md"), self._copies)]

    def read(self, skill: SkillSource, path: str) -> bytes:
        return b"---\nname: one\ndescription: One.\n---\n" if path == "SKILL.md" else b"a"


@pytest.mark.parametrize(
    ("copies", "said"),
    [
        ({"b.md": "notes://b"}, "copies names 'b.md', which is not one of its files"),
        ({"a.md": "not a uri"}, "is not an absolute URI in canonical form"),
        ({"a.md": "Notes://A/%7e"}, "is not an absolute URI in canonical form"),
        ({"a.md": ()}, "not a URI or a tuple of URIs"),
        ({"a.md": 3}, "not a URI or a tuple of URIs"),
        (["a.md"], "copies is not a mapping of paths to URIs"),
    ],
)
async def test_a_wrong_copies_mapping_is_a_check_problem_naming_what_is_wrong(copies: Any, said: str) -> None:
    class plugin:
        @hookimpl
        def register_skill_providers(self) -> list[SkillProvider]:
            return [_Copier(copies)]

    lines = await check(compose({"copier": plugin()}, strict=False))
    assert any("skill-files" in line and said in line for line in lines), lines


def test_check_warns_when_a_rule_denies_an_alias_but_not_what_it_copies() -> None:
    """``documcp://workflows/full-setup`` serves the bytes of ``.../full-documentation-setup``: a
    deny on the short URI alone leaves the workflow readable at the other (the same kind: two URIs,
    one content), so ``check`` names it; denying the original too is quiet."""
    warned = aggregate_report(_composed("documcp://workflows/full-setup"))
    assert len(warned) == 1 and "copy-deny-leaves-original" in warned[0]
    assert "documcp://workflows/full-documentation-setup" in warned[0] and "deny read on" in warned[0]
    both = ("documcp://workflows/full-setup", "documcp://workflows/full-documentation-setup")
    assert aggregate_report(_composed(*both)) == []
    assert aggregate_report(_composed("skill://*")) == []  # hiding the skills is not hiding the workflows


async def test_a_skill_md_is_refused_where_the_guidance_it_writes_out_is_denied() -> None:
    async with connect(_composed("documcp://workflows/guidance")) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"{ROOT}/SKILL.md")
        assert refused.value.code == DENIED and "documcp://workflows/guidance" not in refused.value.message  # t31 F7
        assert (await _call(client, "skills/list", {}))["skills"] == []  # every workflow's SKILL.md writes it out


class _Manifest(SkillProvider):
    """One skill: ``SKILL.md`` (copying nothing) names ``a.md``, which copies ``notes://a``."""

    name = "manifest"
    prefixes = ("skill://manifest/",)

    def skills(self) -> list[SkillSource]:
        return [SkillSource("skill://manifest/one", ("SKILL.md", "a.md"), {"a.md": "notes://a"})]

    def read(self, skill: SkillSource, path: str) -> bytes:
        if path == "SKILL.md":
            return b"---\nname: one\ndescription: One.\n---\nSee [a.md](a.md), a copy of notes://a.\n"
        return b"a"


def _manifest(*targets: str) -> Any:
    class plugin:
        @hookimpl
        def register_skill_providers(self) -> list[SkillProvider]:
            return [_Manifest()]

    rules = [{"effect": "deny", "actions": ["read"], "targets": list(targets)}]
    return compose({"manifest": plugin(), "policy": policy}, {"policy": {"rules": rules}})


async def test_a_skill_md_is_refused_to_whoever_may_not_read_what_its_skill_copies() -> None:
    """Tester twenty-seven F7: a ``SKILL.md`` may name what its skill's files copy in prose, so it
    is judged on each of them, as ``skills/list`` judges the skill (a rule on a skill file's own URI
    hides that file, and leaves the rest readable: test_skills.py)."""
    skill_md, denied = "skill://manifest/one/SKILL.md", "notes://a"
    async with connect(_manifest(denied)) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(skill_md)
        assert refused.value.code == DENIED and denied not in refused.value.message  # t31 F7
        assert skill_md not in [r.uri for r in (await client.list_resources()).resources]
        assert (await _call(client, "skills/list", {}))["skills"] == []
        with pytest.raises(MCPError):
            await _call(client, "resources/directory/read", {"uri": "skill://manifest/one"})
    async with connect(_manifest("notes://other")) as client:  # the same skill, nothing of it denied
        assert (await client.read_resource(skill_md)).contents
        assert skill_md in [r.uri for r in (await client.list_resources()).resources]
        assert [s["uri"] for s in (await _call(client, "skills/list", {}))["skills"]] == [skill_md]


def test_an_index_of_several_denied_while_they_stay_readable_is_not_called_a_copy() -> None:
    """Tester twenty-three F5: an index over several entries (Members of several fixed URIs) is not
    an alias; denying it while its entries stay readable is an operator's choice, not warned."""
    from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
    from mcp_providers.models import Members

    class Notes(ResourceProvider):
        name = "notes"
        prefixes = ("notes://",)

        def resources(self) -> list[Resource]:
            index = Resource(
                uri="notes://index", name="index", members=Members(uris=("notes://a", "notes://b"), filtered=True)
            )
            return [index, Resource(uri="notes://a", name="a"), Resource(uri="notes://b", name="b")]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text=request.uri)

    class plugin:
        @hookimpl
        def register_resource_providers(self) -> list[ResourceProvider]:
            return [Notes()]

    rules = [{"effect": "deny", "actions": ["read"], "targets": ["notes://index"]}]
    composition = compose({"notes": plugin(), "policy": policy}, {"policy": {"rules": rules}})
    assert aggregate_report(composition) == []
