"""Configuration templates: declarations, rendering and format validity of rendered output."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from documcp_support import node_check

from mcp_providers.models import Freshness
from mcp_providers.plugins.documcp import config_templates
from mcp_providers.plugins.documcp.config_templates import PLACEHOLDERS, ConfigTemplates, render, template_text
from mcp_providers.plugins.documcp.registry import SSGS, mime_type

# Values that break naive substitution: quotes, backslashes, newlines, YAML/TOML/JS syntax, emoji.
NASTY = "Ac\"me\\ Docs: #1\n{a: [b]} ' `${x}` </script> ✓"


def _nasty_values() -> dict[str, str]:
    return {name: f"{NASTY} {name}" for name in PLACEHOLDERS}


def _walk(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _walk(v)]
    if isinstance(value, list):
        return [x for v in value for x in _walk(v)]
    return [value]


def test_every_ssg_has_one_listed_static_template_with_a_registered_mime_type() -> None:
    declared = {r.uri: r for r in ConfigTemplates().resources()}
    for ssg in SSGS:
        resource = declared[f"documcp://templates/{ssg.id}-config"]
        assert resource.mime_type == mime_type(ssg)
        assert resource.mime_type in {"application/yaml", "application/toml", "text/javascript"}
        assert resource.freshness == Freshness.static()
    assert declared["documcp://templates/diataxis-structure"].mime_type == "application/json"
    assert len(declared) == len(SSGS) + 1


@pytest.mark.parametrize("ssg", SSGS, ids=lambda s: s.id)
def test_rendered_config_stays_valid_and_keeps_values_exact(ssg: Any, tmp_path: Path) -> None:
    values = _nasty_values()
    text = render(ssg, values)
    assert "{{" not in text
    used = {name for name in PLACEHOLDERS if "{{" + name + "}}" in template_text(ssg.id)}
    assert used, f"{ssg.id} template uses no placeholder"
    if ssg.config_format in ("yaml", "toml"):
        parsed = yaml.safe_load(text) if ssg.config_format == "yaml" else tomllib.loads(text)
        leaves = _walk(parsed)
        # Every value used as a whole string survives parsing byte for byte.
        whole = {n for n in used if f'"{{{{{n}}}}}"' in template_text(ssg.id)}
        for name in whole:
            assert values[name] in leaves, f"{ssg.id}: {name} did not round-trip"
    else:
        checked = node_check(text, tmp_path, module=ssg.config_format == "esm")
        assert checked.returncode == 0, checked.stderr


def test_render_requires_every_placeholder_the_template_uses() -> None:
    with pytest.raises(KeyError):
        render(SSGS[0], {})


def test_unknown_placeholder_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    template_text.cache_clear()
    monkeypatch.setattr(config_templates, "_read", lambda name: 'title: "{{sitename}}"\n')
    try:
        with pytest.raises(ValueError, match=r"unknown placeholders \['sitename'\]"):
            template_text("jekyll")
    finally:
        template_text.cache_clear()


def test_diataxis_structure_rejects_a_missing_section() -> None:
    body = json.loads(config_templates.diataxis_text())
    del body["structure"]["reference"]
    with pytest.raises(ValueError, match=r"lacks sections: \['reference'\]"):
        config_templates.DiataxisStructure.model_validate(body)
