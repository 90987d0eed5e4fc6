"""Authorization that cannot fail open (issue: one request pipeline, defects 1-7).

Each test is one defect of the old main: a policy that stopped applying when another distribution
shared its name, failed to import or mis-declared ``authorize``; the last plugin deciding; prompt
embeds skipping the canonical URI, the budget and the catalog; embeds never asking ``expand``;
prompts and completions revealing what the caller may not read; audit gaps; receipts blind to
embedded content.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from pipeline_support import secrets_plugin
from prefork import python

from mcp_providers import RECEIPT_KEY, Decision, ServerSettings, hookimpl
from mcp_providers.hookspecs import POLICY_GROUP
from mcp_providers.plugins import policy as policy_plugin
from mcp_providers.plugins.documcp import prompts as documcp_prompts
from mcp_providers.plugins.documcp import ssg_catalog
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

DENY_HUGO = {
    "rules": [{"effect": "deny", "subjects": ["local"], "actions": ["read"], "targets": ["documcp://ssgs/hugo"]}]
}
CONFIG = """
allow = ["policy", "ssg_catalog", "{extra}"]
[plugins.policy]
[[plugins.policy.rules]]
effect = "deny"
subjects = ["local"]
actions = ["read"]
targets = ["documcp://ssgs/hugo"]
"""


def _site(
    root: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str], group: str = POLICY_GROUP
) -> Path:
    """A site folder holding one installed distribution (its dist-info) and its modules; its entry
    points are in the policy plugins' group unless ``group`` says otherwise (round 4 item 22)."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    for name, source in modules.items():
        path = root / (name if name.endswith(".py") else f"{name}.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return root


def _serve(site: Path, config: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run(
        [*python(), "-m", "mcp_providers", "serve", "-c", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        input="",
    )


FAIL_OPEN = {
    "a second distribution names its entry point policy": (
        {"policy": "empty_policy"},
        {"empty_policy": ""},
        "policy",
        "policy",
    ),
    "a third-party policy plugin fails to import": (
        {"acme_policy": "acme_policy"},
        {
            "acme_policy": """
                from mcp_providers import hookimpl
                import acme_missing_dependency  # noqa: F401

                @hookimpl
                def authorize(subject, action, target):
                    return None
            """
        },
        "acme_policy",
        "import failed",
    ),
    "a policy package fails to import, its authorize in a submodule": (
        {"gate3": "gate3"},
        {
            "gate3/__init__.py": "from .impl import *  # noqa: F403\n",
            "gate3/impl.py": """
                import gate3_missing_dependency  # noqa: F401
                from mcp_providers import hookimpl

                @hookimpl
                def authorize(subject, action, target):
                    return None
            """,
        },
        "gate3",
        "import failed",
    ),
    "a policy plugin's authorize does not match the hookspec": (
        {"acme_policy": "acme_policy"},
        {
            "acme_policy": """
                from mcp_providers import hookimpl

                @hookimpl
                def authorize(subject, action, target, settings, tenant):
                    return None
            """
        },
        "acme_policy",
        "hook signature does not match",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize(("entry_points", "modules", "plugin", "reason"), FAIL_OPEN.values(), ids=FAIL_OPEN.keys())
def test_serve_refuses_when_authorization_could_be_missing(
    tmp_path: Path, entry_points: dict[str, str], modules: dict[str, str], plugin: str, reason: str
) -> None:
    site = _site(tmp_path / "site", "acme-extra", entry_points, modules)
    extra = next(iter(entry_points))
    run = _serve(site, CONFIG.format(extra=extra), tmp_path)
    assert run.returncode == 1, run.stderr
    assert "refusing to serve without its authorization policy" in run.stderr
    refusal = [line for line in run.stderr.splitlines() if line.strip().startswith(f"{plugin}:")]
    assert refusal and reason in refusal[-1] and "its rules would not apply" in refusal[-1], run.stderr


def _always_allow() -> Any:
    return SimpleNamespace(authorize=hookimpl(lambda subject, action, target: Decision(True, "audit says yes")))


@pytest.mark.parametrize("name", ["aa_audit", "zz_audit"])
async def test_any_deny_wins_whatever_the_plugin_order(name: str) -> None:
    composition = compose(
        {"policy": policy_plugin, "ssg_catalog": ssg_catalog, name: _always_allow()}, {"policy": DENY_HUGO}
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as denied:
            await client.read_resource("documcp://ssgs/hugo")
        assert denied.value.code == -32003
        assert (await client.read_resource("documcp://ssgs/jekyll")).contents


def test_check_lists_the_authorize_order_and_flags_an_always_allow() -> None:
    from mcp_providers._serve.statics import authorize_report

    composition = compose(
        {"policy": policy_plugin, "ssg_catalog": ssg_catalog, "zz_audit": _always_allow()}, {"policy": DENY_HUGO}
    )
    order, warnings = authorize_report(composition)
    assert order is not None and "policy, zz_audit" in order
    assert len(warnings) == 1 and warnings[0].startswith("zz_audit: authorize-always-allows:")


def _deny(actions: list[str], targets: list[str]) -> dict[str, Any]:
    return {"rules": [{"effect": "deny", "actions": actions, "targets": targets}]}


@pytest.mark.parametrize("uri", ["X://a/secret", "x://%61/secret", "x://a/secret"])
async def test_prompt_embeds_are_authorized_in_canonical_form(uri: str) -> None:
    composition = compose(
        {"x": secrets_plugin(embed=uri), "policy": policy_plugin}, {"policy": _deny(["read"], ["x://a/secret"])}
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as denied:
            await client.get_prompt("brief", {})
        assert denied.value.code == -32003


async def test_embeds_ask_expand_on_their_template() -> None:
    composition = compose(
        {"x": secrets_plugin(embed="x://a/secret"), "policy": policy_plugin},
        {"policy": _deny(["expand"], ["x://a/{name}"])},
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as by_prompt:
            await client.get_prompt("brief", {})
        with pytest.raises(MCPError) as by_tool:
            await client.call_tool("show", {})
        assert by_prompt.value.code == by_tool.value.code == -32003


async def test_prompt_embeds_keep_the_budget_and_links_are_checked_against_the_catalog() -> None:
    big = "x" * 100
    composition = compose(
        {"x": secrets_plugin(embed="x://a/secret", text=big, link="x://elsewhere/none")},
        server=ServerSettings(max_embed_bytes=10),
    )
    async with connect(composition) as client:
        result = await client.get_prompt("brief", {})
    kinds = [m.content.type for m in result.messages]
    assert kinds == ["resource_link"]  # the embed over budget became a link; the unserved link was dropped
    receipt = (result.meta or {})[RECEIPT_KEY]
    assert any(t.startswith("embed-over-budget->resource_link x://a/secret") for t in receipt["transforms"])
    assert any("dropped resource_link x://elsewhere/none" in t for t in receipt["transforms"])


async def test_prompts_and_their_completion_reveal_only_what_the_caller_may_read() -> None:
    composition = compose(
        {"policy": policy_plugin, "ssg_catalog": ssg_catalog, "documcp_prompts": documcp_prompts},
        {"policy": _deny(["read"], ["documcp://ssgs/*"])},
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as denied:
            await client.get_prompt("setup-documentation", {"project_path": ".", "ssg_type": "hugo"})
        assert denied.value.code == -32003
        ref = types.PromptReference(type="ref/prompt", name="setup-documentation")
        offered = await client.complete(ref, {"name": "ssg_type", "value": ""})
        assert offered.completion.values == []


async def test_receipts_cover_embedded_content() -> None:
    digests = []
    for text in ("first", "second"):
        composition = compose({"x": secrets_plugin(embed="x://a/secret", text=text)})
        async with connect(composition) as client:
            result = await client.call_tool("show", {})
        digests.append((result.meta or {})[RECEIPT_KEY]["sha256"])
    assert digests[0] != digests[1]


async def test_a_denial_inside_a_tool_is_audited_once_with_method_and_action(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"

    composition = compose(
        {"x": secrets_plugin(embed="x://a/secret", require="x://a/secret"), "policy": policy_plugin},
        {"policy": _deny(["read"], ["x://a/secret"])},
        server=ServerSettings(audit_log=audit),
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError):
            await client.call_tool("show", {})
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    calls = [line for line in lines if line["operation"] == "tools/call"]
    assert len(calls) == 1
    assert calls[0]["decision"] == "denied" and calls[0]["action"] == "read" and calls[0]["target"] == "x://a/secret"
    assert not [line for line in lines if line["operation"] in ("read", "call")]  # never the action as operation


@pytest.mark.parametrize("uri", ["documcp://ssgs/hugo/extra", "documcp://ssgz/x", "nosuch://x"])
async def test_not_found_hints_name_only_what_the_caller_may_list(uri: str) -> None:
    composition = compose(
        {"policy": policy_plugin, "ssg_catalog": ssg_catalog}, {"policy": _deny(["list", "read"], ["documcp://ssgs/*"])}
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as missing:
            await client.read_resource(uri)
    assert missing.value.code == -32602
    assert "ssgs/{ssg}" not in missing.value.message and "ssg-catalog" not in missing.value.message
    assert "documcp://ssgs/" not in missing.value.message.replace(uri, "")


async def test_tools_answer_only_from_ssgs_the_caller_may_read() -> None:
    from mcp_providers.plugins.documcp import config_templates, workflows  # workflows serves the tools

    composition = compose(
        {
            "policy": policy_plugin,
            "ssg_catalog": ssg_catalog,
            "config_templates": config_templates,
            "workflows": workflows,
        },
        {"policy": _deny(["read"], ["documcp://ssgs/hugo", "documcp://templates/hugo-*"])},
    )
    async with connect(composition) as client:
        recommended = await client.call_tool("recommend_ssg", {"team_language": "go"})
        ids = [r["ssg"] for r in (recommended.structured_content or {})["recommendations"]]
        assert ids and "hugo" not in ids
        with pytest.raises(MCPError) as denied:
            await client.call_tool("generate_config", {"ssg": "hugo", "site_name": "x"})
        assert denied.value.code == -32003
        with pytest.raises(MCPError) as missing:
            await client.read_resource("documcp://ssgs/HUGO-nope")
        assert "hugo" not in missing.value.message.lower().replace("hugo-nope", "")


async def test_the_audit_log_never_quotes_argument_values(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    composition = compose(
        {"ssg_catalog": ssg_catalog, "documcp_prompts": documcp_prompts}, server=ServerSettings(audit_log=audit)
    )
    async with connect(composition) as client:
        for argument in ("ssg_type", "include_examples"):
            with pytest.raises(MCPError):
                await client.get_prompt("setup-documentation", {"project_path": "/x", argument: "SECRET-VALUE"})
    text = audit.read_text()
    assert text.count("prompts/get") == 2 and "SECRET-VALUE" not in text
