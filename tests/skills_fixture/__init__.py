"""A plugin with two skills, for tests/test_skills.py: one a folder shipped beside this module
(``skills/daily-review``), one from a provider (``runbook``, made in memory)."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_providers.plugin import Plugin, SkillProvider, SkillSource

notes = Plugin("notes", prefixes=["notes://"])


@notes.resource("notes://index")
def index() -> dict[str, list[str]]:
    """The notebooks."""
    return {"notebooks": ["work", "home"]}


notes.skill("skills/daily-review")

RUNBOOK = {
    "SKILL.md": b"---\nname: runbook\ndescription: Restart the notes service safely. Use when it stops answering.\n"
    b"---\n\n# Runbook\n\nFollow `steps/restart.md`.\n",
    "steps/restart.md": b"1. Drain.\n2. Restart.\n3. Check `notes://index`.\n",
}


class Runbooks(SkillProvider):
    """Skills made in memory (not a folder)."""

    name = "notes-runbooks"
    prefixes = ("skill://notes-ops/",)

    def skills(self) -> Sequence[SkillSource]:
        return [SkillSource("skill://notes-ops/runbook", tuple(RUNBOOK))]

    def read(self, skill: SkillSource, path: str) -> bytes:
        return RUNBOOK[path]


@notes.skill_provider
def runbooks() -> SkillProvider:
    return Runbooks()
