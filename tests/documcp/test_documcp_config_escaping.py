"""generate_config output parses, and parses back to the values given, whatever characters they hold.

DEL, C1 controls, U+0085, U+2028/U+2029, U+FEFF and the noncharacters U+FFFE/U+FFFF are legal in a
JSON string but not raw in TOML or YAML; each config format must get them escaped its own way.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from real_parts import require_tool

from mcp_providers.plugins.documcp.registry import SSGS
from mcp_providers.plugins.documcp.tools import GenerateConfigIn, generate_config

HOSTILE = 'Acme \x7f \x80 \x85 \x9b \x9f \u2028 \u2029 \ufeff \ufffe \uffff \x00 \x1b \t " \\ é 😀 end'


def _parsed_title(ssg: str, text: str, tmp_path: Path) -> str:
    if ssg == "hugo":
        return tomllib.loads(text)["title"]
    if ssg in ("jekyll",):
        return yaml.safe_load(text)["title"]
    if ssg == "mkdocs":
        return yaml.load(text, Loader=_PermissiveLoader)["site_name"]
    node = require_tool("node", "apt-get install -y nodejs")
    module = tmp_path / "config.mjs"
    module.write_text(text, encoding="utf-8")
    checked = subprocess.run([node, "--check", str(module)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr  # the module parses
    # The literal the site name went into, evaluated by node: the value must come back unchanged.
    literal = re.search(r'(?:siteName =|title:|name:) ("(?:[^"\\\n]|\\.)*")', text)
    assert literal is not None, text
    value = subprocess.run(
        [node, "-e", f"process.stdout.write(JSON.stringify({literal.group(1)}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert value.returncode == 0, value.stderr
    return json.loads(value.stdout)


class _PermissiveLoader(yaml.SafeLoader):
    """mkdocs configs carry ``!!python/name:`` tags; parse them as plain strings."""


_PermissiveLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


@pytest.mark.parametrize("ssg", [s.id for s in SSGS])
def test_every_config_format_round_trips_hostile_characters(ssg: str, tmp_path: Path) -> None:
    out = generate_config(GenerateConfigIn(ssg=ssg, site_name=HOSTILE, description=HOSTILE))
    title = _parsed_title(ssg, out.text, tmp_path)
    assert title == HOSTILE, json.dumps(title)
