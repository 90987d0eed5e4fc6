"""Skills from plugins (issue 44; SEP-2640, ``io.modelcontextprotocol/skills``).

A plugin with two skills (``tests/skills_fixture``: a folder shipped in its package and one from a
provider) is served to a real client, the SDK's in-memory ``Client`` speaking 2026-07-28. No
published client speaks the extension's methods yet, so they are sent as raw JSON-RPC requests
and every answer is validated against a JSON Schema written from the extension's TypeScript
definitions (``specification/stable/skills.mdx``). The same files are read as ordinary resources
in both eras. A deny on one skill's files hides the skill and refuses its files in every method.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any

import jsonschema
import mcp_types as types
import pytest
from mcp import Client, MCPError
from pydantic import TypeAdapter
from skills_fixture import RUNBOOK, Runbooks, notes

from mcp_providers import Decision, SkillProvider, SkillSource, hookimpl
from mcp_providers._cli.explore import INSPECT_SCHEMA, inventory
from mcp_providers._serve.composition import compose
from mcp_providers._serve.transport.status import plugins as status_plugins
from mcp_providers.config import Config
from mcp_providers.skills import SKILLS_EXTENSION, frontmatter_of
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

DAILY = "skill://notes/daily-review/SKILL.md"
RUNBOOK_URI = "skill://notes-ops/runbook/SKILL.md"
DENIED = -32003

_SKILL_RESOURCE = {
    "type": "object",
    "required": ["uri", "digest", "size"],
    "properties": {
        "uri": {"type": "string"},
        "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
        "size": {"type": "integer", "minimum": 0},
    },
}
_SKILL = {
    "type": "object",
    "required": ["uri", "frontmatter", "resources"],
    "properties": {
        "uri": {"type": "string"},
        "frontmatter": {
            "type": "object",
            "required": ["name", "description"],
            "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
        },
        "resources": {"oneOf": [{"type": "array", "items": _SKILL_RESOURCE}, {"const": "dynamic"}]},
    },
}
_CACHEABLE = {"ttlMs": {"type": "integer", "minimum": 0}, "cacheScope": {"enum": ["public", "private"]}}
SCHEMAS = {
    "skills/list": {
        "type": "object",
        "required": ["skills", "ttlMs", "cacheScope", "resultType"],
        "properties": {
            "skills": {"type": "array", "items": _SKILL},
            "nextCursor": {"type": "string"},
            "resultType": {"const": "complete"},
            **_CACHEABLE,
        },
    },
    "skills/get": {
        "type": "object",
        "required": ["skill", "ttlMs", "cacheScope", "resultType"],
        "properties": {"skill": _SKILL, "resultType": {"const": "complete"}, **_CACHEABLE},
    },
    "resources/directory/read": {
        "type": "object",
        "required": ["resources", "resultType"],
        "properties": {
            "resources": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["uri", "name"],
                    "properties": {
                        "uri": {"type": "string"},
                        "name": {"type": "string"},
                        "mimeType": {"type": "string"},
                    },
                },
            },
            "nextCursor": {"type": "string"},
            "resultType": {"const": "complete"},
        },
    },
}


async def _call(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request of the extension, its result checked against the extension's schema."""
    request = types.Request[dict[str, Any], str](method=method, params=params)
    result: dict[str, Any] = await client.session.send_request(request, TypeAdapter(dict[str, Any]))  # type: ignore[arg-type]
    jsonschema.validate(result, SCHEMAS[method])
    return result


async def _refused(client: Client, method: str, params: dict[str, Any]) -> MCPError:
    with pytest.raises(MCPError) as refused:
        await _call(client, method, params)
    return refused.value


async def _file(client: Client, uri: str) -> bytes:
    contents = (await client.read_resource(uri)).contents
    assert len(contents) == 1
    item = contents[0]
    return item.text.encode() if isinstance(item, types.TextResourceContents) else base64.b64decode(item.blob)


async def _walk(client: Client, directory: str) -> set[str]:
    """Every file under ``directory``, found by reading directories only."""
    found: set[str] = set()
    for child in (await _call(client, "resources/directory/read", {"uri": directory}))["resources"]:
        if child.get("mimeType") == "inode/directory":
            found |= await _walk(client, child["uri"])
        else:
            found.add(child["uri"])
    return found


def _composed(**plugins: object) -> Any:
    composition = compose(Config(), load_entrypoints=False, plugins={"notes": notes, **plugins})
    assert composition.failures == []
    return composition


async def test_a_plugin_with_a_folder_skill_and_a_provider_skill_is_listed_got_and_read() -> None:
    async with connect(_composed()) as client:
        assert client.server_capabilities.extensions == {SKILLS_EXTENSION: {"directoryRead": True}}
        assert client.server_capabilities.resources is not None  # the extension needs the base capability
        listed = (await _call(client, "skills/list", {}))["skills"]
        assert [s["uri"] for s in listed] == [DAILY, RUNBOOK_URI]
        for entry in listed:
            got = (await _call(client, "skills/get", {"uri": entry["uri"]}))["skill"]
            assert got == entry
            for file in entry["resources"]:  # each file as the host verifies it: size, digest
                data = await _file(client, file["uri"])
                assert len(data) == file["size"]
                assert file["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert frontmatter_of(await _file(client, entry["uri"])) == entry["frontmatter"]
            root = entry["uri"].removesuffix("/SKILL.md")
            assert await _walk(client, root) == {f["uri"] for f in entry["resources"]}
        daily = listed[0]
        assert daily["frontmatter"] == {
            "name": "daily-review",
            "description": "Review the day's notes and file each under its notebook. Use when the user asks for "
            "a daily review.",
            "license": "Apache-2.0",
            "metadata": {"version": "1.0"},
        }
        assert [f["uri"].removeprefix("skill://notes/daily-review/") for f in daily["resources"]] == [
            "SKILL.md",
            "templates/daily.md",
            "templates/weekly/summary.md",
        ]
        templates = await _call(client, "resources/directory/read", {"uri": "skill://notes/daily-review/templates"})
        assert [(r["uri"], r.get("mimeType")) for r in templates["resources"]] == [
            ("skill://notes/daily-review/templates/daily.md", "text/markdown"),
            ("skill://notes/daily-review/templates/weekly", "inode/directory"),
        ]
        assert (await _call(client, "skills/get", {"uri": RUNBOOK_URI}))["skill"]["resources"][1]["size"] == len(
            RUNBOOK["steps/restart.md"]
        )


async def test_the_extension_answers_its_errors_as_the_spec_says() -> None:
    async with connect(_composed()) as client:
        unknown = await _refused(client, "skills/get", {"uri": "skill://notes/nothing/SKILL.md"})
        assert unknown.code == types.INVALID_PARAMS and "No skill is served at" in unknown.message
        not_dir = await _refused(client, "resources/directory/read", {"uri": DAILY})
        assert not_dir.code == types.INVALID_PARAMS and "is not a directory resource" in not_dir.message
        file_of_skill = await _refused(client, "skills/get", {"uri": "skill://notes/daily-review/templates/daily.md"})
        assert file_of_skill.code == types.INVALID_PARAMS


async def test_older_sessions_read_the_same_files_as_resources_and_are_not_offered_the_methods() -> None:
    async with connect(_composed(), "legacy") as client:
        assert SKILLS_EXTENSION not in (client.server_capabilities.extensions or {})
        listed = {r.uri for r in (await client.list_resources()).resources}
        assert {DAILY, RUNBOOK_URI, "skill://notes/daily-review/templates/daily.md"} <= listed
        assert (await _file(client, RUNBOOK_URI)) == RUNBOOK["SKILL.md"]
        refused = await _refused(client, "skills/list", {})
        assert refused.code == types.METHOD_NOT_FOUND and "2026-07-28" in refused.message


class deny_daily:
    """Denies every action on the daily-review skill's files."""

    @hookimpl
    def authorize(self, action: str, target: str) -> Decision | None:
        return Decision(False, "not for you") if target.startswith("skill://notes/daily-review/") else None


async def test_a_deny_on_a_skills_files_hides_it_and_refuses_its_files_in_every_method() -> None:
    async with connect(_composed(policy=deny_daily())) as client:
        listing = await _call(client, "skills/list", {})
        assert [s["uri"] for s in listing["skills"]] == [RUNBOOK_URI]
        assert listing["cacheScope"] == "private"  # what is listed depends on who asks
        assert (await _refused(client, "skills/get", {"uri": DAILY})).code == DENIED
        for path in ("SKILL.md", "templates/daily.md", "templates/weekly/summary.md"):
            with pytest.raises(MCPError) as read:
                await client.read_resource(f"skill://notes/daily-review/{path}")
            assert read.value.code == DENIED
        listed = {r.uri for r in (await client.list_resources()).resources}
        assert not any(u.startswith("skill://notes/daily-review/") for u in listed) and RUNBOOK_URI in listed
        for directory in ("skill://notes/daily-review", "skill://notes/daily-review/templates"):
            hidden = await _refused(client, "resources/directory/read", {"uri": directory})
            assert hidden.code == types.INVALID_PARAMS  # as absent as the skill is from the list
        assert (await _call(client, "skills/get", {"uri": RUNBOOK_URI}))["skill"]["uri"] == RUNBOOK_URI


class deny_one_file:
    @hookimpl
    def authorize(self, action: str, target: str) -> Decision | None:
        if action == "read" and target == "skill://notes/daily-review/templates/daily.md":
            return Decision(False, "drafts only")
        return None


async def test_one_hidden_file_hides_the_whole_skill_since_an_entry_lists_every_file() -> None:
    async with connect(_composed(policy=deny_one_file())) as client:
        assert [s["uri"] for s in (await _call(client, "skills/list", {}))["skills"]] == [RUNBOOK_URI]
        refused = await _refused(client, "skills/get", {"uri": DAILY})
        # naming only the skill asked for: the hidden file is hidden from the refusal too (tester 31 F7)
        assert refused.code == DENIED and "templates/daily.md" not in refused.message and DAILY in refused.message
        templates = await _call(client, "resources/directory/read", {"uri": "skill://notes/daily-review/templates"})
        assert [r["uri"] for r in templates["resources"]] == ["skill://notes/daily-review/templates/weekly"]
        assert (await _file(client, DAILY)).startswith(b"---\nname: daily-review\n")  # the rest stays readable


async def test_without_a_skill_the_extension_is_not_declared() -> None:
    class plain:
        @hookimpl
        def register_resource_providers(self) -> list[Any]:
            return []

    composition = compose(Config(), load_entrypoints=False, plugins={"plain": plain()})
    async with connect(composition) as client:
        assert SKILLS_EXTENSION not in (client.server_capabilities.extensions or {})
        assert (await _refused(client, "skills/list", {})).code == types.METHOD_NOT_FOUND


class _Bad(SkillProvider):
    name = "bad-skills"
    prefixes = ("skill://bad/",)

    def __init__(self, files: dict[str, bytes], root: str = "skill://bad/broken", changing: bool = False) -> None:
        self.files, self.root, self.changing, self.reads = files, root, changing, 0

    def skills(self) -> Sequence[SkillSource]:
        return [SkillSource(self.root, tuple(self.files))]

    def read(self, skill: SkillSource, path: str) -> bytes:
        self.reads += 1
        return self.files[path] + (str(self.reads).encode() if self.changing else b"")


GOOD = b"---\nname: broken\ndescription: A skill.\n---\n"


@pytest.mark.parametrize(
    ("provider", "rule", "said"),
    [
        (_Bad({"SKILL.md": b"# no frontmatter\n"}), "skill-frontmatter", "must begin with a line '---'"),
        (_Bad({"SKILL.md": b"---\nname: Broken_1\ndescription: x\n---\n"}), "skill-frontmatter", "name: String"),
        (_Bad({"SKILL.md": b"---\nname: broken\n---\n"}), "skill-frontmatter", "description: Field required"),
        (_Bad({"SKILL.md": GOOD}, root="skill://bad/other"), "skill-root", "is not the skill's name 'broken'"),
        (_Bad({"SKILL.md": GOOD, "../escape.md": b"x"}), "skill-files", "'.'/'..' segment"),
        (_Bad({"SKILL.md": GOOD, "a b.md": b"x"}), "skill-files", "has a space"),
        (_Bad({"README.md": GOOD}), "skill-files", "has no SKILL.md"),
        (_Bad({"SKILL.md": GOOD}, changing=True), "skill-content-changed", "two reads gave different bytes"),
        (_Bad({"SKILL.md": GOOD}, root="SKILL://bad/broken"), "skill-root", "in canonical form"),
        (_Bad({"SKILL.md": GOOD, **{f"f{i}.md": b"" for i in range(512)}}), "skill-too-large", "513 files, over 512"),
        (_Bad({"SKILL.md": GOOD, "big.bin": bytes(16 * 1024 * 1024)}), "skill-too-large", "over 16777216"),
    ],
    ids=[
        "no-frontmatter",
        "bad-name",
        "no-description",
        "root-not-name",
        "dot-dot",
        "space",
        "no-skill-md",
        "changes",
        "root-not-canonical",
        "too-many-files",
        "too-many-bytes",
    ],
)
async def test_a_skill_that_breaks_a_rule_is_a_check_problem_and_the_rest_is_served(
    provider: _Bad, rule: str, said: str
) -> None:
    class bad:
        @hookimpl
        def register_skill_providers(self) -> list[SkillProvider]:
            return [provider]

    composition = compose(Config(), load_entrypoints=False, plugins={"notes": notes, "bad": bad()})
    problems = [f for f in composition.failures if f.startswith(f"bad: {rule}: ")]
    assert len(problems) == 1 and said in problems[0], composition.failures
    assert "bad: rejected: failed checks (see mcp-providers check)" in composition.failures  # that plugin alone
    async with connect(composition) as client:
        assert [s["uri"] for s in (await _call(client, "skills/list", {}))["skills"]] == [DAILY, RUNBOOK_URI]


async def test_two_plugins_serving_one_skill_uri_collide_named_on_both_sides() -> None:
    class twin:
        @hookimpl
        def register_skill_providers(self) -> list[SkillProvider]:
            return [Runbooks()]

    composition = compose(Config(), load_entrypoints=False, plugins={"notes": notes, "twin": twin()})
    duplicate = [f for f in composition.failures if "duplicate-uri" in f and RUNBOOK_URI in f]
    assert duplicate and duplicate[0].startswith("notes + twin: ")


async def test_bytes_that_change_after_composition_are_refused_not_served_under_the_old_digest() -> None:
    files = dict(RUNBOOK)

    class Shifting(Runbooks):
        name = "shifting"
        prefixes = ("skill://shifting/",)

        def skills(self) -> Sequence[SkillSource]:
            return [SkillSource("skill://shifting/runbook", tuple(files))]

        def read(self, skill: SkillSource, path: str) -> bytes:
            return files[path]

    class shifting:
        @hookimpl
        def register_skill_providers(self) -> list[SkillProvider]:
            return [Shifting()]

    async with connect(_composed(shifting=shifting())) as client:
        assert (await _file(client, "skill://shifting/runbook/steps/restart.md")) == RUNBOOK["steps/restart.md"]
        files["steps/restart.md"] = b"1. Restart without draining.\n"
        with pytest.raises(MCPError) as changed:
            await client.read_resource("skill://shifting/runbook/steps/restart.md")
        assert "no longer has the bytes its skill's entry publishes" in changed.value.message


def test_inspect_and_the_status_page_show_the_skills() -> None:
    composition = _composed()
    document = inventory(composition)
    jsonschema.validate(document, INSPECT_SCHEMA)
    assert [(s["uri"], s["name"], s["files"], s["provider"]) for s in document["skills"]] == [
        (DAILY, "daily-review", 3, "notes-skills"),
        (RUNBOOK_URI, "runbook", 2, "notes-runbooks"),
    ]
    assert document["skills"][1]["bytes"] == sum(map(len, RUNBOOK.values()))
    (notes_status,) = [p for p in status_plugins(composition) if p["name"] == "notes"]
    assert notes_status["catalog"] == {"resources": 6, "templates": 0, "tools": 0, "prompts": 0, "skills": 2}
